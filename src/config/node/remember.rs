//! Remembering the model, thinking level and theme last chosen, where the Node.js pi keeps
//! them: the global `settings.json`'s `defaultProvider`, `defaultModel`,
//! `defaultThinkingLevel` and `theme`.
//!
//! The file is read, the keys set, and written back whole with every other key as it was (in
//! its order), through a temporary file renamed over it, so a crash never leaves half a file.
//! A file that is not a JSON object is never overwritten: [`remember`] says why and leaves it.
//! At start these keys are read like any setting ([`super::settings`]), below config.toml.

use std::io::Write;
use std::path::Path;

use serde_json::{Map, Value};

/// What to remember.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Choice {
    /// A model picked (`defaultProvider`, `defaultModel`).
    Model { provider: String, id: String },
    /// A thinking level picked (`defaultThinkingLevel`: off, minimal, low, medium, high, xhigh).
    Thinking(String),
    /// A theme picked (`theme`: dark, light, or a theme file's name).
    Theme(String),
}

/// Write `choice` into the settings file at `path` (created, with its folder, when missing).
/// Fails without touching the file when it holds something other than a JSON object.
pub(crate) fn remember(path: &Path, choice: &Choice) -> Result<(), String> {
    let mut settings = match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Map::new(),
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(o)) => o,
            Ok(_) => return Err(refused(path, "it is not a JSON object")),
            Err(e) => {
                return Err(refused(
                    path,
                    &format!(
                        "it is not valid JSON (line {}, column {})",
                        e.line(),
                        e.column()
                    ),
                ));
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Map::new(),
        Err(e) => return Err(refused(path, &format!("it cannot be read: {e}"))),
    };
    match choice {
        Choice::Model { provider, id } => {
            settings.insert("defaultProvider".into(), provider.as_str().into());
            settings.insert("defaultModel".into(), id.as_str().into());
        }
        Choice::Thinking(level) => {
            settings.insert("defaultThinkingLevel".into(), level.as_str().into());
        }
        Choice::Theme(name) => {
            settings.insert("theme".into(), name.as_str().into());
        }
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(settings))
        .map_err(|e| format!("cannot encode {}: {e}", path.display()))?;
    text.push('\n');
    write_atomically(path, &text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn refused(path: &Path, why: &str) -> String {
    format!(
        "{} was left as it is because {why}; the choice is not remembered for the next start",
        path.display()
    )
}

/// Write `text` to a temporary file beside `path` (with the file's permissions, else owner
/// only) and rename it over `path`.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mode = std::fs::metadata(path).map_or(0o600, |m| m.permissions().mode() & 0o777);
    let name = path
        .file_name()
        .map_or_else(|| "settings.json".into(), |n| n.to_string_lossy());
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&temp)?;
        f.write_all(text.as_bytes())?;
        f.sync_data()?;
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::super::test_dir;
    use super::*;

    #[test]
    fn the_choice_is_written_and_every_other_key_kept_in_order() {
        let d = test_dir::temp("remember");
        let path = d.join("settings.json");
        std::fs::write(
            &path,
            r#"{"theme": "light", "defaultModel": "old", "compaction": {"enabled": false}, "z": [1, 2]}"#,
        )
        .unwrap();
        let model = Choice::Model {
            provider: "ollama".into(),
            id: "qwen3:8b".into(),
        };
        remember(&path, &model).unwrap();
        remember(&path, &Choice::Thinking("high".into())).unwrap();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "theme",
                "defaultModel",
                "compaction",
                "z",
                "defaultProvider",
                "defaultThinkingLevel"
            ]
        );
        assert_eq!(v["defaultModel"], "qwen3:8b");
        assert_eq!(v["defaultProvider"], "ollama");
        assert_eq!(v["defaultThinkingLevel"], "high");
        assert_eq!(v["compaction"]["enabled"], false);
        assert_eq!(v["z"][1], 2);
        // Nothing left behind beside it.
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
    }

    #[test]
    fn a_missing_file_and_folder_are_created() {
        let d = test_dir::temp("remember-new");
        let path = d.join("agent").join("settings.json");
        remember(&path, &Choice::Thinking("low".into())).unwrap();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v, serde_json::json!({"defaultThinkingLevel": "low"}));
    }

    #[test]
    fn a_broken_file_is_left_alone() {
        let d = test_dir::temp("remember-broken");
        let path = d.join("settings.json");
        for text in ["{\"theme\": \"dark\",,}", "[1, 2]"] {
            std::fs::write(&path, text).unwrap();
            let e = remember(&path, &Choice::Thinking("low".into())).unwrap_err();
            assert!(e.contains("left as it is"), "{e}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        }
    }
}
