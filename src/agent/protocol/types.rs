//! The conversation data model: content blocks, messages and usage.
//!
//! These serde types are the single vocabulary shared by the loop, the providers, the session
//! files and the UI. Their JSON uses the field names of the `pi` session format (`toolCallId`,
//! `isError`, `stopReason`, `usage.cost`, ...) so a message can be written to disk, printed in
//! `--mode json` or replayed to a provider without any mapping layer.
//!
//! [`Message`] is what a provider may see. [`AgentMessage`] adds custom messages (any other
//! `role`) that live in the transcript but reach a provider only if `convert_to_llm` maps them.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// Milliseconds since the Unix epoch, the timestamp unit of every message.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Plain text. `textSignature` is an opaque provider id that must be replayed unchanged.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_signature: Option<String>,
    /// The length of `text` as a JSON string literal, when it was learnt for free (never
    /// saved, never compared).
    #[serde(skip)]
    pub literal_len: LiteralLen,
}

/// How many bytes a text takes as a JSON string literal (quotes included), noted where it
/// came at no cost: the session loader sees each long text's literal as it reads it. A
/// resumed history's request body is measured before it is sent, and counting tens of
/// megabytes again was a pass of its own.
///
/// The note holds the length of the text it was taken for, and answers only for a text of
/// that length; a text changed in place to one of the same length (nothing does that to a
/// loaded message) would need [`LiteralLen::default`] put back.
#[derive(Clone, Copy, Default)]
pub struct LiteralLen {
    text_len: usize,
    /// Zero when unknown (a literal is at least its two quotes).
    literal_len: u64,
}

impl LiteralLen {
    /// A note that `text` takes `literal_len` bytes as a literal.
    pub fn new(text: &str, literal_len: u64) -> Self {
        LiteralLen {
            text_len: text.len(),
            literal_len,
        }
    }

    /// The literal length of `text`, if this note was taken for it.
    pub fn of(&self, text: &str) -> Option<u64> {
        (self.literal_len != 0 && self.text_len == text.len()).then_some(self.literal_len)
    }
}

impl std::fmt::Debug for LiteralLen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.literal_len {
            0 => f.write_str("unknown"),
            n => write!(f, "{n}"),
        }
    }
}

/// A note, not part of the text: two texts are equal whatever is known of their length.
impl PartialEq for LiteralLen {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// Model reasoning. The signature (when a provider gives one) must be replayed unchanged.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingContent {
    pub thinking: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_id: Option<String>,
}

/// Reasoning the provider encrypted; only the opaque payload is kept for replay.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RedactedThinkingContent {
    pub data: String,
}

/// A base64 image.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    pub data: String,
    pub mime_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Key a provider puts in a call's arguments when the model's JSON did not parse (the loop
/// then fails the call with the parse error instead of running the tool).
pub const PARSE_ERROR_KEY: &str = "__parseError";
/// Key holding the raw, unparsable JSON text next to [`PARSE_ERROR_KEY`].
pub const RAW_JSON_KEY: &str = "__rawJson";

/// True when a call's `arguments` carry [`PARSE_ERROR_KEY`]. The keys are compared in turn
/// rather than hashed: a call has a handful, and a request asks this of every call in the
/// history, twice (measured, then written).
pub fn has_parse_error(arguments: &Value) -> bool {
    arguments
        .as_object()
        .is_some_and(|map| map.keys().any(|k| k == PARSE_ERROR_KEY))
}

/// A call the model asked for. `arguments` is the parsed JSON object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// Set by the loop when intent tracing pulls a stated intent out of the arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
}

