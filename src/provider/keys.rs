//! API keys: where they come from, in order, and how config values are read.
//!
//! Order: `--api-key`, then the provider's `key` in config.toml, then the Node.js pi's
//! `auth.json`, then the provider's usual environment variable, then the `apiKey` of the Node.js
//! pi's `models.json` (the Node.js pi's own order, with config.toml placed right after the flag).
//! A configured value may be `!command` (its trimmed stdout), the name of an environment
//! variable, or the key itself. Keys are only ever put in request headers: never in a message, a
//! log or an error.

use std::process::Command;

use super::catalog::ProviderInfo;
use super::error::KeyError;

/// Resolve a config value: `!command`, an environment variable name, or a literal.
pub(crate) fn resolve_value(
    value: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, KeyError> {
    let v = value.trim();
    if let Some(cmd) = v.strip_prefix('!') {
        let out = Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .output()
            .map_err(|e| KeyError::CommandFailed(e.to_string()))?;
        if !out.status.success() {
            return Err(KeyError::CommandExited(
                out.status
                    .code()
                    .map_or("a signal".to_string(), |c| c.to_string()),
            ));
        }
        let key = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if key.is_empty() {
            return Err(KeyError::EmptyOutput);
        }
        if key.chars().any(char::is_control) {
            return Err(KeyError::ControlCharacters);
        }
        return Ok(key);
    }
    let looks_like_env = !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    if looks_like_env && let Some(from_env) = env(v).filter(|s| !s.trim().is_empty()) {
        return Ok(from_env.trim().to_string());
    }
    Ok(v.to_string())
}

/// The key for `provider`, or `None` if there is none.
pub(crate) fn resolve_key(
    provider: &ProviderInfo,
    cli_key: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<String>, KeyError> {
    if let Some(k) = cli_key.filter(|k| !k.trim().is_empty()) {
        return Ok(Some(k.trim().to_string()));
    }
    if let Some(v) = provider.key.as_deref().or(provider.auth_key.as_deref()) {
        return resolve_value(v, env).map(Some);
    }
    let from_env = provider
        .key_env
        .as_deref()
        .and_then(env)
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty());
    if from_env.is_some() {
        return Ok(from_env);
    }
    match provider.models_key.as_deref() {
        Some(v) => resolve_value(v, env).map(Some),
        None => Ok(None),
    }
}

/// Whether a key for `provider` is configured, without running any `!command` (for choosing a
/// default model and marking providers in the model picker). Local servers need none.
pub(crate) fn has_key(
    provider: &ProviderInfo,
    cli_key: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> bool {
    let set = |v: &str| -> bool {
        let v = v.trim();
        if v.is_empty() {
            return false;
        }
        if looks_like_variable(v) {
            // A name of an unset variable is used as the key itself, as `resolve_value` does;
            // count it only when the variable is set, or it is clearly not a name.
            return env(v).is_some_and(|k| !k.trim().is_empty());
        }
        true
    };
    provider.keyless
        || provider.signed_in
        || cli_key.is_some_and(|k| !k.trim().is_empty())
        || [
            provider.key.as_deref(),
            provider.auth_key.as_deref(),
            provider.models_key.as_deref(),
        ]
        .into_iter()
        .flatten()
        .any(set)
        || provider
            .key_env
            .as_deref()
            .and_then(env)
            .is_some_and(|k| !k.trim().is_empty())
}

fn looks_like_variable(v: &str) -> bool {
    !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// Keys written out in config files (not `!command`s or variable names): values to mask
/// should one ever reach a message.
pub(crate) fn literal_keys(providers: &[ProviderInfo]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in providers {
        let values = [
            p.key.as_deref(),
            p.auth_key.as_deref(),
            p.models_key.as_deref(),
        ];
        for v in values.into_iter().flatten().map(str::trim) {
            if v.len() >= 8
                && !v.starts_with('!')
                && !looks_like_variable(v)
                && !out.iter().any(|x| x == v)
            {
                out.push(v.to_string());
            }
        }
    }
    out
}

/// The environment variables pi reads keys from: each provider's usual variable, and every
/// config `key` that names a variable.
pub(crate) fn key_variables(providers: &[ProviderInfo]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for p in providers {
        let named = [
            p.key.as_deref(),
            p.auth_key.as_deref(),
            p.models_key.as_deref(),
        ]
        .into_iter()
        .flatten()
        .map(str::trim)
        .filter(|v| looks_like_variable(v));
        for n in p.key_env.as_deref().into_iter().chain(named) {
            if !names.iter().any(|x| x == n) {
                names.push(n.to_string());
            }
        }
    }
    names
}

/// What to tell a person who has no key for `provider`.
pub(crate) fn missing_key_help(provider: &ProviderInfo) -> String {
    match &provider.key_env {
        Some(var) => format!(
            "No API key for `{}`: set {var}, pass --api-key, use /login, or set a key for it in \
             config.toml.",
            provider.id
        ),
        None => format!(
            "No API key for `{}`: pass --api-key, use /login, or set a key for it in config.toml.",
            provider.id
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::catalog::Catalog;

    fn env(k: &str) -> Option<String> {
        match k {
            "ANTHROPIC_API_KEY" => Some("from-env".into()),
            "MY_KEY" => Some("from-named-var".into()),
            _ => None,
        }
    }

    #[test]
    fn order_is_cli_then_config_then_env() {
        let c = Catalog::builtin(&|_| None);
        let mut p = c.provider("anthropic").unwrap().clone();
        assert_eq!(
            resolve_key(&p, None, &env).unwrap().as_deref(),
            Some("from-env")
        );
        p.key = Some("MY_KEY".into());
        assert_eq!(
            resolve_key(&p, None, &env).unwrap().as_deref(),
            Some("from-named-var")
        );
        p.key = Some("sk-literal".into());
        assert_eq!(
            resolve_key(&p, None, &env).unwrap().as_deref(),
            Some("sk-literal")
        );
        assert_eq!(
            resolve_key(&p, Some("cli"), &env).unwrap().as_deref(),
            Some("cli")
        );
        let o = c.provider("openrouter").unwrap();
        assert_eq!(resolve_key(o, None, &env).unwrap(), None);
        assert!(missing_key_help(o).contains("OPENROUTER_API_KEY"));
    }

    #[test]
    fn auth_file_comes_before_the_environment_and_models_json_after_it() {
        let c = Catalog::builtin(&|_| None);
        let mut p = c.provider("anthropic").unwrap().clone();
        p.models_key = Some("sk-models-json".into());
        assert_eq!(
            resolve_key(&p, None, &env).unwrap().as_deref(),
            Some("from-env")
        );
        assert_eq!(
            resolve_key(&p, None, &|_| None).unwrap().as_deref(),
            Some("sk-models-json")
        );
        p.auth_key = Some("sk-auth-json".into());
        assert_eq!(
            resolve_key(&p, None, &env).unwrap().as_deref(),
            Some("sk-auth-json")
        );
        p.key = Some("sk-config-toml".into());
        assert_eq!(
            resolve_key(&p, None, &env).unwrap().as_deref(),
            Some("sk-config-toml")
        );
    }

    #[test]
    fn having_a_key_is_judged_without_running_commands() {
        let c = Catalog::builtin(&|_| None);
        let mut p = c.provider("groq").unwrap().clone();
        assert!(!has_key(&p, None, &env));
        assert!(has_key(&p, Some("k"), &env));
        p.auth_key = Some("UNSET_VARIABLE".into());
        assert!(!has_key(&p, None, &env), "a variable that is not set");
        p.auth_key = Some("MY_KEY".into());
        assert!(has_key(&p, None, &env));
        p.auth_key = Some("!exit 1".into());
        assert!(has_key(&p, None, &env), "a command counts, unrun");
        assert!(has_key(c.provider("ollama").unwrap(), None, &env));
        assert_eq!(literal_keys(&[p.clone()]), Vec::<String>::new());
        p.models_key = Some("sk-a-literal-key".into());
        assert_eq!(literal_keys(&[p]), vec!["sk-a-literal-key".to_string()]);
    }

    #[test]
    fn commands_give_their_output_and_failures_are_clear() {
        assert_eq!(
            resolve_value("!printf ' sk-cmd \\n'", &env).unwrap(),
            "sk-cmd"
        );
        assert!(
            resolve_value("!exit 3", &env)
                .unwrap_err()
                .to_string()
                .contains("exited with 3")
        );
        assert!(
            resolve_value("!true", &env)
                .unwrap_err()
                .to_string()
                .contains("printed nothing")
        );
        let e = resolve_value("!printf 'sk-\\033[2Jkey'", &env)
            .unwrap_err()
            .to_string();
        assert!(e.contains("control characters"), "{e}");
        assert!(!e.contains('\u{1b}'), "the error does not echo the key");
    }

    #[test]
    fn key_variables_name_every_variable_keys_come_from() {
        let c = Catalog::builtin(&|_| None);
        let mut providers = c.providers().to_vec();
        if let Some(p) = providers.iter_mut().find(|p| p.id == "ollama") {
            p.key = Some("LAB_KEY".into());
        }
        if let Some(p) = providers.iter_mut().find(|p| p.id == "openai") {
            p.key = Some("sk-literal-not-a-name".into());
        }
        let names = key_variables(&providers);
        for n in ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "LAB_KEY"] {
            assert!(names.iter().any(|x| x == n), "{n} in {names:?}");
        }
        assert!(!names.iter().any(|x| x.starts_with("sk-")));
    }
}
