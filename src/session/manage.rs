//! Renaming and deleting session files that are not open here (the session picker's
//! Ctrl+R and Ctrl+D).
//!
//! Both take the session's lock ([`SessionLock::acquire_unshared`]) for as long as they work,
//! so they are refused with [`SessionError::Locked`] while another running pi — or a recorder of
//! this process — writes the file. The session being recorded is renamed through its
//! recorder ([`super::SessionRecorder::set_name`]) instead.
//!
//! A rename appends one `session_info` entry under the file's leaf, as the Node.js `pi`'s
//! `/name` does, and syncs it; nothing already in the file changes. A delete removes the file;
//! the lock taken for it (which replaced any stale lock beside it) goes with it.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

use super::entry::{EntryKind, SessionEntry};
use super::error::SessionError;
use super::ids::entry_id;
use super::load::Session;
use super::lock::SessionLock;
use super::time::iso_now;

/// Give the session at `path` the display name `name` (trimmed). Refused for an empty name
/// ([`SessionError::EmptyName`]), a file another writer holds ([`SessionError::Locked`]) and
/// a file without a session header ([`SessionError::NotASession`]: the entry would make it
/// unreadable for the Node.js `pi`).
pub fn rename(path: &Path, name: &str) -> Result<(), SessionError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(SessionError::EmptyName);
    }
    let _lock = SessionLock::acquire_unshared(path)?;
    let session = Session::load(path)?;
    if session.header_missing() {
        return Err(SessionError::NotASession(path.to_path_buf()));
    }
    let entry = SessionEntry {
        id: entry_id(&session.entry_ids()),
        parent_id: session.leaf_id().map(str::to_string),
        timestamp: iso_now(),
        kind: EntryKind::SessionInfo {
            name: Some(name.to_string()),
        },
    };
    let mut line = String::new();
    if !session.ends_with_newline {
        // Close a torn last line so the new entry is a line of its own.
        line.push('\n');
    }
    line.push_str(&entry.to_line());
    line.push('\n');
    let mut file = OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(|e| SessionError::io("open for writing", path, e))?;
    file.write_all(line.as_bytes())
        .map_err(|e| SessionError::io("write", path, e))?;
    file.sync_data()
        .map_err(|e| SessionError::io("sync", path, e))
}

/// Remove the session file at `path` (and a stale lock file beside it). Refused while another
/// writer holds it ([`SessionError::Locked`]).
pub fn delete(path: &Path) -> Result<(), SessionError> {
    let lock = SessionLock::acquire_unshared(path)?;
    let removed = std::fs::remove_file(path).map_err(|e| SessionError::io("delete", path, e));
    // Dropping the lock removes its file.
    drop(lock);
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"type":"session","version":3,"id":"019a0000-0000-7000-8000-000000000000","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#;

    #[test]
    fn a_rename_closes_a_torn_last_line_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let text = format!(
            "{HEADER}\n{}\n{}",
            r#"{"type":"session_info","id":"aaaaaaaa","parentId":null,"timestamp":"t","name":"old"}"#,
            r#"{"type":"session_info","id":"bbbbbbbb","parentId":"aaaaaaaa","times"#
        );
        std::fs::write(&path, text).unwrap();
        rename(&path, "  new name\t").unwrap();
        let s = Session::load(&path).unwrap();
        assert_eq!(s.name(), Some("new name"));
        let last = s.entries.last().unwrap();
        assert_eq!(last.parent_id.as_deref(), Some("aaaaaaaa"));
        // Only the torn fragment is reported.
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        assert!(!crate::session::lock::lock_path(&path).exists());
    }

    #[test]
    fn empty_names_and_headerless_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, format!("{HEADER}\n")).unwrap();
        assert!(matches!(
            rename(&path, " \n\t"),
            Err(SessionError::EmptyName)
        ));
        let headerless = dir.path().join("h.jsonl");
        let line = r#"{"type":"session_info","id":"aaaaaaaa","parentId":null,"timestamp":"t"}"#;
        std::fs::write(&headerless, format!("{line}\n")).unwrap();
        assert!(matches!(
            rename(&headerless, "x"),
            Err(SessionError::NotASession(_))
        ));
        assert_eq!(
            std::fs::read_to_string(&headerless).unwrap(),
            format!("{line}\n")
        );
    }

    #[test]
    fn deleting_a_missing_file_is_an_error_and_leaves_no_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gone.jsonl");
        assert!(matches!(delete(&path), Err(SessionError::Io { .. })));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
