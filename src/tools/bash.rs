//! `bash`: run a command and report its merged output.
//!
//! The command runs as `bash -c COMMAND` in the working directory, stdin closed, stdout and
//! stderr on one pipe (so their interleaving is what a terminal would show), as the leader of
//! its own process group (see [`process`](super::process)), dying with pi (see
//! [`launch`](super::launch)). With a sandbox (`--sandbox`) the command starts in its own
//! namespaces under Landlock and a seccomp filter, without the variables that point at session
//! servers (see [`sandbox`](super::sandbox)), or is refused when that is not possible and the
//! fallback says so.
//!
//! Flow: one loop selects over the pipe, the shell's exit, the abort token, the timeout and the
//! kill timers.
//!
//! * Output goes to an [`OutputCollector`], which keeps only the recent tail in memory and,
//!   once the output outgrows the result limits, spills everything to
//!   `$TMPDIR/pi-bash-<hex>.log`, named in the result. Progress updates (the current tail) go
//!   to the progress sink at most once per [`ToolContext::progress_interval`].
//! * Abort or timeout sends SIGTERM to the whole group, then SIGKILL after
//!   [`ToolContext::kill_grace`] if anything is left, and the result says which happened.
//! * When the shell exits the call is over: everything it started goes with it (see
//!   [`launch`](super::launch): a PID namespace where the system allows one, else the process
//!   group is killed), and the pipe is drained until it closes. A process that escaped the
//!   group without a namespace around it (`setsid cmd &`) can hold the pipe open forever, so
//!   draining stops once the pipe has been quiet for [`DRAIN_IDLE`] (or after [`DRAIN_CAP`] of
//!   steady output), and the result says so; a detached task keeps reading and discarding the
//!   pipe until that process closes it.
//!
//! A steering message never stops a command (`interruptible` is false); only abort and timeout
//! do. There is no default timeout.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

use super::args::Args;
use super::context::ToolContext;
use super::fsutil::random_hex;
use super::info::{ToolInfo, tool_info_accessors};
use super::launch::Launch;
use super::process::{GroupGuard, ProcessGroup, Signal};
use super::sandbox::SESSION_VARIABLES;
use super::truncate::{ToolLimits, Truncation, format_size, limit_size, truncate_tail};
use crate::agent::protocol::tool::{
    AgentTool, Concurrency, ProgressSink, ToolError, ToolInvocation, ToolOutput,
};

/// After the shell exits, stop waiting for the pipe once it has been quiet this long.
pub(crate) const DRAIN_IDLE: Duration = Duration::from_millis(100);
/// After the shell exits, stop reading the pipe after this long in any case.
pub(crate) const DRAIN_CAP: Duration = Duration::from_secs(2);
/// How often liveness is checked while a stopped command winds down.
const POLL: Duration = Duration::from_millis(20);
/// After SIGKILL, how long to wait for the pipe to close before giving up on it.
const AFTER_KILL_CAP: Duration = Duration::from_secs(1);

fn description(limits: &ToolLimits) -> String {
    format!(
        "Run a shell command with `bash -c` in the working directory. stdout and stderr are \
         merged. The result keeps the last {} lines or {} of output; when there is more, the \
         full output is saved to a file whose path is given. A non-zero exit status makes the \
         result an error. `timeout` (seconds) is optional and has no default, so avoid commands \
         that wait for input or run forever. Everything the command starts, background jobs \
         included, is ended when it returns: nothing keeps running between calls.",
        limits.max_lines,
        limit_size(limits.max_bytes)
    )
}

pub(crate) struct BashTool {
    ctx: Arc<ToolContext>,
    info: ToolInfo,
}

impl BashTool {
    pub(crate) fn new(ctx: Arc<ToolContext>) -> Self {
        let mut description = description(ctx.limits());
        if let Some(note) = ctx.sandbox().command_note() {
            description.push(' ');
            description.push_str(&note);
        }
        BashTool {
            info: ToolInfo::new(
                "bash",
                description,
                json!({
                    "type": "object",
                    "properties": {
                        "command": {"type": "string", "description": "The command to run"},
                        "timeout": {"type": "number", "description": "Seconds before the command is killed (optional, no default)"}
                    },
                    "required": ["command"]
                }),
            ),
            ctx,
        }
    }
}

