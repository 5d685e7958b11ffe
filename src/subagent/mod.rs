//! Subagents: the `task` tool ([`tool`]) runs a child agent on a job the model hands it, with
//! a definition ([`definitions`]) saying which tools, model and system prompt it gets.
//!
//! This is composition-level code: it builds agents from the parent's settings, as the
//! composition root builds the parent, and the loop knows nothing of it.

pub mod definitions;
pub mod tool;

use std::path::PathBuf;
use std::sync::Mutex;

use serde_json::Value;

use crate::agent::protocol::types::Usage;

/// The session file the parent writes now (the host keeps it current), which a subagent's
/// session names as its parent and sits beside.
#[derive(Debug, Default)]
pub struct SessionSlot(pub(crate) Mutex<Option<PathBuf>>);

impl SessionSlot {
    pub fn set(&self, path: Option<PathBuf>) {
        *crate::sync::lock(&self.0) = path;
    }
}

/// What a subagent spent, from its `task` result's details (`None` for other results).
pub fn usage_of(details: &Value) -> Option<Usage> {
    serde_json::from_value(details.get("subagent")?.get("usage")?.clone()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::types::UsageTotals;

    #[test]
    fn a_subagents_spending_counts_but_not_toward_the_context() {
        let details = serde_json::json!({"subagent": {"id": "t1", "usage": {
            "input": 1000, "output": 200, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1200,
            "cost": {"input": 0.01, "output": 0.02, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.03}
        }}});
        let u = usage_of(&details).unwrap();
        let mut totals = UsageTotals {
            context: 5000,
            ..Default::default()
        };
        totals.add_spent(&u);
        assert_eq!(
            (totals.input, totals.output, totals.context),
            (1000, 200, 5000)
        );
        assert!((totals.cost - 0.03).abs() < 1e-9);
        assert!(usage_of(&serde_json::json!({"diff": "x"})).is_none());
    }
}
