//! `settings.json` (agent folder, then the project's `.pi/settings.json` over it, objects merged
//! key by key) turned into config.toml's keys, so the two are merged by one rule: config.toml
//! wins, then these.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::config::ConfigError;

/// What the settings files say, as a config.toml table, with the files read and any warnings.
#[derive(Debug, Default)]
pub(crate) struct Settings {
    pub table: toml::Table,
    pub files: Vec<PathBuf>,
    pub warnings: Vec<String>,
    /// The project file's settings that act for someone else (its `sessionDir`, as
    /// `session_dir`), kept out of `table` until the folder is trusted (`config::trust`).
    pub project_held: toml::Table,
    /// Each file's `hooks` (Claude Code's shape), with whether it is the project's file.
    pub hooks: Vec<(PathBuf, bool, Value)>,
}

/// Read and merge the settings files.
pub(crate) fn load(agent_dir: Option<&Path>, cwd: &Path) -> Result<Settings, ConfigError> {
    let mut candidates = Vec::new();
    if let Some(d) = agent_dir {
        candidates.push(d.join("settings.json"));
    }
    let project_file = cwd.join(".pi").join("settings.json");
    candidates.push(project_file.clone());
    let mut merged = Map::new();
    let mut out = Settings::default();
    for file in candidates {
        let Some(value) = super::read_json(&file)? else {
            continue;
        };
        match value {
            Value::Object(mut o) => {
                if let Some(h) = o.remove("hooks") {
                    out.hooks.push((file.clone(), file == project_file, h));
                }
                if file == project_file
                    && let Some(dir) = o.remove("sessionDir")
                    && let Some(dir) = dir.as_str().filter(|d| !d.trim().is_empty())
                {
                    out.project_held
                        .insert("session_dir".into(), dir.trim().into());
                }
                merge(&mut merged, o)
            }
            _ => {
                out.warnings.push(format!(
                    "{}: expected a JSON object; ignored",
                    file.display()
                ));
                continue;
            }
        }
        out.files.push(file);
    }
    if out.files.is_empty() {
        return Ok(out);
    }
    let label = if out.files.len() == 1 {
        out.files[0].display().to_string()
    } else {
        "settings.json".to_string()
    };
    out.table = to_table(&merged, &label, &mut out.warnings);
    Ok(out)
}

fn merge(base: &mut Map<String, Value>, over: Map<String, Value>) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(Value::Object(b)), Value::Object(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Reads typed values out of the merged object, warning about the wrong types.
struct Reader<'a> {
    root: &'a Map<String, Value>,
    label: &'a str,
    warnings: &'a mut Vec<String>,
}

impl Reader<'_> {
    fn get(&self, path: &str) -> Option<&Value> {
        let mut parts = path.split('.');
        let mut v = self.root.get(parts.next()?)?;
        for p in parts {
            v = v.as_object()?.get(p)?;
        }
        (!v.is_null()).then_some(v)
    }

    fn wrong(&mut self, path: &str, expected: &str) {
        self.warnings.push(format!(
            "{}: `{path}` should be {expected}; ignored",
            self.label
        ));
    }

    fn string(&mut self, path: &str) -> Option<String> {
        match self.get(path)? {
            Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
            Value::String(_) => None,
            _ => {
                self.wrong(path, "a string");
                None
            }
        }
    }

    fn boolean(&mut self, path: &str) -> Option<bool> {
        match self.get(path)? {
            Value::Bool(b) => Some(*b),
            _ => {
                self.wrong(path, "true or false");
                None
            }
        }
    }

    fn count(&mut self, path: &str) -> Option<u64> {
        match self.get(path)?.as_u64() {
            Some(n) => Some(n),
            None => {
                self.wrong(path, "a whole number");
                None
            }
        }
    }

    fn strings(&mut self, path: &str) -> Option<Vec<String>> {
        let list = match self.get(path)? {
            Value::Array(a) => a
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>(),
            _ => None,
        };
        if list.is_none() {
            self.wrong(path, "a list of strings");
        }
        list
    }
}

