//! `config.toml`: the agent folder's file, overridden key by key by the project's
//! `.pi/config.toml`.
//!
//! A broken file is an error naming the file, line and column, and nothing starts with half a
//! config. Keys this version does not know are reported as warnings (a typo should not go
//! unnoticed, and a newer file should still load). `config.example.toml` documents every key.

pub(crate) mod error;
pub(crate) mod found;
pub(crate) mod front_matter;
pub(crate) mod instructions;
pub(crate) mod interactive;
pub(crate) mod node;
pub mod prompt_templates;
pub mod skills;
pub(crate) mod theme;
pub mod theme_files;
pub(crate) mod trust;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub(crate) use error::ConfigError;

use crate::provider::catalog::{Api, Catalog, Compat, ModelInfo, Pricing, ProviderInfo};

/// Retry settings for model calls.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct RetryConfig {
    pub max_retries: Option<u32>,
    pub base_delay_ms: Option<u64>,
    pub max_delay_ms: Option<u64>,
}

/// `[compaction]`: when and how much of a long conversation is condensed (the Node.js pi's
/// `compaction` settings, under the same names).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CompactionConfig {
    pub enabled: Option<bool>,
    pub reserve_tokens: Option<u64>,
    pub keep_recent_tokens: Option<u64>,
}

impl CompactionConfig {
    /// The settings, defaults filled in.
    pub(crate) fn settings(&self) -> crate::agent::protocol::compaction::CompactionSettings {
        let d = crate::agent::protocol::compaction::CompactionSettings::default();
        crate::agent::protocol::compaction::CompactionSettings {
            enabled: self.enabled.unwrap_or(d.enabled),
            reserve_tokens: self.reserve_tokens.unwrap_or(d.reserve_tokens),
            keep_recent_tokens: self.keep_recent_tokens.unwrap_or(d.keep_recent_tokens),
            scale_with_window: self.reserve_tokens.is_none() && self.keep_recent_tokens.is_none(),
        }
    }
}

/// `[checkpoints]`: recording what the agent changes in the working folder, for `/rewind`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CheckpointsConfig {
    /// Record checkpoints (default true).
    pub enabled: Option<bool>,
    /// Files larger than this many KiB are not saved (their changes cannot be undone).
    pub max_file_kb: Option<u64>,
    /// The saved contents of a working folder's sessions take at most this many MiB.
    pub max_total_mb: Option<u64>,
    /// A working folder with more files than this is not scanned around `bash`.
    pub max_files: Option<usize>,
}

