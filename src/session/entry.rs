//! The lines of a session file: the header and the typed entries, read and written in the
//! JSONL v3 format of the Node.js `pi`.
//!
//! A file is one [`SessionHeader`] line followed by [`SessionEntry`] lines. Every entry has
//! `type`, an 8-hex `id`, `parentId` (null for the first) and an ISO `timestamp`, then the
//! fields of its kind ([`EntryKind`]). Entries of a type this version does not know are kept as
//! [`EntryKind::Unknown`] with all their fields, so they survive a fork and never stop a load.
//!
//! Writing puts the keys in the order the Node.js `pi` uses (`type`, `id`, `parentId`,
//! `timestamp`, then the kind's fields) and leaves out absent optional fields, as
//! `JSON.stringify` does with `undefined`. Reading goes through [`parse_line`], which decodes
//! the common fields and the message without building a JSON tree first.

use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::fast_message::{FastMessage, Tag, read_user_content};
use super::time::iso_from_ms;
use crate::agent::protocol::types::{AgentMessage, UserContent};

/// The format version this crate writes.
pub const CURRENT_VERSION: u32 = 3;

/// Line 1 of a session file. Not part of the entry tree.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionHeader {
    /// 1 when the file has no `version` (the oldest format).
    pub version: u32,
    /// The session id (a UUID; v7 for sessions this crate creates).
    pub id: String,
    pub timestamp: String,
    /// The working directory the session was started in (empty if unknown).
    pub cwd: String,
    /// For forks: the path of the session file this one was copied from.
    pub parent_session: Option<String>,
    /// Fields other programs added (omp writes `title`, ...), kept for round trips.
    pub extra: Map<String, Value>,
}

impl SessionHeader {
    /// A version-3 header stamped with `timestamp`.
    pub fn new(id: String, timestamp: String, cwd: String, parent_session: Option<String>) -> Self {
        SessionHeader {
            version: CURRENT_VERSION,
            id,
            timestamp,
            cwd,
            parent_session,
            extra: Map::new(),
        }
    }

    /// The header as one JSON line (no newline).
    pub fn to_line(&self) -> String {
        // Serializing maps of strings and JSON values cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    fn from_map(mut m: Map<String, Value>) -> Option<Self> {
        let id = match m.shift_remove("id") {
            Some(Value::String(s)) => s,
            _ => return None,
        };
        let version = m
            .remove("version")
            .and_then(|v| v.as_u64())
            .map_or(1, |v| v.min(u64::from(u32::MAX)) as u32);
        let timestamp = match m.shift_remove("timestamp") {
            Some(Value::String(s)) => s,
            Some(Value::Number(n)) => n.as_i64().map(iso_from_ms).unwrap_or_default(),
            _ => String::new(),
        };
        let cwd = match m.shift_remove("cwd") {
            Some(Value::String(s)) => s,
            _ => String::new(),
        };
        let parent_session = match m.shift_remove("parentSession") {
            Some(Value::String(s)) => Some(s),
            _ => None,
        };
        m.shift_remove("type");
        Some(SessionHeader {
            version,
            id,
            timestamp,
            cwd,
            parent_session,
            extra: m,
        })
    }
}

