//! Print mode (`-p`) and JSON mode (`--mode json`): run the prompts, report, exit.
//!
//! A front end on the host like the interactive UI: it starts the core through `setup`, sends
//! each prompt as a command and reads the event stream until that run's `agent_end`. Print mode
//! writes only the text of the final assistant message to stdout; retries and errors go to
//! stderr; an error or aborted ending exits 1. JSON mode writes a session header line and then
//! every agent event as one JSON object per line (a `message_update` carries the delta, not the
//! whole partial message; the complete message comes with `message_end`). SIGTERM, SIGHUP and
//! Ctrl+C abort the run cleanly and exit 143, 129 and 130. `-r` asks for a session on the
//! terminal; without one on stdin it lists this folder's sessions on stdout instead (one line
//! each, the whole id first, for `--session`).

pub mod login;

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use serde_json::json;

use crate::agent::protocol::command::{Accepted, WhenBusy};
use crate::agent::protocol::events::{AgentEvent, RunEvent, RunId};
use crate::agent::protocol::types::{AgentMessage, StopReason, now_ms};
use crate::end_signals::EndSignals;
use crate::host::{Client, FrontEvent, HostEvent, OpBody, OpId, Prompt};
use crate::provider::catalog::format_model_table;
use crate::setup::{self, SessionChoice};
use crate::visible::{for_output, json_escaped, visible};

/// A message on stderr, its controls made visible (it may quote a server or a model).
fn say(message: &str) {
    eprintln!("pi: {}", visible(message));
}

/// What print mode needs beyond the setup options.
#[derive(Clone, Debug, Default)]
pub struct PrintOptions {
    /// The prompts, sent one after another.
    pub messages: Vec<String>,
    /// Files from `@path` arguments (checked when the arguments were read), sent with the
    /// first prompt.
    pub files: Vec<crate::attach::FileRef>,
    /// Text piped on stdin (put in front of the first prompt).
    pub stdin: Option<String>,
    /// One JSON event per line instead of the final answer.
    pub json: bool,
    /// Stop a run after this many turns (non-zero exit).
    pub max_turns: Option<u32>,
    /// `-r`: pick a saved session from a numbered list first.
    pub pick_session: bool,
}

/// `pi --list-models [search]`.
pub fn list_models(options: &setup::Options, search: Option<&str>) -> u8 {
    let env = options.env.clone();
    let agent_dir = crate::config::agent_dir(&move |k| env(k));
    let (_, catalog, _) = match setup::load_config(
        agent_dir.as_deref(),
        &options.cwd,
        &options.env,
        options.trust_project,
        options.trusted_hash.as_deref(),
    ) {
        Ok(c) => c,
        Err(e) => {
            say(&e.to_string());
            return 1;
        }
    };
    let found = catalog.search(search);
    if found.is_empty() {
        say(&format!(
            "no model matches `{}`",
            search.unwrap_or_default()
        ));
        return 1;
    }
    print!("{}", format_model_table(&found));
    0
}

