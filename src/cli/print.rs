//! Print mode (`-p`) and JSON mode (`--mode json`): run the prompts, report, exit.
//!
//! Print mode writes only the text of the final assistant message to stdout; retries and
//! errors go to stderr; an error or aborted ending exits 1. JSON mode writes a session header
//! line and then every agent event as one JSON object per line (a `message_update` carries the
//! delta, not the whole partial message; the complete message comes with `message_end`).
//! SIGTERM, SIGHUP and Ctrl+C abort the run cleanly and exit 143, 129 and 130.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc::UnboundedReceiver;

use super::{Cli, OutputMode, select, text_or_file};
use crate::agent::engine::config::RetryPolicy;
use crate::agent::engine::facade::{Agent, AgentSettings};
use crate::agent::protocol::events::{AgentEvent, RunEvent};
use crate::agent::protocol::types::{AgentMessage, StopReason, now_ms};
use crate::config::{self, Config, context};
use crate::provider::catalog::{Catalog, format_model_table};
use crate::provider::{EnvLookup, Providers, process_env};

fn load_config(env: &EnvLookup) -> Result<(Config, Catalog), String> {
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current folder: {e}"))?;
    let e2 = env.clone();
    let agent_dir = config::agent_dir(&move |k| e2(k));
    let loaded = config::load(agent_dir.as_deref(), &cwd)?;
    for w in &loaded.warnings {
        eprintln!("pi: warning: {w}");
    }
    let e3 = env.clone();
    let mut catalog = Catalog::builtin(&move |k| e3(k));
    loaded.config.apply_to(&mut catalog)?;
    Ok((loaded.config, catalog))
}

/// `pi --list-models [search]`.
pub async fn list_models(cli: &Cli) -> u8 {
    let env = process_env();
    let (_, catalog) = match load_config(&env) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pi: {e}");
            return 1;
        }
    };
    let search = cli.list_models.as_deref().filter(|s| !s.is_empty());
    let found = catalog.search(search);
    if found.is_empty() {
        eprintln!("pi: no model matches `{}`", search.unwrap_or_default());
        return 1;
    }
    print!("{}", format_model_table(&found));
    0
}

/// The system prompt: template or replacement, appended text, context files, date, folder.
pub fn system_prompt(cli: &Cli, env: &EnvLookup, tools: Vec<(String, String)>) -> Vec<String> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let e = env.clone();
    let agent_dir = config::agent_dir(&move |k| e(k));
    let replacement = cli
        .system_prompt
        .as_deref()
        .map(text_or_file)
        .or_else(|| context::system_file(agent_dir.as_deref(), &cwd, "SYSTEM.md"));
    let append = cli
        .append_system_prompt
        .as_deref()
        .map(text_or_file)
        .or_else(|| context::system_file(agent_dir.as_deref(), &cwd, "APPEND_SYSTEM.md"));
    let context_files = if cli.no_context_files {
        Vec::new()
    } else {
        context::discover(agent_dir.as_deref(), &cwd)
    };
    vec![context::build(&context::PromptParts {
        replacement,
        append,
        tools,
        context_files,
        date: context::today(),
        cwd: cwd.display().to_string(),
    })]
}

fn retry_policy(config: &Config) -> RetryPolicy {
    let d = RetryPolicy::default();
    RetryPolicy {
        max_retries: config.retry.max_retries.unwrap_or(d.max_retries),
        base_delay: config
            .retry
            .base_delay_ms
            .map_or(d.base_delay, Duration::from_millis),
        max_delay: config
            .retry
            .max_delay_ms
            .map_or(d.max_delay, Duration::from_millis),
    }
}