pub fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// One block of message content. Which kinds a role may hold is a convention the loop keeps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum ContentBlock {
    #[serde(rename = "text")]
    Text(TextContent),
    #[serde(rename = "thinking")]
    Thinking(ThinkingContent),
    #[serde(rename = "redactedThinking")]
    RedactedThinking(RedactedThinkingContent),
    #[serde(rename = "image")]
    Image(ImageContent),
    #[serde(rename = "toolCall")]
    ToolCall(ToolCall),
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent {
            text: text.into(),
            ..TextContent::default()
        })
    }

    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }

    /// [`ContentBlock::joined_text`], with the text's literal length when it is known (one
    /// text block, measured as it was loaded).
    pub fn joined_text_measured(blocks: &[ContentBlock]) -> (Cow<'_, str>, Option<u64>) {
        let mut texts = blocks.iter().filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t),
            _ => None,
        });
        match (texts.next(), texts.next()) {
            (None, _) => (Cow::Borrowed(""), None),
            (Some(one), None) => (Cow::Borrowed(&one.text), one.literal_len.of(&one.text)),
            _ => (
                Cow::Owned(
                    blocks
                        .iter()
                        .filter_map(ContentBlock::as_text)
                        .collect::<Vec<_>>()
                        .join("\n"),
                ),
                None,
            ),
        }
    }

    /// The text blocks of `blocks` joined by newlines; borrowed when there is only one (a long
    /// tool result need not be copied to be read or sent).
    pub fn joined_text(blocks: &[ContentBlock]) -> Cow<'_, str> {
        ContentBlock::joined_text_measured(blocks).0
    }
}

/// User content is either a bare string or a list of text/image blocks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UserContent {
    Text(String),
    Blocks(Vec<ContentBlock>),
}

impl UserContent {
    /// All text of the content, blocks joined by newlines.
    pub fn joined_text(&self) -> String {
        match self {
            UserContent::Text(s) => s.clone(),
            UserContent::Blocks(blocks) => ContentBlock::joined_text(blocks).into_owned(),
        }
    }
}

/// Who originated a message that the loop injects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Attribution {
    User,
    Agent,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    pub content: UserContent,
    /// Injected by the system rather than typed by a person.
    #[serde(default, skip_serializing_if = "is_false")]
    pub synthetic: bool,
    /// Delivered mid-run as a steering message.
    #[serde(default, skip_serializing_if = "is_false")]
    pub steering: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<Attribution>,
    #[serde(default)]
    pub timestamp: i64,
}

impl UserMessage {
    pub fn new(text: impl Into<String>) -> Self {
        UserMessage {
            content: UserContent::Text(text.into()),
            synthetic: false,
            steering: false,
            attribution: None,
            timestamp: now_ms(),
        }
    }
}

/// A developer-role instruction (OpenAI style). Dropped by the default `convert_to_llm`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeveloperMessage {
    pub content: UserContent,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<Attribution>,
    #[serde(default)]
    pub timestamp: i64,
}

#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    #[default]
    Stop,
    Length,
    ToolUse,
    Error,
    Aborted,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Stop => "stop",
            StopReason::Length => "length",
            StopReason::ToolUse => "toolUse",
            StopReason::Error => "error",
            StopReason::Aborted => "aborted",
        }
    }
}

/// Extra detail on why a response stopped (Anthropic-shaped).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StopDetails {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
}

/// `stopDetails.type` of a response the server paused and expects to be re-sampled.
pub const STOP_PAUSE_TURN: &str = "pause_turn";
/// `stopDetails.type` of a provider refusal.
pub const STOP_REFUSAL: &str = "refusal";
/// `stopDetails.type` of a provider "sensitive content" stop.
pub const STOP_SENSITIVE: &str = "sensitive";
/// `stopDetails.type` of a failed attempt that was retried: shown, never replayed.
pub const STOP_RETRIED: &str = "retried_error";
/// `stopDetails.type` the loop sets when a stream broke after some content was complete.
pub const STREAM_INTERRUPTED_AFTER_CONTENT: &str = "stream_interrupted_after_content";

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Cost {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub total: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total_tokens: u64,
    /// Reasoning tokens, a subset of `output`; `None` when the provider does not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    pub cost: Cost,
}

