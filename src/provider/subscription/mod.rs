//! Subscriptions: ChatGPT Plus/Pro (Codex), Claude Pro/Max and GitHub Copilot, signed in with
//! OAuth and kept in `auth.json` in the Node.js pi's shape (`{"type": "oauth", "access",
//! "refresh", "expires", …}`), so either pi can use a sign-in the other made.
//!
//! [`Subscriptions`] holds the sign-ins of one run: it hands [`super::Providers`] a current
//! access token, refreshing one that has expired (or is about to) under `auth.json`'s lock
//! after re-reading the file — another pi may have refreshed it already — and writing the new
//! tokens back. [`shape`] makes a request look the way each subscription's API expects;
//! [`flows`] signs in. Every token learnt is handed to the masker at once.
//!
//! Every address can be moved with an environment variable (`PI_OAUTH_*`, see [`Endpoints`]),
//! which is how the tests point pi at a local server.

pub mod flows;
pub(crate) mod pkce;
pub(crate) mod refresh;
pub(crate) mod shape;
mod store;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use super::EnvLookup;
use crate::secrets::Secrets;

/// One of the subscriptions pi can sign in to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Claude Pro/Max: the `anthropic` provider, with a token instead of a key.
    Claude,
    /// ChatGPT Plus/Pro through the Codex backend: the `openai-codex` provider.
    Codex,
    /// GitHub Copilot: the `github-copilot` provider.
    Copilot,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Codex, Kind::Claude, Kind::Copilot];

    /// The provider id, which is also the entry's name in `auth.json`.
    pub fn provider(self) -> &'static str {
        match self {
            Kind::Claude => "anthropic",
            Kind::Codex => "openai-codex",
            Kind::Copilot => "github-copilot",
        }
    }

    /// What the person calls it.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Claude => "Claude Pro/Max",
            Kind::Codex => "ChatGPT Plus/Pro (Codex)",
            Kind::Copilot => "GitHub Copilot",
        }
    }

    pub fn from_provider(id: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.provider() == id)
    }

    /// Whether the provider exists only through the subscription (its models are offered only
    /// when signed in). Claude's models are the `anthropic` provider's, offered with a key too.
    pub fn subscription_only(self) -> bool {
        !matches!(self, Kind::Claude)
    }

    /// Whether the plan charges per token (Claude subscriptions used by other programs draw
    /// on "extra usage", billed per token; the other plans have no per-token price).
    pub fn priced_per_token(self) -> bool {
        matches!(self, Kind::Claude)
    }

    /// What to tell someone whose sign-in cannot be used.
    pub fn sign_in_again(self) -> String {
        format!(
            "Sign in again with /login (or `pi --login {}`).",
            self.provider()
        )
    }
}

/// Milliseconds since the Unix epoch (the unit of `expires`).
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A token this close to its expiry is refreshed first: the request takes time, and this
/// machine's clock may be ahead of or behind the server's.
pub(crate) const EXPIRY_MARGIN: Duration = Duration::from_secs(60);

/// One sign-in: the fields every provider keeps, and the others (`accountId`,
/// `enterpriseUrl`) as they are. Printed without its tokens.
#[derive(Clone, PartialEq)]
pub struct Credentials {
    pub access: String,
    pub refresh: String,
    /// When `access` expires, in milliseconds since the Unix epoch.
    pub expires: i64,
    pub extra: Map<String, Value>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access", &"[token]")
            .field("refresh", &"[token]")
            .field("expires", &self.expires)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// From an `auth.json` entry (`None` unless it is a complete OAuth entry).
    pub(crate) fn from_entry(entry: &Map<String, Value>) -> Option<Credentials> {
        if entry.get("type").and_then(Value::as_str) != Some("oauth") {
            return None;
        }
        let text = |k: &str| entry.get(k).and_then(Value::as_str).map(str::to_string);
        let expires = entry
            .get("expires")
            .and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)))?;
        let extra = entry
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "type" | "access" | "refresh" | "expires"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Some(Credentials {
            access: text("access")?,
            refresh: text("refresh")?,
            expires,
            extra,
        })
    }

    /// Write these into `entry`, keeping its other fields and their order (a new entry gets
    /// the Node.js pi's order: type, then the provider's fields).
    pub(crate) fn write_into(&self, entry: &mut Map<String, Value>) {
        entry.insert("type".into(), Value::from("oauth"));
        entry.insert("access".into(), Value::from(self.access.clone()));
        entry.insert("refresh".into(), Value::from(self.refresh.clone()));
        entry.insert("expires".into(), Value::from(self.expires));
        for (k, v) in &self.extra {
            entry.insert(k.clone(), v.clone());
        }
    }

    /// A new `auth.json` entry, fields in the order the Node.js pi writes them for `kind`.
    pub(crate) fn to_entry(&self, kind: Kind) -> Map<String, Value> {
        let mut entry = Map::new();
        entry.insert("type".into(), Value::from("oauth"));
        let (first, second) = match kind {
            Kind::Codex => ("access", "refresh"),
            Kind::Claude | Kind::Copilot => ("refresh", "access"),
        };
        for k in [first, second] {
            let v = if k == "access" {
                &self.access
            } else {
                &self.refresh
            };
            entry.insert(k.into(), Value::from(v.clone()));
        }
        entry.insert("expires".into(), Value::from(self.expires));
        for (k, v) in &self.extra {
            entry.insert(k.clone(), v.clone());
        }
        entry
    }

    /// Whether the access token must be refreshed before use at `now` (milliseconds).
    pub(crate) fn expiring(&self, now: i64) -> bool {
        now + EXPIRY_MARGIN.as_millis() as i64 >= self.expires
    }

    fn text(&self, key: &str) -> Option<&str> {
        self.extra.get(key).and_then(Value::as_str)
    }
}

