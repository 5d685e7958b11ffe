//! The Node.js pi's own files in the agent folder, read so a person switching over keeps their
//! setup: `settings.json` ([`settings`]), `models.json` ([`models`]) and `auth.json` ([`auth`]).
//!
//! They are only ever read, except that `/login` adds a key to `auth.json` the way the Node.js
//! pi does, and the model and thinking level last chosen are remembered in `settings.json`
//! ([`remember`]). Settings pi has no use for are ignored without a word (the files hold many); a
//! known setting of the wrong type is a warning, and a file that is not JSON at all is an
//! error naming the file, line and column, as for `config.toml`.

pub(crate) mod auth;
pub(crate) mod models;
pub(crate) mod remember;
pub(crate) mod settings;

use std::path::Path;

use serde_json::Value;

use super::error::ConfigError;

/// Read a JSON file; `Ok(None)` when it does not exist.
pub(crate) fn read_json(file: &Path) -> Result<Option<Value>, ConfigError> {
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(ConfigError::Read {
                file: file.to_path_buf(),
                source,
            });
        }
    };
    if text.trim().is_empty() {
        return Ok(Some(Value::Object(Default::default())));
    }
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| ConfigError::Json {
            file: file.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message: strip_position(&e.to_string()),
        })
}

/// serde_json's message without its trailing "at line L column C" (the caller names both).
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

#[cfg(test)]
pub(crate) mod test_dir {
    use std::path::{Path, PathBuf};

    /// A fresh temporary folder for one test.
    pub(crate) fn temp(tag: &str) -> PathBuf {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let d = std::env::temp_dir().join(format!(
            "pi-node-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    pub(crate) fn write(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_json_names_file_line_and_column() {
        let d = test_dir::temp("json");
        test_dir::write(&d, "settings.json", "{\n  \"defaultModel\": ,\n}");
        let e = read_json(&d.join("settings.json")).unwrap_err().to_string();
        assert!(e.contains("settings.json:2:"), "{e}");
        assert!(!e.contains("at line"), "{e}");
        assert_eq!(read_json(&d.join("absent.json")).unwrap(), None);
    }
}
