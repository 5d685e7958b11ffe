//! Finding sessions without reading them: listing for the picker, `--continue`, `--session`.
//!
//! A session file can be tens of megabytes, and a picker may list a thousand of them, so
//! nothing here reads a whole file. For each file, [`session_info`] reads the size and
//! modification time, the first [`HEAD_BYTES`] (the header and, usually, the first user
//! message for the preview — cut short if that message is longer) and the last [`TAIL_BYTES`]
//! (where the latest `session_info` entry, the name, usually is). A name set long ago and
//! followed by more than `TAIL_BYTES` of conversation is found only if it is also in the head.
//! Files whose first line is not a session header are left out. Files are read by a few threads
//! at once: with a cold page cache the time goes into waiting for the disk, which serves
//! several reads at a time.
//!
//! [`count_messages`] is the one exception: it reads a whole file, but only looks at the
//! start of each line.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::entry::{EntryKind, ParsedLine, SessionHeader, parse_line};
use super::error::{Candidate, SessionError};
use super::ids::looks_like_uuid;
use super::layout::{SessionPaths, id_from_file_name};
use super::short_id::{id_starts_with, unique_prefixes};
use crate::agent::protocol::types::UserContent;

/// Bytes read from the start of each file. Small on purpose: on a cold cache the kernel reads
/// ahead several times what is asked for at the start of a file, and that dominated listing.
pub const HEAD_BYTES: usize = 4 * 1024;
/// The longest header line read (when it does not fit in the head).
const MAX_HEADER_BYTES: usize = 64 * 1024;
/// Bytes read from the end of each file.
pub const TAIL_BYTES: usize = 32 * 1024;
/// Characters kept of the first user message.
pub const PREVIEW_CHARS: usize = 200;

/// What the picker shows about one session.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionInfo {
    pub path: PathBuf,
    pub id: String,
    /// Working directory the session was started in (empty if the header has none).
    pub cwd: String,
    /// From the latest `session_info` entry found.
    pub name: Option<String>,
    /// Set for forks: the file this session was copied from.
    pub parent_session: Option<String>,
    /// Header timestamp (ISO).
    pub created: String,
    /// File modification time: the last write.
    pub modified: SystemTime,
    pub size: u64,
    /// The first user message, whitespace collapsed, at most [`PREVIEW_CHARS`] characters.
    pub first_message: Option<String>,
}

impl SessionInfo {
    /// The name, else the first message, else `(no messages)`.
    pub fn title(&self) -> &str {
        self.name
            .as_deref()
            .or(self.first_message.as_deref())
            .unwrap_or("(no messages)")
    }
}

/// Which sessions to list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListScope {
    /// This working directory's session folder.
    CurrentFolder,
    /// Every project's folder (and this one).
    AllFolders,
}

/// A listing, newest first, with what it cost.
#[derive(Clone, Debug, Default)]
pub struct SessionList {
    pub sessions: Vec<SessionInfo>,
    /// Bytes read from session files (bounded by files × (head + tail)).
    pub bytes_read: u64,
}

fn collapse(text: &str) -> String {
    let mut out = String::new();
    for (n, word) in text.split_whitespace().enumerate() {
        if n > 0 {
            out.push(' ');
        }
        out.push_str(word);
        if out.chars().count() > PREVIEW_CHARS {
            break;
        }
    }
    match out.char_indices().nth(PREVIEW_CHARS) {
        Some((cut, _)) => format!("{}…", &out[..cut]),
        None => out,
    }
}

fn user_text(content: &UserContent) -> String {
    match content {
        UserContent::Text(s) => s.clone(),
        UserContent::Blocks(blocks) => blocks
            .iter()
            .filter_map(|b| b.as_text())
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// Decode a JSON string body starting right after its opening quote, stopping at the closing
/// quote or where the (cut) text ends.
fn partial_json_string(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    if let Some(ch) = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                        out.push(ch);
                    }
                }
                Some(other) => out.push(other),
                None => break,
            },
            c => out.push(c),
        }
        if out.len() > PREVIEW_CHARS * 8 {
            break;
        }
    }
    out
}

