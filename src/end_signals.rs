//! The signals that end a front end (print/JSON, RPC and the TUI): SIGTERM, SIGHUP and
//! SIGINT, each turned into its conventional exit code (143, 129, 130).
//!
//! The handlers are registered by [`EndSignals::install`], which a front end calls before it
//! starts anything: a signal that arrives while MCP servers are still starting is then held
//! for the front end to act on (abort, flush the session, stop the servers' process groups)
//! instead of killing pi on the spot and leaving the servers' helpers behind.

use tokio::signal::unix::{Signal, SignalKind, signal};

/// Registered handlers for the three ending signals (a handler that could not be registered
/// is simply never ready).
pub struct EndSignals {
    term: Option<Signal>,
    hup: Option<Signal>,
    int: Option<Signal>,
}

impl EndSignals {
    /// The exit code [`next`](Self::next) gives for SIGINT.
    pub const INTERRUPT: u8 = 130;

    /// Register the handlers now (a tokio runtime must be running).
    pub fn install() -> EndSignals {
        EndSignals {
            term: signal(SignalKind::terminate()).ok(),
            hup: signal(SignalKind::hangup()).ok(),
            int: signal(SignalKind::interrupt()).ok(),
        }
    }

    /// The exit code of the next ending signal: 143 for SIGTERM, 129 for SIGHUP, 130 for
    /// SIGINT.
    pub async fn next(&mut self) -> u8 {
        async fn one(s: &mut Option<Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        tokio::select! {
            _ = one(&mut self.term) => 143,
            _ = one(&mut self.hup) => 129,
            _ = one(&mut self.int) => Self::INTERRUPT,
        }
    }
}
