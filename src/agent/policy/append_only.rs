//! Append-only provider context: keeps the request prefix byte-stable so provider prompt/KV
//! caches stay warm.
//!
//! Opt-in per agent. Instead of sending this turn's freshly converted messages, the loop syncs
//! them into an [`AppendOnlyLog`] and sends the log:
//!
//! * messages already sent are kept as the values that were sent, as long as their digest (role,
//!   content, provider payload, tool-call identity and error flag — never timestamps) is unchanged;
//! * an in-place rewrite of message `k` truncates the log at `k` and re-sends only `k` and later;
//! * a shorter transcript (compaction) clears the log and starts over.
//!
//! The system prompt and tool specs are held by a [`StablePrefix`], rebuilt only when their
//! fingerprint changes. Digests and fingerprints use FNV-1a (64-bit) over the JSON serialisation,
//! so they are deterministic across runs; object key order is significant (`preserve_order`).

use std::sync::Arc;

use std::io;

use serde::Serialize;

use crate::agent::policy::normalize::{ToolNormalizeOptions, normalize_tools};
use crate::agent::protocol::stream::{LlmContext, ToolSpec};
use crate::agent::protocol::tool::ToolSet;
use crate::agent::protocol::types::{ContentBlock, Message, UserContent};

/// What [`StablePrefix::fingerprint`] reports before the first build.
pub const UNBUILT_FINGERPRINT: &str = "<unbuilt>";

/// FNV-1a, 64-bit, fed through `io::Write` so values are hashed while they serialise.
struct Fnv1a(u64);

impl Fnv1a {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    fn new() -> Self {
        Fnv1a(Self::OFFSET)
    }
}

impl io::Write for Fnv1a {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        for &b in buf {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Deterministic 64-bit hash of a value's JSON serialisation.
fn hash_json<T: Serialize + ?Sized>(value: &T) -> u64 {
    let mut hasher = Fnv1a::new();
    if serde_json::to_writer(&mut hasher, value).is_err() {
        // Cannot happen for the types hashed here; still fold in a marker rather than panic.
        hasher.0 ^= u64::MAX;
    }
    hasher.0
}

// ---------------------------------------------------------------------------------------------
// StablePrefix
// ---------------------------------------------------------------------------------------------

/// The system prompt and tool specs as last sent.
#[derive(Clone, Debug, PartialEq)]
pub struct PrefixSnapshot {
    pub system_prompt: Vec<String>,
    pub tools: Vec<ToolSpec>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FingerprintInput<'a> {
    system_prompt: &'a [String],
    tools: &'a [ToolSpec],
    inject_intent: bool,
    prune_descriptions: bool,
}

struct BuiltPrefix {
    snapshot: PrefixSnapshot,
    fingerprint: u64,
}

/// A cached snapshot of the request prefix (system prompt + normalised tools).
#[derive(Default)]
pub struct StablePrefix {
    built: Option<BuiltPrefix>,
    version: u64,
}

impl StablePrefix {
    pub fn new() -> Self {
        Self::default()
    }

    /// Normalise the tools and snapshot the prefix. Returns true when the snapshot was replaced
    /// (first build or a changed fingerprint), false when the previous snapshot is kept.
    pub fn build(
        &mut self,
        system_prompt: &[String],
        tools: &ToolSet,
        options: ToolNormalizeOptions,
    ) -> bool {
        self.build_with(system_prompt, tools, options).0
    }

    /// [`StablePrefix::build`] with already normalised tool specs.
    pub fn build_from_specs(
        &mut self,
        system_prompt: &[String],
        tools: Vec<ToolSpec>,
        options: ToolNormalizeOptions,
    ) -> bool {
        self.build_specs(system_prompt, tools, options).0
    }

    fn build_with(
        &mut self,
        system_prompt: &[String],
        tools: &ToolSet,
        options: ToolNormalizeOptions,
    ) -> (bool, &PrefixSnapshot) {
        let specs = normalize_tools(tools, options);
        self.build_specs(system_prompt, specs, options)
    }

    fn build_specs(
        &mut self,
        system_prompt: &[String],
        tools: Vec<ToolSpec>,
        options: ToolNormalizeOptions,
    ) -> (bool, &PrefixSnapshot) {
        let fingerprint = hash_json(&FingerprintInput {
            system_prompt,
            tools: &tools,
            inject_intent: options.inject_intent,
            prune_descriptions: options.prune_descriptions,
        });
        let changed = !matches!(&self.built, Some(b) if b.fingerprint == fingerprint);
        if changed {
            self.built = None;
            self.version += 1;
        }
        let built = self.built.get_or_insert_with(|| BuiltPrefix {
            snapshot: PrefixSnapshot {
                system_prompt: system_prompt.to_vec(),
                tools,
            },
            fingerprint,
        });
        (changed, &built.snapshot)
    }

