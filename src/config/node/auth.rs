//! `auth.json`: sign-ins by provider id, the way the Node.js pi stores them. An API key entry
//! is `{"type": "api_key", "key": "…"}` (a `key` may also be a variable name or a `!command`);
//! a subscription entry is `{"type": "oauth", "access": "…", "refresh": "…", "expires": <ms>}`
//! plus whatever fields its provider keeps (`accountId`, `enterpriseUrl`), used through
//! `provider::subscription`.
//!
//! [`update`] is the one writer: under the Node.js pi's own lock (a directory
//! `auth.json.lock`, as its `proper-lockfile` makes, stale after 30 s) it re-reads the file,
//! changes what it was asked to, and writes through a temporary file and a rename with mode
//! 0600. Every other entry, the order of the keys and the file's final newline (or its
//! absence) are kept, so a file the Node.js pi wrote reads back byte for byte but for the
//! fields changed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Map, Value};

use crate::provider::catalog::Catalog;

/// The API keys and subscription entries found in `auth.json`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Auth {
    keys: BTreeMap<String, String>,
    /// Subscription (OAuth) entries by provider, as written.
    pub oauth: BTreeMap<String, Map<String, Value>>,
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
            Some("oauth") => {
                if let Value::Object(o) = entry {
                    auth.oauth.insert(provider, o);
                }
            }
            Some(_) => {}
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

    /// Mark the subscriptions signed in to and offer their models (a subscription's own models
    /// are offered only when signed in).
    pub(crate) fn apply_sign_ins(&self, catalog: &mut Catalog) {
        use crate::provider::subscription::{Credentials, Kind};
        for kind in Kind::ALL {
            let signed_in = self
                .oauth
                .get(kind.provider())
                .and_then(Credentials::from_entry)
                .is_some();
            if signed_in {
                catalog.mark_signed_in(kind.provider());
                catalog.add_subscription_models(kind.provider());
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
    let mut entry = Map::new();
    entry.insert("type".into(), Value::from("api_key"));
    entry.insert("key".into(), Value::from(key.trim()));
    update(agent_dir, |entries| {
        entries.insert(provider.to_string(), Value::Object(entry));
        Ok(())
    })?;
    Ok(path(agent_dir))
}

/// Remove `provider`'s entry (a key or a sign-in); whether there was one.
pub(crate) fn remove(agent_dir: &Path, provider: &str) -> Result<bool, String> {
    update(agent_dir, |entries| {
        Ok(entries.shift_remove(provider).is_some())
    })
}

/// Change `<agent dir>/auth.json` under its lock: `change` gets the entries as they are in the
/// file now (another pi may have written since this one read it) and edits them. The file is
/// written only if something changed.
pub(crate) fn update<R>(
    agent_dir: &Path,
    change: impl FnOnce(&mut Map<String, Value>) -> Result<R, String>,
) -> Result<R, String> {
    Locked::take(agent_dir)?.update(change)
}

/// `auth.json` held under its lock, for a change that needs time between reading and writing
/// (a token refreshed over the network): another pi waits meanwhile.
pub(crate) struct Locked {
    dir: PathBuf,
    _lock: FileLock,
}

impl Locked {
    pub(crate) fn take(agent_dir: &Path) -> Result<Locked, String> {
        std::fs::create_dir_all(agent_dir)
            .map_err(|e| format!("could not create {}: {e}", agent_dir.display()))?;
        let lock = FileLock::take(&path(agent_dir))?;
        Ok(Locked {
            dir: agent_dir.to_path_buf(),
            _lock: lock,
        })
    }

    /// The file's text (`None`: there is no file) and its entries.
    fn read(&self) -> Result<(Option<String>, Map<String, Value>), String> {
        let file = path(&self.dir);
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => Some(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(format!("could not read {}: {e}", file.display())),
        };
        let entries = match text.as_deref().map(str::trim) {
            None | Some("") => Map::new(),
            Some(t) => match serde_json::from_str(t) {
                Ok(Value::Object(o)) => o,
                Ok(_) => return Err(format!("{}: expected a JSON object", file.display())),
                Err(e) => return Err(format!("{}: not valid JSON ({e})", file.display())),
            },
        };
        Ok((text, entries))
    }

    /// One entry as the file holds it now.
    pub(crate) fn entry(&self, provider: &str) -> Result<Option<Value>, String> {
        Ok(self.read()?.1.get(provider).cloned())
    }

    /// Read, change, and write if anything changed.
    pub(crate) fn update<R>(
        &self,
        change: impl FnOnce(&mut Map<String, Value>) -> Result<R, String>,
    ) -> Result<R, String> {
        let file = path(&self.dir);
        let (text, mut entries) = self.read()?;
        let before = entries.clone();
        let result = change(&mut entries)?;
        if text.is_some() && entries == before {
            return Ok(result);
        }
        let mut out = serde_json::to_string_pretty(&Value::Object(entries))
            .map_err(|e| format!("could not write {}: {e}", file.display()))?;
        // The Node.js pi writes no final newline; keep whichever the file had.
        if text.as_deref().is_none_or(|t| t.ends_with('\n')) {
            out.push('\n');
        }
        let tmp = self
            .dir
            .join(format!(".auth.json.{}.tmp", std::process::id()));
        write_private(&tmp, out.as_bytes())
            .and_then(|()| std::fs::rename(&tmp, &file))
            .map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                format!("could not write {}: {e}", file.display())
            })?;
        Ok(result)
    }
}