impl Usage {
    /// Tokens the context held at this reply: everything read (fresh, cached and written to
    /// the cache) plus what was written.
    pub fn context_tokens(&self) -> u64 {
        self.input + self.output + self.cache_read + self.cache_write
    }
}

/// Usage added up over replies, with the context size at the last one that reported any.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UsageTotals {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub cost: f64,
    /// Tokens in the context at the last reply that reported usage.
    pub context: u64,
}

impl UsageTotals {
    pub fn add(&mut self, u: &Usage) {
        self.input += u.input;
        self.output += u.output;
        self.cache_read += u.cache_read;
        self.cache_write += u.cache_write;
        self.cost += u.cost.total;
        let context = u.context_tokens();
        if context > 0 {
            self.context = context;
        }
    }

    /// Tokens and cost spent outside this conversation's context (a subagent's): counted,
    /// but the context size stays as it is.
    pub fn add_spent(&mut self, u: &Usage) {
        self.input += u.input;
        self.output += u.output;
        self.cache_read += u.cache_read;
        self.cache_write += u.cache_write;
        self.cost += u.cost.total;
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    pub content: Vec<ContentBlock>,
    #[serde(default)]
    pub api: String,
    #[serde(default)]
    pub provider: String,
    #[serde(default)]
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    #[serde(default)]
    pub usage: Usage,
    #[serde(default)]
    pub stop_reason: StopReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_details: Option<StopDetails>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_status: Option<u16>,
    /// What kind of failure this is, as bit flags (see `agent::policy::error_id`); set by the
    /// loop on every error or aborted reply it commits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_id: Option<u32>,
    /// Per-call labels used by the placeholders of an aborted message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_abort_messages: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub timestamp: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft: Option<u64>,
    /// Set by a provider on an error that is worth retrying (rate limit, overload, server
    /// error, dropped or idle connection). Not persisted.
    #[serde(skip)]
    pub transient: Option<TransientError>,
    /// Set by a provider when the response's stream broke while being read (a dropped
    /// connection, a body cut short, an event that did not parse), as opposed to an error the
    /// provider reported. Tool calls completed before the break are whole and may still run.
    /// Not persisted.
    #[serde(skip)]
    pub stream_broken: bool,
}

/// What a provider knows about a retryable failure.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TransientError {
    /// The server's `Retry-After`, if it sent one.
    pub retry_after_ms: Option<u64>,
}

impl AssistantMessage {
    /// An empty message for the given model, stamped now.
    pub fn empty(api: &str, provider: &str, model: &str) -> Self {
        AssistantMessage {
            api: api.to_string(),
            provider: provider.to_string(),
            model: model.to_string(),
            timestamp: now_ms(),
            ..Default::default()
        }
    }

    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolCall(tc) => Some(tc),
            _ => None,
        })
    }

    pub fn has_tool_calls(&self) -> bool {
        self.tool_calls().next().is_some()
    }

    /// The text blocks of the message, joined by newlines.
    pub fn text(&self) -> String {
        ContentBlock::joined_text(&self.content).into_owned()
    }

    pub fn stop_detail_kind(&self) -> Option<&str> {
        self.stop_details.as_ref().map(|d| d.kind.as_str())
    }

    /// A provider refusal: an error stop whose detail says `refusal` or `sensitive`.
    /// Such a message is kept in the transcript but never replayed to a provider.
    /// A failed attempt the loop retried; it stays in the transcript but is never replayed.
    pub fn is_retried_attempt(&self) -> bool {
        self.stop_detail_kind() == Some(STOP_RETRIED)
    }

    pub fn is_provider_refusal(&self) -> bool {
        self.stop_reason == StopReason::Error
            && matches!(self.stop_detail_kind(), Some(STOP_REFUSAL | STOP_SENSITIVE))
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    pub tool_call_id: String,
    pub tool_name: String,
    pub content: Vec<ContentBlock>,
    /// Tool-specific detail for the UI and logs; never sent to a provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default)]
    pub is_error: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub useless: bool,
    #[serde(default)]
    pub timestamp: i64,
}