    /// Drop the snapshot; the next build replaces it (and bumps the version).
    pub fn invalidate(&mut self) {
        self.built = None;
    }

    /// The current snapshot, `None` before the first build or after [`StablePrefix::invalidate`].
    pub fn snapshot(&self) -> Option<&PrefixSnapshot> {
        self.built.as_ref().map(|b| &b.snapshot)
    }

    pub fn is_built(&self) -> bool {
        self.built.is_some()
    }

    /// The fingerprint as 16 hex digits, or [`UNBUILT_FINGERPRINT`].
    pub fn fingerprint(&self) -> String {
        match &self.built {
            Some(b) => format!("{:016x}", b.fingerprint),
            None => UNBUILT_FINGERPRINT.to_string(),
        }
    }

    /// How many times the snapshot has been replaced (monotonic, survives invalidation).
    pub fn version(&self) -> u64 {
        self.version
    }
}

// ---------------------------------------------------------------------------------------------
// AppendOnlyLog
// ---------------------------------------------------------------------------------------------

/// The provider-level messages as sent, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AppendOnlyLog {
    entries: Vec<Arc<Message>>,
}

impl AppendOnlyLog {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn append(&mut self, message: impl Into<Arc<Message>>) {
        self.entries.push(message.into());
    }

    pub fn extend<M: Into<Arc<Message>>>(&mut self, messages: impl IntoIterator<Item = M>) {
        self.entries.extend(messages.into_iter().map(Into::into));
    }

    /// Replace the last entry (for compaction); appends when the log is empty.
    pub fn replace_tail(&mut self, message: impl Into<Arc<Message>>) {
        let message = message.into();
        match self.entries.last_mut() {
            Some(last) => *last = message,
            None => self.entries.push(message),
        }
    }