#[async_trait]
impl AgentTool for BashTool {
    tool_info_accessors!();

    fn concurrency(&self, _args: &Value) -> Result<Concurrency, String> {
        Ok(Concurrency::Exclusive)
    }

    fn interruptible(&self, _args: &Value) -> Result<bool, String> {
        Ok(false)
    }

    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let args = Args::new("bash", &call.args)?;
        let command = args.required_str("command")?;
        if command.trim().is_empty() {
            return Err(ToolError::new("bash: the command is empty."));
        }
        // `0` and `null` mean "no timeout", as the Node.js pi reads them (small models send
        // them for an optional number); anything else must be a positive number of seconds.
        let timeout = match args.get("timeout") {
            Some(v) if v.is_null() || v.as_f64() == Some(0.0) => None,
            _ => args.opt_positive("timeout")?,
        };
        run_command(&self.ctx, command, timeout, &call).await
    }
}

/// Why a command stopped before it finished on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    TimedOut,
    Aborted,
}

/// What a run produced.
struct Finished {
    status: Option<ExitStatus>,
    stop: Option<Stop>,
    killed_hard: bool,
    pipe_error: Option<String>,
    /// The shell exited but something it started still has the output open.
    background_holds_output: bool,
}

/// Start `bash -c command` in `cwd`, in its own process group, with the session's
/// environment and sandbox, stdout and stderr into one pipe; the child and the pipe's read end.
fn spawn_bash(
    ctx: &ToolContext,
    command: &str,
    cwd: &std::path::Path,
) -> Result<(tokio::process::Child, std::io::PipeReader), ToolError> {
    // Refused here when the sandbox is asked for but cannot be enforced (and may not be
    // skipped); otherwise the restrictions the child will apply to itself, or none.
    let jail = ctx.sandbox().confine(cwd)?;
    let launch = Launch::prepare(jail, ctx.contains_processes());
    let confined = launch.confined();
    let (reader, writer) =
        std::io::pipe().map_err(|e| ToolError::new(format!("Cannot create a pipe: {e}")))?;
    let writer_err = writer
        .try_clone()
        .map_err(|e| ToolError::new(format!("Cannot create a pipe: {e}")))?;
    let child = {
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg("-c")
            .arg(command)
            .env_clear()
            .envs(
                ctx.env()
                    .iter()
                    .filter(|(k, _)| !(confined && is_session_variable(k)))
                    .map(|(k, v)| (k, v)),
            )
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(writer_err)
            .process_group(0);
        launch.apply_to(&mut cmd);
        // `cmd` (and with it our copies of the pipe's write end and the prepared sandbox) is
        // dropped at the end of this block, so the pipe closes when the command's processes
        // are done with it.
        cmd.spawn().map_err(|e| {
            let under = if confined { " under the sandbox" } else { "" };
            ToolError::new(format!("Cannot start bash{under}: {e}"))
        })?
    };
    Ok((child, reader))
}

/// Read and discard what is left in the pipe until its last writer lets go.
fn drain_in_background(mut pipe: tokio::net::unix::pipe::Receiver) {
    tokio::spawn(async move {
        let mut sink = vec![0u8; 8192];
        while let Ok(n) = pipe.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    });
}

/// Whether to stop reading once the shell exited (at `exit`): the output ended or went quiet
/// (a background job may hold the pipe: it is not waited on for long); after a stop, only
/// once the whole group is gone, or was killed and given a moment.
fn output_done(
    now: Instant,
    exit: Instant,
    last_data: Instant,
    eof: bool,
    stopped: bool,
    killed_at: Option<Instant>,
    group: Option<ProcessGroup>,
) -> bool {
    let quiet = now.duration_since(last_data.max(exit));
    let drained = eof || quiet >= DRAIN_IDLE;
    if !stopped {
        return drained || now.duration_since(exit) >= DRAIN_CAP;
    }
    match killed_at {
        Some(k) => eof || now.duration_since(k) >= AFTER_KILL_CAP,
        None => drained && group.is_none_or(|g| !g.alive()),
    }
}

