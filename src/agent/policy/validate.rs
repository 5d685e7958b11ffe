//! Checks a tool call's arguments against the tool's JSON schema before the tool runs.
//!
//! Models get arguments subtly wrong in a handful of recurring ways: an array sent as a JSON
//! string, `"true"` for `true`, `"5"` for `5`, `null` for an optional field they meant to leave
//! out, an enum value with a stray space, a key with trailing whitespace, or the whole argument
//! object double-encoded as a string; keys sent JSON-encoded, nested values sent as flattened
//! paths (`edits[0].oldText`), arguments spilled into a string after a stray `</arg_value>` tag,
//! or a tool's one string argument under another name. When the arguments as given fail the schema,
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

use crate::agent::protocol::tool::RegisteredTool;

pub use crate::agent::protocol::types::{PARSE_ERROR_KEY, RAW_JSON_KEY};

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
    let schema = tool.tool.parameters();
    let healed = spilled_arguments(schema, args);
    let args = healed.as_ref().unwrap_or(args);
    if validator.is_valid(args) {
        return Ok(args.clone());
    }
    let mut current = decode_non_object(args).unwrap_or_else(|| args.clone());
    if let Some(reshaped) = reshape(schema, &current) {
        current = reshaped;
    }
    for _ in 0..MAX_REPAIR_PASSES {
        if validator.is_valid(&current) {
            return Ok(current);
        }
        let rejected = rejected_properties(&validator, &current);
        let repaired = repair_pass(schema, &current, &rejected)
            .or_else(|| repair_nested(schema, &validator, &current));
        match repaired {
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

/// Closing tag of an XML-style argument some models leak into a JSON string value.
const ARG_VALUE_CLOSE: &str = "</arg_value>";

/// Structural repairs on the argument object, before any value is looked at: keys sent
/// JSON-encoded (`"\"path\""`), nested values sent as flattened paths (`"edits[0].oldText"`),
/// other arguments spilled into a string after a stray `</arg_value>` tag, and the one string
/// argument a tool needs sent under another name. Each applies only where the schema shows what
/// was meant; `None` when nothing changed.
fn reshape(schema: &Value, args: &Value) -> Option<Value> {
    let map = args.as_object()?;
    let props = schema.get("properties").and_then(Value::as_object)?;
    let known = |k: &str| props.contains_key(k);
    let mut out = Map::new();
    let mut changed = false;
    let mut flattened: Vec<(String, Value)> = Vec::new();
    for (key, value) in map {
        if known(key) {
            out.insert(key.clone(), value.clone());
            continue;
        }
        if let Ok(decoded) = serde_json::from_str::<String>(key.trim())
            && known(&decoded)
            && !map.contains_key(&decoded)
        {
            out.insert(decoded, value.clone());
            changed = true;
            continue;
        }
        if let Some(root) = path_root(key)
            && known(root)
            && !map.contains_key(root)
        {
            flattened.push((key.clone(), value.clone()));
            changed = true;
            continue;
        }
        out.insert(key.clone(), value.clone());
    }
    for (path, value) in flattened {
        if !insert_path(&mut out, &path, value.clone()) {
            out.insert(path, value);
        }
    }
    if let Some((healed, _)) = heal_spill(&out, props) {
        out = healed;
        changed = true;
    }
    changed |= rename_single_string(&mut out, schema, props);
    changed.then_some(Value::Object(out))
}

/// The property name a flattened path starts with (`edits` in `edits[0].oldText`), if `key`
/// is a path at all.
fn path_root(key: &str) -> Option<&str> {
    let end = key.find(['.', '['])?;
    (end > 0).then(|| &key[..end])
}

/// One step of a flattened path.
enum Step {
    Field(String),
    Index(usize),
}

fn parse_path(path: &str) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    let mut rest = path;
    let first_end = rest.find(['.', '[']).unwrap_or(rest.len());
    steps.push(Step::Field(rest[..first_end].to_string()));
    rest = &rest[first_end..];
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end == 0 {
                return None;
            }
            steps.push(Step::Field(r[..end].to_string()));
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let close = r.find(']')?;
            let index: usize = r[..close].trim().parse().ok()?;
            if index > 1000 {
                return None; // not a real list position; leave the key alone
            }
            steps.push(Step::Index(index));
            rest = &r[close + 1..];
        } else {
            return None;
        }
    }
    Some(steps)
}

