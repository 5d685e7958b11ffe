//! The interactive terminal UI (`pi` with no `-p`).
//!
//! Flow: [`run`] builds the agent the same way print mode does, enters full-screen mode and
//! runs the UI loop. The agent's runs live on their own tokio tasks (the `Agent` facade spawns
//! them); the loop only `select!`s over terminal input (crossterm's `EventStream`), the agent's
//! events (the mpsc receiver from `Agent::subscribe`), the frame deadline and SIGTERM/SIGHUP.
//! Every pending agent event is folded into the [`app::App`] before a frame is drawn; frames
//! are coalesced by [`frame::FrameScheduler`] (≤ 60/s, none when idle) and drawn inside
//! synchronized output, so the terminal never shows half a frame.
//!
//! Modules: `app` (state, keys, events), `render` (layout), `cells` and `transcript` (what the
//! conversation looks like, cached), `markdown`, `wrap`, `sanitize`, `editor`, `slash`,
//! `highlight` (code colours, loaded lazily), `rows` (shared row chunks), `frame`,
//! `scrolling` (scroll detection when writing frames), `terminal` (hygiene), `port` (the agent
//! as the app sees it), `theme` (colours, from the `theme` and `[colors]` keys of config).

pub mod app;
pub mod cells;
pub mod editor;
pub mod frame;
pub mod highlight;
pub mod markdown;
pub mod port;
pub mod render;
pub mod rows;
pub mod sanitize;
pub mod scrolling;
pub mod sessions;
pub mod slash;
pub mod terminal;
pub mod theme;
pub mod transcript;
pub mod wrap;

use std::io::stdout;
use std::path::Path;
use std::time::Instant;

use crossterm::event::{Event, EventStream};
use crossterm::execute;
use crossterm::terminal::{BeginSynchronizedUpdate, EndSynchronizedUpdate};
use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::{Backend, CrosstermBackend};

use app::{App, Effect, Place};
use frame::FrameScheduler;

use crate::agent::engine::facade::Agent;
use crate::cli::Cli;

/// The current branch from `.git/HEAD` (following a worktree's `gitdir:` file), if any.
pub fn git_branch(start: &Path) -> Option<String> {
    let mut dir = Some(start);
    while let Some(d) = dir {
        let git = d.join(".git");
        let head = if git.is_dir() {
            std::fs::read_to_string(git.join("HEAD")).ok()
        } else if git.is_file() {
            let pointer = std::fs::read_to_string(&git).ok()?;
            let gitdir = pointer.trim().strip_prefix("gitdir:")?.trim();
            std::fs::read_to_string(d.join(gitdir).join("HEAD")).ok()
        } else {
            None
        };
        if let Some(head) = head {
            let head = head.trim();
            return Some(match head.strip_prefix("ref: refs/heads/") {
                Some(b) => b.to_string(),
                None => head.chars().take(7).collect(),
            });
        }
        dir = d.parent();
    }
    None
}

fn place() -> Place {
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut shown = cwd.display().to_string();
    if let Some(home) = dirs::home_dir()
        && let Ok(rest) = cwd.strip_prefix(&home)
    {
        shown = if rest.as_os_str().is_empty() {
            "~".into()
        } else {
            format!("~/{}", rest.display())
        };
    }
    Place {
        cwd: sanitize::sanitize(&shown),
        branch: git_branch(&cwd).map(|b| sanitize::sanitize(&b)),
        session_name: None,
    }
}

/// Run the interactive UI; returns the exit code.
pub async fn run(cli: Cli) -> u8 {
    let env = crate::provider::process_env();
    let (config, catalog) = match crate::cli::print::load(&env) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pi: {e}");
            return 1;
        }
    };
    theme::set(config.theme());
    // `-r` opens the TUI with the session picker instead of the numbered list on stderr: the
    // agent starts on a new (not yet written) session until one is chosen.
    let mut start = cli.clone();
    start.resume = false;
    let built = match crate::cli::print::build_agent(&start, &config, catalog, &env).await {
        Ok(b) => b,
        Err(e) => {
            eprintln!("pi: {e}");
            return 1;
        }
    };
    let agent = built.agent;
    let mut session_task = built.session;
    let events = agent.subscribe();
    let thinking = agent.settings().thinking;
    let mut app = App::new(Box::new(agent.clone()), built.model, thinking);
    app.models = built.catalog.models().to_vec();
    app.place = place();
    if !cli.no_session
        && let Ok(cwd) = std::env::current_dir()
    {
        let e = env.clone();
        let agent_dir = crate::config::agent_dir(&move |k| e(k));
        let e = env.clone();
        app.session_host = crate::session::SessionPaths::resolve(
            agent_dir.as_deref(),
            &cwd,
            cli.session_dir.as_deref(),
            config.session_dir.as_deref(),
            &move |k| e(k),
        )
        .map(|paths| {
            Box::new(sessions::FileSessions {
                paths,
                cwd,
                catalog: built.catalog.clone(),
            }) as Box<dyn sessions::SessionHost>
        });
    }
    if cli.resume {
        app.open_sessions();
    }

    terminal::install_panic_hook();
    if let Err(e) = terminal::enter() {
        terminal::restore();
        eprintln!("pi: cannot set up the terminal: {e}");
        return 1;
    }
    let _guard = terminal::Guard;
    let backend = scrolling::ScrollingBackend::new(CrosstermBackend::new(stdout()));
    let mut term = match backend.and_then(Terminal::new) {
        Ok(t) => t,
        Err(e) => {
            terminal::restore();
            eprintln!("pi: cannot set up the terminal: {e}");
            return 1;
        }
    };
    let first: Vec<String> = cli
        .messages
        .iter()
        .filter(|m| !m.trim().is_empty())
        .cloned()
        .collect();
    if !first.is_empty() {
        app.editor.set_text(&first.join("\n\n"));
        app.submit(app::Delivery::Steer);
    }
    let code = event_loop(&mut term, &mut app, &agent, events, &mut session_task).await;
    agent.abort(None);
    terminal::restore();
    // Let an aborted run write its last messages before the file is closed.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), agent.wait_idle()).await;
    crate::cli::print::close_session(session_task).await;
    match code {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pi: terminal error: {e}");
            1
        }
    }
}

