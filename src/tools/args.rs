//! Reading tool arguments with errors the model can act on.
//!
//! The loop has already checked the arguments against each tool's JSON schema (and repaired the
//! usual mistakes), but a host may call a tool directly or with lenient validation, so every
//! accessor still checks its type and says which argument was wrong.

use serde_json::Value;

use crate::agent::protocol::tool::ToolError;

/// A view of one call's argument object.
pub(crate) struct Args<'a> {
    tool: &'static str,
    value: &'a Value,
}

impl<'a> Args<'a> {
    pub(crate) fn new(tool: &'static str, value: &'a Value) -> Result<Self, ToolError> {
        if !value.is_object() {
            return Err(ToolError::new(format!(
                "{tool}: the arguments must be a JSON object, got {}.",
                kind(value)
            )));
        }
        Ok(Args { tool, value })
    }

    /// The value of `key`, treating `null` as absent.
    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        self.value.get(key).filter(|v| !v.is_null())
    }

    pub(crate) fn required_str(&self, key: &str) -> Result<&'a str, ToolError> {
        match self.get(key) {
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(self.wrong(key, "a string", other)),
            None => Err(ToolError::new(format!(
                "{}: the `{key}` argument is required.",
                self.tool
            ))),
        }
    }

    pub(crate) fn opt_str(&self, key: &str) -> Result<Option<&'a str>, ToolError> {
        match self.get(key) {
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.wrong(key, "a string", other)),
            None => Ok(None),
        }
    }

    pub(crate) fn opt_bool(&self, key: &str) -> Result<Option<bool>, ToolError> {
        match self.get(key) {
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.wrong(key, "true or false", other)),
            None => Ok(None),
        }
    }

    /// A whole number `>= min`.
    pub(crate) fn opt_count(&self, key: &str, min: u64) -> Result<Option<u64>, ToolError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let n = match v {
            Value::Number(n) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                    .map(|f| f as u64)
            }),
            _ => None,
        };
        match n {
            Some(n) if n >= min => Ok(Some(n)),
            _ => Err(ToolError::new(format!(
                "{}: `{key}` must be a whole number of at least {min}, got {v}.",
                self.tool
            ))),
        }
    }

    /// A result limit: a whole number `>= 1`, `default` when absent.
    pub(crate) fn limit(&self, key: &str, default: usize) -> Result<usize, ToolError> {
        Ok(self
            .opt_count(key, 1)?
            .map_or(default, |n| usize::try_from(n).unwrap_or(usize::MAX)))
    }

    /// A finite number `> 0`.
    pub(crate) fn opt_positive(&self, key: &str) -> Result<Option<f64>, ToolError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        match v.as_f64() {
            Some(f) if f.is_finite() && f > 0.0 => Ok(Some(f)),
            _ => Err(ToolError::new(format!(
                "{}: `{key}` must be a positive number, got {v}.",
                self.tool
            ))),
        }
    }

    fn wrong(&self, key: &str, wanted: &str, got: &Value) -> ToolError {
        ToolError::new(format!(
            "{}: `{key}` must be {wanted}, got {}.",
            self.tool,
            kind(got)
        ))
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accessors_check_types() {
        let v = json!({"path": "a", "n": 5, "f": 2.0, "b": true, "z": null, "neg": -1});
        let a = Args::new("t", &v).unwrap();
        assert_eq!(a.required_str("path").unwrap(), "a");
        assert!(
            a.required_str("missing")
                .unwrap_err()
                .0
                .contains("required")
        );
        assert!(
            a.required_str("n")
                .unwrap_err()
                .0
                .contains("must be a string")
        );
        assert_eq!(a.opt_count("n", 1).unwrap(), Some(5));
        assert_eq!(a.opt_count("f", 1).unwrap(), Some(2));
        assert_eq!(a.opt_count("z", 1).unwrap(), None);
        assert!(a.opt_count("neg", 0).is_err());
        assert!(a.opt_count("n", 6).is_err());
        assert_eq!(a.opt_bool("b").unwrap(), Some(true));
        assert_eq!(a.opt_positive("f").unwrap(), Some(2.0));
        assert!(a.opt_positive("neg").is_err());
        assert!(Args::new("t", &json!([1])).is_err());
    }
}
