//! Ctrl+G: the prompt edited in the person's own editor.
//!
//! The editor is `$VISUAL`, else `$EDITOR`, else `vi`; the variable may hold arguments
//! (`code --wait`), so it runs through `sh -c` with the file's path appended, quoted. The text
//! goes through a private file (0600, `.md` so editors colour it as markdown) that is removed
//! whatever happens. What comes back has its trailing newlines trimmed; a failing editor (not
//! found, a non-zero exit) leaves the text as it was and says why. Leaving and re-entering the
//! full screen around it is the loop's business (`mod.rs`).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

/// The editor command line from the environment: `$VISUAL`, else `$EDITOR`, else `vi`.
pub fn editor_command(env: &dyn Fn(&str) -> Option<String>) -> String {
    ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|k| env(k))
        .map(|v| v.trim().to_string())
        .find(|v| !v.is_empty())
        .unwrap_or_else(|| "vi".into())
}

/// `text` as one word for `sh`, whatever it holds.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The line `sh -c` runs: the editor command with the file's path appended.
pub fn shell_line(command: &str, path: &Path) -> String {
    format!("{command} {}", shell_quote(&path.to_string_lossy()))
}

/// The private file the editor works on; removed when dropped.
pub struct Draft {
    path: PathBuf,
}

impl Draft {
    /// Write `text` to a new file only this user can read, in `dir`.
    pub fn write(dir: &Path, text: &str) -> std::io::Result<Draft> {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let mut attempt = 0u32;
        loop {
            let path = dir.join(format!(
                "pi-prompt-{}-{stamp:x}-{attempt}.md",
                std::process::id()
            ));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(mut file) => {
                    let draft = Draft { path };
                    file.write_all(text.as_bytes())?;
                    if !text.is_empty() && !text.ends_with('\n') {
                        file.write_all(b"\n")?;
                    }
                    return Ok(draft);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the editor left in the file, trailing newlines trimmed.
    pub fn read(&self) -> Result<String, String> {
        let bytes = std::fs::read(&self.path).map_err(|e| {
            format!("Could not read the edited text back: {e}; the text is unchanged")
        })?;
        let text = String::from_utf8(bytes)
            .map_err(|_| "The edited text is not UTF-8; the text is unchanged".to_string())?;
        Ok(text.trim_end_matches(['\n', '\r']).to_string())
    }
}

impl Drop for Draft {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// What to say when the editor did not finish well; `None` when it did.
pub fn failure(command: &str, status: ExitStatus) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    if status.success() {
        return None;
    }
    let why = match (status.code(), status.signal()) {
        (Some(127), _) => "was not found (set $VISUAL or $EDITOR)".to_string(),
        (Some(126), _) => "could not be run".to_string(),
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was stopped by signal {signal}"),
        (None, None) => "failed".to_string(),
    };
    Some(format!(
        "The editor `{command}` {why}; the text is unchanged"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_editor_comes_from_visual_then_editor_then_vi() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            editor_command(&env(&[("VISUAL", "code --wait"), ("EDITOR", "nano")])),
            "code --wait"
        );
        assert_eq!(
            editor_command(&env(&[("VISUAL", "  "), ("EDITOR", "nano")])),
            "nano"
        );
        assert_eq!(editor_command(&env(&[])), "vi");
    }

    #[test]
    fn the_path_is_one_shell_word() {
        let line = shell_line("code --wait", Path::new("/tmp/it's a $dir/p.md"));
        assert_eq!(line, r"code --wait '/tmp/it'\''s a $dir/p.md'");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(shell_line("printf %s", Path::new("a'b $HOME `x` \"c\"")))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "a'b $HOME `x` \"c\"");
    }

    #[test]
    fn the_draft_is_private_read_back_trimmed_and_removed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let draft = Draft::write(dir.path(), "hello").unwrap();
        let path = draft.path().to_path_buf();
        assert_eq!(path.extension().unwrap(), "md");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello\n");
        std::fs::write(&path, "edited\nsecond line\n\n").unwrap();
        assert_eq!(draft.read().unwrap(), "edited\nsecond line");
        drop(draft);
        assert!(!path.exists());
    }

    #[test]
    fn failures_say_what_went_wrong() {
        let status = |line: &str| {
            std::process::Command::new("sh")
                .arg("-c")
                .arg(line)
                .status()
                .unwrap()
        };
        assert_eq!(failure("vi", status("true")), None);
        assert_eq!(
            failure("nope", status("exit 127")).unwrap(),
            "The editor `nope` was not found (set $VISUAL or $EDITOR); the text is unchanged"
        );
        assert_eq!(
            failure("false", status("exit 1")).unwrap(),
            "The editor `false` exited with status 1; the text is unchanged"
        );
    }
}
