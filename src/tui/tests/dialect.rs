//! A tool call a model wrote as text (an in-band dialect) is drawn as a tool cell, never as
//! its raw tags, while it streams and once the reply is complete.

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{app, screen, user_msg};
use crate::agent::protocol::events::AgentEvent;
use crate::agent::protocol::stream::{
    LlmContext, Model, Provider, ProviderRequest, StreamEvent, StreamOptions, ToolSpec,
};
use crate::agent::protocol::types::{AgentMessage, Message};
use crate::agent::scripted::{ScriptedProvider, reply};
use crate::provider::catalog::Catalog;
use crate::provider::dialect::{DialectProvider, DialectSettings, Setting};
use crate::tui::cells::Cell;

#[tokio::test]
async fn a_dialect_tool_call_is_drawn_as_a_tool_cell() {
    let scripted = ScriptedProvider::new([reply::full(
        &[
            "I will read it. <tool",
            "_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"notes.txt\"}}\n</tool_",
            "call>",
        ],
        &[],
    )]);
    let settings = DialectSettings {
        forced: Some(Setting::On("hermes".into())),
        ..Default::default()
    };
    let provider = DialectProvider::new(Arc::new(scripted), Arc::new(Catalog::default()), settings);
    let request = ProviderRequest {
        model: Model::new("ollama", "openai-completions", "qwen3:8b"),
        context: LlmContext {
            system_prompt: vec!["You are pi.".into()],
            messages: Arc::new(vec![]),
            tools: vec![ToolSpec {
                name: "read".into(),
                description: "Read a file.".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            }],
        },
        options: StreamOptions::default(),
    };
    let events: Vec<StreamEvent> = provider
        .stream(request, CancellationToken::new())
        .map(|e| e.expect("no out-of-band failure"))
        .collect()
        .await;

    let (mut app, _port) = app();
    app.handle_agent_event(AgentEvent::AgentStart);
    app.handle_agent_event(AgentEvent::MessageStart {
        message: user_msg("what does notes.txt say?"),
    });
    let mut last = None;
    for e in events {
        match e {
            StreamEvent::Start { partial } => {
                app.handle_agent_event(AgentEvent::MessageStart {
                    message: AgentMessage::from(Message::Assistant(*partial)),
                });
            }
            StreamEvent::Done { message, .. } => last = Some(*message),
            other => {
                app.handle_agent_event(AgentEvent::MessageUpdate {
                    assistant_message_event: other,
                });
                let s = screen(&mut app, 80, 20, Instant::now());
                assert!(!s.contains("<tool"), "no raw tag while streaming:\n{s}");
            }
        }
    }
    let message = last.expect("the reply finished");
    let call = message
        .tool_calls()
        .next()
        .cloned()
        .expect("a canonical call");
    app.handle_agent_event(AgentEvent::MessageEnd {
        message: AgentMessage::from(Message::Assistant(message)),
    });
    // What the loop sends as it runs the call.
    app.handle_agent_event(AgentEvent::ToolExecutionStart {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        args: Arc::new(call.arguments.clone()),
        intent: None,
    });
    let s = screen(&mut app, 80, 20, Instant::now());
    assert!(s.contains("I will read it."), "{s}");
    assert!(s.contains("notes.txt"), "{s}");
    assert!(!s.contains("tool_call"), "{s}");
    assert!(
        app.transcript
            .cells()
            .any(|c| matches!(c, Cell::Tool(t) if t.name == "read" && t.id == call.id)),
        "a tool cell for read"
    );
}
