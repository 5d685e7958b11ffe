//! Keys, pastes and the mouse: the popups and the approval prompt first, then the keymap's actions on the composer and the transcript.

use super::*;

impl App {
    // ----- keys ---------------------------------------------------------------------------

    /// A paste (or a file dropped on the terminal, which pastes its path): image paths
    /// attach their images; anything else is text for the editor.
    pub fn handle_paste(&mut self, text: &str) {
        self.dirty = true;
        if self.approval.is_open() {
            self.approval.paste(text);
            return;
        }
        if let Some(l) = self.popups.login_mut() {
            l.paste(text);
            return;
        }
        if self.composer.file_picker.is_none()
            && let Some(images) = attach::dropped::images(&self.cwd, text)
        {
            for image in images {
                if !self
                    .composer
                    .attachments
                    .iter()
                    .any(|a| a.path == image.path)
                {
                    self.composer.attachments.push(image);
                }
            }
            return;
        }
        self.composer.editor.paste(text);
        self.sync_file_picker();
    }

    pub fn handle_mouse(&mut self, m: MouseEvent) {
        match m.kind {
            MouseEventKind::ScrollUp => self.scroll_up(3),
            MouseEventKind::ScrollDown => self.scroll_down(3),
            _ => {}
        }
    }

    pub(super) fn scroll_up(&mut self, rows: usize) {
        self.dirty = true;
        let view = self.view(Instant::now());
        let (w, h) = self.viewport;
        self.transcript
            .scroll_up(rows, w as usize, h as usize, &view);
    }

    pub(super) fn scroll_down(&mut self, rows: usize) {
        self.dirty = true;
        let view = self.view(Instant::now());
        let (w, h) = self.viewport;
        self.transcript
            .scroll_down(rows, w as usize, h as usize, &view);
    }

