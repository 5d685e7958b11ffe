//! Rewinding files: what going to another point of the session tree would do to the files the
//! agent changed, and doing it (see [`crate::checkpoint`]).
//!
//! A front end asks for the plan ([`OpBody::RewindPlan`](super::OpBody::RewindPlan)) before a
//! move, shows it, then restores ([`OpBody::RestoreFiles`](super::OpBody::RestoreFiles)) and
//! moves the conversation (`Navigate`) as the person chose. Restoring while the conversation
//! stays (code only) records what it did as an entry, so it can itself be undone; restoring
//! with a move needs none, since moving back along the tree makes the changes again.

use std::path::PathBuf;

use super::{Host, HostEvent};
use crate::checkpoint::record::{self, CUSTOM_TYPE, ChangeSet};
use crate::checkpoint::rewind::{self, Plan, Step};
use crate::session::{EntryKind, Session, SessionEntry};

/// The `customType` of the entry that saves the position a rewind moved to.
pub const MOVED_TYPE: &str = "pi.rewound";

/// What a rewind puts back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewindMode {
    /// Files and conversation.
    #[default]
    Both,
    /// The conversation moves; files stay as they are.
    Conversation,
    /// Files go back; the conversation stays.
    Code,
}

/// What going to `target` would do to the files.
#[derive(Debug)]
pub struct RewindPlan {
    pub target: String,
    pub plan: Plan,
}

/// What a restore did.
#[derive(Debug, Default)]
pub struct FilesRestored {
    pub restored: Vec<PathBuf>,
    /// Changed by someone since; left as they are.
    pub kept: Vec<PathBuf>,
    pub failed: Vec<(PathBuf, String)>,
}

/// The change sets between the leaf `from` and `to`: undone up to their common ancestor,
/// then made again down to `to`.
fn sets_between(session: &Session, from: Option<&str>, to: Option<&str>) -> Vec<(ChangeSet, bool)> {
    let up = session.branch(from);
    let down = session.branch(to);
    let common = up
        .iter()
        .zip(down.iter())
        .take_while(|(a, b)| a.id == b.id)
        .count();
    let mut out = Vec::new();
    for e in up[common..].iter().rev() {
        if let Some(set) = record::of_entry(e) {
            out.push((set, true));
        }
    }
    for e in &down[common..] {
        if let Some(set) = record::of_entry(e) {
            out.push((set, false));
        }
    }
    out
}

fn plan_for(
    session: &Session,
    from: Option<&str>,
    to: Option<&str>,
    store: &crate::checkpoint::store::BlobStore,
) -> Plan {
    let sets = sets_between(session, from, to);
    let steps: Vec<Step<'_>> = sets
        .iter()
        .map(|(set, undo)| Step { set, undo: *undo })
        .collect();
    rewind::plan(&steps, store)
}

impl Host {
    /// `RewindPlan`, `RestoreFiles` and `Rewind`.
    pub(super) async fn handle_rewind(&mut self, body: super::OpBody) {
        use super::OpBody;
        match body {
            OpBody::RewindPlan { target } => self.rewind_plan(target).await,
            OpBody::RestoreFiles {
                target,
                force,
                record,
            } => self.restore_files(target, force, record).await,
            OpBody::Rewind {
                target,
                mode,
                force,
            } => self.rewind(target, mode, force).await,
            _ => {}
        }
    }

    /// Where the files go for a move to `target`: before a prompt, else at the entry.
    async fn rewind_ends(&self, target: &str) -> Option<(Session, Option<String>, Option<String>)> {
        let (session, entry, leaf) = self.session_entry(target, "rewind").await?;
        let to = super::navigation::target_leaf(&entry);
        Some((session, leaf, to))
    }

    pub(super) async fn rewind_plan(&self, target: String) {
        let Some(tracker) = self.checkpoints.clone() else {
            self.tell(HostEvent::RewindPlan(Box::new(RewindPlan {
                target,
                plan: Plan::default(),
            })));
            return;
        };
        let Some((session, from, to)) = self.rewind_ends(&target).await else {
            return;
        };
        let plan = tokio::task::spawn_blocking(move || {
            plan_for(&session, from.as_deref(), to.as_deref(), tracker.store())
        })
        .await
        .unwrap_or_default();
        self.tell(HostEvent::RewindPlan(Box::new(RewindPlan { target, plan })));
    }

