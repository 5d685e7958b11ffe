//! Loading a session file into a [`Session`]: header, entries, tree index and warnings.
//!
//! Loading never fails because of damage. Lines are read one at a time (the file is never held
//! in memory whole; a large file is read as two halves split at a line boundary, by two
//! threads, and the halves joined in order); a line that is not valid JSON — a torn last line
//! after a crash, a corrupt line in the middle — is skipped with a [`LoadWarning`] naming its
//! line number, and the rest loads. A damaged line that still holds entries (invalid UTF-8, two
//! entries on one line) gives them up, with a warning (see `salvage`). A byte order mark in
//! front of the header is skipped.
//!
//! Links between entries are checked once all lines are read, and every repair is made in
//! memory only and named in a warning with its line: an entry whose parent is not in the file
//! (a lost line, a hand edit) continues from the entry before it in file order, so what came
//! before is still its history; a loop of parents is broken at its first entry in file order,
//! which continues from the entry before it. A message of a role this pi does not know is kept
//! and reported (the context quotes it to the model). The file itself is never modified. Only
//! I/O failures (missing file, no permission) and files with nothing session-like in them are
//! errors.
//!
//! Old formats are read as well: version 1 files have no entry ids, so each entry gets a stable
//! id derived from its line number (`0000002a`) and is chained to the previous one; version 1
//! compactions point at their first kept entry by index, which is translated to that entry's id;
//! version 2's `hookMessage` role is read as `custom`. These ids depend only on the file, so
//! entries appended later by a resumed session point at the same parents on every load.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::entry::{
    CURRENT_VERSION, EntryKind, ParsedEntry, ParsedLine, SessionEntry, SessionHeader, parse_line,
};
use super::error::{LoadWarning, SessionError};
use super::ids::{entry_id, looks_like_uuid, uuid_v7};
use super::layout::id_from_file_name;
use super::salvage::{Salvaged, salvage};
use super::time::iso_now;
use crate::agent::protocol::types::{AgentMessage, CustomMessage};

/// Entry ids to their place. foldhash, not SipHash: hashing the ids took 2-3% of resuming
/// a 20,000-entry session (foldhash's seed is still random per process).
type IdIndex = HashMap<String, usize, foldhash::fast::RandomState>;

/// A loaded session: header, every entry in file order, and an id index.
#[derive(Clone, Debug)]
pub struct Session {
    /// The file it was read from (`None` for sessions read from memory).
    pub path: Option<PathBuf>,
    pub header: SessionHeader,
    /// All entries in file order (every branch).
    pub entries: Vec<SessionEntry>,
    /// Damage and oddities found while loading, with line numbers.
    pub warnings: Vec<LoadWarning>,
    index: IdIndex,
    /// Some id appears on more than one entry (only in damaged files).
    duplicate_ids: bool,
    /// The file has no readable header; `header` was made up.
    header_missing: bool,
    /// Bytes read from the file.
    pub(crate) byte_len: u64,
    /// False when the last line of the file has no newline (a torn write or an editor).
    pub(crate) ends_with_newline: bool,
}

/// Lines longer than this are not read into memory (a single 512 MiB line is not a message).
const MAX_LINE: usize = 512 << 20;

/// Files at least this big are parsed by two threads, each taking one half.
const PARALLEL_MIN: u64 = 4 << 20;

/// One line as read, before it joins the session.
enum Scanned {
    Blank {
        complete: bool,
    },
    TooLong {
        complete: bool,
    },
    Line {
        complete: bool,
        /// The line is (the start of) a session header (checked only when it did not parse).
        header_start: bool,
        parsed: Result<ParsedLine, String>,
    },
    /// A damaged line that still held entries (see [`salvage`]).
    Salvaged {
        complete: bool,
        salvaged: Salvaged,
    },
}

/// The lines of a byte range, parsed.
struct Scan {
    lines: Vec<Scanned>,
    bytes: u64,
}