/// Open the session the flags ask for: `--fork`, `--session`, `-c`, `-r` (a numbered list on
/// the terminal), else a new one; `None` with `--no-session` or without a home folder.
pub fn open_session(
    cli: &Cli,
    config: &Config,
    env: &EnvLookup,
) -> Result<Option<crate::session::OpenedSession>, String> {
    use crate::session::{ListScope, SessionPaths, StartFrom, list_sessions, open_session};
    if cli.no_session {
        return Ok(None);
    }
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current folder: {e}"))?;
    let e = env.clone();
    let agent_dir = config::agent_dir(&move |k| e(k));
    let e = env.clone();
    let Some(paths) = SessionPaths::resolve(
        agent_dir.as_deref(),
        &cwd,
        cli.session_dir.as_deref(),
        config.session_dir.as_deref(),
        &move |k| e(k),
    ) else {
        eprintln!("pi: warning: no home folder, so this session is not saved");
        return Ok(None);
    };
    let picked;
    let from = if let Some(f) = &cli.fork {
        StartFrom::Fork(f)
    } else if let Some(s) = &cli.session {
        StartFrom::Session(s)
    } else if cli.continue_session {
        StartFrom::Continue
    } else if cli.resume {
        let list = list_sessions(&paths, ListScope::CurrentFolder).sessions;
        if list.is_empty() {
            return Err("no saved sessions in this folder to resume".into());
        }
        picked = pick_session(&list)?;
        StartFrom::File(&picked)
    } else {
        StartFrom::New
    };
    let opened = open_session(&paths, &cwd, from).map_err(|e| e.to_string())?;
    for w in &opened.warnings {
        eprintln!("pi: warning: {w}");
    }
    Ok(Some(opened))
}

/// A plain numbered list on stderr; the choice is read from the terminal.
fn pick_session(list: &[crate::session::SessionInfo]) -> Result<std::path::PathBuf, String> {
    use std::io::{BufRead, IsTerminal};
    if !std::io::stdin().is_terminal() {
        return Err("--resume needs a terminal to pick from; use --session <id> or -c".into());
    }
    let shown = list.len().min(30);
    for (i, s) in list.iter().take(shown).enumerate() {
        let title: String = s.title().chars().take(70).collect();
        eprintln!(
            "{:>3}. {}  {}",
            i + 1,
            &s.id.chars().take(8).collect::<String>(),
            title
        );
    }
    eprint!("Session number [1]: ");
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| format!("cannot read the choice: {e}"))?;
    let n = match line.trim() {
        "" => 1,
        t => t
            .parse::<usize>()
            .map_err(|_| format!("`{t}` is not a session number"))?,
    };
    list.get(n.wrapping_sub(1))
        .filter(|_| n >= 1 && n <= shown)
        .map(|s| s.path.clone())
        .ok_or_else(|| format!("there is no session number {n}"))
}

/// Flush the session and say how to come back to it.
pub async fn close_session(task: Option<crate::session::RecorderTask>) {
    if let Some(task) = task
        && let Some(r) = task.finish().await
        && r.is_persisted()
    {
        eprintln!("{}", crate::session::resume_hint(r.session_id()));
    }
}

/// The tools chosen by `--tools` / `--no-tools` (default: read, bash, edit, write).
pub fn active_tools(
    cli: &Cli,
    limits: crate::tools::ToolLimits,
) -> Result<Vec<Arc<dyn crate::agent::protocol::tool::AgentTool>>, String> {
    let names: Vec<String> = if cli.no_tools {
        Vec::new()
    } else {
        match &cli.tools {
            Some(list) => crate::tools::parse_tool_list(list)?,
            None => crate::tools::DEFAULT_TOOLS
                .iter()
                .map(|s| s.to_string())
                .collect(),
        }
    };
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current folder: {e}"))?;
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    crate::tools::build_with_limits(&refs, cwd, limits)
}

/// An agent ready to take prompts, with what a UI needs to show and switch models.
pub struct BuiltAgent {
    pub agent: Agent,
    /// Records the conversation to its session file (absent with `--no-session`).
    pub session: Option<crate::session::RecorderTask>,
    /// The session's id (a fresh one when not saving).
    pub session_id: String,
    /// The catalogue the providers were built from (for a model picker).
    pub catalog: Catalog,
    /// The model the agent starts with.
    pub model: crate::provider::catalog::ModelInfo,
}

/// Load config and catalogue (the same way every mode does).
pub fn load(env: &EnvLookup) -> Result<(Config, Catalog), String> {
    load_config(env)
}

