//! `!` commands: a tool cell per command, filled in when the host has run it.

use super::*;

impl App {
    // ----- `!` commands -----------------------------------------------------------------

    pub(super) fn run_shell(&mut self, command: String, include: bool) {
        if include && self.refuse_when_busy("add a command's output (use !! to only look)") {
            return;
        }
        self.transcript.follow();
        let idx = self.transcript.push(Cell::Tool(ToolCell {
            id: "shell".into(),
            name: "bash".into(),
            args: std::sync::Arc::new(serde_json::json!({ "command": command })),
            state: ToolState::Running {
                started: Instant::now(),
            },
            output: String::new(),
            diff: None,
            saved: None,
        }));
        self.shell_cells.push_back(idx);
        if self.working.is_none() {
            self.working = Some(Instant::now());
            self.shell_owns_status = true;
        }
        self.port.shell(command, include);
    }

    pub(super) fn shell_done(&mut self, r: crate::host::shell::ShellResult) {
        if let Some(idx) = self.shell_cells.pop_front()
            && let Some(Cell::Tool(t)) = self.transcript.get_mut(idx)
        {
            t.state = match r.refused {
                Some(_) => ToolState::Skipped,
                None => ToolState::Done {
                    ok: !r.failed && !r.cancelled,
                    took: Duration::ZERO,
                },
            };
            t.output = sanitize(&r.output);
        }
        if let Some(why) = &r.refused {
            self.transcript.push(Cell::Error(why.clone()));
        } else if r.cancelled {
            self.transcript
                .push(Cell::Aborted("Command stopped".into()));
        } else if !r.included {
            self.notice("Shown only: the output is not part of the conversation");
        }
        if self.shell_cells.is_empty() && std::mem::take(&mut self.shell_owns_status) {
            self.working = None;
            self.stopping = false;
        }
    }
}