/// The Node.js pi's lock on a file: the directory `<file>.lock`, made atomically; one older
/// than [`STALE`] was left by a process that died and is taken over.
struct FileLock(PathBuf);

/// A lock not touched for this long belongs to no one (`proper-lockfile`'s default).
const STALE: Duration = Duration::from_secs(30);

/// How long to wait for another pi to let go.
const LOCK_WAIT: Duration = Duration::from_secs(10);

impl FileLock {
    fn take(file: &Path) -> Result<FileLock, String> {
        let mut dir = file.as_os_str().to_owned();
        dir.push(".lock");
        let dir = PathBuf::from(dir);
        let deadline = Instant::now() + LOCK_WAIT;
        let mut pause = Duration::from_millis(10);
        loop {
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(FileLock(dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let stale = std::fs::metadata(&dir)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| SystemTime::now().duration_since(t).ok())
                        .is_some_and(|age| age > STALE);
                    if stale {
                        let _ = std::fs::remove_dir(&dir);
                        continue;
                    }
                    if Instant::now() >= deadline {
                        return Err(format!(
                            "{} is locked by another pi (remove {} if no pi is running)",
                            file.display(),
                            dir.display()
                        ));
                    }
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(200));
                }
                Err(e) => return Err(format!("could not lock {}: {e}", file.display())),
            }
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
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
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::super::test_dir::{temp, write};
    use super::*;

    #[test]
    fn keys_reach_their_providers_and_subscriptions_are_kept_apart() {
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
        assert_eq!(auth.oauth.keys().collect::<Vec<_>>(), ["openai-codex"]);
        assert_eq!(auth.oauth["openai-codex"]["refresh"], "r");
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

    /// A file as the Node.js pi writes it (`JSON.stringify(data, null, 2)`, no final newline).
    const NODE_FILE: &str = "{\n  \"openai-codex\": {\n    \"type\": \"oauth\",\n    \"access\": \"a\",\n    \"refresh\": \"r\",\n    \"expires\": 1764000000000,\n    \"accountId\": \"acc\"\n  },\n  \"groq\": {\n    \"type\": \"api_key\",\n    \"key\": \"gsk-é\"\n  }\n}";

    #[test]
    fn an_update_keeps_the_node_pis_bytes_but_for_what_changed() {
        let d = temp("auth-bytes");
        write(&d, "auth.json", NODE_FILE);
        update(&d, |e| {
            e["openai-codex"]["access"] = Value::from("a2");
            Ok(())
        })
        .unwrap();
        let after = std::fs::read_to_string(d.join("auth.json")).unwrap();
        assert_eq!(after, NODE_FILE.replace("\"a\"", "\"a2\""));
        // Nothing changed: nothing written (the file keeps its time and bytes).
        update(&d, |_| Ok(())).unwrap();
        assert_eq!(std::fs::read_to_string(d.join("auth.json")).unwrap(), after);
        assert!(remove(&d, "groq").unwrap());
        assert!(!remove(&d, "groq").unwrap());
        assert!(load(Some(&d)).unwrap().oauth.contains_key("openai-codex"));
    }

    #[test]
    fn the_node_pis_lock_is_waited_for_and_a_stale_one_taken_over() {
        let d = temp("auth-lock");
        write(&d, "auth.json", "{}");
        let lock = d.join("auth.json.lock");
        std::fs::create_dir(&lock).unwrap();
        let l2 = lock.clone();
        let holder = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            std::fs::remove_dir(&l2).unwrap();
        });
        let started = Instant::now();
        store_key(&d, "groq", "gsk-1").unwrap();
        assert!(
            started.elapsed() >= Duration::from_millis(140),
            "waited for the lock"
        );
        holder.join().unwrap();
        assert!(!lock.exists(), "the lock is let go");
        // A lock no one has touched for a minute is left by a dead process.
        std::fs::create_dir(&lock).unwrap();
        let old = SystemTime::now() - Duration::from_secs(60);
        std::fs::File::open(&lock)
            .unwrap()
            .set_modified(old)
            .unwrap();
        store_key(&d, "groq", "gsk-2").unwrap();
        assert!(load(Some(&d)).unwrap().has("groq"));
    }

    #[test]
    fn a_broken_file_is_left_alone_with_a_clear_error() {
        let d = temp("auth-broken");
        write(&d, "auth.json", "{ not json");
        let e = store_key(&d, "groq", "gsk-1").unwrap_err();
        assert!(e.contains("not valid JSON"), "{e}");
        assert_eq!(
            std::fs::read_to_string(d.join("auth.json")).unwrap(),
            "{ not json"
        );
    }
}
