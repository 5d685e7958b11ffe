//! The `pi` binary: everything lives in the library; see `pi::cli`.

/// mimalloc rather than the system allocator. Resuming a long session makes tens of thousands
/// of allocations on two threads: glibc grew the second thread's heap one `mprotect` call at a
/// time (8,500 calls for a 50 MB session) and spent a tenth of the run in malloc and free.
/// Built without transparent huge pages (`no_thp`): with them even `pi --version` held 11 MB.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    pi::cli::main()
}
