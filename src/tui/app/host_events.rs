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
            HostEvent::SignInNotice(n) => self.sign_in_notice(n),
            HostEvent::SignedIn(done) => self.signed_in_to(*done),
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
            HostEvent::Failed(why) => {
                // A sign-in that ended without success closes its overlay.
                if self.popups.login_mut().is_some_and(|l| l.signing_in()) {
                    self.popups.close_login();
                }
                self.failed(&why)
            }
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

impl App {
    /// Show what a sign-in needs: in the overlay, and the address in the transcript too (for
    /// copying, when no browser opened).
    fn sign_in_notice(&mut self, notice: crate::provider::subscription::flows::Notice) {
        use crate::provider::subscription::flows::Notice;
        let line = match notice {
            Notice::OpenUrl { url, .. } => {
                // The address is long and shown wrapped, and a copied wrapped line breaks in
                // many terminals: it also goes to the clipboard (OSC 52, which works over SSH).
                self.transcript.push(Cell::Info(format!(
                    "Open this address in a browser to sign in (pi opens one when it can; the \
                     address is also on the clipboard where the terminal allows it):\n{}",
                    sanitize(&url)
                )));
                self.transcript.follow();
                self.effects.push(Effect::Copy(url));
                "Sign in in the browser: the address is in the conversation above.".to_string()
            }
            Notice::DeviceCode { url, code } => {
                let text = format!(
                    "Open {} and enter the code {} (also on the clipboard where the terminal \
                     allows it)",
                    sanitize(&url),
                    sanitize(&code)
                );
                self.effects.push(Effect::Copy(code));
                self.transcript.push(Cell::Info(text.clone()));
                self.transcript.follow();
                text
            }
            Notice::Progress(p) => p,
        };
        if let Some(l) = self.popups.login_mut() {
            l.sign_in_notice(line);
        }
    }

    /// A subscription was signed in to: offer its models and switch to its default.
    fn signed_in_to(&mut self, done: crate::host::login::SignedIn) {
        if self.popups.login_mut().is_some_and(|l| l.signing_in()) {
            self.popups.close_login();
        }
        self.signed_in.insert(done.provider.clone());
        self.providers_without_key.remove(&done.provider);
        for m in &done.models {
            if !self
                .models
                .iter()
                .any(|x| x.provider == m.provider && x.id == m.id)
            {
                self.models.push(m.clone());
            }
        }
        if let Some(c) = &self.catalog {
            let mut with = (**c).clone();
            with.add_subscription_models(&done.provider);
            self.catalog = Some(std::sync::Arc::new(with));
        }
        let saved = match &done.file {
            Some(f) => format!("saved in {}", sanitize(&crate::paths::short_home(f))),
            None => "for this run only (no home folder to save it in)".to_string(),
        };
        let said = format!("Signed in to {} ({saved})", sanitize(&done.label));
        match done.model {
            Some(m) => {
                self.notice(format!("{said} · model: {}/{}", m.provider, m.id));
                self.set_model(m);
            }
            None => self.notice(said),
        }
    }
}