async fn run_command(
    ctx: &ToolContext,
    command: &str,
    timeout: Option<f64>,
    call: &ToolInvocation,
) -> Result<ToolOutput, ToolError> {
    if call.cancel.is_cancelled() {
        return Err(ToolError::new("Aborted before the command started."));
    }
    let cwd = ctx.cwd();
    if !cwd.is_dir() {
        return Err(ToolError::new(format!(
            "The working directory {} does not exist, so the command cannot run.",
            cwd.display()
        )));
    }
    let (mut child, reader) = spawn_bash(ctx, command, cwd)?;
    let group = child.id().and_then(ProcessGroup::led_by);
    let guard = GroupGuard::new(group);
    let mut pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))
        .map_err(|e| ToolError::new(format!("Cannot read the command's output: {e}")))?;

    let mut out = OutputCollector::with_limits(*ctx.limits());
    let mut last_progress: Option<Instant> = None;
    let mut progress_due = false;
    let interval = ctx.progress_interval();
    let timeout_at = timeout.map(|t| Instant::now() + Duration::from_secs_f64(t.min(1e9)));
    let far = Instant::now() + Duration::from_secs(86_400 * 365);

    let mut status: Option<ExitStatus> = None;
    let mut exited_at: Option<Instant> = None;
    let mut eof = false;
    let mut stop: Option<Stop> = None;
    let mut kill_at: Option<Instant> = None;
    let mut killed_at: Option<Instant> = None;
    let mut sent_kill = false;
    let mut last_data = Instant::now();
    let mut pipe_error = None;
    let mut chunk = vec![0u8; 64 * 1024];

    loop {
        let now = Instant::now();
        if let Some(exit) = exited_at
            && output_done(now, exit, last_data, eof, stop.is_some(), killed_at, group)
        {
            break;
        }
        tokio::select! {
            biased;
            _ = call.cancel.cancelled(), if stop.is_none() && exited_at.is_none() => {
                stop = Some(Stop::Aborted);
                kill_at = Some(begin_stop(group, ctx.kill_grace()));
            }
            _ = tokio::time::sleep_until(timeout_at.unwrap_or(far)), if stop.is_none() && exited_at.is_none() && timeout_at.is_some() => {
                stop = Some(Stop::TimedOut);
                kill_at = Some(begin_stop(group, ctx.kill_grace()));
            }
            _ = tokio::time::sleep_until(kill_at.unwrap_or(far)), if kill_at.is_some() && killed_at.is_none() => {
                sent_kill = match group {
                    Some(g) => g.alive() && g.signal(Signal::Kill),
                    // No group to signal (never seen in practice): kill the shell at least.
                    None => child.start_kill().is_ok(),
                };
                killed_at = Some(Instant::now());
            }
            // Output that arrived within the throttle interval goes out once it has passed, so
            // the last lines before a quiet spell are not held back.
            _ = tokio::time::sleep_until(last_progress.unwrap_or(far) + interval), if progress_due => {
                progress_due = false;
                last_progress = Some(Instant::now());
                send_progress(&call.progress, &out);
            }
            waited = child.wait(), if status.is_none() => {
                match waited {
                    Ok(s) => {
                        status = Some(s);
                        // The call is over: what the shell left in its group goes now, so
                        // the pipe closes (in a PID namespace nothing is left by now).
                        if let Some(g) = group {
                            g.signal(Signal::Kill);
                        }
                    }
                    Err(e) => {
                        pipe_error.get_or_insert(format!("waiting for the command failed: {e}"));
                        if stop.is_none() {
                            stop = Some(Stop::Aborted);
                            kill_at = Some(begin_stop(group, ctx.kill_grace()));
                        }
                    }
                }
                exited_at = Some(Instant::now());
            }
            read = pipe.read(&mut chunk), if !eof => {
                match read {
                    Ok(0) => eof = true,
                    Ok(n) => {
                        out.push(chunk.get(..n).unwrap_or_default());
                        last_data = Instant::now();
                        if last_progress.is_none_or(|t| last_data.duration_since(t) >= interval) {
                            last_progress = Some(last_data);
                            progress_due = false;
                            send_progress(&call.progress, &out);
                        } else {
                            progress_due = true;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        pipe_error.get_or_insert(format!("reading the output failed: {e}"));
                        eof = true;
                    }
                }
            }
            _ = tokio::time::sleep(POLL), if exited_at.is_some() => {}
        }
    }

    // The shell is reaped. Whatever it left in its group goes now (in a PID namespace the
    // kernel has already ended the rest).
    drop(guard);
    // Something still holds the pipe: keep reading (and discarding) until it lets go, so a
    // background server does not die of SIGPIPE the next time it logs a line.
    let background_holds_output = !eof;
    if background_holds_output {
        drain_in_background(pipe);
    }
    let finished = Finished {
        status,
        stop,
        killed_hard: sent_kill,
        pipe_error,
        background_holds_output,
    };
    Ok(build_result(out.finish(), &finished, timeout))
}

