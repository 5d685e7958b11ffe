//! Checks a tool call's arguments against the tool's JSON schema before the tool runs.
//!
//! Models get arguments subtly wrong in a handful of recurring ways: an array sent as a JSON
//! string, `"true"` for `true`, `"5"` for `5`, `null` for an optional field they meant to leave
//! out, an enum value with a stray space, a key with trailing whitespace, or the whole argument
//! object double-encoded as a string. When the arguments as given fail the schema,
//! [`validate_arguments`] repairs those mistakes, guided by the schema's top-level `properties`
//! and by which properties the validator actually rejected, and validates again (a few passes at
//! most). Arguments that pass as given are returned untouched.
//!
//! Failures come back as a message written for the model: which tool, each issue with its JSON
//! path, and the arguments it sent (long strings shortened) so it can correct the call.
//! Arguments a provider could not parse at all carry the [`PARSE_ERROR_KEY`] sentinel and fail
//! with the parse error and a bounded excerpt of the raw text.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::tool::RegisteredTool;

/// Key a provider puts in the arguments when the model's JSON did not parse.
pub const PARSE_ERROR_KEY: &str = "__parseError";
/// Key holding the raw, unparsable JSON text.
pub const RAW_JSON_KEY: &str = "__rawJson";

/// How many repair-and-revalidate rounds are tried before giving up.
pub const MAX_REPAIR_PASSES: usize = 5;
/// How much of unparsable raw JSON a parse-error message quotes.
pub const RAW_JSON_PREVIEW_CHARS: usize = 512;
/// How long a string value may be when arguments are echoed in a failure message.
pub const ARG_STRING_PREVIEW_CHARS: usize = 256;
/// At most this many schema issues are listed.
const MAX_LISTED_ISSUES: usize = 20;
/// An issue message longer than this is shortened (they can quote the offending value).
const MAX_ISSUE_CHARS: usize = 300;

/// Validate (and repair common model mistakes in) the arguments of a call.
pub fn validate_arguments(tool: &RegisteredTool, args: &Value) -> Result<Value, String> {
    let name = tool.tool.name();
    if let Some(parse_error) = args.get(PARSE_ERROR_KEY) {
        return Err(parse_error_message(
            name,
            parse_error,
            args.get(RAW_JSON_KEY),
        ));
    }
    let validator = tool.validator()?;
    if validator.is_valid(args) {
        return Ok(args.clone());
    }
    let schema = tool.tool.parameters();
    let mut current = decode_non_object(args).unwrap_or_else(|| args.clone());
    for _ in 0..MAX_REPAIR_PASSES {
        if validator.is_valid(&current) {
            return Ok(current);
        }
        let rejected = rejected_properties(&validator, &current);
        match repair_pass(schema, &current, &rejected) {
            Some(next) => current = next,
            None => break,
        }
    }
    if validator.is_valid(&current) {
        return Ok(current);
    }
    Err(failure_message(
        name,
        &validator,
        &current,
        &current != args,
    ))
}

