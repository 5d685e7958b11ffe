//! The `pi` binary: everything lives in the library; see `pi::cli`.

fn main() -> std::process::ExitCode {
    pi::cli::main()
}