/// The preview of a user message line cut off by the head limit.
fn preview_from_cut_line(line: &str) -> Option<String> {
    if !line.contains("\"type\":\"message\"") {
        return None;
    }
    let role_at = line.find("\"role\":\"user\"")?;
    let rest = &line[role_at..];
    let start = ["\"content\":\"", "\"text\":\""]
        .iter()
        .filter_map(|k| rest.find(k).map(|i| i + k.len()))
        .min()?;
    Some(partial_json_string(&rest[start..]))
}

/// A name from a `session_info` line.
fn name_from_line(line: &str) -> Option<Option<String>> {
    match parse_line(line.as_bytes()) {
        Ok(ParsedLine::Entry(e)) => match e.kind {
            EntryKind::SessionInfo { name } => {
                Some(name.map(|n| n.trim().to_string()).filter(|n| !n.is_empty()))
            }
            _ => None,
        },
        _ => None,
    }
}

/// The latest `session_info` name in `text` (complete lines only).
fn last_name_in(text: &str) -> Option<Option<String>> {
    let mut end = text.len();
    while let Some(at) = text[..end].rfind("\"type\":\"session_info\"") {
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[at..].find('\n').map(|i| at + i);
        if let Some(line_end) = line_end
            && let Some(name) = name_from_line(&text[line_start..line_end])
        {
            return Some(name);
        }
        end = line_start.saturating_sub(1);
        if end == 0 {
            break;
        }
    }
    None
}

fn read_at(file: &mut File, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
    file.seek(SeekFrom::Start(offset))?;
    let mut buf = Vec::with_capacity(len);
    file.take(len as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Read what the picker needs of one session file; `None` if it is not a session file.
/// `bytes_read` is increased by what was read.
pub(crate) fn session_info_counted(path: &Path, bytes_read: &mut u64) -> Option<SessionInfo> {
    let mut file = File::open(path).ok()?;
    let meta = file.metadata().ok()?;
    let size = meta.len();
    let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
    let whole = size <= (HEAD_BYTES + TAIL_BYTES) as u64;
    let mut head = read_at(&mut file, 0, if whole { size as usize } else { HEAD_BYTES }).ok()?;
    *bytes_read += head.len() as u64;
    if !whole && !head.contains(&b'\n') {
        // A header longer than the head (a very long cwd, or fields other programs add).
        head = read_at(&mut file, 0, MAX_HEADER_BYTES).ok()?;
        *bytes_read += head.len() as u64;
    }
    let head_text = String::from_utf8_lossy(&head);
    let mut lines = head_text.split('\n');
    let ParsedLine::Header(header) = parse_line(lines.next()?.trim_end().as_bytes()).ok()? else {
        return None;
    };
    let head_complete = whole || head_text.ends_with('\n');
    let mut first_message = None;
    let mut lines = lines.peekable();
    while let Some(line) = lines.next() {
        let is_last = lines.peek().is_none();
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            continue;
        }
        if is_last && !head_complete {
            first_message = preview_from_cut_line(line);
            break;
        }
        if !line.contains("\"user\"") {
            continue;
        }
        if let Ok(ParsedLine::Entry(e)) = parse_line(line.as_bytes())
            && let EntryKind::Message(m) = &e.kind
            && let Some(u) = m.as_user()
        {
            let text = user_text(&u.content);
            if !text.trim().is_empty() {
                first_message = Some(text);
                break;
            }
        }
    }
    let mut name = None;
    if !whole {
        let tail_len = TAIL_BYTES.min(size as usize);
        if let Ok(tail) = read_at(&mut file, size - tail_len as u64, tail_len) {
            *bytes_read += tail.len() as u64;
            name = last_name_in(&String::from_utf8_lossy(&tail));
        }
    }
    let name = match name {
        Some(found) => found,
        None => last_name_in(&head_text).flatten(),
    };
    Some(SessionInfo {
        path: path.to_path_buf(),
        id: header.id,
        cwd: header.cwd,
        name,
        parent_session: header.parent_session,
        created: header.timestamp,
        modified,
        size,
        first_message: first_message
            .map(|t| collapse(&t))
            .filter(|t| !t.is_empty()),
    })
}

/// Read what the picker needs of one session file; `None` if it is not a session file.
pub fn session_info(path: &Path) -> Option<SessionInfo> {
    session_info_counted(path, &mut 0)
}

/// The `.jsonl` files directly in `dir` (none if it does not exist).
fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl") && p.is_file())
        .collect()
}