/// Put `value` at `path` inside `root`, creating objects and arrays on the way; `false` if the
/// path does not parse or runs into a value of another shape.
fn insert_path(root: &mut Map<String, Value>, path: &str, value: Value) -> bool {
    let Some(steps) = parse_path(path) else {
        return false;
    };
    let Some((Step::Field(first), rest)) = steps.split_first() else {
        return false;
    };
    let mut slot = root.entry(first.clone()).or_insert(Value::Null);
    for step in rest {
        slot = match step {
            Step::Field(name) => {
                if slot.is_null() {
                    *slot = Value::Object(Map::new());
                }
                match slot {
                    Value::Object(m) => m.entry(name.clone()).or_insert(Value::Null),
                    _ => return false,
                }
            }
            Step::Index(i) => {
                if slot.is_null() {
                    *slot = Value::Array(Vec::new());
                }
                match slot {
                    Value::Array(items) => {
                        if items.len() <= *i {
                            items.resize(*i + 1, Value::Null);
                        }
                        &mut items[*i]
                    }
                    _ => return false,
                }
            }
        };
    }
    if !slot.is_null() {
        return false;
    }
    *slot = value;
    true
}

/// A string value that runs past a stray `</arg_value>` carries the arguments that followed it
/// in the model's XML-style call (`<arg_key>k</arg_key><arg_value>v</arg_value>`): cut each such
/// value at the tag and recover those arguments where they are declared and missing. `None` when
/// no value has the tag; otherwise the healed arguments and how many were recovered.
fn heal_spill(
    args: &Map<String, Value>,
    props: &Map<String, Value>,
) -> Option<(Map<String, Value>, usize)> {
    if !args
        .values()
        .any(|v| v.as_str().is_some_and(|s| s.contains(ARG_VALUE_CLOSE)))
    {
        return None;
    }
    let mut out = args.clone();
    let mut found: Vec<(String, String)> = Vec::new();
    for value in out.values_mut() {
        let Value::String(s) = value else {
            continue;
        };
        let Some(at) = s.find(ARG_VALUE_CLOSE) else {
            continue;
        };
        let tail = s[at + ARG_VALUE_CLOSE.len()..].to_string();
        s.truncate(at);
        let mut rest = tail.as_str();
        while let Some(k0) = rest.find("<arg_key>") {
            let after_key = &rest[k0 + "<arg_key>".len()..];
            let Some(k1) = after_key.find("</arg_key>") else {
                break;
            };
            let key = after_key[..k1].trim().to_string();
            let after = &after_key[k1 + "</arg_key>".len()..];
            let Some(v0) = after.find("<arg_value>") else {
                break;
            };
            let body = &after[v0 + "<arg_value>".len()..];
            let v1 = body.find(ARG_VALUE_CLOSE).unwrap_or(body.len());
            found.push((key, body[..v1].to_string()));
            rest = body.get(v1 + ARG_VALUE_CLOSE.len()..).unwrap_or("");
        }
    }
    let mut recovered = 0;
    for (key, text) in found {
        if props.contains_key(&key) && !out.contains_key(&key) {
            // The recovered text is typed by the schema in the value repairs that follow.
            out.insert(key, Value::String(text));
            recovered += 1;
        }
    }
    Some((out, recovered))
}

/// Before validation: heal a spill only when it clearly is one (it carries at least one declared,
/// missing argument), so a value that merely mentions the tag is left alone.
fn spilled_arguments(schema: &Value, args: &Value) -> Option<Value> {
    let map = args.as_object()?;
    let props = schema.get("properties").and_then(Value::as_object)?;
    let (healed, recovered) = heal_spill(map, props)?;
    (recovered > 0).then_some(Value::Object(healed))
}

/// Value repairs below the top level: each issue's path is followed through the schema
/// (`properties`, `items`) to the property's own schema, and the value there is repaired as a
/// top-level one would be. `None` when nothing changed.
fn repair_nested(schema: &Value, validator: &jsonschema::Validator, args: &Value) -> Option<Value> {
    let mut out = args.clone();
    let mut changed = false;
    let paths: BTreeSet<String> = validator
        .iter_errors(args)
        .map(|e| e.instance_path().as_str().to_string())
        .filter(|p| p.matches('/').count() >= 2)
        .collect();
    for path in paths {
        let segments: Vec<String> = path
            .trim_start_matches('/')
            .split('/')
            .map(unescape_pointer_segment)
            .collect();
        let Some((last, parents)) = segments.split_last() else {
            continue;
        };
        // The schema of the object holding the value: `items` for list positions,
        // `properties` for fields.
        let Some(parent_schema) = parents
            .iter()
            .try_fold(schema, |s, seg| match s.get("items") {
                Some(items) if seg.parse::<usize>().is_ok() => Some(items),
                _ => s.get("properties").and_then(|p| p.get(seg)),
            })
        else {
            continue;
        };
        let Some(prop) = parent_schema.get("properties").and_then(|p| p.get(last)) else {
            continue;
        };
        let required = required_names(parent_schema).any(|r| r == last);
        let Some(value) = out.pointer(&path) else {
            continue;
        };
        match repair_value(prop, value, required) {
            Fix::Keep => {}
            Fix::Replace(v) => {
                if let Some(slot) = out.pointer_mut(&path) {
                    *slot = v;
                    changed = true;
                }
            }
            Fix::Remove => {
                let parent_path = &path[..path.rfind('/').unwrap_or(0)];
                if let Some(Value::Object(m)) = out.pointer_mut(parent_path) {
                    m.remove(last.as_str());
                    changed = true;
                }
            }
        }
    }
    changed.then_some(out)
}

