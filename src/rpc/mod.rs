//! `pi --mode rpc`: the Node.js pi's RPC protocol over stdin and stdout, a third front end on
//! the same core as print mode and the TUI.
//!
//! Commands arrive as JSON lines on stdin ([`framing`] splits on LF only, so U+2028/U+2029 in
//! strings stay inside their record); each gets one `response` line carrying its `id`,
//! `command` and `success` (with `data` or `error`), and every agent event is written as in
//! JSON mode, flushed as it happens ([`output`]). A malformed line, a line longer than
//! `[rpc] max_line_bytes`, an unknown command, a prompt during a run without
//! `streamingBehavior`: each is answered with `success: false` and the loop goes on. When stdin
//! closes, a running turn is aborted, the session is flushed (MCP servers are stopped) and pi
//! exits 0; SIGTERM, SIGHUP and SIGINT end it the same way, with 143, 129 and 130.
//! [`wire`] reads each command (serde, the Node pi's names) and [`commands`] carries it out on
//! the host; the host's one event stream (agent events, host events and answers, in order) is
//! written back as it comes.

pub mod commands;
pub mod framing;
pub mod output;
pub mod wire;

use serde_json::{Value, json};

use crate::agent::protocol::events::RunEvent;
use crate::end_signals::EndSignals;
use crate::host::{FrontEvent, OpBody};
use crate::setup;
use crate::visible::visible;

/// Run RPC mode until stdin closes; returns the exit code.
pub async fn run(mut options: setup::Options) -> u8 {
    options.live_updates = true;
    // Registered before the MCP servers start, so an early signal still ends pi cleanly.
    let mut signals = EndSignals::install();
    let started = match setup::start(options).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pi: {}", visible(&e.message));
            return 1;
        }
    };
    for w in &started.info.warnings {
        eprintln!("pi: warning: {}", visible(w));
    }
    let mut out = output::Output::start();
    let limit = started
        .info
        .config
        .rpc
        .max_line_bytes
        .map_or(framing::DEFAULT_MAX_LINE_BYTES, |p| p.0);
    let mut input = framing::read_stdin(limit);
    let mut client = started.client;
    let mut session = commands::Session::new(started.info, client.commands.clone());
    let signal = signals.next();
    tokio::pin!(signal);
    let mut code = 0;
    loop {
        tokio::select! {
            // A signal is never kept waiting; the host's stream comes in the order things
            // happened (a host answer, say to `new_session`, after the run events before it).
            biased;
            signalled = &mut signal => {
                code = signalled;
                break;
            }
            Some(event) = client.events.recv() => {
                match event {
                    FrontEvent::Run(RunEvent { event, run }) => {
                        let replies = session.observe(run, &event);
                        if let Ok(text) = serde_json::to_string(&event) {
                            out.line(&text);
                        }
                        for reply in replies {
                            out.line(&reply);
                        }
                    }
                    FrontEvent::Host { reply_to, event } => {
                        for reply in session.host_event(reply_to, event) {
                            out.line(&reply);
                        }
                    }
                    // Answers to what `handle_line` waits for are taken there.
                    FrontEvent::Answer { .. } => {}
                }
                if client.events.is_empty() {
                    out.flush();
                }
            }
            line = input.recv() => match line {
                Some(framing::Input::Line(line)) => {
                    for reply in session.handle_line(&line, &mut client.events).await {
                        out.line(&reply);
                    }
                    out.flush();
                }
                Some(framing::Input::TooLong { bytes, limit }) => {
                    out.line(&too_long(bytes, limit));
                    out.flush();
                }
                None => break,
            },
        }
    }
    // stdin closed: stop what runs, write the session out, leave.
    client.commands.send(OpBody::Abort { reason: None });
    let closed = client.shutdown().await;
    // Events the abort produced still go out before the process ends.
    while let Some(e) = client.events.try_recv() {
        if let FrontEvent::Run(RunEvent { event, .. }) = e
            && let Ok(text) = serde_json::to_string(&event)
        {
            out.line(&text);
        }
    }
    out.flush();
    match closed {
        _ if code != 0 => code,
        Some(c) if c.unsaved.is_some() => 1,
        _ => 0,
    }
}

/// The `parse` error for a line over the limit.
fn too_long(bytes: usize, limit: usize) -> String {
    use crate::tools::truncate::{format_size, limit_size};
    response(
        &None,
        "parse",
        Err(format!(
            "Failed to parse command: the line is {} ({bytes} bytes), longer than the {} \
             a command may be ([rpc] max_line_bytes in config.toml); it was skipped",
            format_size(bytes as u64),
            limit_size(limit)
        )),
    )
}

/// One `response` line.
pub fn response(
    id: &Option<Value>,
    command: &str,
    result: Result<Option<Value>, String>,
) -> String {
    let mut r = json!({"type": "response", "command": command});
    if let Some(id) = id {
        r["id"] = id.clone();
    }
    match result {
        Ok(data) => {
            r["success"] = json!(true);
            if let Some(d) = data {
                r["data"] = d;
            }
        }
        Err(e) => {
            r["success"] = json!(false);
            r["error"] = json!(e);
        }
    }
    r.to_string()
}
