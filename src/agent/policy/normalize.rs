//! The context pipeline's pure steps: transcript → provider messages, and tools → wire specs.
//!
//! Three stages live here, all free of I/O and global state:
//!
//! * [`default_convert_to_llm`] picks the transcript messages a provider may see;
//! * [`normalize_messages_for_provider`] applies per-provider message fixes (Cerebras rejects
//!   replayed reasoning, so its thinking blocks are dropped);
//! * [`normalize_tools`] turns the active tools into [`ToolSpec`]s: it injects the optional intent
//!   argument `i` ([`INTENT_FIELD`]) as the first schema property, renders the tool's usage
//!   examples into its description, or — when pruning — strips every `description` annotation to
//!   save prompt tokens.
//!
//! Schema edits rely on `serde_json`'s `preserve_order` feature: property order is what the model
//! sees, so keys are only ever moved with `shift_*` operations, never swap-removed.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::agent::protocol::stream::{Model, ToolSpec};
use crate::agent::protocol::tool::{AgentTool, IntentMode, ToolExample, ToolSet};
use crate::agent::protocol::types::{AgentMessage, ContentBlock, Message, StopReason};

/// Name of the optional argument in which the model states why it calls a tool.
pub const INTENT_FIELD: &str = "i";

/// Schema description of [`INTENT_FIELD`] (omitted when descriptions are pruned).
pub const INTENT_DESCRIPTION: &str = "concise intent";

/// Placeholder intent shown in examples that have no caption to derive one from.
const DEFAULT_EXAMPLE_INTENT: &str = "example";

/// Longest intent placeholder (in characters) derived from an example caption.
const MAX_EXAMPLE_INTENT_CHARS: usize = 60;

/// Keep user, tool results and assistant messages (except provider refusals); drop the rest.
/// A reply that broke (an error stop) never goes back with its partial text: one without tool
/// calls is left out, one with calls keeps them (their results follow) without its text.
pub fn default_convert_to_llm(messages: &[AgentMessage]) -> Vec<Arc<Message>> {
    messages
        .iter()
        .filter_map(|m| match m {
            AgentMessage::Llm(llm) => match &**llm {
                Message::User(_) | Message::ToolResult(_) => Some(llm.clone()),
                Message::Assistant(a) if a.is_provider_refusal() || a.is_retried_attempt() => None,
                Message::Assistant(a) if a.stop_reason == StopReason::Error => {
                    if !a.has_tool_calls() {
                        return None;
                    }
                    let mut kept = a.clone();
                    kept.content.retain(|b| !matches!(b, ContentBlock::Text(_)));
                    Some(Arc::new(Message::Assistant(kept)))
                }
                Message::Assistant(_) => Some(llm.clone()),
                _ => None,
            },
            AgentMessage::Custom(_) => None,
        })
        .collect()
}

