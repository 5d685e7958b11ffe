//! The repeated-call guard: stops a run whose model is stuck in a loop, asking for the very
//! same tool calls turn after turn and getting the very same answers.
//!
//! Repeating a call is not enough: polling a status (the same `bash` command, the same `read`)
//! is legitimate as long as what comes back changes. A turn counts as a repeat only when its
//! calls (names and arguments, in order) and their results (content and error flag) both equal
//! the previous turn's. Once `limit` repeats have happened in a row, the next identical request
//! is refused before it runs.

use serde_json::Value;

use crate::agent::protocol::types::{AgentMessage, ContentBlock, ToolCall};

/// One tool turn as the guard compares it.
#[derive(PartialEq)]
struct ToolTurn {
    calls: Vec<(String, Value)>,
    results: Vec<Option<(Vec<ContentBlock>, bool)>>,
}

/// Counts tool turns that repeat the previous one exactly.
pub struct RepetitionGuard {
    limit: Option<u32>,
    last: Option<ToolTurn>,
    repeats: u32,
}

impl RepetitionGuard {
    /// `limit`: repeats allowed in a row (`None` or 0: the guard is off).
    pub fn new(limit: Option<u32>) -> Self {
        RepetitionGuard {
            limit: limit.filter(|n| *n > 0),
            last: None,
            repeats: 0,
        }
    }

    /// Before a reply's calls run: `Err` (the reason) when they are the previous turn's calls
    /// again and the same calls already got the same answers `limit` times in a row.
    pub fn check(&self, calls: &[&ToolCall]) -> Result<(), String> {
        let (Some(limit), Some(last)) = (self.limit, &self.last) else {
            return Ok(());
        };
        if calls.is_empty() || !same_calls(&last.calls, calls) {
            return Ok(());
        }
        if self.repeats + 1 >= limit {
            return Err(format!(
                "Stopped: the model sent the same tool call {} turns in a row and got the same \
                 result each time, without making progress",
                self.repeats + 2
            ));
        }
        Ok(())
    }

    /// After a turn: its calls and their results (found by call id, in call order).
    pub fn record(&mut self, calls: &[&ToolCall], results: &[AgentMessage]) {
        if self.limit.is_none() {
            return;
        }
        if calls.is_empty() {
            self.last = None;
            self.repeats = 0;
            return;
        }
        let turn = ToolTurn {
            calls: calls
                .iter()
                .map(|c| (c.name.clone(), c.arguments.clone()))
                .collect(),
            results: calls
                .iter()
                .map(|c| {
                    results
                        .iter()
                        .filter_map(AgentMessage::as_tool_result)
                        .find(|r| r.tool_call_id == c.id)
                        .map(|r| (r.content.clone(), r.is_error))
                })
                .collect(),
        };
        if self.last.as_ref() == Some(&turn) {
            self.repeats += 1;
        } else {
            self.repeats = 0;
            self.last = Some(turn);
        }
    }
}

fn same_calls(last: &[(String, Value)], calls: &[&ToolCall]) -> bool {
    last.len() == calls.len()
        && last
            .iter()
            .zip(calls)
            .all(|((name, args), c)| *name == c.name && *args == c.arguments)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::types::ToolResultMessage;
    use serde_json::json;

    fn call() -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: "bash".into(),
            arguments: json!({"command": "status"}),
            intent: None,
            thought_signature: None,
        }
    }

    fn result(text: &str) -> AgentMessage {
        ToolResultMessage {
            tool_call_id: "c".into(),
            tool_name: "bash".into(),
            content: vec![ContentBlock::text(text)],
            details: None,
            is_error: false,
            useless: false,
            timestamp: 0,
        }
        .into()
    }

    #[test]
    fn same_calls_with_the_same_answers_stop_changing_answers_do_not() {
        let c = call();
        let mut g = RepetitionGuard::new(Some(2));
        g.record(&[&c], &[result("running")]);
        assert!(g.check(&[&c]).is_ok());
        g.record(&[&c], &[result("running")]);
        let why = g.check(&[&c]).unwrap_err();
        assert!(why.contains("3 turns"), "{why}");

        let mut g = RepetitionGuard::new(Some(2));
        for i in 0..10 {
            assert!(g.check(&[&c]).is_ok());
            g.record(&[&c], &[result(&format!("{i}% done"))]);
        }

        let mut g = RepetitionGuard::new(Some(0));
        for _ in 0..10 {
            assert!(g.check(&[&c]).is_ok());
            g.record(&[&c], &[result("same")]);
        }
    }
}
