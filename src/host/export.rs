//! `/export`: the conversation as a markdown document.

use crate::agent::protocol::types::{AgentMessage, Message};

/// The conversation as markdown: user and assistant turns as sections, tool calls and their
/// results in between.
pub fn markdown(messages: &[AgentMessage]) -> String {
    let mut out = String::from("# pi session\n\n");
    for m in messages {
        match m.as_llm() {
            Some(Message::User(u)) => {
                out.push_str(&format!("## User\n\n{}\n\n", u.content.joined_text()));
            }
            Some(Message::Assistant(a)) => {
                let text = a.text();
                if !text.trim().is_empty() {
                    out.push_str(&format!("## Assistant\n\n{text}\n\n"));
                }
                for call in a.tool_calls() {
                    out.push_str(&format!(
                        "**Tool call** `{}`: `{}`\n\n",
                        call.name, call.arguments
                    ));
                }
            }
            Some(Message::ToolResult(r)) => {
                out.push_str(&format!(
                    "**Result of `{}`{}**\n\n```\n{}\n```\n\n",
                    r.tool_name,
                    if r.is_error { " (error)" } else { "" },
                    r.text()
                ));
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::types::{AssistantMessage, ContentBlock, ToolCall};
    use serde_json::json;

    #[test]
    fn turns_calls_and_results_become_sections() {
        let mut a = AssistantMessage::empty("api", "p", "m");
        a.content.push(ContentBlock::text("Looking."));
        a.content.push(ContentBlock::ToolCall(ToolCall {
            id: "c1".into(),
            name: "ls".into(),
            arguments: json!({"path": "."}),
            intent: None,
            thought_signature: None,
        }));
        let result = crate::agent::protocol::types::ToolResultMessage {
            tool_call_id: "c1".into(),
            tool_name: "ls".into(),
            content: vec![ContentBlock::text("a.rs")],
            details: None,
            is_error: false,
            useless: false,
            timestamp: 0,
        };
        let md = markdown(&[AgentMessage::user("what is here?"), a.into(), result.into()]);
        assert!(md.starts_with("# pi session\n\n## User\n\nwhat is here?"));
        assert!(md.contains("## Assistant\n\nLooking."));
        assert!(md.contains("**Tool call** `ls`: `{\"path\":\".\"}`"));
        assert!(md.contains("**Result of `ls`**\n\n```\na.rs\n```"));
    }
}
