//! Tool-argument validation against the tool's JSON schema. (stub: to be completed)

use serde_json::Value;

use super::tool::RegisteredTool;

/// Key a provider puts in the arguments when the model's JSON did not parse.
pub const PARSE_ERROR_KEY: &str = "__parseError";
/// Key holding the raw, unparsable JSON text.
pub const RAW_JSON_KEY: &str = "__rawJson";

/// Validate (and repair common model mistakes in) the arguments of a call.
pub fn validate_arguments(tool: &RegisteredTool, args: &Value) -> Result<Value, String> {
    let validator = tool.validator()?;
    if validator.is_valid(args) {
        Ok(args.clone())
    } else {
        Err(format!("invalid arguments for {}", tool.tool.name()))
    }
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
