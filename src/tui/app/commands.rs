//! Slash commands, the start-up header and notices, the model and thinking level.

use super::*;

impl App {
    // ----- commands -----------------------------------------------------------------------

    /// No model could be found: say what is missing and how to set one up.
    pub fn show_welcome(&mut self, missing: &str) {
        self.transcript.push(Cell::Info(format!(
            "Welcome to pi. No model is ready yet.\n{missing}\n\n  /login   sign in to a \
             subscription (ChatGPT, Claude, Copilot), paste an API key for a provider, or pick a \
             local server found on this machine\n  /model   choose a model\n"
        )));
        self.transcript.follow();
    }

    /// Open `/login` and look for local servers meanwhile.
    pub fn open_login(&mut self) {
        let subscriptions = crate::provider::subscription::Kind::ALL
            .into_iter()
            .map(|k| crate::tui::popup::login::Choice::Subscription {
                provider: k.provider().to_string(),
                label: k.label().to_string(),
                signed_in: self.signed_in.contains(k.provider()),
            });
        let providers: Vec<crate::tui::popup::login::Choice> = subscriptions
            .chain(self.key_providers.iter().map(|(id, env)| {
                crate::tui::popup::login::Choice::Provider {
                    id: id.clone(),
                    env: env.clone(),
                    has_key: !self.providers_without_key.contains(id),
                }
            }))
            .collect();
        self.popups
            .push(Popup::Login(crate::tui::popup::login::LoginView::new(
                providers,
            )));
        self.port.find_local_models();
    }

    pub(super) fn login_done(&mut self, outcome: crate::tui::popup::login::Outcome) {
        use crate::tui::popup::login::Outcome;
        match outcome {
            Outcome::Nothing => {}
            Outcome::Close => self.popups.close_login(),
            Outcome::Save { provider, key } => {
                self.popups.close_login();
                self.notice(format!("Saving the key for {provider}…"));
                self.port.login(provider, key);
            }
            Outcome::UseLocal(m) => {
                self.popups.close_login();
                self.notice(format!("Model: {}/{}", m.provider, m.id));
                self.set_model(m);
            }
            Outcome::Subscribe { provider } => self.port.sign_in(provider),
            Outcome::Paste { line } => self.port.sign_in_paste(line),
            Outcome::CancelSignIn => {
                self.popups.close_login();
                self.port.cancel_sign_in();
            }
        }
    }

    /// Show the start-up header: what pi talks to, where, and the keys to know.
    /// `ready`: a model was found (else the header says there is none yet).
    pub fn show_header(&mut self, version: &str, ready: bool) {
        let level = if self.model.reasoning {
            format!(" · thinking {}", self.thinking.as_str())
        } else {
            String::new()
        };
        let model = if ready {
            format!("{}/{}{level}", self.model.provider, self.model.id)
        } else {
            "no model yet (/login)".to_string()
        };
        let sandbox = self
            .sandbox
            .as_deref()
            .map(|s| format!(" · {s}"))
            .unwrap_or_default();
        let text = format!(
            "pi {version} · {model} · {}{sandbox}\n{}",
            self.place.cwd,
            crate::tui::help::header_keys(&self.keys)
        );
        self.header_cell = Some(self.transcript.push(Cell::Info(text)));
        self.transcript.follow();
    }

    /// The header has done its job once a prompt is sent: its cell becomes empty (cells are
    /// addressed by position, so it stays in place).
    pub(super) fn hide_header(&mut self) {
        if let Some(i) = self.header_cell.take()
            && let Some(cell) = self.transcript.get_mut(i)
        {
            *cell = Cell::Info(String::new());
        }
    }

    /// A key while a tool call waits for approval.
    pub(super) fn approval_key(&mut self, key: KeyEvent) {
        use crate::tui::popup::approval::Outcome;
        let shown = self.approval.current().cloned();
        match self.approval.key(key) {
            Outcome::Nothing => {}
            Outcome::Abort => self.escape(),
            Outcome::Answer(id, decision) => {
                if let Some(r) = shown {
                    let subject = if r.tool == "bash" {
                        crate::tui::shown_command::one_line(&r.subject)
                    } else {
                        sanitize(&r.subject)
                    };
                    let what = format!("{} {subject}", r.tool);
                    self.notice(match &decision {
                        Decision::Once => format!("Allowed {what}"),
                        Decision::Session => {
                            format!(
                                "Allowed {what}, and from now on {} for the session",
                                sanitize(&r.session_scope)
                            )
                        }
                        Decision::Refuse(None) => format!("Refused {what}"),
                        Decision::Refuse(Some(why)) => {
                            format!("Refused {what}: {}", sanitize(why))
                        }
                    });
                }
                self.port.approve(id, decision);
            }
        }
    }

    /// Ctrl+S: hold the agent back at its next step (a model call or a tool start), or let it
    /// go on. Nothing running is stopped; Esc still aborts.
    pub(super) fn toggle_pause(&mut self) {
        match self.paused_since.take() {
            None => {
                self.paused_since = Some(Instant::now());
                self.port.set_paused(true);
                let go_on =
                    crate::tui::help::key_or(&self.keys, Action::PauseToggle, "the pause key");
                let abort = crate::tui::help::key_or(&self.keys, Action::Interrupt, "interrupting");
                self.notice(format!(
                    "Paused: pi waits before its next model call or tool (what runs now \
                     finishes). {go_on} goes on; {abort} aborts."
                ));
            }
            Some(since) => {
                self.port.set_paused(false);
                self.notice(format!(
                    "Going on after a pause of {}",
                    crate::tui::units::short_duration(since.elapsed())
                ));
            }
        }
    }

