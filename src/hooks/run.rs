//! Running one hook command: `bash -c` in the project folder, the event's JSON on stdin,
//! stdout and stderr read (each up to a limit), and its process group killed at its time
//! limit or when the run that asked is aborted.
//!
//! The command gets the environment the tools get (provider keys and other secrets withheld)
//! plus `CLAUDE_PROJECT_DIR` and `PI_PROJECT_DIR`, the project folder.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::settings::HookCommand;
use crate::agent::protocol::abort::AbortSignal;
use crate::tools::process::{GroupGuard, ProcessGroup};

/// The most of a hook's stdout or stderr kept.
const OUTPUT_MAX: usize = 64 * 1024;

/// Where hooks run and what they see.
#[derive(Clone, Debug, Default)]
pub struct RunContext {
    pub cwd: PathBuf,
    /// The tools' environment.
    pub env: Vec<(OsString, OsString)>,
}

/// How one command ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// It exited with this code.
    Exit(i32),
    /// Killed by a signal, or its status unknown.
    Crashed,
    TimedOut(Duration),
    /// The run it served was aborted.
    Aborted,
    /// It could not be started.
    NotStarted(String),
}

/// One command's result.
#[derive(Clone, Debug)]
pub(crate) struct Ran {
    pub ended: Ended,
    pub stdout: String,
    pub stderr: String,
}

/// Run `hook` with `input` on its stdin.
pub(crate) async fn run(
    hook: &HookCommand,
    input: &[u8],
    ctx: &RunContext,
    signal: &AbortSignal,
) -> Ran {
    let not_started = |why: String| Ran {
        ended: Ended::NotStarted(why),
        stdout: String::new(),
        stderr: String::new(),
    };
    let project = ctx.cwd.as_os_str();
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-c")
        .arg(&hook.command)
        .env_clear()
        .envs(ctx.env.iter().map(|(k, v)| (k, v)))
        .env("CLAUDE_PROJECT_DIR", project)
        .env("PI_PROJECT_DIR", project)
        .current_dir(&ctx.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return not_started(e.to_string()),
    };
    let _guard = GroupGuard::new(child.id().and_then(ProcessGroup::led_by));
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return not_started("its standard streams could not be opened".into());
    };
    let input = input.to_vec();
    // A hook that never reads its stdin must not block us: write on the side.
    let writer = tokio::spawn(async move {
        let _ = stdin.write_all(&input).await;
        let _ = stdin.shutdown().await;
    });
    let out = tokio::spawn(read_capped(stdout));
    let err = tokio::spawn(read_capped(stderr));
    let ended = tokio::select! {
        status = child.wait() => match status {
            Ok(s) => s.code().map_or(Ended::Crashed, Ended::Exit),
            Err(_) => Ended::Crashed,
        },
        () = tokio::time::sleep(hook.timeout) => Ended::TimedOut(hook.timeout),
        () = signal.cancelled() => Ended::Aborted,
    };
    writer.abort();
    if !matches!(ended, Ended::Exit(_) | Ended::Crashed) {
        let _ = child.start_kill();
    }
    // The guard kills what the command left running; its pipes then close. What it wrote
    // before is kept, but a leftover holding the pipe open is not waited on for long.
    drop(_guard);
    let grace = Duration::from_millis(500);
    let stdout = tokio::time::timeout(grace, out)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let stderr = tokio::time::timeout(grace, err)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    Ran {
        ended,
        stdout,
        stderr,
    }
}

async fn read_capped(mut r: impl tokio::io::AsyncRead + Unpin) -> String {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = OUTPUT_MAX.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(command: &str, timeout_ms: u64) -> HookCommand {
        HookCommand {
            command: command.into(),
            timeout: Duration::from_millis(timeout_ms),
            fail_closed: false,
            source: "test".into(),
        }
    }

    fn ctx() -> RunContext {
        RunContext {
            cwd: std::env::temp_dir(),
            env: vec![("PATH".into(), std::env::var_os("PATH").unwrap_or_default())],
        }
    }

    #[tokio::test]
    async fn input_on_stdin_output_and_exit_code_back() {
        let r = run(
            &hook(
                "read line; echo \"got $line in $PI_PROJECT_DIR\"; echo oops >&2; exit 2",
                5000,
            ),
            b"hello\n",
            &ctx(),
            &AbortSignal::new(),
        )
        .await;
        assert_eq!(r.ended, Ended::Exit(2));
        let tmp = std::env::temp_dir().display().to_string();
        assert_eq!(r.stdout.trim(), format!("got hello in {tmp}"));
        assert_eq!(r.stderr.trim(), "oops");
    }

    #[tokio::test]
    async fn a_slow_hook_is_stopped_at_its_limit_with_what_it_started() {
        let start = std::time::Instant::now();
        let r = run(
            &hook("sleep 30 & echo started; sleep 30", 300),
            b"",
            &ctx(),
            &AbortSignal::new(),
        )
        .await;
        assert!(matches!(r.ended, Ended::TimedOut(_)), "{r:?}");
        assert_eq!(r.stdout.trim(), "started");
        assert!(start.elapsed() < Duration::from_secs(10));
    }

    #[tokio::test]
    async fn an_abort_stops_it() {
        let signal = AbortSignal::new();
        let s = signal.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            s.abort(crate::agent::protocol::abort::AbortReason::Requested);
        });
        let r = run(&hook("sleep 30", 60_000), b"", &ctx(), &signal).await;
        assert_eq!(r.ended, Ended::Aborted);
    }
}