/// The `details` of a result the loop wrote for a call that never ran (a placeholder).
///
/// Stored in the result's `details` in the shape the session format shares with the Node pi
/// (`{"__synthetic": true, "source": ..., "executed": false}`); read it with
/// [`PlaceholderDetails::of`] rather than by key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlaceholderDetails {
    #[serde(rename = "__synthetic")]
    pub synthetic: bool,
    /// Why the call was not run (`assistant_stop_error`, `interrupt_skipped`, ...).
    pub source: String,
    pub executed: bool,
    /// The provider's error, for calls of a reply that failed.
    #[serde(
        rename = "upstreamError",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub upstream_error: Option<String>,
}

impl PlaceholderDetails {
    /// A placeholder for a call that did not run because of `source`.
    pub fn new(source: &str, upstream_error: Option<&str>) -> Self {
        PlaceholderDetails {
            synthetic: true,
            source: source.to_string(),
            executed: false,
            upstream_error: upstream_error.map(str::to_string),
        }
    }

    /// The placeholder details in a result's `details`, if they are that.
    pub fn of(details: &Value) -> Option<Self> {
        Self::deserialize(details).ok().filter(|d| d.synthetic)
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

impl ToolResultMessage {
    /// True for a placeholder the loop made for a call it never ran.
    pub fn is_synthetic(&self) -> bool {
        self.details
            .as_ref()
            .and_then(PlaceholderDetails::of)
            .is_some()
    }

    pub fn text(&self) -> String {
        ContentBlock::joined_text(&self.content).into_owned()
    }
}

/// A message a provider can be given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum Message {
    User(UserMessage),
    Developer(DeveloperMessage),
    Assistant(AssistantMessage),
    ToolResult(ToolResultMessage),
}

impl Message {
    pub fn role(&self) -> &'static str {
        match self {
            Message::User(_) => "user",
            Message::Developer(_) => "developer",
            Message::Assistant(_) => "assistant",
            Message::ToolResult(_) => "toolResult",
        }
    }

    pub fn timestamp(&self) -> i64 {
        match self {
            Message::User(m) => m.timestamp,
            Message::Developer(m) => m.timestamp,
            Message::Assistant(m) => m.timestamp,
            Message::ToolResult(m) => m.timestamp,
        }
    }

    /// The message's content blocks (none for content that is a bare string).
    pub fn blocks(&self) -> &[ContentBlock] {
        match self {
            Message::User(m) => match &m.content {
                UserContent::Blocks(b) => b,
                UserContent::Text(_) => &[],
            },
            Message::Developer(m) => match &m.content {
                UserContent::Blocks(b) => b,
                UserContent::Text(_) => &[],
            },
            Message::Assistant(m) => &m.content,
            Message::ToolResult(m) => &m.content,
        }
    }
}

/// An application-defined message with any role other than the provider roles.
/// The loop carries it opaquely; only `convert_to_llm` decides whether it reaches a provider.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CustomMessage {
    pub role: String,
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

impl CustomMessage {
    pub fn new(role: impl Into<String>, fields: Map<String, Value>) -> Self {
        CustomMessage {
            role: role.into(),
            fields,
        }
    }

    pub fn attribution(&self) -> Option<Attribution> {
        match self.fields.get("attribution").and_then(Value::as_str) {
            Some("user") => Some(Attribution::User),
            Some("agent") => Some(Attribution::Agent),
            _ => None,
        }
    }
}

/// Anything that can stand in the agent's transcript.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentMessage {
    /// Shared: the transcript, the event stream and provider requests hold the same message.
    Llm(Arc<Message>),
    /// Boxed: custom messages are rare, and the enum stays two words wide (a long history is
    /// held in several vectors of these).
    Custom(Box<CustomMessage>),
}