impl Serialize for SessionHeader {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("type", "session")?;
        map.serialize_entry("version", &self.version)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("timestamp", &self.timestamp)?;
        map.serialize_entry("cwd", &self.cwd)?;
        if let Some(p) = &self.parent_session {
            map.serialize_entry("parentSession", p)?;
        }
        for (k, v) in &self.extra {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// A `compaction` entry: everything before `first_kept_entry_id` is replaced by `summary`.
#[derive(Clone, Debug, PartialEq)]
pub struct Compaction {
    pub summary: String,
    pub first_kept_entry_id: String,
    pub tokens_before: u64,
    /// e.g. `{"readFiles": [...], "modifiedFiles": [...]}`.
    pub details: Option<Value>,
    pub from_hook: Option<bool>,
}

/// A `branch_summary` entry: what happened on a branch that was left, attached where the
/// conversation went on.
#[derive(Clone, Debug, PartialEq)]
pub struct BranchSummary {
    pub from_id: String,
    pub summary: String,
    pub details: Option<Value>,
    pub from_hook: Option<bool>,
}

/// A `custom_message` entry: extension content that is sent to the model.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomMessageEntry {
    pub custom_type: String,
    pub content: UserContent,
    pub display: bool,
    pub details: Option<Value>,
}

/// What an entry records.
#[derive(Clone, Debug, PartialEq)]
pub enum EntryKind {
    /// `message`: a conversation message.
    Message(AgentMessage),
    /// `model_change`: the model in use from here on.
    ModelChange { provider: String, model_id: String },
    /// `thinking_level_change`: the thinking level from here on (`off`, `low`, ...).
    ThinkingLevelChange { thinking_level: String },
    /// `compaction`. (This and the other large, rare kinds are boxed: an entry stays small,
    /// and a long session holds tens of thousands of entries, several times over while it
    /// loads.)
    Compaction(Box<Compaction>),
    /// `branch_summary`.
    BranchSummary(Box<BranchSummary>),
    /// `custom`: extension state, never sent to the model.
    Custom {
        custom_type: String,
        data: Option<Box<Value>>,
    },
    /// `custom_message`.
    CustomMessage(Box<CustomMessageEntry>),
    /// `label`: a bookmark on `target_id`; `None` clears it.
    Label {
        target_id: String,
        label: Option<String>,
    },
    /// `session_info`: the session's display name; the latest wins.
    SessionInfo { name: Option<String> },
    /// Any other type (or a known type whose fields did not make sense), kept as found.
    Unknown {
        entry_type: String,
        fields: Box<Map<String, Value>>,
    },
}

impl EntryKind {
    /// The entry's `type` string.
    pub fn type_name(&self) -> &str {
        match self {
            EntryKind::Message(_) => "message",
            EntryKind::ModelChange { .. } => "model_change",
            EntryKind::ThinkingLevelChange { .. } => "thinking_level_change",
            EntryKind::Compaction(_) => "compaction",
            EntryKind::BranchSummary(_) => "branch_summary",
            EntryKind::Custom { .. } => "custom",
            EntryKind::CustomMessage(_) => "custom_message",
            EntryKind::Label { .. } => "label",
            EntryKind::SessionInfo { .. } => "session_info",
            EntryKind::Unknown { entry_type, .. } => entry_type,
        }
    }
}

/// One line after the header: a node of the session tree.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionEntry {
    pub id: String,
    /// `None` for a root (the first entry, or the start of an orphaned branch).
    pub parent_id: Option<String>,
    /// ISO 8601, UTC.
    pub timestamp: String,
    pub kind: EntryKind,
}

impl SessionEntry {
    /// The entry as one JSON line (no newline).
    pub fn to_line(&self) -> String {
        // Messages, strings and JSON values always serialize.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The message of a `message` entry.
    pub(crate) fn message(&self) -> Option<&AgentMessage> {
        match &self.kind {
            EntryKind::Message(m) => Some(m),
            _ => None,
        }
    }
}

fn put_opt<M: SerializeMap, T: Serialize>(
    map: &mut M,
    key: &str,
    value: &Option<T>,
) -> Result<(), M::Error> {
    match value {
        Some(v) => map.serialize_entry(key, v),
        None => Ok(()),
    }
}

impl Serialize for SessionEntry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("type", self.kind.type_name())?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("parentId", &self.parent_id)?;
        map.serialize_entry("timestamp", &self.timestamp)?;
        match &self.kind {
            EntryKind::Message(m) => map.serialize_entry("message", m)?,
            EntryKind::ModelChange { provider, model_id } => {
                map.serialize_entry("provider", provider)?;
                map.serialize_entry("modelId", model_id)?;
            }
            EntryKind::ThinkingLevelChange { thinking_level } => {
                map.serialize_entry("thinkingLevel", thinking_level)?;
            }
            EntryKind::Compaction(c) => {
                map.serialize_entry("summary", &c.summary)?;
                map.serialize_entry("firstKeptEntryId", &c.first_kept_entry_id)?;
                map.serialize_entry("tokensBefore", &c.tokens_before)?;
                put_opt(&mut map, "details", &c.details)?;
                put_opt(&mut map, "fromHook", &c.from_hook)?;
            }
            EntryKind::BranchSummary(b) => {
                map.serialize_entry("fromId", &b.from_id)?;
                map.serialize_entry("summary", &b.summary)?;
                put_opt(&mut map, "details", &b.details)?;
                put_opt(&mut map, "fromHook", &b.from_hook)?;
            }
            EntryKind::Custom { custom_type, data } => {
                map.serialize_entry("customType", custom_type)?;
                put_opt(&mut map, "data", data)?;
            }
            EntryKind::CustomMessage(c) => {
                map.serialize_entry("customType", &c.custom_type)?;
                map.serialize_entry("content", &c.content)?;
                map.serialize_entry("display", &c.display)?;
                put_opt(&mut map, "details", &c.details)?;
            }
            EntryKind::Label { target_id, label } => {
                map.serialize_entry("targetId", target_id)?;
                put_opt(&mut map, "label", label)?;
            }
            EntryKind::SessionInfo { name } => put_opt(&mut map, "name", name)?,
            EntryKind::Unknown { fields, .. } => {
                for (k, v) in fields.iter() {
                    map.serialize_entry(k, v)?;
                }
            }
        }
        map.end()
    }
}