/// What to say of TypeScript extensions and packages named by a flag or a setting: they
/// cannot run here, and what does their jobs instead.
pub(crate) fn extensions_notice(names: &[String]) -> String {
    format!(
        "TypeScript extensions and packages cannot run in this pi; not loaded: {}. MCP servers \
         prompt templates, skills and hooks do many of those jobs here (see the README)",
        names.join(", ")
    )
}

/// The settings pi uses, under config.toml's names.
fn to_table(root: &Map<String, Value>, label: &str, warnings: &mut Vec<String>) -> toml::Table {
    let mut r = Reader {
        root,
        label,
        warnings,
    };
    let mut t = toml::Table::new();
    let put = |t: &mut toml::Table, k: &str, v: toml::Value| {
        t.insert(k.to_string(), v);
    };
    let extensions: Vec<String> = ["extensions", "packages"]
        .iter()
        .filter_map(|k| r.get(k))
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    if !extensions.is_empty() {
        let notice = extensions_notice(&extensions);
        r.warnings.push(format!("{label}: {notice}"));
    }
    let provider = r.string("defaultProvider");
    let model = r.string("defaultModel");
    let model = match (provider, model) {
        (Some(p), Some(m)) => Some(format!("{p}/{m}")),
        (None, Some(m)) => Some(m),
        (Some(p), None) => {
            crate::provider::catalog::default_model(&p).map(|id| format!("{p}/{id}"))
        }
        (None, None) => None,
    };
    if let Some(m) = model {
        put(&mut t, "model", m.into());
    }
    if let Some(level) = r.string("defaultThinkingLevel") {
        put(&mut t, "thinking", level.into());
    }
    if let Some(m) = r.string("steeringMode") {
        put(&mut t, "steering_mode", m.into());
    }
    if let Some(m) = r.string("followUpMode") {
        put(&mut t, "follow_up_mode", m.into());
    }
    if let Some(d) = r.string("sessionDir") {
        put(&mut t, "session_dir", d.into());
    }
    if let Some(b) = r.boolean("hideThinkingBlock") {
        put(&mut t, "hide_thinking", b.into());
    }
    if let Some(b) = r.boolean("quietStartup") {
        put(&mut t, "quiet_startup", b.into());
    }
    if let Some(list) = r.strings("prompts") {
        put(
            &mut t,
            "prompts",
            toml::Value::Array(list.into_iter().map(toml::Value::from).collect()),
        );
    }
    if let Some(list) = r.strings("skills") {
        put(
            &mut t,
            "skills",
            toml::Value::Array(list.into_iter().map(toml::Value::from).collect()),
        );
    }
    if let Some(b) = r.boolean("enableSkillCommands") {
        put(&mut t, "enable_skill_commands", b.into());
    }
    if let Some(list) = r.strings("enabledModels") {
        put(
            &mut t,
            "enabled_models",
            toml::Value::Array(list.into_iter().map(toml::Value::from).collect()),
        );
    }
    // Any name: a theme file may give it (an unknown one is said when the UI starts).
    if let Some(name) = r.string("theme") {
        put(&mut t, "theme", name.into());
    }
    if let Some(list) = r.strings("themes") {
        put(
            &mut t,
            "themes",
            toml::Value::Array(list.into_iter().map(toml::Value::from).collect()),
        );
    }
    let mut retry = toml::Table::new();
    let enabled = r.boolean("retry.enabled");
    if enabled == Some(false) {
        retry.insert("max_retries".into(), 0.into());
    } else if let Some(n) = r.count("retry.maxRetries") {
        retry.insert("max_retries".into(), as_toml(n));
    }
    if let Some(n) = r.count("retry.baseDelayMs") {
        retry.insert("base_delay_ms".into(), as_toml(n));
    }
    if !retry.is_empty() {
        put(&mut t, "retry", retry.into());
    }
    let mut compaction = toml::Table::new();
    if let Some(b) = r.boolean("compaction.enabled") {
        compaction.insert("enabled".into(), b.into());
    }
    if let Some(n) = r.count("compaction.reserveTokens") {
        compaction.insert("reserve_tokens".into(), as_toml(n));
    }
    if let Some(n) = r.count("compaction.keepRecentTokens") {
        compaction.insert("keep_recent_tokens".into(), as_toml(n));
    }
    if !compaction.is_empty() {
        put(&mut t, "compaction", compaction.into());
    }
    t
}

