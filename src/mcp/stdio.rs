//! A stdio MCP server's process and its JSON-RPC channel.
//!
//! [`spawn`] starts the server as the leader of a new process group, so a server that starts
//! helpers of its own (`npx`, a shell script, a Python wrapper) is stopped with them: one
//! `killpg` reaches them all. On Linux the server also asks the kernel for `SIGTERM` when pi's
//! main thread ends (`PR_SET_PDEATHSIG`; pi's runtime is single-threaded, so that is pi itself
//! ending, `SIGKILL` included), and gives up at once if pi was already gone. Its stdout is read
//! through [`ReplyLimit`], which keeps a reply over the size limit from ever being buffered.
//!
//! [`StdioTransport`] is what the SDK talks through. Closing it follows the MCP specification's
//! order: stdin is closed, the server gets a moment to leave on its own, then its group gets
//! `SIGTERM`, then `SIGKILL`. Dropping it kills whatever is left of the group at once.

use std::io;
use std::process::Stdio;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

use super::reply_limit::ReplyLimit;
use crate::tools::process::{ProcessGroup, Signal};

/// How long a server whose stdin was closed may take to exit before its group gets SIGTERM,
/// and again before SIGKILL.
const CLOSE_GRACE: Duration = Duration::from_millis(500);

/// A started server: the channel to it and its stderr.
pub(crate) struct Spawned {
    pub transport: StdioTransport,
    pub stderr: Option<ChildStderr>,
}

/// Start `cmd` as a stdio server whose lines may be at most `max_reply_bytes` long.
pub(crate) fn spawn(
    mut cmd: tokio::process::Command,
    max_reply_bytes: usize,
) -> io::Result<Spawned> {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    tie_to_pi(&mut cmd);
    let mut child = cmd.spawn()?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(io::Error::other("the server's stdin or stdout is missing"));
    };
    let stderr = child.stderr.take();
    let group = child.id().and_then(ProcessGroup::led_by);
    let io = AsyncRwTransport::new_client(ReplyLimit::new(stdout, max_reply_bytes), stdin)
        // Lines are already bounded by `ReplyLimit` (the SDK would drop a longer one
        // silently, leaving the call to wait out its timeout).
        .with_max_line_length(usize::MAX);
    Ok(Spawned {
        transport: StdioTransport { io, child, group },
        stderr,
    })
}

/// Ask for SIGTERM when pi ends (Linux).
#[cfg(target_os = "linux")]
fn tie_to_pi(cmd: &mut tokio::process::Command) {
    // SAFETY: a plain getter.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the hook makes system calls only and allocates nothing, as `pre_exec` requires.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // pi ended before the request was made: the signal will never come.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn tie_to_pi(_cmd: &mut tokio::process::Command) {}

/// The channel to a stdio server, owning its process.
pub(crate) struct StdioTransport {
    io: AsyncRwTransport<RoleClient, ReplyLimit<ChildStdout>, ChildStdin>,
    child: Child,
    group: Option<ProcessGroup>,
}

impl StdioTransport {
    /// The server's process group.
    pub(crate) fn group(&self) -> Option<ProcessGroup> {
        self.group
    }
}

impl Transport<RoleClient> for StdioTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.io.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.io.receive()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let closed = self.io.close().await;
        if tokio::time::timeout(CLOSE_GRACE, self.child.wait())
            .await
            .is_err()
        {
            if let Some(g) = self.group {
                g.signal(Signal::Term);
            }
            if tokio::time::timeout(CLOSE_GRACE, self.child.wait())
                .await
                .is_err()
            {
                let _ = self.child.start_kill();
            }
        }
        // Helpers the server started may outlive it.
        if let Some(g) = self.group.take()
            && g.alive()
        {
            g.signal(Signal::Kill);
        }
        closed
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        if let Some(g) = self.group.take() {
            g.signal(Signal::Kill);
        }
    }
}