/// Read and parse every line of `reader`. A line that lies wholly in the reader's buffer is
/// parsed where it lies; only a line that crosses the buffer's end is gathered into a copy
/// first (copying every line cost a pass over the whole file).
fn scan(mut reader: impl BufRead, name: &Path) -> Result<Scan, SessionError> {
    let mut out = Scan {
        lines: Vec::new(),
        bytes: 0,
    };
    let mut buf = Vec::new();
    loop {
        let chunk = reader
            .fill_buf()
            .map_err(|e| SessionError::io("read", name, e))?;
        if chunk.is_empty() {
            break;
        }
        // (A line in the buffer longer than the cap, possible only for an in-memory reader,
        // goes the long way below and is skipped there.)
        if let Some(end) = memchr::memchr(b'\n', chunk).filter(|&end| end <= MAX_LINE) {
            out.lines.push(scan_line(&chunk[..=end], true));
            reader.consume(end + 1);
            out.bytes += end as u64 + 1;
            continue;
        }
        // The line goes past the buffer: gather it (up to the cap) and read on.
        buf.clear();
        let n = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| SessionError::io("read", name, e))?;
        out.bytes += n as u64;
        let mut complete = buf.last() == Some(&b'\n');
        if !complete && n > MAX_LINE {
            // Skip the rest of an absurdly long line.
            loop {
                let chunk = reader
                    .fill_buf()
                    .map_err(|e| SessionError::io("read", name, e))?;
                if chunk.is_empty() {
                    break;
                }
                let (used, done) = match memchr::memchr(b'\n', chunk) {
                    Some(p) => (p + 1, true),
                    None => (chunk.len(), false),
                };
                reader.consume(used);
                out.bytes += used as u64;
                if done {
                    complete = true;
                    break;
                }
            }
            out.lines.push(Scanned::TooLong { complete });
            continue;
        }
        out.lines.push(scan_line(&buf, complete));
    }
    Ok(out)
}

/// Parse one line (with its line ending, if it has one).
fn scan_line(mut line: &[u8], complete: bool) -> Scanned {
    while let Some((last, rest)) = line.split_last()
        && matches!(last, b'\n' | b'\r')
    {
        line = rest;
    }
    if line.iter().all(u8::is_ascii_whitespace) {
        return Scanned::Blank { complete };
    }
    let parsed = parse_line(line);
    if parsed.is_err()
        && let Some(salvaged) = salvage(line)
    {
        return Scanned::Salvaged { complete, salvaged };
    }
    let header_start = parsed.is_err() && is_header_start(line);
    Scanned::Line {
        complete,
        header_start,
        parsed,
    }
}

/// Where the second half of a file starts: the first line start at or after the middle.
/// `None` when the second half would be empty.
fn split_point(path: &Path, size: u64) -> std::io::Result<Option<u64>> {
    // A handle of its own: a cloned one would share (and move) the reading position.
    let mut f = File::open(path)?;
    let mid = size / 2;
    f.seek(SeekFrom::Start(mid))?;
    let mut reader = BufReader::with_capacity(64 * 1024, f);
    let mut skipped = 0u64;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(None);
        }
        if let Some(p) = chunk.iter().position(|c| *c == b'\n') {
            skipped += p as u64 + 1;
            let at = mid + skipped;
            return Ok((at < size).then_some(at));
        }
        let len = chunk.len();
        reader.consume(len);
        skipped += len as u64;
    }
}

/// Make room in this thread's memory arena for what parsing `bytes` of a session file will
/// allocate (about one and a half times as much), in one step.
///
/// A new thread gets an arena of its own, and glibc grows it only as far as each allocation
/// needs: for the half of a 50 MB session that the second thread parses, that was 7,500
/// `mprotect` calls, a page at a time (4% of a resume). Blocks just under the size glibc maps
/// on their own are taken and given back at once: the arena grows in a few hundred steps, and
/// what was opened stays open for the parse, while the freed pages go back to the system (only
/// their headers were touched). With another allocator this is a few idle allocations.
fn reserve_arena(bytes: u64) {
    /// Under glibc's smallest threshold for mapping a block on its own (128 KiB).
    const BLOCK: usize = 120 << 10;
    /// An arena's region is 64 MiB; past that glibc opens another one anyway.
    const MOST: u64 = 48 << 20;
    let want = (bytes.saturating_mul(3) / 2).min(MOST);
    let blocks: Vec<Vec<u8>> = (0..want / BLOCK as u64)
        .map(|_| std::hint::black_box(Vec::with_capacity(BLOCK)))
        .collect();
    drop(std::hint::black_box(blocks));
}

impl Session {
    /// Read a session file. See the module notes for what counts as damage. Large files are
    /// parsed by two threads.
    pub fn load(path: &Path) -> Result<Session, SessionError> {
        let file = File::open(path).map_err(|e| SessionError::io("open", path, e))?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        let split = if size >= PARALLEL_MIN {
            split_point(path, size).map_err(|e| SessionError::io("read", path, e))?
        } else {
            None
        };
        let scans = match split {
            None => vec![scan(BufReader::with_capacity(1 << 20, file), path)?],
            Some(at) => {
                let mut second = File::open(path).map_err(|e| SessionError::io("open", path, e))?;
                second
                    .seek(SeekFrom::Start(at))
                    .map_err(|e| SessionError::io("read", path, e))?;
                let first = BufReader::with_capacity(1 << 20, file.take(at));
                let second = BufReader::with_capacity(1 << 20, second);
                let (a, b) = std::thread::scope(|s| {
                    let worker = s.spawn(|| {
                        reserve_arena(size - at);
                        scan(second, path)
                    });
                    let a = scan(first, path);
                    let b = worker.join().unwrap_or_else(|_| {
                        Err(SessionError::io(
                            "read",
                            path,
                            std::io::Error::other("the reading thread failed"),
                        ))
                    });
                    (a, b)
                });
                vec![a?, b?]
            }
        };
        let mut session = Self::assemble(scans, Some(path), path)?;
        session.path = Some(path.to_path_buf());
        Ok(session)
    }