impl CheckpointsConfig {
    pub(crate) fn limits(&self) -> crate::checkpoint::Limits {
        let d = crate::checkpoint::Limits::default();
        crate::checkpoint::Limits {
            max_file_bytes: self
                .max_file_kb
                .map_or(d.max_file_bytes, |k| k.saturating_mul(1024)),
            max_store_bytes: self
                .max_total_mb
                .map_or(d.max_store_bytes, |m| m.saturating_mul(1 << 20)),
            max_files: self.max_files.unwrap_or(d.max_files),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CostConfig {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ModelConfig {
    pub id: String,
    pub name: Option<String>,
    pub context_window: Option<u64>,
    pub max_tokens: Option<u64>,
    pub reasoning: Option<bool>,
    pub images: Option<bool>,
    pub cost: Option<CostConfig>,
    /// The in-band tool-calling dialect for this model (`hermes`, `qwen3`, … or `none`).
    pub dialect: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ProviderConfig {
    pub api: Option<String>,
    pub base_url: Option<String>,
    /// Literal key, environment variable name, or `!command`.
    pub key: Option<String>,
    pub headers: BTreeMap<String, String>,
    pub compat: Option<Compat>,
    pub models: Vec<ModelConfig>,
}

/// A whole number of at least 1. A zero or negative value is refused while the file is read,
/// so the error carries the key's line and column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Positive(pub usize);

impl<'de> Deserialize<'de> for Positive {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Positive;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a whole number of at least 1")
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Positive, E> {
                if n < 1 {
                    return Err(E::custom(format!(
                        "must be a whole number of at least 1, not {n}"
                    )));
                }
                self.visit_u64(n.unsigned_abs())
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Positive, E> {
                match usize::try_from(n) {
                    Ok(0) => Err(E::custom("must be a whole number of at least 1, not 0")),
                    Ok(v) => Ok(Positive(v)),
                    Err(_) => Err(E::custom(format!("{n} is too large"))),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// What the tools' commands see of pi's environment (`[tools.env]`): glob patterns over
/// variable names, besides the default exclusions of credentials.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ToolsEnvConfig {
    /// More names to withhold.
    pub exclude: Vec<String>,
    /// Names to pass even when they look like credentials.
    pub include: Vec<String>,
}

/// Output limits of the tools (`[tools]`); unset keys keep the built-in numbers.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ToolsConfig {
    pub max_lines: Option<Positive>,
    pub max_bytes: Option<Positive>,
    pub grep_max_line_chars: Option<Positive>,
    pub grep_limit: Option<Positive>,
    pub find_limit: Option<Positive>,
    pub ls_limit: Option<Positive>,
    pub env: ToolsEnvConfig,
}

impl ToolsConfig {
    /// The limits the tools get: the configured numbers over the defaults.
    pub(crate) fn limits(&self) -> crate::tools::ToolLimits {
        let d = crate::tools::ToolLimits::default();
        let pick = |v: Option<Positive>, default: usize| v.map_or(default, |p| p.0);
        crate::tools::ToolLimits {
            max_lines: pick(self.max_lines, d.max_lines),
            max_bytes: pick(self.max_bytes, d.max_bytes),
            grep_max_line_chars: pick(self.grep_max_line_chars, d.grep_max_line_chars),
            grep_limit: pick(self.grep_limit, d.grep_limit),
            find_limit: pick(self.find_limit, d.find_limit),
            ls_limit: pick(self.ls_limit, d.ls_limit),
        }
    }
}

/// `[rpc]`: limits of `pi --mode rpc`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct RpcConfig {
    /// The longest command line read; a longer one gets an error response and is skipped.
    pub max_line_bytes: Option<Positive>,
}

/// The merged configuration.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Config {
    /// Default model as `provider/id` (optionally `:thinking`).
    pub model: Option<String>,
    /// Default thinking level.
    pub thinking: Option<String>,
    /// Seconds without a complete event before a stream counts as dropped.
    pub idle_timeout_secs: Option<u64>,
    /// Seconds to wait for a provider's response headers after sending a request.
    pub response_timeout_secs: Option<u64>,
    /// How queued steering messages are delivered: "one-at-a-time" or "all".
    pub steering_mode: Option<String>,
    /// How queued follow-up messages are delivered: "one-at-a-time" or "all".
    pub follow_up_mode: Option<String>,
    /// The TUI's palette: "dark" (default), "light", or the name of a theme file.
    pub theme: Option<String>,
    /// More theme files or folders (settings.json's `themes`).
    pub themes: Option<Vec<String>>,
    /// Colour overrides by token name (see [`theme::TOKENS`]).
    pub colors: BTreeMap<String, theme::ColorValue>,
    /// Where sessions are saved (below `--session-dir` and `PI_CODING_AGENT_SESSION_DIR`).
    pub session_dir: Option<String>,
    /// Ask the model to state its intent in an `i` argument of every tool call (shown in the
    /// UI, stripped before the tool runs). `PI_NO_INTENT=1` turns it off.
    pub intent_tracing: Option<bool>,
    /// Where the model's tools may write: off, workspace-write, read-only (`--sandbox` wins).
    pub sandbox: Option<crate::tools::sandbox::SandboxMode>,
    /// What `bash` does where the sandbox cannot be enforced: refuse (default) or warn.
    pub sandbox_fallback: Option<crate::tools::sandbox::Fallback>,
    /// Collapse thinking blocks in the TUI (Ctrl+T shows them).
    pub hide_thinking: Option<bool>,
    /// No start-up header in the TUI (`--verbose` shows it anyway).
    pub quiet_startup: Option<bool>,
    /// `[tui]`: how the interactive UI uses the terminal.
    pub tui: interactive::TuiConfig,
    /// What the interactive UI sends when a run ends or an approval waits unseen.
    pub notify: Option<interactive::NotifyMode>,
    /// Model patterns Ctrl+P cycles through (as `--models`).
    pub enabled_models: Option<Vec<String>>,
    /// More prompt-template files or folders (settings.json's `prompts`).
    pub prompts: Option<Vec<String>>,
    /// Hooks, by the file that set them (Claude Code's shape: event → matcher groups); a
    /// project's only once the folder is trusted.
    #[serde(default)]
    pub hooks: std::collections::BTreeMap<String, serde_json::Value>,
    /// More skill files or folders (settings.json's `skills`).
    pub skills: Option<Vec<String>>,
    /// Offer each skill as `/skill:name` (default true; settings.json's `enableSkillCommands`).
    pub enable_skill_commands: Option<bool>,
    /// `approval = "ask"`, or `[approval]` with `mode`, `allow` and `deny`.
    pub approval: Option<ApprovalSetting>,
    /// The in-band tool-calling dialect for every model without its own (`none`: native).
    pub dialect: Option<String>,
    /// Under a dialect, stop the request when the model starts writing a tool result itself
    /// (default); `false` reads it to its end and drops the rest of the reply.
    pub abort_on_fabricated_tool_result: Option<bool>,
    /// Stop a run whose model asks for the same tool calls and gets the same results this
    /// many times in a row, when it asks once more (0: never).
    pub max_repeated_tool_turns: Option<u32>,
    pub retry: RetryConfig,
    pub compaction: CompactionConfig,
    pub checkpoints: CheckpointsConfig,
    /// Offer the provider's own web search (Anthropic Messages, OpenAI Responses).
    pub web_search: Option<bool>,
    /// Output limits of the tools.
    pub tools: ToolsConfig,
    pub rpc: RpcConfig,
    pub providers: BTreeMap<String, ProviderConfig>,
    /// `[mcp_servers.NAME]`, kept as written: `crate::mcp::config` reads them, and a mistake
    /// in one is a warning rather than a failed start.
    pub mcp_servers: BTreeMap<String, toml::Value>,
}

/// `approval`: a mode alone, or a table with the mode and the rules.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ApprovalSetting {
    Mode(String),
    Table(ApprovalTable),
}

/// `[approval]`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ApprovalTable {
    pub mode: Option<String>,
    pub allow: Vec<String>,
    pub deny: Vec<String>,
}

impl ApprovalSetting {
    pub(crate) fn mode(&self) -> Option<&str> {
        match self {
            ApprovalSetting::Mode(m) => Some(m),
            ApprovalSetting::Table(t) => t.mode.as_deref(),
        }
    }

    pub(crate) fn allow(&self) -> &[String] {
        match self {
            ApprovalSetting::Mode(_) => &[],
            ApprovalSetting::Table(t) => &t.allow,
        }
    }

    pub(crate) fn deny(&self) -> &[String] {
        match self {
            ApprovalSetting::Mode(_) => &[],
            ApprovalSetting::Table(t) => &t.deny,
        }
    }
}

/// A loaded config and the warnings found while loading it.
#[derive(Clone, Debug, Default)]
pub struct Loaded {
    pub config: Config,
    pub warnings: Vec<String>,
    pub files: Vec<PathBuf>,
    /// The project's `.pi/config.toml` `approval` setting, kept apart from `config`: a
    /// project may make approval stricter (a stricter mode, more `deny` rules), never looser,
    /// so a cloned repository cannot switch asking off.
    pub project_approval: Option<ApprovalSetting>,
    /// The project's settings that could act for someone else (`trust::split`), not in
    /// `config` until [`Loaded::apply_held`] puts them there (the folder is trusted).
    pub held: trust::Held,
    /// The merged table `config` was read from, for `apply_held`.
    table: toml::Table,
}

impl Loaded {
    /// Lay the held project settings over the config (the person trusts the folder).
    pub(crate) fn apply_held(&mut self) -> Result<(), ConfigError> {
        if self.held.is_empty() {
            return Ok(());
        }
        merge(&mut self.table, self.held.table.clone());
        self.config = toml::Value::Table(self.table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| invalid(&e))?;
        Ok(())
    }
}

/// Where the agent keeps its files: `PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
pub(crate) fn agent_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    if let Some(d) = env("PI_CODING_AGENT_DIR").filter(|d| !d.trim().is_empty()) {
        return Some(PathBuf::from(d));
    }
    dirs::home_dir().map(|h| h.join(".pi").join("agent"))
}

const TOP_KEYS: &[&str] = &[
    "model",
    "max_repeated_tool_turns",
    "thinking",
    "idle_timeout_secs",
    "response_timeout_secs",
    "steering_mode",
    "follow_up_mode",
    "session_dir",
    "intent_tracing",
    "sandbox",
    "sandbox_fallback",
    "hide_thinking",
    "quiet_startup",
    "tui",
    "notify",
    "enabled_models",
    "prompts",
    "skills",
    "enable_skill_commands",
    "hooks",
    "theme",
    "themes",
    "colors",
    "approval",
    "dialect",
    "abort_on_fabricated_tool_result",
    "retry",
    "compaction",
    "checkpoints",
    "web_search",
    "tools",
    "rpc",
    "providers",
    "mcp_servers",
];

/// A queue mode from config: `one-at-a-time` (default) or `all`.
pub(crate) fn queue_mode(
    value: Option<&str>,
    key: &str,
) -> Result<crate::agent::protocol::command::QueueMode, String> {
    use crate::agent::protocol::command::QueueMode;
    match value.map(str::trim) {
        None | Some("one-at-a-time") => Ok(QueueMode::OneAtATime),
        Some("all") => Ok(QueueMode::All),
        Some(other) => Err(format!(
            "config {key}: unknown mode `{other}` (expected \"one-at-a-time\" or \"all\")"
        )),
    }
}
const APPROVAL_KEYS: &[&str] = &["mode", "allow", "deny"];
const RETRY_KEYS: &[&str] = &["max_retries", "base_delay_ms", "max_delay_ms"];
const COMPACTION_KEYS: &[&str] = &["enabled", "reserve_tokens", "keep_recent_tokens"];
const CHECKPOINTS_KEYS: &[&str] = &["enabled", "max_file_kb", "max_total_mb", "max_files"];
const TOOLS_ENV_KEYS: &[&str] = &["exclude", "include"];
const RPC_KEYS: &[&str] = &["max_line_bytes"];
const TOOLS_KEYS: &[&str] = &[
    "env",
    "max_lines",
    "max_bytes",
    "grep_max_line_chars",
    "grep_limit",
    "find_limit",
    "ls_limit",
];
const PROVIDER_KEYS: &[&str] = &["api", "base_url", "key", "headers", "compat", "models"];
const MODEL_KEYS: &[&str] = &[
    "id",
    "name",
    "context_window",
    "max_tokens",
    "reasoning",
    "images",
    "cost",
    "dialect",
];

fn unknown_keys(
    table: &toml::Table,
    known: &[&str],
    prefix: &str,
    file: &Path,
    out: &mut Vec<String>,
) {
    for k in table.keys() {
        if !known.contains(&k.as_str()) {
            out.push(format!(
                "{}: unknown key `{prefix}{k}` (ignored)",
                file.display()
            ));
        }
    }
}

fn check_keys(table: &toml::Table, file: &Path, out: &mut Vec<String>) {
    unknown_keys(table, TOP_KEYS, "", file, out);
    if let Some(toml::Value::Table(a)) = table.get("approval") {
        unknown_keys(a, APPROVAL_KEYS, "approval.", file, out);
    }
    if let Some(toml::Value::Table(t)) = table.get("tui") {
        unknown_keys(t, interactive::TUI_KEYS, "tui.", file, out);
    }
    if let Some(toml::Value::Table(r)) = table.get("retry") {
        unknown_keys(r, RETRY_KEYS, "retry.", file, out);
    }
    if let Some(toml::Value::Table(c)) = table.get("compaction") {
        unknown_keys(c, COMPACTION_KEYS, "compaction.", file, out);
    }
    if let Some(toml::Value::Table(c)) = table.get("checkpoints") {
        unknown_keys(c, CHECKPOINTS_KEYS, "checkpoints.", file, out);
    }
    if let Some(toml::Value::Table(c)) = table.get("colors") {
        unknown_keys(c, theme::TOKENS, "colors.", file, out);
    }
    if let Some(toml::Value::Table(t)) = table.get("tools") {
        unknown_keys(t, TOOLS_KEYS, "tools.", file, out);
        if let Some(toml::Value::Table(e)) = t.get("env") {
            unknown_keys(e, TOOLS_ENV_KEYS, "tools.env.", file, out);
        }
    }
    if let Some(toml::Value::Table(r)) = table.get("rpc") {
        unknown_keys(r, RPC_KEYS, "rpc.", file, out);
    }
    if let Some(toml::Value::Table(ps)) = table.get("providers") {
        for (name, p) in ps {
            let toml::Value::Table(p) = p else { continue };
            unknown_keys(p, PROVIDER_KEYS, &format!("providers.{name}."), file, out);
            if let Some(toml::Value::Array(models)) = p.get("models") {
                for m in models {
                    if let toml::Value::Table(m) = m {
                        unknown_keys(
                            m,
                            MODEL_KEYS,
                            &format!("providers.{name}.models[]."),
                            file,
                            out,
                        );
                    }
                }
            }
        }
    }
}

/// Merge `over` into `base`: tables merge key by key, anything else is replaced.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Parse one file's text. Errors name the file, line and column.
pub(crate) fn parse_file(text: &str, file: &Path) -> Result<toml::Table, ConfigError> {
    text.parse::<toml::Table>()
        .map_err(|e| located(text, file, &e))
}

/// The merged settings do not deserialise.
fn invalid(e: &toml::de::Error) -> ConfigError {
    ConfigError::Invalid(e.message().trim_end_matches('\n').to_string())
}

fn located(text: &str, file: &Path, e: &toml::de::Error) -> ConfigError {
    let (line, col) = e.span().map(|s| line_col(text, s.start)).unwrap_or((1, 1));
    let snippet = text
        .lines()
        .nth(line.saturating_sub(1))
        .unwrap_or("")
        .trim();
    ConfigError::Toml {
        file: file.to_path_buf(),
        line,
        column: col,
        message: e.message().trim_end_matches('\n').to_string(),
        snippet: snippet.to_string(),
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Load the agent folder's config and the project's, the project winning, over what the
/// Node.js pi's `settings.json` files say.
pub fn load(agent_dir: Option<&Path>, cwd: &Path) -> Result<Loaded, ConfigError> {
    let mut files = Vec::new();
    if let Some(d) = agent_dir {
        files.push(d.join("config.toml"));
    }
    files.push(cwd.join(".pi").join("config.toml"));
    let settings = node::settings::load(agent_dir, cwd)?;
    let mut merged = settings.table;
    let mut loaded = Loaded {
        warnings: settings.warnings,
        files: settings.files,
        ..Loaded::default()
    };
    loaded.held.folder = cwd.to_path_buf();
    loaded.held.table = settings.project_held;
    let project_file = files.last().cloned();
    let mut own_hooks = toml::Table::new();
    let mut project_hooks = toml::Table::new();
    for (file, project, value) in settings.hooks {
        let target = if project {
            &mut project_hooks
        } else {
            &mut own_hooks
        };
        add_hooks(target, &file, &value, &mut loaded.warnings);
    }
    claude_hooks(
        cwd,
        &mut own_hooks,
        &mut project_hooks,
        &mut loaded.warnings,
    );
    for file in files {
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(ConfigError::Read { file, source }),
        };
        let table = parse_file(&text, &file)?;
        // Check types per file, so an error can point at its line.
        toml::from_str::<Config>(&text).map_err(|e| located(&text, &file, &e))?;
        check_keys(&table, &file, &mut loaded.warnings);
        let mut table = table;
        if Some(&file) == project_file.as_ref()
            && let Some(a) = table.remove("approval")
        {
            loaded.project_approval = a.try_into().ok();
        }
        if let Some(h) = table.remove("hooks") {
            let target = if Some(&file) == project_file.as_ref() {
                &mut project_hooks
            } else {
                &mut own_hooks
            };
            target.insert(file.display().to_string(), h);
        }
        if Some(&file) == project_file.as_ref() {
            let held = trust::split(&mut table, &merged);
            merge(&mut loaded.held.table, held);
        } else if table.contains_key("session_dir") {
            // The person's config.toml wins over any settings.json, the project's included.
            loaded.held.table.remove("session_dir");
        }
        merge(&mut merged, table);
        loaded.files.push(file);
    }
    if !own_hooks.is_empty() {
        merged.insert("hooks".into(), own_hooks.into());
    }
    if !project_hooks.is_empty() {
        loaded
            .held
            .table
            .insert("hooks".into(), project_hooks.into());
    }
    loaded.table = merged.clone();
    loaded.config = toml::Value::Table(merged)
        .try_into()
        .map_err(|e: toml::de::Error| invalid(&e))?;
    Ok(loaded)
}

/// Add one file's `hooks` (JSON) to `target`, keyed by the file.
fn add_hooks(
    target: &mut toml::Table,
    file: &Path,
    value: &serde_json::Value,
    warnings: &mut Vec<String>,
) {
    match toml::Value::try_from(without_nulls(value)) {
        Ok(v) => {
            target.insert(file.display().to_string(), v);
        }
        Err(e) => warnings.push(format!(
            "{}: its hooks cannot be read ({e}); ignored",
            file.display()
        )),
    }
}

fn without_nulls(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(
            a.iter()
                .filter(|v| !v.is_null())
                .map(without_nulls)
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Claude Code's settings files' hooks: the person's `~/.claude/settings.json`, and the
/// project's `.claude/settings.json` and `.claude/settings.local.json`. A file that is not
/// JSON is a warning here (it is Claude Code's, not pi's).
fn claude_hooks(
    cwd: &Path,
    own: &mut toml::Table,
    project: &mut toml::Table,
    warnings: &mut Vec<String>,
) {
    let mut files: Vec<(PathBuf, bool)> = Vec::new();
    let home = crate::paths::home();
    if let Some(h) = &home {
        files.push((h.join(".claude/settings.json"), false));
    }
    // In the home folder itself, `.claude/settings.json` is the person's own file.
    if home.as_deref() != Some(cwd) {
        files.push((cwd.join(".claude/settings.json"), true));
    }
    files.push((cwd.join(".claude/settings.local.json"), true));
    for (file, is_project) in files {
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(_) => continue,
        };
        let value: serde_json::Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => {
                warnings.push(format!(
                    "{}: not JSON ({e}); its hooks are not loaded",
                    file.display()
                ));
                continue;
            }
        };
        if let Some(h) = value.get("hooks") {
            let target = if is_project { &mut *project } else { &mut *own };
            add_hooks(target, &file, h, warnings);
        }
    }
}

impl Config {
    /// Every `dialect` set on a model: provider, model id, value.
    pub(crate) fn model_dialects(&self) -> Vec<(String, String, String)> {
        self.providers
            .iter()
            .flat_map(|(p, c)| {
                c.models
                    .iter()
                    .filter_map(move |m| Some((p.clone(), m.id.clone(), m.dialect.clone()?)))
            })
            .collect()
    }

    /// Add the configured providers and models to the catalogue.
    pub fn apply_to(&self, catalog: &mut Catalog) -> Result<(), String> {
        for (name, p) in &self.providers {
            let existing = catalog.provider(name).cloned();
            let api = match (&p.api, &existing) {
                (Some(a), _) => Api::parse(a).ok_or_else(|| {
                    format!(
                        "providers.{name}.api: unknown API `{a}` (expected anthropic-messages, openai-completions, openai-responses, azure-openai-responses or google-generative-ai)"
                    )
                })?,
                (None, Some(e)) => e.api,
                (None, None) => Api::OpenAiCompletions,
            };
            let base_url = match (&p.base_url, &existing) {
                (Some(u), _) => u.trim_end_matches('/').to_string(),
                (None, Some(e)) => e.base_url.clone(),
                (None, None) => {
                    return Err(format!("providers.{name}: a new provider needs `base_url`"));
                }
            };
            let info = ProviderInfo {
                id: name.clone(),
                api,
                base_url: base_url.clone(),
                key_env: existing.as_ref().and_then(|e| e.key_env.clone()),
                key: p
                    .key
                    .clone()
                    .or(existing.as_ref().and_then(|e| e.key.clone())),
                auth_key: existing.as_ref().and_then(|e| e.auth_key.clone()),
                models_key: existing.as_ref().and_then(|e| e.models_key.clone()),
                auth_header: existing.as_ref().is_some_and(|e| e.auth_header),
                // The headers it had (built in, or from `models.json`), config.toml's over them.
                headers: overlay_headers(
                    existing
                        .as_ref()
                        .map(|e| e.headers.clone())
                        .unwrap_or_default(),
                    &p.headers,
                ),
                compat: p
                    .compat
                    .clone()
                    .or(existing.as_ref().map(|e| e.compat.clone()))
                    .unwrap_or_default(),
                keyless: existing.as_ref().is_some_and(|e| e.keyless)
                    || (p.key.is_none() && is_local(&base_url)),
                signed_in: existing.as_ref().is_some_and(|e| e.signed_in),
            };
            catalog.upsert_provider(info.clone());
            for m in &p.models {
                if m.id.trim().is_empty() {
                    return Err(format!(
                        "providers.{name}.models: every model needs an `id`"
                    ));
                }
                let cost = m.cost.clone().unwrap_or_default();
                if m.context_window.is_some() {
                    catalog.mark_window_set(name, &m.id);
                }
                catalog.upsert_model(ModelInfo {
                    id: m.id.clone(),
                    name: m.name.clone().unwrap_or_else(|| m.id.clone()),
                    provider: name.clone(),
                    api,
                    base_url: base_url.clone(),
                    context_window: m
                        .context_window
                        .unwrap_or(crate::provider::catalog::DEFAULT_CONTEXT_WINDOW),
                    max_tokens: m
                        .max_tokens
                        .unwrap_or(crate::provider::catalog::DEFAULT_MAX_TOKENS),
                    reasoning: m.reasoning.unwrap_or(false),
                    images: m.images.unwrap_or(false),
                    pricing: Pricing {
                        input: cost.input,
                        output: cost.output,
                        cache_read: cost.cache_read,
                        cache_write: cost.cache_write,
                    },
                    headers: info.headers.clone(),
                    compat: info.compat.clone(),
                });
            }
        }
        Ok(())
    }
}

/// `base` with the headers of `over` laid on it: one of the same name (in any case) is replaced.
pub(crate) fn overlay_headers(
    mut base: Vec<(String, String)>,
    over: &BTreeMap<String, String>,
) -> Vec<(String, String)> {
    for (k, v) in over {
        base.retain(|(name, _)| !name.eq_ignore_ascii_case(k));
        base.push((k.clone(), v.clone()));
    }
    base
}

pub(crate) fn is_local(url: &str) -> bool {
    let rest = url.split("://").nth(1).unwrap_or(url);
    rest.starts_with("127.") || rest.starts_with("localhost") || rest.starts_with("[::1]")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn temp() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "pi-config-test-{}-{}",
            std::process::id(),
            crate::agent::protocol::types::now_ms() + rand_suffix()
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn rand_suffix() -> i64 {
        use std::sync::atomic::{AtomicI64, Ordering};
        static N: AtomicI64 = AtomicI64::new(0);
        N.fetch_add(1, Ordering::SeqCst)
    }

    #[test]
    fn project_overrides_agent_key_by_key_and_unknown_keys_warn() {
        let d = temp();
        write(
            &d,
            "agent/config.toml",
            "model = \"anthropic/claude-haiku-4-5\"\nthinking = \"low\"\ncolour = 1\n[retry]\nmax_retries = 5\n",
        );
        write(
            &d,
            "proj/.pi/config.toml",
            "thinking = \"high\"\n[retry]\nbase_delay_ms = 10\n",
        );
        let l = load(Some(&d.join("agent")), &d.join("proj")).unwrap();
        assert_eq!(
            l.config.model.as_deref(),
            Some("anthropic/claude-haiku-4-5")
        );
        assert_eq!(l.config.thinking.as_deref(), Some("high"));
        assert_eq!(l.config.retry.max_retries, Some(5));
        assert_eq!(l.config.retry.base_delay_ms, Some(10));
        assert_eq!(l.warnings.len(), 1);
        assert!(l.warnings[0].contains("colour"));
    }

    #[test]
    fn a_projects_reaching_settings_are_held_until_applied() {
        let d = temp();
        write(
            &d,
            "agent/config.toml",
            "session_dir = \"/mine\"\n[providers.lab]\napi = \"openai-completions\"\nbase_url = \"http://127.0.0.1:1/v1\"\n",
        );
        write(
            &d,
            "proj/.pi/settings.json",
            r#"{"sessionDir": "/theirs", "defaultThinkingLevel": "high"}"#,
        );
        write(
            &d,
            "proj/.pi/config.toml",
            "[providers.lab]\nbase_url = \"http://elsewhere/v1\"\n[mcp_servers.m]\ncommand = \"x\"\n",
        );
        let mut l = load(Some(&d.join("agent")), &d.join("proj")).unwrap();
        assert_eq!(
            l.config.thinking.as_deref(),
            Some("high"),
            "harmless: applied"
        );
        assert_eq!(l.config.session_dir.as_deref(), Some("/mine"));
        assert!(l.config.mcp_servers.is_empty());
        assert_eq!(
            l.config.providers["lab"].base_url.as_deref(),
            Some("http://127.0.0.1:1/v1")
        );
        assert_eq!(l.held.folder, d.join("proj"));
        assert_eq!(l.held.describe().len(), 2, "{:?}", l.held.describe());
        l.apply_held().unwrap();
        assert_eq!(
            l.config.session_dir.as_deref(),
            Some("/mine"),
            "config.toml wins over settings.json"
        );
        assert!(l.config.mcp_servers.contains_key("m"));
        let lab = &l.config.providers["lab"];
        assert_eq!(lab.base_url.as_deref(), Some("http://elsewhere/v1"));
        assert_eq!(
            lab.api.as_deref(),
            Some("openai-completions"),
            "merged key by key"
        );
        // Without a session_dir of the person's own, the project's settings.json one is held.
        write(&d, "agent/config.toml", "");
        let mut l = load(Some(&d.join("agent")), &d.join("proj")).unwrap();
        assert_eq!(l.config.session_dir, None);
        l.apply_held().unwrap();
        assert_eq!(l.config.session_dir.as_deref(), Some("/theirs"));
    }

    #[test]
    fn compaction_settings_come_from_both_files_with_defaults_for_the_rest() {
        let d = temp();
        write(
            &d,
            "agent/config.toml",
            "[compaction]\nreserve_tokens = 8000\nkeep_recent = 1\n",
        );
        write(
            &d,
            "proj/.pi/config.toml",
            "[compaction]\nkeep_recent_tokens = 5000\nenabled = false\n",
        );
        let l = load(Some(&d.join("agent")), &d.join("proj")).unwrap();
        let s = l.config.compaction.settings();
        assert!(!s.enabled);
        assert_eq!((s.reserve_tokens, s.keep_recent_tokens), (8000, 5000));
        assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
        assert!(l.warnings[0].contains("compaction.keep_recent"));
        let defaults = Config::default().compaction.settings();
        assert!(defaults.enabled);
        assert_eq!(
            (defaults.reserve_tokens, defaults.keep_recent_tokens),
            (16_384, 20_000)
        );
    }

    #[test]
    fn queue_modes_parse() {
        use crate::agent::protocol::command::QueueMode;
        assert_eq!(queue_mode(None, "k").unwrap(), QueueMode::OneAtATime);
        assert_eq!(queue_mode(Some("all"), "k").unwrap(), QueueMode::All);
        assert!(
            queue_mode(Some("some"), "steering_mode")
                .unwrap_err()
                .contains("steering_mode")
        );
    }

    #[test]
    fn syntax_errors_name_file_line_and_column() {
        let d = temp();
        write(&d, "agent/config.toml", "model = \"a\"\nthinking = = 3\n");
        let e = load(Some(&d.join("agent")), &d).unwrap_err().to_string();
        assert!(e.contains("config.toml:2:"), "{e}");
        let d = temp();
        write(&d, "agent/config.toml", "idle_timeout_secs = \"soon\"\n");
        assert!(
            load(Some(&d.join("agent")), &d)
                .unwrap_err()
                .to_string()
                .contains("idle_timeout_secs")
        );
    }

    #[test]
    fn tool_limits_parse_and_default() {
        let d = temp();
        write(
            &d,
            "agent/config.toml",
            "[tools]\nmax_lines = 5\nmax_bytes = 300\ngrep_limit = 7\n",
        );
        write(&d, "proj/.pi/config.toml", "[tools]\nls_limit = 9\n");
        let l = load(Some(&d.join("agent")), &d.join("proj")).unwrap();
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        let limits = l.config.tools.limits();
        assert_eq!(limits.max_lines, 5);
        assert_eq!(limits.max_bytes, 300);
        assert_eq!(limits.grep_limit, 7);
        assert_eq!(limits.ls_limit, 9);
        let d0 = crate::tools::ToolLimits::default();
        assert_eq!(limits.find_limit, d0.find_limit);
        assert_eq!(limits.grep_max_line_chars, d0.grep_max_line_chars);
        assert_eq!(Config::default().tools.limits(), d0);
    }

    #[test]
    fn bad_tool_limits_name_the_key_line_and_column() {
        for (text, line) in [
            ("model = \"a/b\"\n[tools]\nmax_lines = 0\n", 3),
            ("[tools]\nfind_limit = 10\nmax_bytes = -5\n", 3),
            ("[tools]\n\ngrep_limit = \"many\"\n", 3),
        ] {
            let d = temp();
            write(&d, "agent/config.toml", text);
            let e = load(Some(&d.join("agent")), &d).unwrap_err().to_string();
            assert!(e.contains(&format!("config.toml:{line}:")), "{e}");
            let key = text
                .lines()
                .nth(line - 1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap();
            assert!(e.contains(key), "{e}");
        }
        let d = temp();
        write(&d, "agent/config.toml", "[tools]\nmax_lines = 0\n");
        let e = load(Some(&d.join("agent")), &d).unwrap_err().to_string();
        assert!(e.contains("at least 1"), "{e}");
        let d = temp();
        write(&d, "agent/config.toml", "[tools]\nmax_line = 10\n");
        let l = load(Some(&d.join("agent")), &d).unwrap();
        assert!(l.warnings[0].contains("tools.max_line"), "{:?}", l.warnings);
    }

    #[test]
    fn sandbox_keys_merge_and_bad_values_name_the_line() {
        use crate::tools::sandbox::{Fallback, SandboxMode};
        let d = temp();
        write(
            &d,
            "agent/config.toml",
            "sandbox = \"workspace-write\"\nsandbox_fallback = \"warn\"\n",
        );
        write(&d, "proj/.pi/config.toml", "sandbox = \"read-only\"\n");
        let l = load(Some(&d.join("agent")), &d.join("proj")).unwrap();
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        assert_eq!(l.config.sandbox, Some(SandboxMode::ReadOnly));
        assert_eq!(l.config.sandbox_fallback, Some(Fallback::Warn));
        let d = temp();
        write(
            &d,
            "agent/config.toml",
            "model = \"a/b\"\nsandbox = \"strict\"\n",
        );
        let e = load(Some(&d.join("agent")), &d).unwrap_err().to_string();
        assert!(
            e.contains("config.toml:2:") && e.contains("read-only"),
            "{e}"
        );
        let d = temp();
        write(&d, "agent/config.toml", "sandbox_fallback = \"ignore\"\n");
        let e = load(Some(&d.join("agent")), &d).unwrap_err().to_string();
        assert!(e.contains("config.toml:1:") && e.contains("refuse"), "{e}");
    }

    #[test]
    fn theme_and_colour_overrides_parse() {
        use theme::{ColorValue, Named};
        let d = temp();
        write(
            &d,
            "agent/config.toml",
            "theme = \"light\"\n[colors]\naccent = \"#102030\"\nerror = 196\nlink = \"light blue\"\n",
        );
        write(
            &d,
            "proj/.pi/config.toml",
            "[colors]\ndim = \"245\"\naccnet = \"red\"\n",
        );
        let l = load(Some(&d.join("agent")), &d.join("proj")).unwrap();
        assert_eq!(l.config.theme.as_deref(), Some("light"));
        let c = &l.config.colors;
        assert_eq!(c["accent"], ColorValue::Rgb(0x10, 0x20, 0x30));
        assert_eq!(c["error"], ColorValue::Indexed(196));
        assert_eq!(c["link"], ColorValue::Named(Named::LightBlue));
        assert_eq!(c["dim"], ColorValue::Indexed(245));
        assert!(!c.contains_key("success"));
        assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
        assert!(l.warnings[0].contains("colors.accnet"), "{:?}", l.warnings);
    }

    #[test]
    fn bad_themes_and_colours_name_line_and_column() {
        let d = temp();
        // Any name: a theme file may give it (the UI says so when none does).
        write(&d, "agent/config.toml", "theme = \"solarized\"\n");
        let l = load(Some(&d.join("agent")), &d).unwrap();
        assert_eq!(l.config.theme.as_deref(), Some("solarized"));
        let d = temp();
        write(&d, "agent/config.toml", "model = \"a/b\"\ntheme = 7\n");
        let e = load(Some(&d.join("agent")), &d).unwrap_err().to_string();
        assert!(e.contains("config.toml:2:9"), "{e}");
        let d = temp();
        write(&d, "agent/config.toml", "[colors]\n\ncode = \"blurple\"\n");
        let e = load(Some(&d.join("agent")), &d).unwrap_err().to_string();
        assert!(e.contains("config.toml:3:8"), "{e}");
        assert!(e.contains("blurple") && e.contains("#rrggbb"), "{e}");
        let d = temp();
        write(&d, "agent/config.toml", "[colors]\ncode = 300\n");
        let e = load(Some(&d.join("agent")), &d).unwrap_err().to_string();
        assert!(e.contains("config.toml:2:8") && e.contains("300"), "{e}");
    }

    #[test]
    fn custom_providers_and_models_join_the_catalogue() {
        let text = r#"
[providers.lab]
api = "openai-completions"
base_url = "http://127.0.0.1:9999/v1/"
headers = { "X-Team" = "core" }
[[providers.lab.models]]
id = "coder-7b"
context_window = 32768
cost = { input = 0.1, output = 0.2 }

[providers.anthropic]
base_url = "http://gateway.local"
"#;
        let table = parse_file(text, Path::new("c.toml")).unwrap();
        let cfg: Config = toml::Value::Table(table).try_into().unwrap();
        let mut cat = Catalog::builtin(&|_| None);
        cfg.apply_to(&mut cat).unwrap();
        let m = cat.find("lab", "coder-7b").unwrap();
        assert_eq!(m.base_url, "http://127.0.0.1:9999/v1");
        assert_eq!(m.context_window, 32768);
        assert_eq!(m.headers, [("X-Team".to_string(), "core".to_string())]);
        assert!(cat.provider("lab").unwrap().keyless);
        assert_eq!(
            cat.find("anthropic", "claude-opus-4-5").unwrap().base_url,
            "http://gateway.local"
        );

        let bad: Config =
            toml::from_str("[providers.x]\napi = \"smoke\"\nbase_url = \"http://a\"\n").unwrap();
        assert!(bad.apply_to(&mut cat).unwrap_err().contains("unknown API"));
        let bad: Config = toml::from_str("[providers.y]\napi = \"openai-completions\"\n").unwrap();
        assert!(bad.apply_to(&mut cat).unwrap_err().contains("base_url"));
    }
}

/// config.example.toml with every documented key uncommented (for tests).
#[cfg(test)]
pub(crate) fn uncommented_example() -> String {
    include_str!("../../config.example.toml")
        .lines()
        .map(|l| {
            let t = l.trim_start();
            match t.strip_prefix("# ") {
                Some(rest) if rest.contains(" = ") || rest.starts_with('[') => {
                    rest.split("   #").next().unwrap_or(rest).to_string()
                }
                _ => l.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod example_tests {
    use super::*;

    /// Every key in config.example.toml, uncommented, parses without warnings.
    #[test]
    fn the_example_config_documents_real_keys() {
        let uncommented = uncommented_example();
        // The two provider examples and the base settings are independent: parse all at once.
        let table = parse_file(&uncommented, Path::new("example")).unwrap();
        let mut warnings = Vec::new();
        check_keys(&table, Path::new("example"), &mut warnings);
        assert!(warnings.is_empty(), "{warnings:?}");
        let cfg: Config = toml::from_str(&uncommented).unwrap();
        assert_eq!(cfg.retry.max_retries, Some(3));
        assert_eq!(
            cfg.max_repeated_tool_turns,
            Some(crate::agent::protocol::command::DEFAULT_MAX_REPEATED_TOOL_TURNS)
        );
        assert_eq!(cfg.theme.as_deref(), Some("dark"));
        // The documented interactive settings are the defaults.
        assert_eq!(cfg.notify, Some(interactive::NotifyMode::default()));
        assert_eq!(cfg.tui.fullscreen, Some(false));
        // The documented sandbox values are the defaults.
        assert_eq!(cfg.sandbox, Some(Default::default()));
        assert_eq!(cfg.sandbox_fallback, Some(Default::default()));
        // The documented numbers are the real defaults.
        assert_eq!(cfg.tools.limits(), crate::tools::ToolLimits::default());
        assert_eq!(
            cfg.idle_timeout_secs.map(std::time::Duration::from_secs),
            Some(crate::provider::DEFAULT_IDLE_TIMEOUT)
        );
        assert_eq!(
            cfg.response_timeout_secs
                .map(std::time::Duration::from_secs),
            Some(crate::provider::DEFAULT_RESPONSE_TIMEOUT)
        );
        let mut cat = Catalog::builtin(&|_| None);
        cfg.apply_to(&mut cat).unwrap();
        assert!(cat.find("lab", "qwen2.5-coder:32b").is_some());
    }
}
