//! New session files made from existing ones: `--fork` copies a whole session
//! ([`fork()`]); `/fork` and `/clone` copy one branch of it ([`branch_to_new`]).
//!
//! A copy gets a new session id, the current time, the given working directory and
//! `parentSession` set to the source file, followed by entries with their ids unchanged, so the
//! tree (or the branch) is the same. [`fork()`] copies the entries of a version 3 file byte for
//! byte (fields this version does not know survive); older files are written out migrated, and
//! damaged lines of the source are left out. [`branch_to_new`] writes the entries of one branch
//! from a loaded session, as this version writes them, then (as the Node.js `pi` does) label
//! entries for the labels its entries were given later from elsewhere in the tree. Either copy is written to a temporary
//! name, synced, then renamed, so a crash never leaves half a session behind.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::entry::{
    CURRENT_VERSION, EntryKind, ParsedLine, SessionEntry, SessionHeader, parse_line,
};
use super::error::SessionError;
use super::ids::{entry_id, uuid_v7};
use super::layout::session_file_name;
use super::list::read_header;
use super::load::Session;
use super::time::iso_now;

/// The new file of a fork.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forked {
    pub path: PathBuf,
    pub id: String,
}

/// Copy the session at `source` into a new session file in `dest_dir`, started in `cwd`.
pub fn fork(source: &Path, dest_dir: &Path, cwd: &Path) -> Result<Forked, SessionError> {
    let current = read_header(source).is_some_and(|h| h.version >= CURRENT_VERSION);
    // Older files are migrated while loading; current ones are copied line by line.
    let migrated = if current {
        None
    } else {
        Some(Session::load(source)?)
    };
    let parent = fs::canonicalize(source).unwrap_or_else(|_| source.to_path_buf());
    write_new_session(dest_dir, cwd, Some(&parent), |out, tmp| match &migrated {
        Some(session) => {
            for e in &session.entries {
                writeln!(out, "{}", e.to_line()).map_err(|e| SessionError::io("write", tmp, e))?;
            }
            Ok(())
        }
        None => copy_entry_lines(source, out, tmp),
    })
}

/// Start a new session file in `dest_dir`, started in `cwd`, holding the branch of `source`
/// that ends at `leaf`: the entries from the root down to `leaf`, in that order, with their ids
/// and parents unchanged. `None` gives a file with only the header. The header's
/// `parentSession` is the source's file (its canonical path), if it has one.
///
/// This is `/fork` (with `leaf` the parent of the chosen user message) and `/clone` (with the
/// current leaf). Only entries on the branch are copied: a label or name set on another
/// branch stays behind. An id the session does not have is refused
/// ([`SessionError::NotFound`]).
pub fn branch_to_new(
    source: &Session,
    leaf: Option<&str>,
    dest_dir: &Path,
    cwd: &Path,
) -> Result<Forked, SessionError> {
    if let Some(id) = leaf
        && source.entry(id).is_none()
    {
        return Err(SessionError::NotFound(id.to_string()));
    }
    let branch = source.branch(leaf);
    let relabel = labels_to_carry(source, &branch);
    let parent = source
        .path
        .as_deref()
        .map(|p| fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf()));
    write_new_session(dest_dir, cwd, parent.as_deref(), |out, tmp| {
        for e in branch.iter().copied().chain(relabel.iter()) {
            writeln!(out, "{}", e.to_line()).map_err(|e| SessionError::io("write", tmp, e))?;
        }
        Ok(())
    })
}

