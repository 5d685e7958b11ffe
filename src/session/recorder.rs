//! Writing a session as it happens: [`SessionRecorder`].
//!
//! The recorder turns the agent's events into entries and appends them to the session file:
//! one `message` entry per `message_end` (written and handed to the OS at once), an `fsync` at
//! every `turn_end` and `agent_end`, and `model_change` / `thinking_level_change` entries when
//! the host reports a model or level different from the current one (also at the start of a
//! session). Every new entry is a child of the previous one (the leaf); [`SessionRecorder::branch_from`]
//! moves the leaf to continue from an earlier entry.
//!
//! A new session touches the disk when its first message (the person's prompt) is recorded, or
//! just before, when the host asks ([`SessionRecorder::ready_for_prompt`]: nothing is sent to a
//! model before the session's first write succeeded; a failed try removes the file and lock it
//! made and keeps its lines queued). Until then entries (the model and level at start) wait in
//! memory; the file's lock is taken, then the directory and file are created with the header
//! and all waiting entries in one write, then synced, so a prompt survives a crash before the
//! first reply. A file this recorder created but could write nothing into is removed when it
//! closes. A resumed session appends to its file (after a
//! newline if the file ended in a torn line, so the first new entry is not glued to it). When a
//! tool starts, a `custom` entry (`pi/tool_started`) says so: a session cut off while it ran is
//! resumed knowing the call started, with an unknown outcome, rather than as "not run".
//!
//! A write that fails loses nothing: the unwritten lines stay queued and go out with the next
//! write (a partly written line is closed off by a newline first, so the reader skips just that
//! fragment). Failures go to the error reporter (by default they are kept for
//! [`SessionRecorder::take_errors`]). Entries hold only what the agent says — messages, provider
//! and model names — never keys; [`SessionRecorder::add_secret`] additionally masks a known
//! secret should it ever appear in a message.

use std::collections::{HashMap, VecDeque};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::branch_context::ModelRef;
use super::entry::{Compaction, EntryKind, SessionEntry, SessionHeader};
use super::error::SessionError;
use super::ids::{IdSet, uuid_v7};
use super::layout::session_file_name;
use super::load::Session;
use super::lock::SessionLock;
use super::time::iso_now;
use crate::agent::protocol::events::{AgentEvent, CompactionResult};
use crate::agent::protocol::thinking::ThinkingLevel;
use crate::agent::protocol::types::{AgentMessage, Message};
use crate::secrets::Secrets;

/// Receives write failures as they happen.
pub(crate) type ErrorReporter = Box<dyn FnMut(&SessionError) + Send>;

/// `customType` of the entry that records a tool call starting.
pub(crate) const TOOL_STARTED: &str = "pi/tool_started";

/// Appends a session's entries to its file as the agent produces them.
pub struct SessionRecorder {
    path: PathBuf,
    header: SessionHeader,
    file: Option<File>,
    /// The file exists on disk (resumed, or created by the first write).
    on_disk: bool,
    /// Complete lines (with their newline) not yet written.
    pending: VecDeque<String>,
    /// The file may end without a newline (torn line, or a failed partial write).
    needs_newline: bool,
    /// Written since the last fsync.
    unsynced: bool,
    ids: IdSet,
    leaf: Option<String>,
    model: Option<ModelRef>,
    thinking: Option<ThinkingLevel>,
    has_message: bool,
    secrets: Secrets,
    reporter: Option<ErrorReporter>,
    errors: Vec<SessionError>,
    /// The latest failure, kept until a write and sync succeed.
    last_error: Option<String>,
    /// This process's claim to write the file (see [`super::lock`]).
    lock: Option<SessionLock>,
    /// This recorder created the file (a new session).
    created_here: bool,
    /// Bytes this recorder has written to the file.
    bytes_written: u64,
    /// The first kept entry of the last compaction recorded.
    last_compaction_kept: Option<String>,
    /// The entry of each message recorded or resumed, by the message's address (the `Arc`
    /// is held so the address stays its own): a compaction names its first kept message.
    entry_of: HashMap<usize, (Arc<Message>, String), foldhash::fast::RandomState>,
}