/// Provider-specific message fixes (identity for most providers).
///
/// Cerebras: if any assistant message carries a `thinking` block, every assistant message loses
/// its `thinking` blocks (other blocks, including redacted thinking, are kept).
pub fn normalize_messages_for_provider(
    mut messages: Arc<Vec<Arc<Message>>>,
    model: &Model,
) -> Arc<Vec<Arc<Message>>> {
    if model.provider != "cerebras" {
        return messages;
    }
    let is_thinking = |b: &ContentBlock| matches!(b, ContentBlock::Thinking(_));
    let has_thinking =
        |m: &Message| matches!(m, Message::Assistant(a) if a.content.iter().any(is_thinking));
    if messages.iter().any(|m| has_thinking(m)) {
        for message in Arc::make_mut(&mut messages).iter_mut() {
            if has_thinking(message)
                && let Message::Assistant(a) = Arc::make_mut(message)
            {
                a.content.retain(|b| !is_thinking(b));
            }
        }
    }
    messages
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ToolNormalizeOptions {
    /// Add the intent argument `i` to tool schemas (the host decides, e.g. from its settings
    /// and `PI_NO_INTENT`).
    pub inject_intent: bool,
    /// Strip all `description` annotations and tool descriptions; render no examples.
    pub prune_descriptions: bool,
}

/// Wire specs for the tools, in tool order.
pub fn normalize_tools(tools: &ToolSet, options: ToolNormalizeOptions) -> Vec<ToolSpec> {
    let inject = options.inject_intent;
    tools
        .iter()
        .map(|t| normalize_tool(t.tool.as_ref(), inject, options.prune_descriptions))
        .collect()
}

/// The wire spec of one tool. `inject_intent` is the already-resolved switch (options and
/// environment); a tool whose [`AgentTool::intent_mode`] is `Omit` never gets the field.
pub fn normalize_tool(tool: &dyn AgentTool, inject_intent: bool, prune: bool) -> ToolSpec {
    let mode = tool.intent_mode();
    let intent = inject_intent && mode != IntentMode::Omit;
    let mut parameters = tool.parameters().clone();
    if prune {
        strip_descriptions(&mut parameters);
    }
    if intent {
        inject_intent_field(&mut parameters, mode == IntentMode::Require, !prune);
    }
    let description = if prune {
        String::new()
    } else {
        describe_tool(tool, intent)
    };
    ToolSpec {
        name: tool.name().to_string(),
        description,
        parameters,
    }
}

/// The tool description followed, when the tool has examples, by the rendered examples block.
fn describe_tool(tool: &dyn AgentTool, intent: bool) -> String {
    let base = tool.description();
    let examples = tool.examples();
    if examples.is_empty() {
        return base.to_string();
    }
    let block = render_examples(tool.name(), examples, intent);
    if base.is_empty() {
        block
    } else {
        format!("{base}\n\n{block}")
    }
}

// ---------------------------------------------------------------------------------------------
// Intent injection
// ---------------------------------------------------------------------------------------------

/// The schema of the intent property.
fn intent_property(with_description: bool) -> Value {
    let mut prop = Map::new();
    prop.insert("type".into(), Value::String("string".into()));
    if with_description {
        prop.insert(
            "description".into(),
            Value::String(INTENT_DESCRIPTION.into()),
        );
    }
    Value::Object(prop)
}

/// Add the intent property `i` to an object schema as its first property (moving an existing `i`
/// to the front instead), and list it in `required` when `required` is true.
///
/// A root that is a pure union (`anyOf`/`oneOf` without its own `properties`) gets the field in
/// every branch instead, so branches with `additionalProperties: false` stay satisfiable. `allOf`
/// is not descended. Non-object schemas (`true`, `false`) are left alone.
pub fn inject_intent_field(schema: &mut Value, required: bool, with_description: bool) {
    let Value::Object(obj) = schema else {
        return;
    };
    let is_union =
        !obj.contains_key("properties") && (obj.contains_key("anyOf") || obj.contains_key("oneOf"));
    if is_union {
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = obj.get_mut(key) {
                for branch in branches {
                    inject_intent_field(branch, required, with_description);
                }
            }
        }
        return;
    }

    let props = obj
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(props) = props else {
        // A malformed `properties`; leave the schema as the tool wrote it.
        return;
    };
    let existing = props.shift_remove(INTENT_FIELD);
    let prop = existing.unwrap_or_else(|| intent_property(with_description));
    props.shift_insert(0, INTENT_FIELD.to_string(), prop);

    if required {
        let list = obj
            .entry("required")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = list
            && !list.iter().any(|v| v.as_str() == Some(INTENT_FIELD))
        {
            list.push(Value::String(INTENT_FIELD.into()));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Description pruning
// ---------------------------------------------------------------------------------------------

/// Keywords whose value is a single subschema.
const SUBSCHEMA_KEYWORDS: &[&str] = &[
    "items",
    "additionalItems",
    "additionalProperties",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];

/// Keywords whose value is an array of subschemas.
const SUBSCHEMA_LIST_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];

/// Keywords whose value maps names to subschemas (descended by value only).
const SUBSCHEMA_MAP_KEYWORDS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// Remove every `description` annotation from a schema, recursively, descending only through
/// schema-valued keywords. Maps such as `properties` are descended by value, so a property *named*
/// `description` survives; data-valued keywords (`default`, `const`, `examples`, `enum`, ...) are
/// never touched. Key order is preserved.
pub fn strip_descriptions(schema: &mut Value) {
    let Value::Object(obj) = schema else {
        return;
    };
    obj.shift_remove("description");
    for key in SUBSCHEMA_KEYWORDS {
        match obj.get_mut(*key) {
            // `items` may be an array of schemas in older drafts.
            Some(Value::Array(list)) => list.iter_mut().for_each(strip_descriptions),
            Some(sub) => strip_descriptions(sub),
            None => {}
        }
    }
    for key in SUBSCHEMA_LIST_KEYWORDS {
        if let Some(Value::Array(list)) = obj.get_mut(*key) {
            list.iter_mut().for_each(strip_descriptions);
        }
    }
    for key in SUBSCHEMA_MAP_KEYWORDS {
        if let Some(Value::Object(map)) = obj.get_mut(*key) {
            // `dependencies` may map to string arrays; those are skipped by the recursion.
            map.values_mut().for_each(strip_descriptions);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Example rendering
// ---------------------------------------------------------------------------------------------

/// Render a tool's usage examples as an `<examples>` block (empty string for no examples).
///
/// Calls use Python keyword-call syntax, `name(key="value", n=1)`; a call whose only argument is a
/// string shows the bare value. With `intent` on, calls get a leading `i="…"` argument (bare values
/// an `i="…"` attribute on the `<example>` tag), taken from the example's own `i` argument or
/// derived from its caption.
pub fn render_examples(tool_name: &str, examples: &[ToolExample], intent: bool) -> String {
    if examples.is_empty() {
        return String::new();
    }
    let mut out = String::from("<examples>\n");
    for (n, example) in examples.iter().enumerate() {
        if n > 0 {
            out.push('\n');
        }
        match example {
            ToolExample::Call { caption, args } => {
                push_caption(&mut out, caption.as_deref());
                let hint = intent.then(|| intent_placeholder(caption.as_deref()));
                push_call(&mut out, tool_name, args, hint.as_deref());
            }
            ToolExample::Contrast { caption, bad, good } => {
                push_caption(&mut out, caption.as_deref());
                let hint = intent.then(|| intent_placeholder(caption.as_deref()));
                out.push_str("WRONG:\n");
                push_call(&mut out, tool_name, bad, hint.as_deref());
                out.push_str("RIGHT:\n");
                push_call(&mut out, tool_name, good, hint.as_deref());
            }
            ToolExample::Note { caption, note } => {
                push_caption(&mut out, Some(caption));
                if let Some(note) = note {
                    out.push_str(note);
                    out.push('\n');
                }
            }
        }
    }
    out.push_str("</examples>");
    out
}

fn push_caption(out: &mut String, caption: Option<&str>) {
    if let Some(caption) = caption {
        out.push_str("# ");
        out.push_str(caption);
        out.push('\n');
    }
}

/// A short intent for an example: the first line of its caption, or a generic word.
fn intent_placeholder(caption: Option<&str>) -> String {
    let line = caption
        .and_then(|c| c.lines().next())
        .map(|l| l.trim().trim_end_matches(['.', ':']).trim_end())
        .unwrap_or("");
    if line.is_empty() {
        return DEFAULT_EXAMPLE_INTENT.to_string();
    }
    line.chars().take(MAX_EXAMPLE_INTENT_CHARS).collect()
}

/// Append one `<example>…</example>` element (followed by a newline) for a call.
fn push_call(out: &mut String, tool_name: &str, args: &Value, hint: Option<&str>) {
    // With intent on, an `i` written in the example wins over the derived placeholder.
    let stated_intent = hint.and(args.get(INTENT_FIELD).and_then(Value::as_str));
    let intent = stated_intent.or(hint);
    let is_listed = |key: &str| hint.is_none() || key != INTENT_FIELD;

    if let Some(bare) = bare_string_argument(args, hint.is_some()) {
        match intent {
            Some(i) => {
                out.push_str("<example i=");
                push_quoted(out, i);
                out.push_str(">\n");
            }
            None => out.push_str("<example>\n"),
        }
        out.push_str(bare);
        out.push_str("\n</example>\n");
        return;
    }

    out.push_str("<example>\n");
    out.push_str(tool_name);
    out.push('(');
    let mut first = true;
    let mut sep = |out: &mut String| {
        if !first {
            out.push_str(", ");
        }
        first = false;
    };
    if let Some(i) = intent {
        sep(out);
        out.push_str(INTENT_FIELD);
        out.push('=');
        push_literal(out, &Value::String(i.to_string()));
    }
    match args {
        Value::Object(map) => {
            for (key, value) in map.iter().filter(|(k, _)| is_listed(k)) {
                sep(out);
                out.push_str(key);
                out.push('=');
                push_literal(out, value);
            }
        }
        Value::Null => {}
        other => {
            sep(out);
            push_literal(out, other);
        }
    }
    out.push_str(")\n</example>\n");
}

/// The string shown bare for a call whose only argument (ignoring `i` when intent is on) is a
/// string; a call given as a plain string also counts.
fn bare_string_argument(args: &Value, skip_intent: bool) -> Option<&str> {
    match args {
        Value::String(s) => Some(s),
        Value::Object(map) => {
            let mut listed = map
                .iter()
                .filter(|(k, _)| !(skip_intent && k.as_str() == INTENT_FIELD));
            match (listed.next(), listed.next()) {
                (Some((_, Value::String(s))), None) => Some(s),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A double-quoted, JSON-escaped string.
fn push_quoted(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A JSON-ish literal: strings double-quoted (multiline ones as `"""…"""` blocks), other scalars
/// as JSON, arrays as `[a, b]`, objects as `{"k": v}`.
fn push_literal(out: &mut String, value: &Value) {
    match value {
        Value::String(s) if s.contains('\n') => {
            out.push_str("\"\"\"");
            let body = s.replace("\"\"\"", "\\\"\\\"\\\"");
            match body.strip_suffix('"') {
                // A trailing quote would merge with the closing delimiter.
                Some(head) => {
                    out.push_str(head);
                    out.push_str("\\\"");
                }
                None => out.push_str(&body),
            }
            out.push_str("\"\"\"");
        }
        Value::String(s) => push_quoted(out, s),
        Value::Array(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                push_literal(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (n, (key, item)) in map.iter().enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                push_quoted(out, key);
                out.push_str(": ");
                push_literal(out, item);
            }
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    fn arcs(v: Vec<Message>) -> Arc<Vec<Arc<Message>>> {
        Arc::new(v.into_iter().map(Arc::new).collect())
    }

    fn unshare(v: &[Arc<Message>]) -> Vec<Message> {
        v.iter().map(|m| (**m).clone()).collect()
    }

    use std::sync::Arc;

    use async_trait::async_trait;
    use serde_json::json;

    use super::*;
    use crate::agent::protocol::tool::{ToolError, ToolInvocation, ToolOutput};
    use crate::agent::protocol::types::{AssistantMessage, ThinkingContent, UserMessage};

    /// A configurable tool for normalisation tests (also used by `append_only` tests).
    pub(crate) struct TestTool {
        pub name: String,
        pub description: String,
        pub parameters: Value,
        pub examples: Vec<ToolExample>,
        pub mode: IntentMode,
    }

    impl TestTool {
        pub(crate) fn new(name: &str, description: &str, parameters: Value) -> Self {
            TestTool {
                name: name.into(),
                description: description.into(),
                parameters,
                examples: Vec::new(),
                mode: IntentMode::Require,
            }
        }

        pub(crate) fn with_examples(mut self, examples: Vec<ToolExample>) -> Self {
            self.examples = examples;
            self
        }

        pub(crate) fn with_mode(mut self, mode: IntentMode) -> Self {
            self.mode = mode;
            self
        }

        pub(crate) fn arc(self) -> Arc<dyn AgentTool> {
            Arc::new(self)
        }
    }

    #[async_trait]
    impl AgentTool for TestTool {
        fn name(&self) -> &str {
            &self.name
        }
        fn description(&self) -> &str {
            &self.description
        }
        fn parameters(&self) -> &Value {
            &self.parameters
        }
        fn examples(&self) -> &[ToolExample] {
            &self.examples
        }
        fn intent_mode(&self) -> IntentMode {
            self.mode
        }
        async fn execute(&self, _call: ToolInvocation) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text("ok"))
        }
    }

    fn path_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "file to read"},
                "limit": {"type": "integer"}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn keys(v: &Value) -> Vec<String> {
        v.as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    const INTENT: ToolNormalizeOptions = ToolNormalizeOptions {
        inject_intent: true,
        prune_descriptions: false,
    };
    const PRUNE: ToolNormalizeOptions = ToolNormalizeOptions {
        inject_intent: false,
        prune_descriptions: true,
    };

    fn one(tool: TestTool, options: ToolNormalizeOptions) -> ToolSpec {
        let set = ToolSet::new([tool.arc()]);
        let mut specs = normalize_tools(&set, options);
        assert_eq!(specs.len(), 1);
        specs.remove(0)
    }

    #[test]
    fn without_options_the_tool_passes_through() {
        let spec = one(
            TestTool::new("read", "Read a file.", path_schema()),
            ToolNormalizeOptions::default(),
        );
        assert_eq!(spec.name, "read");
        assert_eq!(spec.description, "Read a file.");
        assert_eq!(spec.parameters, path_schema());
    }

    #[test]
    fn intent_is_the_first_property_and_required() {
        let spec = one(TestTool::new("read", "d", path_schema()), INTENT);
        assert_eq!(keys(&spec.parameters["properties"]), ["i", "path", "limit"]);
        assert_eq!(
            spec.parameters["properties"]["i"],
            json!({"type": "string", "description": "concise intent"})
        );
        assert_eq!(spec.parameters["required"], json!(["path", "i"]));
        assert_eq!(spec.parameters["additionalProperties"], json!(false));
    }

    #[test]
    fn optional_intent_is_not_required() {
        let spec = one(
            TestTool::new("read", "d", path_schema()).with_mode(IntentMode::Optional),
            INTENT,
        );
        assert_eq!(keys(&spec.parameters["properties"])[0], "i");
        assert_eq!(spec.parameters["required"], json!(["path"]));
    }

    #[test]
    fn omit_intent_is_never_injected_but_still_encoded() {
        let spec = one(
            TestTool::new("read", "d", path_schema()).with_mode(IntentMode::Omit),
            INTENT,
        );
        assert_eq!(spec.parameters, path_schema());
        let pruned = one(
            TestTool::new("read", "d", path_schema()).with_mode(IntentMode::Omit),
            ToolNormalizeOptions {
                inject_intent: true,
                prune_descriptions: true,
            },
        );
        assert_eq!(keys(&pruned.parameters["properties"]), ["path", "limit"]);
        assert_eq!(
            pruned.parameters["properties"]["path"],
            json!({"type": "string"})
        );
    }

    #[test]
    fn intent_is_injected_only_when_asked() {
        let set = ToolSet::new([TestTool::new("read", "d", path_schema()).arc()]);
        let on = normalize_tools(&set, INTENT);
        assert_eq!(
            keys(&on[0].parameters["properties"]),
            ["i", "path", "limit"]
        );
        let off = normalize_tools(&set, ToolNormalizeOptions::default());
        assert_eq!(off[0].parameters, path_schema());
    }

    #[test]
    fn existing_intent_moves_first_and_is_not_duplicated() {
        let mut schema = json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "i": {"type": "string", "title": "mine"}},
            "required": ["a"]
        });
        inject_intent_field(&mut schema, true, true);
        assert_eq!(keys(&schema["properties"]), ["i", "a"]);
        assert_eq!(schema["properties"]["i"]["title"], "mine");
        assert_eq!(schema["required"], json!(["a", "i"]));
        let again = schema.clone();
        inject_intent_field(&mut schema, true, true);
        assert_eq!(schema, again);
    }

    #[test]
    fn schema_without_properties_gets_them() {
        let mut schema = json!({"type": "object"});
        inject_intent_field(&mut schema, true, false);
        assert_eq!(
            schema,
            json!({"type": "object", "properties": {"i": {"type": "string"}}, "required": ["i"]})
        );
        let mut boolean = json!(true);
        inject_intent_field(&mut boolean, true, true);
        assert_eq!(boolean, json!(true));
    }

    #[test]
    fn pure_union_root_gets_intent_in_every_branch() {
        let schema = json!({
            "anyOf": [
                {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": false},
                {"type": "object", "properties": {"b": {"type": "number"}}, "additionalProperties": false}
            ]
        });
        let spec = one(TestTool::new("u", "d", schema), INTENT);
        let p = &spec.parameters;
        assert_eq!(keys(p), ["anyOf"], "no root siblings");
        for branch in p["anyOf"].as_array().into_iter().flatten() {
            assert_eq!(keys(&branch["properties"])[0], "i");
            assert!(
                branch["required"]
                    .as_array()
                    .is_some_and(|r| r.contains(&json!("i")))
            );
        }
        assert_eq!(p["anyOf"][0]["required"], json!(["a", "i"]));

        let mut one_of = json!({"oneOf": [{"properties": {"x": {}}}, true]});
        inject_intent_field(&mut one_of, false, true);
        assert_eq!(keys(&one_of["oneOf"][0]["properties"]), ["i", "x"]);
        assert!(one_of["oneOf"][0].get("required").is_none());
        assert_eq!(one_of["oneOf"][1], json!(true));
    }

    #[test]
    fn union_with_own_properties_is_treated_as_object_and_all_of_is_not_recursed() {
        let mut schema = json!({
            "properties": {"a": {}},
            "anyOf": [{"properties": {"b": {}}}]
        });
        inject_intent_field(&mut schema, true, true);
        assert_eq!(keys(&schema["properties"]), ["i", "a"]);
        assert_eq!(keys(&schema["anyOf"][0]["properties"]), ["b"]);

        let mut all_of = json!({"allOf": [{"properties": {"b": {}}}]});
        inject_intent_field(&mut all_of, true, true);
        assert_eq!(keys(&all_of["allOf"][0]["properties"]), ["b"]);
        assert_eq!(keys(&all_of["properties"]), ["i"]);
    }

    #[test]
    fn pruning_strips_descriptions_through_schema_keywords_only() {
        let schema = json!({
            "type": "object",
            "description": "root",
            "properties": {
                "description": {"type": "string", "description": "a field named description"},
                "opts": {
                    "type": "object",
                    "description": "nested",
                    "default": {"description": "kept default"},
                    "const": {"description": "kept const"},
                    "examples": [{"description": "kept example"}],
                    "enum": [{"description": "kept enum"}],
                    "properties": {"x": {"type": "integer", "description": "x"}},
                    "additionalProperties": {"description": "ap"}
                },
                "list": {"type": "array", "items": {"description": "item"}, "prefixItems": [{"description": "p"}]},
                "either": {"anyOf": [{"description": "a"}, {"not": {"description": "n"}}]}
            },
            "$defs": {"description": {"description": "def named description"}},
            "definitions": {"d": {"description": "old def"}},
            "patternProperties": {"^x": {"description": "pp"}},
            "if": {"description": "if"}, "then": {"description": "then"}, "else": {"description": "else"}
        });
        let spec = one(TestTool::new("t", "Tool description.", schema), PRUNE);
        assert_eq!(spec.description, "");
        let expected = json!({
            "type": "object",
            "properties": {
                "description": {"type": "string"},
                "opts": {
                    "type": "object",
                    "default": {"description": "kept default"},
                    "const": {"description": "kept const"},
                    "examples": [{"description": "kept example"}],
                    "enum": [{"description": "kept enum"}],
                    "properties": {"x": {"type": "integer"}},
                    "additionalProperties": {}
                },
                "list": {"type": "array", "items": {}, "prefixItems": [{}]},
                "either": {"anyOf": [{}, {"not": {}}]}
            },
            "$defs": {"description": {}},
            "definitions": {"d": {}},
            "patternProperties": {"^x": {}},
            "if": {}, "then": {}, "else": {}
        });
        assert_eq!(spec.parameters, expected);
        assert_eq!(
            keys(&spec.parameters),
            [
                "type",
                "properties",
                "$defs",
                "definitions",
                "patternProperties",
                "if",
                "then",
                "else"
            ],
            "key order is preserved"
        );
    }

    #[test]
    fn pruning_injects_intent_without_description_and_drops_examples() {
        let tool =
            TestTool::new("read", "Read.", path_schema()).with_examples(vec![ToolExample::Call {
                caption: None,
                args: json!({"path": "a"}),
            }]);
        let spec = one(
            tool,
            ToolNormalizeOptions {
                inject_intent: true,
                prune_descriptions: true,
            },
        );
        assert_eq!(spec.description, "");
        assert_eq!(
            spec.parameters["properties"]["i"],
            json!({"type": "string"})
        );
        assert_eq!(
            spec.parameters["properties"]["path"],
            json!({"type": "string"})
        );
        assert_eq!(keys(&spec.parameters["properties"])[0], "i");
    }

    #[test]
    fn examples_render_calls_bare_strings_contrast_and_notes() {
        let examples = vec![
            ToolExample::Call {
                caption: Some("Read the head".into()),
                args: json!({"path": "src/main.rs", "limit": 10, "follow": true, "tags": ["a", 1]}),
            },
            ToolExample::Call {
                caption: None,
                args: json!({"command": "ls -la"}),
            },
            ToolExample::Contrast {
                caption: Some("Quote paths".into()),
                bad: json!({"path": "a b", "limit": null}),
                good: json!({"path": "\"a b\""}),
            },
            ToolExample::Note {
                caption: "Paths are relative".into(),
                note: Some("to the working directory".into()),
            },
            ToolExample::Note {
                caption: "No globbing".into(),
                note: None,
            },
        ];
        let text = render_examples("read", &examples, false);
        let expected = "<examples>\n\
# Read the head\n\
<example>\n\
read(path=\"src/main.rs\", limit=10, follow=true, tags=[\"a\", 1])\n\
</example>\n\
\n\
<example>\n\
ls -la\n\
</example>\n\
\n\
# Quote paths\n\
WRONG:\n\
<example>\n\
read(path=\"a b\", limit=null)\n\
</example>\n\
RIGHT:\n\
<example>\n\
\"a b\"\n\
</example>\n\
\n\
# Paths are relative\n\
to the working directory\n\
\n\
# No globbing\n\
</examples>";
        assert_eq!(text, expected);
        assert_eq!(render_examples("read", &[], true), "");
    }

    #[test]
    fn multiline_strings_render_as_triple_quoted_blocks() {
        let examples = vec![ToolExample::Call {
            caption: None,
            args: json!({"path": "a.txt", "content": "line 1\nline \"2\"\nend \"\"\" \""}),
        }];
        let text = render_examples("write", &examples, false);
        assert!(
            text.contains(
                "write(path=\"a.txt\", content=\"\"\"line 1\nline \"2\"\nend \\\"\\\"\\\" \\\"\"\"\")"
            ),
            "{text}"
        );
        let nested = render_examples(
            "w",
            &[ToolExample::Call {
                caption: None,
                args: json!({"edits": [{"old": "a\nb", "new": "c"}], "n": 1}),
            }],
            false,
        );
        assert!(
            nested.contains("w(edits=[{\"old\": \"\"\"a\nb\"\"\", \"new\": \"c\"}], n=1)"),
            "{nested}"
        );
    }

    #[test]
    fn examples_with_intent_get_a_leading_i_argument() {
        let examples = vec![
            ToolExample::Call {
                caption: Some("Read the head.".into()),
                args: json!({"path": "a", "limit": 2}),
            },
            ToolExample::Call {
                caption: None,
                args: json!({"command": "ls"}),
            },
            ToolExample::Call {
                caption: Some("ignored".into()),
                args: json!({"path": "b", "i": "check b"}),
            },
            ToolExample::Contrast {
                caption: None,
                bad: json!({"path": "x", "n": 1}),
                good: json!({"path": "y", "n": 1}),
            },
        ];
        let text = render_examples("read", &examples, true);
        assert!(
            text.contains("read(i=\"Read the head\", path=\"a\", limit=2)"),
            "{text}"
        );
        assert!(
            text.contains("<example i=\"example\">\nls\n</example>"),
            "{text}"
        );
        assert!(
            text.contains("<example i=\"check b\">\nb\n</example>"),
            "{text}"
        );
        assert!(
            text.contains("WRONG:\n<example>\nread(i=\"example\", path=\"x\", n=1)"),
            "{text}"
        );
        assert!(
            text.contains("RIGHT:\n<example>\nread(i=\"example\", path=\"y\", n=1)"),
            "{text}"
        );

        // Without intent, an `i` in the example is an ordinary argument.
        let plain = render_examples("read", &examples[2..3], false);
        assert!(plain.contains("read(path=\"b\", i=\"check b\")"), "{plain}");
    }

    #[test]
    fn tool_description_gets_the_examples_block() {
        let tool = TestTool::new("bash", "Run a command.", path_schema()).with_examples(vec![
            ToolExample::Call {
                caption: None,
                args: json!({"command": "ls"}),
            },
        ]);
        let spec = one(tool, INTENT);
        assert_eq!(
            spec.description,
            "Run a command.\n\n<examples>\n<example i=\"example\">\nls\n</example>\n</examples>"
        );
        let no_intent =
            TestTool::new("bash", "", path_schema()).with_examples(vec![ToolExample::Call {
                caption: None,
                args: json!({"command": "ls"}),
            }]);
        let spec = one(no_intent, ToolNormalizeOptions::default());
        assert_eq!(
            spec.description,
            "<examples>\n<example>\nls\n</example>\n</examples>"
        );
    }

    #[test]
    fn omit_mode_examples_show_no_intent() {
        let tool = TestTool::new("bash", "Run.", path_schema())
            .with_mode(IntentMode::Omit)
            .with_examples(vec![ToolExample::Call {
                caption: None,
                args: json!({"command": "ls", "timeout": 5}),
            }]);
        let spec = one(tool, INTENT);
        assert!(spec.description.contains("bash(command=\"ls\", timeout=5)"));
    }

    fn thinking_assistant(provider: &str) -> Message {
        let mut a = AssistantMessage::empty("api", provider, "m");
        a.content = vec![
            ContentBlock::Thinking(ThinkingContent {
                thinking: "hmm".into(),
                ..Default::default()
            }),
            ContentBlock::text("answer"),
        ];
        Message::Assistant(a)
    }

    #[test]
    fn cerebras_drops_thinking_blocks_from_all_assistants() {
        let mut plain = AssistantMessage::empty("api", "cerebras", "m");
        plain.content = vec![ContentBlock::text("plain")];
        let msgs = vec![
            Message::User(UserMessage::new("q")),
            thinking_assistant("cerebras"),
            Message::Assistant(plain.clone()),
        ];
        let out = unshare(&normalize_messages_for_provider(
            arcs(msgs.clone()),
            &Model::new("cerebras", "x", "m"),
        ));
        assert_eq!(out.len(), 3);
        assert_eq!(out[0], msgs[0]);
        match &out[1] {
            Message::Assistant(a) => assert_eq!(a.content, vec![ContentBlock::text("answer")]),
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(out[2], Message::Assistant(plain));
    }

    #[test]
    fn other_providers_keep_thinking() {
        let msgs = vec![thinking_assistant("anthropic")];
        let out = unshare(&normalize_messages_for_provider(
            arcs(msgs.clone()),
            &Model::new("anthropic", "x", "m"),
        ));
        assert_eq!(out, msgs);
        let no_thinking = vec![Message::User(UserMessage::new("q"))];
        let out = unshare(&normalize_messages_for_provider(
            arcs(no_thinking.clone()),
            &Model::new("cerebras", "x", "m"),
        ));
        assert_eq!(out, no_thinking);
    }
}