    /// Read a session from any byte stream (`path` only names it in errors and gives the
    /// fallback id).
    pub fn read(reader: impl BufRead, path: Option<&Path>) -> Result<Session, SessionError> {
        let name = path.map_or_else(|| PathBuf::from("<memory>"), Path::to_path_buf);
        let scanned = scan(reader, &name)?;
        Self::assemble(vec![scanned], path, &name)
    }

    /// Add scanned lines, in file order, to a new session.
    fn assemble(
        scans: Vec<Scan>,
        path: Option<&Path>,
        name: &Path,
    ) -> Result<Session, SessionError> {
        let mut b = Builder::default();
        // Sized once for every line: growing a 20,000-entry index rehashes it a dozen times.
        let lines: usize = scans.iter().map(|part| part.lines.len()).sum();
        b.entries.reserve(lines);
        b.index.reserve(lines);
        b.by_position.reserve(lines);
        b.lines.reserve(lines);
        let mut line_no = 0usize;
        for part in scans {
            b.byte_len += part.bytes;
            for scanned in part.lines {
                line_no += 1;
                b.feed(line_no, scanned);
            }
        }
        b.finish(path, name)
    }

    /// True when the file has no readable session header (the one in `header` was made up).
    /// Appending to such a file would leave it unreadable for the Node.js `pi`, so
    /// [`crate::session::open_session`] continues such a session in a repaired copy.
    pub fn header_missing(&self) -> bool {
        self.header_missing
    }

    /// Bytes read from the file.
    pub fn byte_len(&self) -> u64 {
        self.byte_len
    }

    /// The session id (from the header).
    pub fn id(&self) -> &str {
        &self.header.id
    }

    /// The working directory recorded in the header.
    pub fn cwd(&self) -> &str {
        &self.header.cwd
    }

    /// The current position: the last entry in the file.
    pub fn leaf_id(&self) -> Option<&str> {
        self.entries.last().map(|e| e.id.as_str())
    }

    /// The entry with this id (the last one, if a damaged file repeats an id).
    pub fn entry(&self, id: &str) -> Option<&SessionEntry> {
        self.index.get(id).map(|i| &self.entries[*i])
    }

    pub(crate) fn index_of(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }

    /// Indices of the entries from the root down to `leaf` (empty for `None` or an unknown id).
    /// A missing parent ends the walk; a cycle in a damaged file cannot loop forever.
    pub(crate) fn path_indices(&self, leaf: Option<&str>) -> Vec<usize> {
        let mut path = Vec::new();
        let mut current = leaf.and_then(|id| self.index_of(id));
        while let Some(i) = current {
            if path.len() > self.entries.len() {
                break;
            }
            path.push(i);
            current = self.parent_index(i);
        }
        path.reverse();
        path
    }

    /// The index of the parent of entry `i`: `None` for a root, an entry whose parent is not
    /// in the file, or one that names itself.
    pub(crate) fn parent_index(&self, i: usize) -> Option<usize> {
        let p = self.entries[i].parent_id.as_deref()?;
        // Usually the parent is the entry just before: skip the hash lookup then.
        if !self.duplicate_ids && i > 0 && self.entries[i - 1].id == p {
            Some(i - 1)
        } else {
            self.index_of(p).filter(|p| *p != i)
        }
    }

    /// The entries from the root down to `leaf` (the branch `leaf` is on).
    pub fn branch(&self, leaf: Option<&str>) -> Vec<&SessionEntry> {
        self.path_indices(leaf)
            .into_iter()
            .map(|i| &self.entries[i])
            .collect()
    }

    /// Entries whose parent is `id`, in file order.
    pub fn children(&self, id: &str) -> Vec<&SessionEntry> {
        self.entries
            .iter()
            .filter(|e| e.parent_id.as_deref() == Some(id))
            .collect()
    }

    /// The display name: the latest `session_info` entry (an empty name clears it).
    pub fn name(&self) -> Option<&str> {
        self.entries
            .iter()
            .rev()
            .find_map(|e| match &e.kind {
                EntryKind::SessionInfo { name } => Some(name.as_deref().map(str::trim)),
                _ => None,
            })?
            .filter(|n| !n.is_empty())
    }

