//! `todo`: the model's task list for the job at hand. Each call sends the whole list (items
//! with a status: pending, in_progress or done); the result repeats it for the model, and its
//! `details.todos` carry it to the front ends (shown above the editor), the JSON and RPC
//! streams and the session file (so a resumed session shows it again).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::info::{ToolInfo, tool_info_accessors};
use crate::agent::protocol::tool::{AgentTool, Concurrency, ToolError, ToolInvocation, ToolOutput};

/// The most items a list may hold.
const MAX_ITEMS: usize = 50;

/// Where an item stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    InProgress,
    #[serde(alias = "completed")]
    Done,
}

/// One item.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    pub content: String,
    pub status: Status,
}

/// The list a `todo` result carries in its details (`None` for other results).
pub fn list_of(details: &Value) -> Option<Vec<Item>> {
    serde_json::from_value(details.get("todos")?.clone()).ok()
}

pub(crate) struct TodoTool {
    info: ToolInfo,
}

impl TodoTool {
    pub(crate) fn new() -> Self {
        TodoTool {
            info: ToolInfo::new(
                "todo",
                "Keep a short task list for multi-step work, shown to the person as you go. \
                 Send the whole list each time: every item with its status (pending, \
                 in_progress, done). Keep one item in_progress at a time, and mark items done \
                 as soon as they are.",
                json!({
                    "type": "object",
                    "properties": {
                        "todos": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "content": {"type": "string", "description": "The task, briefly"},
                                    "status": {"type": "string", "enum": ["pending", "in_progress", "done"]}
                                },
                                "required": ["content", "status"]
                            }
                        }
                    },
                    "required": ["todos"]
                }),
            ),
        }
    }
}

fn mark(s: Status) -> &'static str {
    match s {
        Status::Pending => "[ ]",
        Status::InProgress => "[>]",
        Status::Done => "[x]",
    }
}

#[async_trait]
impl AgentTool for TodoTool {
    tool_info_accessors!();

    // The list is one thing: two calls in a batch must not race to set it.
    fn concurrency(&self, _args: &Value) -> Result<Concurrency, String> {
        Ok(Concurrency::Exclusive)
    }

    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let raw = call
            .args
            .get("todos")
            .cloned()
            .ok_or_else(|| ToolError::new("`todos` is required: the whole list"))?;
        let items: Vec<Item> = serde_json::from_value(raw).map_err(|e| {
            ToolError::new(format!(
                "`todos` must be a list of {{content, status}} with status pending, \
                 in_progress or done ({e})"
            ))
        })?;
        if items.len() > MAX_ITEMS {
            return Err(ToolError::new(format!(
                "a list of {} items is too long to follow; keep it to {MAX_ITEMS}",
                items.len()
            )));
        }
        let items: Vec<Item> = items
            .into_iter()
            .map(|i| Item {
                content: i.content.trim().to_string(),
                status: i.status,
            })
            .filter(|i| !i.content.is_empty())
            .collect();
        let done = items.iter().filter(|i| i.status == Status::Done).count();
        let mut text = format!("Task list ({done} of {} done):\n", items.len());
        for i in &items {
            text.push_str(&format!("{} {}\n", mark(i.status), i.content));
        }
        Ok(ToolOutput::text(text.trim_end()).with_details(json!({ "todos": items })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::tool::{ProgressSink, ToolCallContext};
    use tokio_util::sync::CancellationToken;

    async fn call(args: Value) -> Result<ToolOutput, ToolError> {
        TodoTool::new()
            .execute(ToolInvocation {
                tool_call_id: "t".into(),
                args,
                cancel: CancellationToken::new(),
                steering: CancellationToken::new(),
                progress: ProgressSink::discard(),
                context: ToolCallContext {
                    batch_id: "b".into(),
                    index: 0,
                    total: 1,
                    tool_calls: std::sync::Arc::from(Vec::new()),
                },
            })
            .await
    }

    #[tokio::test]
    async fn the_list_comes_back_for_the_model_and_in_the_details() {
        let out = call(json!({"todos": [
            {"content": "Read the parser", "status": "completed"},
            {"content": "Fix the bug", "status": "in_progress"},
            {"content": "  ", "status": "pending"},
            {"content": "Run the tests", "status": "pending"}
        ]}))
        .await
        .unwrap();
        let text = out.content[0].clone();
        let crate::agent::protocol::types::ContentBlock::Text(t) = text else {
            panic!()
        };
        assert_eq!(
            t.text,
            "Task list (1 of 3 done):\n[x] Read the parser\n[>] Fix the bug\n[ ] Run the tests"
        );
        let items = list_of(&out.details).unwrap();
        assert_eq!(items.len(), 3);
        assert_eq!(items[1].status, Status::InProgress);
        assert!(
            call(json!({"todos": [{"content": "x", "status": "maybe"}]}))
                .await
                .is_err()
        );
        assert!(call(json!({})).await.is_err());
    }
}