/// Whether `name` is one of the variables sandboxed commands run without.
fn is_session_variable(name: &std::ffi::OsStr) -> bool {
    SESSION_VARIABLES.iter().any(|v| name == *v)
}

/// SIGTERM the group; returns when SIGKILL is due.
fn begin_stop(group: Option<ProcessGroup>, grace: Duration) -> Instant {
    if let Some(g) = group {
        g.signal(Signal::Term);
    }
    Instant::now() + grace
}

fn send_progress(progress: &ProgressSink, out: &OutputCollector) {
    let snap = out.snapshot();
    progress.update(
        ToolOutput::text(snap.truncation.content.clone()).with_details(json!({
            "totalBytes": snap.total_bytes,
            "totalLines": snap.total_lines,
        })),
    );
}

fn seconds(t: f64) -> String {
    if t.fract() == 0.0 {
        format!("{}", t as u64)
    } else {
        format!("{t}")
    }
}

fn build_result(snap: Snapshot, run: &Finished, timeout: Option<f64>) -> ToolOutput {
    let mut text = if snap.truncation.content.is_empty() {
        "(no output)".to_string()
    } else {
        snap.truncation.content.clone()
    };
    let truncated = snap.total_bytes > snap.truncation.output_bytes as u64;
    if truncated {
        let saved = match (&snap.spill_path, &snap.spill_error) {
            (Some(p), _) => format!("Full output: {}", p.display()),
            (None, Some(e)) => format!("The full output could not be saved: {e}"),
            (None, None) => "The full output was not saved".to_string(),
        };
        let shown = if snap.truncation.last_line_partial {
            format!(
                "Last {} of line {} shown",
                format_size(snap.truncation.output_bytes as u64),
                snap.total_lines
            )
        } else {
            let first = snap.total_lines + 1 - snap.truncation.output_lines as u64;
            format!(
                "Lines {first}-{} of {} shown",
                snap.total_lines, snap.total_lines
            )
        };
        text.push_str(&format!("\n\n[{shown}. {saved}]"));
    }
    if let Some(e) = &run.pipe_error {
        text.push_str(&format!("\n\n(Note: {e}.)"));
    }
    if run.background_holds_output && run.stop.is_none() {
        text.push_str(
            "\n\n[A process the command started outside its process group (with setsid) is \
             still running with this output open; what it prints from now on is not captured.]",
        );
    }

    let how_stopped = if run.killed_hard {
        "its processes ignored SIGTERM and were killed with SIGKILL"
    } else {
        "its processes were sent SIGTERM"
    };
    let code = run.status.and_then(|s| s.code());
    let signal = run
        .status
        .and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s));
    let is_error = match run.stop {
        Some(Stop::Aborted) => {
            text.push_str(&format!("\n\nCommand aborted; {how_stopped}."));
            true
        }
        Some(Stop::TimedOut) => {
            let t = timeout.map(seconds).unwrap_or_default();
            text.push_str(&format!(
                "\n\nCommand timed out after {t} seconds; {how_stopped}."
            ));
            true
        }
        None => match (code, signal) {
            (Some(0), _) => false,
            (Some(c), _) => {
                text.push_str(&format!("\n\nCommand exited with code {c}."));
                true
            }
            (None, Some(s)) => {
                text.push_str(&format!("\n\nCommand was killed by signal {s}."));
                true
            }
            (None, None) => true,
        },
    };
    let mut details = json!({
        "exitCode": code,
        "signal": signal,
        "timedOut": run.stop == Some(Stop::TimedOut),
        "aborted": run.stop == Some(Stop::Aborted),
        "killed": run.killed_hard,
        "backgroundHoldsOutput": run.background_holds_output,
        "totalBytes": snap.total_bytes,
        "totalLines": snap.total_lines,
    });
    if truncated {
        details["truncation"] = snap.truncation.to_details();
    }
    if let Some(p) = &snap.spill_path {
        details["fullOutputPath"] = json!(p.to_string_lossy());
    }
    ToolOutput {
        is_error,
        ..ToolOutput::text(text).with_details(details)
    }
}