fn as_toml(n: u64) -> toml::Value {
    toml::Value::Integer(i64::try_from(n).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::super::test_dir::{temp, write};
    use super::*;

    #[test]
    fn project_settings_merge_over_global_ones_key_by_key() {
        let d = temp("settings");
        write(
            &d,
            "agent/settings.json",
            r#"{"defaultProvider":"anthropic","defaultModel":"claude-haiku-4-5",
               "defaultThinkingLevel":"low","compaction":{"enabled":true,"reserveTokens":16384},
               "retry":{"maxRetries":5,"baseDelayMs":100},"enabledModels":["claude-*","gpt-4o"],
               "packages":["pi-skills"],"quietStartup":true,"sessionDir":"~/s"}"#,
        );
        write(
            &d,
            "proj/.pi/settings.json",
            r#"{"compaction":{"reserveTokens":8192},"steeringMode":"all","hideThinkingBlock":true}"#,
        );
        let s = load(Some(&d.join("agent")), &d.join("proj")).unwrap();
        // Packages are not silently dropped: one notice names what is not loaded.
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        assert!(
            s.warnings[0].contains("not loaded: pi-skills"),
            "{:?}",
            s.warnings
        );
        assert_eq!(s.files.len(), 2);
        let c: crate::config::Config = toml::Value::Table(s.table).try_into().unwrap();
        assert_eq!(c.model.as_deref(), Some("anthropic/claude-haiku-4-5"));
        assert_eq!(c.thinking.as_deref(), Some("low"));
        assert_eq!(c.steering_mode.as_deref(), Some("all"));
        assert_eq!(c.session_dir.as_deref(), Some("~/s"));
        assert_eq!(c.hide_thinking, Some(true));
        assert_eq!(c.quiet_startup, Some(true));
        assert_eq!(
            c.enabled_models,
            Some(vec!["claude-*".into(), "gpt-4o".into()])
        );
        assert_eq!(c.retry.max_retries, Some(5));
        assert_eq!(c.retry.base_delay_ms, Some(100));
        let k = c.compaction.settings();
        assert!(k.enabled);
        assert_eq!(k.reserve_tokens, 8192, "the project's value wins");
    }

    #[test]
    fn wrong_types_warn_and_retry_off_means_no_retries() {
        let d = temp("settings-types");
        write(
            &d,
            "settings.json",
            r#"{"defaultModel":7,"retry":{"enabled":false,"maxRetries":9},"quietStartup":"yes",
               "theme":7,"defaultProvider":"openai"}"#,
        );
        let s = load(Some(&d), &d.join("nowhere")).unwrap();
        assert_eq!(s.warnings.len(), 3, "{:?}", s.warnings);
        assert!(s.warnings.iter().any(|w| w.contains("`defaultModel`")));
        assert!(s.warnings.iter().any(|w| w.contains("`quietStartup`")));
        assert!(s.warnings.iter().any(|w| w.contains("`theme`")));
        let c: crate::config::Config = toml::Value::Table(s.table).try_into().unwrap();
        assert_eq!(c.retry.max_retries, Some(0));
        assert_eq!(
            c.model.as_deref(),
            Some("openai/gpt-5"),
            "a provider alone picks its default model"
        );
    }
}