/// Where each subscription's servers are. Each can be moved by an environment variable:
///
/// | variable | default |
/// |---|---|
/// | `PI_OAUTH_ANTHROPIC_AUTHORIZE_URL` | `https://claude.ai/oauth/authorize` |
/// | `PI_OAUTH_ANTHROPIC_TOKEN_URL` | `https://platform.claude.com/v1/oauth/token` |
/// | `PI_OAUTH_OPENAI_CODEX_AUTHORIZE_URL` | `https://auth.openai.com/oauth/authorize` |
/// | `PI_OAUTH_OPENAI_CODEX_TOKEN_URL` | `https://auth.openai.com/oauth/token` |
/// | `PI_OAUTH_GITHUB_COPILOT_GITHUB_URL` | `https://github.com` (or the Enterprise domain) |
/// | `PI_OAUTH_GITHUB_COPILOT_GITHUB_API_URL` | `https://api.github.com` (or `api.` + domain) |
/// | `PI_OAUTH_CALLBACK_HOST` | `127.0.0.1` (where the sign-in callback listens) |
/// | `PI_OAUTH_CALLBACK_PORT` | the provider's registered port (`0`: any free port) |
///
/// The APIs themselves: `ANTHROPIC_BASE_URL`, `PI_OAUTH_OPENAI_CODEX_API_URL` and
/// `PI_OAUTH_GITHUB_COPILOT_API_URL` (the catalogue's `base_url_env`).
#[derive(Clone)]
pub struct Endpoints {
    env: EnvLookup,
}

impl Endpoints {
    pub fn new(env: EnvLookup) -> Self {
        Endpoints { env }
    }

    fn var(&self, name: &str, default: &str) -> String {
        (self.env)(name)
            .map(|v| v.trim().trim_end_matches('/').to_string())
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| default.to_string())
    }

    pub(crate) fn authorize_url(&self, kind: Kind) -> String {
        match kind {
            Kind::Claude => self.var(
                "PI_OAUTH_ANTHROPIC_AUTHORIZE_URL",
                "https://claude.ai/oauth/authorize",
            ),
            Kind::Codex => self.var(
                "PI_OAUTH_OPENAI_CODEX_AUTHORIZE_URL",
                "https://auth.openai.com/oauth/authorize",
            ),
            Kind::Copilot => String::new(),
        }
    }

    pub(crate) fn token_url(&self, kind: Kind) -> String {
        match kind {
            Kind::Claude => self.var(
                "PI_OAUTH_ANTHROPIC_TOKEN_URL",
                "https://platform.claude.com/v1/oauth/token",
            ),
            Kind::Codex => self.var(
                "PI_OAUTH_OPENAI_CODEX_TOKEN_URL",
                "https://auth.openai.com/oauth/token",
            ),
            Kind::Copilot => String::new(),
        }
    }

    /// GitHub's web address (device codes, the GitHub token) for `domain` (`None`: github.com).
    pub(crate) fn github_url(&self, domain: Option<&str>) -> String {
        let default = format!("https://{}", domain.unwrap_or("github.com"));
        self.var("PI_OAUTH_GITHUB_COPILOT_GITHUB_URL", &default)
    }

    /// GitHub's API (the Copilot token) for `domain`.
    pub(crate) fn github_api_url(&self, domain: Option<&str>) -> String {
        let default = match domain {
            Some(d) => format!("https://api.{d}"),
            None => "https://api.github.com".into(),
        };
        self.var("PI_OAUTH_GITHUB_COPILOT_GITHUB_API_URL", &default)
    }

    /// The Copilot chat API when it is moved (else the token names it).
    pub(crate) fn copilot_api_override(&self) -> Option<String> {
        (self.env)("PI_OAUTH_GITHUB_COPILOT_API_URL")
            .map(|v| v.trim().trim_end_matches('/').to_string())
            .filter(|v| !v.is_empty())
    }

    pub(crate) fn callback_host(&self) -> String {
        self.var("PI_OAUTH_CALLBACK_HOST", "127.0.0.1")
    }

    /// The loopback port for `kind`'s callback: the one registered with the provider, unless
    /// moved.
    pub(crate) fn callback_port(&self, kind: Kind) -> u16 {
        let registered = match kind {
            Kind::Claude => 53692,
            Kind::Codex => 1455,
            Kind::Copilot => 0,
        };
        (self.env)("PI_OAUTH_CALLBACK_PORT")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or(registered)
    }
}

