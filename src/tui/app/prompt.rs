//! The prompt: `@` files and paths, Esc, and sending what was typed (a command, a `!` command or a prompt).

use super::*;

impl App {
    // ----- `@` files and paths ----------------------------------------------------------

    /// An `@` was just typed: at the start of a word it opens the file picker.
    pub(super) fn open_file_picker(&mut self) {
        let (row, col) = self.composer.editor.cursor();
        let Some(at) = col.checked_sub(1) else {
            return;
        };
        let line: Vec<char> = self.composer.editor.line(row).chars().collect();
        let word_start = at == 0 || line.get(at - 1).is_some_and(|c| c.is_whitespace());
        if line.get(at) == Some(&'@') && word_start {
            self.composer.files.refresh();
            self.composer.file_picker = Some(FilePicker::new(row, at));
        }
    }

    /// Keep the picker on the text after its `@`; close it once the cursor leaves that word.
    pub(super) fn sync_file_picker(&mut self) {
        let Some(p) = self.composer.file_picker.as_mut() else {
            return;
        };
        let (row, col) = self.composer.editor.cursor();
        let line: Vec<char> = self.composer.editor.line(row).chars().collect();
        let query: Option<String> = (row == p.row && line.get(p.col) == Some(&'@'))
            .then(|| line.get(p.col + 1..col))
            .flatten()
            .map(|typed| typed.iter().collect());
        match query {
            Some(q) if !q.contains(char::is_whitespace) => {
                p.set_query(q);
                p.refresh(&mut self.composer.files);
            }
            _ => self.composer.file_picker = None,
        }
    }

    /// Match the open picker against the file list as it is now (it may still be growing).
    pub fn refresh_file_picker(&mut self) {
        if let Some(p) = self.composer.file_picker.as_mut() {
            p.refresh(&mut self.composer.files);
        }
    }

    /// A key while the picker is open; `false` when the key is not the picker's (it then
    /// edits the text as usual).
    pub(super) fn file_picker_key(&mut self, key: KeyEvent) -> bool {
        let plain = key.modifiers.difference(KeyModifiers::SHIFT).is_empty();
        let Some(p) = self.composer.file_picker.as_mut() else {
            return false;
        };
        match key.code {
            KeyCode::Esc => self.composer.file_picker = None,
            KeyCode::Up => p.up(),
            KeyCode::Down => p.down(),
            KeyCode::Enter | KeyCode::Tab if plain => {
                let Some(path) = p.chosen().map(str::to_string) else {
                    // Nothing to choose: the key does what it does without the picker.
                    self.composer.file_picker = None;
                    return false;
                };
                let typed = self.composer.editor.cursor().1.saturating_sub(p.col);
                self.composer.file_picker = None;
                self.composer
                    .editor
                    .replace_before_cursor(typed, &file_picker::insertion(&path));
            }
            _ => return false,
        }
        true
    }

    /// Tab outside the `/` list: complete the path before the cursor.
    pub(super) fn complete_path(&mut self) {
        let (word, len) = self.composer.editor.word_before_cursor();
        let (at, path) = match word.strip_prefix('@') {
            Some(rest) => ("@", rest),
            None => ("", word.as_str()),
        };
        if path.is_empty() || path.starts_with('"') {
            return;
        }
        match complete::complete(&self.cwd, path) {
            Completion::None => {}
            Completion::Replace(with) => {
                self.composer
                    .editor
                    .replace_before_cursor(len, &format!("{at}{with}"));
            }
            Completion::Choices(names) => {
                self.composer.hint = Some(sanitize(&names.join("  ")));
            }
        }
    }

    /// The `/` list's chosen command, as (name, takes arguments, arguments required).
    pub(super) fn selected_completion(&self) -> Option<(String, bool, bool)> {
        let list = self.completions();
        list.get(
            self.composer
                .completion_selected
                .min(list.len().saturating_sub(1)),
        )
        .map(|c| {
            (
                c.name.to_string(),
                !c.args.is_empty(),
                c.args.starts_with('<'),
            )
        })
    }

    pub(super) fn quit(&mut self) {
        if self.is_busy() {
            self.port.abort();
        }
        self.effects.push(Effect::Quit);
    }

    /// Esc: close the completion list, else abort the run; the queued messages come back into
    /// the editor (see [`App::restore_queued`]).
    pub(super) fn escape(&mut self) {
        if !self.completions().is_empty() {
            self.composer.completion_dismissed = true;
            return;
        }
        if !self.is_busy() {
            // Esc twice on an empty editor opens the tree, as in the Node pi.
            let now = Instant::now();
            if self.composer.editor.is_empty()
                && self
                    .last_idle_esc
                    .is_some_and(|t| now.duration_since(t) < DOUBLE_ESC)
            {
                self.last_idle_esc = None;
                self.open_tree(TreePurpose::Navigate);
            } else {
                self.last_idle_esc = Some(now);
            }
            return;
        }
        self.port.abort();
        self.stopping = true;
        self.port.take_queued();
        self.composer.steering.clear();
        self.composer.follow_up.clear();
    }

    /// Put queued texts back into the editor, ahead of anything typed since.
    pub(super) fn restore_queued(&mut self, messages: &[AgentMessage]) {
        let mut restored: Vec<String> = messages.iter().map(typed_text).collect();
        if restored.is_empty() {
            return;
        }
        if !self.composer.editor.is_empty() {
            restored.push(self.composer.editor.text());
        }
        self.composer.editor.set_text(&restored.join("\n\n"));
    }

    pub fn submit(&mut self, delivery: Delivery) {
        if self.composer.editor.is_empty() && self.composer.attachments.is_empty() {
            return;
        }
        self.composer.file_picker = None;
        let text = self.composer.editor.take();
        self.composer.completion_dismissed = false;
        self.composer.completion_selected = 0;
        if text.trim().is_empty() && self.composer.attachments.is_empty() {
            return;
        }
        let text = match self.commands.classify(&text) {
            slash::Line::Known(name, args) => {
                let (name, args) = (name.to_string(), args.to_string());
                self.run_command(&name, &args);
                return;
            }
            // Not a command: said so, and nothing is sent (the text stays in the history).
            slash::Line::Unknown(name) => {
                let nearest = self
                    .commands
                    .nearest(name)
                    .map(|c| format!("; did you mean /{}?", c.name))
                    .unwrap_or_else(|| "; /help lists the commands".to_string());
                let name = sanitize(name);
                self.notice(format!("Unknown command /{name}{nearest}"));
                return;
            }
            slash::Line::Literal(rest) => rest.to_string(),
            slash::Line::Prompt => text,
        };
        // `!command` runs it and adds its output to the conversation; `!!command` only shows it.
        if let Some(rest) = text.trim_start().strip_prefix('!') {
            let (command, include) = match rest.strip_prefix('!') {
                Some(r) => (r.trim(), false),
                None => (rest.trim(), true),
            };
            if !command.is_empty() {
                self.run_shell(command.to_string(), include);
                return;
            }
        }
        self.transcript.follow();
        self.hide_header();
        // Starts a run, or steers / follows up the one running: the host decides, so a run
        // ending at this very moment loses nothing. Files (attached, or named with `@`) are
        // read by the host, off this task.
        let files = std::mem::take(&mut self.composer.attachments);
        self.port.prompt(text, files, delivery);
        if self.working.is_none() {
            self.working = Some(Instant::now());
        }
    }
}
