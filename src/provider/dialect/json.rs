//! `json`: the call *is* the reply. Small local models (Qwen2.5-Coder 0.5B and 1.5B among them)
//! asked to use tools without a template that teaches them tags answer with a bare JSON object,
//! `{"name": "read", "arguments": {…}}`, or with one fenced block holding nothing but such
//! objects. This dialect takes exactly that: a reply whose whole text is one or more calls of
//! offered tools, bare or as the only thing in a single ```` ``` ````/```` ```json ```` fence.
//! Anything else — a word of prose before or after, a fence among other text, a tool pi did not
//! offer, an object that is not a call — leaves the whole reply as text.
//!
//! Because a call can only be known at the reply's end, text that could still become one (it
//! begins with `{` or a fence that may hold JSON) is held back until then; any other reply
//! streams as it comes.

use std::collections::VecDeque;

use futures::StreamExt;
use serde_json::Value;

use super::{Block, Dialect, Parsed};
use crate::agent::protocol::stream::{EventStream, StreamEvent, ToolSpec};
use crate::agent::protocol::types::{AssistantMessage, ContentBlock, StopReason, ToolCall};

pub(crate) struct Json;

impl Dialect for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    fn instructions(&self) -> String {
        "To call a tool, reply with nothing but a JSON object holding the tool's name and its \
         arguments:\n{\"name\": \"read\", \"arguments\": {\"path\": \"src/main.rs\"}}\nFor \
         several calls, write one object per line. A reply with any other text in it is read \
         as your answer, and no tool runs. Results come back in the next message."
            .to_string()
    }

    fn encode_call(&self, name: &str, arguments: &Value) -> String {
        serde_json::json!({"name": name, "arguments": arguments}).to_string()
    }

    fn encode_result(&self, name: &str, output: &str, is_error: bool) -> String {
        if is_error {
            format!("Result of {name} (error):\n{output}")
        } else {
            format!("Result of {name}:\n{output}")
        }
    }

    fn blocks(&self) -> &'static [Block] {
        &[]
    }

    fn result_markers(&self) -> &'static [&'static str] {
        &[]
    }

    fn whole_reply(&self) -> bool {
        true
    }

    fn parse(&self, _block: &Block, _body: &str, _tools: &[ToolSpec]) -> Vec<Parsed> {
        Vec::new()
    }
}

/// The fence languages a block of calls may carry.
const FENCES: &[&str] = &["", "json", "tool_call", "tool_code"];

/// Whether `text`, the reply so far, could still turn out to be nothing but calls.
pub(crate) fn could_be_calls(text: &str) -> bool {
    let t = text.trim_start();
    if t.is_empty() || t.starts_with('{') || t.starts_with('[') || "```".starts_with(t) {
        return true;
    }
    let Some(rest) = t.strip_prefix("```") else {
        return false;
    };
    match rest.split_once('\n') {
        // The fence's language is known: only those that hold JSON can hold calls.
        Some((lang, _)) => FENCES.contains(&lang.trim().to_ascii_lowercase().as_str()),
        None => FENCES
            .iter()
            .any(|f| f.starts_with(&rest.trim().to_ascii_lowercase())),
    }
}

/// The calls `text` is made of, if it is nothing else.
pub(crate) fn calls_in(text: &str, tools: &[ToolSpec]) -> Option<Vec<(String, Value)>> {
    let t = text.trim();
    let body = match t.strip_prefix("```") {
        Some(rest) => {
            let (lang, body) = rest.split_once('\n')?;
            if !FENCES.contains(&lang.trim().to_ascii_lowercase().as_str()) {
                return None;
            }
            let body = body.trim_end().strip_suffix("```")?;
            if body.contains("```") {
                return None;
            }
            body.trim()
        }
        None => t,
    };
    if !(body.starts_with('{') || body.starts_with('[')) {
        return None;
    }
    let mut calls = Vec::new();
    for value in serde_json::Deserializer::from_str(body).into_iter::<Value>() {
        match value.ok()? {
            Value::Array(items) => {
                for item in items {
                    calls.push(call_of(&item, tools)?);
                }
            }
            other => calls.push(call_of(&other, tools)?),
        }
    }
    (!calls.is_empty()).then_some(calls)
}

/// `{"name": <offered tool>, "arguments"|"parameters": {…}}`.
fn call_of(v: &Value, tools: &[ToolSpec]) -> Option<(String, Value)> {
    let name = v.get("name")?.as_str()?.trim();
    let args = v.get("arguments").or_else(|| v.get("parameters"))?;
    // Some models write the arguments as a JSON string.
    let args = match args {
        Value::String(s) => serde_json::from_str(s).ok()?,
        other => other.clone(),
    };
    (tools.iter().any(|t| t.name == name) && args.is_object()).then(|| (name.to_string(), args))
}

