//! The command line: the flags, and which front end runs.
//!
//! `main` parses arguments with clap before anything else (so `--help` and `--version` cost
//! nothing), turns the flags into `setup` options, then hands them to a front end:
//! `--list-models`, print (`-p`, or stdin that is not a terminal), JSON (`--mode json`), or the
//! interactive UI. Everything after that (config, model choice, sessions, the agent) is built
//! by `setup`, and the front ends talk to the core only through its command channel.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};

pub mod harden;

use crate::print::{self, PrintOptions};
use crate::setup::{self, SessionChoice, select::ModelFlags};
use crate::tools::sandbox::SandboxMode;
use crate::tui::{self, TuiOptions};

/// A terminal coding agent.
#[derive(Parser, Debug, Default, Clone)]
#[command(name = "pi", version, about, long_about = None, disable_version_flag = true)]
pub struct Cli {
    /// Print the version.
    #[arg(short = 'v', long = "version", action = clap::ArgAction::Version)]
    pub version: Option<bool>,

    /// Messages to send; the first is the prompt, the rest are sent one after another.
    /// `@path` attaches a file (text, or a PNG/JPEG/GIF/WebP image) to the first.
    #[arg(value_name = "MESSAGE")]
    pub messages: Vec<String>,

    /// Print the final answer and exit (also chosen when stdin is not a terminal).
    #[arg(short = 'p', long = "print")]
    pub print: bool,

    /// Output mode: `text`, `json` for one JSON event per line, or `rpc` for the RPC protocol
    /// over stdin and stdout.
    #[arg(long, value_enum, default_value_t = OutputMode::Text)]
    pub mode: OutputMode,

    /// Provider of the model (used with a bare `--model` id).
    #[arg(long)]
    pub provider: Option<String>,

    /// Model as `provider/id` or a pattern (`sonnet`), optionally with `:thinking`
    /// (e.g. `anthropic/claude-sonnet-4-5:high`).
    #[arg(long)]
    pub model: Option<String>,

    /// Model patterns Ctrl+P cycles through, comma-separated (`claude-*,gpt-5:high`); without
    /// `--model`, pi starts on the first match.
    #[arg(long, value_name = "PATTERNS")]
    pub models: Option<String>,

    /// Thinking level: off, minimal, low, medium, high, xhigh.
    #[arg(long)]
    pub thinking: Option<String>,

    /// API key for the selected provider (overrides config and environment). pi blanks it
    /// from its command line at start, but it may linger in your shell history: the provider's
    /// environment variable or `/login` (stored in auth.json) are safer.
    #[arg(long = "api-key")]
    pub api_key: Option<String>,

    /// Replace the system prompt (text, or a path to a file).
    #[arg(long = "system-prompt")]
    pub system_prompt: Option<String>,

    /// Add to the system prompt (text, or a path to a file); may be given more than once.
    #[arg(long = "append-system-prompt", value_name = "TEXT|FILE")]
    pub append_system_prompt: Vec<String>,

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

    /// Open the session without writing to it (for one another pi is writing); nothing from
    /// this run is saved.
    #[arg(long = "read-only")]
    pub read_only: bool,

    /// Where to keep session files (default: ~/.pi/agent/sessions/<folder>).
    #[arg(long = "session-dir", value_name = "DIR")]
    pub session_dir: Option<PathBuf>,

    /// Tools to offer the model, comma-separated (read, bash, edit, write, grep, find, ls, todo,
    /// web_fetch, and task for subagents). Default: read, bash, edit, write (and task when agent
    /// definitions exist).
    #[arg(short = 't', long, value_name = "LIST")]
    pub tools: Option<String>,

    /// Offer the model no tools (also `-nt`).
    #[arg(long = "no-tools", conflicts_with = "tools")]
    pub no_tools: bool,

    /// Do not load AGENTS.md / CLAUDE.md context files (also `-nc`).
    #[arg(long = "no-context-files")]
    pub no_context_files: bool,