/// `Some(value)` whenever the key is present, even when the value is `null`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// An ISO string, or epoch milliseconds (old files) turned into one.
fn lenient_timestamp<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    struct V;
    impl de::Visitor<'_> for V {
        type Value = Option<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a timestamp")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok(Some(v))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(iso_from_ms(v)))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(iso_from_ms(v.min(i64::MAX as u64) as i64)))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok(Some(iso_from_ms(v as i64)))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    }
    d.deserialize_any(V)
}

/// A token count written as an integer or a float.
fn lenient_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
        _ => None,
    })
}

/// Every field any known line type may carry; absent ones stay `None`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawLine<'a> {
    #[serde(rename = "type", borrow)]
    line_type: Tag<'a>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default, deserialize_with = "present")]
    parent_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "lenient_timestamp")]
    timestamp: Option<String>,
    #[serde(default)]
    message: Option<FastMessage>,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    model_id: Option<String>,
    #[serde(default)]
    thinking_level: Option<String>,
    #[serde(default)]
    summary: Option<String>,
    #[serde(default)]
    first_kept_entry_id: Option<String>,
    #[serde(default)]
    first_kept_entry_index: Option<u64>,
    #[serde(default, deserialize_with = "lenient_u64")]
    tokens_before: Option<u64>,
    #[serde(default, deserialize_with = "present")]
    details: Option<Value>,
    #[serde(default)]
    from_hook: Option<bool>,
    #[serde(default)]
    from_id: Option<String>,
    #[serde(default)]
    custom_type: Option<String>,
    #[serde(default, deserialize_with = "present")]
    data: Option<Value>,
    #[serde(default, deserialize_with = "read_user_content")]
    content: Option<UserContent>,
    #[serde(default)]
    display: Option<bool>,
    #[serde(default)]
    target_id: Option<String>,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

/// An entry as read, before ids are checked and old formats are migrated.
#[derive(Debug)]
pub struct ParsedEntry {
    /// Absent in version-1 files.
    pub id: Option<String>,
    /// `None` when the line has no `parentId` key (version 1); `Some(None)` for an explicit null.
    pub parent_id: Option<Option<String>>,
    pub timestamp: Option<String>,
    pub kind: EntryKind,
    /// Version-1 compactions point at the first kept entry by index.
    pub first_kept_entry_index: Option<u64>,
    /// Set when a known type lacked a required field and was kept as `Unknown`.
    pub problem: Option<String>,
}

/// One parsed line.
#[derive(Debug)]
pub enum ParsedLine {
    Header(SessionHeader),
    Entry(ParsedEntry),
}

fn missing(field: &str) -> String {
    format!("missing `{field}`")
}

