//! The tree: asking for it, moving in it, forking; a conversation shown again from saved messages.

use super::*;

impl App {
    // ----- the tree ---------------------------------------------------------------------

    pub(super) fn refuse_when_not_saving(&mut self) -> bool {
        if !self.saving {
            self.notice("Sessions are not saved in this run (--no-session)");
        }
        !self.saving
    }

    pub(super) fn refuse_when_busy(&mut self, what: &str) -> bool {
        let busy = self.is_busy();
        if busy {
            let stop = match self.keys.label(Action::Interrupt) {
                Some(key) => format!("press {key} first"),
                None => "stop it first".to_string(),
            };
            self.notice(format!("Cannot {what} while the agent is working; {stop}"));
        }
        busy
    }

    /// Ask the host for the tree; the view opens when it arrives.
    pub fn open_tree(&mut self, purpose: TreePurpose) {
        self.dirty = true;
        if self.refuse_when_not_saving() {
            return;
        }
        let what = match purpose {
            TreePurpose::Navigate => "move in the tree",
            TreePurpose::Fork => "fork",
            TreePurpose::Rewind => "rewind",
        };
        if self.refuse_when_busy(what) {
            return;
        }
        self.awaiting_tree = Some(purpose);
        self.port.tree();
    }

    pub(super) fn tree_done(&mut self, action: TreeAction) {
        match action {
            TreeAction::None => {}
            TreeAction::Close => self.popups.close_tree(),
            TreeAction::Label { target, label } => self.port.label(target, label),
            TreeAction::Choose(id) => {
                self.popups.close_tree();
                if self.refuse_when_busy("fork") {
                    return;
                }
                self.port.fork(id);
            }
            TreeAction::Move { target, leave } => {
                self.popups.close_tree();
                if self.refuse_when_busy("move in the tree") {
                    return;
                }
                // First see whether the move would change files the agent wrote.
                self.port.rewind_plan(target.clone());
                self.pending_move = Some((target, leave));
            }
        }
    }

    /// The host said what a move would do to the files: ask when it changes any, else move.
    pub(super) fn rewind_planned(&mut self, plan: crate::host::rewind::RewindPlan) {
        let Some((target, leave)) = self.pending_move.take() else {
            return;
        };
        if target != plan.target {
            return;
        }
        if plan.plan.is_empty() {
            self.move_in_tree(target, leave);
        } else {
            self.popups
                .push(Popup::Rewind(crate::tui::popup::rewind::RewindView::new(
                    target,
                    leave,
                    plan.plan.files,
                )));
        }
    }

    /// What the rewind question decided.
    pub(super) fn rewind_done(
        &mut self,
        outcome: crate::tui::popup::rewind::Outcome,
        target: String,
        leave: LeaveWith,
    ) {
        use crate::tui::popup::rewind::{Outcome, RewindMode};
        match outcome {
            Outcome::Nothing => {}
            Outcome::Cancel => self.popups.close_rewind(),
            Outcome::Chosen { mode, force } => {
                self.popups.close_rewind();
                if self.refuse_when_busy("rewind") {
                    return;
                }
                match mode {
                    // One operation, which also saves the new position at once.
                    RewindMode::Both if leave == LeaveWith::NoSummary => {
                        self.port.rewind(target, mode, force);
                    }
                    // The summary entry written there saves the position.
                    RewindMode::Both => {
                        self.port.restore_files(target.clone(), force, false);
                        self.restore_then_move = Some(None);
                        self.move_in_tree(target, leave);
                    }
                    RewindMode::Conversation => self.move_in_tree(target, leave),
                    RewindMode::Code => self.port.restore_files(target, force, true),
                }
            }
        }
    }

    /// What a restore did, said in a notice (after the move that follows it, if one does).
    pub(super) fn files_restored(&mut self, r: crate::host::rewind::FilesRestored) {
        if let Some(slot @ None) = self.restore_then_move.as_mut() {
            *slot = Some(r);
            return;
        }
        self.say_restored(r);
    }

    pub(super) fn say_restored(&mut self, r: crate::host::rewind::FilesRestored) {
        let cwd = self.cwd.clone();
        let shown =
            move |p: &std::path::Path| sanitize(&crate::tui::popup::rewind::relative(p, &cwd));
        let n = r.restored.len();
        let mut text = format!("Files put back: {n}");
        if !r.kept.is_empty() {
            let kept: Vec<String> = r.kept.iter().map(|p| shown(p)).collect();
            text.push_str(&format!(
                "; kept as they are (changed since the agent did): {}",
                kept.join(", ")
            ));
        }
        self.notice(text);
        for (p, why) in &r.failed {
            self.transcript.push(Cell::Error(format!(
                "Could not put back {}: {}",
                shown(p),
                sanitize(why)
            )));
        }
        if n > 0 {
            self.notice(
                "To undo this, go back in /tree to where you were, with code and conversation",
            );
        }
    }