/// A tool whose only required argument is a string, called with that argument missing and
/// exactly one unknown string argument instead (`{"cmd": "ls"}` for `command`): rename it.
fn rename_single_string(
    args: &mut Map<String, Value>,
    schema: &Value,
    props: &Map<String, Value>,
) -> bool {
    let required: Vec<&str> = required_names(schema).collect();
    let [wanted] = required.as_slice() else {
        return false;
    };
    let is_string = props
        .get(*wanted)
        .is_some_and(|p| declared_types(p).contains(&"string"));
    if !is_string || args.contains_key(*wanted) {
        return false;
    }
    let unknown: Vec<&String> = args.keys().filter(|k| !props.contains_key(*k)).collect();
    let [only] = unknown.as_slice() else {
        return false;
    };
    if !args.get(*only).is_some_and(Value::is_string) {
        return false;
    }
    let key = (*only).clone();
    if let Some(v) = args.remove(&key) {
        args.insert((*wanted).to_string(), v);
    }
    true
}

/// The names an object schema lists under `required`.
fn required_names(schema: &Value) -> impl Iterator<Item = &str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
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
    let required: BTreeSet<&str> = required_names(schema).collect();
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
    use crate::agent::protocol::tool::{AgentTool, ToolError, ToolInvocation, ToolOutput};

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
    fn json_encoded_keys_are_decoded() {
        let t = full_tool();
        let args = json!({"\"path\"": "a.txt", "\"limit\"": 2});
        assert_eq!(
            validate_arguments(&t, &args),
            Ok(json!({"path": "a.txt", "limit": 2}))
        );
    }

    fn edit_tool() -> RegisteredTool {
        tool(json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "edits": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
                    "required": ["oldText", "newText"]
                }},
                "opts": {"type": "object", "properties": {"depth": {"type": "integer"}}}
            },
            "required": ["path", "edits"],
            "additionalProperties": false
        }))
    }

    #[test]
    fn flattened_paths_are_rebuilt() {
        let t = edit_tool();
        let args = json!({
            "path": "a.rs",
            "edits[0].oldText": "x",
            "edits[0].newText": "y",
            "edits[1].oldText": "p",
            "edits[1].newText": "q",
            "opts.depth": "3"
        });
        assert_eq!(
            validate_arguments(&t, &args),
            Ok(json!({
                "path": "a.rs",
                "edits": [{"oldText": "x", "newText": "y"}, {"oldText": "p", "newText": "q"}],
                "opts": {"depth": 3}
            }))
        );
    }

    #[test]
    fn flattened_paths_do_not_override_a_real_value() {
        let t = edit_tool();
        // `edits` is given, so `edits[0].oldText` is an unknown key and stays one: the call fails.
        let args = json!({"path": "a", "edits": [], "edits[0].oldText": "x"});
        let err = validate_arguments(&t, &args).unwrap_err();
        assert!(err.contains("edits[0].oldText"), "{err}");
    }

    #[test]
    fn arguments_spilled_after_arg_value_are_recovered() {
        let t = full_tool();
        let args = json!({
            "path": "src/a.rs</arg_value>\n<arg_key>limit</arg_key>\n<arg_value>40</arg_value>"
        });
        assert_eq!(
            validate_arguments(&t, &args),
            Ok(json!({"path": "src/a.rs", "limit": 40}))
        );
    }

    #[test]
    fn a_valid_value_containing_the_tag_is_left_alone() {
        let t = full_tool();
        let args = json!({"path": "notes about </arg_value> tags"});
        assert_eq!(validate_arguments(&t, &args), Ok(args.clone()));
    }

    #[test]
    fn the_one_string_argument_under_another_name_is_renamed() {
        let t = tool(json!({
            "type": "object",
            "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}},
            "required": ["command"],
            "additionalProperties": false
        }));
        assert_eq!(
            validate_arguments(&t, &json!({"cmd": "ls -la", "timeout": 5})),
            Ok(json!({"command": "ls -la", "timeout": 5}))
        );
        // Two unknown strings: which one was meant is not clear, so it fails.
        assert!(validate_arguments(&t, &json!({"cmd": "ls", "shell": "sh"})).is_err());
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
