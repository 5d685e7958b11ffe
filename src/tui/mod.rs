//! The interactive terminal UI (`pi` with no `-p`).
//!
//! Flow: [`run`] builds the agent the same way print mode does, sets the terminal up (inline
//! by default: the conversation goes into the terminal's scrollback; `--fullscreen` or
//! `tui.fullscreen`: the alternate screen) and runs the UI loop. The agent's runs live on
//! their own tokio tasks (the `Agent` facade spawns
//! them); the loop only `select!`s over terminal input (read on a thread, `input`), the host's
//! one event stream (agent events, host events and answers, merged in order by the host), the
//! frame deadline and SIGTERM, SIGHUP and SIGINT (each restores the terminal, aborts the run, which stops a running command's
//! process group, and saves the session on the way out).
//! Every pending event is folded into the [`app::App`] before a frame is drawn; frames
//! are coalesced by [`frame::FrameScheduler`] (≤ 60/s, none when idle) and drawn inside
//! synchronized output, so the terminal never shows half a frame. When a run ends or an
//! approval waits while the terminal is not focused, `notify` tells the person.
//!
//! Components: each owns its state, its keys and its drawing. The `transcript` (with `cells`,
//! `markdown`, `highlight`: the conversation, cached), the `composer` (editor, queued messages,
//! attachments, status line), the `footer`, and the popups under `popup/` (model and session
//! pickers, tree, login on one stack that gets the keys; the approval prompt above it; the `@`
//! picker with the composer; the folder-trust question before the screen). `app` routes keys
//! and events to them and keeps what they share; `render` lays a frame out from them; `help`
//! and `slash` make `/help`, hints and the command table from the live keymap (`keymap`, with
//! keybindings.json). Only the loop, `screen` and `render` know `app`; sessions, tools and MCP
//! are reached through the host (`port`, `crate::host::view`).
//!
//! Around them: `wrap`, `sanitize`, `units`, `rows` (shared row chunks), `paint` (drawing a row
//! fast), `frame`, `external` (Ctrl+G in `$VISUAL`/`$EDITOR`), `input` (the terminal's keys,
//! paused for the external editor), `scrolling` (scroll detection when writing frames),
//! `terminal` (hygiene), `screen` (the two modes), `inline` (inline mode's renderer) and
//! `printed` (what of the conversation is in the scrollback), `notify` (the bell or a desktop
//! notification), `theme` (colours, from the `theme` and `[colors]` keys of config), `newest`
//! (what `-c` asks when the newest session file is damaged).

pub mod app;
pub mod cells;
pub mod complete;
pub mod composer;
pub mod editor;
pub mod editor_view;
pub mod external;
pub mod files;
pub mod filter;
pub mod footer;
pub mod frame;
pub mod help;
pub mod highlight;
pub mod inline;
pub mod input;
pub mod keymap;
pub mod markdown;
pub mod newest;
pub mod notify;
pub mod open_line;
pub mod paint;
pub mod popup;
pub mod port;
pub mod printed;
pub mod render;
pub mod rows;
pub mod sanitize;
pub mod screen;
pub mod scrolling;
pub mod shown_command;
pub mod slash;
pub mod terminal;
pub mod theme;
pub mod todos;
pub mod transcript;
pub mod units;
pub mod wrap;

use std::path::Path;
use std::time::Instant;

use crossterm::event::Event;

use app::{App, Effect, Place};
use frame::FrameScheduler;
use notify::Notifier;
use popup::trust;
use screen::Screen;
use terminal::Mode;

use crate::end_signals::EndSignals;
use crate::host::OpBody;

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
    let shown = crate::paths::short_home(&cwd);
    Place {
        cwd: sanitize::sanitize(&shown),
        branch: git_branch(&cwd).map(|b| sanitize::sanitize(&b)),
        session_name: None,
    }
}

