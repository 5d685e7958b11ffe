//! What the loop, the session file and the configuration share about compaction: the settings,
//! and the user message that stands in for condensed turns (written by the loop, read back from
//! a session file). The rules of when and where to compact are `policy::compaction`'s.

use crate::agent::protocol::types::{AgentMessage, Message, UserContent, UserMessage};

/// Opening words of the user message that stands in for the condensed turns (the session
/// format's `compactionSummary` as the model sees it).
pub const SUMMARY_PREAMBLE: &str = "Earlier turns of this conversation were condensed to save \
space. This summary of them stands in for the original messages:";

/// `[compaction]` settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompactionSettings {
    pub enabled: bool,
    /// Room kept free for the reply: compaction starts above `window − reserve_tokens`.
    pub reserve_tokens: u64,
    /// About how many tokens of the newest messages stay as they are.
    pub keep_recent_tokens: u64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            enabled: true,
            reserve_tokens: 16_384,
            keep_recent_tokens: 20_000,
        }
    }
}

/// The summary carried by a stand-in message, if `m` is one.
pub fn summary_of(m: &AgentMessage) -> Option<&str> {
    let Some(Message::User(u)) = m.as_llm() else {
        return None;
    };
    let UserContent::Text(text) = &u.content else {
        return None;
    };
    let rest = text.strip_prefix(SUMMARY_PREAMBLE)?.trim();
    Some(
        rest.strip_prefix("<summary>")
            .and_then(|r| r.strip_suffix("</summary>"))
            .unwrap_or(rest)
            .trim(),
    )
}

/// The user message that stands in for condensed turns.
pub fn summary_message(summary: &str, timestamp: i64) -> AgentMessage {
    AgentMessage::from(UserMessage {
        content: UserContent::Text(format!(
            "{SUMMARY_PREAMBLE}\n\n<summary>\n{summary}\n</summary>"
        )),
        synthetic: true,
        steering: false,
        attribution: None,
        timestamp,
    })
}
