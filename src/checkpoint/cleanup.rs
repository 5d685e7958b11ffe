//! Deleting a session deletes the file contents only its checkpoints kept: those no other
//! session of the same folder names, and not in the folder's index (what the files are now).

use std::collections::HashSet;
use std::io::BufRead;
use std::path::Path;

use super::record::{self, DETAILS_KEY};
use super::store::BlobStore;
use crate::session::entry::{ParsedLine, parse_line};

/// The content hashes the checkpoint records of the session file at `path` name.
pub fn hashes_in(path: &Path) -> HashSet<String> {
    let mut out = HashSet::new();
    let Ok(file) = std::fs::File::open(path) else {
        return out;
    };
    for line in std::io::BufReader::new(file).lines() {
        let Ok(line) = line else { break };
        // Most lines carry none: skip them without parsing.
        if !line.contains(DETAILS_KEY) {
            continue;
        }
        let Ok(ParsedLine::Entry(entry)) = parse_line(line.as_bytes()) else {
            continue;
        };
        let set = record::of_kind(&entry.kind);
        if let Some(set) = set {
            out.extend(record::hashes(&set).map(str::to_string));
        }
    }
    out
}

/// After a session holding `gone` was deleted from `sessions_dir` (whose checkpoints are in
/// `dir`, see [`super::folder_for`]): remove what nothing else there still names.
pub fn forget(sessions_dir: &Path, dir: &Path, mut gone: HashSet<String>) {
    if gone.is_empty() || !dir.is_dir() {
        return;
    }
    if let Ok(entries) = std::fs::read_dir(sessions_dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "jsonl") {
                for h in hashes_in(&p) {
                    gone.remove(&h);
                }
            }
        }
    }
    if let Ok(index) = std::fs::read_to_string(dir.join("index")) {
        for line in index.lines() {
            if let Some(h) = line.split(' ').next() {
                gone.remove(h);
            }
        }
    }
    BlobStore::new(dir.join("blobs"), u64::MAX).remove(gone);
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::checkpoint::store::hash_of;

    fn line(hashes: &[&str]) -> String {
        let files: Vec<Value> = hashes
            .iter()
            .map(|h| serde_json::json!({"path": "/w/f", "before": null, "after": {"hash": h}}))
            .collect();
        serde_json::json!({"type": "message", "id": "x", "parentId": null,
            "timestamp": "2026-12-04T10:00:00.000Z", "message": {"role": "toolResult",
            "toolCallId": "c1", "toolName": "bash", "content": [{"type": "text", "text": ""}],
            "isError": false, "timestamp": 1, "details": {"checkpoint": {"files": files}}}})
        .to_string()
    }

    #[test]
    fn deleting_a_session_removes_what_only_it_named() {
        let sessions = tempfile::tempdir().unwrap();
        let folder = tempfile::tempdir().unwrap();
        let store = BlobStore::new(folder.path().join("blobs"), 1 << 20);
        let [only, shared, indexed] = ["only", "shared", "indexed"].map(|t| {
            let h = hash_of(t.as_bytes());
            store.put(&h, t.as_bytes()).unwrap();
            h
        });
        let gone = sessions.path().join("a.jsonl");
        std::fs::write(&gone, line(&[&only, &shared, &indexed])).unwrap();
        std::fs::write(sessions.path().join("b.jsonl"), line(&[&shared])).unwrap();
        std::fs::write(
            folder.path().join("index"),
            format!("{indexed} 1 1 1 1 420 /w/f\n"),
        )
        .unwrap();
        let named = hashes_in(&gone);
        assert_eq!(named.len(), 3);
        std::fs::remove_file(&gone).unwrap();
        forget(sessions.path(), folder.path(), named);
        assert!(!store.has(&only));
        assert!(store.has(&shared) && store.has(&indexed));
    }
}
