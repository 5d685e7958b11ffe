//! The host's answers: listings, opened sessions, exports, names, failures.

use super::*;

impl App {
    // ----- host events -------------------------------------------------------------------

    /// The next item of the host's one stream, in the order things happened.
    pub fn handle_front_event(&mut self, event: crate::host::FrontEvent) {
        use crate::host::FrontEvent;
        match event {
            FrontEvent::Run(e) => self.handle_run_event(e),
            FrontEvent::Host { event, .. } => self.handle_host_event(event),
            FrontEvent::Answer { answer, .. } => self.handle_answer(answer),
        }
    }

    /// What an operation returned. Only a refused prompt is news here (the session cannot be
    /// saved, say); the rest shows through the events that follow.
    pub fn handle_answer(&mut self, answer: crate::host::Answer) {
        use crate::agent::protocol::command::AgentAnswer;
        if let crate::host::Answer::Agent(AgentAnswer::Prompt(Err(e))) = answer {
            self.handle_host_event(HostEvent::Failed(e.to_string()));
        }
    }

    /// An answer from the host (sessions, exports, names, queued messages, failures).
    pub fn handle_host_event(&mut self, event: HostEvent) {
        self.dirty = true;
        match event {
            HostEvent::Sessions { scope, sessions } => match self.popups.sessions_mut() {
                Some(p) => p.set_scope(scope, sessions),
                None if self.awaiting_sessions => {
                    self.awaiting_sessions = false;
                    self.popups
                        .push(Popup::Sessions(SessionPicker::new(scope, sessions)));
                }
                None => {}
            },
            HostEvent::MessageCounts(counts) => {
                if let Some(p) = self.popups.sessions_mut() {
                    p.counts.extend(counts);
                }
            }
            HostEvent::Opened(opened) => self.resume(*opened),
            HostEvent::NewSession { after_run, .. } => {
                self.stale_runs = after_run;
                self.clear_conversation();
                self.place.session_name = None;
                self.notice("New conversation");
            }
            HostEvent::Exported(path) => self.notice(format!(
                "Exported to {}",
                sanitize(&crate::paths::short_home(&path))
            )),
            HostEvent::Approval(request) => {
                self.effects.push(Effect::Notify(format!(
                    "{} waits for your approval",
                    sanitize(&request.tool)
                )));
                self.approval.push(*request);
            }
            // The TUI asks for the tree instead (`/fork` picks from it).
            HostEvent::ForkPoints(_) => {}
            HostEvent::LoggedIn(done) => {
                self.providers_without_key.remove(&done.provider);
                let saved = match &done.file {
                    Some(f) => format!(
                        "Saved the key for {} in {}",
                        sanitize(&done.provider),
                        sanitize(&crate::paths::short_home(f))
                    ),
                    None => format!(
                        "Using the key for {} in this run (no home folder to save it in)",
                        sanitize(&done.provider)
                    ),
                };
                match done.model {
                    Some(m) => {
                        self.notice(format!("{saved} · model: {}/{}", m.provider, m.id));
                        self.model = m;
                        self.model_chosen = true;
                    }
                    None => self.notice(saved),
                }
            }
            HostEvent::LocalModels(models) => {
                if let Some(l) = self.popups.login_mut() {
                    l.add_local(models);
                }
            }
            HostEvent::ModelWindow {
                provider,
                id,
                window,
            } => {
                // The footer's percentage counts against what the server really gives.
                if self.model.provider == provider && self.model.id == id {
                    self.model.context_window = window;
                }
            }
            HostEvent::Named(name) => {
                self.place.session_name = Some(sanitize(&name));
                self.notice(format!("Session named “{}”", sanitize(&name)));
            }
            HostEvent::Stats(stats) => {
                self.transcript.push(Cell::Info(stats_text(&stats)));
                self.transcript.follow();
            }
            HostEvent::Queued(messages) => self.restore_queued(&messages),
            HostEvent::SessionWriteFailed(why) => {
                self.transcript.push(Cell::Error(format!(
                    "The session file could not be written: {} (kept in memory; retried with \
                     the next entry)",
                    sanitize(&why)
                )));
                self.transcript.follow();
            }
            HostEvent::Tree(tree) => match (self.popups.tree_mut(), self.awaiting_tree.take()) {
                (Some(view), _) => view.refresh(*tree),
                (None, Some(purpose)) => {
                    if tree.rows.is_empty() {
                        self.notice("Nothing in this session yet");
                    } else {
                        self.popups.push(Popup::Tree(TreeView::new(purpose, *tree)));
                    }
                }
                (None, None) => {}
            },
            HostEvent::ShellDone(r) => self.shell_done(*r),
            HostEvent::RewindPlan(p) => self.rewind_planned(*p),
            HostEvent::PlanMode(on) => self.planning = on,
            HostEvent::Navigated(nav) => self.navigated(*nav),
            HostEvent::FilesRestored(r) => self.files_restored(*r),
            HostEvent::Notice(text) => self.notice(sanitize(&text)),
            HostEvent::McpStatus(servers) => {
                let text = crate::host::view::describe_servers(&servers);
                self.transcript.push(Cell::Info(sanitize(&text)));
                self.transcript.follow();
            }
            // Only RPC mode asks for it.
            HostEvent::CompactionRecorded(_) => {}
            HostEvent::Failed(why) => self.failed(&why),
        }
    }

    /// Forget what the screen shows of the conversation.
    /// An operation failed: nothing waits for its answer any more.
    fn failed(&mut self, why: &str) {
        self.end_summarizing();
        self.awaiting_sessions = false;
        self.awaiting_tree = None;
        self.pending_move = None;
        self.transcript.push(Cell::Error(sanitize(why)));
        self.transcript.follow();
        if let Some(Some(r)) = self.restore_then_move.take() {
            self.say_restored(r);
        }
    }

    pub(super) fn clear_conversation(&mut self) {
        self.transcript.clear();
        self.header_cell = None;
        self.tools.clear();
        self.streaming = None;
        self.totals = UsageTotals::default();
        self.context_after = 0;
        self.last_answer = None;
        self.last_stop = None;
    }
}

/// What `/session` shows.
fn stats_text(s: &SessionStats) -> String {
    let mut out = format!(
        "Session{}\n  id: {}\n",
        s.name
            .as_deref()
            .map(|n| format!(" “{}”", sanitize(n)))
            .unwrap_or_default(),
        sanitize(&s.session_id)
    );
    match &s.path {
        Some(p) => out.push_str(&format!(
            "  file: {}\n",
            sanitize(&crate::paths::short_home(p))
        )),
        None => out.push_str("  file: not saved (--no-session)\n"),
    }
    if let Some(parent) = &s.parent_session {
        out.push_str(&format!("  forked from: {}\n", sanitize(parent)));
    }
    let u = &s.usage;
    out.push_str(&format!(
        "  messages: {} user, {} assistant, {} tool calls, {} tool results\n  tokens: ↑{} ↓{} cache read {} cache write {}\n  cost: ${:.3}\n",
        s.user_messages,
        s.assistant_messages,
        s.tool_calls,
        s.tool_results,
        u.input,
        u.output,
        u.cache_read,
        u.cache_write,
        u.cost
    ));
    if s.context_window > 0 {
        let pct = u.context as f64 * 100.0 / s.context_window as f64;
        out.push_str(&format!(
            "  context: {} of {} tokens ({pct:.1}%)",
            u.context, s.context_window
        ));
    } else {
        out.push_str(&format!("  context: {} tokens", u.context));
    }
    out
}
