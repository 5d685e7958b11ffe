//! What a checkpoint records, as it is saved in the session: for each file a tool changed,
//! the content before and after (by hash) and the mode, so the change can be undone or made
//! again.
//!
//! A tool call's changes ride in its result's `details` under `checkpoint` (never sent to a
//! model; the Node.js pi ignores the key), so they sit in the session tree exactly where the
//! call happened and survive a crash once the result is written. A restore pi itself makes
//! while the conversation stays put is a `custom` entry of type [`CUSTOM_TYPE`] with the same
//! shape, so undoing it later works the same way.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::protocol::types::Message;
use crate::session::{EntryKind, SessionEntry};

/// The key under a tool result's `details`.
pub const DETAILS_KEY: &str = "checkpoint";
/// The `customType` of a restore's own record.
pub const CUSTOM_TYPE: &str = "pi.checkpoint";

/// One side of a change: a file that existed, its content's hash (`None`: too large or not
/// saved, so it cannot be put back) and its mode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Version {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
}

/// One file's change. A side that is `None` means the file did not exist.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    pub path: PathBuf,
    #[serde(default)]
    pub before: Option<Version>,
    #[serde(default)]
    pub after: Option<Version>,
    /// For a file the change created: the outermost folder around it that the same change
    /// brought into being. Undoing the creation removes it again, with the folders between,
    /// as far as they are left empty.
    #[serde(default, rename = "newFolder", skip_serializing_if = "Option::is_none")]
    pub new_folder: Option<PathBuf>,
}

/// The changes of one tool call (or one restore).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeSet {
    pub files: Vec<FileChange>,
}

impl ChangeSet {
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The set recorded in a tool result's details or a restore's entry, if any.
    pub fn from_value(v: &Value) -> Option<ChangeSet> {
        serde_json::from_value(v.clone()).ok()
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// The change set an entry of the session carries, if any.
pub fn of_entry(entry: &SessionEntry) -> Option<ChangeSet> {
    of_kind(&entry.kind)
}

/// The change set an entry of this kind carries, if any.
pub fn of_kind(kind: &EntryKind) -> Option<ChangeSet> {
    match kind {
        EntryKind::Message(m) => match m.as_llm() {
            Some(Message::ToolResult(r)) => r
                .details
                .as_ref()
                .and_then(|d| d.get(DETAILS_KEY))
                .and_then(ChangeSet::from_value),
            _ => None,
        },
        EntryKind::Custom { custom_type, data } if custom_type == CUSTOM_TYPE => {
            data.as_deref().and_then(ChangeSet::from_value)
        }
        _ => None,
    }
    .filter(|s| !s.is_empty())
}

/// Put `set` into a tool's details (an object; anything else is kept under `value`).
pub fn attach(details: &mut Value, set: &ChangeSet) {
    if !details.is_object() {
        let old = std::mem::take(details);
        *details = if old.is_null() {
            Value::Object(serde_json::Map::new())
        } else {
            serde_json::json!({ "value": old })
        };
    }
    if let Value::Object(map) = details {
        map.insert(DETAILS_KEY.into(), set.to_value());
    }
}

/// Every content hash a session's records name (to keep them when cleaning up).
pub fn hashes(set: &ChangeSet) -> impl Iterator<Item = &str> {
    set.files.iter().flat_map(|f| {
        [f.before.as_ref(), f.after.as_ref()]
            .into_iter()
            .flatten()
            .filter_map(|v| v.hash.as_deref())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_round_trips_through_details() {
        let set = ChangeSet {
            files: vec![FileChange {
                path: "/w/a.txt".into(),
                before: None,
                after: Some(Version {
                    hash: Some("ab".repeat(32)),
                    mode: Some(0o644),
                }),
                new_folder: Some("/w".into()),
            }],
        };
        let mut details = serde_json::json!({"diff": "x"});
        attach(&mut details, &set);
        assert_eq!(details["diff"], "x");
        assert_eq!(
            ChangeSet::from_value(&details[DETAILS_KEY]),
            Some(set.clone())
        );
        let mut text = Value::String("t".into());
        attach(&mut text, &set);
        assert_eq!(text["value"], "t");
    }
}
