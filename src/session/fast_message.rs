//! Reading messages straight from the file's bytes, without buffering them first.
//!
//! The agent's message types are tagged unions (`role`, and `type` for content blocks), and
//! serde's derived code for those first copies the whole object into a temporary tree to find
//! the tag — for a session of 50 MB that doubles the copying and the allocations. Every writer
//! we know (the Node.js `pi` and this crate) puts the tag first, so here the first key is read:
//! if it is the tag, the rest of the object goes straight into the typed struct. Any other
//! order falls back to the agent's own tree-based decoding, so nothing valid is rejected.
//!
//! The `Wire*` structs mirror the agent's message structs field for field (same names, same
//! defaults) with their content fields decoded by the fast path. They are built with struct
//! literals, so a field added to a message type breaks the build here until it is mirrored;
//! the tests compare both decoders on fully populated messages.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::agent::protocol::types::{
    AgentMessage, AssistantMessage, Attribution, ContentBlock, CustomMessage, DeveloperMessage,
    ImageContent, LiteralLen, Message, RedactedThinkingContent, StopDetails, StopReason,
    TextContent, ThinkingContent, ToolCall, ToolResultMessage, Usage, UserContent, UserMessage,
    empty_object,
};
use crate::json_text;

/// A short string (a tag, a key) borrowed from the line when it holds no escapes. Owned tags
/// were allocated and freed for every message and block, and glibc tidied those small frees
/// away again before each long text that followed.
pub(crate) struct Tag<'de>(pub Cow<'de, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Tag<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Tag<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Tag<'de>, E> {
                Ok(Tag(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Tag<'de>, E> {
                Ok(Tag(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Tag<'de>, E> {
                Ok(Tag(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// An [`AgentMessage`] read with the fast path when `role` comes first.
pub(crate) struct FastMessage(pub AgentMessage);

/// Gather an object whose tag was not first, and decode it with `T`'s own (buffering) code.
fn slow_path<'de, A: MapAccess<'de>, T: for<'a> Deserialize<'a>>(
    first: String,
    mut map: A,
) -> Result<T, A::Error> {
    let mut obj = Map::new();
    obj.insert(first, map.next_value::<Value>()?);
    while let Some((k, v)) = map.next_entry::<String, Value>()? {
        obj.insert(k, v);
    }
    T::deserialize(Value::Object(obj)).map_err(de::Error::custom)
}

impl<'de> Deserialize<'de> for FastMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(MessageVisitor)
    }
}

struct MessageVisitor;

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = FastMessage;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FastMessage, A::Error> {
        let Some(Tag(first)) = map.next_key::<Tag>()? else {
            return Err(de::Error::custom("message has no role"));
        };
        if first != "role" {
            return slow_path::<A, AgentMessage>(first.into_owned(), map).map(FastMessage);
        }
        let Tag(role) = map.next_value()?;
        let rest = MapAccessDeserializer::new(map);
        let message = match &*role {
            "user" => Message::User(WireUser::deserialize(rest)?.into()).into(),
            "assistant" => Message::Assistant(WireAssistant::deserialize(rest)?.into()).into(),
            "toolResult" => Message::ToolResult(WireToolResult::deserialize(rest)?.into()).into(),
            "developer" => Message::Developer(DeveloperMessage::deserialize(rest)?).into(),
            "" => return Err(de::Error::custom("message has no role")),
            _ => {
                let fields = Map::<String, Value>::deserialize(rest)?;
                AgentMessage::from(CustomMessage::new(role.into_owned(), fields))
            }
        };
        Ok(FastMessage(message))
    }
}

/// One content block, read with the fast path when `type` comes first.
struct FastBlock(ContentBlock);

impl<'de> Deserialize<'de> for FastBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(BlockVisitor)
    }
}

struct BlockVisitor;

impl<'de> Visitor<'de> for BlockVisitor {
    type Value = FastBlock;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a content block")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FastBlock, A::Error> {
        let Some(Tag(first)) = map.next_key::<Tag>()? else {
            return Err(de::Error::custom("content block has no type"));
        };
        if first != "type" {
            return slow_path::<A, ContentBlock>(first.into_owned(), map).map(FastBlock);
        }
        let Tag(kind) = map.next_value()?;
        let rest = MapAccessDeserializer::new(map);
        Ok(FastBlock(match &*kind {
            "text" => ContentBlock::Text(WireText::deserialize(rest)?.into()),
            "thinking" => ContentBlock::Thinking(WireThinking::deserialize(rest)?.into()),
            "redactedThinking" => {
                ContentBlock::RedactedThinking(RedactedThinkingContent::deserialize(rest)?)
            }
            "image" => ContentBlock::Image(ImageContent::deserialize(rest)?),
            "toolCall" => ContentBlock::ToolCall(WireToolCall::deserialize(rest)?.into()),
            other => {
                return Err(de::Error::unknown_variant(
                    other,
                    &["text", "thinking", "redactedThinking", "image", "toolCall"],
                ));
            }
        }))
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireToolCall {
    id: String,
    name: String,
    #[serde(default = "empty_object", deserialize_with = "sized_value")]
    arguments: Value,
    #[serde(default)]
    intent: Option<String>,
    #[serde(default)]
    thought_signature: Option<String>,
}

impl From<WireToolCall> for ToolCall {
    fn from(w: WireToolCall) -> Self {
        ToolCall {
            id: w.id,
            name: w.name,
            arguments: w.arguments,
            intent: w.intent,
            thought_signature: w.thought_signature,
        }
    }
}

fn sized_value<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
    SizedValue::deserialize(d).map(|v| v.0)
}

/// A JSON value whose objects are allocated for the members they hold. Built up one member at
/// a time, a small object took room for four (a tool call's arguments were ~600 bytes each).
struct SizedValue(Value);

impl<'de> Deserialize<'de> for SizedValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SizedVisitor)
    }
}