/// The reply read as a whole: calls when it is nothing but calls, else the text as it came.
struct WholeReply {
    tools: Vec<ToolSpec>,
    /// Text events kept back while the reply could still be calls.
    held: Vec<StreamEvent>,
    text: String,
    /// The reply showed it is not calls: everything passes.
    passing: bool,
}

impl WholeReply {
    fn event(&mut self, event: StreamEvent) -> Vec<StreamEvent> {
        match event {
            StreamEvent::TextStart { .. }
            | StreamEvent::TextDelta { .. }
            | StreamEvent::TextEnd { .. }
                if !self.passing =>
            {
                if let StreamEvent::TextDelta { delta, .. } = &event {
                    self.text.push_str(delta);
                }
                self.held.push(event);
                if could_be_calls(&self.text) {
                    return Vec::new();
                }
                self.passing = true;
                std::mem::take(&mut self.held)
            }
            StreamEvent::Done { reason, message } => {
                let mut out = std::mem::take(&mut self.held);
                match self.calls(&message) {
                    Some((events, message)) => {
                        out = events;
                        out.push(StreamEvent::Done {
                            reason: StopReason::ToolUse,
                            message: Box::new(message),
                        });
                    }
                    None => out.push(StreamEvent::Done { reason, message }),
                }
                out
            }
            StreamEvent::Error { .. } => {
                let mut out = std::mem::take(&mut self.held);
                out.push(event);
                out
            }
            other => vec![other],
        }
    }

    /// The final message with its text replaced by the calls it is made of, and the events
    /// announcing them; `None` when the reply is an answer.
    fn calls(&self, message: &AssistantMessage) -> Option<(Vec<StreamEvent>, AssistantMessage)> {
        if self.passing || message.has_tool_calls() {
            return None;
        }
        // Text must come last (after any thinking) so the calls can take its place.
        let first_text = message
            .content
            .iter()
            .position(|b| matches!(b, ContentBlock::Text(_)))?;
        if message.content[first_text..]
            .iter()
            .any(|b| !matches!(b, ContentBlock::Text(_)))
        {
            return None;
        }
        let calls = calls_in(&message.text(), &self.tools)?;
        let mut message = message.clone();
        message.content.truncate(first_text);
        message.stop_reason = StopReason::ToolUse;
        let mut events = Vec::new();
        for (name, arguments) in calls {
            let index = message.content.len();
            let call = ToolCall {
                id: super::rewriter::call_id(),
                name,
                arguments,
                intent: None,
                thought_signature: None,
            };
            events.push(StreamEvent::ToolCallStart {
                content_index: index,
                id: call.id.clone(),
                name: call.name.clone(),
            });
            events.push(StreamEvent::ToolCallDelta {
                content_index: index,
                delta: call.arguments.to_string(),
            });
            events.push(StreamEvent::ToolCallEnd {
                content_index: index,
                tool_call: call.clone(),
            });
            message.content.push(ContentBlock::ToolCall(call));
        }
        Some((events, message))
    }
}