impl std::fmt::Debug for SessionRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionRecorder")
            .field("path", &self.path)
            .field("id", &self.header.id)
            .field("on_disk", &self.on_disk)
            .field("pending", &self.pending.len())
            .field("leaf", &self.leaf)
            .finish()
    }
}

impl SessionRecorder {
    /// A new session for `cwd`, to be stored in `dir`. Nothing touches the disk until the
    /// first message is recorded.
    pub fn new_session(dir: &Path, cwd: &Path) -> Self {
        Self::new_with_parent(dir, cwd, None)
    }

    /// A new session stored at an explicit path (`--session new-file.jsonl`); nothing is
    /// written before the first message.
    pub(crate) fn new_at(path: &Path, cwd: &Path) -> Self {
        let mut r = Self::new_with_parent(path.parent().unwrap_or(Path::new(".")), cwd, None);
        r.path = path.to_path_buf();
        r
    }

    /// A new session that records `parent_session` (the file it was forked from).
    pub(crate) fn new_with_parent(dir: &Path, cwd: &Path, parent_session: Option<String>) -> Self {
        let timestamp = iso_now();
        let id = uuid_v7();
        let path = dir.join(session_file_name(&timestamp, &id));
        let header = SessionHeader::new(
            id,
            timestamp,
            cwd.to_string_lossy().into_owned(),
            parent_session,
        );
        let mut pending = VecDeque::new();
        pending.push_back(format!("{}\n", header.to_line()));
        SessionRecorder {
            path,
            header,
            file: None,
            on_disk: false,
            pending,
            needs_newline: false,
            unsynced: false,
            ids: IdSet::default(),
            leaf: None,
            model: None,
            thinking: None,
            has_message: false,
            secrets: Secrets::default(),
            reporter: None,
            errors: Vec::new(),
            last_error: None,
            lock: None,
            created_here: false,
            bytes_written: 0,
            last_compaction_kept: None,
            entry_of: HashMap::default(),
        }
    }

    /// Continue a loaded session: new entries are appended to its file as children of its
    /// leaf. The model and thinking level start as the session recorded them.
    pub fn resume(session: &Session) -> Result<Self, SessionError> {
        let mut recorder = Self::resume_unset(session)?;
        let (model, thinking) = session.current_settings();
        recorder.resumed_settings(model, thinking);
        Ok(recorder)
    }

    /// [`SessionRecorder::resume`] without the model and thinking level at the leaf, for a
    /// caller that finds them as it builds the context (finding them walks the whole branch)
    /// and gives them with [`SessionRecorder::resumed_settings`].
    pub(crate) fn resume_unset(session: &Session) -> Result<Self, SessionError> {
        let Some(path) = session.path.clone() else {
            return Err(SessionError::NotFound(
                "a session read from memory has no file to append to".into(),
            ));
        };
        Ok(SessionRecorder {
            path,
            header: session.header.clone(),
            file: None,
            on_disk: true,
            pending: VecDeque::new(),
            needs_newline: !session.ends_with_newline,
            unsynced: false,
            ids: session.entries.iter().map(|e| e.id.as_str()).collect(),
            leaf: session.leaf_id().map(str::to_string),
            model: None,
            thinking: None,
            has_message: true,
            secrets: Secrets::default(),
            reporter: None,
            errors: Vec::new(),
            last_error: None,
            lock: None,
            created_here: false,
            bytes_written: 0,
            last_compaction_kept: None,
            entry_of: HashMap::default(),
        })
    }

    pub fn session_id(&self) -> &str {
        &self.header.id
    }

    /// Where the session is (or will be) stored.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// True once the file exists on disk.
    pub fn is_persisted(&self) -> bool {
        self.on_disk
    }