    /// A prompt template file or folder to load (repeatable); `/name` expands it.
    #[arg(long = "prompt-template", value_name = "PATH")]
    pub prompt_template: Vec<PathBuf>,

    /// A theme file or folder to load, or a theme's name (repeatable); the last one is used.
    #[arg(long = "theme", value_name = "PATH|NAME")]
    pub theme: Vec<String>,

    /// Look for no theme files but those of `--theme`.
    #[arg(long = "no-themes")]
    pub no_themes: bool,

    /// A skill file or folder to load (repeatable; loaded even with `--no-skills`).
    #[arg(long = "skill", value_name = "PATH")]
    pub skill: Vec<PathBuf>,

    /// Look for no skills but those of `--skill` (also `-ns`).
    #[arg(long = "no-skills")]
    pub no_skills: bool,

    /// Start in plan mode: only reading tools run, and the model answers with a plan.
    #[arg(long = "plan")]
    pub plan: bool,

    /// No built-in tools; MCP tools are still offered (also `-nbt`).
    #[arg(long = "no-builtin-tools", conflicts_with = "tools")]
    pub no_builtin_tools: bool,

    /// A Node.js pi extension: accepted, but TypeScript extensions cannot run here (a notice
    /// says so; also `-e`).
    #[arg(short = 'e', long = "extension", value_name = "PATH")]
    pub extension: Vec<String>,

    /// Load no extensions (there are none to load here; also `-ne`).
    #[arg(long = "no-extensions")]
    pub no_extensions: bool,

    /// Load no prompt templates but those of `--prompt-template` (also `-np`).
    #[arg(long = "no-prompt-templates")]
    pub no_prompt_templates: bool,

    /// Where the model's tools may write: `off` (default), `workspace-write` (this folder and
    /// the temp folder) or `read-only`. Commands run under Landlock on Linux.
    #[arg(long, value_name = "MODE", value_parser = parse_sandbox)]
    pub sandbox: Option<SandboxMode>,

    /// Stop a run after this many turns (non-zero exit).
    #[arg(long = "max-turns")]
    pub max_turns: Option<u32>,

    /// Write a session (a file path or an id prefix) to OUT as HTML, or as markdown when OUT
    /// ends in `.md` (default: `pi-session-<date>.html` here), and exit.
    #[arg(long, value_names = ["SESSION", "OUT"], num_args = 1..=2)]
    pub export: Option<Vec<String>>,

    /// Say more at start-up: the start-up header even with `quiet_startup`, and in print mode
    /// the files read, the model and the session on stderr.
    #[arg(long)]
    pub verbose: bool,

    /// Run the interactive UI on the full-screen alternate screen, with its own scrolling
    /// (also `tui.fullscreen = true` in config.toml). By default the conversation is printed
    /// into the terminal's scrollback.
    #[arg(long)]
    pub fullscreen: bool,

    /// Make no network calls of pi's own at start-up (also `PI_OFFLINE=1`). This pi has none
    /// (no update checks, no telemetry); the flag is accepted for scripts written for the
    /// Node.js pi. Model requests are still made.
    #[arg(long)]
    pub offline: bool,

    /// How tool calls that can change things (bash, edit, write, MCP tools) are approved:
    /// `auto` runs them, `ask` asks first in the interactive view (elsewhere it refuses what
    /// no `[approval] allow` rule allows), `read-only` refuses them. Over config's `approval`.
    #[arg(long, value_name = "MODE", value_parser = ["auto", "ask", "read-only"])]
    pub approval: Option<String>,

    /// Tool calling in the model's text rather than native tools: hermes, qwen3, xml, glm,
    /// deepseek, harmony, kimi, anthropic, gemini, gemma, minimax, json; `auto` (native until the
    /// model writes a call as text, then that form's dialect), or none. Over `PI_DIALECT` and
    /// config's `dialect`.
    #[arg(long, value_name = "NAME")]
    pub dialect: Option<String>,

    /// Use this folder's `.pi` settings that act for you (MCP servers, `!command` keys, a
    /// provider's `base_url`, headers or key, …) for this run, without trusting the folder.
    #[arg(long = "trust-project")]
    pub trust_project: bool,