/// What `--verbose` reports about the start: files read, model, session, sandbox.
fn start_report(info: &setup::StartInfo, sources: &[std::path::PathBuf]) -> Vec<String> {
    let files = if sources.is_empty() {
        "none (built-in defaults)".to_string()
    } else {
        sources
            .iter()
            .map(|p| crate::paths::short_home(p))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut lines = vec![
        format!("config: {files}"),
        format!(
            "model: {}/{} (thinking {})",
            info.model.provider,
            info.model.id,
            info.thinking.as_str()
        ),
        format!(
            "session: {}{}",
            info.session_id,
            if info.saving { "" } else { " (not saved)" }
        ),
    ];
    lines.extend(info.sandbox.clone());
    lines
}

/// `pi --export <session> [out]`: write a saved session as HTML (or markdown for `.md`).
pub fn export_session(options: &setup::Options, args: &[String]) -> u8 {
    match export_to_file(options, args) {
        Ok(line) => {
            println!("{}", visible(&line));
            0
        }
        Err(e) => {
            say(&e);
            1
        }
    }
}

fn export_to_file(options: &setup::Options, args: &[String]) -> Result<String, String> {
    use crate::host::export;
    let query = args
        .first()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .ok_or("--export needs a session (a file path or an id)")?;
    let file = std::path::Path::new(query);
    let path = if file.is_file() {
        file.to_path_buf()
    } else {
        let env = options.env.clone();
        let agent_dir = crate::config::agent_dir(&move |k| env(k));
        let (config, _, _) = setup::load_config(
            agent_dir.as_deref(),
            &options.cwd,
            &options.env,
            options.trust_project,
            options.trusted_hash.as_deref(),
        )?;
        let paths = setup::session_paths(options, &config)
            .ok_or("no home folder, so there are no saved sessions to export")?;
        crate::session::find_session(&paths, query)
            .map_err(|e| e.to_string())?
            .path
    };
    let session = crate::session::Session::load(&path).map_err(|e| e.to_string())?;
    let info = crate::session::session_info(&path);
    let title = info
        .and_then(|i| i.name)
        .unwrap_or_else(|| format!("pi session {}", session.id()));
    let messages = session.context().messages;
    let out = args.get(1).map_or_else(
        || std::path::PathBuf::from(export::default_name(crate::agent::protocol::types::now_ms())),
        std::path::PathBuf::from,
    );
    let out = if out.is_absolute() {
        out
    } else {
        options.cwd.join(out)
    };
    let text = export::render(&messages, export::Format::for_path(&out), &title);
    crate::host::write_private(&out, &text)
        .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    Ok(format!(
        "Exported {} messages to {}",
        messages.len(),
        crate::paths::short_home(&out)
    ))
}

/// The prompts to send: the messages, with piped text put in front of the first.
fn prompts(print: &PrintOptions) -> Vec<String> {
    let mut prompts = print.messages.clone();
    if let Some(input) = &print.stdin {
        match prompts.first_mut() {
            Some(first) => *first = format!("{}\n\n{first}", input.trim_end()),
            None => prompts.push(input.clone()),
        }
    }
    prompts.retain(|p| !p.trim().is_empty());
    // Files alone are a prompt too (`pi -p @question.md`).
    if prompts.is_empty() && !print.files.is_empty() {
        prompts.push(String::new());
    }
    prompts
}

/// Run print or JSON mode. Returns the exit code.
#[allow(
    clippy::too_many_lines,
    reason = "being reworked with the command protocol (issue 29 point 1)"
)]
pub async fn run(mut options: setup::Options, print: PrintOptions) -> u8 {
    let prompts = prompts(&print);
    // `-r` with nothing to read a choice from: the list is the answer.
    if print.pick_session && !std::io::stdin().is_terminal() {
        return list_for_resume(&options, !prompts.is_empty());
    }
    if prompts.is_empty() {
        eprintln!("pi: nothing to do: give a message, e.g. pi -p \"explain this repo\"");
        return 1;
    }
    if print.pick_session {
        match pick_session(&options) {
            Ok(path) => options.session = SessionChoice::File(path),
            Err(e) => {
                say(&e.to_string());
                return 1;
            }
        }
    }
    let cwd = options.cwd.clone();
    let verbose = options.verbose;
    let sources = if verbose {
        let env = options.env.clone();
        let agent_dir = crate::config::agent_dir(&move |k| env(k));
        setup::config_sources(agent_dir.as_deref(), &cwd)
    } else {
        Vec::new()
    };
    // The final answer is printed whole: only JSON mode needs the deltas.
    options.live_updates = print.json;
    // Registered before the MCP servers start, so an early signal still ends pi cleanly.
    let mut signals = EndSignals::install();
    let started = match setup::start(options).await {
        Ok(s) => s,
        Err(e) => {
            say(&e.to_string());
            return 1;
        }
    };
    for w in &started.info.warnings {
        say(&format!("warning: {w}"));
    }
    if verbose {
        for line in start_report(&started.info, &sources) {
            say(&line);
        }
    }
    let mut client = started.client;

    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if print.json {
        let header = json!({
            "type": "session",
            "version": 3,
            "id": started.info.session_id,
            "timestamp": now_ms(),
            "cwd": cwd.display().to_string(),
        });
        let _ = writeln!(out, "{}", json_escaped(&header.to_string()));
    }

    // Signals abort the run from their own task, so reading events costs nothing extra.
    let signalled = Arc::new(AtomicU8::new(0));
    let watcher = {
        let (signalled, commands) = (signalled.clone(), client.commands.clone());
        tokio::spawn(async move {
            let code = signals.next().await;
            signalled.store(code, Ordering::SeqCst);
            commands.send(OpBody::Abort {
                reason: Some("Interrupted by a signal".into()),
            });
        })
    };
    let mut pump = Pump {
        json: print.json,
        max_turns: print.max_turns,
        turns: 0,
        stopped_at_max: false,
        last_run: Vec::new(),
        prompt: None,
    };
    // Tools from MCP servers are offered from the first request on: wait for the servers, each
    // at most its startup timeout (at once when none are configured).
    client.mcp_ready().await;
    let mut files = Some(print.files);
    for prompt in prompts {
        let prompt = Prompt {
            text: prompt,
            files: files.take().unwrap_or_default(),
            when_busy: WhenBusy::Refuse,
            ..Prompt::default()
        };
        let sent = client.commands.send(OpBody::Prompt(prompt));
        let answer = match sent {
            Some(id) => client.events.answer(id).await,
            None => None,
        };
        let run = match answer {
            Some(crate::host::Answer::Agent(
                crate::agent::protocol::command::AgentAnswer::Prompt(accepted),
            )) => match accepted {
                Ok(Accepted::Started(run)) => run,
                Ok(Accepted::Queued) => continue,
                Err(e) => {
                    say(&e.to_string());
                    return 1;
                }
            },
            _ => {
                say("the agent stopped before the prompt was sent");
                return 1;
            }
        };
        pump.prompt = sent;
        pump.until_end(&mut client, &mut out, run).await;
        if signalled.load(Ordering::SeqCst) != 0 || pump.stopped_at_max {
            break;
        }
    }
    watcher.abort();
    let _ = out.flush();
    drop(out);
    let unsaved = match client.shutdown().await {
        Some(closed) => {
            if let Some(line) = closed.farewell() {
                eprintln!("{}", visible(&line));
            }
            closed.unsaved.is_some()
        }
        None => false,
    };
    let code = signalled.load(Ordering::SeqCst);
    if code != 0 {
        return code;
    }
    if pump.stopped_at_max {
        eprintln!(
            "pi: stopped after {} turns (--max-turns); the task may be unfinished",
            print.max_turns.unwrap_or(0)
        );
        return 1;
    }
    match finish(&pump.last_run, print.json) {
        // The answer was given, but the session lost part of it.
        0 if unsaved => 1,
        code => code,
    }
}