const LLM_ROLES: [&str; 4] = ["user", "developer", "assistant", "toolResult"];

impl Serialize for AgentMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AgentMessage::Llm(m) => m.serialize(s),
            AgentMessage::Custom(c) => c.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for AgentMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        let role = value.get("role").and_then(Value::as_str).unwrap_or("");
        if LLM_ROLES.contains(&role) {
            Message::deserialize(value)
                .map(|m| AgentMessage::Llm(Arc::new(m)))
                .map_err(serde::de::Error::custom)
        } else if role.is_empty() {
            Err(serde::de::Error::custom("message has no role"))
        } else {
            CustomMessage::deserialize(value)
                .map(AgentMessage::from)
                .map_err(serde::de::Error::custom)
        }
    }
}

impl AgentMessage {
    pub fn user(text: impl Into<String>) -> Self {
        AgentMessage::Llm(Arc::new(Message::User(UserMessage::new(text))))
    }

    /// A user message typed while the agent works, marked as steering.
    pub fn steering(text: impl Into<String>) -> Self {
        let mut m = UserMessage::new(text);
        m.steering = true;
        AgentMessage::Llm(Arc::new(Message::User(m)))
    }

    /// The provider-facing message, if this is one.
    pub fn as_llm(&self) -> Option<&Message> {
        match self {
            AgentMessage::Llm(m) => Some(m),
            AgentMessage::Custom(_) => None,
        }
    }

    pub fn role(&self) -> &str {
        match self {
            AgentMessage::Llm(m) => m.role(),
            AgentMessage::Custom(c) => &c.role,
        }
    }

    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match self {
            AgentMessage::Llm(m) => match &**m {
                Message::Assistant(a) => Some(a),
                _ => None,
            },
            _ => None,
        }
    }

    /// A failed model-call attempt the loop retried: shown while it streams, never part of
    /// the transcript.
    pub fn is_retried_attempt(&self) -> bool {
        self.as_assistant()
            .is_some_and(AssistantMessage::is_retried_attempt)
    }

    pub fn as_tool_result(&self) -> Option<&ToolResultMessage> {
        match self {
            AgentMessage::Llm(m) => match &**m {
                Message::ToolResult(r) => Some(r),
                _ => None,
            },
            _ => None,
        }
    }

    pub fn as_user(&self) -> Option<&UserMessage> {
        match self {
            AgentMessage::Llm(m) => match &**m {
                Message::User(u) => Some(u),
                _ => None,
            },
            _ => None,
        }
    }

    /// The explicit attribution of the message, if it carries one.
    pub fn attribution(&self) -> Option<Attribution> {
        match self {
            AgentMessage::Llm(m) => match &**m {
                Message::User(u) => u.attribution,
                Message::Developer(d) => d.attribution,
                _ => None,
            },
            AgentMessage::Custom(c) => c.attribution(),
        }
    }
}

impl From<Message> for AgentMessage {
    fn from(m: Message) -> Self {
        AgentMessage::Llm(Arc::new(m))
    }
}

impl From<AssistantMessage> for AgentMessage {
    fn from(m: AssistantMessage) -> Self {
        AgentMessage::Llm(Arc::new(Message::Assistant(m)))
    }
}

impl From<UserMessage> for AgentMessage {
    fn from(m: UserMessage) -> Self {
        AgentMessage::Llm(Arc::new(Message::User(m)))
    }
}

impl From<ToolResultMessage> for AgentMessage {
    fn from(m: ToolResultMessage) -> Self {
        AgentMessage::Llm(Arc::new(Message::ToolResult(m)))
    }
}