    /// Sign in to a subscription and exit: openai-codex (ChatGPT Plus/Pro), anthropic (Claude
    /// Pro/Max) or github-copilot. The sign-in is saved in auth.json.
    #[arg(long = "login", value_name = "PROVIDER")]
    pub login: Option<String>,

    /// Remove a provider's sign-in (or stored API key) from auth.json and exit.
    #[arg(long = "logout", value_name = "PROVIDER")]
    pub logout: Option<String>,

    /// List the models pi knows (optionally only those matching SEARCH) and exit.
    #[arg(long = "list-models", value_name = "SEARCH", num_args = 0..=1, default_missing_value = "")]
    pub list_models: Option<String>,
}

fn parse_sandbox(value: &str) -> Result<SandboxMode, String> {
    value.parse()
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum OutputMode {
    #[default]
    Text,
    Json,
    /// The Node.js pi's RPC protocol: JSON commands on stdin, responses and events on stdout.
    Rpc,
}

impl Cli {
    /// The setup options these flags ask for.
    pub fn options(&self, cwd: PathBuf, env: crate::provider::EnvLookup) -> setup::Options {
        let mut o = setup::Options::new(cwd, env);
        o.ends_process = true;
        o.model = ModelFlags {
            provider: self.provider.clone(),
            model: self.model.clone(),
            thinking: self.thinking.clone(),
            has_api_key: self.api_key.is_some(),
            allow_missing: false,
        };
        o.api_key = self.api_key.clone();
        o.system_prompt = self.system_prompt.clone();
        o.append_system_prompt = self.append_system_prompt.clone();
        o.session = if self.no_session {
            SessionChoice::NotSaved
        } else if let Some(f) = &self.fork {
            SessionChoice::Fork(f.clone())
        } else if let Some(s) = &self.session {
            SessionChoice::Open(s.clone())
        } else if self.continue_session {
            SessionChoice::Continue
        } else {
            // `-r` is a picker, which each front end shows its own way.
            SessionChoice::New
        };
        o.session_dir = self.session_dir.clone();
        o.read_only = self.read_only;
        o.tools = self.tools.clone();
        o.no_tools = self.no_tools;
        o.no_context_files = self.no_context_files;
        o.prompt_templates = self.prompt_template.clone();
        o.no_prompt_templates = self.no_prompt_templates;
        o.no_builtin_tools = self.no_builtin_tools;
        o.skills = self.skill.clone();
        o.themes = self.theme.clone();
        o.no_themes = self.no_themes;
        o.no_skills = self.no_skills;
        o.plan = self.plan;
        o.extensions = self.extension.clone();
        o.sandbox = self.sandbox;
        o.scoped_models = self.models.as_ref().map(|m| vec![m.clone()]);
        o.verbose = self.verbose;
        o.approval = self.approval.clone();
        o.dialect = self.dialect.clone();
        o.trust_project = self.trust_project;
        o
    }
}

/// A picker is only needed when no other session flag names one.
fn wants_picker(cli: &Cli) -> bool {
    cli.resume
        && !cli.no_session
        && cli.fork.is_none()
        && cli.session.is_none()
        && !cli.continue_session
}

/// Keep panics the agent contains (they become error results and error turns the person
/// sees) from also printing a report; any other panic reports as usual.
fn quiet_contained_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !crate::agent::protocol::panic::is_contained() {
            previous(info);
        }
    }));
}