/// The sign-ins of one run.
pub struct Subscriptions {
    /// Where `auth.json` is (`None`: tokens live for this run only).
    agent_dir: Option<PathBuf>,
    endpoints: Endpoints,
    signed_in: Mutex<HashMap<Kind, Credentials>>,
    /// One refresh at a time in this process (the file lock covers other processes).
    refreshing: tokio::sync::Mutex<()>,
    secrets: Secrets,
    client: std::sync::OnceLock<Result<reqwest::Client, String>>,
}

impl Subscriptions {
    /// The sign-ins in `<agent_dir>/auth.json` (an unreadable file: none), their tokens
    /// handed to `secrets`.
    pub fn load(agent_dir: Option<PathBuf>, env: EnvLookup, secrets: Secrets) -> Self {
        let mut signed_in = HashMap::new();
        if let Ok(auth) = crate::config::node::auth::load(agent_dir.as_deref()) {
            for kind in Kind::ALL {
                if let Some(c) = auth
                    .oauth
                    .get(kind.provider())
                    .and_then(Credentials::from_entry)
                {
                    secrets.add(&c.access);
                    secrets.add(&c.refresh);
                    signed_in.insert(kind, c);
                }
            }
        }
        Subscriptions {
            agent_dir,
            endpoints: Endpoints::new(env),
            signed_in: Mutex::new(signed_in),
            refreshing: tokio::sync::Mutex::new(()),
            secrets,
            client: std::sync::OnceLock::new(),
        }
    }

    /// No sign-ins (tests, and runs without a home folder).
    pub fn none() -> Self {
        Subscriptions::load(None, Arc::new(|_| None), Secrets::default())
    }

    pub fn endpoints(&self) -> &Endpoints {
        &self.endpoints
    }

    pub fn agent_dir(&self) -> Option<&std::path::Path> {
        self.agent_dir.as_deref()
    }

    pub fn is_signed_in(&self, kind: Kind) -> bool {
        crate::sync::lock(&self.signed_in).contains_key(&kind)
    }

    /// The subscriptions signed in to.
    pub fn kinds(&self) -> Vec<Kind> {
        let held = crate::sync::lock(&self.signed_in);
        Kind::ALL
            .into_iter()
            .filter(|k| held.contains_key(k))
            .collect()
    }

    pub(crate) fn client(&self) -> Result<reqwest::Client, String> {
        self.client
            .get_or_init(|| {
                // Each call ends well within the 30 s after which another pi takes
                // `auth.json`'s lock as stale (a refresh holds it across its call).
                reqwest::Client::builder()
                    .connect_timeout(Duration::from_secs(10))
                    .timeout(Duration::from_secs(20))
                    .build()
                    .map_err(|e| format!("could not set up the HTTP client: {e}"))
            })
            .clone()
    }

    /// Use `credentials` for `kind` from now on (after a sign-in).
    pub fn set(&self, kind: Kind, credentials: Credentials) {
        self.secrets.add(&credentials.access);
        self.secrets.add(&credentials.refresh);
        crate::sync::lock(&self.signed_in).insert(kind, credentials);
    }

    /// Forget `kind`'s sign-in for this run (after `/logout`).
    pub fn forget(&self, kind: Kind) {
        crate::sync::lock(&self.signed_in).remove(&kind);
    }

    /// Current credentials for `kind`, refreshed first if the access token has expired or is
    /// about to. The error names the subscription and says to sign in again.
    pub async fn current(&self, kind: Kind) -> Result<Credentials, String> {
        let held = crate::sync::lock(&self.signed_in).get(&kind).cloned();
        let Some(held) = held else {
            return Err(format!(
                "Not signed in to {} ({}). {}",
                kind.label(),
                kind.provider(),
                kind.sign_in_again().replace("again ", "")
            ));
        };
        if !held.expiring(now_ms()) {
            return Ok(held);
        }
        let _one = self.refreshing.lock().await;
        // Refreshed by another request of this run while this one waited.
        if let Some(c) = crate::sync::lock(&self.signed_in).get(&kind)
            && !c.expiring(now_ms())
        {
            return Ok(c.clone());
        }
        let fresh = match self.agent_dir.clone() {
            Some(dir) => self.refresh_in_file(kind, dir).await?,
            None => self.refresh_with(kind, &held).await?,
        };
        self.set(kind, fresh.clone());
        Ok(fresh)
    }

