//! `/login`: an API key pasted in the UI, stored in `auth.json` the way the Node.js pi stores
//! it (0600, other entries kept) and used from the next request on; a subscription signed in
//! to (`provider::subscription`), stored there in the Node.js pi's shape; and the local model
//! servers found on this machine, for a person with no key at all. `/logout` takes one
//! provider's entry out again.

use std::path::PathBuf;
use std::sync::Arc;

use crate::provider::catalog::{Catalog, ModelInfo};
use crate::provider::subscription::flows::{self, Notice, SignIn};
use crate::provider::subscription::{Kind, Subscriptions};
use crate::provider::{EnvLookup, Providers};

/// What the host needs to sign in.
pub struct LoginParts {
    /// The providers the agent talks through (a new key is handed to them).
    pub providers: Arc<Providers>,
    /// Where `auth.json` lives (`None`: no home folder, the key is kept for this run only).
    pub agent_dir: Option<PathBuf>,
    /// For finding local servers (`OLLAMA_HOST`).
    pub env: EnvLookup,
}

/// An API key on its way to `auth.json`: printed as `[key]`, never as itself (serialised as
/// itself, for the operation that carries it).
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct SecretKey(pub String);

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[key]")
    }
}

/// The result of a `/login`.
#[derive(Clone, Debug)]
pub struct LoggedIn {
    pub provider: String,
    /// Where the key was saved (`None`: kept for this run only).
    pub file: Option<PathBuf>,
    /// The model now in use: the provider's default (or first) model.
    pub model: Option<ModelInfo>,
}

/// Check a pasted key: one line of printable text.
pub fn check_key(key: &str) -> Result<String, String> {
    let key = key.trim();
    if key.is_empty() {
        return Err("the key is empty".into());
    }
    if key.chars().any(char::is_control) || key.contains(' ') {
        return Err(
            "a key is one word of plain text (it holds no spaces or control characters)".into(),
        );
    }
    Ok(key.to_string())
}

/// The model to use after signing in to `provider`: its default, else its first listed one.
pub fn model_after_login(catalog: &Catalog, provider: &str) -> Option<ModelInfo> {
    crate::provider::catalog::default_model(provider)
        .and_then(|id| catalog.find(provider, id).cloned())
        .or_else(|| {
            catalog
                .models()
                .iter()
                .find(|m| m.provider == provider)
                .cloned()
        })
}

/// Save the key (on the blocking pool) and give it to the providers.
pub async fn login(
    parts: &LoginParts,
    catalog: &Catalog,
    provider: &str,
    key: &SecretKey,
) -> Result<LoggedIn, String> {
    if catalog.provider(provider).is_none() {
        return Err(format!("there is no provider `{provider}`"));
    }
    let key = check_key(&key.0)?;
    let file = match parts.agent_dir.clone() {
        Some(dir) => {
            let (p, k) = (provider.to_string(), key.clone());
            let saved = tokio::task::spawn_blocking(move || {
                crate::config::node::auth::store_key(&dir, &p, &k)
            })
            .await
            .map_err(|e| e.to_string())??;
            Some(saved)
        }
        None => None,
    };
    parts.providers.set_key(provider, key);
    Ok(LoggedIn {
        provider: provider.to_string(),
        file,
        model: model_after_login(catalog, provider),
    })
}

/// A subscription signed in to: what a front end needs to switch to it.
#[derive(Clone, Debug)]
pub struct SignedIn {
    pub provider: String,
    pub label: String,
    /// Where it was saved (`None`: this run only).
    pub file: Option<PathBuf>,
    /// The model to use now: the subscription's default.
    pub model: Option<ModelInfo>,
    /// The subscription's models, for the pickers (they were not offered before).
    pub models: Vec<ModelInfo>,
}

impl SignedIn {
    pub fn new(kind: Kind, file: Option<PathBuf>, catalog: &Catalog) -> SignedIn {
        let mut with = catalog.clone();
        with.add_subscription_models(kind.provider());
        SignedIn {
            provider: kind.provider().to_string(),
            label: kind.label().to_string(),
            file,
            model: model_after_login(&with, kind.provider()),
            models: with
                .models()
                .iter()
                .filter(|m| m.provider == kind.provider())
                .cloned()
                .collect(),
        }
    }
}