/// Run the program; returns the process exit code.
/// The arguments with the Node pi's two-letter short flags spelled out (`-nt` → `--no-tools`,
/// `-nc` → `--no-context-files`, `-np` → `--no-prompt-templates`, `-ns`, `-nbt`, `-ne`), which clap
/// cannot declare;
/// nothing after `--` is touched.
pub fn expand_short_flags(
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Vec<std::ffi::OsString> {
    let mut out = Vec::new();
    let mut literal = false;
    for a in args {
        if !literal {
            match a.to_str() {
                Some("--") => literal = true,
                Some("-nt") => {
                    out.push("--no-tools".into());
                    continue;
                }
                Some("-nc") => {
                    out.push("--no-context-files".into());
                    continue;
                }
                Some("-np") => {
                    out.push("--no-prompt-templates".into());
                    continue;
                }
                Some("-nbt") => {
                    out.push("--no-builtin-tools".into());
                    continue;
                }
                Some("-ns") => {
                    out.push("--no-skills".into());
                    continue;
                }
                Some("-ne") => {
                    out.push("--no-extensions".into());
                    continue;
                }
                _ => {}
            }
        }
        out.push(a);
    }
    out
}

pub fn main() -> ExitCode {
    let args = harden::harden();
    let cli = Cli::parse_from(expand_short_flags(args));
    quiet_contained_panics();
    let stdin_piped = !std::io::stdin().is_terminal();
    let mut stdin_text = None;
    let exits_early = cli.list_models.is_some() || cli.login.is_some() || cli.logout.is_some();
    if stdin_piped && !exits_early && cli.mode != OutputMode::Rpc {
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
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("pi: cannot read the current folder: {e}");
            return ExitCode::from(1);
        }
    };
    // `@path` arguments are read now: a file that cannot be attached stops pi before any
    // request is made.
    let (file_names, messages) = crate::attach::args::split(&cli.messages);
    let files = match crate::attach::args::load_all(&cwd, &file_names) {
        Ok(files) => files,
        Err(e) if !exits_early => {
            eprintln!("pi: {}", crate::visible::visible(&e));
            return ExitCode::from(1);
        }
        Err(_) => Vec::new(),
    };
    let options = cli.options(cwd, crate::provider::process_env());
    let code = runtime.block_on(async move {
        // A file grown past the size limit (`ulimit -f`) must fail the write, which pi reports,
        // rather than kill pi with SIGXFSZ. A handler, unlike SIG_IGN, is not inherited by
        // the commands pi runs.
        let _file_size_signal =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::from_raw(libc::SIGXFSZ));
        if let Some(args) = &cli.export {
            return print::export_session(&options, args);
        }
        if let Some(name) = &cli.login {
            return print::login::login(&options, name).await;
        }
        if let Some(name) = &cli.logout {
            return print::login::logout(&options, name).await;
        }
        if let Some(search) = &cli.list_models {
            let search = (!search.is_empty()).then_some(search.as_str());
            return print::list_models(&options, search);
        }
        if cli.mode == OutputMode::Rpc {
            return crate::rpc::run(options).await;
        }
        let non_interactive = cli.print || cli.mode == OutputMode::Json || stdin_piped;
        if non_interactive {
            let print = PrintOptions {
                messages,
                files: files.into_iter().map(|(f, _)| f).collect(),
                stdin: stdin_text,
                json: cli.mode == OutputMode::Json,
                max_turns: cli.max_turns,
                pick_session: wants_picker(&cli),
            };
            print::run(options, print).await
        } else {
            let tui = TuiOptions {
                messages,
                files: files.into_iter().map(|(f, _)| f).collect(),
                pick_session: wants_picker(&cli),
                fullscreen: cli.fullscreen,
            };
            tui::run(options, tui).await
        }
    });
    ExitCode::from(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sandbox_flag_takes_the_three_modes() {
        let cli = Cli::try_parse_from(["pi", "--sandbox", "read-only"]).unwrap();
        assert_eq!(cli.sandbox, Some(SandboxMode::ReadOnly));
        let env: crate::provider::EnvLookup = std::sync::Arc::new(|_| None);
        assert_eq!(
            cli.options(PathBuf::from("/"), env.clone()).sandbox,
            Some(SandboxMode::ReadOnly)
        );
        let cli = Cli::try_parse_from(["pi"]).unwrap();
        assert_eq!(cli.options(PathBuf::from("/"), env).sandbox, None);
        let e = Cli::try_parse_from(["pi", "--sandbox", "full"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("full") && e.contains("workspace-write"), "{e}");
    }
}