/// Session folders to look in for a scope.
fn folders(paths: &SessionPaths, scope: ListScope) -> Vec<PathBuf> {
    let mut dirs = vec![paths.dir.clone()];
    if scope == ListScope::AllFolders
        && let Some(root) = &paths.root
    {
        if let Ok(rd) = fs::read_dir(root) {
            let mut subdirs: Vec<PathBuf> = rd
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect();
            subdirs.sort();
            dirs.extend(subdirs);
        }
        dirs.push(root.clone());
    }
    let mut seen = std::collections::HashSet::new();
    dirs.retain(|d| seen.insert(d.clone()));
    dirs
}

/// Threads that read session files at once: the work is mostly waiting on the disk when the
/// files are not cached, and a disk serves several reads at a time.
const LIST_THREADS: usize = 16;

/// The sessions of a scope, newest (last written) first.
pub fn list_sessions(paths: &SessionPaths, scope: ListScope) -> SessionList {
    let files: Vec<PathBuf> = folders(paths, scope)
        .iter()
        .flat_map(|d| jsonl_files(d))
        .collect();
    let chunk = files.len().div_ceil(LIST_THREADS).max(16);
    let parts: Vec<(Vec<SessionInfo>, u64)> = std::thread::scope(|scope| {
        let workers: Vec<_> = files
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    let mut read = 0u64;
                    let infos: Vec<SessionInfo> = part
                        .iter()
                        .filter_map(|f| session_info_counted(f, &mut read))
                        .collect();
                    (infos, read)
                })
            })
            .collect();
        workers.into_iter().filter_map(|w| w.join().ok()).collect()
    });
    let mut list = SessionList::default();
    for (infos, read) in parts {
        list.sessions.extend(infos);
        list.bytes_read += read;
    }
    list.sessions.sort_by(|a, b| {
        b.modified
            .cmp(&a.modified)
            .then_with(|| b.path.cmp(&a.path))
    });
    list
}

/// The header of a session file, reading only its first line (at most 64 KiB).
pub fn read_header(path: &Path) -> Option<SessionHeader> {
    let mut file = File::open(path).ok()?;
    let head = read_at(&mut file, 0, MAX_HEADER_BYTES).ok()?;
    let end = head.iter().position(|b| *b == b'\n').unwrap_or(head.len());
    let line = head[..end].strip_suffix(b"\r").unwrap_or(&head[..end]);
    match parse_line(line).ok()? {
        ParsedLine::Header(h) => Some(h),
        ParsedLine::Entry(_) => None,
    }
}

/// The id in a session file's header.
pub fn header_id(path: &Path) -> Option<String> {
    read_header(path).map(|h| h.id)
}