/// The arguments without the parse sentinels' raw text (kept for events and lenient tools).
pub fn strip_sentinels(args: &Value) -> Value {
    match args {
        Value::Object(map) if map.contains_key(PARSE_ERROR_KEY) => {
            let mut out = serde_json::Map::new();
            if let Some(e) = map.get(PARSE_ERROR_KEY) {
                out.insert(PARSE_ERROR_KEY.to_string(), e.clone());
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// The first `max` characters of `s`, with a note of how many were cut.
fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((cut, _)) => {
            let rest = s.get(cut..).map_or(0, |r| r.chars().count());
            format!("{}… [{rest} more chars]", s.get(..cut).unwrap_or_default())
        }
    }
}

fn value_as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn parse_error_message(name: &str, parse_error: &Value, raw: Option<&Value>) -> String {
    let mut msg = format!(
        "Invalid arguments for tool \"{name}\": the arguments are not valid JSON.\nParse error: {}",
        value_as_text(parse_error)
    );
    if let Some(raw) = raw {
        msg.push_str("\nRaw arguments: ");
        msg.push_str(&truncate_chars(&value_as_text(raw), RAW_JSON_PREVIEW_CHARS));
    }
    msg.push_str("\nSend the call again with the arguments as one well-formed JSON object.");
    msg
}

/// Arguments that are not an object but stand for one: a JSON string holding an object, or
/// `null` for a call with no arguments.
fn decode_non_object(args: &Value) -> Option<Value> {
    match args {
        Value::String(s) => match serde_json::from_str::<Value>(s.trim()) {
            Ok(v @ Value::Object(_)) => Some(v),
            _ => None,
        },
        Value::Null => Some(Value::Object(Map::new())),
        _ => None,
    }
}

/// Reverses the escaping of one JSON-pointer segment.
fn unescape_pointer_segment(seg: &str) -> String {
    seg.replace("~1", "/").replace("~0", "~")
}

/// Top-level properties the validator complained about.
fn rejected_properties(validator: &jsonschema::Validator, args: &Value) -> BTreeSet<String> {
    validator
        .iter_errors(args)
        .filter_map(|e| {
            let path = e.instance_path().as_str();
            let first = path.strip_prefix('/')?.split('/').next()?;
            Some(unescape_pointer_segment(first))
        })
        .collect()
}

/// The JSON types a property schema accepts (from `type` and `anyOf`/`oneOf` members).
fn declared_types(prop: &Value) -> Vec<&str> {
    fn push_types<'a>(schema: &'a Value, out: &mut Vec<&'a str>) {
        match schema.get("type") {
            Some(Value::String(t)) => out.push(t),
            Some(Value::Array(ts)) => out.extend(ts.iter().filter_map(Value::as_str)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    push_types(prop, &mut out);
    for key in ["anyOf", "oneOf"] {
        if let Some(members) = prop.get(key).and_then(Value::as_array) {
            for m in members {
                push_types(m, &mut out);
            }
        }
    }
    out
}

/// What one repair does to one property.
enum Fix {
    Keep,
    Remove,
    Replace(Value),
}

/// A repaired value for a rejected property, judged by its schema.
fn repair_value(prop: &Value, value: &Value, required: bool) -> Fix {
    let types = declared_types(prop);
    let wants = |t: &str| types.contains(&t);
    let null_string = value.as_str().is_some_and(|s| s.trim() == "null");
    if value.is_null() || null_string {
        if wants("null") {
            return if null_string {
                Fix::Replace(Value::Null)
            } else {
                Fix::Keep
            };
        }
        if !required {
            return Fix::Remove;
        }
    }
    let Value::String(s) = value else {
        return Fix::Keep;
    };
    let t = s.trim();
    if let Some(allowed) = prop.get("enum").and_then(Value::as_array)
        && t.len() != s.len()
        && allowed.iter().any(|e| e.as_str() == Some(t))
    {
        return Fix::Replace(Value::String(t.to_string()));
    }
    if (wants("array") || wants("object"))
        && let Ok(parsed) = serde_json::from_str::<Value>(t)
        && ((parsed.is_array() && wants("array")) || (parsed.is_object() && wants("object")))
    {
        return Fix::Replace(parsed);
    }
    if wants("boolean") {
        if t.eq_ignore_ascii_case("true") {
            return Fix::Replace(Value::Bool(true));
        }
        if t.eq_ignore_ascii_case("false") {
            return Fix::Replace(Value::Bool(false));
        }
    }
    if wants("integer") || wants("number") {
        if let Ok(i) = t.parse::<i64>() {
            return Fix::Replace(Value::from(i));
        }
        if let Ok(u) = t.parse::<u64>() {
            return Fix::Replace(Value::from(u));
        }
        if let Ok(f) = t.parse::<f64>() {
            let whole = f.fract() == 0.0 && f.abs() < 9.0e15;
            if f.is_finite() && (wants("number") || whole) {
                let number = if whole && !wants("number") {
                    Value::from(f as i64)
                } else {
                    serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
                };
                if !number.is_null() {
                    return Fix::Replace(number);
                }
            }
        }
    }
    Fix::Keep
}

/// One round of repairs; `None` when nothing could be changed.
fn repair_pass(schema: &Value, args: &Value, rejected: &BTreeSet<String>) -> Option<Value> {
    let map = args.as_object()?;
    let props = schema.get("properties").and_then(Value::as_object)?;
    let required: BTreeSet<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Map::new();
    let mut changed = false;
    for (key, value) in map {
        let mut name = key.as_str();
        if !props.contains_key(key) {
            let trimmed = key.trim();
            if trimmed.len() != key.len()
                && props.contains_key(trimmed)
                && !map.contains_key(trimmed)
                && !out.contains_key(trimmed)
            {
                name = trimmed;
                changed = true;
            }
        }
        let fix = match props.get(name) {
            Some(prop) if rejected.contains(key) => {
                repair_value(prop, value, required.contains(name))
            }
            _ => Fix::Keep,
        };
        match fix {
            Fix::Keep => {
                out.insert(name.to_string(), value.clone());
            }
            Fix::Remove => changed = true,
            Fix::Replace(v) => {
                changed = true;
                out.insert(name.to_string(), v);
            }
        }
    }
    changed.then_some(Value::Object(out))
}

/// A copy of `v` with every string shortened for display.
fn cap_strings(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(truncate_chars(s, ARG_STRING_PREVIEW_CHARS)),
        Value::Array(items) => Value::Array(items.iter().map(cap_strings).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (truncate_chars(k, ARG_STRING_PREVIEW_CHARS), cap_strings(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn failure_message(
    name: &str,
    validator: &jsonschema::Validator,
    args: &Value,
    repaired: bool,
) -> String {
    let mut msg = format!("Invalid arguments for tool \"{name}\":");
    let mut count = 0usize;
    for error in validator.iter_errors(args) {
        count += 1;
        if count > MAX_LISTED_ISSUES {
            continue;
        }
        let path = error.instance_path().as_str();
        let path = if path.is_empty() { "(root)" } else { path };
        msg.push_str(&format!(
            "\n  - {path}: {}",
            truncate_chars(&error.to_string(), MAX_ISSUE_CHARS)
        ));
    }
    if count == 0 {
        msg.push_str("\n  - (root): the arguments do not match the tool's schema");
    } else if count > MAX_LISTED_ISSUES {
        msg.push_str(&format!(
            "\n  - … and {} more issue(s)",
            count - MAX_LISTED_ISSUES
        ));
    }
    msg.push_str(if repaired {
        "\nArguments received (after automatic repairs):\n"
    } else {
        "\nArguments received:\n"
    });
    let shown = cap_strings(args);
    msg.push_str(&serde_json::to_string_pretty(&shown).unwrap_or_else(|_| shown.to_string()));
    msg
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use async_trait::async_trait;
    use serde_json::json;

    use super::*;
    use crate::agent::tool::{AgentTool, ToolError, ToolInvocation, ToolOutput};

    struct SchemaTool {
        schema: Value,
    }

    #[async_trait]
    impl AgentTool for SchemaTool {
        fn name(&self) -> &str {
            "probe"
        }
        fn description(&self) -> &str {
            "test tool"
        }
        fn parameters(&self) -> &Value {
            &self.schema
        }
        async fn execute(&self, _call: ToolInvocation) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text("ok"))
        }
    }

    fn tool(schema: Value) -> RegisteredTool {
        RegisteredTool::new(Arc::new(SchemaTool { schema }))
    }

    fn full_tool() -> RegisteredTool {
        tool(json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "paths": {"type": "array", "items": {"type": "string"}},
                "opts": {"type": "object", "properties": {"depth": {"type": "integer"}}},
                "recursive": {"type": "boolean"},
                "limit": {"type": "integer"},
                "ratio": {"type": "number"},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "note": {"type": "string"},
                "maybe": {"type": ["string", "null"]}
            },
            "required": ["path"],
            "additionalProperties": false
        }))
    }

    #[test]
    fn valid_arguments_pass_unchanged() {
        let t = full_tool();
        let args = json!({"path": "a", "limit": 3, "mode": "fast", "maybe": null});
        assert_eq!(validate_arguments(&t, &args), Ok(args.clone()));
    }

    #[test]
    fn parse_error_names_tool_error_and_truncated_raw_json() {
        let t = full_tool();
        let raw = format!("{{\"path\": \"{}", "x".repeat(600));
        let total = raw.chars().count();
        let args = json!({PARSE_ERROR_KEY: "EOF while parsing a string", RAW_JSON_KEY: raw});
        let err = validate_arguments(&t, &args).unwrap_err();
        assert!(err.contains("\"probe\""), "{err}");
        assert!(err.contains("arguments are not valid JSON"), "{err}");
        assert!(err.contains("EOF while parsing a string"), "{err}");
        assert!(
            err.contains(&format!(
                "… [{} more chars]",
                total - RAW_JSON_PREVIEW_CHARS
            )),
            "{err}"
        );
        assert!(!err.contains(&"x".repeat(600)));
        assert!(err.contains(&"x".repeat(500)));
    }

    #[test]
    fn parse_error_with_short_raw_json_is_quoted_whole() {
        let t = full_tool();
        let args = json!({PARSE_ERROR_KEY: "bad", RAW_JSON_KEY: "{\"path\":"});
        let err = validate_arguments(&t, &args).unwrap_err();
        assert!(err.contains("Raw arguments: {\"path\":\n"), "{err}");
        assert!(!err.contains("more chars"));
    }

    #[test]
    fn json_string_arguments_are_decoded() {
        let t = full_tool();
        let args = json!("{\"path\": \"a\", \"limit\": 2}");
        assert_eq!(
            validate_arguments(&t, &args),
            Ok(json!({"path": "a", "limit": 2}))
        );
    }

    #[test]
    fn null_arguments_become_an_empty_object() {
        let t = tool(json!({"type": "object", "properties": {"q": {"type": "string"}}}));
        assert_eq!(validate_arguments(&t, &Value::Null), Ok(json!({})));
    }

    #[test]
    fn stringified_array_and_object_are_parsed() {
        let t = full_tool();
        let args = json!({"path": "a", "paths": "[\"x\", \"y\"]", "opts": " {\"depth\": 2} "});
        assert_eq!(
            validate_arguments(&t, &args),
            Ok(json!({"path": "a", "paths": ["x", "y"], "opts": {"depth": 2}}))
        );
    }

    #[test]
    fn boolean_strings_become_booleans() {
        let t = full_tool();
        assert_eq!(
            validate_arguments(&t, &json!({"path": "a", "recursive": "true"})),
            Ok(json!({"path": "a", "recursive": true}))
        );
        assert_eq!(
            validate_arguments(&t, &json!({"path": "a", "recursive": "False"})),
            Ok(json!({"path": "a", "recursive": false}))
        );
    }

    #[test]
    fn numeric_strings_become_numbers() {
        let t = full_tool();
        assert_eq!(
            validate_arguments(&t, &json!({"path": "a", "limit": " 42 ", "ratio": "0.5"})),
            Ok(json!({"path": "a", "limit": 42, "ratio": 0.5}))
        );
        assert_eq!(
            validate_arguments(&t, &json!({"path": "a", "limit": "7.0"})),
            Ok(json!({"path": "a", "limit": 7}))
        );
        assert!(validate_arguments(&t, &json!({"path": "a", "limit": "7.5"})).is_err());
        assert!(validate_arguments(&t, &json!({"path": "a", "limit": "many"})).is_err());
    }

    #[test]
    fn optional_nulls_are_removed() {
        let t = full_tool();
        assert_eq!(
            validate_arguments(
                &t,
                &json!({"path": "a", "limit": null, "recursive": "null"})
            ),
            Ok(json!({"path": "a"}))
        );
        // a "null" string where a string is allowed is a real value and stays
        assert_eq!(
            validate_arguments(&t, &json!({"path": "a", "limit": null, "note": "null"})),
            Ok(json!({"path": "a", "note": "null"}))
        );
        // a nullable property keeps its null
        assert_eq!(
            validate_arguments(&t, &json!({"path": "a", "maybe": null, "limit": null})),
            Ok(json!({"path": "a", "maybe": null}))
        );
    }

    #[test]
    fn a_null_string_that_is_valid_is_not_touched() {
        let t = full_tool();
        let args = json!({"path": "a", "note": "null"});
        assert_eq!(validate_arguments(&t, &args), Ok(args.clone()));
    }

    #[test]
    fn required_null_is_not_removed() {
        let t = full_tool();
        let err = validate_arguments(&t, &json!({"path": null})).unwrap_err();
        assert!(err.contains("/path"), "{err}");
    }

    #[test]
    fn enum_whitespace_is_trimmed() {
        let t = full_tool();
        assert_eq!(
            validate_arguments(&t, &json!({"path": "a", "mode": " slow\n"})),
            Ok(json!({"path": "a", "mode": "slow"}))
        );
    }

    #[test]
    fn key_whitespace_is_trimmed() {
        let t = full_tool();
        assert_eq!(
            validate_arguments(&t, &json!({"path ": "a", "limit\t": "3"})),
            Ok(json!({"path": "a", "limit": 3}))
        );
    }

    #[test]
    fn repairs_apply_only_to_rejected_properties() {
        let t = tool(json!({
            "type": "object",
            "properties": {
                "text": {"type": ["string", "array"]},
                "n": {"type": "integer"}
            }
        }));
        // `text` is a valid string that happens to look like an array: kept as a string
        assert_eq!(
            validate_arguments(&t, &json!({"text": "[1]", "n": "2"})),
            Ok(json!({"text": "[1]", "n": 2}))
        );
    }

    #[test]
    fn real_failure_lists_path_and_arguments() {
        let t = full_tool();
        let long = "z".repeat(400);
        let args = json!({"path": 5, "note": long, "extra": true});
        let err = validate_arguments(&t, &args).unwrap_err();
        assert!(
            err.starts_with("Invalid arguments for tool \"probe\":"),
            "{err}"
        );
        assert!(err.contains("/path:"), "{err}");
        assert!(err.contains("(root):"), "{err}");
        assert!(err.contains("Arguments received:"), "{err}");
        assert!(err.contains("[144 more chars]"), "{err}");
        assert!(!err.contains(&"z".repeat(300)), "{err}");
    }

    #[test]
    fn failure_after_repairs_says_so() {
        let t = full_tool();
        let err = validate_arguments(&t, &json!({"path": 1, "limit": "3"})).unwrap_err();
        assert!(err.contains("after automatic repairs"), "{err}");
        assert!(err.contains("\"limit\": 3"), "{err}");
    }

    #[test]
    fn missing_required_property_fails() {
        let t = full_tool();
        let err = validate_arguments(&t, &json!({})).unwrap_err();
        assert!(err.contains("path"), "{err}");
    }

    #[test]
    fn broken_schema_is_an_error_not_a_panic() {
        let t = tool(json!({"type": 12}));
        assert!(validate_arguments(&t, &json!({})).is_err());
    }

    #[test]
    fn strip_sentinels_keeps_only_the_parse_error() {
        let args = json!({PARSE_ERROR_KEY: "bad", RAW_JSON_KEY: "{", "path": "a"});
        assert_eq!(strip_sentinels(&args), json!({PARSE_ERROR_KEY: "bad"}));
        let fine = json!({"path": "a"});
        assert_eq!(strip_sentinels(&fine), fine);
    }

    #[test]
    fn truncation_counts_characters_not_bytes() {
        let s = "é".repeat(10);
        assert_eq!(
            truncate_chars(&s, 4),
            format!("{}… [6 more chars]", "é".repeat(4))
        );
        assert_eq!(truncate_chars("abc", 3), "abc");
    }
}