    /// Current labels by target entry id (latest label entry wins; an empty one clears).
    pub fn labels(&self) -> HashMap<&str, &str> {
        let mut labels = HashMap::new();
        for e in &self.entries {
            if let EntryKind::Label { target_id, label } = &e.kind {
                match label.as_deref().map(str::trim).filter(|l| !l.is_empty()) {
                    Some(l) => labels.insert(target_id.as_str(), l),
                    None => labels.remove(target_id.as_str()),
                };
            }
        }
        labels
    }

    /// The set of entry ids in use (for making new ones).
    pub(crate) fn entry_ids(&self) -> HashSet<String> {
        self.index.keys().cloned().collect()
    }
}

/// True for a line that is, or is the start of, a session header.
fn is_header_start(line: &[u8]) -> bool {
    const START: &[u8] = br#"{"type":"session""#;
    let line = super::entry::without_bom(line);
    START.starts_with(line) || line.starts_with(START)
}

/// Roles of messages this pi reads (the loop's own, and the Node.js `pi`'s extra ones).
fn is_known_role(role: &str) -> bool {
    matches!(
        role,
        "user"
            | "assistant"
            | "toolResult"
            | "developer"
            | "bashExecution"
            | "custom"
            | "hookMessage"
            | "compactionSummary"
            | "branchSummary"
    )
}

/// Collects lines into a session.
#[derive(Default)]
struct Builder {
    header: Option<SessionHeader>,
    entries: Vec<SessionEntry>,
    index: IdIndex,
    warnings: Vec<LoadWarning>,
    /// Entry index of each parsed line (`None` for the header), for version 1 compactions.
    by_position: Vec<Option<usize>>,
    /// (entry index, line index of the first kept entry) of version 1 compactions.
    v1_compactions: Vec<(usize, u64)>,
    byte_len: u64,
    ends_with_newline: bool,
    saw_anything: bool,
    duplicate_ids: bool,
    /// The only header seen was cut short (a crash during the very first write).
    torn_header: bool,
    /// A line was skipped since the last entry.
    after_gap: bool,
    /// Entries that directly follow skipped lines (their indices).
    gap_followers: HashSet<usize>,
    /// The line of each entry (1-based), for warnings about links between entries.
    lines: Vec<usize>,
}

impl Builder {
    fn warn(&mut self, line: usize, message: String) {
        self.warnings.push(LoadWarning { line, message });
    }

    /// A line was skipped: the next entry may have lost its parent.
    fn skip(&mut self, line: usize, message: String) {
        self.warn(line, message);
        self.after_gap = true;
    }

    fn feed(&mut self, line_no: usize, scanned: Scanned) {
        match scanned {
            Scanned::Blank { complete } => self.ends_with_newline = complete,
            Scanned::TooLong { complete } => {
                self.ends_with_newline = complete;
                self.skip(line_no, "line is longer than 512 MiB; skipped".into());
            }
            Scanned::Salvaged { complete, salvaged } => {
                self.ends_with_newline = complete;
                if salvaged.lost_fragment {
                    self.skip(line_no, salvaged.note);
                } else {
                    self.warn(line_no, salvaged.note);
                }
                for parsed in salvaged.parsed {
                    self.add(line_no, parsed);
                }
            }
            Scanned::Line {
                complete,
                header_start,
                parsed,
            } => {
                self.ends_with_newline = complete;
                match parsed {
                    Ok(parsed) => self.add(line_no, parsed),
                    Err(_) if !self.saw_anything && header_start => {
                        self.torn_header = true;
                        self.skip(line_no, "the session header is cut short; skipped".into());
                    }
                    Err(reason) if !complete => self.skip(
                        line_no,
                        format!(
                            "the file ends in the middle of this line (an interrupted write); skipped ({reason})"
                        ),
                    ),
                    Err(reason) => {
                        self.skip(line_no, format!("unreadable line skipped ({reason})"))
                    }
                }
            }
        }
    }

    fn add(&mut self, line_no: usize, parsed: ParsedLine) {
        self.saw_anything = true;
        match parsed {
            ParsedLine::Header(h) => {
                if self.header.is_none() && self.entries.is_empty() {
                    self.header = Some(h);
                    self.by_position.push(None);
                } else {
                    self.warn(line_no, "a second session header; ignored".into());
                }
            }
            ParsedLine::Entry(e) => self.add_entry(line_no, e),
        }
    }