/// The most recently written session of a folder (for `--continue`); files without a valid
/// header are passed over.
pub fn newest_session(dir: &Path) -> Option<PathBuf> {
    let mut files: Vec<(SystemTime, PathBuf)> = jsonl_files(dir)
        .into_iter()
        .filter_map(|p| Some((fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    files.sort_by(|a, b| b.cmp(a));
    files
        .into_iter()
        .map(|(_, p)| p)
        .find(|p| header_id(p).is_some())
}

/// What `--continue` finds in a folder ([`newest_candidate`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Newest {
    /// No session file (empty files do not count).
    None,
    /// The newest file, a session.
    Session(PathBuf),
    /// The newest file has no valid session header.
    Unreadable(UnreadableNewest),
}

/// The newest session file of a folder, whose header cannot be read, and the ways on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnreadableNewest {
    pub path: PathBuf,
    /// What is wrong with it, in a few words.
    pub reason: String,
    /// The newest file after it that is a session.
    pub next: Option<PathBuf>,
    /// It holds entries a repaired copy can go on from (`--session` with its path makes one).
    pub repairable: bool,
}

impl std::fmt::Display for UnreadableNewest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = self.path.display();
        write!(
            f,
            "the newest session file of this folder has no valid session header ({}), so it \
             was not opened and nothing was started:\n  {path}\nTo go on, run pi again with one of:",
            self.reason
        )?;
        if let Some(next) = &self.next {
            write!(
                f,
                "\n  --session {}   continue the next newest session",
                next.display()
            )?;
        }
        if self.repairable {
            write!(
                f,
                "\n  --session {path}   continue in a repaired copy of it (the file is left as it is)"
            )?;
        }
        write!(f, "\n  (no -c)   start a new session")
    }
}

/// Why the first line of `path` is not a session header.
fn header_problem(path: &Path) -> String {
    let Ok(mut file) = File::open(path) else {
        return "it cannot be opened".into();
    };
    let head = match read_at(&mut file, 0, MAX_HEADER_BYTES) {
        Ok(h) => h,
        Err(e) => return format!("it cannot be read: {e}"),
    };
    let end = head.iter().position(|b| *b == b'\n').unwrap_or(head.len());
    let line = head[..end].strip_suffix(b"\r").unwrap_or(&head[..end]);
    match parse_line(line) {
        Ok(ParsedLine::Entry(_)) => "its first line is an entry, not the header".into(),
        Ok(ParsedLine::Header(_)) => "its header is damaged".into(),
        Err(reason) => format!("its first line cannot be read: {reason}"),
    }
}

/// The newest file of a folder for `--continue`: a session, or a file without a valid header
/// (reported, never passed over), or nothing. Empty files are passed over: there is nothing in
/// them to lose.
pub fn newest_candidate(dir: &Path) -> Newest {
    let mut files: Vec<(SystemTime, PathBuf)> = jsonl_files(dir)
        .into_iter()
        .filter_map(|p| {
            let meta = fs::metadata(&p).ok()?;
            (meta.len() > 0).then_some(())?;
            Some((meta.modified().ok()?, p))
        })
        .collect();
    files.sort_by(|a, b| b.cmp(a));
    let mut files = files.into_iter().map(|(_, p)| p);
    let Some(newest) = files.next() else {
        return Newest::None;
    };
    if header_id(&newest).is_some() {
        return Newest::Session(newest);
    }
    let repairable = match super::load::Session::load(&newest) {
        // A header further down (after damaged lines) still makes it a session.
        Ok(s) if !s.header_missing() => return Newest::Session(newest),
        Ok(s) => !s.entries.is_empty(),
        Err(_) => false,
    };
    Newest::Unreadable(UnreadableNewest {
        reason: header_problem(&newest),
        next: files.find(|p| header_id(p).is_some()),
        path: newest,
        repairable,
    })
}

/// A session found by [`find_session`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundSession {
    pub path: PathBuf,
    /// From the header (from the file name, or empty, for a file given by path whose header
    /// cannot be read).
    pub id: String,
    /// False when it belongs to another project's folder (the Node.js `pi` then offers to
    /// fork it into the current one).
    pub in_current_folder: bool,
}

/// True when `--session`/`--fork` text names a file rather than an id.
pub(crate) fn is_path_query(query: &str) -> bool {
    query.contains('/') || query.contains('\\') || query.ends_with(".jsonl")
}

/// True when `--session`/`--fork` text holds a folder separator (a path, never a name).
fn has_separator(query: &str) -> bool {
    query.contains('/') || query.contains('\\')
}

