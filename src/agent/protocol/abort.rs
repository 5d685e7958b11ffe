//! Abort signals that remember why they fired.
//!
//! An [`AbortSignal`] wraps a [`CancellationToken`] and the [`AbortReason`] given when it was
//! aborted. Children fire with their parent and report the parent's reason unless they were
//! aborted first on their own. The loop derives its run signal (with the deadline) and the
//! per-batch steering signal this way, so any point can ask "why did this stop?".

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use tokio_util::sync::CancellationToken;

/// Text used when a run is aborted without a stated reason.
pub const DEFAULT_ABORT_TEXT: &str = "Operation aborted";
/// Text used when the run deadline fires.
pub const DEADLINE_TEXT: &str = "Deadline exceeded";

/// Why a signal fired.
#[derive(Clone, Debug, PartialEq)]
pub enum AbortReason {
    /// Aborted with no reason given.
    Requested,
    /// Aborted with a reason to show (blank text counts as no reason).
    Message(String),
    /// The run deadline passed.
    Deadline,
    /// Only some tool calls caused the abort; each call gets its own label.
    ToolScoped {
        message: String,
        per_call: BTreeMap<String, String>,
        default_label: String,
    },
    /// A tool result ended the run on purpose (e.g. a sub-agent "yield"): finish the batch and
    /// stop, without the aborted assistant message a user abort produces.
    TerminalToolResult,
}

impl AbortReason {
    /// The text shown for this reason.
    pub fn text(&self) -> String {
        match self {
            AbortReason::Message(m) if !m.trim().is_empty() => m.clone(),
            AbortReason::Deadline => DEADLINE_TEXT.to_string(),
            AbortReason::ToolScoped { message, .. } if !message.trim().is_empty() => {
                message.clone()
            }
            _ => DEFAULT_ABORT_TEXT.to_string(),
        }
    }

    /// Per-call labels for the placeholders of an aborted message, if the reason is tool-scoped.
    pub fn tool_labels<'a>(
        &self,
        call_ids: impl Iterator<Item = &'a str>,
    ) -> Option<BTreeMap<String, String>> {
        match self {
            AbortReason::ToolScoped {
                per_call,
                default_label,
                ..
            } => Some(
                call_ids
                    .map(|id| {
                        let label = per_call.get(id).unwrap_or(default_label).clone();
                        (id.to_string(), label)
                    })
                    .collect(),
            ),
            _ => None,
        }
    }
}

struct Inner {
    token: CancellationToken,
    reason: OnceLock<AbortReason>,
    parent: Option<AbortSignal>,
}

/// A cancellation token with a reason. Cheap to clone; clones share state.
#[derive(Clone)]
pub struct AbortSignal {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for AbortSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AbortSignal")
            .field("aborted", &self.is_aborted())
            .field("reason", &self.reason())
            .finish()
    }
}

impl Default for AbortSignal {
    fn default() -> Self {
        Self::new()
    }
}

impl AbortSignal {
    pub fn new() -> Self {
        AbortSignal {
            inner: Arc::new(Inner {
                token: CancellationToken::new(),
                reason: OnceLock::new(),
                parent: None,
            }),
        }
    }

    /// A signal that fires with this one, or on its own.
    pub fn child(&self) -> Self {
        AbortSignal {
            inner: Arc::new(Inner {
                token: self.inner.token.child_token(),
                reason: OnceLock::new(),
                parent: Some(self.clone()),
            }),
        }
    }

    /// Fire with a reason. A signal that already fired keeps its first reason.
    pub fn abort(&self, reason: AbortReason) {
        if !self.inner.token.is_cancelled() {
            let _ = self.inner.reason.set(reason);
            self.inner.token.cancel();
        }
    }

    pub fn is_aborted(&self) -> bool {
        self.inner.token.is_cancelled()
    }

    /// The reason, once fired: this signal's own, else the nearest ancestor's.
    pub fn reason(&self) -> Option<AbortReason> {
        if !self.is_aborted() {
            return None;
        }
        if let Some(r) = self.inner.reason.get() {
            return Some(r.clone());
        }
        match &self.inner.parent {
            Some(p) => p.reason().or(Some(AbortReason::Requested)),
            None => Some(AbortReason::Requested),
        }
    }

    /// The reason's text, or the default text if it has not fired.
    pub fn reason_text(&self) -> String {
        self.reason().unwrap_or(AbortReason::Requested).text()
    }

    pub fn token(&self) -> &CancellationToken {
        &self.inner.token
    }

    /// Resolves when the signal fires.
    pub async fn cancelled(&self) {
        self.inner.token.cancelled().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_reports_parent_reason() {
        let parent = AbortSignal::new();
        let child = parent.child();
        assert_eq!(child.reason(), None);
        parent.abort(AbortReason::Message("stop now".into()));
        assert!(child.is_aborted());
        assert_eq!(child.reason_text(), "stop now");
    }

    #[test]
    fn own_reason_wins_and_first_reason_sticks() {
        let parent = AbortSignal::new();
        let child = parent.child();
        child.abort(AbortReason::Deadline);
        parent.abort(AbortReason::Message("later".into()));
        assert_eq!(child.reason(), Some(AbortReason::Deadline));
        child.abort(AbortReason::Requested);
        assert_eq!(child.reason_text(), DEADLINE_TEXT);
        assert!(!AbortSignal::new().is_aborted());
    }

    #[test]
    fn blank_messages_fall_back_to_default_text() {
        assert_eq!(AbortReason::Message("  ".into()).text(), DEFAULT_ABORT_TEXT);
        let scoped = AbortReason::ToolScoped {
            message: "interrupted".into(),
            per_call: [("a".to_string(), "A".to_string())].into(),
            default_label: "other".into(),
        };
        let labels = scoped.tool_labels(["a", "b"].into_iter()).unwrap();
        assert_eq!(labels["a"], "A");
        assert_eq!(labels["b"], "other");
        assert_eq!(scoped.text(), "interrupted");
    }
}