    /// Put the files back as they were at `target`; `force` also overwrites files changed
    /// since; `record` writes what was done as an entry (the conversation stays where it is).
    pub(super) async fn restore_files(&mut self, target: String, force: bool, record: bool) {
        if let Some(done) = self.restore(&target, force, record).await {
            self.tell(HostEvent::FilesRestored(Box::new(done)));
        }
    }

    /// A whole rewind to `target` (RPC's `rewind`): files and conversation as `mode` says,
    /// answered with [`HostEvent::FilesRestored`] once both are done. The session is read once.
    pub(super) async fn rewind(&mut self, target: String, mode: RewindMode, force: bool) {
        if self.refuse_while_busy("rewind") {
            return;
        }
        let Some((mut session, entry, leaf)) = self.session_entry(&target, "rewind").await else {
            return;
        };
        let done = if mode == RewindMode::Conversation {
            FilesRestored::default()
        } else {
            let code_only = mode == RewindMode::Code;
            match self
                .restore_in(session, &entry, leaf, force, code_only)
                .await
            {
                Some((done, read)) => {
                    session = read;
                    done
                }
                None => return,
            }
        };
        if mode != RewindMode::Code {
            self.move_to(&session, &entry, None);
            if !done.restored.is_empty() {
                self.note_move(&done);
            }
        }
        self.tell(HostEvent::FilesRestored(Box::new(done)));
    }

    async fn restore(&mut self, target: &str, force: bool, record: bool) -> Option<FilesRestored> {
        if self.refuse_while_busy("rewind") {
            return None;
        }
        let (session, entry, leaf) = self.session_entry(target, "rewind").await?;
        self.restore_in(session, &entry, leaf, force, record)
            .await
            .map(|(done, _)| done)
    }

    /// After a move that put files back: an entry where the conversation now stands, so the
    /// position is saved at once (a move alone is saved only with the next entry) and a resume
    /// opens where the files are. It carries no change set: the files are as the tree says.
    fn note_move(&self, done: &FilesRestored) {
        if let Some(r) = &self.recorder {
            let data = serde_json::json!({ "restored": done.restored.len() });
            r.with(move |r| {
                r.append(EntryKind::Custom {
                    custom_type: MOVED_TYPE.into(),
                    data: Some(Box::new(data)),
                });
            });
        }
    }

    /// Write what a code-only restore did as an entry where the conversation stands, so it can
    /// itself be undone.
    fn note_restore(&self, set: &ChangeSet) {
        if set.is_empty() {
            return;
        }
        if let Some(r) = &self.recorder {
            let data = set.to_value();
            r.with(move |r| {
                r.append(EntryKind::Custom {
                    custom_type: CUSTOM_TYPE.into(),
                    data: Some(Box::new(data)),
                });
            });
        }
    }

    /// Put the files back as they were at `entry` of `session` (read with the leaf `leaf`);
    /// the session comes back with what was done.
    async fn restore_in(
        &mut self,
        session: Session,
        entry: &SessionEntry,
        leaf: Option<String>,
        force: bool,
        record: bool,
    ) -> Option<(FilesRestored, Session)> {
        let Some(tracker) = self.checkpoints.clone() else {
            self.tell(HostEvent::Failed(
                "cannot rewind files: checkpoints are off in this run".into(),
            ));
            return None;
        };
        let to = super::navigation::target_leaf(entry);
        let restored = tokio::task::spawn_blocking(move || {
            let plan = plan_for(&session, leaf.as_deref(), to.as_deref(), tracker.store());
            (rewind::apply(&plan, tracker.store(), force), session)
        })
        .await;
        let (done, session) = match restored {
            Ok(r) => r,
            Err(e) => {
                self.tell(HostEvent::Failed(format!("cannot rewind files: {e}")));
                return None;
            }
        };
        if record {
            self.note_restore(&done.record);
        }
        let said = FilesRestored {
            restored: done.restored,
            kept: done.kept,
            failed: done.failed,
        };
        Some((said, session))
    }
}