/// Where the full output goes once it is too big for the result.
enum Spill {
    NotNeeded,
    Active {
        path: PathBuf,
        file: BufWriter<File>,
    },
    Failed(String),
}

/// Keeps the tail of a command's output in bounded memory and spills the whole of it to a file
/// once it outgrows the result limits.
pub(crate) struct OutputCollector {
    /// The most recent bytes (everything, until the spill starts). Starts at a line start unless
    /// `partial_start`.
    buf: Vec<u8>,
    partial_start: bool,
    total_bytes: u64,
    newlines: u64,
    last_byte: Option<u8>,
    spill: Spill,
    limits: ToolLimits,
}

/// The collector's view at one moment.
pub(crate) struct Snapshot {
    pub truncation: Truncation,
    pub total_bytes: u64,
    pub total_lines: u64,
    pub spill_path: Option<PathBuf>,
    pub spill_error: Option<String>,
}

impl Default for OutputCollector {
    fn default() -> Self {
        Self::new()
    }
}

impl OutputCollector {
    /// A collector with the default limits.
    pub(crate) fn new() -> Self {
        Self::with_limits(ToolLimits::default())
    }

    /// A collector cutting at `limits.max_lines` / `limits.max_bytes`.
    pub(crate) fn with_limits(limits: ToolLimits) -> Self {
        OutputCollector {
            buf: Vec::new(),
            partial_start: false,
            total_bytes: 0,
            newlines: 0,
            last_byte: None,
            spill: Spill::NotNeeded,
            limits,
        }
    }

    /// The tail buffer is trimmed back to this many bytes...
    fn keep_bytes(&self) -> usize {
        self.limits.max_bytes.saturating_mul(2)
    }

    /// ...once it grows past this many.
    fn trim_at(&self) -> usize {
        self.limits.max_bytes.saturating_mul(4)
    }

    pub(crate) fn push(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        self.total_bytes += chunk.len() as u64;
        self.newlines += memchr::memchr_iter(b'\n', chunk).count() as u64;
        self.last_byte = chunk.last().copied();
        self.buf.extend_from_slice(chunk);
        let over_limits = self.total_bytes > self.limits.max_bytes as u64
            || self.total_lines() > self.limits.max_lines as u64;
        match &mut self.spill {
            Spill::Active { file, .. } => {
                if let Err(e) = file.write_all(chunk) {
                    self.spill = Spill::Failed(e.to_string());
                }
            }
            Spill::NotNeeded if over_limits => {
                // Nothing has been trimmed yet, so `buf` holds all the output so far.
                self.spill = start_spill(&self.buf);
            }
            _ => {}
        }
        if self.buf.len() > self.trim_at() {
            self.trim();
        }
    }

    fn trim(&mut self) {
        let keep = self.keep_bytes();
        let mut cut = self.buf.len().saturating_sub(keep);
        match memchr::memchr(b'\n', self.buf.get(cut..).unwrap_or_default()) {
            Some(pos) if pos + 1 < keep => {
                cut += pos + 1;
                self.partial_start = false;
            }
            _ => {
                // One huge line: cut inside it, on a character boundary.
                while self.buf.get(cut).is_some_and(|b| b & 0xC0 == 0x80) {
                    cut += 1;
                }
                self.partial_start = true;
            }
        }
        self.buf.drain(..cut);
    }

    pub(crate) fn total_lines(&self) -> u64 {
        match self.last_byte {
            None | Some(b'\n') => self.newlines,
            Some(_) => self.newlines + 1,
        }
    }