/// Choose the model and build the agent (providers, thinking, system prompt, retries), as
/// print mode does; the interactive TUI reuses it. Warnings go to stderr.
pub async fn build_agent(
    cli: &Cli,
    config: &Config,
    mut catalog: Catalog,
    env: &EnvLookup,
) -> Result<BuiltAgent, String> {
    // Bad flags first: no point probing for a model to then refuse the tool list.
    let tools = active_tools(cli, config.tools.limits())?;
    let opened = open_session(cli, config, env)?;
    // A resumed session keeps its model and level unless the flags name others.
    let mut chosen = cli.clone();
    if let Some(o) = opened.as_ref().filter(|o| o.resumed) {
        if chosen.model.is_none()
            && let Some(m) = &o.context.model
        {
            chosen.model = Some(format!("{}/{}", m.provider, m.model_id));
            chosen.provider = None;
        }
        if chosen.thinking.is_none()
            && let Some(t) = o.context.thinking_level
        {
            chosen.thinking = Some(t.as_str().to_string());
        }
    }
    let selection = select::select(&chosen, config, &mut catalog, env).await?;
    for w in &selection.warnings {
        eprintln!("pi: warning: {w}");
    }
    let mut providers = Providers::new(Arc::new(catalog.clone()), cli.api_key.clone(), env.clone());
    if let Some(secs) = config.idle_timeout_secs {
        providers = providers.with_idle_timeout(Duration::from_secs(secs.max(1)));
    }
    let tool_lines = tools
        .iter()
        .map(|t| (t.name().to_string(), context::tool_line(t.description())))
        .collect();
    let mut settings =
        AgentSettings::new(Arc::new(providers), selection.model.to_model()).with_tools(tools);
    settings.thinking = selection.thinking;
    settings.system_prompt = system_prompt(cli, env, tool_lines);
    settings.retry = retry_policy(config);
    settings.steering_mode = config::queue_mode(config.steering_mode.as_deref(), "steering_mode")?;
    settings.follow_up_mode =
        config::queue_mode(config.follow_up_mode.as_deref(), "follow_up_mode")?;
    let agent = Agent::new(settings);
    let mut session_id = crate::session::ids::uuid_v7();
    let mut recorder_task = None;
    if let Some(mut opened) = opened {
        if !opened.context.messages.is_empty() {
            agent
                .replace_messages(std::mem::take(&mut opened.context.messages))
                .map_err(|e| e.to_string())?;
        }
        opened
            .recorder
            .set_model(&selection.model.provider, &selection.model.id);
        opened.recorder.set_thinking_level(selection.thinking);
        session_id = opened.recorder.session_id().to_string();
        recorder_task = Some(crate::session::RecorderTask::spawn(&agent, opened.recorder));
    }
    Ok(BuiltAgent {
        agent,
        session: recorder_task,
        session_id,
        catalog,
        model: selection.model,
    })
}

/// Run print or JSON mode. Returns the exit code.
pub async fn run(cli: Cli, stdin: Option<String>) -> u8 {
    let env = process_env();
    let (config, catalog) = match load_config(&env) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pi: {e}");
            return 1;
        }
    };
    let mut prompts = cli.messages.clone();
    if let Some(input) = stdin {
        match prompts.first_mut() {
            Some(first) => *first = format!("{}\n\n{first}", input.trim_end()),
            None => prompts.push(input),
        }
    }
    prompts.retain(|p| !p.trim().is_empty());
    if prompts.is_empty() {
        eprintln!("pi: nothing to do: give a message, e.g. pi -p \"explain this repo\"");
        return 1;
    }
    let built = match build_agent(&cli, &config, catalog, &env).await {
        Ok(built) => built,
        Err(e) => {
            eprintln!("pi: {e}");
            return 1;
        }
    };
    let agent = built.agent;
    let session_task = built.session;
    let mut events = agent.subscribe();

    let json_mode = cli.mode == OutputMode::Json;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if json_mode {
        let cwd = std::env::current_dir().unwrap_or_default();
        let header = json!({
            "type": "session",
            "version": 3,
            "id": built.session_id,
            "timestamp": now_ms(),
            "cwd": cwd.display().to_string(),
        });
        let _ = writeln!(out, "{header}");
    }

    let mut turns = 0u32;
    let mut stopped_at_max = false;
    let mut signal_code: Option<u8> = None;
    for prompt in prompts {
        if let Err(e) = agent.prompt_text(prompt) {
            eprintln!("pi: {e}");
            return 1;
        }
        let ended = pump(
            &agent,
            &mut events,
            &mut out,
            json_mode,
            cli.max_turns,
            &mut turns,
            &mut stopped_at_max,
        )
        .await;
        if let Some(code) = ended {
            signal_code = Some(code);
        }
        agent.wait_idle().await;
        if signal_code.is_some() || stopped_at_max {
            break;
        }
    }
    let _ = out.flush();
    drop(out);
    close_session(session_task).await;
    if let Some(code) = signal_code {
        return code;
    }
    if stopped_at_max {
        eprintln!(
            "pi: stopped after {} turns (--max-turns); the task may be unfinished",
            cli.max_turns.unwrap_or(0)
        );
        return 1;
    }
    finish(&agent.messages(), json_mode)
}