struct SizedVisitor;

impl<'de> Visitor<'de> for SizedVisitor {
    type Value = SizedValue;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<SizedValue, E> {
        Ok(SizedValue(Value::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<SizedValue, E> {
        Ok(SizedValue(Value::from(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<SizedValue, E> {
        Ok(SizedValue(Value::from(v)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<SizedValue, E> {
        Ok(SizedValue(Value::from(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<SizedValue, E> {
        Ok(SizedValue(Value::String(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<SizedValue, E> {
        Ok(SizedValue(Value::String(v)))
    }

    fn visit_unit<E>(self) -> Result<SizedValue, E> {
        Ok(SizedValue(Value::Null))
    }

    fn visit_none<E>(self) -> Result<SizedValue, E> {
        Ok(SizedValue(Value::Null))
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<SizedValue, D::Error> {
        SizedValue::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<SizedValue, A::Error> {
        let mut items = Vec::new();
        while let Some(SizedValue(v)) = seq.next_element()? {
            items.push(v);
        }
        items.shrink_to_fit();
        Ok(SizedValue(Value::Array(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SizedValue, A::Error> {
        let mut members: Vec<(String, Value)> = Vec::new();
        while let Some((k, SizedValue(v))) = map.next_entry::<String, SizedValue>()? {
            members.push((k, v));
        }
        let mut object = Map::with_capacity(members.len());
        // A repeated key keeps its first place and its last value, as serde_json's own map.
        object.extend(members);
        Ok(SizedValue(Value::Object(object)))
    }
}

/// A long string field (a text block's text, a reasoning block's thinking): its literal is
/// borrowed from the line and unescaped once into a string of its size (`json_text`), not
/// gathered in serde_json's scratch buffer and copied out. Sessions are read from text, which
/// this needs (a JSON value cannot lend a literal).
fn long_text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    measured_text(d).map(|(text, _)| text)
}

/// [`long_text`], with a note of the literal's length when it is exactly what is written for
/// the text again (a request body is measured before it is sent; see [`LiteralLen`]).
fn measured_text<'de, D: Deserializer<'de>>(d: D) -> Result<(String, LiteralLen), D::Error> {
    let raw = <&'de RawValue>::deserialize(d)?;
    match json_text::unescape_literal(raw.get()) {
        Some(u) => {
            let len = if u.as_written {
                LiteralLen::new(&u.text, raw.get().len() as u64)
            } else {
                LiteralLen::default()
            };
            Ok((u.text, len))
        }
        // `\u` escapes, or not a string at all: the parser decodes it (or says why not).
        None => serde_json::from_str(raw.get())
            .map(|text| (text, LiteralLen::default()))
            .map_err(de::Error::custom),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireText {
    #[serde(deserialize_with = "measured_text")]
    text: (String, LiteralLen),
    #[serde(default)]
    text_signature: Option<String>,
}

impl From<WireText> for TextContent {
    fn from(w: WireText) -> Self {
        let (text, literal_len) = w.text;
        TextContent {
            text,
            text_signature: w.text_signature,
            literal_len,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireThinking {
    #[serde(deserialize_with = "long_text")]
    thinking: String,
    #[serde(default)]
    thinking_signature: Option<String>,
    #[serde(default)]
    item_id: Option<String>,
}

impl From<WireThinking> for ThinkingContent {
    fn from(w: WireThinking) -> Self {
        ThinkingContent {
            thinking: w.thinking,
            thinking_signature: w.thinking_signature,
            item_id: w.item_id,
        }
    }
}

/// A list of content blocks, allocated for what it holds: most messages have one or two
/// blocks, and serde's own `Vec` starts at room for four (a resumed 20,000-message session
/// held 9 MB of empty room).
fn blocks<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ContentBlock>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<ContentBlock>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of content blocks")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let Some(FastBlock(first)) = seq.next_element()? else {
                return Ok(Vec::new());
            };
            let Some(FastBlock(second)) = seq.next_element()? else {
                return Ok(vec![first]);
            };
            let mut out = Vec::with_capacity(2);
            out.push(first);
            out.push(second);
            while let Some(FastBlock(b)) = seq.next_element()? {
                out.push(b);
            }
            // A third block doubled the room to four; give back what is left over.
            out.shrink_to_fit();
            Ok(out)
        }
    }
    d.deserialize_seq(V)
}

/// A user content: a string, or a list of blocks.
struct FastUserContent(UserContent);

impl<'de> Deserialize<'de> for FastUserContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FastUserContent;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or a list of content blocks")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(FastUserContent(UserContent::Text(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(FastUserContent(UserContent::Text(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(1));
                while let Some(FastBlock(b)) = seq.next_element()? {
                    out.push(b);
                }
                Ok(FastUserContent(UserContent::Blocks(out)))
            }
        }
        d.deserialize_any(V)
    }
}

fn user_content<'de, D: Deserializer<'de>>(d: D) -> Result<UserContent, D::Error> {
    FastUserContent::deserialize(d).map(|c| c.0)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireUser {
    #[serde(deserialize_with = "user_content")]
    content: UserContent,
    #[serde(default)]
    synthetic: bool,
    #[serde(default)]
    steering: bool,
    #[serde(default)]
    attribution: Option<Attribution>,
    #[serde(default)]
    timestamp: i64,
}

impl From<WireUser> for UserMessage {
    fn from(w: WireUser) -> Self {
        UserMessage {
            content: w.content,
            synthetic: w.synthetic,
            steering: w.steering,
            attribution: w.attribution,
            timestamp: w.timestamp,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireAssistant {
    #[serde(deserialize_with = "blocks")]
    content: Vec<ContentBlock>,
    #[serde(default)]
    api: String,
    #[serde(default)]
    provider: String,
    #[serde(default)]
    model: String,
    #[serde(default)]
    response_id: Option<String>,
    #[serde(default)]
    usage: Usage,
    #[serde(default)]
    stop_reason: StopReason,
    #[serde(default)]
    stop_details: Option<StopDetails>,
    #[serde(default)]
    error_message: Option<String>,
    #[serde(default)]
    error_status: Option<u16>,
    #[serde(default)]
    error_id: Option<u32>,
    #[serde(default)]
    tool_call_abort_messages: Option<BTreeMap<String, String>>,
    #[serde(default)]
    timestamp: i64,
    #[serde(default)]
    duration: Option<u64>,
    #[serde(default)]
    ttft: Option<u64>,
}

impl From<WireAssistant> for AssistantMessage {
    fn from(w: WireAssistant) -> Self {
        AssistantMessage {
            content: w.content,
            api: w.api,
            provider: w.provider,
            model: w.model,
            response_id: w.response_id,
            usage: w.usage,
            stop_reason: w.stop_reason,
            stop_details: w.stop_details,
            error_message: w.error_message,
            error_status: w.error_status,
            error_id: w.error_id,
            tool_call_abort_messages: w.tool_call_abort_messages,
            timestamp: w.timestamp,
            duration: w.duration,
            ttft: w.ttft,
            transient: None,
            stream_broken: false,
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireToolResult {
    tool_call_id: String,
    tool_name: String,
    #[serde(deserialize_with = "blocks")]
    content: Vec<ContentBlock>,
    #[serde(default)]
    details: Option<Value>,
    #[serde(default)]
    is_error: bool,
    #[serde(default)]
    useless: bool,
    #[serde(default)]
    timestamp: i64,
}

impl From<WireToolResult> for ToolResultMessage {
    fn from(w: WireToolResult) -> Self {
        ToolResultMessage {
            tool_call_id: w.tool_call_id,
            tool_name: w.tool_name,
            content: w.content,
            details: w.details,
            is_error: w.is_error,
            useless: w.useless,
            timestamp: w.timestamp,
        }
    }
}

/// User content read with the fast path (for `custom_message` entries).
pub(crate) fn read_user_content<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<UserContent>, D::Error> {
    user_content(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::types::{Cost, StopDetails};
    use serde_json::json;

    fn both(v: &Value) -> (AgentMessage, AgentMessage) {
        let text = v.to_string();
        let fast = serde_json::from_str::<FastMessage>(&text).unwrap().0;
        let slow = serde_json::from_str::<AgentMessage>(&text).unwrap();
        (fast, slow)
    }

    /// Messages with every field set, written as struct literals so a new field must be
    /// added here (and to the mirrors above) before this compiles.
    fn full_messages() -> Vec<AgentMessage> {
        let blocks = vec![
            ContentBlock::Text(TextContent {
                text: "t \"q\"\n".into(),
                text_signature: Some("ts".into()),
                ..Default::default()
            }),
            ContentBlock::Thinking(ThinkingContent {
                thinking: "th".into(),
                thinking_signature: Some("sig".into()),
                item_id: Some("it".into()),
            }),
            ContentBlock::RedactedThinking(RedactedThinkingContent { data: "d".into() }),
            ContentBlock::Image(ImageContent {
                data: "AA==".into(),
                mime_type: "image/png".into(),
                detail: Some("high".into()),
            }),
            ContentBlock::ToolCall(ToolCall {
                id: "c".into(),
                name: "n".into(),
                arguments: json!({"a": [1, {"b": null}]}),
                intent: Some("why".into()),
                thought_signature: Some("ths".into()),
            }),
        ];
        vec![
            Message::User(UserMessage {
                content: UserContent::Blocks(blocks[..1].to_vec()),
                synthetic: true,
                steering: true,
                attribution: Some(Attribution::Agent),
                timestamp: 7,
            })
            .into(),
            Message::Assistant(AssistantMessage {
                content: blocks.clone(),
                api: "a".into(),
                provider: "p".into(),
                model: "m".into(),
                response_id: Some("r".into()),
                usage: Usage {
                    input: 1,
                    output: 2,
                    cache_read: 3,
                    cache_write: 4,
                    total_tokens: 10,
                    reasoning_tokens: Some(1),
                    cost: Cost {
                        input: 0.5,
                        output: 0.25,
                        cache_read: 0.125,
                        cache_write: 1.0,
                        total: 1.875,
                    },
                },
                stop_reason: StopReason::Length,
                stop_details: Some(StopDetails {
                    kind: "refusal".into(),
                    category: Some("c".into()),
                    explanation: Some("e".into()),
                }),
                error_message: Some("boom".into()),
                error_status: Some(529),
                error_id: Some(16),
                tool_call_abort_messages: Some([("c".to_string(), "x".to_string())].into()),
                timestamp: 8,
                duration: Some(9),
                ttft: Some(10),
                transient: None,
                stream_broken: false,
            })
            .into(),
            Message::ToolResult(ToolResultMessage {
                tool_call_id: "c".into(),
                tool_name: "n".into(),
                content: blocks[..1].to_vec(),
                details: Some(json!({"diff": "-a\n+b"})),
                is_error: true,
                useless: true,
                timestamp: 11,
            })
            .into(),
            Message::Developer(DeveloperMessage {
                content: UserContent::Text("dev".into()),
                attribution: Some(Attribution::User),
                timestamp: 12,
            })
            .into(),
        ]
    }

    #[test]
    fn fast_path_agrees_with_agent_message_on_every_field() {
        for m in full_messages() {
            let v = serde_json::to_value(&m).unwrap();
            let (fast, slow) = both(&v);
            assert_eq!(fast, m);
            assert_eq!(slow, m);
        }
    }

    #[test]
    fn fast_path_agrees_on_sparse_and_reordered_messages() {
        for v in [
            json!({"role":"user","content":"hi","timestamp":1}),
            json!({"role":"user","content":[{"text":"type not first","type":"text"}]}),
            json!({"role":"assistant","content":[]}),
            json!({"role":"toolResult","toolCallId":"c","toolName":"read","content":[]}),
            json!({"role":"bashExecution","command":"ls","output":"a","exitCode":0,"timestamp":4}),
            json!({"content":"role not first","role":"user","timestamp":5}),
        ] {
            let (fast, slow) = both(&v);
            assert_eq!(fast, slow, "{v}");
        }
    }

    #[test]
    fn long_texts_decode_every_escape_as_the_parser_does() {
        for text in [
            r#""plain""#,
            r#""a \"q\" \\ \/ \b\f\n\r\t end""#,
            r#""ctl \u0001 é \ud83d\ude00 \u00e9""#,
            r#""""#,
        ] {
            let line = format!(
                r#"{{"role":"assistant","content":[{{"type":"text","text":{text}}},{{"type":"thinking","thinking":{text}}}]}}"#
            );
            let fast = serde_json::from_str::<FastMessage>(&line).unwrap().0;
            let slow = serde_json::from_str::<AgentMessage>(&line).unwrap();
            assert_eq!(fast, slow, "{line}");
        }
    }

    #[test]
    fn texts_read_from_literals_note_their_length_when_it_is_what_is_written() {
        let text_of = |literal: &str| {
            let line = format!(
                r#"{{"role":"toolResult","toolCallId":"c","toolName":"read","content":[{{"type":"text","text":{literal}}}]}}"#
            );
            match serde_json::from_str::<FastMessage>(&line)
                .unwrap()
                .0
                .as_tool_result()
            {
                Some(r) => match &r.content[0] {
                    ContentBlock::Text(t) => (t.text.clone(), t.literal_len.of(&t.text)),
                    other => panic!("{other:?}"),
                },
                None => panic!("not a tool result"),
            }
        };
        for literal in [r#""plain""#, r#""a \"q\" \\ \b\f\n\r\t é""#, r#""""#] {
            let (text, len) = text_of(literal);
            assert_eq!(len, Some(literal.len() as u64), "{literal}");
            assert_eq!(len, Some(json_text::string_len(&text)));
        }
        // Literals longer than what is written again for their text: counted when sent.
        for literal in [r#""a\/b""#, r#""\u0041""#, r#""\u0001""#] {
            assert_eq!(text_of(literal).1, None, "{literal}");
        }
    }

    #[test]
    fn call_arguments_read_as_the_parser_reads_them() {
        let samples = [
            r#"{}"#,
            r#"{"path":"a.rs"}"#,
            r#"{"a":1,"b":-2,"c":2.5,"d":1e300,"e":18446744073709551615,"f":null,"g":true}"#,
            r#"{"nested":{"x":[1,{"y":"z\n\u00e9"},[]],"w":{}},"dup":1,"k":2,"dup":3}"#,
            r#"[1,"two",{"three":3}]"#,
            r#""just text""#,
        ];
        for args in samples {
            let line = format!(
                r#"{{"role":"assistant","content":[{{"type":"toolCall","id":"c","name":"n","arguments":{args}}}]}}"#
            );
            let fast = serde_json::from_str::<FastMessage>(&line).unwrap().0;
            let slow = serde_json::from_str::<AgentMessage>(&line).unwrap();
            assert_eq!(fast, slow, "{args}");
            let parsed: Value = serde_json::from_str(args).unwrap();
            let ContentBlock::ToolCall(call) = &fast.as_assistant().unwrap().content[0] else {
                panic!("not a call");
            };
            assert_eq!(call.arguments, parsed);
            // Same order of members, too.
            assert_eq!(call.arguments.to_string(), parsed.to_string());
        }
        let line = r#"{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"n"}]}"#;
        let (fast, slow) = both(&serde_json::from_str(line).unwrap());
        assert_eq!(fast, slow);
    }

    #[test]
    fn content_lists_hold_no_empty_room() {
        for n in 1..6 {
            let blocks = vec![r#"{"type":"text","text":"t"}"#; n].join(",");
            let line = format!(r#"{{"role":"assistant","content":[{blocks}]}}"#);
            let message = serde_json::from_str::<FastMessage>(&line).unwrap().0;
            let content = &message.as_assistant().unwrap().content;
            assert_eq!((content.len(), content.capacity()), (n, n));
        }
    }

    #[test]
    fn escaped_tags_are_read_as_well() {
        let line = r#"{"r\u006fle":"us\u0065r","content":[{"typ\u0065":"te\u0078t","text":"hi"}]}"#;
        let fast = serde_json::from_str::<FastMessage>(line).unwrap().0;
        let slow = serde_json::from_str::<AgentMessage>(line).unwrap();
        assert_eq!(fast, slow);
    }

    #[test]
    fn bad_messages_are_errors() {
        for bad in [
            r#"{}"#,
            r#"{"role":""}"#,
            r#"{"role":"assistant","content":7}"#,
            r#"{"role":"assistant","content":[{"type":"video"}]}"#,
            r#"{"role":"assistant","content":[{"type":"text","text":7}]}"#,
            r#"{"role":"assistant","content":[{"type":"text"}]}"#,
            r#"{"role":"assistant","content":[{"type":"thinking","thinking":null}]}"#,
            r#"{"role":"assistant","content":[{"type":"text","text":"\ud800"}]}"#,
            r#"{"role":"user","content":{"type":"text"}}"#,
            r#"{"role":"toolResult","content":[]}"#,
            r#"[1]"#,
        ] {
            assert!(serde_json::from_str::<FastMessage>(bad).is_err(), "{bad}");
        }
    }
}
