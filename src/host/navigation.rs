//! The session as a tree: listing it, moving in it, labelling it, and copying a branch out.
//!
//! Everything here reads the session file as it stands once the recorder has written what the
//! front end has seen (so the tree and the screen agree), on the blocking pool. Moving
//! (`/tree`) stays in the same file: the recorder's leaf moves and the agent's history becomes
//! the chosen branch; the next entry written starts a new branch there. A move can first have
//! the model summarise the branch it leaves (a `branch_summary` entry where the conversation
//! goes on); the host keeps reading commands meanwhile, so an abort stops it. `/fork` and `/clone`
//! write a new file holding one branch (with `parentSession` pointing back) and go on in it.

use std::path::PathBuf;

use std::collections::{HashSet, VecDeque};

use tokio::sync::mpsc;

use super::{Host, HostEvent, Op, OpBody, OpenedFrom};
use crate::agent::engine::run::summarize;
use crate::agent::policy::compaction;
use crate::agent::protocol::abort::{AbortReason, AbortSignal};
use crate::agent::protocol::types::{AgentMessage, Message, now_ms};
use crate::session::{self, BranchSummary, EntryKind, Session, SessionEntry};

/// The current session's tree, for the `/tree` view.
#[derive(Clone, Debug)]
pub struct SessionTree {
    pub rows: Vec<session::tree_rows::TreeRow>,
    /// Where the conversation stands (`None`: before the first entry).
    pub leaf: Option<String>,
}

/// Where the conversation goes on when `entry` is chosen: before a prompt, else at the entry.
pub(super) fn target_leaf(entry: &SessionEntry) -> Option<String> {
    if editable_text(entry).is_some() {
        entry.parent_id.clone()
    } else {
        Some(entry.id.clone())
    }
}

/// The text a user message (or an extension's message) puts back in the editor (what was
/// typed: the files attached to it are not).
fn editable_text(entry: &SessionEntry) -> Option<String> {
    match &entry.kind {
        EntryKind::Message(m) => match m.as_llm() {
            Some(Message::User(u)) => Some(crate::attach::message::typed_text(&u.content)),
            _ => None,
        },
        EntryKind::CustomMessage(c) => Some(c.content.joined_text()),
        _ => None,
    }
}

impl Host {
    /// The session file and the recorder's leaf, once everything shown so far is written.
    /// `Ok(None)`: nothing has been said in this session yet.
    async fn current_session(&self) -> Result<Option<(Session, Option<String>)>, String> {
        let Some(recorder) = &self.recorder else {
            return Err(if self.paths.is_some() {
                "this session is open read-only, so it has no tree to move in".into()
            } else {
                "sessions are not saved in this run (--no-session)".into()
            });
        };
        let _ = recorder.written().await;
        let (persisted, leaf, path) = recorder.peek(|r| {
            (
                r.is_persisted(),
                r.leaf_id().map(str::to_string),
                r.path().to_path_buf(),
            )
        });
        if !persisted {
            return Ok(None);
        }
        let loaded = tokio::task::spawn_blocking(move || Session::load(&path))
            .await
            .map_err(|e| e.to_string())?;
        loaded.map(|s| Some((s, leaf))).map_err(|e| e.to_string())
    }

    /// The session file, its entry `target` and the recorder's leaf; `None` once the front end
    /// is told why not (`what` names the action: "cannot fork: ...").
    pub(super) async fn session_entry(
        &self,
        target: &str,
        what: &str,
    ) -> Option<(Session, SessionEntry, Option<String>)> {
        let failed = |why: String| self.tell(HostEvent::Failed(format!("cannot {what}: {why}")));
        match self.current_session().await {
            Ok(Some((session, leaf))) => match session.entry(target).cloned() {
                Some(entry) => Some((session, entry, leaf)),
                None => {
                    failed(format!("no entry {target} in this session"));
                    None
                }
            },
            Ok(None) => {
                failed("nothing has been said in this session yet".into());
                None
            }
            Err(e) => {
                failed(e);
                None
            }
        }
    }

    pub(super) fn refuse_while_busy(&self, what: &str) -> bool {
        if self.agent.is_streaming() {
            self.tell(HostEvent::Failed(format!(
                "Cannot {what} while the agent is working; press Esc first"
            )));
            return true;
        }
        false
    }