    /// Move the conversation to `target`, summarising what is left behind as chosen.
    fn move_in_tree(&mut self, target: String, leave: LeaveWith) {
        let focus = match leave {
            LeaveWith::NoSummary => return self.port.navigate(target),
            LeaveWith::Summary => None,
            LeaveWith::FocusedSummary(f) => Some(f),
        };
        self.port.navigate_summarized(target, focus);
        // Shown as work (Esc stops it) until the host answers.
        self.summarizing = true;
        self.working = Some(Instant::now());
        self.retry = Some("Summarizing the branch you are leaving...".into());
    }

    pub(super) fn end_summarizing(&mut self) {
        if std::mem::take(&mut self.summarizing) {
            self.working = None;
            self.retry = None;
            self.stopping = false;
        }
    }

    /// The host moved the conversation to another point of the session.
    pub(super) fn navigated(&mut self, nav: crate::host::Navigated) {
        self.end_summarizing();
        self.clear_conversation();
        self.model = nav.model;
        self.thinking = nav.thinking;
        self.show_messages(&nav.messages);
        for w in nav.warnings {
            self.notice(sanitize(&w));
        }
        match nav.draft {
            Some(draft) => {
                self.composer.editor.set_text(&draft);
                self.notice("Moved before this prompt: edit it and send to start a new branch");
            }
            None => self.notice("Moved: the conversation goes on from here"),
        }
        if let Some(Some(r)) = self.restore_then_move.take() {
            self.say_restored(r);
        }
    }

    /// What a finished reply's stop reason adds below it: its error, the abort, a cut-off note.
    /// A retried attempt's error is not shown (the retry notice says it).
    pub(super) fn push_stop_cell(&mut self, a: &AssistantMessage) {
        match a.stop_reason {
            StopReason::Error if !a.is_retried_attempt() => {
                let m = a
                    .error_message
                    .clone()
                    .unwrap_or_else(|| "the model call failed".into());
                self.transcript.push(Cell::Error(m));
            }
            StopReason::Aborted => {
                self.transcript
                    .push(Cell::Aborted("Operation aborted".into()));
            }
            StopReason::Length => {
                self.transcript.push(Cell::Notice(
                    "The answer was cut off at the output token limit.".into(),
                ));
            }
            _ => {}
        }
    }

    /// Render saved messages as cells, as they looked when they happened: user prompts,
    /// answers (thinking per the toggle), one tool cell per call with its result and diff,
    /// errors and aborts, and summaries of condensed or abandoned parts of the conversation.
    pub fn show_messages(&mut self, messages: &[AgentMessage]) {
        let mut calls: HashMap<String, usize> = HashMap::new();
        for m in messages {
            self.count_after(m);
            self.add_subagent_usage(m);
            if let Some(Message::ToolResult(r)) = m.as_llm()
                && let Some(items) = r.details.as_ref().and_then(crate::host::view::todo_list)
            {
                self.todos.items = items;
            }
            match m.as_llm() {
                Some(Message::User(u)) => {
                    if let Some(summary) = cells::Summary::of(u) {
                        self.transcript.push(Cell::Summary(summary));
                        continue;
                    }
                    if !self.transcript.is_empty() {
                        self.transcript.push(Cell::Divider);
                    }
                    self.transcript.push(Cell::User(sanitize(&shown_text(m))));
                }
                Some(Message::Assistant(a)) => {
                    self.transcript.push(Cell::assistant(a.clone(), false));
                    self.add_usage(&a.usage);
                    if !a.is_retried_attempt() {
                        self.last_stop = Some(a.stop_reason);
                        if !a.text().trim().is_empty() {
                            self.last_answer = Some(a.text());
                        }
                    }
                    self.push_stop_cell(a);
                    for call in a.tool_calls() {
                        let idx = self.transcript.push(Cell::Tool(ToolCell {
                            id: call.id.clone(),
                            name: sanitize(&call.name),
                            args: std::sync::Arc::new(call.arguments.clone()),
                            state: ToolState::Skipped,
                            output: String::new(),
                            diff: None,
                            saved: None,
                        }));
                        calls.insert(call.id.clone(), idx);
                    }
                }
                Some(Message::ToolResult(r)) => {
                    if let Some(idx) = calls.remove(&r.tool_call_id)
                        && let Some(Cell::Tool(t)) = self.transcript.get_mut(idx)
                    {
                        t.state = ToolState::Done {
                            ok: !r.is_error,
                            took: Duration::ZERO,
                        };
                        t.saved = Some(m.clone());
                    }
                }
                _ => {}
            }
        }
        self.transcript.follow();
    }
}