    /// Alt+A: the next approval mode.
    pub(super) fn cycle_approval(&mut self) {
        self.approval_mode = self.approval_mode.next();
        self.port.set_approval(self.approval_mode);
        self.notice(match self.approval_mode {
            ApprovalMode::Auto => "Approval: auto — every tool call runs",
            ApprovalMode::Ask => {
                "Approval: ask — bash, edit, write and MCP calls wait for your y/a/n"
            }
            ApprovalMode::ReadOnly => {
                "Approval: read-only — only read, grep, find and ls run; other calls are refused"
            }
        });
    }

    pub fn notice(&mut self, text: impl Into<String>) {
        self.transcript.push(Cell::Notice(text.into()));
        self.transcript.follow();
    }

    pub fn run_command(&mut self, name: &str, args: &str) {
        self.dirty = true;
        match name {
            "help" => {
                let text = crate::tui::help::text(&self.keys, &self.commands);
                self.transcript.push(Cell::Info(text));
                self.transcript.follow();
            }
            "model" => self.open_picker(args),
            "login" => self.open_login(),
            "logout" => {
                if args.trim().is_empty() {
                    let mut signed: Vec<&str> = self.signed_in.iter().map(String::as_str).collect();
                    signed.sort_unstable();
                    self.notice(if signed.is_empty() {
                        "Usage: /logout PROVIDER (no subscription is signed in)".to_string()
                    } else {
                        format!("Usage: /logout PROVIDER (signed in: {})", signed.join(", "))
                    });
                } else {
                    self.port.logout(args.trim().to_string());
                }
            }
            "theme" => self.theme_command(args),
            "todos" => {
                if self.todos.items.is_empty() {
                    self.notice("No task list yet: the model keeps one with the todo tool");
                } else {
                    self.todos.collapsed = !self.todos.collapsed;
                }
            }
            "resume" => self.open_sessions(),
            "thinking" => {
                if args.is_empty() {
                    self.cycle_thinking();
                } else {
                    match args.parse::<ThinkingLevel>() {
                        Ok(level) => self.set_thinking(level),
                        Err(e) => {
                            self.transcript.push(Cell::Error(e));
                        }
                    }
                }
            }
            "new" => self.port.new_session(),
            "name" => {
                if args.trim().is_empty() {
                    self.transcript
                        .push(Cell::Error("usage: /name <name>".into()));
                } else {
                    self.port.name_session(args.trim().to_string());
                }
            }
            "session" => self.port.stats(),
            "mcp" => self.port.mcp_status(),
            "compact" => {
                if self.refuse_when_busy("compact") {
                    return;
                }
                let focus = (!args.trim().is_empty()).then(|| args.trim().to_string());
                self.port.compact(focus);
            }
            "tree" => self.open_tree(TreePurpose::Navigate),
            "fork" => self.open_tree(TreePurpose::Fork),
            "rewind" => self.open_tree(TreePurpose::Rewind),
            "plan" => self.plan_command(args),
            "clone" => {
                if self.refuse_when_not_saving() || self.refuse_when_busy("clone the session") {
                    return;
                }
                self.port.clone_session();
            }
            "copy" => match self.last_answer.clone() {
                Some(text) => {
                    let n = text.chars().count();
                    self.effects.push(Effect::Copy(text));
                    self.notice(format!("Copied the last answer ({n} characters)"));
                }
                None => self.notice("Nothing to copy yet"),
            },
            "export" => {
                let path = (!args.trim().is_empty()).then(|| PathBuf::from(args.trim()));
                self.port.export(path);
            }
            "quit" => self.quit(),
            _ => {}
        }
    }

    /// Talk to `model` from now on (the agent and the footer).
    pub(super) fn set_model(&mut self, model: ModelInfo) {
        self.port.set_model(&model);
        self.model = model;
        self.model_chosen = true;
    }

    pub(super) fn set_thinking(&mut self, level: ThinkingLevel) {
        self.thinking = level;
        self.port.set_thinking(level);
        self.notice(format!("Thinking level: {}", level.as_str()));
    }

    /// Ctrl+P / Shift+Ctrl+P: the next or previous model of the scope.
    pub(super) fn cycle_model(&mut self, forward: bool) {
        let without_key = &self.providers_without_key;
        let Some((model, level)) = crate::setup::patterns::cycle(
            &self.scoped_models,
            &self.models,
            &|p| !without_key.contains(p),
            &self.model,
            forward,
        ) else {
            let choose = crate::tui::help::key_or(&self.keys, Action::ModelSelect, "/model");
            self.notice(format!(
                "No other model to switch to: name some with --models or enabled_models, or \
                 choose one with {choose}"
            ));
            return;
        };
        let label = format!("Model: {}/{}", model.provider, model.id);
        let reasoning = model.reasoning;
        self.set_model(model);
        match level {
            Some(l) if reasoning => {
                self.thinking = l;
                self.port.set_thinking(l);
                self.notice(format!("{label} · thinking {}", l.as_str()));
            }
            _ => self.notice(label),
        }
    }

    pub(super) fn cycle_thinking(&mut self) {
        if !self.model.reasoning {
            self.notice(format!(
                "{} does not reason, so there is no thinking level to change",
                self.model.id
            ));
            return;
        }
        self.set_thinking(self.thinking.cycled());
    }
}