fn kind_from_raw(raw: &mut RawLine) -> Result<EntryKind, String> {
    Ok(match &*raw.line_type.0 {
        "message" => EntryKind::Message(raw.message.take().ok_or_else(|| missing("message"))?.0),
        "model_change" => EntryKind::ModelChange {
            provider: raw.provider.take().ok_or_else(|| missing("provider"))?,
            model_id: raw.model_id.take().ok_or_else(|| missing("modelId"))?,
        },
        "thinking_level_change" => EntryKind::ThinkingLevelChange {
            thinking_level: raw
                .thinking_level
                .take()
                .ok_or_else(|| missing("thinkingLevel"))?,
        },
        "compaction" => EntryKind::Compaction(Box::new(Compaction {
            summary: raw.summary.take().ok_or_else(|| missing("summary"))?,
            first_kept_entry_id: raw.first_kept_entry_id.take().unwrap_or_default(),
            tokens_before: raw.tokens_before.unwrap_or(0),
            details: raw.details.take(),
            from_hook: raw.from_hook,
        })),
        "branch_summary" => EntryKind::BranchSummary(Box::new(BranchSummary {
            from_id: raw.from_id.take().unwrap_or_default(),
            summary: raw.summary.take().unwrap_or_default(),
            details: raw.details.take(),
            from_hook: raw.from_hook,
        })),
        "custom" => EntryKind::Custom {
            custom_type: raw
                .custom_type
                .take()
                .ok_or_else(|| missing("customType"))?,
            data: raw.data.take().map(Box::new),
        },
        "custom_message" => EntryKind::CustomMessage(Box::new(CustomMessageEntry {
            custom_type: raw
                .custom_type
                .take()
                .ok_or_else(|| missing("customType"))?,
            content: raw
                .content
                .take()
                .unwrap_or_else(|| UserContent::Text(String::new())),
            display: raw.display.unwrap_or(true),
            details: raw.details.take(),
        })),
        "label" => EntryKind::Label {
            target_id: raw.target_id.take().ok_or_else(|| missing("targetId"))?,
            label: raw.label.take(),
        },
        "session_info" => EntryKind::SessionInfo {
            name: raw.name.take(),
        },
        _ => return Err(String::new()),
    })
}

/// The kind of an entry whose typed decoding failed or whose type is unknown, from its JSON
/// object. Also yields the common fields.
fn unknown_from_map(
    mut m: Map<String, Value>,
    problem: Option<String>,
) -> Result<ParsedLine, String> {
    let Some(Value::String(entry_type)) = m.shift_remove("type") else {
        return Err("a line without a `type`".into());
    };
    if entry_type == "session" {
        return SessionHeader::from_map(m)
            .map(ParsedLine::Header)
            .ok_or_else(|| "a session header without an `id`".into());
    }
    let id = match m.shift_remove("id") {
        Some(Value::String(s)) => Some(s),
        _ => None,
    };
    let parent_id = match m.shift_remove("parentId") {
        None => None,
        Some(Value::String(s)) => Some(Some(s)),
        Some(_) => Some(None),
    };
    let timestamp = match m.shift_remove("timestamp") {
        Some(Value::String(s)) => Some(s),
        Some(Value::Number(n)) => n.as_i64().map(iso_from_ms),
        _ => None,
    };
    Ok(ParsedLine::Entry(ParsedEntry {
        id,
        parent_id,
        timestamp,
        kind: EntryKind::Unknown {
            entry_type,
            fields: Box::new(m),
        },
        first_kept_entry_index: None,
        problem,
    }))
}

/// `line` without a UTF-8 byte order mark in front (an editor on Windows may add one to the
/// first line of a file).
pub(crate) fn without_bom(line: &[u8]) -> &[u8] {
    line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line)
}