/// Session files of `dirs` whose id or file name starts with `query` (ids: dashes and case
/// ignored; names: case ignored), with their header ids.
fn matches_in(dirs: &[PathBuf], query: &str) -> Vec<(PathBuf, String)> {
    let lower = query.to_lowercase();
    let mut found = Vec::new();
    for dir in dirs {
        for path in jsonl_files(dir) {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let by_name = name.to_lowercase().starts_with(&lower);
            // The file name carries the id; read the header only when it may match.
            if let Some(id) = id_from_file_name(name).filter(|id| looks_like_uuid(id))
                && !by_name
                && !id_starts_with(id, query)
            {
                continue;
            }
            if let Some(id) = header_id(&path)
                && (by_name || id_starts_with(&id, query))
            {
                found.push((path, id));
            }
        }
    }
    found
}

/// What an ambiguous query lists of each session it matched: an id start that tells them
/// apart, the day and time it was started and its name or first message.
fn candidates(found: &[(PathBuf, String)]) -> Vec<Candidate> {
    let ids: Vec<&str> = found.iter().map(|(_, id)| id.as_str()).collect();
    found
        .iter()
        .zip(unique_prefixes(&ids))
        .map(|((path, _), short_id)| {
            let info = session_info(path);
            Candidate {
                path: path.clone(),
                short_id,
                started: info
                    .as_ref()
                    .map(|i| {
                        i.created
                            .chars()
                            .take(16)
                            .collect::<String>()
                            .replace('T', " ")
                    })
                    .unwrap_or_default(),
                title: info.map(|i| i.title().to_string()).unwrap_or_default(),
            }
        })
        .collect()
}

fn pick(
    query: &str,
    mut found: Vec<(PathBuf, String)>,
    local: bool,
) -> Result<Option<FoundSession>, SessionError> {
    let whole = |(path, id): &(PathBuf, String)| {
        id.eq_ignore_ascii_case(query)
            || path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.eq_ignore_ascii_case(query))
    };
    let exact: Vec<&(PathBuf, String)> = found.iter().filter(|f| whole(f)).collect();
    let chosen = match (exact.as_slice(), found.as_slice()) {
        ([one], _) => (*one).clone(),
        (_, [one]) => one.clone(),
        (_, []) => return Ok(None),
        _ => {
            found.sort_by(|a, b| a.1.cmp(&b.1));
            return Err(SessionError::Ambiguous {
                query: query.to_string(),
                matches: candidates(&found),
            });
        }
    };
    Ok(Some(FoundSession {
        path: chosen.0,
        id: chosen.1,
        in_current_folder: local,
    }))
}

/// Sessions of this folder named `query` (case ignored).
fn named_in(paths: &SessionPaths, query: &str) -> Vec<(PathBuf, String)> {
    list_sessions(paths, ListScope::CurrentFolder)
        .sessions
        .into_iter()
        .filter(|s| {
            s.name
                .as_deref()
                .is_some_and(|n| n.to_lowercase() == query.to_lowercase())
        })
        .map(|s| (s.path, s.id))
        .collect()
}

/// Resolve `--session`/`--fork` text: a path to a file (it contains `/` or `\`, or ends in
/// `.jsonl`), else the start of a session id (dashes and case ignored) or of a session file's
/// name, looked up in this folder first, then as the name of a session of this folder, then in
/// every project. Several matches are [`SessionError::Ambiguous`] (unless one is the whole id
/// or file name).
pub fn find_session(paths: &SessionPaths, query: &str) -> Result<FoundSession, SessionError> {
    let query = query.trim();
    if query.is_empty() {
        return Err(SessionError::NotFound(query.to_string()));
    }
    if is_path_query(query) {
        let path = PathBuf::from(query);
        if path.is_file() {
            return Ok(found_by_path(paths, path));
        }
        if has_separator(query) {
            return Err(SessionError::NotFound(query.to_string()));
        }
        // A bare file name: looked up among the sessions below.
    }
    let local = [paths.dir.clone()];
    if let Some(found) = pick(query, matches_in(&local, query), true)? {
        return Ok(found);
    }
    if let Some(found) = pick(query, named_in(paths, query), true)? {
        return Ok(found);
    }
    let others: Vec<PathBuf> = folders(paths, ListScope::AllFolders)
        .into_iter()
        .filter(|d| *d != paths.dir)
        .collect();
    pick(query, matches_in(&others, query), false)?
        .ok_or_else(|| SessionError::NotFound(query.to_string()))
}