/// What the interactive UI needs beyond the setup options.
#[derive(Clone, Debug, Default)]
pub struct TuiOptions {
    /// Sent as the first prompt (joined by blank lines).
    pub messages: Vec<String>,
    /// Files from `@path` arguments, attached to the first prompt.
    pub files: Vec<crate::attach::FileRef>,
    /// `-r`: open the session picker at once.
    pub pick_session: bool,
    /// `--fullscreen`: the alternate screen instead of the inline mode.
    pub fullscreen: bool,
}

/// Run the interactive UI; returns the exit code.
#[allow(
    clippy::too_many_lines,
    reason = "being reworked with the command protocol (issue 29 point 1)"
)]
pub async fn run(mut options: crate::setup::Options, tui: TuiOptions) -> u8 {
    let verbose = options.verbose;
    let env = options.env.clone();
    let agent_dir = {
        let env = env.clone();
        crate::config::agent_dir(&move |k| env(k))
    };
    // With no key and no local server, open anyway and help set one up (/login).
    options.model.allow_missing = true;
    // Approval requests are put to the person here.
    options.asks_person = true;
    options.shows_history = true;
    // A folder's settings that act for the person: asked about once, before the UI starts.
    if !options.trust_project
        && let Some(pending) = crate::setup::trust::pending(agent_dir.as_deref(), &options.cwd)
    {
        let choice = trust::ask(&pending);
        let remembered = match choice {
            Some(trust::TrustChoice::Quit) => return 1,
            Some(trust::TrustChoice::Trust) => {
                // Used for this run even if it cannot be remembered, as long as the files
                // still say what the person was shown.
                options.trusted_hash = Some(pending.hash());
                pending.record(true)
            }
            Some(trust::TrustChoice::Without) => pending.record(false),
            None => Ok(()),
        };
        if let Err(e) = remembered {
            eprintln!("pi: {}", crate::visible::visible(&e));
        }
    }
    let started = match start_or_choose(options).await {
        Ok(s) => s,
        Err(Some(e)) => {
            eprintln!("pi: {}", crate::visible::visible(&e));
            return 1;
        }
        Err(None) => return 1,
    };
    let mut info = started.info;
    let mut client = started.client;
    let mut themes = popup::theme::Themes {
        files: std::mem::take(&mut info.themes),
        current: String::new(),
        overrides: info.config.colors.clone(),
    };
    let start_theme = info.theme.as_deref().unwrap_or("dark");
    if !themes.apply(start_theme) {
        info.warnings.push(format!(
            "theme `{start_theme}` is not one pi knows (it knows {}); using dark",
            themes.names().join(", ")
        ));
        themes.apply("dark");
    }
    let mut app = App::new(
        port::Port::new(client.commands.clone()),
        info.model,
        info.thinking,
    );
    app.themes = themes;
    app.models = info.models;
    app.catalog = Some(info.catalog.clone());
    app.scoped_models = info.scoped_models;
    app.providers_without_key = info.providers_without_key.into_iter().collect();
    app.signed_in = info.signed_in.into_iter().collect();
    app.key_providers = info.key_providers;
    app.commands.add_templates(&info.templates);
    if info.skill_commands {
        app.commands.add_skills(&info.skills);
    }
    app.set_cwd(info.cwd.clone());
    app.composer.attachments = tui.files.clone();
    app.place = place();
    app.place.session_name = info.session_name.as_deref().map(sanitize::sanitize);
    app.saving = info.saving;
    app.approval_mode = info.approval;
    app.planning = info.plan;
    app.sandbox = info.sandbox.clone();
    app.show_thinking = !info.config.hide_thinking.unwrap_or(false);
    app.set_model_chosen(info.no_model.is_none());
    // The keys first: the header and every hint name them as they are bound.
    let (keys, key_warnings) = keymap::load(agent_dir.as_deref());
    app.set_keys(keys);
    // A resumed session (-c, --session, --fork) opens on its conversation.
    app.show_messages(&info.messages);
    if verbose || !info.config.quiet_startup.unwrap_or(false) {
        app.show_header(env!("CARGO_PKG_VERSION"), info.no_model.is_none());
    }
    if let Some(missing) = &info.no_model {
        app.show_welcome(missing);
    }
    for w in &info.warnings {
        app.notice(sanitize::sanitize(w));
    }
    for w in &key_warnings {
        app.notice(sanitize::sanitize(w));
    }
    if tui.pick_session {
        app.open_sessions();
    }

    let mode = if tui.fullscreen || info.config.tui.fullscreen.unwrap_or(false) {
        Mode::Fullscreen
    } else {
        Mode::Inline
    };
    let notifier = Notifier::new(info.config.notify.unwrap_or_default(), &|k| env(k));
    terminal::install_panic_hook();
    if let Err(e) = terminal::enter(mode) {
        terminal::restore();
        eprintln!("pi: cannot set up the terminal: {e}");
        return 1;
    }
    let _guard = terminal::Guard;
    let mut screen = match Screen::new(mode) {
        Ok(s) => s,
        Err(e) => {
            terminal::restore();
            eprintln!("pi: cannot set up the terminal: {e}");
            return 1;
        }
    };
    let first: Vec<String> = tui
        .messages
        .iter()
        .filter(|m| !m.trim().is_empty())
        .cloned()
        .collect();
    if !first.is_empty() {
        app.composer.editor.set_text(&first.join("\n\n"));
        app.submit(app::Delivery::Steer);
    }
    let code = event_loop(&mut screen, &mut app, &mut client, &env, notifier).await;
    // Inline mode: the rest of the conversation goes into the scrollback, the live region away.
    let _ = screen.finish(&mut app, Instant::now());
    terminal::restore();
    // Abort what runs, let it write its last messages, flush the session.
    let mut unsaved = false;
    if let Some(closed) = client.shutdown().await {
        if let Some(line) = closed.farewell() {
            eprintln!("{}", crate::visible::visible(&line));
        }
        unsaved = closed.unsaved.is_some();
    }
    match code {
        Ok(0) if unsaved => 1,
        Ok(c) => c,
        Err(e) => {
            eprintln!("pi: terminal error: {e}");
            1
        }
    }
}