/// Hand `url` to the system's browser opener; whether one was started. Not where there is no
/// display (SSH, containers), nor with `PI_NO_BROWSER` set: the address is shown for copying
/// in any case.
pub fn open_browser(env: &EnvLookup, url: &str) -> bool {
    if env("PI_NO_BROWSER").is_some_and(|v| !v.is_empty()) {
        return false;
    }
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        let display = ["DISPLAY", "WAYLAND_DISPLAY"]
            .iter()
            .any(|v| env(v).is_some_and(|d| !d.is_empty()));
        if !display {
            return false;
        }
        "xdg-open"
    };
    std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .is_ok()
}

/// The subscription a name given to `/login` or `pi --login` means: a provider id
/// (`openai-codex`, `anthropic`, `github-copilot`) or a short name (`codex`, `chatgpt`,
/// `claude`, `copilot`).
pub fn subscription_named(name: &str) -> Option<Kind> {
    let n = name.trim().to_ascii_lowercase();
    Kind::from_provider(&n).or(match n.as_str() {
        "codex" | "chatgpt" => Some(Kind::Codex),
        "claude" => Some(Kind::Claude),
        "copilot" | "github" => Some(Kind::Copilot),
        _ => None,
    })
}

/// Sign in to `request.kind` and store the result; where it was saved.
pub async fn sign_in(
    subscriptions: &Subscriptions,
    request: SignIn,
    notify: &(dyn Fn(Notice) + Send + Sync),
) -> Result<Option<PathBuf>, String> {
    let kind = request.kind;
    let credentials = flows::sign_in(subscriptions, request, notify).await?;
    subscriptions.store(kind, credentials).await
}

/// `/logout PROVIDER`: take its sign-in (or its stored API key) out of `auth.json`. What to
/// tell the person.
pub async fn log_out(
    subscriptions: &Subscriptions,
    agent_dir: Option<PathBuf>,
    provider: &str,
) -> Result<String, String> {
    if let Some(kind) = subscription_named(provider)
        && subscriptions.sign_out(kind).await?
    {
        return Ok(format!(
            "Signed out of {} ({}).",
            kind.label(),
            kind.provider()
        ));
    }
    let Some(dir) = agent_dir else {
        return Err("there is no agent folder, so nothing is stored".into());
    };
    let p = provider.trim().to_string();
    let removed = tokio::task::spawn_blocking(move || crate::config::node::auth::remove(&dir, &p))
        .await
        .map_err(|e| e.to_string())??;
    if removed {
        Ok(format!(
            "Removed the stored key for {}; it applies from pi's next start.",
            provider.trim()
        ))
    } else {
        Err(format!("nothing is stored for `{}`", provider.trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_checked_and_never_printed() {
        assert_eq!(check_key("  sk-abc \n").unwrap(), "sk-abc");
        assert!(check_key("").is_err());
        assert!(check_key("sk-a\u{1b}[2J").is_err());
        assert!(check_key("two words").is_err());
        assert_eq!(format!("{:?}", SecretKey("sk-secret".into())), "[key]");
    }

    #[test]
    fn signing_in_picks_the_providers_default_model() {
        let c = Catalog::builtin(&|_| None);
        assert_eq!(
            model_after_login(&c, "groq").unwrap().id,
            "openai/gpt-oss-120b"
        );
        assert_eq!(
            model_after_login(&c, "anthropic").unwrap().id,
            "claude-sonnet-4-5"
        );
        assert!(model_after_login(&c, "ollama").is_none());
    }

    #[test]
    fn subscriptions_go_by_provider_id_or_short_name() {
        assert_eq!(subscription_named("claude"), Some(Kind::Claude));
        assert_eq!(subscription_named(" OpenAI-Codex "), Some(Kind::Codex));
        assert_eq!(subscription_named("copilot"), Some(Kind::Copilot));
        assert_eq!(subscription_named("groq"), None);
    }
}
