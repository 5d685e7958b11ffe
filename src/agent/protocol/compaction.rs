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
    /// Neither figure was set: both shrink with a small window (see [`Self::for_window`]).
    pub scale_with_window: bool,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            enabled: true,
            reserve_tokens: 16_384,
            keep_recent_tokens: 20_000,
            scale_with_window: true,
        }
    }
}

impl CompactionSettings {
    /// The figures for a model with a `window`-token context (0: unknown, unchanged).
    ///
    /// The defaults suit windows of 64k and more. Below that they would leave nothing to
    /// compact (keeping 20,000 tokens of a 16k window) or compact at once (reserving 16,384 of
    /// it), so unless they were set they shrink: a quarter of the window stays free for the
    /// reply and the next tool result, and a third of it is kept as it is. After a compaction
    /// the kept third and the summary take well under the three quarters that start the next
    /// one, so an 8k window still runs several turns between compactions.
    pub fn for_window(self, window: u64) -> Self {
        if !self.scale_with_window || window == 0 {
            return self;
        }
        CompactionSettings {
            reserve_tokens: self.reserve_tokens.min(window / 4),
            keep_recent_tokens: self.keep_recent_tokens.min(window / 3),
            ..self
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_figures_shrink_with_a_small_window_and_set_ones_stay() {
        let d = CompactionSettings::default();
        let at = |w| {
            let s = d.for_window(w);
            (s.reserve_tokens, s.keep_recent_tokens)
        };
        assert_eq!(at(8_192), (2_048, 2_730));
        assert_eq!(at(32_768), (8_192, 10_922));
        assert_eq!(at(200_000), (16_384, 20_000));
        assert_eq!(at(0), (16_384, 20_000));
        let set = CompactionSettings {
            scale_with_window: false,
            ..d
        };
        assert_eq!(set.for_window(8_192), set);
    }
}