/// Start the core; when the session asked for is being written by another pi, ask (on the
/// plain terminal, before the UI starts) whether to fork it or open it read-only.
/// `Err(None)`: the person chose to quit.
async fn start_or_choose(
    mut options: crate::setup::Options,
) -> Result<crate::setup::Started, Option<String>> {
    use std::io::IsTerminal;
    let locked = match crate::setup::start(options.clone()).await {
        Ok(s) => return Ok(s),
        Err(crate::setup::StartError {
            locked: Some(locked),
            ..
        }) if std::io::stdin().is_terminal() => locked,
        Err(crate::setup::StartError {
            unreadable_newest: Some(found),
            ..
        }) if std::io::stdin().is_terminal() => {
            let choice = newest::ask(&found);
            options.session = match choice {
                newest::Choice::Next => match &found.next {
                    Some(next) => crate::setup::SessionChoice::File(next.clone()),
                    None => return Err(None),
                },
                newest::Choice::Repair => crate::setup::SessionChoice::File(found.path.clone()),
                newest::Choice::New => crate::setup::SessionChoice::New,
                newest::Choice::Quit => return Err(None),
            };
            return Box::pin(start_or_choose(options)).await;
        }
        Err(e) => return Err(Some(e.message)),
    };
    match ask_about_locked(&locked) {
        LockedChoice::Fork => {
            options.session = crate::setup::SessionChoice::Fork(locked.path.display().to_string());
        }
        LockedChoice::ReadOnly => options.read_only = true,
        LockedChoice::Quit => return Err(None),
    }
    crate::setup::start(options)
        .await
        .map_err(|e| Some(e.message))
}