/// Print the final answer (text mode) and choose the exit code.
fn finish(messages: &[AgentMessage], json_mode: bool) -> u8 {
    let Some(last) = messages.iter().rev().find_map(AgentMessage::as_assistant) else {
        eprintln!("pi: the model gave no answer");
        return 1;
    };
    if !json_mode {
        let stdout = std::io::stdout();
        let terminal = stdout.is_terminal();
        let mut out = stdout.lock();
        for block in &last.content {
            if let Some(t) = block.as_text()
                && !t.is_empty()
            {
                let _ = writeln!(out, "{}", for_output(t, terminal));
            }
        }
        let _ = out.flush();
    }
    match last.stop_reason {
        StopReason::Error | StopReason::Aborted => {
            say(last
                .error_message
                .as_deref()
                .unwrap_or("the run ended with an error"));
            1
        }
        _ => 0,
    }
}

/// Reads the event stream for print mode.
struct Pump {
    json: bool,
    max_turns: Option<u32>,
    turns: u32,
    stopped_at_max: bool,
    /// The messages the last finished run added.
    last_run: Vec<AgentMessage>,
    /// The prompt being answered (what the host says about its files is a note on it).
    prompt: Option<OpId>,
}

impl Pump {
    /// Forward events until `run`'s `agent_end`.
    async fn until_end(&mut self, client: &mut Client, out: &mut impl Write, run: RunId) {
        loop {
            let next = match client.events.recv().await {
                Some(FrontEvent::Run(e)) => Some(e),
                Some(FrontEvent::Host { reply_to, event }) => {
                    match event {
                        HostEvent::SessionWriteFailed(why) => say(&format!(
                            "warning: the session file could not be written: {why}"
                        )),
                        // A file of the prompt left out.
                        HostEvent::Notice(text)
                            if reply_to.is_some() && reply_to == self.prompt =>
                        {
                            say(&format!("note: {text}"))
                        }
                        // MCP servers that failed or stopped.
                        HostEvent::Notice(text) => say(&text),
                        _ => {}
                    }
                    continue;
                }
                Some(FrontEvent::Answer { .. }) => continue,
                None => None,
            };
            let Some(RunEvent { run: of, event }) = next else {
                return;
            };
            match &event {
                AgentEvent::TurnEnd { .. } => {
                    self.turns += 1;
                    if self.max_turns.is_some_and(|m| self.turns >= m) && !self.stopped_at_max {
                        self.stopped_at_max = true;
                        client.commands.send(OpBody::Abort {
                            reason: Some(format!(
                                "Stopped after {} turns (--max-turns)",
                                self.turns
                            )),
                        });
                    }
                }
                AgentEvent::AutoRetryStart {
                    attempt,
                    max_attempts,
                    delay_ms,
                    error_message,
                } if !self.json => {
                    say(&format!(
                        "{error_message}; retrying in {:.1} s (attempt {attempt} of {max_attempts})",
                        *delay_ms as f64 / 1000.0
                    ));
                }
                _ => {}
            }
            if self.json {
                if let Ok(line) = serde_json::to_string(&event) {
                    let _ = writeln!(out, "{}", json_escaped(&line));
                }
                if client.events.is_empty() {
                    let _ = out.flush();
                }
            }
            if let AgentEvent::AgentEnd { messages, .. } = event
                && of == Some(run)
            {
                self.last_run = messages;
                return;
            }
        }
    }
}