/// A session file given by its path.
fn found_by_path(paths: &SessionPaths, path: PathBuf) -> FoundSession {
    // A file without a readable header is still named: opening it makes a repaired copy when
    // it holds entries, and says it is not a session when it holds none.
    let id = header_id(&path)
        .or_else(|| {
            let name = path.file_name()?.to_str()?;
            id_from_file_name(name).map(str::to_string)
        })
        .unwrap_or_default();
    let in_current_folder = path
        .parent()
        .and_then(|p| fs::canonicalize(p).ok())
        .zip(fs::canonicalize(&paths.dir).ok())
        .is_some_and(|(a, b)| a == b);
    FoundSession {
        path,
        id,
        in_current_folder,
    }
}

/// How a message entry line starts, as this crate and the Node.js `pi` write it (`type` first,
/// no spaces).
const MESSAGE_START: &[u8] = br#"{"type":"message""#;
/// How every entry line of those two writers starts.
const TYPE_START: &[u8] = br#"{"type":""#;
/// Bytes of a line's start kept to classify it: the message start and the byte after it.
const LINE_HEAD: usize = MESSAGE_START.len() + 1;

/// Counts message entries line by line without decoding them.
#[derive(Default)]
struct MessageCounter {
    count: usize,
    /// The line so far (leading whitespace left out): its first [`LINE_HEAD`] bytes, or all of
    /// it for a line written some other way (see `whole`).
    line: Vec<u8>,
    /// The line starts with `{` but not the way our writers start one, so it is kept whole and
    /// decoded if it may be a message.
    whole: bool,
    /// The last byte of the line that was not whitespace.
    last: u8,
}

impl MessageCounter {
    /// Take in the next bytes of the file.
    fn feed(&mut self, mut bytes: &[u8]) {
        while let Some(nl) = memchr::memchr(b'\n', bytes) {
            self.extend(&bytes[..nl]);
            self.end_line();
            bytes = &bytes[nl + 1..];
        }
        self.extend(bytes);
    }

    /// The file ended: its last line (if it has no newline) ends too.
    fn finish(mut self) -> usize {
        self.end_line();
        self.count
    }

    /// Take in a piece of the current line (no newline in it).
    fn extend(&mut self, mut piece: &[u8]) {
        if self.line.is_empty() {
            let skip = piece
                .iter()
                .position(|b| !b.is_ascii_whitespace())
                .unwrap_or(piece.len());
            piece = &piece[skip..];
        }
        if let Some(last) = piece.iter().rev().find(|b| !b.is_ascii_whitespace()) {
            self.last = *last;
        }
        if self.whole {
            self.line.extend_from_slice(piece);
            return;
        }
        let room = LINE_HEAD.saturating_sub(self.line.len());
        let had = self.line.len();
        self.line.extend_from_slice(&piece[..room.min(piece.len())]);
        if had < TYPE_START.len()
            && self.line.len() >= TYPE_START.len()
            && self.line[0] == b'{'
            && !self.line.starts_with(TYPE_START)
        {
            self.whole = true;
            self.line.extend_from_slice(&piece[room.min(piece.len())..]);
        }
    }