/// Print the final answer (text mode) and choose the exit code.
fn finish(messages: &[AgentMessage], json_mode: bool) -> u8 {
    let Some(last) = messages.iter().rev().find_map(AgentMessage::as_assistant) else {
        eprintln!("pi: the model gave no answer");
        return 1;
    };
    if !json_mode {
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        for block in &last.content {
            if let Some(t) = block.as_text()
                && !t.is_empty()
            {
                let _ = writeln!(out, "{t}");
            }
        }
        let _ = out.flush();
    }
    match last.stop_reason {
        StopReason::Error | StopReason::Aborted => {
            eprintln!(
                "pi: {}",
                last.error_message
                    .as_deref()
                    .unwrap_or("the run ended with an error")
            );
            1
        }
        _ => 0,
    }
}

#[cfg(unix)]
async fn next_signal(
    term: &mut Option<tokio::signal::unix::Signal>,
    hup: &mut Option<tokio::signal::unix::Signal>,
) -> u8 {
    async fn wait(s: &mut Option<tokio::signal::unix::Signal>) {
        match s {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
    }
    tokio::select! {
        _ = wait(term) => 143,
        _ = wait(hup) => 129,
        _ = tokio::signal::ctrl_c() => 130,
    }
}

/// Forward events until `agent_end`. Returns an exit code if a signal ended the run.
async fn pump(
    agent: &Agent,
    events: &mut UnboundedReceiver<RunEvent>,
    out: &mut impl Write,
    json_mode: bool,
    max_turns: Option<u32>,
    turns: &mut u32,
    stopped_at_max: &mut bool,
) -> Option<u8> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).ok();
    let mut hup = signal(SignalKind::hangup()).ok();
    let mut signalled = None;
    loop {
        let event = tokio::select! {
            ev = events.recv() => ev,
            code = next_signal(&mut term, &mut hup), if signalled.is_none() => {
                agent.abort(Some("Interrupted by a signal".into()));
                signalled = Some(code);
                continue;
            }
        };
        let Some(RunEvent { event, .. }) = event else {
            return signalled;
        };
        let is_end = matches!(event, AgentEvent::AgentEnd { .. });
        match &event {
            AgentEvent::TurnEnd { .. } => {
                *turns += 1;
                if max_turns.is_some_and(|m| *turns >= m) && !*stopped_at_max {
                    *stopped_at_max = true;
                    agent.abort(Some(format!("Stopped after {turns} turns (--max-turns)")));
                }
            }
            AgentEvent::AutoRetryStart {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } if !json_mode => {
                eprintln!(
                    "pi: {error_message}; retrying in {:.1} s (attempt {attempt} of {max_attempts})",
                    *delay_ms as f64 / 1000.0
                );
            }
            _ => {}
        }
        if json_mode {
            if let Ok(line) = serde_json::to_string(&event) {
                let _ = writeln!(out, "{line}");
            }
            if events.is_empty() {
                let _ = out.flush();
            }
        }
        if is_end {
            return signalled;
        }
    }
}