    /// The entry new entries will hang under.
    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf.as_deref()
    }

    /// Lines waiting to be written (before the first message, or after a failure).
    pub fn pending_lines(&self) -> usize {
        self.pending.len()
    }

    /// Send write failures to `reporter` instead of keeping them for [`Self::take_errors`].
    pub fn set_error_reporter(&mut self, reporter: ErrorReporter) {
        self.reporter = Some(reporter);
    }

    /// Write failures not yet collected.
    pub fn take_errors(&mut self) -> Vec<SessionError> {
        std::mem::take(&mut self.errors)
    }

    /// Mask this text (an API key) wherever it would be written. Texts shorter than 8
    /// characters are ignored (they would mask ordinary words).
    pub fn add_secret(&mut self, secret: impl Into<String>) {
        self.secrets.add(&secret.into());
    }

    /// Mask what `secrets` holds (now and as it learns more) wherever it would be written.
    pub(crate) fn share_secrets(&mut self, secrets: &Secrets) {
        // Values added to this recorder alone so far are kept.
        let own = std::mem::replace(&mut self.secrets, secrets.clone());
        self.secrets.absorb(&own);
    }

    /// Continue from an earlier entry (or from the start with `None`): the next entry becomes
    /// its child. Unknown ids are refused.
    pub fn branch_from(&mut self, entry_id: Option<&str>) -> Result<(), SessionError> {
        match entry_id {
            Some(id) if !self.ids.contains(id) => Err(SessionError::NotFound(id.to_string())),
            _ => {
                self.leaf = entry_id.map(str::to_string);
                Ok(())
            }
        }
    }

    /// The model and thinking level a resumed session was left with (nothing is written).
    pub(crate) fn resumed_settings(
        &mut self,
        model: Option<ModelRef>,
        thinking: Option<ThinkingLevel>,
    ) {
        self.model = model;
        self.thinking = thinking;
    }

    /// Record the model in use; writes a `model_change` entry only when it differs from the
    /// current one. Returns the new entry's id.
    pub fn set_model(&mut self, provider: &str, model_id: &str) -> Option<String> {
        let m = ModelRef {
            provider: provider.to_string(),
            model_id: model_id.to_string(),
        };
        if self.model.as_ref() == Some(&m) {
            return None;
        }
        self.model = Some(m);
        Some(self.append(EntryKind::ModelChange {
            provider: provider.to_string(),
            model_id: model_id.to_string(),
        }))
    }

    /// Record the thinking level; writes a `thinking_level_change` entry only when it differs
    /// from the current one (`inherit` is not a level and is never written).
    pub fn set_thinking_level(&mut self, level: ThinkingLevel) -> Option<String> {
        if level == ThinkingLevel::Inherit || self.thinking == Some(level) {
            return None;
        }
        self.thinking = Some(level);
        Some(self.append(EntryKind::ThinkingLevelChange {
            thinking_level: level.as_str().to_string(),
        }))
    }

    /// Set the session's display name (`session_info`).
    pub fn set_name(&mut self, name: &str) -> String {
        self.append(EntryKind::SessionInfo {
            name: Some(name.trim().to_string()),
        })
    }

    /// Record a message.
    pub fn append_message(&mut self, message: &AgentMessage) -> String {
        let id = self.write_message(message);
        if let AgentMessage::Llm(m) = message {
            self.entry_of
                .insert(Arc::as_ptr(m) as usize, (m.clone(), id.clone()));
        }
        id
    }

    /// Know which entries `messages` came from (a resumed context and its origins), so a
    /// later compaction can name them.
    pub(crate) fn remember(
        &mut self,
        messages: &[AgentMessage],
        origins: Vec<super::MessageOrigin>,
    ) {
        self.entry_of.reserve(messages.len());
        for (m, origin) in messages.iter().zip(origins) {
            if let (AgentMessage::Llm(m), Some(id)) = (m, origin.into_entry_id()) {
                self.entry_of
                    .insert(Arc::as_ptr(m) as usize, (m.clone(), id));
            }
        }
    }

    /// Record a compaction the agent made: a `compaction` entry whose first kept entry is the
    /// one `result.first_kept` was recorded as. `None` (nothing written) when that message is
    /// unknown here; the session then resumes with its whole history, which is safe.
    pub(crate) fn append_compaction(&mut self, result: &CompactionResult) -> Option<String> {
        self.last_compaction_kept = None;
        let first_kept = match result.first_kept.as_ref()? {
            AgentMessage::Llm(m) => self.entry_of.get(&(Arc::as_ptr(m) as usize))?.1.clone(),
            AgentMessage::Custom(_) => return None,
        };
        self.last_compaction_kept = Some(first_kept.clone());
        let id = self.append(EntryKind::Compaction(Box::new(Compaction {
            summary: result.summary.clone(),
            first_kept_entry_id: first_kept,
            tokens_before: result.tokens_before,
            details: Some(result.details.clone()),
            from_hook: None,
        })));
        // Messages only this map still holds are gone from the conversation.
        self.entry_of.retain(|_, (m, _)| Arc::strong_count(m) > 1);
        Some(id)
    }

    /// The first kept entry of the last compaction this recorder wrote.
    pub(crate) fn last_compaction_kept(&self) -> Option<&str> {
        self.last_compaction_kept.as_deref()
    }

    fn write_message(&mut self, message: &AgentMessage) -> String {
        self.has_message = true;
        if let Some(a) = message.as_assistant()
            && !a.model.is_empty()
        {
            self.model = Some(ModelRef {
                provider: a.provider.clone(),
                model_id: a.model.clone(),
            });
        }
        let id = self.next_id();
        // Serialize in place rather than cloning the message into an entry.
        let line = format!(
            "{{\"type\":\"message\",\"id\":{},\"parentId\":{},\"timestamp\":{},\"message\":{}}}",
            json_string(&id),
            self.leaf
                .as_deref()
                .map_or_else(|| "null".to_string(), json_string),
            json_string(&iso_now()),
            serde_json::to_string(message).unwrap_or_else(|_| "null".into()),
        );
        self.push_line(id, line)
    }

    /// Record any entry as a child of the leaf. Returns its id. The entry is written at once
    /// if the file exists (or this is the first message); a failed write is
    /// reported and retried with the next one.
    pub fn append(&mut self, kind: EntryKind) -> String {
        if let EntryKind::Message(m) = &kind {
            return self.append_message(m);
        }
        let id = self.next_id();
        let line = SessionEntry {
            id: id.clone(),
            parent_id: self.leaf.clone(),
            timestamp: iso_now(),
            kind,
        }
        .to_line();
        self.push_line(id, line)
    }

    fn next_id(&self) -> String {
        self.ids.fresh()
    }

    fn push_line(&mut self, id: String, mut line: String) -> String {
        self.secrets.mask_in_place(&mut line);
        line.push('\n');
        self.pending.push_back(line);
        self.ids.insert(&id);
        self.leaf = Some(id.clone());
        if self.on_disk || self.has_message {
            let r = self.write_pending();
            self.report(r);
        }
        id
    }

    fn report(&mut self, result: Result<(), SessionError>) {
        if let Err(e) = result {
            self.last_error = Some(e.to_string());
            match &mut self.reporter {
                Some(r) => r(&e),
                None => self.errors.push(e),
            }
        }
    }

    fn open(&mut self) -> Result<&mut File, SessionError> {
        if self.file.is_none() {
            let file = if self.on_disk {
                OpenOptions::new()
                    .append(true)
                    .open(&self.path)
                    .map_err(|e| SessionError::io("open", &self.path, e))?
            } else {
                if let Some(dir) = self.path.parent() {
                    create_private_dir(dir)
                        .map_err(|e| SessionError::io("create the folder of", &self.path, e))?;
                }
                // Locked before the file can be seen: a `pi -c` that finds it finds it taken.
                // Without a lock (one cannot be written) the session is still written.
                if self.lock.is_none() {
                    self.lock = SessionLock::acquire(&self.path).ok();
                }
                // Sessions hold whole conversations: readable by their owner only.
                let f = OpenOptions::new()
                    .append(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&self.path)
                    .map_err(|e| SessionError::io("create", &self.path, e))?;
                self.on_disk = true;
                self.created_here = true;
                sync_dir(&self.path);
                f
            };
            self.file = Some(file);
        }
        // Just set above when it was empty.
        self.file
            .as_mut()
            .ok_or_else(|| SessionError::io("open", &self.path, io::ErrorKind::Other.into()))
    }

    /// Write every queued line. On failure the lines not fully written stay queued.
    fn write_pending(&mut self) -> Result<(), SessionError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let path = self.path.clone();
        let needs_newline = self.needs_newline;
        let mut buf =
            String::with_capacity(self.pending.iter().map(String::len).sum::<usize>() + 1);
        if needs_newline {
            buf.push('\n');
        }
        for l in &self.pending {
            buf.push_str(l);
        }
        let file = self.open()?;
        let mut written = 0usize;
        let bytes = buf.as_bytes();
        let result = loop {
            if written == bytes.len() {
                break Ok(());
            }
            match file.write(&bytes[written..]) {
                Ok(0) => break Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        if written > 0 {
            self.unsynced = true;
            self.bytes_written += written as u64;
        }
        // Drop the lines that made it to the file.
        let mut done = if needs_newline && written > 0 {
            self.needs_newline = false;
            written - 1
        } else {
            written
        };
        while let Some(first) = self.pending.front() {
            if done >= first.len() {
                done -= first.len();
                self.pending.pop_front();
            } else {
                break;
            }
        }
        if done > 0 {
            // Part of a line reached the file: end it so the retry starts on a fresh line.
            self.needs_newline = true;
        }
        result.map_err(|e| SessionError::io("write", &path, e))
    }

    /// Write what may be written (nothing before the first message), without syncing; a
    /// failure goes to the reporter.
    pub(crate) fn write_due(&mut self) {
        if self.on_disk || self.has_message {
            let r = self.write_pending();
            self.report(r);
        }
    }

    /// Write what may be written and make it durable (`fsync`).
    pub(crate) fn sync(&mut self) -> Result<(), SessionError> {
        if self.on_disk || self.has_message {
            self.write_pending()?;
        }
        if self.unsynced
            && let Some(f) = &self.file
        {
            f.sync_data()
                .map_err(|e| SessionError::io("sync", &self.path, e))?;
            self.unsynced = false;
        }
        if self.pending.is_empty() {
            self.last_error = None;
        }
        Ok(())
    }

    /// Why part of the session is not safely on disk (lines still queued after a failed
    /// write, or data not synced), or `None` when everything said is saved. A session in which
    /// nothing was said has nothing to lose.
    pub(crate) fn unsaved(&self) -> Option<String> {
        let due = self.on_disk || self.has_message;
        if due && (!self.pending.is_empty() || self.unsynced) {
            Some(
                self.last_error
                    .clone()
                    .unwrap_or_else(|| format!("{} is not fully written", self.path.display())),
            )
        } else {
            None
        }
    }

    /// Final write and sync. Entries still waiting for a first message are dropped
    /// (a session in which nothing was said is not kept), and so is a file this recorder
    /// created but could write nothing into.
    pub fn close(&mut self) -> Result<(), SessionError> {
        let r = self.sync();
        self.file = None;
        if self.created_here && self.bytes_written == 0 {
            self.forget_file();
        }
        self.lock = None;
        r
    }

    /// Remove the (empty) file this recorder created, and go back to having none.
    fn forget_file(&mut self) {
        self.file = None;
        if self.created_here {
            let _ = std::fs::remove_file(&self.path);
            sync_dir(&self.path);
        }
        self.created_here = false;
        self.on_disk = false;
        self.bytes_written = 0;
        self.needs_newline = false;
        self.unsynced = false;
    }

    /// True when not a byte of this session reached its file (a new session whose every
    /// write failed, or was never tried).
    pub(crate) fn nothing_saved(&self) -> bool {
        !self.on_disk || (self.created_here && self.bytes_written == 0)
    }

    /// Make sure what is queued is on disk before a prompt is sent to a model: a new session's
    /// file is created now with its header (and the entries waiting for the first message),
    /// and whatever a resumed session has queued is written, then synced. Nothing to do when
    /// nothing waits. On failure nothing is left half done: a new session's file and lock are
    /// removed and its lines stay queued for the next try, so the caller can refuse the
    /// prompt and lose nothing.
    pub(crate) fn ready_for_prompt(&mut self) -> Result<(), SessionError> {
        if self.on_disk && self.pending.is_empty() {
            return Ok(());
        }
        let fresh = !self.on_disk;
        let queued = fresh.then(|| self.pending.clone());
        let result = self.write_pending().and_then(|()| {
            if let Some(f) = &self.file {
                f.sync_data()
                    .map_err(|e| SessionError::io("sync", &self.path, e))?;
            }
            self.unsynced = false;
            Ok(())
        });
        if let Err(e) = &result {
            self.last_error = Some(e.to_string());
            if let Some(queued) = queued {
                self.forget_file();
                self.lock = None;
                self.pending = queued;
            }
        } else if self.pending.is_empty() {
            self.last_error = None;
        }
        result
    }

    /// Hold `lock` (taken by whoever opened the session) until the recorder is closed.
    pub(crate) fn adopt_lock(&mut self, lock: SessionLock) {
        self.lock = Some(lock);
    }

    /// Claim the file for this process, refusing when another running pi writes it
    /// ([`SessionError::Locked`]). Held until the recorder is closed or dropped. A session not
    /// yet on disk is claimed when its file is created.
    pub fn lock(&mut self) -> Result<(), SessionError> {
        if self.on_disk && self.lock.is_none() {
            self.lock = Some(SessionLock::acquire(&self.path)?);
        }
        Ok(())
    }

    /// Drop the recorder without writing anything it still holds (a session opened read-only).
    pub(crate) fn abandon(mut self) {
        self.pending.clear();
        self.needs_newline = false;
    }

    /// Record what an agent event means for the session (see the module notes).
    pub fn handle(&mut self, event: &AgentEvent) {
        match event {
            // A failed attempt that was retried is shown live, never kept.
            AgentEvent::MessageEnd { message } if !message.is_retried_attempt() => {
                self.append_message(message);
                if message.role() == "user" {
                    // The person's words are durable before the model is asked.
                    self.sync_and_report();
                }
            }
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                ..
            } => {
                self.append(EntryKind::Custom {
                    custom_type: TOOL_STARTED.to_string(),
                    data: Some(Box::new(serde_json::json!({
                        "toolCallId": tool_call_id,
                        "toolName": tool_name,
                    }))),
                });
            }
            AgentEvent::CompactionEnd {
                result: Some(result),
                ..
            } if self.append_compaction(result).is_some() => self.sync_and_report(),
            AgentEvent::TurnEnd { .. } | AgentEvent::AgentEnd { .. } => self.sync_and_report(),
            _ => {}
        }
    }

    /// The events [`SessionRecorder::handle`] acts on (a subscription filter: the recorder
    /// need not be woken by every streamed delta).
    pub fn wants(event: &AgentEvent) -> bool {
        matches!(
            event,
            AgentEvent::MessageEnd { .. }
                | AgentEvent::CompactionEnd { .. }
                | AgentEvent::ToolExecutionStart { .. }
                | AgentEvent::TurnEnd { .. }
                | AgentEvent::AgentEnd { .. }
        )
    }

    /// Check, before anything is asked of a model, that the session can be written: a resumed
    /// file opens for appending; a new session's folder is created if missing and takes a new
    /// file. Nothing of the session itself is written.
    pub(crate) fn check_writable(&self) -> Result<(), SessionError> {
        if self.on_disk {
            return OpenOptions::new()
                .append(true)
                .open(&self.path)
                .map(drop)
                .map_err(|e| SessionError::io("open for writing", &self.path, e));
        }
        let dir = self.path.parent().unwrap_or(Path::new("."));
        create_private_dir(dir)
            .map_err(|e| SessionError::io("create the folder of", &self.path, e))?;
        let probe = dir.join(format!(".pi-write-check-{}", std::process::id()));
        // A byte is written too: a full disk still lets an empty file be made.
        let made = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&probe)
            .map_err(|e| SessionError::io("create files in the folder of", &self.path, e))
            .and_then(|mut f| {
                f.write_all(b"\n")
                    .map_err(|e| SessionError::io("write files in the folder of", &self.path, e))
            });
        let _ = std::fs::remove_file(&probe);
        made
    }

    /// Write and sync, sending a failure to the reporter.
    pub(crate) fn sync_and_report(&mut self) {
        let r = self.sync();
        self.report(r);
    }

    /// True when this event makes the recorder `fsync` (callers on an async runtime may want
    /// to run those off the runtime's threads).
    pub(crate) fn syncs_on(event: &AgentEvent) -> bool {
        match event {
            AgentEvent::TurnEnd { .. } | AgentEvent::AgentEnd { .. } => true,
            AgentEvent::MessageEnd { message } => message.role() == "user",
            _ => false,
        }
    }
}

impl Drop for SessionRecorder {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// Create `dir` and its missing parents, readable by their owner only (folders that exist keep
/// their permissions).
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Make a new file's directory entry durable (best effort; not possible on every platform).
fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent()
        && let Ok(d) = File::open(dir)
    {
        let _ = d.sync_all();
    }
}
