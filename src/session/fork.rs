//! `--fork`: copy a session into a new file that remembers where it came from.
//!
//! The copy gets a new session id, the current time, the given working directory and
//! `parentSession` set to the source file, followed by the source's entries with their ids
//! unchanged, so the tree is the same. Entries of a version 3 file are copied byte for byte
//! (fields this version does not know survive); older files are written out migrated. Damaged
//! lines of the source are left out. The copy is written to a temporary name, synced, then
//! renamed, so a crash never leaves half a fork behind.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::entry::{CURRENT_VERSION, ParsedLine, SessionHeader, parse_line};
use super::error::SessionError;
use super::ids::uuid_v7;
use super::list::read_header;
use super::load::Session;
use super::paths::session_file_name;
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
    let timestamp = iso_now();
    let id = uuid_v7();
    let header = SessionHeader::new(
        id.clone(),
        timestamp.clone(),
        cwd.to_string_lossy().into_owned(),
        Some(parent.to_string_lossy().into_owned()),
    );
    super::recorder::create_private_dir(dest_dir)
        .map_err(|e| SessionError::io("create the folder of", dest_dir, e))?;
    let path = dest_dir.join(session_file_name(&timestamp, &id));
    let tmp = dest_dir.join(format!(".{id}.jsonl.tmp"));
    let result = write_fork(migrated.as_ref(), source, &header, &tmp);
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    fs::rename(&tmp, &path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        SessionError::io("create", &path, e)
    })?;
    Ok(Forked { path, id })
}

fn write_fork(
    migrated: Option<&Session>,
    source: &Path,
    header: &SessionHeader,
    tmp: &Path,
) -> Result<(), SessionError> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(tmp)
        .map_err(|e| SessionError::io("create", tmp, e))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let werr = |e| SessionError::io("write", tmp, e);
    writeln!(out, "{}", header.to_line()).map_err(werr)?;
    if let Some(session) = migrated {
        for e in &session.entries {
            writeln!(out, "{}", e.to_line()).map_err(werr)?;
        }
    } else {
        // Copy the valid entry lines exactly as they are.
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
    }
    let file = out.into_inner().map_err(|e| werr(e.into_error()))?;
    file.sync_all()
        .map_err(|e| SessionError::io("sync", tmp, e))?;
    Ok(())
}