/// Parse one line of a session file (a byte order mark in front is skipped). `Err` holds a
/// short reason for the warning.
pub fn parse_line(line: &[u8]) -> Result<ParsedLine, String> {
    let line = without_bom(line);
    // The line's UTF-8 is checked once, as a whole and with vector code: serde_json then takes
    // its strings as they are instead of checking each one (the text of a long session is
    // most of its bytes). A line that fails is parsed from bytes, to fail as before.
    let parsed = match simdutf8::basic::from_utf8(line) {
        Ok(text) => serde_json::from_str::<RawLine>(text),
        Err(_) => serde_json::from_slice::<RawLine>(line),
    };
    match parsed {
        Ok(raw) if raw.line_type.0 == "session" => {
            // Headers are short and rare: read them as a map to keep unknown fields.
            match serde_json::from_slice::<Map<String, Value>>(line) {
                Ok(m) => SessionHeader::from_map(m)
                    .map(ParsedLine::Header)
                    .ok_or_else(|| "a session header without an `id`".into()),
                Err(e) => Err(e.to_string()),
            }
        }
        Ok(mut raw) => match kind_from_raw(&mut raw) {
            Ok(kind) => Ok(ParsedLine::Entry(ParsedEntry {
                id: raw.id,
                parent_id: raw.parent_id,
                timestamp: raw.timestamp,
                kind,
                first_kept_entry_index: raw.first_kept_entry_index,
                problem: None,
            })),
            Err(reason) => {
                let problem =
                    (!reason.is_empty()).then(|| format!("`{}` entry {reason}", raw.line_type.0));
                let m = serde_json::from_slice::<Map<String, Value>>(line)
                    .map_err(|e| e.to_string())?;
                let mut parsed = unknown_from_map(m, problem)?;
                if let ParsedLine::Entry(e) = &mut parsed {
                    e.first_kept_entry_index = raw.first_kept_entry_index;
                }
                Ok(parsed)
            }
        },
        Err(typed_err) => match serde_json::from_slice::<Value>(line) {
            // Valid JSON whose known fields have unexpected shapes: keep it as found.
            Ok(Value::Object(m)) => {
                let is_known = matches!(
                    m.get("type").and_then(Value::as_str),
                    Some(
                        "message"
                            | "model_change"
                            | "thinking_level_change"
                            | "compaction"
                            | "branch_summary"
                            | "custom"
                            | "custom_message"
                            | "label"
                            | "session_info"
                    )
                );
                let problem = is_known.then(|| format!("unreadable entry ({typed_err})"));
                unknown_from_map(m, problem)
            }
            Ok(_) => Err("a line that is not a JSON object".into()),
            Err(e) => Err(e.to_string()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn header_round_trip_keeps_extra_fields() {
        let line = r#"{"type":"session","version":3,"id":"u","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w","parentSession":"/p.jsonl","title":"T"}"#;
        let ParsedLine::Header(h) = parse_line(line.as_bytes()).unwrap() else {
            panic!("not a header")
        };
        assert_eq!(h.version, 3);
        assert_eq!(h.parent_session.as_deref(), Some("/p.jsonl"));
        assert_eq!(h.to_line(), line);
    }

    #[test]
    fn version_one_header_has_no_version() {
        let ParsedLine::Header(h) =
            parse_line(br#"{"type":"session","id":"u","timestamp":1,"cwd":"/w"}"#).unwrap()
        else {
            panic!("not a header")
        };
        assert_eq!(h.version, 1);
        assert_eq!(h.timestamp, "1970-01-01T00:00:00.001Z");
    }

    #[test]
    fn unknown_types_keep_their_fields_in_order() {
        let line = r#"{"type":"model_usage","id":"abcd1234","parentId":null,"timestamp":"t","z":1,"a":{"b":[1,2]}}"#;
        let ParsedLine::Entry(e) = parse_line(line.as_bytes()).unwrap() else {
            panic!("not an entry")
        };
        assert!(e.problem.is_none());
        let entry = SessionEntry {
            id: e.id.unwrap(),
            parent_id: e.parent_id.flatten(),
            timestamp: e.timestamp.unwrap(),
            kind: e.kind,
        };
        assert_eq!(entry.to_line(), line);
    }

    #[test]
    fn known_type_with_missing_field_is_kept_with_a_problem() {
        let ParsedLine::Entry(e) = parse_line(
            br#"{"type":"model_change","id":"abcd1234","parentId":null,"timestamp":"t","provider":"p"}"#,
        )
        .unwrap() else {
            panic!("not an entry")
        };
        assert!(matches!(e.kind, EntryKind::Unknown { .. }));
        assert!(e.problem.unwrap().contains("modelId"));
        let ParsedLine::Entry(e) = parse_line(
            br#"{"type":"message","id":"abcd1234","parentId":null,"timestamp":"t","message":{"role":"assistant","content":5}}"#,
        )
        .unwrap() else {
            panic!("not an entry")
        };
        assert!(matches!(e.kind, EntryKind::Unknown { .. }));
        assert!(e.problem.is_some());
    }

    #[test]
    fn garbage_is_an_error() {
        for bad in [
            &b"{\"type\":\"mess"[..],
            b"[1,2]",
            b"\xff\xfe",
            b"{\"id\":\"x\"}",
            b"",
        ] {
            assert!(parse_line(bad).is_err());
        }
    }

    #[test]
    fn null_data_and_details_survive() {
        let line = json!({"type":"custom","id":"abcd1234","parentId":"00000000","timestamp":"t","customType":"x","data":null}).to_string();
        let ParsedLine::Entry(e) = parse_line(line.as_bytes()).unwrap() else {
            panic!("not an entry")
        };
        assert_eq!(
            e.kind,
            EntryKind::Custom {
                custom_type: "x".into(),
                data: Some(Box::new(Value::Null))
            }
        );
    }
}