    /// The current line ended.
    fn end_line(&mut self) {
        let line = &self.line;
        let counted = if self.whole {
            // Decoded only when it names messages at all.
            memchr::memmem::find(line, br#""message""#).is_some()
                && matches!(
                    parse_line(line),
                    Ok(ParsedLine::Entry(e)) if e.kind.type_name() == "message"
                )
        } else {
            self.last == b'}'
                && line.starts_with(MESSAGE_START)
                && matches!(line.get(MESSAGE_START.len()), Some(b',' | b'}'))
        };
        if counted {
            self.count += 1;
        }
        self.line.clear();
        self.whole = false;
        self.last = 0;
    }
}

/// The number of `message` entries in a session file (every branch), or `None` if it cannot be
/// read. Lines are classified by how they start (`{"type":"message",`, as this crate and the
/// Node.js `pi` write them) without being decoded; a line that does not end in `}` (a torn
/// last line) does not count. Only a line that starts with `{` in some other way and mentions
/// `"message"` is decoded.
pub fn count_messages(path: &Path) -> Option<usize> {
    let file = File::open(path).ok()?;
    let mut reader = BufReader::with_capacity(256 * 1024, file);
    let mut counter = MessageCounter::default();
    loop {
        let chunk = reader.fill_buf().ok()?;
        if chunk.is_empty() {
            break;
        }
        let len = chunk.len();
        counter.feed(chunk);
        reader.consume(len);
    }
    Some(counter.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_from_cut_lines() {
        let line = r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"hello\nworld \"quoted\" \u00e9 and then the line is cu"#;
        assert_eq!(
            preview_from_cut_line(line).as_deref(),
            Some("hello\nworld \"quoted\" é and then the line is cu")
        );
        let blocks = r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"from blocks"#;
        assert_eq!(
            preview_from_cut_line(blocks).as_deref(),
            Some("from blocks")
        );
        assert_eq!(preview_from_cut_line(r#"{"type":"model_change""#), None);
    }

    #[test]
    fn message_lines_are_counted_however_the_reads_split_them() {
        let text = concat!(
            r#"{"type":"session","version":3,"id":"u","timestamp":"t","cwd":"/w"}"#,
            "\n",
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi"}}"#,
            "\r\n\n   \n",
            r#"{"type":"model_change","id":"b","parentId":"a","timestamp":"t","provider":"p","modelId":"m"}"#,
            "\n",
            r#"{"type":"messages","id":"c","parentId":"b","timestamp":"t"}"#,
            "\n",
            r#"  { "id": "d", "type": "message", "parentId": "c", "timestamp": "t", "message": {"role":"user","content":"spaced"} }"#,
            "\n",
            r#"{"id":"e","type":"custom","parentId":"d","timestamp":"t","customType":"message"}"#,
            "\n",
            r#"{"type":"message","id":"f","parentId":"e","timestamp":"t","message":{"role":"user","content":"last"}}"#,
            "\n",
            r#"{"type":"message","id":"g","parentId":"f","timestamp":"t","message":{"role":"us"#,
        );
        for piece in [1, 2, 3, 7, 16, text.len()] {
            let mut counter = MessageCounter::default();
            for chunk in text.as_bytes().chunks(piece) {
                counter.feed(chunk);
            }
            assert_eq!(counter.finish(), 3, "pieces of {piece} bytes");
        }
    }

    #[test]
    fn collapse_limits_length() {
        assert_eq!(collapse("  a \n\n b  "), "a b");
        let long = "word ".repeat(100);
        let c = collapse(&long);
        assert_eq!(c.chars().count(), PREVIEW_CHARS + 1);
        assert!(c.ends_with('…'));
    }

    #[test]
    fn names_from_text() {
        let text = concat!(
            r#"{"type":"session_info","id":"a","parentId":null,"timestamp":"t","name":"first"}"#,
            "\n",
            r#"{"type":"session_info","id":"b","parentId":"a","timestamp":"t","name":"second"}"#,
            "\n",
            r#"{"type":"session_info","id":"c","parentId":"b","timest"#
        );
        assert_eq!(last_name_in(text), Some(Some("second".into())));
        assert_eq!(last_name_in("nothing"), None);
    }
}
