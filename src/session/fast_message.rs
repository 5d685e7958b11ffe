//! Reading a message straight from the file's bytes, without an intermediate JSON tree.
//!
//! [`AgentMessage`]'s own `Deserialize` first builds a `serde_json::Value` to look at `role`,
//! which doubles the work and the allocations for a 50 MB session. Every writer we know (the
//! Node.js `pi` and this crate) puts `role` first, so [`FastMessage`] reads the first key: if it
//! is `role`, the rest of the object is handed directly to the typed struct of that role. Any
//! other order falls back to the tree-based path, so nothing valid is rejected.

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use crate::agent::types::{
    AgentMessage, AssistantMessage, CustomMessage, DeveloperMessage, Message, ToolResultMessage,
    UserMessage,
};

/// An [`AgentMessage`] read with the fast path when `role` comes first.
pub struct FastMessage(pub AgentMessage);

impl<'de> Deserialize<'de> for FastMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(FastVisitor)
    }
}

struct FastVisitor;

impl<'de> Visitor<'de> for FastVisitor {
    type Value = FastMessage;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FastMessage, A::Error> {
        let Some(first) = map.next_key::<std::borrow::Cow<'de, str>>()? else {
            return Err(de::Error::custom("message has no role"));
        };
        if first != "role" {
            // Slow path: gather the whole object and let AgentMessage decide.
            let mut obj = Map::new();
            obj.insert(first.into_owned(), map.next_value::<Value>()?);
            while let Some((k, v)) = map.next_entry::<String, Value>()? {
                obj.insert(k, v);
            }
            return AgentMessage::deserialize(Value::Object(obj))
                .map(FastMessage)
                .map_err(de::Error::custom);
        }
        let role: std::borrow::Cow<'de, str> = map.next_value()?;
        let rest = MapAccessDeserializer::new(map);
        let message = match role.as_ref() {
            "user" => Message::User(UserMessage::deserialize(rest)?).into(),
            "assistant" => Message::Assistant(AssistantMessage::deserialize(rest)?).into(),
            "toolResult" => Message::ToolResult(ToolResultMessage::deserialize(rest)?).into(),
            "developer" => Message::Developer(DeveloperMessage::deserialize(rest)?).into(),
            "" => return Err(de::Error::custom("message has no role")),
            other => {
                let fields = Map::<String, Value>::deserialize(rest)?;
                AgentMessage::Custom(CustomMessage::new(other, fields))
            }
        };
        Ok(FastMessage(message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn both(v: Value) -> (AgentMessage, AgentMessage) {
        let text = v.to_string();
        let fast = serde_json::from_str::<FastMessage>(&text).unwrap().0;
        let slow = serde_json::from_str::<AgentMessage>(&text).unwrap();
        (fast, slow)
    }

    #[test]
    fn fast_path_agrees_with_agent_message() {
        for v in [
            json!({"role":"user","content":"hi","timestamp":1}),
            json!({"role":"assistant","content":[{"type":"text","text":"x"},{"type":"toolCall","id":"c","name":"read","arguments":{"path":"a"}}],"api":"a","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":2}),
            json!({"role":"toolResult","toolCallId":"c","toolName":"read","content":[{"type":"text","text":"ok"}],"isError":false,"timestamp":3}),
            json!({"role":"bashExecution","command":"ls","output":"a","exitCode":0,"cancelled":false,"truncated":false,"timestamp":4}),
            json!({"content":"role not first","role":"user","timestamp":5}),
        ] {
            let (fast, slow) = both(v);
            assert_eq!(fast, slow);
        }
    }

    #[test]
    fn bad_messages_are_errors() {
        for bad in [
            r#"{}"#,
            r#"{"role":""}"#,
            r#"{"role":"assistant","content":7}"#,
            r#"[1]"#,
        ] {
            assert!(serde_json::from_str::<FastMessage>(bad).is_err(), "{bad}");
        }
    }
}