    pub(crate) fn snapshot(&self) -> Snapshot {
        let text = String::from_utf8_lossy(&self.buf);
        let mut truncation = truncate_tail(&text, self.limits.max_lines, self.limits.max_bytes);
        // The buffer holds the end of the output; totals cover all of it.
        truncation.total_bytes = self.total_bytes as usize;
        truncation.total_lines = self.total_lines() as usize;
        if self.partial_start && truncation.output_bytes >= text.len() {
            truncation.last_line_partial = true;
        }
        let (spill_path, spill_error) = match &self.spill {
            Spill::Active { path, .. } => (Some(path.clone()), None),
            Spill::Failed(e) => (None, Some(e.clone())),
            Spill::NotNeeded => (None, None),
        };
        Snapshot {
            truncation,
            total_bytes: self.total_bytes,
            total_lines: self.total_lines(),
            spill_path,
            spill_error,
        }
    }

    /// Flush the spill file and take the final view.
    pub(crate) fn finish(mut self) -> Snapshot {
        if let Spill::Active { file, .. } = &mut self.spill
            && let Err(e) = file.flush()
        {
            self.spill = Spill::Failed(e.to_string());
        }
        self.snapshot()
    }
}

fn start_spill(so_far: &[u8]) -> Spill {
    let path = std::env::temp_dir().join(format!("pi-bash-{}.log", random_hex()));
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path);
    match opened {
        Ok(f) => {
            let mut file = BufWriter::with_capacity(256 * 1024, f);
            match file.write_all(so_far) {
                Ok(()) => Spill::Active { path, file },
                Err(e) => Spill::Failed(e.to_string()),
            }
        }
        Err(e) => Spill::Failed(format!("{}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_stays_in_memory() {
        let mut c = OutputCollector::new();
        c.push(b"hello\nworld");
        let s = c.finish();
        assert_eq!(s.truncation.content, "hello\nworld");
        assert_eq!(s.total_lines, 2);
        assert!(s.spill_path.is_none());
    }

    #[test]
    fn big_output_spills_and_keeps_the_tail() {
        let mut c = OutputCollector::new();
        for i in 0..30_000 {
            c.push(format!("line {i}\n").as_bytes());
        }
        let s = c.finish();
        assert_eq!(s.total_lines, 30_000);
        assert_eq!(s.truncation.output_lines, super::super::truncate::MAX_LINES);
        assert!(s.truncation.content.ends_with("line 29999"));
        assert!(s.truncation.content.starts_with("line 28000\n"));
        let path = s.spill_path.unwrap();
        let full = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(full.lines().count(), 30_000);
        assert!(full.starts_with("line 0\n"));
    }

    #[test]
    fn configured_limits_cut_the_tail_there() {
        let limits = ToolLimits {
            max_lines: 3,
            max_bytes: 1000,
            ..ToolLimits::default()
        };
        let mut c = OutputCollector::with_limits(limits);
        for i in 0..10 {
            c.push(format!("line {i}\n").as_bytes());
        }
        let s = c.finish();
        assert_eq!(s.truncation.content, "line 7\nline 8\nline 9");
        if let Some(p) = s.spill_path {
            std::fs::remove_file(p).unwrap();
        }
        let mut c = OutputCollector::with_limits(ToolLimits {
            max_bytes: 10,
            ..limits
        });
        for _ in 0..50 {
            c.push(b"abcd\n");
        }
        let s = c.finish();
        assert_eq!(s.truncation.content, "abcd\nabcd");
        if let Some(p) = s.spill_path {
            std::fs::remove_file(p).unwrap();
        }
    }

    #[test]
    fn one_huge_line_keeps_its_end() {
        let mut c = OutputCollector::new();
        for _ in 0..100 {
            c.push(&[b'x'; 10_000]);
        }
        c.push(b"END");
        let s = c.finish();
        assert!(s.truncation.last_line_partial);
        assert!(s.truncation.content.ends_with("xEND"));
        assert!(s.truncation.output_bytes <= super::super::truncate::MAX_BYTES);
        if let Some(p) = s.spill_path {
            assert_eq!(std::fs::metadata(&p).unwrap().len(), 1_000_003);
            std::fs::remove_file(p).unwrap();
        }
    }
}
