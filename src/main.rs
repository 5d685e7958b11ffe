//! The `pi` command line: parses arguments and chooses a mode.
//!
//! Only the agent core exists so far; the providers, tools, sessions and the terminal UI that
//! make `pi` usable arrive in later steps (see README.md). Until then the binary answers
//! `--help` and `--version` and says plainly that it cannot run a prompt yet.

use std::process::ExitCode;

use clap::Parser;

/// A terminal coding agent.
#[derive(Parser, Debug)]
#[command(name = "pi", version, about, long_about = None)]
struct Cli {
    /// The request to send to the agent.
    #[arg(value_name = "PROMPT")]
    prompt: Vec<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let _ = cli.prompt;
    eprintln!(
        "pi: this build has the agent core only; model providers and the terminal UI are not \
         available yet, so no prompt can be run."
    );
    ExitCode::from(1)
}