enum LockedChoice {
    Fork,
    ReadOnly,
    Quit,
}

fn ask_about_locked(locked: &crate::setup::LockedSession) -> LockedChoice {
    use std::io::BufRead;
    eprintln!(
        "pi: this session is open in {}:\n  {}\n\n  \
         f  fork it: go on in a new copy (the default)\n  \
         r  open it read-only: nothing from this run is saved\n  \
         q  quit",
        crate::host::view::another_pi(locked.pid),
        crate::visible::visible(&locked.path.display().to_string())
    );
    eprint!("Choice [f/r/q]: ");
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => LockedChoice::Quit,
        Ok(_) => match line.trim().to_ascii_lowercase().as_str() {
            "" | "f" | "fork" => LockedChoice::Fork,
            "r" | "read-only" | "readonly" => LockedChoice::ReadOnly,
            _ => LockedChoice::Quit,
        },
    }
}

/// What became of a Ctrl+G edit.
enum Edited {
    /// The new text, or why the text stays as it was.
    Done(Result<String, String>),
    /// A signal to quit came while the editor ran (the exit code).
    Quit(u8),
}

/// Ctrl+G: hand the real terminal to the person's editor on a private copy of the text, then
/// take the terminal back. The agent goes on meanwhile; its events wait in their channel.
async fn edit_externally(
    text: &str,
    env: &crate::provider::EnvLookup,
    input: &mut input::Input,
    signals: &mut EndSignals,
) -> std::io::Result<Edited> {
    let command = external::editor_command(&|k| env(k));
    let draft = match external::Draft::write(&std::env::temp_dir(), text) {
        Ok(d) => d,
        Err(e) => {
            return Ok(Edited::Done(Err(format!(
                "Could not write the text for the editor: {e}"
            ))));
        }
    };
    input.pause().await;
    terminal::restore();
    let ran = match run_editor(&external::shell_line(&command, draft.path()), signals).await {
        Ok(ran) => ran,
        Err(code) => return Ok(Edited::Quit(code)),
    };
    terminal::enter(terminal::current_mode())?;
    input.resume();
    Ok(Edited::Done(match ran {
        Ok(status) => match external::failure(&command, status) {
            Some(why) => Err(why),
            None => draft.read(),
        },
        Err(e) => Err(format!(
            "The editor `{command}` could not be started: {e}; the text is unchanged"
        )),
    }))
}

/// Run `sh -c <line>` in the foreground of this terminal until it ends; `Err` with the exit
/// code when SIGTERM or SIGHUP comes first (the editor is killed).
async fn run_editor(
    line: &str,
    signals: &mut EndSignals,
) -> Result<std::io::Result<std::process::ExitStatus>, u8> {
    let spawned = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(line)
        .kill_on_drop(true)
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => return Ok(Err(e)),
    };
    loop {
        tokio::select! {
            status = child.wait() => return Ok(status),
            code = signals.next() => {
                // Ctrl+C typed to an editor that leaves the terminal cooked reaches pi too:
                // it is the editor's. SIGTERM and SIGHUP end both.
                if code != EndSignals::INTERRUPT {
                    let _ = child.kill().await;
                    return Err(code);
                }
            }
        }
    }
}

/// Fold in every event waiting on the host's stream; `true` when one was the host's own (an
/// answer is drawn at once, like a key's effect).
fn take_events(app: &mut App, events: &mut crate::host::FrontEvents) -> bool {
    let mut hosts = false;
    while let Some(e) = events.try_recv() {
        hosts |= !matches!(e, crate::host::FrontEvent::Run(_));
        app.handle_front_event(e);
    }
    hosts
}

