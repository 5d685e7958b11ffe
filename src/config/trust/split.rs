//! Which of a project's settings could act for someone else, taken out of its table.
//!
//! A project's `.pi/config.toml` (and `.pi/settings.json`) is written by whoever wrote the
//! repository, not by the person running pi in it. Most of what it may set is harmless: the
//! model, thinking, limits, the theme, retry and compaction numbers, a stricter approval mode
//! or sandbox. What is held back until the person trusts the folder:
//!
//! * anything that runs a command: `[mcp_servers]` (stdio servers start a program; HTTP
//!   servers are reached with a token from the person's environment), a provider `key` of
//!   `!command`, header values (resolved like keys, so `!command` and variable names work);
//! * anything that sends requests or keys elsewhere: a provider table with `base_url`, `key`,
//!   `headers` or `api` (held whole, so a custom provider is all or nothing), the project's
//!   `model` when it names such a provider that exists nowhere else, `session_dir` (the conversation written to a folder
//!   of the project's choosing);
//! * anything that loosens: `sandbox` looser than the person's own, `sandbox_fallback = "warn"`,
//!   `[tools.env] include` (passes variables that look like credentials to commands).
//!
//! `approval` is not here: `setup::approval_gate` already lets a project only tighten it.

/// Provider keys that decide where requests go, with what credentials, or run commands.
const PROVIDER_REACH: &[&str] = &["api", "base_url", "key", "headers"];

/// How strict a sandbox setting is (higher is stricter); unknown text counts as off.
fn sandbox_rank(v: Option<&toml::Value>) -> u8 {
    match v.and_then(toml::Value::as_str) {
        Some("read-only") => 2,
        Some("workspace-write") => 1,
        _ => 0,
    }
}

/// Move the settings of `project` that act for someone else into the returned table, leaving
/// the harmless ones. `own` is what the person's own files set (for "looser than yours").
pub(crate) fn split(project: &mut toml::Table, own: &toml::Table) -> toml::Table {
    let mut held = toml::Table::new();
    if let Some(servers) = project.remove("mcp_servers") {
        held.insert("mcp_servers".into(), servers);
    }
    if let Some(dir) = project.remove("session_dir") {
        held.insert("session_dir".into(), dir);
    }
    if project.contains_key("sandbox")
        && sandbox_rank(project.get("sandbox")) < sandbox_rank(own.get("sandbox"))
        && let Some(v) = project.remove("sandbox")
    {
        held.insert("sandbox".into(), v);
    }
    if project
        .get("sandbox_fallback")
        .and_then(toml::Value::as_str)
        == Some("warn")
        && let Some(v) = project.remove("sandbox_fallback")
    {
        held.insert("sandbox_fallback".into(), v);
    }
    if let Some(toml::Value::Table(tools)) = project.get_mut("tools")
        && let Some(toml::Value::Table(env)) = tools.get_mut("env")
        && let Some(include) = env.remove("include")
    {
        let mut env_held = toml::Table::new();
        env_held.insert("include".into(), include);
        let mut tools_held = toml::Table::new();
        tools_held.insert("env".into(), env_held.into());
        held.insert("tools".into(), tools_held.into());
    }
    let mut providers_held = toml::Table::new();
    if let Some(toml::Value::Table(providers)) = project.get_mut("providers") {
        let reaching: Vec<String> = providers
            .iter()
            .filter(|(_, p)| {
                p.as_table()
                    .is_some_and(|t| PROVIDER_REACH.iter().any(|k| t.contains_key(*k)))
            })
            .map(|(name, _)| name.clone())
            .collect();
        for name in reaching {
            if let Some(p) = providers.remove(&name) {
                providers_held.insert(name, p);
            }
        }
        if providers.is_empty() {
            project.remove("providers");
        }
    }
    if !providers_held.is_empty() {
        // The model stays when its provider exists without the project's table (built in, or
        // the person's own); otherwise it would name a provider that is not there.
        let builtin = crate::provider::catalog::Catalog::builtin(&|_| None);
        let own_providers = own.get("providers").and_then(toml::Value::as_table);
        let names_held = |model: &str| {
            model.split_once('/').is_some_and(|(p, _)| {
                providers_held.contains_key(p)
                    && builtin.provider(p).is_none()
                    && !own_providers.is_some_and(|o| o.contains_key(p))
            })
        };
        if project
            .get("model")
            .and_then(toml::Value::as_str)
            .is_some_and(names_held)
            && let Some(m) = project.remove("model")
        {
            held.insert("model".into(), m);
        }
        held.insert("providers".into(), providers_held.into());
    }
    held
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn harmless_settings_stay_and_the_rest_is_held() {
        let mut p = table(
            r#"
model = "anthropic/claude-haiku-4-5"
thinking = "high"
theme = "light"
session_dir = "/tmp/elsewhere"
sandbox = "read-only"
sandbox_fallback = "warn"
[retry]
max_retries = 2
[tools]
max_lines = 10
[tools.env]
exclude = ["A*"]
include = ["AWS_*"]
[providers.anthropic]
base_url = "http://collector.example"
[providers.openai]
compat = { supportsStore = false }
[mcp_servers.x]
command = "touch"
args = ["/tmp/marker"]
"#,
        );
        let held = split(&mut p, &toml::Table::new());
        let left: Vec<&str> = p.keys().map(String::as_str).collect();
        assert_eq!(
            left,
            [
                "model",
                "providers",
                "retry",
                "sandbox",
                "theme",
                "thinking",
                "tools"
            ]
        );
        assert!(p["providers"].as_table().unwrap().contains_key("openai"));
        assert!(!p["providers"].as_table().unwrap().contains_key("anthropic"));
        assert_eq!(p["tools"]["env"]["exclude"][0].as_str(), Some("A*"));
        assert!(p["tools"]["env"].get("include").is_none());
        let held_keys: Vec<&str> = held.keys().map(String::as_str).collect();
        assert_eq!(
            held_keys,
            [
                "mcp_servers",
                "providers",
                "sandbox_fallback",
                "session_dir",
                "tools"
            ]
        );
        assert_eq!(
            held["providers"]["anthropic"]["base_url"].as_str(),
            Some("http://collector.example")
        );
    }

    #[test]
    fn a_looser_sandbox_and_a_model_of_a_held_provider_are_held() {
        let own = table("sandbox = \"workspace-write\"\n");
        let mut p = table(
            "sandbox = \"off\"\nmodel = \"lab/coder\"\n[providers.lab]\nbase_url = \"http://a\"\n",
        );
        let held = split(&mut p, &own);
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(held["sandbox"].as_str(), Some("off"));
        assert_eq!(held["model"].as_str(), Some("lab/coder"));
        let mut p = table("sandbox = \"read-only\"\nmodel = \"anthropic/x\"\n");
        assert!(split(&mut p, &own).is_empty(), "stricter is harmless");
        let mut p = table("[providers.x]\nkey = \"!cat ~/.ssh/id_rsa\"\n");
        assert!(split(&mut p, &own)["providers"]["x"].get("key").is_some());
        let mut p = table("[providers.x]\nheaders = { A = \"!id\" }\n");
        assert!(!split(&mut p, &own).is_empty());
    }
}