/// `-r` without a terminal to pick on: this folder's sessions on stdout, newest first, one
/// line each (the start of the id that tells it apart from the others listed, last written,
/// messages, title), so a script can choose one for `--session`. With a
/// prompt to send, nothing is sent (pi cannot choose for the person): exit 1 with the way on.
fn list_for_resume(options: &setup::Options, had_prompt: bool) -> u8 {
    let list = match resume_list(options) {
        Ok(list) => list,
        Err(e) => {
            say(&e);
            return 1;
        }
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let ids: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
    let short = crate::session::unique_prefixes(&ids);
    let wide = short.iter().map(String::len).max().unwrap_or(0);
    for (s, id) in list.iter().zip(&short) {
        let messages = crate::session::count_messages(&s.path)
            .map_or_else(|| "?".to_string(), |n| n.to_string());
        let modified = s
            .modified
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let _ = writeln!(
            out,
            "{:wide$}  {}  {:>4} msgs  {}",
            visible(id),
            crate::session::time::iso_from_ms(modified),
            messages,
            visible(s.title())
        );
    }
    let _ = out.flush();
    if had_prompt {
        say(
            "--resume needs a terminal to pick from, so nothing was sent; the sessions are \
             listed above: run again with --session <id> (or -c for the newest)",
        );
        return 1;
    }
    0
}

/// This folder's sessions for `-r`, newest first (an error when there are none to resume).
fn resume_list(options: &setup::Options) -> Result<Vec<crate::session::SessionInfo>, String> {
    let env = options.env.clone();
    let agent_dir = crate::config::agent_dir(&move |k| env(k));
    let (config, _, _) = setup::load_config(
        agent_dir.as_deref(),
        &options.cwd,
        &options.env,
        options.trust_project,
        options.trusted_hash.as_deref(),
    )?;
    let paths = setup::session_paths(options, &config)
        .ok_or("sessions are not saved here, so there is none to resume")?;
    let list =
        crate::session::list_sessions(&paths, crate::session::ListScope::CurrentFolder).sessions;
    if list.is_empty() {
        return Err("no saved sessions in this folder to resume".into());
    }
    Ok(list)
}

/// A plain numbered list on stderr; the choice is read from the terminal.
fn pick_session(options: &setup::Options) -> Result<std::path::PathBuf, String> {
    use std::io::BufRead;
    let list = resume_list(options)?;
    let shown = list.len().min(30);
    let ids: Vec<&str> = list.iter().take(shown).map(|s| s.id.as_str()).collect();
    let short = crate::session::unique_prefixes(&ids);
    let wide = short.iter().map(String::len).max().unwrap_or(0);
    for (i, (s, id)) in list.iter().zip(&short).enumerate() {
        let title: String = s.title().chars().take(70).collect();
        eprintln!("{:>3}. {:wide$}  {}", i + 1, visible(id), visible(&title));
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