async fn event_loop(
    screen: &mut Screen,
    app: &mut App,
    client: &mut crate::host::Client,
    env: &crate::provider::EnvLookup,
    mut notifier: Notifier,
) -> std::io::Result<u8> {
    let mut input = input::Input::start()?;
    let mut frames = FrameScheduler::default();
    let mut signals = EndSignals::install();
    let interrupted = |client: &crate::host::Client| {
        client.commands.send(OpBody::Abort {
            reason: Some("Interrupted by a signal".into()),
        })
    };
    // One timer for the next frame, moved rather than made anew on every wake-up.
    let sleep = tokio::time::sleep(std::time::Duration::ZERO);
    tokio::pin!(sleep);
    let mut armed: Option<Instant> = None;
    // What woke the loop last: the person (keys, paste, mouse, resize) or the agent.
    let mut by_person = true;
    loop {
        // Take whatever the host sent since the last look: while a frame is near, the loop
        // does not wake for each event (a streamed reply sends hundreds a second); it drains
        // them here, once per frame, in the order they happened.
        by_person |= take_events(app, &mut client.events);
        // What the keys and events asked for; after the external editor, the events that
        // came meanwhile are folded in before the next frame.
        let mut took_terminal = false;
        for effect in app.take_effects() {
            match effect {
                Effect::Quit => return Ok(0),
                Effect::Suspend => {
                    screen.hand_over()?;
                    terminal::suspend()?;
                    screen.take_back()?;
                    took_terminal = true;
                }
                Effect::Copy(text) => terminal::copy_osc52(&text),
                Effect::Notify(text) => {
                    if let Some(bytes) = notifier.notice(&text) {
                        screen.write_raw(&bytes)?;
                    }
                }
                Effect::ExternalEditor(text) => {
                    screen.hand_over()?;
                    let edited = edit_externally(&text, env, &mut input, &mut signals).await?;
                    screen.take_back()?;
                    took_terminal = true;
                    match edited {
                        Edited::Done(outcome) => app.external_edit_done(outcome),
                        Edited::Quit(code) => {
                            interrupted(client);
                            return Ok(code);
                        }
                    }
                }
            }
        }
        if took_terminal {
            take_events(app, &mut client.events);
            app.dirty = true;
        }
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
            screen.draw(app, now)?;
            frames.drawn(now);
        }
        let deadline = frames.deadline(app.animating());
        if deadline != armed {
            if let Some(d) = deadline {
                sleep.as_mut().reset(d.into());
            }
            armed = deadline;
        }
        by_person = false;
        // A frame is due within a stream interval: events can wait for it.
        let frame_soon = armed.is_some_and(|d| d <= Instant::now() + frame::STREAM_INTERVAL);
        tokio::select! {
            ev = input.events.recv() => {
                by_person = true;
                match ev {
                    Some(Ok(Event::Key(k))) => app.handle_key(k),
                    Some(Ok(Event::Paste(p))) => app.handle_paste(&p),
                    Some(Ok(Event::Mouse(m))) => app.handle_mouse(m),
                    Some(Ok(Event::Resize(width, height))) => {
                        screen.resize(width, height);
                        app.dirty = true;
                    }
                    Some(Ok(Event::FocusGained)) => notifier.focus(true),
                    Some(Ok(Event::FocusLost)) => notifier.focus(false),
                    Some(Err(e)) => return Err(e),
                    None => return Ok(0),
                }
            }
            ev = client.events.recv(), if !frame_soon => {
                if let Some(e) = ev {
                    // The host's answers are drawn at once, like a key's effect.
                    by_person = !matches!(e, crate::host::FrontEvent::Run(_));
                    app.handle_front_event(e);
                }
            }
            _ = &mut sleep, if armed.is_some() => {
                armed = None;
            }
            // In raw mode Ctrl+C arrives as a key (the editor's meaning); a SIGINT is sent by
            // something else (`kill -INT`, a supervisor) and ends pi like the other two. Each
            // restores the terminal (the caller) and aborts the run first.
            code = signals.next() => {
                interrupted(client);
                return Ok(code);
            }
        }
    }
}

#[cfg(test)]
mod tests;
