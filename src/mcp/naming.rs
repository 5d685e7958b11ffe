//! Names and schemas of MCP tools as the model sees them.
//!
//! A tool `search` of server `docs` is offered as `mcp__docs__search`. Providers accept tool
//! names matching `^[a-zA-Z0-9_-]{1,64}$`, so every other character becomes `_`, and a name
//! longer than 64 characters keeps its first 55 and ends in `_` plus eight hex digits of a hash
//! of the untruncated name: the same server and tool always give the same name, and two long
//! names that share a start still differ. The `mcp__` prefix is how other parts of pi (the
//! approval layer, the UI) recognise a tool that came from an MCP server.
//!
//! Input schemas pass through as the server wrote them; an object schema without `type` gets
//! `"type": "object"` (providers insist). A schema our validator cannot compile (a remote `$ref`,
//! which is never fetched) has such references replaced by the empty schema, and the tool is
//! validated leniently.

use serde_json::{Map, Value};

/// What every MCP tool name starts with.
pub(crate) const PREFIX: &str = "mcp__";
/// The longest tool name providers accept.
pub(crate) const MAX_NAME: usize = 64;

/// Whether a tool name is one this module made (an MCP tool).
#[cfg(test)]
pub(crate) fn is_mcp_tool(name: &str) -> bool {
    name.starts_with(PREFIX)
}

fn clean(part: &str) -> String {
    part.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// 32-bit FNV-1a: small, stable across builds and platforms.
fn fnv1a(text: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in text.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// The name the model sees for `server`'s tool `tool`.
pub fn tool_name(server: &str, tool: &str) -> String {
    let full = format!("{PREFIX}{}__{}", clean(server), clean(tool));
    if full.len() <= MAX_NAME {
        return full;
    }
    let hash = fnv1a(&format!("{server}\u{0}{tool}"));
    // Every character is ASCII by now, so any byte index is a character boundary.
    format!("{}_{hash:08x}", &full[..MAX_NAME - 9])
}

/// `name` made unique among `taken` (a collision after cleaning gets `_2`, `_3`, … within the
/// length limit).
pub(crate) fn unique(name: String, taken: &[String]) -> String {
    if !taken.contains(&name) {
        return name;
    }
    for n in 2.. {
        let suffix = format!("_{n}");
        let keep = name.len().min(MAX_NAME - suffix.len());
        let candidate = format!("{}{suffix}", &name[..keep]);
        if !taken.contains(&candidate) {
            return candidate;
        }
    }
    name
}

/// The schema offered for a tool, and whether arguments are checked leniently (the schema could
/// not be compiled as it came).
pub(crate) fn prepare_schema(input: &Map<String, Value>) -> (Value, bool) {
    let mut schema = Value::Object(input.clone());
    if let Value::Object(o) = &mut schema
        && !o.contains_key("type")
        && !o.contains_key("$ref")
        && !o.contains_key("anyOf")
        && !o.contains_key("oneOf")
        && !o.contains_key("allOf")
    {
        o.insert("type".into(), Value::String("object".into()));
    }
    if compiles(&schema) {
        return (schema, false);
    }
    drop_remote_refs(&mut schema);
    (schema, true)
}

fn compiles(schema: &Value) -> bool {
    jsonschema::validator_for(schema).is_ok()
}

/// Replace every `$ref` that points outside the document with the empty (accept-all) schema.
fn drop_remote_refs(schema: &mut Value) {
    match schema {
        Value::Object(o) => {
            let remote = o
                .get("$ref")
                .and_then(Value::as_str)
                .is_some_and(|r| !r.starts_with('#'));
            if remote {
                o.remove("$ref");
            }
            for v in o.values_mut() {
                drop_remote_refs(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(drop_remote_refs),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn valid(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= MAX_NAME
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn names_are_prefixed_cleaned_and_truncated_deterministically() {
        assert_eq!(tool_name("docs", "search"), "mcp__docs__search");
        assert_eq!(
            tool_name("my docs", "get.page/v2"),
            "mcp__my_docs__get_page_v2"
        );
        assert_eq!(tool_name("ü", "a-b"), "mcp_____a-b");
        let long = "x".repeat(100);
        let a = tool_name("server", &long);
        assert!(valid(&a) && a.len() == MAX_NAME, "{a}");
        assert_eq!(a, tool_name("server", &long), "stable");
        let b = tool_name("server", &format!("{long}y"));
        assert_ne!(a, b, "long names that share a start still differ");
        assert_eq!(a[..55], b[..55]);
        assert!(is_mcp_tool(&a) && !is_mcp_tool("bash"));
        for (s, t) in [("a", ""), ("日本語", "ツール"), ("s", &"é".repeat(80))] {
            assert!(valid(&tool_name(s, t)), "{s} {t}");
        }
    }

    #[test]
    fn collisions_get_a_numbered_suffix_within_the_limit() {
        let taken = vec!["mcp__a__b".to_string(), "mcp__a__b_2".to_string()];
        assert_eq!(unique("mcp__a__b".into(), &taken), "mcp__a__b_3");
        assert_eq!(unique("mcp__a__c".into(), &taken), "mcp__a__c");
        let long = "m".repeat(64);
        let u = unique(long.clone(), &[long]);
        assert!(u.len() <= MAX_NAME && u.ends_with("_2"));
    }

    #[test]
    fn schemas_pass_through_and_remote_refs_fall_back_to_lenient() {
        let draft7 = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"q": {"type": "string"}},
            "required": ["q"],
            "additionalProperties": false
        });
        let (s, lenient) = prepare_schema(draft7.as_object().unwrap());
        assert_eq!(s, draft7);
        assert!(!lenient);
        let v = jsonschema::validator_for(&s).unwrap();
        assert!(v.is_valid(&json!({"q": "x"})) && !v.is_valid(&json!({})));

        let (s, lenient) = prepare_schema(json!({"properties": {}}).as_object().unwrap());
        assert_eq!(s["type"], "object");
        assert!(!lenient);

        let remote = json!({
            "type": "object",
            "properties": {"cfg": {"$ref": "https://example.invalid/schema.json"}, "n": {"type": "integer"}}
        });
        let (s, lenient) = prepare_schema(remote.as_object().unwrap());
        assert!(lenient);
        assert_eq!(s["properties"]["cfg"], json!({}));
        assert_eq!(s["properties"]["n"]["type"], "integer");
        assert!(jsonschema::validator_for(&s).is_ok());
    }
}