    fn add_entry(&mut self, line_no: usize, e: ParsedEntry) {
        if let Some(p) = e.problem {
            self.warn(line_no, format!("{p}; kept but not used"));
        }
        let at = self.entries.len();
        let id = match e.id.filter(|id| !id.is_empty()) {
            Some(id) => {
                // One probe of the index: it holds 20,000 ids for a long session.
                if self.index.insert(id.clone(), at).is_some() {
                    self.duplicate_ids = true;
                    self.warn(
                        line_no,
                        format!("entry id {id} appears twice; the later entry wins"),
                    );
                }
                id
            }
            None => {
                // Version 1: a stable id from the line number.
                let derived = format!("{line_no:08x}");
                let id = if self.index.contains_key(&derived) {
                    let taken: HashSet<String> = self.index.keys().cloned().collect();
                    entry_id(&taken)
                } else {
                    derived
                };
                self.index.insert(id.clone(), at);
                id
            }
        };
        // No `parentId` key at all (version 1): chain to the previous entry.
        let parent_id = match e.parent_id {
            Some(p) => p.filter(|p| !p.is_empty()),
            None => self.entries.last().map(|p| p.id.clone()),
        };
        let timestamp = e
            .timestamp
            .or_else(|| self.header.as_ref().map(|h| h.timestamp.clone()))
            .unwrap_or_default();
        let mut kind = e.kind;
        if let EntryKind::Message(AgentMessage::Custom(c)) = &mut kind
            && c.role == "hookMessage"
        {
            let fields = std::mem::take(&mut c.fields);
            **c = CustomMessage::new("custom", fields);
        }
        if let (Some(index), EntryKind::Compaction(c)) = (e.first_kept_entry_index, &kind)
            && c.first_kept_entry_id.is_empty()
        {
            self.v1_compactions.push((at, index));
        }
        if std::mem::take(&mut self.after_gap) {
            self.gap_followers.insert(at);
        }
        if let EntryKind::Message(AgentMessage::Custom(c)) = &kind
            && !is_known_role(&c.role)
        {
            self.warn(
                line_no,
                format!(
                    "a message with the role `{}`, which this pi does not know; the model \
                     sees it as a quoted note",
                    c.role
                ),
            );
        }
        self.lines.push(line_no);
        self.by_position.push(Some(at));
        self.entries.push(SessionEntry {
            id,
            parent_id,
            timestamp,
            kind,
        });
    }

    /// Re-attach every entry whose parent is not in the file to the entry before it in file
    /// order (in memory only), so one lost line does not cut off the conversation before it.
    fn bridge_missing_parents(&mut self) {
        for at in 0..self.entries.len() {
            let Some(parent) = self.entries[at].parent_id.as_deref() else {
                continue;
            };
            // Usually the parent is the entry just before: no hash lookup then.
            let follows = at > 0 && self.entries[at - 1].id == parent;
            if follows || self.index.contains_key(parent) {
                continue;
            }
            let line = self.lines[at];
            let id = &self.entries[at].id;
            let cause = if self.gap_followers.contains(&at) {
                format!("the parent of entry {id} was on a damaged line")
            } else {
                format!("the parent of entry {id} ({parent}) is not in the file")
            };
            let bridge = at.checked_sub(1).map(|b| self.entries[b].id.clone());
            let message = match &bridge {
                Some(b) => format!("{cause}; continuing from entry {b}, the one before it"),
                None => format!("{cause}; the conversation starts with it"),
            };
            self.warn(line, message);
            self.entries[at].parent_id = bridge;
        }
    }

    /// Break every loop of parents (an entry that is, through its parents, its own ancestor):
    /// the loop's first entry in file order is re-attached to the entry before it, with a
    /// warning, so its branch reads in file order and nothing on it is repeated or lost.
    fn break_parent_loops(&mut self) {
        while let Some(cycle) = self.find_parent_loop() {
            let Some(&first) = cycle.iter().min() else {
                return;
            };
            // The entry before it, named by an id that leads back to that entry: when ids
            // repeat, an earlier entry's id may name a later one, and re-attaching to it
            // would close the same loop again. Each break turns a link that pointed forward
            // (or to itself) into one that points back, so the breaking ends.
            let bridge_at = (0..first)
                .rev()
                .find(|&b| self.index.get(&self.entries[b].id) == Some(&b));
            let bridge = bridge_at.map(|b| self.entries[b].id.clone());
            let which = if bridge_at.is_some_and(|b| b + 1 == first) {
                "the one before it"
            } else {
                "the closest earlier entry with an id of its own"
            };
            let mut members: Vec<usize> = cycle.clone();
            members.sort_unstable();
            let names: Vec<&str> = members
                .iter()
                .map(|&i| self.entries[i].id.as_str())
                .collect();
            let id = &self.entries[first].id;
            let message = match &bridge {
                Some(b) => format!(
                    "the parents of entry {id} loop back to it (through {}); continuing from \
                     entry {b}, {which}",
                    names.join(", ")
                ),
                None => format!(
                    "the parents of entry {id} loop back to it (through {}); the conversation \
                     starts with it",
                    names.join(", ")
                ),
            };
            self.warn(self.lines[first], message);
            self.entries[first].parent_id = bridge;
        }
    }