    /// Refresh under `auth.json`'s lock: re-read the entry (another pi may have refreshed it,
    /// or signed out), refresh if it still needs it, write back only this entry's fields.
    async fn refresh_in_file(&self, kind: Kind, dir: PathBuf) -> Result<Credentials, String> {
        let fail = |e: String| format!("Could not refresh the {} sign-in: {e}", kind.label());
        let locked = tokio::task::spawn_blocking(move || {
            let locked = crate::config::node::auth::Locked::take(&dir)?;
            let entry = locked.entry(kind.provider())?;
            Ok::<_, String>((locked, entry))
        })
        .await
        .map_err(|e| fail(e.to_string()))?
        .map_err(fail)?;
        let (locked, entry) = locked;
        let Some(on_file) = entry
            .as_ref()
            .and_then(Value::as_object)
            .and_then(Credentials::from_entry)
        else {
            // Signed out (or signed in with a key) in another pi meanwhile: not brought back.
            self.forget(kind);
            return Err(format!(
                "The {} sign-in ({}) is no longer in auth.json (signed out elsewhere?). {}",
                kind.label(),
                kind.provider(),
                kind.sign_in_again()
            ));
        };
        if !on_file.expiring(now_ms()) {
            self.secrets.add(&on_file.access);
            self.secrets.add(&on_file.refresh);
            return Ok(on_file);
        }
        let fresh = self.refresh_with(kind, &on_file).await?;
        let written = fresh.clone();
        tokio::task::spawn_blocking(move || {
            locked.update(|entries| {
                let slot = entries
                    .entry(kind.provider().to_string())
                    .or_insert_with(|| Value::Object(Map::new()));
                match slot {
                    Value::Object(entry) => written.write_into(entry),
                    other => *other = Value::Object(written.to_entry(kind)),
                }
                Ok(())
            })
        })
        .await
        .map_err(|e| fail(e.to_string()))?
        .map_err(fail)?;
        Ok(fresh)
    }

    async fn refresh_with(&self, kind: Kind, held: &Credentials) -> Result<Credentials, String> {
        let client = self.client()?;
        let fresh = refresh::refresh(kind, &self.endpoints, &client, held)
            .await
            .map_err(|e| {
                self.secrets
                    .mask(&format!(
                        "Could not refresh the {} sign-in ({}): {e}. {}",
                        kind.label(),
                        kind.provider(),
                        kind.sign_in_again()
                    ))
                    .into_owned()
            })?;
        self.secrets.add(&fresh.access);
        self.secrets.add(&fresh.refresh);
        Ok(fresh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_and_write_back_in_the_node_pis_shape() {
        let e: Map<String, Value> = serde_json::from_str(
            r#"{"type":"oauth","access":"a","refresh":"r","expires":5,"accountId":"x"}"#,
        )
        .unwrap();
        let c = Credentials::from_entry(&e).unwrap();
        assert_eq!(c.text("accountId"), Some("x"));
        let secret = Credentials {
            access: "access-token-123".into(),
            refresh: "refresh-token-456".into(),
            ..c.clone()
        };
        let shown = format!("{secret:?}");
        assert!(
            !shown.contains("token-123") && !shown.contains("token-456"),
            "{shown}"
        );
        let mut back = e.clone();
        c.write_into(&mut back);
        assert_eq!(back, e);
        assert_eq!(
            serde_json::to_string(&c.to_entry(Kind::Claude)).unwrap(),
            r#"{"type":"oauth","refresh":"r","access":"a","expires":5,"accountId":"x"}"#
        );
        let mut key = e.clone();
        key.insert("type".into(), "api_key".into());
        assert!(Credentials::from_entry(&key).is_none());
        assert!(c.expiring(0), "5 ms after the epoch is long past");
        let later = Credentials {
            expires: now_ms() + 10 * 60_000,
            ..c
        };
        assert!(!later.expiring(now_ms()));
        assert!(later.expiring(now_ms() + 9 * 60_000 + 1));
    }

    #[test]
    fn kinds_know_their_providers() {
        for k in Kind::ALL {
            assert_eq!(Kind::from_provider(k.provider()), Some(k));
        }
        assert!(Kind::from_provider("groq").is_none());
        assert!(!Kind::Claude.subscription_only() && Kind::Codex.subscription_only());
        assert!(
            Kind::Codex
                .sign_in_again()
                .contains("pi --login openai-codex")
        );
    }
}