/// Labels the source gives entries of `branch` that the branch itself does not set (a label
/// added later, from another point of the tree): written again after the branch, as the
/// Node.js `pi` does, so the copy keeps its bookmarks.
fn labels_to_carry(source: &Session, branch: &[&SessionEntry]) -> Vec<SessionEntry> {
    let mut on_branch: std::collections::HashMap<&str, Option<&str>> =
        branch.iter().map(|e| (e.id.as_str(), None)).collect();
    for e in branch {
        if let EntryKind::Label { target_id, label } = &e.kind
            && let Some(slot) = on_branch.get_mut(target_id.as_str())
        {
            *slot = label.as_deref().map(str::trim).filter(|l| !l.is_empty());
        }
    }
    let wanted = source.labels();
    let mut taken: std::collections::HashSet<String> =
        branch.iter().map(|e| e.id.clone()).collect();
    let mut parent = branch.last().map(|e| e.id.clone());
    let mut out = Vec::new();
    for e in branch {
        let Some(label) = wanted.get(e.id.as_str()) else {
            continue;
        };
        if on_branch.get(e.id.as_str()).copied().flatten() == Some(*label) {
            continue;
        }
        let id = entry_id(&taken);
        taken.insert(id.clone());
        out.push(SessionEntry {
            id: id.clone(),
            parent_id: parent.replace(id),
            timestamp: iso_now(),
            kind: EntryKind::Label {
                target_id: e.id.clone(),
                label: Some((*label).to_string()),
            },
        });
    }
    out
}

/// Create a session file in `dest_dir` (made private if missing) with a new id and header,
/// followed by what `body` writes. The file appears under its final name only once complete
/// and synced.
fn write_new_session(
    dest_dir: &Path,
    cwd: &Path,
    parent: Option<&Path>,
    body: impl FnOnce(&mut BufWriter<File>, &Path) -> Result<(), SessionError>,
) -> Result<Forked, SessionError> {
    let timestamp = iso_now();
    let id = uuid_v7();
    let header = SessionHeader::new(
        id.clone(),
        timestamp.clone(),
        cwd.to_string_lossy().into_owned(),
        parent.map(|p| p.to_string_lossy().into_owned()),
    );
    super::recorder::create_private_dir(dest_dir)
        .map_err(|e| SessionError::io("create the folder of", dest_dir, e))?;
    let path = dest_dir.join(session_file_name(&timestamp, &id));
    let tmp = dest_dir.join(format!(".{id}.jsonl.tmp"));
    if let Err(e) = write_file(&header, &tmp, body) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    fs::rename(&tmp, &path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        SessionError::io("create", &path, e)
    })?;
    Ok(Forked { path, id })
}

fn write_file(
    header: &SessionHeader,
    tmp: &Path,
    body: impl FnOnce(&mut BufWriter<File>, &Path) -> Result<(), SessionError>,
) -> Result<(), SessionError> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(tmp)
        .map_err(|e| SessionError::io("create", tmp, e))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    writeln!(out, "{}", header.to_line()).map_err(|e| SessionError::io("write", tmp, e))?;
    body(&mut out, tmp)?;
    let file = out
        .into_inner()
        .map_err(|e| SessionError::io("write", tmp, e.into_error()))?;
    file.sync_all()
        .map_err(|e| SessionError::io("sync", tmp, e))?;
    Ok(())
}

/// Copy the valid entry lines of `source` exactly as they are.
fn copy_entry_lines(
    source: &Path,
    out: &mut BufWriter<File>,
    tmp: &Path,
) -> Result<(), SessionError> {
    let werr = |e| SessionError::io("write", tmp, e);
    let input = File::open(source).map_err(|e| SessionError::io("open", source, e))?;
    let mut reader = BufReader::with_capacity(1 << 20, input);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| SessionError::io("read", source, e))?;
        if n == 0 {
            break;
        }
        let mut line = &buf[..];
        while let Some((last, rest)) = line.split_last()
            && matches!(last, b'\n' | b'\r')
        {
            line = rest;
        }
        if let Ok(ParsedLine::Entry(e)) = parse_line(line)
            && e.id.is_some()
        {
            out.write_all(line).map_err(werr)?;
            out.write_all(b"\n").map_err(werr)?;
        }
    }
    Ok(())
}