    /// The entries of one loop of parents, if the file has any.
    fn find_parent_loop(&self) -> Option<Vec<usize>> {
        const NEW: u8 = 0;
        const ON_PATH: u8 = 1;
        const DONE: u8 = 2;
        let n = self.entries.len();
        // As `Session::parent_index` finds it (a repeated id means the later entry).
        let parent = |i: usize| {
            let p = self.entries[i].parent_id.as_deref()?;
            if !self.duplicate_ids && i > 0 && self.entries[i - 1].id == p {
                Some(i - 1)
            } else {
                self.index.get(p).copied()
            }
        };
        let mut state = vec![NEW; n];
        let mut path = Vec::new();
        for start in 0..n {
            if state[start] != NEW {
                continue;
            }
            path.clear();
            let mut current = Some(start);
            while let Some(i) = current {
                match state[i] {
                    NEW => {
                        state[i] = ON_PATH;
                        path.push(i);
                        current = parent(i);
                    }
                    ON_PATH => {
                        let from = path.iter().position(|&p| p == i).unwrap_or(0);
                        return Some(path[from..].to_vec());
                    }
                    _ => break,
                }
            }
            for &i in &path {
                state[i] = DONE;
            }
        }
        None
    }

    fn finish(mut self, path: Option<&Path>, name: &Path) -> Result<Session, SessionError> {
        self.bridge_missing_parents();
        self.break_parent_loops();
        for (at, line_index) in std::mem::take(&mut self.v1_compactions) {
            let target = usize::try_from(line_index)
                .ok()
                .and_then(|i| self.by_position.get(i).copied().flatten())
                .map(|i| self.entries[i].id.clone());
            if let (Some(target), EntryKind::Compaction(c)) = (target, &mut self.entries[at].kind) {
                c.first_kept_entry_id = target;
            }
        }
        let header_missing = self.header.is_none();
        let header = match self.header.take() {
            Some(h) => h,
            None => {
                if !self.saw_anything && self.byte_len > 0 && !self.torn_header {
                    return Err(SessionError::NotASession(name.to_path_buf()));
                }
                let file_id = path
                    .and_then(|p| p.file_name())
                    .and_then(|n| n.to_str())
                    .and_then(id_from_file_name)
                    .filter(|id| looks_like_uuid(id))
                    .map(str::to_string);
                self.warnings.insert(
                    0,
                    LoadWarning {
                        line: 0,
                        message: if self.byte_len == 0 {
                            "the file is empty".into()
                        } else {
                            "the file has no session header; using defaults".into()
                        },
                    },
                );
                let version = if self.entries.is_empty() {
                    CURRENT_VERSION
                } else {
                    2
                };
                let mut h = SessionHeader::new(
                    file_id.unwrap_or_else(uuid_v7),
                    iso_now(),
                    String::new(),
                    None,
                );
                h.version = version;
                h
            }
        };
        self.warnings.sort_by_key(|w| w.line);
        Ok(Session {
            path: None,
            header,
            entries: self.entries,
            warnings: self.warnings,
            index: self.index,
            duplicate_ids: self.duplicate_ids,
            header_missing,
            byte_len: self.byte_len,
            ends_with_newline: self.ends_with_newline || self.byte_len == 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Session {
        Session::read(text.as_bytes(), None).unwrap()
    }

    const HEADER: &str = r#"{"type":"session","version":3,"id":"019a0000-0000-7000-8000-000000000000","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#;

    #[test]
    fn lines_across_the_read_buffers_end_read_as_lines_within_it() {
        // Lines are parsed in place when they sit inside the reader's buffer and gathered when
        // they cross its end; a tiny buffer makes every line do both, at every offset.
        let text = format!(
            "{HEADER}\r\n\n{}\n   \n{}\n{}",
            user("aaaaaaaa", None, "one \\\"two\\\" three"),
            user("bbbbbbbb", Some("aaaaaaaa"), "four"),
            r#"{"type":"session_info","id":"cccccccc","parentId":"bbbbbbbb","timesta"#
        );
        let whole = read(&text);
        assert_eq!(whole.entries.len(), 2);
        assert_eq!(whole.warnings.len(), 1);
        for capacity in 1..40 {
            let reader = std::io::BufReader::with_capacity(capacity, text.as_bytes());
            let s = Session::read(reader, None).unwrap();
            assert_eq!(s.entries, whole.entries, "buffer of {capacity}");
            assert_eq!(s.warnings, whole.warnings, "buffer of {capacity}");
            assert_eq!(s.byte_len, text.len() as u64);
            assert!(!s.ends_with_newline);
        }
    }

    #[test]
    fn an_id_seen_twice_is_reported_and_the_later_entry_wins() {
        let text = format!(
            "{HEADER}\n{}\n{}\n{}\n",
            user("aaaaaaaa", None, "first"),
            user("bbbbbbbb", Some("aaaaaaaa"), "second"),
            user("aaaaaaaa", Some("bbbbbbbb"), "third"),
        );
        let s = read(&text);
        assert_eq!(s.entries.len(), 3);
        assert_eq!(s.index_of("aaaaaaaa"), Some(2));
        assert_eq!(s.index_of("bbbbbbbb"), Some(1));
        // "aaaaaaaa" now names the third entry, so the second one's parent leads to the third
        // and the third's back to the second: a loop, cut once. The entry before the second
        // cannot be named (its id names the third), so the conversation starts there.
        let lines: Vec<(usize, &str)> = s
            .warnings
            .iter()
            .map(|w| (w.line, w.message.as_str()))
            .collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines
                .iter()
                .any(|(line, m)| *line == 4 && m.contains("aaaaaaaa appears twice"))
        );
        assert!(lines.iter().any(|(line, m)| *line == 3
            && m.contains("loop back")
            && m.contains("the conversation starts with it")));
        assert_eq!(branch_ids(&s), ["bbbbbbbb", "aaaaaaaa"]);
    }

    #[test]
    fn a_loop_through_a_repeated_id_is_cut_at_an_entry_that_can_be_named() {
        // The loop is 2 -> 3 -> 2; the entry before 2 repeats the id of 3, so the bridge
        // goes to the first entry, the closest one whose id leads back to it.
        let text = format!(
            "{HEADER}\n{}\n{}\n{}\n{}\n",
            user("aaaaaaaa", None, "one"),
            user("dddddddd", Some("aaaaaaaa"), "two"),
            user("bbbbbbbb", Some("dddddddd"), "three"),
            user("dddddddd", Some("bbbbbbbb"), "four"),
        );
        let s = read(&text);
        let loops: Vec<_> = s
            .warnings
            .iter()
            .filter(|w| w.message.contains("loop back"))
            .collect();
        assert_eq!(loops.len(), 1, "{:?}", s.warnings);
        assert!(
            loops[0]
                .message
                .contains("continuing from entry aaaaaaaa, the closest")
        );
        assert_eq!(branch_ids(&s), ["aaaaaaaa", "bbbbbbbb", "dddddddd"]);
    }

    #[test]
    fn torn_last_line_is_skipped_with_its_line_number() {
        let text = format!(
            "{HEADER}\n{}\n{}",
            r#"{"type":"session_info","id":"aaaaaaaa","parentId":null,"timestamp":"t","name":"n"}"#,
            r#"{"type":"session_info","id":"bbbbbbbb","parentId":"aaaaaaaa","timesta"#
        );
        let s = read(&text);
        assert_eq!(s.entries.len(), 1);
        assert_eq!(s.warnings.len(), 1);
        assert_eq!(s.warnings[0].line, 3);
        assert!(s.warnings[0].message.contains("ends in the middle"));
        assert!(!s.ends_with_newline);
        assert_eq!(s.leaf_id(), Some("aaaaaaaa"));
    }

    #[test]
    fn blank_and_crlf_lines_are_fine() {
        let text = format!(
            "{HEADER}\r\n\r\n{}\r\n",
            r#"{"type":"session_info","id":"aaaaaaaa","parentId":null,"timestamp":"t","name":" n "}"#
        );
        let s = read(&text);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        assert_eq!(s.name(), Some("n"));
    }

    fn user(id: &str, parent: Option<&str>, text: &str) -> String {
        serde_json::json!({
            "type": "message", "id": id, "parentId": parent, "timestamp": "t",
            "message": {"role": "user", "content": text, "timestamp": 1}
        })
        .to_string()
    }

    fn branch_ids(s: &Session) -> Vec<&str> {
        s.branch(s.leaf_id())
            .iter()
            .map(|e| e.id.as_str())
            .collect()
    }

    #[test]
    fn a_loop_of_parents_is_cut_at_its_first_entry_and_reported() {
        let text = format!(
            "{HEADER}\n{}\n{}\n{}\n{}\n",
            user("root0000", None, "first"),
            user("aaaaaaaa", Some("cccccccc"), "a"),
            user("bbbbbbbb", Some("aaaaaaaa"), "b"),
            user("cccccccc", Some("bbbbbbbb"), "c"),
        );
        let s = read(&text);
        // Read in file order, each entry once, the earlier history kept.
        assert_eq!(
            branch_ids(&s),
            ["root0000", "aaaaaaaa", "bbbbbbbb", "cccccccc"]
        );
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        assert_eq!(s.warnings[0].line, 3, "the line of the loop's first entry");
        let w = &s.warnings[0].message;
        assert!(
            w.contains("loop") && w.contains("continuing from entry root0000"),
            "{w}"
        );

        // An entry that names itself, at the very start: it starts the conversation.
        let text = format!("{HEADER}\n{}\n", user("aaaaaaaa", Some("aaaaaaaa"), "a"));
        let s = read(&text);
        assert_eq!(branch_ids(&s), ["aaaaaaaa"]);
        assert!(s.warnings[0].message.contains("starts with it"));
    }

    #[test]
    fn a_missing_middle_entry_keeps_what_came_before_it() {
        // The entry `bbbbbbbb` was lost: `cccccccc` points at nothing.
        let text = format!(
            "{HEADER}\n{}\n{}\n{}\n{}\n",
            user("aaaaaaaa", None, "one"),
            user("a2a2a2a2", Some("aaaaaaaa"), "two"),
            user("cccccccc", Some("bbbbbbbb"), "three"),
            user("dddddddd", Some("cccccccc"), "four"),
        );
        let s = read(&text);
        assert_eq!(
            branch_ids(&s),
            ["aaaaaaaa", "a2a2a2a2", "cccccccc", "dddddddd"]
        );
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        assert_eq!(s.warnings[0].line, 4);
        let w = &s.warnings[0].message;
        assert!(
            w.contains("bbbbbbbb") && w.contains("not in the file") && w.contains("a2a2a2a2"),
            "{w}"
        );
    }

    #[test]
    fn a_message_of_an_unknown_role_is_reported_and_quoted() {
        let odd = serde_json::json!({
            "type": "message", "id": "bbbbbbbb", "parentId": "aaaaaaaa", "timestamp": "t",
            "message": {"role": "observer", "content": "the build is green", "timestamp": 2}
        });
        let text = format!(
            "{HEADER}\n{}\n{odd}\n{}\n",
            user("aaaaaaaa", None, "one"),
            user("cccccccc", Some("bbbbbbbb"), "two"),
        );
        let s = read(&text);
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        assert_eq!(s.warnings[0].line, 3);
        assert!(s.warnings[0].message.contains("`observer`"));
        let context = s.context();
        let texts: Vec<String> = context
            .messages
            .iter()
            .map(|m| match m.as_user().map(|u| &u.content) {
                Some(crate::agent::protocol::types::UserContent::Text(t)) => t.clone(),
                _ => String::new(),
            })
            .collect();
        assert_eq!(texts.len(), 3, "nothing dropped or moved: {texts:?}");
        assert_eq!(texts[0], "one");
        assert!(texts[1].contains("`observer`") && texts[1].contains("the build is green"));
        assert_eq!(texts[2], "two");
    }

    #[test]
    fn a_byte_order_mark_before_the_header_is_skipped() {
        let text = format!("\u{feff}{HEADER}\n{}\n", user("aaaaaaaa", None, "one"));
        let s = read(&text);
        assert!(!s.header_missing());
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        assert_eq!(s.entries.len(), 1);
    }

    #[test]
    fn empty_and_headerless_files() {
        let s = read("");
        assert_eq!(s.warnings[0].message, "the file is empty");
        assert!(s.entries.is_empty());
        let s = read(r#"{"type":"session_info","id":"aaaaaaaa","parentId":null,"timestamp":"t"}"#);
        assert_eq!(s.entries.len(), 1);
        assert!(s.warnings[0].message.contains("no session header"));
        assert!(matches!(
            Session::read("not json at all\n".as_bytes(), None),
            Err(SessionError::NotASession(_))
        ));
    }

    #[test]
    fn labels_and_names_latest_wins() {
        let text = format!(
            "{HEADER}\n{}\n{}\n{}\n{}\n",
            r#"{"type":"label","id":"aaaaaaaa","parentId":null,"timestamp":"t","targetId":"aaaaaaaa","label":"x"}"#,
            r#"{"type":"label","id":"bbbbbbbb","parentId":"aaaaaaaa","timestamp":"t","targetId":"aaaaaaaa"}"#,
            r#"{"type":"session_info","id":"cccccccc","parentId":"bbbbbbbb","timestamp":"t","name":"one"}"#,
            r#"{"type":"session_info","id":"dddddddd","parentId":"cccccccc","timestamp":"t","name":""}"#
        );
        let s = read(&text);
        assert!(s.labels().is_empty());
        assert_eq!(s.name(), None);
        assert_eq!(s.children("aaaaaaaa").len(), 1);
    }
}