    pub(super) async fn tree(&self) {
        match self.current_session().await {
            Ok(Some((session, leaf))) => {
                let at = leaf.clone();
                let rows = tokio::task::spawn_blocking(move || {
                    session::tree_rows::tree_rows(&session, at.as_deref())
                })
                .await
                .unwrap_or_default();
                self.tell(HostEvent::Tree(Box::new(SessionTree { rows, leaf })));
            }
            Ok(None) => self.tell(HostEvent::Tree(Box::new(SessionTree {
                rows: Vec::new(),
                leaf: None,
            }))),
            Err(e) => self.tell(HostEvent::Failed(format!("cannot show the tree: {e}"))),
        }
    }

    /// The prompts of the current branch, oldest first, as `(entry id, full text)`: where a
    /// fork can start.
    pub(super) async fn fork_points(&self) {
        match self.current_session().await {
            Ok(Some((session, leaf))) => {
                let points = tokio::task::spawn_blocking(move || {
                    session
                        .branch(leaf.as_deref())
                        .into_iter()
                        .filter(|e| {
                            matches!(&e.kind, EntryKind::Message(m)
                                if matches!(m.as_llm(), Some(Message::User(_))))
                        })
                        .filter_map(|e| Some((e.id.clone(), editable_text(e)?)))
                        .collect::<Vec<_>>()
                })
                .await
                .unwrap_or_default();
                self.tell(HostEvent::ForkPoints(points));
            }
            Ok(None) => self.tell(HostEvent::ForkPoints(Vec::new())),
            Err(e) => self.tell(HostEvent::Failed(format!("cannot list the prompts: {e}"))),
        }
    }

    /// Continue from `target`: from its parent when it is a prompt (whose text goes back to
    /// the editor, to be edited and sent as a new branch), else from the entry itself.
    pub(super) async fn navigate(&mut self, target: String) {
        if self.refuse_while_busy("move in the tree") {
            return;
        }
        let Some((session, entry, _)) = self.session_entry(&target, "move in the tree").await
        else {
            return;
        };
        self.move_to(&session, &entry, None);
    }

    /// [`Host::navigate`], first summarising the branch left behind with the current model.
    /// Commands that arrive meanwhile wait in `deferred`, except an abort, which stops the
    /// summary and leaves everything as it was.
    pub(super) async fn navigate_summarized(
        &mut self,
        target: String,
        focus: Option<String>,
        commands: &mut mpsc::UnboundedReceiver<Op>,
        deferred: &mut VecDeque<Op>,
    ) {
        if self.refuse_while_busy("move in the tree") {
            return;
        }
        let Some((session, entry, old_leaf)) =
            self.session_entry(&target, "move in the tree").await
        else {
            return;
        };
        let new_leaf = target_leaf(&entry);
        let kept: HashSet<&str> = session
            .branch(new_leaf.as_deref())
            .iter()
            .map(|e| e.id.as_str())
            .collect();
        let left: Vec<AgentMessage> = session
            .branch(old_leaf.as_deref())
            .into_iter()
            .filter(|e| !kept.contains(e.id.as_str()))
            .filter_map(|e| e.message().cloned())
            .collect();
        let Some(from_id) = old_leaf.filter(|_| !left.is_empty()) else {
            // Nothing is left behind: a plain move.
            self.move_to(&session, &entry, None);
            return;
        };
        let settings = self.agent.settings();
        let budget = compaction::transcript_budget(
            settings.model.context_window,
            settings
                .compaction
                .unwrap_or_default()
                .for_window(settings.model.context_window)
                .reserve_tokens,
        );
        let request = compaction::branch_request(
            &left,
            focus.as_deref(),
            compaction::MAX_TOOL_RESULT_CHARS,
            budget,
        );
        let signal = AbortSignal::new();
        let summary = summarize(
            &settings.provider,
            &settings.model,
            settings.session_id.clone(),
            request,
            &signal,
        );
        tokio::pin!(summary);
        let mut open = true;
        let result = loop {
            tokio::select! {
                r = &mut summary => break r,
                c = commands.recv(), if open => match c {
                    Some(Op { body: OpBody::Abort { .. }, .. }) => {
                        signal.abort(AbortReason::Requested);
                    }
                    Some(other) => deferred.push_back(other),
                    None => {
                        open = false;
                        signal.abort(AbortReason::Requested);
                    }
                },
            }
        };
        match result {
            Ok(text) => {
                let mut files = compaction::FileOps::default();
                files.add_calls(&left);
                let summary = compaction::assemble(&text, None, &files);
                self.move_to(
                    &session,
                    &entry,
                    Some(BranchSummary {
                        from_id,
                        summary,
                        details: Some(files.details()),
                        from_hook: None,
                    }),
                );
            }
            Err(None) => self.tell(HostEvent::Failed(
                "Stopped: the branch was not summarised, and nothing moved".into(),
            )),
            Err(Some(e)) => self.tell(HostEvent::Failed(format!(
                "cannot summarise the branch ({e}); nothing moved"
            ))),
        }
    }