async fn wait_signal(s: &mut Option<tokio::signal::unix::Signal>) {
    match s {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending::<()>().await,
    }
}

/// Draw one frame inside synchronized output.
/// `resized`: the terminal may have changed size since the last frame (checking costs a system
/// call, so it is done only then).
pub fn draw<B: Backend + std::io::Write>(
    term: &mut Terminal<scrolling::ScrollingBackend<B>>,
    app: &mut App,
    now: Instant,
    resized: bool,
) -> std::io::Result<()> {
    execute!(term.backend_mut(), BeginSynchronizedUpdate)?;
    if resized {
        term.autoresize()?;
    }
    let drawn = scrolling::draw_frame(term, |f| render::draw(f, app, now));
    execute!(term.backend_mut(), EndSynchronizedUpdate)?;
    drawn
}

async fn event_loop<B: Backend + std::io::Write>(
    term: &mut Terminal<scrolling::ScrollingBackend<B>>,
    app: &mut App,
    agent: &Agent,
    mut events: tokio::sync::mpsc::UnboundedReceiver<crate::agent::protocol::events::RunEvent>,
    session_task: &mut Option<crate::session::RecorderTask>,
) -> std::io::Result<u8> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut input = EventStream::new();
    let mut frames = FrameScheduler::default();
    let mut sigterm = signal(SignalKind::terminate()).ok();
    let mut sighup = signal(SignalKind::hangup()).ok();
    // What woke the loop last: the person (keys, paste, mouse, resize) or the agent.
    let mut by_person = true;
    let mut resized = true;
    loop {
        if app.dirty {
            if by_person {
                frames.mark_dirty();
            } else {
                frames.mark_streamed();
            }
            app.dirty = false;
        }
        let now = Instant::now();
        if frames.due(now, app.animating()) {
            draw(term, app, now, std::mem::take(&mut resized))?;
            frames.drawn(now);
        }
        let deadline = frames.deadline(app.animating());
        let sleep = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d.into()).await,
                None => std::future::pending().await,
            }
        };
        by_person = false;
        tokio::select! {
            ev = input.next() => {
                by_person = true;
                match ev {
                    Some(Ok(Event::Key(k))) => app.handle_key(k),
                    Some(Ok(Event::Paste(p))) => app.handle_paste(&p),
                    Some(Ok(Event::Mouse(m))) => app.handle_mouse(m),
                    Some(Ok(Event::Resize(..))) => {
                        resized = true;
                        app.dirty = true;
                    }
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Err(e),
                    None => return Ok(0),
                }
            }
            ev = events.recv() => {
                if let Some(e) = ev {
                    app.handle_agent_event(e.event);
                    while let Ok(e) = events.try_recv() {
                        app.handle_agent_event(e.event);
                    }
                }
            }
            _ = sleep => {}
            _ = wait_signal(&mut sigterm) => {
                agent.abort(Some("Interrupted by a signal".into()));
                return Ok(143);
            }
            _ = wait_signal(&mut sighup) => {
                agent.abort(Some("Interrupted by a signal".into()));
                return Ok(129);
            }
        }
        for effect in app.take_effects() {
            match effect {
                Effect::Quit => return Ok(0),
                Effect::Suspend => {
                    terminal::suspend()?;
                    term.clear()?;
                    resized = true;
                    app.dirty = true;
                }
                Effect::Copy(text) => terminal::copy_osc52(&text),
            }
        }
        if let Some(mut recorder) = app.pending_recorder.take() {
            // A session was resumed: flush the old file, then record into the chosen one.
            if let Some(old) = session_task.take() {
                old.finish().await;
            }
            recorder.set_model(&app.model.provider, &app.model.id);
            recorder.set_thinking_level(app.thinking);
            *session_task = Some(crate::session::RecorderTask::spawn(agent, recorder));
        }
    }
}
#[cfg(test)]
mod tests;