impl From<CustomMessage> for AgentMessage {
    fn from(m: CustomMessage) -> Self {
        AgentMessage::Custom(Box::new(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_parse_error_marker_is_found_wherever_it_lies_among_the_keys() {
        assert!(has_parse_error(
            &json!({PARSE_ERROR_KEY: "bad", RAW_JSON_KEY: "{"})
        ));
        assert!(has_parse_error(
            &json!({"a": 1, "b": 2, PARSE_ERROR_KEY: "x"})
        ));
        assert!(!has_parse_error(&json!({"path": "a", "__parse": 1})));
        assert!(!has_parse_error(&json!([PARSE_ERROR_KEY])));
        assert!(!has_parse_error(&json!(PARSE_ERROR_KEY)));
    }

    #[test]
    fn assistant_message_uses_session_field_names() {
        let mut m = AssistantMessage::empty("anthropic-messages", "anthropic", "claude");
        m.content.push(ContentBlock::ToolCall(ToolCall {
            id: "t1".into(),
            name: "read".into(),
            arguments: json!({"path": "a"}),
            intent: None,
            thought_signature: None,
        }));
        m.stop_reason = StopReason::ToolUse;
        let v = serde_json::to_value(AgentMessage::from(m.clone())).unwrap();
        assert_eq!(v["role"], "assistant");
        assert_eq!(v["stopReason"], "toolUse");
        assert_eq!(v["content"][0]["type"], "toolCall");
        assert!(v["usage"]["cost"].is_object());
        assert!(v["usage"]["cacheRead"].is_number());
        let back: AgentMessage = serde_json::from_value(v).unwrap();
        assert_eq!(back, AgentMessage::from(m));
    }

    #[test]
    fn tool_result_round_trips_with_camel_case() {
        let r = ToolResultMessage {
            tool_call_id: "c".into(),
            tool_name: "bash".into(),
            content: vec![ContentBlock::text("ok")],
            details: Some(json!({"exitCode": 0})),
            is_error: false,
            useless: false,
            timestamp: 5,
        };
        let v = serde_json::to_value(AgentMessage::from(r.clone())).unwrap();
        assert_eq!(v["toolCallId"], "c");
        assert_eq!(v["isError"], false);
        assert!(v.get("useless").is_none());
        assert_eq!(serde_json::from_value::<AgentMessage>(v).unwrap(), r.into());
    }

    #[test]
    fn unknown_roles_become_custom_messages() {
        let v = json!({"role": "custom", "customType": "advisor", "content": "x", "attribution": "agent", "timestamp": 1});
        let m: AgentMessage = serde_json::from_value(v.clone()).unwrap();
        assert!(matches!(&m, AgentMessage::Custom(c) if c.role == "custom"));
        assert_eq!(m.attribution(), Some(Attribution::Agent));
        assert_eq!(serde_json::to_value(&m).unwrap(), v);
    }

    #[test]
    fn user_content_accepts_string_and_blocks() {
        let a: UserMessage =
            serde_json::from_value(json!({"content": "hi", "timestamp": 1})).unwrap();
        assert_eq!(a.content.joined_text(), "hi");
        let b: UserMessage = serde_json::from_value(
            json!({"content": [{"type":"text","text":"a"},{"type":"image","data":"AA==","mimeType":"image/png"}], "timestamp": 1}),
        )
        .unwrap();
        assert_eq!(b.content.joined_text(), "a");
    }

    #[test]
    fn missing_role_is_an_error_not_a_panic() {
        assert!(serde_json::from_value::<AgentMessage>(json!({"content": "x"})).is_err());
        assert!(
            serde_json::from_value::<AgentMessage>(json!({"role": "assistant", "content": 3}))
                .is_err()
        );
    }

    #[test]
    fn refusal_detection() {
        let mut m = AssistantMessage::empty("a", "p", "m");
        m.stop_reason = StopReason::Error;
        m.stop_details = Some(StopDetails {
            kind: STOP_REFUSAL.into(),
            ..Default::default()
        });
        assert!(m.is_provider_refusal());
        m.stop_reason = StopReason::Stop;
        assert!(!m.is_provider_refusal());
    }
}