    /// Move the conversation to `entry` (see [`Host::navigate`]), writing `summary` there
    /// first when given (the conversation then goes on after it).
    pub(super) fn move_to(
        &mut self,
        session: &Session,
        entry: &SessionEntry,
        summary: Option<BranchSummary>,
    ) {
        let draft = editable_text(entry);
        let leaf = target_leaf(entry);
        let mut context = session.context_at(leaf.as_deref());
        if let Some(s) = &summary {
            context
                .messages
                .push(session::branch_context::branch_summary_message(
                    &s.summary,
                    now_ms(),
                ));
        }
        if let Err(e) = self.agent.replace_messages(context.messages.clone()) {
            self.tell(HostEvent::Failed(format!("Cannot move now: {e}")));
            return;
        }
        let mut warnings = Vec::new();
        if let Some(m) = &context.model {
            self.adopt_model(&m.provider, &m.model_id, &mut warnings);
        }
        if let Some(level) = context.thinking_level {
            self.agent.update_settings(|s| s.thinking = level);
            self.thinking = level;
        }
        if let Some(r) = &self.recorder {
            let at = leaf.clone();
            let (messages, origins) = (context.messages.clone(), context.origins.clone());
            r.with(move |r| {
                let _ = r.branch_from(at.as_deref());
                r.remember(&messages, origins);
                if let Some(s) = summary {
                    r.append(EntryKind::BranchSummary(Box::new(s)));
                }
            });
        }
        self.tell(HostEvent::Navigated(Box::new(super::Navigated {
            messages: context.messages,
            draft,
            model: self.model.clone(),
            thinking: self.thinking,
            warnings,
        })));
    }

    /// Set (or with `None`, clear) the label of an entry; answered with a fresh tree.
    pub(super) async fn label(&mut self, target: String, label: Option<String>) {
        let label = label
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty());
        let Some(recorder) = &self.recorder else {
            self.tell(HostEvent::Failed(
                "labels need a saved session (this one is not written)".into(),
            ));
            return;
        };
        recorder.with(move |r| {
            r.append(EntryKind::Label {
                target_id: target,
                label,
            });
        });
        self.tree().await;
    }

    /// `/fork`: a new session holding the branch up to the prompt `target` (not included);
    /// the prompt's text goes back to the editor.
    pub(super) async fn fork_at(&mut self, target: String) {
        if self.refuse_while_busy("fork") {
            return;
        }
        let Some((session, entry, _)) = self.session_entry(&target, "fork").await else {
            return;
        };
        let Some(draft) = editable_text(&entry) else {
            self.tell(HostEvent::Failed(
                "a fork starts from one of your prompts".into(),
            ));
            return;
        };
        let leaf = entry.parent_id.clone();
        self.copy_branch(session, leaf, Some(draft), OpenedFrom::Forked)
            .await;
    }

    /// `/clone`: a new session holding the current branch.
    pub(super) async fn clone_branch(&mut self) {
        if self.refuse_while_busy("clone the session") {
            return;
        }
        match self.current_session().await {
            Ok(Some((session, leaf))) => {
                self.copy_branch(session, leaf, None, OpenedFrom::Cloned)
                    .await
            }
            Ok(None) => self.tell(HostEvent::Failed("nothing to clone yet".into())),
            Err(e) => self.tell(HostEvent::Failed(format!("cannot clone: {e}"))),
        }
    }

    async fn copy_branch(
        &mut self,
        session: Session,
        leaf: Option<String>,
        draft: Option<String>,
        from: OpenedFrom,
    ) {
        let Some(paths) = self.paths.clone() else {
            return;
        };
        let cwd = self.cwd.clone();
        let written = tokio::task::spawn_blocking(move || {
            session::fork::branch_to_new(&session, leaf.as_deref(), &paths.dir, &cwd)
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r.map_err(|e| e.to_string()));
        match written {
            Ok(forked) => {
                let path: PathBuf = forked.path;
                self.open_with_draft(path, draft, from).await;
            }
            Err(e) => self.tell(HostEvent::Failed(format!(
                "cannot write the new session: {e}"
            ))),
        }
    }
}
