//! `auth.json`: API keys by provider id (`{"anthropic": {"type": "api_key", "key": "…"}}`), the
//! way the Node.js pi stores what `/login` was given. A `key` may also be a variable name or a
//! `!command`. Subscription (OAuth) entries are kept as they are and not used: this pi signs in
//! with API keys only.
//!
//! [`store_key`] is the one writer: it adds or replaces one provider's entry and keeps every
//! other entry as it was, writing through a temporary file and a rename with mode 0600.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::provider::catalog::Catalog;

/// The API keys found in `auth.json`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Auth {
    keys: BTreeMap<String, String>,
    /// Providers signed in by subscription, which this pi cannot use.
    pub subscriptions: Vec<String>,
}

/// Where the file lives.
pub(crate) fn path(agent_dir: &Path) -> PathBuf {
    agent_dir.join("auth.json")
}

/// Read `<agent dir>/auth.json` (absent: no keys).
pub(crate) fn load(agent_dir: Option<&Path>) -> Result<Auth, String> {
    let Some(dir) = agent_dir else {
        return Ok(Auth::default());
    };
    let file = path(dir);
    let Some(value) = super::read_json(&file).map_err(|e| e.to_string())? else {
        return Ok(Auth::default());
    };
    let Value::Object(entries) = value else {
        return Err(format!("{}: expected a JSON object", file.display()));
    };
    let mut auth = Auth::default();
    for (provider, entry) in entries {
        match entry.get("type").and_then(Value::as_str) {
            Some("api_key") | None => {
                if let Some(k) = entry
                    .get("key")
                    .and_then(Value::as_str)
                    .filter(|k| !k.trim().is_empty())
                {
                    auth.keys.insert(provider, k.to_string());
                }
            }
            Some(_) => auth.subscriptions.push(provider),
        }
    }
    Ok(auth)
}

impl Auth {
    /// Give each provider in `catalog` its key from the file.
    pub(crate) fn apply_to(&self, catalog: &mut Catalog) {
        for (provider, key) in &self.keys {
            if let Some(mut info) = catalog.provider(provider).cloned() {
                info.auth_key = Some(key.clone());
                catalog.upsert_provider(info);
            }
        }
    }

    /// Whether the file holds a key for `provider`.
    #[cfg(test)]
    pub(crate) fn has(&self, provider: &str) -> bool {
        self.keys.contains_key(provider)
    }
}

/// Add or replace `provider`'s API key in `<agent dir>/auth.json`, keeping everything else.
pub(crate) fn store_key(agent_dir: &Path, provider: &str, key: &str) -> Result<PathBuf, String> {
    let file = path(agent_dir);
    let mut entries = match super::read_json(&file).map_err(|e| e.to_string())? {
        Some(Value::Object(o)) => o,
        Some(_) => return Err(format!("{}: expected a JSON object", file.display())),
        None => Map::new(),
    };
    let mut entry = Map::new();
    entry.insert("type".into(), Value::from("api_key"));
    entry.insert("key".into(), Value::from(key.trim()));
    entries.insert(provider.to_string(), Value::Object(entry));
    let text = serde_json::to_string_pretty(&Value::Object(entries))
        .map_err(|e| format!("could not write {}: {e}", file.display()))?;
    std::fs::create_dir_all(agent_dir)
        .map_err(|e| format!("could not create {}: {e}", agent_dir.display()))?;
    let tmp = agent_dir.join(format!(".auth.json.{}.tmp", std::process::id()));
    write_private(&tmp, text.as_bytes())
        .and_then(|()| std::fs::rename(&tmp, &file))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("could not write {}: {e}", file.display())
        })?;
    Ok(file)
}

/// Write a file only its owner can read.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut f = options.open(path)?;
    f.write_all(bytes)?;
    f.write_all(b"\n")?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::super::test_dir::{temp, write};
    use super::*;

    #[test]
    fn keys_reach_their_providers_and_subscriptions_are_set_aside() {
        let d = temp("auth");
        write(
            &d,
            "auth.json",
            r#"{"anthropic":{"type":"api_key","key":"sk-ant-file"},
                "openai-codex":{"type":"oauth","access":"a","refresh":"r","expires":1},
                "groq":{"type":"api_key","key":"  "}}"#,
        );
        let auth = load(Some(&d)).unwrap();
        assert!(auth.has("anthropic") && !auth.has("groq"));
        assert_eq!(auth.subscriptions, vec!["openai-codex".to_string()]);
        let mut c = Catalog::builtin(&|_| None);
        auth.apply_to(&mut c);
        assert_eq!(
            c.provider("anthropic").unwrap().auth_key.as_deref(),
            Some("sk-ant-file")
        );
    }

    #[test]
    fn storing_a_key_keeps_the_other_entries_and_is_private() {
        let d = temp("auth-store");
        write(
            &d,
            "auth.json",
            r#"{"openai-codex":{"type":"oauth","access":"a","refresh":"r","expires":1},
                "groq":{"type":"api_key","key":"old"}}"#,
        );
        store_key(&d, "groq", " gsk-new \n").unwrap();
        store_key(&d, "anthropic", "sk-ant-new").unwrap();
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("auth.json")).unwrap()).unwrap();
        assert_eq!(v["groq"]["key"], "gsk-new");
        assert_eq!(v["anthropic"]["type"], "api_key");
        assert_eq!(v["openai-codex"]["refresh"], "r");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(d.join("auth.json"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let fresh = temp("auth-new");
        store_key(&fresh.join("agent"), "openai", "sk-x").unwrap();
        assert!(load(Some(&fresh.join("agent"))).unwrap().has("openai"));
    }
}