/// Wrap a reply so that one made of nothing but calls comes out as those calls.
pub(crate) fn whole_reply_stream(tools: Vec<ToolSpec>, inner: EventStream) -> EventStream {
    let reader = WholeReply {
        tools,
        held: Vec::new(),
        text: String::new(),
        passing: false,
    };
    let st = (Some(inner), reader, VecDeque::new());
    futures::stream::unfold(st, |(mut inner, mut reader, mut queue)| async move {
        loop {
            if let Some(e) = queue.pop_front() {
                return Some((Ok(e), (inner, reader, queue)));
            }
            let stream = inner.as_mut()?;
            match stream.next().await {
                Some(Ok(event)) => queue.extend(reader.event(event)),
                Some(Err(e)) => return Some((Err(e), (None, reader, queue))),
                None => inner = None,
            }
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<ToolSpec> {
        ["read", "edit", "bash"]
            .iter()
            .map(|n| ToolSpec {
                name: (*n).into(),
                description: String::new(),
                parameters: serde_json::json!({"type": "object"}),
            })
            .collect()
    }

    #[test]
    fn replies_made_of_calls_are_calls() {
        let t = tools();
        // Seen from Qwen2.5-Coder 1.5B on llama.cpp: two calls in one fenced block.
        let fenced = "```json\n{\n  \"name\": \"read\",\n  \"arguments\": {\n    \"path\": \"greet.py\"\n  }\n}\n{\n  \"name\": \"bash\",\n  \"arguments\": {\"command\": \"python3 greet.py\"}\n}\n```";
        let calls = calls_in(fenced, &t).unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].0, "read");
        assert_eq!(calls[1].1["command"], "python3 greet.py");
        let bare = r#"{ "name": "read", "arguments": { "path": "a" } }"#;
        assert_eq!(calls_in(bare, &t).unwrap()[0].1["path"], "a");
        let array = r#"[{"name": "read", "arguments": {"path": "a"}}, {"name": "read", "parameters": {"path": "b"}}]"#;
        assert_eq!(calls_in(array, &t).unwrap().len(), 2);
        let stringly = r#"{"name": "bash", "arguments": "{\"command\": \"ls\"}"}"#;
        assert_eq!(calls_in(stringly, &t).unwrap()[0].1["command"], "ls");
    }

    #[test]
    fn anything_else_is_an_answer() {
        let t = tools();
        for text in [
            "Let me read it.\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}",
            "{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\nDone.",
            "Here:\n```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n```",
            "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n```\nThat is the call.",
            "```python\nprint(1)\n```",
            r#"{"name": "browse", "arguments": {"url": "x"}}"#,
            r#"{"name": "read", "arguments": {"path": "a"}} {"version": 2}"#,
            r#"{"name": "read", "arguments": ["a"]}"#,
            "{\"name\": \"read\", \"arguments\": {",
            "",
        ] {
            assert_eq!(calls_in(text, &t), None, "{text}");
        }
    }

    #[test]
    fn only_text_that_may_become_calls_is_held() {
        for held in ["", "  ", "{", "`", "``", "```", "```js", "```json\n{", "[{"] {
            assert!(could_be_calls(held), "{held:?}");
        }
        for passes in ["Sure", "```python\n", "```rust\nfn", "I will {"] {
            assert!(!could_be_calls(passes), "{passes:?}");
        }
    }

    fn text_reply(pieces: &[&str]) -> Vec<StreamEvent> {
        let text: String = pieces.concat();
        let mut done = AssistantMessage::empty("openai-completions", "llamacpp", "local");
        done.content.push(ContentBlock::text(text.as_str()));
        let mut events = vec![
            StreamEvent::Start {
                partial: Box::new(AssistantMessage::empty(
                    "openai-completions",
                    "llamacpp",
                    "local",
                )),
            },
            StreamEvent::TextStart { content_index: 0 },
        ];
        for p in pieces {
            events.push(StreamEvent::TextDelta {
                content_index: 0,
                delta: (*p).into(),
            });
        }
        events.push(StreamEvent::TextEnd {
            content_index: 0,
            content: text,
            signature: None,
        });
        events.push(StreamEvent::Done {
            reason: StopReason::Stop,
            message: Box::new(done),
        });
        events
    }

    async fn through(pieces: &[&str]) -> Vec<StreamEvent> {
        let inner = futures::stream::iter(text_reply(pieces).into_iter().map(Ok)).boxed();
        whole_reply_stream(tools(), inner)
            .map(|e| e.unwrap())
            .collect()
            .await
    }

    #[tokio::test]
    async fn a_reply_of_calls_streams_as_calls_and_an_answer_as_text() {
        let events = through(&[
            "```json\n{\"name\": \"read\", ",
            "\"arguments\": {\"path\": \"a\"}}\n```",
        ])
        .await;
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, StreamEvent::TextDelta { .. })),
            "the call's text is never shown: {events:?}"
        );
        let StreamEvent::Done { reason, message } = events.last().unwrap() else {
            panic!("{events:?}")
        };
        assert_eq!(*reason, StopReason::ToolUse);
        assert_eq!(message.tool_calls().count(), 1);
        assert!(message.text().is_empty());
        assert!(events.iter().any(
            |e| matches!(e, StreamEvent::ToolCallEnd { tool_call, .. } if tool_call.name == "read")
        ));
        // An answer streams as it comes: its first words are passed on before its end.
        let events = through(&["The file ", "says hello."]).await;
        assert!(matches!(events[1], StreamEvent::TextStart { .. }));
        assert!(matches!(events[2], StreamEvent::TextDelta { .. }));
        let StreamEvent::Done { reason, message } = events.last().unwrap() else {
            panic!()
        };
        assert_eq!(*reason, StopReason::Stop);
        assert_eq!(message.text(), "The file says hello.");
        // Held text that turns out to be an answer is all given back.
        let events = through(&["{\"name\": \"read\"", "} is how a call looks."]).await;
        let shown: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(shown, "{\"name\": \"read\"} is how a call looks.");
    }
}