    /// Keep the first `len` entries (no-op when the log is not longer).
    pub fn truncate(&mut self, len: usize) {
        self.entries.truncate(len);
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// The entries for a request (shared, not copied).
    pub fn to_messages(&self) -> Vec<Arc<Message>> {
        self.entries.clone()
    }

    pub fn entries(&self) -> &[Arc<Message>] {
        &self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

// ---------------------------------------------------------------------------------------------
// Message digests
// ---------------------------------------------------------------------------------------------

#[derive(Serialize)]
#[serde(untagged)]
enum ContentRef<'a> {
    Plain(&'a UserContent),
    Blocks(&'a [ContentBlock]),
}

/// The fields of a message that reach a provider. Tool calls, with their arguments and
/// signatures, are content blocks here, so they are covered by `content`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DigestView<'a> {
    role: &'a str,
    content: ContentRef<'a>,
    /// Provider-owned replay data outside the content blocks.
    provider_payload: Option<&'a str>,
    tool_call_id: Option<&'a str>,
    tool_name: Option<&'a str>,
    is_error: Option<bool>,
}

/// A deterministic digest of what a provider would see of a message (timestamps and UI-only
/// metadata excluded).
pub fn message_digest(message: &Message) -> u64 {
    let view = match message {
        Message::User(m) => DigestView {
            role: "user",
            content: ContentRef::Plain(&m.content),
            provider_payload: None,
            tool_call_id: None,
            tool_name: None,
            is_error: None,
        },
        Message::Developer(m) => DigestView {
            role: "developer",
            content: ContentRef::Plain(&m.content),
            provider_payload: None,
            tool_call_id: None,
            tool_name: None,
            is_error: None,
        },
        Message::Assistant(m) => DigestView {
            role: "assistant",
            content: ContentRef::Blocks(&m.content),
            provider_payload: m.response_id.as_deref(),
            tool_call_id: None,
            tool_name: None,
            is_error: None,
        },
        Message::ToolResult(m) => DigestView {
            role: "toolResult",
            content: ContentRef::Blocks(&m.content),
            provider_payload: None,
            tool_call_id: Some(&m.tool_call_id),
            tool_name: Some(&m.tool_name),
            is_error: Some(m.is_error),
        },
    };
    hash_json(&view)
}

// ---------------------------------------------------------------------------------------------
// Manager
// ---------------------------------------------------------------------------------------------

/// The append-only context manager: a [`StablePrefix`] plus an [`AppendOnlyLog`] kept in step
/// with the transcript by [`AppendOnlyContext::sync_messages`].
#[derive(Default)]
pub struct AppendOnlyContext {
    prefix: StablePrefix,
    log: AppendOnlyLog,
    /// Each synced transcript message, parallel to the synced part of the log: a position
    /// still holding the same `Arc` is unchanged without a look; another one is compared by
    /// digest (so a message rebuilt with the same content still counts as sent).
    synced: Vec<Arc<Message>>,
    /// How many transcript messages the last sync covered.
    last_sync_count: usize,
    /// The model the log was sent to (`provider/api/id`), once one was noted.
    model: Option<String>,
}

impl AppendOnlyContext {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sync the log with this turn's normalised messages and build the provider context.
    pub fn sync_and_build(
        &mut self,
        system_prompt: &[String],
        tools: &ToolSet,
        options: ToolNormalizeOptions,
        messages: Vec<Arc<Message>>,
    ) -> LlmContext {
        self.sync_messages(messages);
        let (_, snapshot) = self.prefix.build_with(system_prompt, tools, options);
        LlmContext {
            system_prompt: snapshot.system_prompt.clone(),
            tools: snapshot.tools.clone(),
            messages: Arc::new(self.log.to_messages()),
        }
    }

    /// Bring the log in step with the transcript's provider messages.
    ///
    /// 1. Fewer messages than last synced (compaction) → clear everything.
    /// 2. Otherwise truncate at the first already-synced position whose digest changed (bounded by
    ///    the physical log length, in case the log was cleared directly).
    /// 3. Append the messages past the synced count.
    ///
    /// Unchanged positions keep the message values that were sent before.
    pub fn sync_messages<M: Into<Arc<Message>>>(&mut self, messages: Vec<M>) {
        let messages: Vec<Arc<Message>> = messages.into_iter().map(Into::into).collect();
        if messages.len() < self.last_sync_count {
            self.clear_log();
        } else if self.last_sync_count > 0 {
            let limit = self
                .last_sync_count
                .min(messages.len())
                .min(self.synced.len());
            let same = |k: usize| {
                let (new, old) = (&messages[k], &self.synced[k]);
                Arc::ptr_eq(new, old) || message_digest(new) == message_digest(old)
            };
            let stable = (0..limit)
                .find(|&k| !same(k))
                .unwrap_or(limit)
                .min(self.log.len());
            if stable < self.last_sync_count {
                self.log.truncate(stable);
                self.synced.truncate(stable);
                self.last_sync_count = stable;
            }
        }
        let start = self.last_sync_count;
        let total = messages.len();
        self.synced.extend(messages.iter().skip(start).cloned());
        self.log.extend(messages.into_iter().skip(start));
        self.last_sync_count = total;
    }

    /// The context from the current prefix and log; `None` before the prefix is built.
    pub fn to_context(&self) -> Option<LlmContext> {
        self.prefix.snapshot().map(|s| LlmContext {
            system_prompt: s.system_prompt.clone(),
            tools: s.tools.clone(),
            messages: Arc::new(self.log.to_messages()),
        })
    }

    /// Say which model the next request goes to; a model other than the last one noted drops
    /// prefix, log and cursor (see [`Self::invalidate_for_model_change`]). `true` when it did.
    pub fn note_model(&mut self, provider: &str, api: &str, id: &str) -> bool {
        let key = format!("{provider}/{api}/{id}");
        if self.model.as_deref() == Some(key.as_str()) {
            return false;
        }
        let changed = self.model.is_some();
        if changed {
            self.invalidate_for_model_change();
        }
        self.model = Some(key);
        changed
    }

    /// A different model may tokenise or replay differently: drop prefix, log and cursor.
    pub fn invalidate_for_model_change(&mut self) {
        self.prefix.invalidate();
        self.clear_log();
    }

    /// Drop prefix, log and cursor, then rebuild the prefix.
    pub fn reset(
        &mut self,
        system_prompt: &[String],
        tools: &ToolSet,
        options: ToolNormalizeOptions,
    ) {
        self.invalidate_for_model_change();
        self.prefix.build(system_prompt, tools, options);
    }

    /// Clear the log and the sync cursor; the next sync re-sends everything.
    pub fn reset_sync_cursor(&mut self) {
        self.clear_log();
    }

    /// Force the prefix to be rebuilt on the next build (the log is kept).
    pub fn invalidate(&mut self) {
        self.prefix.invalidate();
    }

    /// Append a message to the log outside a sync (it is not part of the sync cursor).
    pub fn append_message(&mut self, message: impl Into<Arc<Message>>) {
        self.log.append(message);
    }

    /// Replace the last log entry outside a sync (compaction).
    pub fn replace_tail_message(&mut self, message: impl Into<Arc<Message>>) {
        self.log.replace_tail(message);
    }

    pub fn prefix(&self) -> &StablePrefix {
        &self.prefix
    }

    pub fn prefix_mut(&mut self) -> &mut StablePrefix {
        &mut self.prefix
    }

    pub fn log(&self) -> &AppendOnlyLog {
        &self.log
    }

    /// Direct access to the log; a sync copes with entries removed behind its back.
    pub fn log_mut(&mut self) -> &mut AppendOnlyLog {
        &mut self.log
    }

    /// How many transcript messages the last sync covered.
    pub fn last_sync_count(&self) -> usize {
        self.last_sync_count
    }

    fn clear_log(&mut self) {
        self.log.clear();
        self.synced.clear();
        self.last_sync_count = 0;
    }
}

#[cfg(test)]
mod tests {
    fn arcs(v: Vec<Message>) -> Vec<Arc<Message>> {
        v.into_iter().map(Arc::new).collect()
    }

    fn plain(v: &[Arc<Message>]) -> Vec<Message> {
        v.iter().map(|m| (**m).clone()).collect()
    }

    use serde_json::json;

    use super::*;
    use crate::agent::policy::normalize::tests::TestTool;
    use crate::agent::protocol::tool::ToolExample;
    use crate::agent::protocol::types::{
        AssistantMessage, ThinkingContent, ToolCall, ToolResultMessage, UserMessage,
    };

    fn user(text: &str, ts: i64) -> Message {
        let mut u = UserMessage::new(text);
        u.timestamp = ts;
        Message::User(u)
    }

    fn assistant(text: &str, ts: i64) -> Message {
        let mut a = AssistantMessage::empty("api", "prov", "model");
        a.content = vec![ContentBlock::text(text)];
        a.timestamp = ts;
        Message::Assistant(a)
    }

    fn call(id: &str, args: serde_json::Value, ts: i64) -> Message {
        let mut a = AssistantMessage::empty("api", "prov", "model");
        a.content = vec![ContentBlock::ToolCall(ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: args,
            intent: None,
            thought_signature: None,
        })];
        a.timestamp = ts;
        Message::Assistant(a)
    }

    fn result(id: &str, text: &str, ts: i64) -> Message {
        Message::ToolResult(ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "read".into(),
            content: vec![ContentBlock::text(text)],
            details: None,
            is_error: false,
            useless: false,
            timestamp: ts,
        })
    }

    /// A six-message transcript, every message stamped `ts`.
    fn transcript(ts: i64) -> Vec<Message> {
        vec![
            user("hello", ts),
            call("c1", json!({"path": "a"}), ts),
            result("c1", "A", ts),
            assistant("read a", ts),
            user("more", ts),
            assistant("done", ts),
        ]
    }

    fn stamps(ctx: &AppendOnlyContext) -> Vec<i64> {
        ctx.log().entries().iter().map(|m| m.timestamp()).collect()
    }

    fn tools() -> ToolSet {
        ToolSet::new([
            TestTool::new(
                "read",
                "Read a file.",
                json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            )
            .arc(),
            TestTool::new(
                "bash",
                "Run a command.",
                json!({"type": "object", "properties": {"command": {"type": "string"}}}),
            )
            .arc(),
        ])
    }

    fn prompt(s: &str) -> Vec<String> {
        vec![s.to_string()]
    }

    const OPTS: ToolNormalizeOptions = ToolNormalizeOptions {
        inject_intent: false,
        prune_descriptions: false,
    };

    // --- StablePrefix -------------------------------------------------------------------------

    #[test]
    fn prefix_is_unbuilt_until_the_first_build() {
        let mut p = StablePrefix::new();
        assert_eq!(p.fingerprint(), UNBUILT_FINGERPRINT);
        assert!(p.snapshot().is_none());
        assert_eq!(p.version(), 0);
        assert!(p.build(&prompt("sys"), &tools(), OPTS));
        assert_ne!(p.fingerprint(), UNBUILT_FINGERPRINT);
        assert_eq!(p.fingerprint().len(), 16);
        assert_eq!(p.version(), 1);
        let snap = p.snapshot().cloned().unwrap_or_else(|| panic!("built"));
        assert_eq!(snap.system_prompt, prompt("sys"));
        assert_eq!(
            snap.tools
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>(),
            ["read", "bash"]
        );
    }

    #[test]
    fn same_inputs_keep_the_snapshot() {
        let mut p = StablePrefix::new();
        assert!(p.build(&prompt("sys"), &tools(), OPTS));
        let fp = p.fingerprint();
        let before = p.snapshot().map(|s| s as *const PrefixSnapshot);
        assert!(!p.build(&prompt("sys"), &tools(), OPTS));
        assert!(!p.build(&prompt("sys"), &tools(), OPTS));
        assert_eq!(p.fingerprint(), fp);
        assert_eq!(p.version(), 1);
        let after = p.snapshot().map(|s| s as *const PrefixSnapshot);
        assert_eq!(before, after, "the kept snapshot is the same object");
    }

    #[test]
    fn prefix_detects_prompt_tool_description_order_and_flag_changes() {
        let mut p = StablePrefix::new();
        let t = |name: &str, desc: &str| -> ToolSpec {
            ToolSpec {
                name: name.into(),
                description: desc.into(),
                parameters: json!({"type": "object"}),
            }
        };
        let base = vec![t("a", "A"), t("b", "B")];
        assert!(p.build_from_specs(&prompt("sys"), base.clone(), OPTS));
        assert!(!p.build_from_specs(&prompt("sys"), base.clone(), OPTS));

        assert!(
            p.build_from_specs(&prompt("sys2"), base.clone(), OPTS),
            "prompt"
        );
        assert_eq!(p.version(), 2);
        assert_eq!(
            p.snapshot().map(|s| s.system_prompt.clone()),
            Some(prompt("sys2"))
        );

        let split = vec!["sys".to_string(), "2".to_string()];
        assert!(
            p.build_from_specs(&split, base.clone(), OPTS),
            "prompt parts"
        );

        assert!(
            p.build_from_specs(&split, vec![t("a", "A"), t("b", "B!")], OPTS),
            "description"
        );
        assert!(
            p.build_from_specs(&split, vec![t("b", "B!"), t("a", "A")], OPTS),
            "order"
        );
        assert!(
            p.build_from_specs(&split, vec![t("b", "B!"), t("a", "A"), t("c", "C")], OPTS),
            "tool added"
        );

        let mut params = vec![t("b", "B!"), t("a", "A"), t("c", "C")];
        params[0].parameters = json!({"type": "object", "properties": {}});
        assert!(
            p.build_from_specs(&split, params.clone(), OPTS),
            "parameters"
        );
        assert!(!p.build_from_specs(&split, params.clone(), OPTS));

        let prune = ToolNormalizeOptions {
            prune_descriptions: true,
            ..OPTS
        };
        assert!(
            p.build_from_specs(&split, params.clone(), prune),
            "prune flag"
        );
        let intent = ToolNormalizeOptions {
            inject_intent: true,
            ..prune
        };
        assert!(p.build_from_specs(&split, params, intent), "intent flag");
        assert_eq!(p.version(), 9);
    }

    #[test]
    fn invalidate_forces_a_rebuild() {
        let mut p = StablePrefix::new();
        assert!(p.build(&prompt("sys"), &tools(), OPTS));
        p.invalidate();
        assert_eq!(p.fingerprint(), UNBUILT_FINGERPRINT);
        assert!(p.snapshot().is_none());
        assert!(p.build(&prompt("sys"), &tools(), OPTS));
        assert_eq!(p.version(), 2);
    }

    #[test]
    fn build_normalizes_tools_with_intent_and_examples() {
        let set = ToolSet::new([TestTool::new(
            "read",
            "Read.",
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        )
        .with_examples(vec![ToolExample::Call {
            caption: None,
            args: json!({"path": "a", "limit": 1}),
        }])
        .arc()]);
        let options = ToolNormalizeOptions {
            inject_intent: true,
            prune_descriptions: false,
        };
        let mut ctx = AppendOnlyContext::new();
        let out = ctx.sync_and_build(&prompt("sys"), &set, options, arcs(vec![user("q", 1)]));
        let props = out.tools[0].parameters["properties"]
            .as_object()
            .map(|m| m.keys().cloned().collect::<Vec<_>>())
            .unwrap_or_default();
        assert_eq!(props, ["i", "path"]);
        assert_eq!(out.tools[0].parameters["required"], json!(["i"]));
        assert!(
            out.tools[0]
                .description
                .contains("read(i=\"example\", path=\"a\", limit=1)"),
            "{}",
            out.tools[0].description
        );
        assert_eq!(out.system_prompt, prompt("sys"));

        // Turning the intent field off changes the normalised specs, and so the fingerprint.
        let v = ctx.prefix().version();
        let off = ToolNormalizeOptions {
            inject_intent: false,
            ..options
        };
        ctx.sync_and_build(&prompt("sys"), &set, off, arcs(vec![user("q", 1)]));
        assert_eq!(ctx.prefix().version(), v + 1);
    }

    // --- AppendOnlyLog ------------------------------------------------------------------------

    #[test]
    fn log_operations() {
        let mut log = AppendOnlyLog::new();
        assert!(log.is_empty());
        log.replace_tail(user("first", 0));
        assert_eq!(log.len(), 1);
        log.append(user("a", 1));
        log.extend([user("b", 2), user("c", 3)]);
        assert_eq!(log.len(), 4);
        log.replace_tail(user("summary", 4));
        assert_eq!(*log.entries()[3], user("summary", 4));
        assert_eq!(*log.entries()[2], user("b", 2));
        let copy = log.to_messages();
        assert_eq!(copy, log.entries());
        log.truncate(10);
        assert_eq!(log.len(), 4);
        log.truncate(2);
        assert_eq!(plain(log.entries()), [user("first", 0), user("a", 1)]);
        assert_eq!(copy.len(), 4, "to_messages is a copy");
        log.clear();
        assert!(log.is_empty());
    }

    // --- Digests ------------------------------------------------------------------------------

    #[test]
    fn digest_ignores_timestamps_and_ui_metadata() {
        assert_eq!(message_digest(&user("x", 1)), message_digest(&user("x", 2)));
        assert_ne!(message_digest(&user("x", 1)), message_digest(&user("y", 1)));

        let mut synthetic = UserMessage::new("x");
        synthetic.synthetic = true;
        synthetic.steering = true;
        assert_eq!(
            message_digest(&Message::User(synthetic)),
            message_digest(&user("x", 1))
        );

        let plain = result("c1", "A", 1);
        let Message::ToolResult(mut detailed) = result("c1", "A", 9) else {
            panic!("tool result expected")
        };
        detailed.details = Some(json!({"ui": true}));
        assert_eq!(
            message_digest(&plain),
            message_digest(&Message::ToolResult(detailed))
        );

        // Different roles with the same content differ.
        let developer = Message::Developer(crate::agent::protocol::types::DeveloperMessage {
            content: UserContent::Text("x".into()),
            attribution: None,
            timestamp: 1,
        });
        assert_ne!(message_digest(&developer), message_digest(&user("x", 1)));
        assert_eq!(
            message_digest(&call("c", json!({"a": 1}), 1)),
            message_digest(&call("c", json!({"a": 1}), 1))
        );
    }

    #[test]
    fn digest_covers_tool_identity_error_flag_and_payload() {
        let base = result("c1", "A", 1);
        let Message::ToolResult(r) = base.clone() else {
            panic!("tool result expected")
        };
        let variants = [
            ToolResultMessage {
                tool_call_id: "c2".into(),
                ..r.clone()
            },
            ToolResultMessage {
                tool_name: "bash".into(),
                ..r.clone()
            },
            ToolResultMessage {
                is_error: true,
                ..r.clone()
            },
        ];
        for v in variants {
            assert_ne!(
                message_digest(&base),
                message_digest(&Message::ToolResult(v))
            );
        }

        let Message::Assistant(a) = assistant("t", 1) else {
            panic!("assistant expected")
        };
        let with_id = AssistantMessage {
            response_id: Some("resp_1".into()),
            ..a.clone()
        };
        assert_ne!(
            message_digest(&Message::Assistant(a.clone())),
            message_digest(&Message::Assistant(with_id))
        );
        let mut signed = a.clone();
        signed.content.insert(
            0,
            ContentBlock::Thinking(ThinkingContent {
                thinking: "t".into(),
                thinking_signature: Some("sig".into()),
                item_id: None,
            }),
        );
        let mut resigned = signed.clone();
        if let ContentBlock::Thinking(t) = &mut resigned.content[0] {
            t.thinking_signature = Some("sig2".into());
        }
        assert_ne!(
            message_digest(&Message::Assistant(signed)),
            message_digest(&Message::Assistant(resigned))
        );
    }

    // --- Manager ------------------------------------------------------------------------------

    #[test]
    fn first_sync_and_build_returns_everything() {
        let mut ctx = AppendOnlyContext::new();
        assert!(ctx.to_context().is_none());
        let out = ctx.sync_and_build(&prompt("sys"), &tools(), OPTS, arcs(transcript(1)));
        assert_eq!(plain(&out.messages), transcript(1));
        assert_eq!(out.system_prompt, prompt("sys"));
        assert_eq!(out.tools.len(), 2);
        assert_eq!(ctx.last_sync_count(), 6);
        assert_eq!(ctx.to_context(), Some(out));
    }

    #[test]
    fn sync_appends_only_the_delta_and_keeps_sent_values() {
        let mut ctx = AppendOnlyContext::new();
        ctx.sync_messages(transcript(1)[..2].to_vec());
        // Same messages re-converted with new timestamps, plus two more.
        let mut next = transcript(2)[..4].to_vec();
        next[3] = assistant("read a", 2);
        ctx.sync_messages(next);
        assert_eq!(stamps(&ctx), [1, 1, 2, 2]);
        assert_eq!(ctx.last_sync_count(), 4);

        // Nothing new: nothing changes.
        ctx.sync_messages(transcript(3)[..4].to_vec());
        assert_eq!(stamps(&ctx), [1, 1, 2, 2]);
    }

    #[test]
    fn shrinking_history_clears_the_log() {
        let mut ctx = AppendOnlyContext::new();
        ctx.sync_messages(transcript(1));
        let compacted = vec![user("summary", 2), assistant("ok", 2)];
        ctx.sync_messages(compacted.clone());
        assert_eq!(plain(ctx.log().entries()), compacted);
        assert_eq!(ctx.last_sync_count(), 2);
    }

    #[test]
    fn deep_rewrite_keeps_the_prefix_up_to_the_divergence() {
        let mut ctx = AppendOnlyContext::new();
        ctx.sync_messages(transcript(1));
        let mut rewritten = transcript(2);
        rewritten[2] = result("c1", "A (pruned)", 2);
        ctx.sync_messages(rewritten.clone());
        assert_eq!(stamps(&ctx), [1, 1, 2, 2, 2, 2]);
        assert_eq!(*ctx.log().entries()[2], rewritten[2]);
        assert_eq!(*ctx.log().entries()[5], rewritten[5]);
        assert_eq!(ctx.last_sync_count(), 6);
    }

    #[test]
    fn metadata_only_rewrite_keeps_everything() {
        let mut ctx = AppendOnlyContext::new();
        ctx.sync_messages(transcript(1));
        let mut rewritten = transcript(2);
        if let Message::ToolResult(r) = &mut rewritten[2] {
            r.details = Some(json!({"truncated": true}));
        }
        ctx.sync_messages(rewritten);
        assert_eq!(stamps(&ctx), [1; 6]);
    }

    #[test]
    fn provider_payload_only_rewrite_is_resent() {
        let mut ctx = AppendOnlyContext::new();
        ctx.sync_messages(transcript(1));
        let mut rewritten = transcript(2);
        if let Message::Assistant(a) = &mut rewritten[3] {
            a.response_id = Some("resp_9".into());
        }
        ctx.sync_messages(rewritten);
        assert_eq!(stamps(&ctx), [1, 1, 1, 2, 2, 2]);
    }

    #[test]
    fn tail_rewrite_resends_only_the_tail() {
        let mut ctx = AppendOnlyContext::new();
        ctx.sync_messages(transcript(1));
        let mut rewritten = transcript(2);
        rewritten[5] = assistant("done, really", 2);
        rewritten.push(user("next", 2));
        ctx.sync_messages(rewritten.clone());
        assert_eq!(stamps(&ctx), [1, 1, 1, 1, 1, 2, 2]);
        assert_eq!(*ctx.log().entries()[5], rewritten[5]);
    }

    #[test]
    fn tool_call_argument_mutation_is_detected() {
        let mut ctx = AppendOnlyContext::new();
        ctx.sync_messages(transcript(1));
        let mut rewritten = transcript(2);
        rewritten[1] = call("c1", json!({"path": "b"}), 2);
        ctx.sync_messages(rewritten.clone());
        assert_eq!(stamps(&ctx), [1, 2, 2, 2, 2, 2]);
        assert_eq!(*ctx.log().entries()[1], rewritten[1]);

        // Key order of the arguments is part of what is sent.
        let mut ctx = AppendOnlyContext::new();
        let mut first = transcript(1);
        first[1] = call("c1", json!({"path": "a", "limit": 1}), 1);
        ctx.sync_messages(first);
        let mut reordered = transcript(2);
        reordered[1] = call("c1", json!({"limit": 1, "path": "a"}), 2);
        ctx.sync_messages(reordered);
        assert_eq!(stamps(&ctx), [1, 2, 2, 2, 2, 2]);
    }

    #[test]
    fn log_cleared_directly_is_rebuilt_on_sync() {
        let mut ctx = AppendOnlyContext::new();
        ctx.sync_messages(transcript(1));
        ctx.log_mut().truncate(3);
        ctx.sync_messages(transcript(2));
        assert_eq!(stamps(&ctx), [1, 1, 1, 2, 2, 2]);
        ctx.log_mut().clear();
        ctx.sync_messages(transcript(3));
        assert_eq!(stamps(&ctx), [3; 6]);
    }

    #[test]
    fn reset_sync_cursor_resends_everything() {
        let mut ctx = AppendOnlyContext::new();
        ctx.sync_messages(transcript(1));
        ctx.reset_sync_cursor();
        assert!(ctx.log().is_empty());
        assert_eq!(ctx.last_sync_count(), 0);
        ctx.sync_messages(transcript(2));
        assert_eq!(stamps(&ctx), [2; 6]);
    }

    #[test]
    fn model_change_and_reset_drop_prefix_and_log() {
        let mut ctx = AppendOnlyContext::new();
        ctx.sync_and_build(&prompt("sys"), &tools(), OPTS, arcs(transcript(1)));
        ctx.invalidate_for_model_change();
        assert!(ctx.log().is_empty());
        assert_eq!(ctx.last_sync_count(), 0);
        assert_eq!(ctx.prefix().fingerprint(), UNBUILT_FINGERPRINT);
        assert!(ctx.to_context().is_none());

        ctx.sync_and_build(&prompt("sys"), &tools(), OPTS, arcs(transcript(2)));
        ctx.reset(&prompt("sys3"), &tools(), OPTS);
        assert!(ctx.log().is_empty());
        let out = ctx
            .to_context()
            .unwrap_or_else(|| panic!("reset rebuilds the prefix"));
        assert_eq!(out.system_prompt, prompt("sys3"));
        assert!(out.messages.is_empty());
        assert_eq!(ctx.prefix().version(), 3);
    }

    #[test]
    fn invalidate_drops_only_the_prefix() {
        let mut ctx = AppendOnlyContext::new();
        ctx.sync_and_build(&prompt("sys"), &tools(), OPTS, arcs(transcript(1)));
        ctx.invalidate();
        assert_eq!(ctx.log().len(), 6);
        assert_eq!(ctx.prefix().fingerprint(), UNBUILT_FINGERPRINT);
        let out = ctx.sync_and_build(&prompt("sys"), &tools(), OPTS, arcs(transcript(2)));
        assert_eq!(ctx.prefix().version(), 2);
        assert_eq!(
            out.messages
                .iter()
                .map(|m| m.timestamp())
                .collect::<Vec<_>>(),
            [1; 6]
        );
    }

    #[test]
    fn prefix_change_does_not_touch_the_log() {
        let mut ctx = AppendOnlyContext::new();
        ctx.sync_and_build(&prompt("sys"), &tools(), OPTS, arcs(transcript(1)));
        let out = ctx.sync_and_build(&prompt("other"), &tools(), OPTS, arcs(transcript(2)));
        assert_eq!(out.system_prompt, prompt("other"));
        assert_eq!(
            out.messages
                .iter()
                .map(|m| m.timestamp())
                .collect::<Vec<_>>(),
            [1; 6]
        );
    }

    #[test]
    fn manual_append_and_replace_tail() {
        let mut ctx = AppendOnlyContext::new();
        ctx.sync_messages(vec![user("a", 1)]);
        ctx.append_message(user("reminder", 1));
        assert_eq!(ctx.log().len(), 2);
        ctx.replace_tail_message(user("summary", 1));
        assert_eq!(*ctx.log().entries()[1], user("summary", 1));
        assert_eq!(ctx.last_sync_count(), 1);
        ctx.sync_messages(vec![user("a", 2), user("b", 2)]);
        assert_eq!(
            plain(ctx.log().entries()),
            [user("a", 1), user("summary", 1), user("b", 2)]
        );
    }

    #[test]
    fn another_model_starts_the_log_over() {
        let mut ctx = AppendOnlyContext::new();
        assert!(
            !ctx.note_model("p", "api", "m"),
            "the first model noted is no change"
        );
        ctx.sync_and_build(&prompt("sys"), &tools(), OPTS, arcs(transcript(1)));
        assert!(!ctx.note_model("p", "api", "m"));
        assert!(!ctx.log().is_empty());
        assert!(ctx.note_model("p", "api", "other"));
        assert!(ctx.log().is_empty());
        assert_eq!(ctx.last_sync_count(), 0);
        assert!(!ctx.prefix().is_built());
        // Everything is sent afresh, with this turn's values.
        let out = ctx.sync_and_build(&prompt("sys"), &tools(), OPTS, arcs(transcript(2)));
        assert!(out.messages.iter().all(|m| m.timestamp() == 2));
    }
}
