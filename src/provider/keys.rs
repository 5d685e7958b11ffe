//! API keys: where they come from, in order, and how config values are read.
//!
//! Order: `--api-key`, then the provider's `key` in config, then the provider's usual
//! environment variable. A config value may be `!command` (its trimmed stdout), the name of an
//! environment variable, or the key itself. Keys are only ever put in request headers: never in
//! a message, a log or an error.

use std::process::Command;

use super::catalog::ProviderInfo;

/// Resolve a config value: `!command`, an environment variable name, or a literal.
pub fn resolve_value(value: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let v = value.trim();
    if let Some(cmd) = v.strip_prefix('!') {
        let out = Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .output()
            .map_err(|e| format!("could not run the key command: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "the key command exited with {}",
                out.status
                    .code()
                    .map_or("a signal".to_string(), |c| c.to_string())
            ));
        }
        let key = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if key.is_empty() {
            return Err("the key command printed nothing".into());
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
pub fn resolve_key(
    provider: &ProviderInfo,
    cli_key: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<String>, String> {
    if let Some(k) = cli_key.filter(|k| !k.trim().is_empty()) {
        return Ok(Some(k.trim().to_string()));
    }
    if let Some(v) = provider.key.as_deref() {
        return resolve_value(v, env).map(Some);
    }
    Ok(provider
        .key_env
        .as_deref()
        .and_then(env)
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty()))
}

/// What to tell a person who has no key for `provider`.
pub fn missing_key_help(provider: &ProviderInfo) -> String {
    match &provider.key_env {
        Some(var) => format!(
            "No API key for `{}`: set {var}, pass --api-key, or set a key for it in config.toml.",
            provider.id
        ),
        None => format!(
            "No API key for `{}`: pass --api-key or set a key for it in config.toml.",
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
    fn commands_give_their_output_and_failures_are_clear() {
        assert_eq!(
            resolve_value("!printf ' sk-cmd \\n'", &env).unwrap(),
            "sk-cmd"
        );
        assert!(
            resolve_value("!exit 3", &env)
                .unwrap_err()
                .contains("exited with 3")
        );
        assert!(
            resolve_value("!true", &env)
                .unwrap_err()
                .contains("printed nothing")
        );
    }
}