    pub fn handle_key(&mut self, key: KeyEvent) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        self.dirty = true;
        let actions = self.keys.actions(&key).to_vec();
        if !actions.contains(&Action::Clear) {
            self.composer.hint = None;
        }
        if self.approval.is_open() {
            self.approval_key(key);
            return;
        }
        if !self.popups.is_empty() {
            self.popup_key(key);
            return;
        }
        if self.composer.file_picker.is_some() && self.file_picker_key(key) {
            return;
        }
        // The first of the key's actions that applies (Ctrl+D quits only on an empty editor,
        // else deletes forward); a key with none types into the editor, unless it lost its
        // default action to keybindings.json.
        let done = actions.into_iter().any(|a| self.perform(a, key));
        if !done && !self.keys.released(&key) {
            self.unbound_key(key);
        }
        self.sync_file_picker();
    }

    /// Do what `action` means; false when it does not apply now.
    pub(super) fn perform(&mut self, action: Action, key: KeyEvent) -> bool {
        let page = (self.viewport.1 as usize).saturating_sub(2).max(1);
        match action {
            Action::Interrupt => self.escape(),
            Action::Clear => self.clear_or_quit(),
            Action::Exit => {
                if !self.composer.editor.is_empty() {
                    return false;
                }
                self.quit();
            }
            Action::Suspend => self.effects.push(Effect::Suspend),
            Action::ExternalEditor => self
                .effects
                .push(Effect::ExternalEditor(self.composer.editor.expanded())),
            Action::ThinkingToggle => {
                self.show_thinking = !self.show_thinking;
                self.transcript.invalidate_view();
            }
            Action::ToolsExpand => {
                self.expand_tools = !self.expand_tools;
                self.transcript.invalidate_view();
            }
            Action::ModelSelect => self.open_picker(""),
            Action::ModelCycleForward => self.cycle_model(true),
            Action::ModelCycleBackward => self.cycle_model(false),
            Action::ThinkingCycle => self.cycle_thinking(),
            Action::ApprovalCycle => self.cycle_approval(),
            Action::PlanToggle => self.plan_command(if self.planning { "off" } else { "on" }),
            Action::PauseToggle => self.toggle_pause(),
            Action::FollowUp => self.submit(Delivery::FollowUp),
            Action::Dequeue => {
                if !self.composer.steering.is_empty() || !self.composer.follow_up.is_empty() {
                    self.port.take_queued();
                    self.composer.steering.clear();
                    self.composer.follow_up.clear();
                }
            }
            Action::SessionNew => self.run_command("new", ""),
            Action::SessionTree => self.open_tree(TreePurpose::Navigate),
            Action::SessionFork => self.open_tree(TreePurpose::Fork),
            Action::SessionResume => self.open_sessions(),
            Action::NewLine => self.composer.editor.newline(),
            Action::Submit => {
                // Right after a `\` it is a line break (where Shift+Enter is not seen).
                if self.composer.editor.backslash_newline() {
                    return true;
                }
                if let Some((name, takes_args, needs_args)) = self.selected_completion()
                    && self.composer.editor.text() != format!("/{name}")
                    && !needs_args
                    && !takes_args
                {
                    self.composer.editor.set_text(&format!("/{name}"));
                }
                self.submit(Delivery::Steer)
            }
            Action::Tab => {
                if let Some((name, takes_args, _)) = self.selected_completion() {
                    let suffix = if takes_args { " " } else { "" };
                    self.composer.editor.set_text(&format!("/{name}{suffix}"));
                } else {
                    self.complete_path();
                }
            }
            Action::CursorUp => {
                if !self.completions().is_empty() {
                    self.composer.completion_selected =
                        self.composer.completion_selected.saturating_sub(1);
                } else if !self.composer.editor.history_prev() {
                    self.edit(Edit::Up);
                }
            }
            Action::CursorDown => {
                let n = self.completions().len();
                if n > 0 {
                    self.composer.completion_selected =
                        (self.composer.completion_selected + 1).min(n.saturating_sub(1));
                } else if !self.composer.editor.history_next() {
                    self.edit(Edit::Down);
                }
            }
            // With nothing to move in, Home and End move through the conversation.
            Action::CursorLineStart
                if key.code == KeyCode::Home && self.composer.editor.is_empty() =>
            {
                self.transcript.scroll_to_top()
            }
            Action::CursorLineEnd
                if key.code == KeyCode::End && self.composer.editor.is_empty() =>
            {
                self.transcript.follow()
            }
            Action::PageUp => self.scroll_up(page),
            Action::PageDown => self.scroll_down(page),
            Action::DeleteCharBackward
                if self.composer.editor.is_empty() && !self.composer.attachments.is_empty() =>
            {
                self.composer.attachments.pop();
            }
            Action::CursorLeft => self.edit(Edit::Left),
            Action::CursorRight => self.edit(Edit::Right),
            Action::CursorWordLeft => self.edit(Edit::WordLeft),
            Action::CursorWordRight => self.edit(Edit::WordRight),
            Action::CursorLineStart => self.edit(Edit::LineStart),
            Action::CursorLineEnd => self.edit(Edit::LineEnd),
            Action::DeleteCharBackward => self.edit(Edit::DeleteCharBackward),
            Action::DeleteCharForward => self.edit(Edit::DeleteCharForward),
            Action::DeleteWordBackward => self.edit(Edit::DeleteWordBackward),
            Action::DeleteWordForward => self.edit(Edit::DeleteWordForward),
            Action::DeleteToLineStart => self.edit(Edit::DeleteToLineStart),
            Action::DeleteToLineEnd => self.edit(Edit::DeleteToLineEnd),
            Action::Yank => self.edit(Edit::Yank),
            Action::Undo => self.edit(Edit::Undo),
        }
        true
    }

    /// Ctrl+C: clear the editor and attachments; on an empty one, twice quickly quits.
    pub(super) fn clear_or_quit(&mut self) {
        let now = Instant::now();
        if !self.composer.editor.is_empty() || !self.composer.attachments.is_empty() {
            self.composer.editor.clear();
            self.composer.attachments.clear();
            self.last_ctrl_c = Some(now);
        } else if self
            .last_ctrl_c
            .is_some_and(|t| now.duration_since(t) < Duration::from_millis(1000))
        {
            self.quit();
        } else {
            self.last_ctrl_c = Some(now);
            let key = self.keys.label(Action::Clear).unwrap_or_default();
            self.composer.hint = Some(format!("Press {key} again to quit"));
        }
    }

    /// An edit of the text; a change brings back the `/` list if Esc had closed it.
    pub(super) fn edit(&mut self, edit: Edit) {
        let before = self.composer.editor.text();
        self.composer.editor.edit(edit);
        if self.composer.editor.text() != before {
            self.composer.completion_dismissed = false;
            self.composer.completion_selected = 0;
        }
    }

    /// A key no action claims: Ctrl+Home/End scroll, anything else goes to the text area.
    pub(super) fn unbound_key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            KeyCode::Home if ctrl => self.transcript.scroll_to_top(),
            KeyCode::End if ctrl => self.transcript.follow(),
            _ => {
                let before = self.composer.editor.text();
                self.composer.editor.input(key);
                if self.composer.editor.text() != before {
                    self.composer.completion_dismissed = false;
                    self.composer.completion_selected = 0;
                }
                if key.code == KeyCode::Char('@') && !ctrl && !alt {
                    self.open_file_picker();
                }
            }
        }
    }

    /// The text came back from the external editor (Ctrl+G), or the editor failed and the
    /// text stays as it was.
    pub fn external_edit_done(&mut self, outcome: Result<String, String>) {
        self.dirty = true;
        match outcome {
            Ok(text) => {
                self.composer.editor.replace_all(&text);
                self.composer.completion_dismissed = false;
                self.composer.completion_selected = 0;
                self.composer.file_picker = None;
            }
            Err(why) => self.notice(sanitize(&why)),
        }
    }
}
