//! The command line: arguments, mode choice, and the pieces every mode shares.
//!
//! `main` parses arguments with clap before anything else (so `--help` and `--version` cost
//! nothing), then picks a mode: `--list-models`, print (`-p`, or stdin that is not a terminal),
//! JSON (`--mode json`), or interactive. Print and JSON modes live in [`print`]; choosing the
//! model (flags, config, keys in the environment, a local server) lives in [`select`].

pub mod print;
pub mod select;

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};

/// A terminal coding agent.
#[derive(Parser, Debug, Default, Clone)]
#[command(name = "pi", version, about, long_about = None)]
pub struct Cli {
    /// Messages to send; the first is the prompt, the rest are sent one after another.
    #[arg(value_name = "MESSAGE")]
    pub messages: Vec<String>,

    /// Print the final answer and exit (also chosen when stdin is not a terminal).
    #[arg(short = 'p', long = "print")]
    pub print: bool,

    /// Output mode: `text`, or `json` for one JSON event per line.
    #[arg(long, value_enum, default_value_t = OutputMode::Text)]
    pub mode: OutputMode,

    /// Provider of the model (used with a bare `--model` id).
    #[arg(long)]
    pub provider: Option<String>,

    /// Model as `provider/id`, optionally with `:thinking` (e.g. `anthropic/claude-sonnet-4-5:high`).
    #[arg(long)]
    pub model: Option<String>,

    /// Thinking level: off, minimal, low, medium, high, xhigh.
    #[arg(long)]
    pub thinking: Option<String>,

    /// API key for the selected provider (overrides config and environment).
    #[arg(long = "api-key")]
    pub api_key: Option<String>,

    /// Replace the system prompt (text, or a path to a file).
    #[arg(long = "system-prompt")]
    pub system_prompt: Option<String>,

    /// Add to the system prompt (text, or a path to a file).
    #[arg(long = "append-system-prompt")]
    pub append_system_prompt: Option<String>,

    /// Continue the newest session of this folder.
    #[arg(short = 'c', long = "continue")]
    pub continue_session: bool,

    /// Pick a saved session to resume.
    #[arg(short = 'r', long = "resume")]
    pub resume: bool,

    /// Open this session (a file path or an id prefix).
    #[arg(long, value_name = "PATH|ID")]
    pub session: Option<String>,

    /// Start from a copy of this session (a file path or an id prefix).
    #[arg(long, value_name = "PATH|ID")]
    pub fork: Option<String>,

    /// Do not save this session.
    #[arg(long = "no-session")]
    pub no_session: bool,

    /// Where to keep session files (default: ~/.pi/agent/sessions/<folder>).
    #[arg(long = "session-dir", value_name = "DIR")]
    pub session_dir: Option<PathBuf>,

    /// Tools to offer the model, comma-separated (read, bash, edit, write, grep, find, ls).
    /// Default: read, bash, edit, write.
    #[arg(long, value_name = "LIST")]
    pub tools: Option<String>,

    /// Offer the model no tools.
    #[arg(long = "no-tools", conflicts_with = "tools")]
    pub no_tools: bool,

    /// Do not load AGENTS.md / CLAUDE.md context files.
    #[arg(long = "no-context-files")]
    pub no_context_files: bool,

    /// Stop a run after this many turns (non-zero exit).
    #[arg(long = "max-turns")]
    pub max_turns: Option<u32>,

    /// List the models pi knows (optionally only those matching SEARCH) and exit.
    #[arg(long = "list-models", value_name = "SEARCH", num_args = 0..=1, default_missing_value = "")]
    pub list_models: Option<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum OutputMode {
    #[default]
    Text,
    Json,
}

/// Text from a flag value: the file's contents if it names a readable file, else the text.
pub fn text_or_file(value: &str) -> String {
    let path = PathBuf::from(value);
    if value.len() < 4096
        && path.is_file()
        && let Ok(text) = std::fs::read_to_string(&path)
    {
        return text;
    }
    value.to_string()
}

/// Run the program; returns the process exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let stdin_piped = !std::io::stdin().is_terminal();
    let mut stdin_text = None;
    if stdin_piped && cli.list_models.is_none() {
        let mut s = String::new();
        if std::io::stdin().read_to_string(&mut s).is_ok() && !s.trim().is_empty() {
            stdin_text = Some(s);
        }
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("pi: cannot start: {e}");
            return ExitCode::from(1);
        }
    };
    let code = runtime.block_on(async move {
        if cli.list_models.is_some() {
            return print::list_models(&cli).await;
        }
        let non_interactive = cli.print || cli.mode == OutputMode::Json || stdin_piped;
        if non_interactive {
            print::run(cli, stdin_text).await
        } else {
            crate::tui::run(cli).await
        }
    });
    ExitCode::from(code)
}
