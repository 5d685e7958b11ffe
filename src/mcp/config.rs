//! `[mcp_servers.NAME]` tables of `config.toml`, read the way Codex reads them.
//!
//! A stdio server has `command` (with `args`, `env`, `cwd`); a streamable-HTTP server has `url`
//! (with `bearer_token_env_var` and `http_headers`). Both take `enabled`, `startup_timeout_sec`
//! (default 10), `tool_timeout_sec` (default 60), `max_reply_bytes` (default 16 MiB: a longer
//! reply fails its call at once), `enabled_tools` and `disabled_tools`.
//!
//! The tables arrive as raw TOML values (the config loader does not type-check them), so a
//! mistake in one server never stops pi: that server is left out, or the bad key ignored, and a
//! warning says which and why.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Seconds a server may take to start and list its tools, unless configured.
pub(crate) const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// Seconds a tool call may take, unless configured.
pub(crate) const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);
/// The largest reply (one JSON-RPC message) a server may send, unless configured.
pub(crate) const DEFAULT_MAX_REPLY_BYTES: usize = super::reply_limit::DEFAULT_MAX_REPLY_BYTES;

/// How pi talks to a server.
#[derive(Clone, Debug, PartialEq)]
pub enum Transport {
    /// A child process speaking JSON-RPC lines on its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Set on top of the environment the coding tools get.
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP at `url`.
    Http {
        url: String,
        /// The variable holding a token sent as `Authorization: Bearer …`.
        bearer_token_env_var: Option<String>,
        headers: BTreeMap<String, String>,
    },
}

/// One configured server.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerConfig {
    pub name: String,
    pub transport: Transport,
    pub enabled: bool,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    /// The largest reply the server may send, in bytes.
    pub max_reply_bytes: usize,
    /// Only these tools (by the server's own names), when given.
    pub enabled_tools: Option<Vec<String>>,
    /// Never these tools.
    pub disabled_tools: Vec<String>,
}

impl ServerConfig {
    /// Whether the server's tool `name` is offered to the model.
    pub(crate) fn allows(&self, name: &str) -> bool {
        self.enabled_tools
            .as_ref()
            .is_none_or(|only| only.iter().any(|t| t == name))
            && !self.disabled_tools.iter().any(|t| t == name)
    }

    /// A short description of where the server is (for `/mcp`).
    pub(crate) fn endpoint(&self) -> String {
        match &self.transport {
            Transport::Stdio { command, args, .. } => {
                let mut s = command.clone();
                for a in args {
                    s.push(' ');
                    s.push_str(a);
                }
                s
            }
            Transport::Http { url, .. } => url.clone(),
        }
    }
}

const KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "bearer_token_env_var",
    "http_headers",
    "enabled",
    "startup_timeout_sec",
    "tool_timeout_sec",
    "max_reply_bytes",
    "enabled_tools",
    "disabled_tools",
];

/// The servers of `[mcp_servers]`, in name order, and a warning for each problem found.
pub fn parse(raw: &BTreeMap<String, toml::Value>) -> (Vec<ServerConfig>, Vec<String>) {
    let mut servers = Vec::new();
    let mut warnings = Vec::new();
    for (name, value) in raw {
        match parse_one(name, value, &mut warnings) {
            Ok(s) => servers.push(s),
            Err(why) => warnings.push(format!("mcp_servers.{name}: {why}; server left out")),
        }
    }
    (servers, warnings)
}

fn parse_one(
    name: &str,
    value: &toml::Value,
    warnings: &mut Vec<String>,
) -> Result<ServerConfig, String> {
    let toml::Value::Table(t) = value else {
        return Err("expected a table".into());
    };
    if name.trim().is_empty() {
        return Err("a server needs a name".into());
    }
    for k in t.keys() {
        if !KEYS.contains(&k.as_str()) {
            warnings.push(format!("mcp_servers.{name}: unknown key `{k}` (ignored)"));
        }
    }
    let mut warn = |key: &str, why: &str| {
        warnings.push(format!("mcp_servers.{name}.{key}: {why} (ignored)"));
    };
    let command = string(t, "command")?;
    let url = string(t, "url")?;
    let transport = match (command, url) {
        (Some(_), Some(_)) => return Err("give either `command` or `url`, not both".into()),
        (None, None) => return Err("needs `command` (stdio) or `url` (streamable HTTP)".into()),
        (Some(command), None) => {
            for key in ["bearer_token_env_var", "http_headers"] {
                if t.contains_key(key) {
                    warn(key, "only for a `url` server");
                }
            }
            if command.trim().is_empty() {
                return Err("`command` is empty".into());
            }
            Transport::Stdio {
                command,
                args: strings(t, "args")?.unwrap_or_default(),
                env: string_map(t, "env")?,
                cwd: string(t, "cwd")?.map(PathBuf::from),
            }
        }
        (None, Some(url)) => {
            for key in ["args", "env", "cwd"] {
                if t.contains_key(key) {
                    warn(key, "only for a `command` server");
                }
            }
            let lower = url.to_ascii_lowercase();
            if !(lower.starts_with("http://") || lower.starts_with("https://")) {
                return Err(format!(
                    "`url` must start with http:// or https://, not `{url}`"
                ));
            }
            Transport::Http {
                url,
                bearer_token_env_var: string(t, "bearer_token_env_var")?,
                headers: string_map(t, "http_headers")?,
            }
        }
    };
    let enabled = match t.get("enabled") {
        None => true,
        Some(toml::Value::Boolean(b)) => *b,
        Some(_) => return Err("`enabled` must be true or false".into()),
    };
    Ok(ServerConfig {
        name: name.to_string(),
        transport,
        enabled,
        startup_timeout: seconds(t, "startup_timeout_sec")?.unwrap_or(DEFAULT_STARTUP_TIMEOUT),
        tool_timeout: seconds(t, "tool_timeout_sec")?.unwrap_or(DEFAULT_TOOL_TIMEOUT),
        max_reply_bytes: bytes(t, "max_reply_bytes")?.unwrap_or(DEFAULT_MAX_REPLY_BYTES),
        enabled_tools: strings(t, "enabled_tools")?,
        disabled_tools: strings(t, "disabled_tools")?.unwrap_or_default(),
    })
}

fn string(t: &toml::Table, key: &str) -> Result<Option<String>, String> {
    match t.get(key) {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!(
            "`{key}` must be a string, not {}",
            other.type_str()
        )),
    }
}

fn strings(t: &toml::Table, key: &str) -> Result<Option<Vec<String>>, String> {
    match t.get(key) {
        None => Ok(None),
        Some(toml::Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                toml::Value::String(s) => Ok(s.clone()),
                other => Err(format!(
                    "`{key}` must be a list of strings (found {})",
                    other.type_str()
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(other) => Err(format!(
            "`{key}` must be a list of strings, not {}",
            other.type_str()
        )),
    }
}

fn string_map(t: &toml::Table, key: &str) -> Result<BTreeMap<String, String>, String> {
    match t.get(key) {
        None => Ok(BTreeMap::new()),
        Some(toml::Value::Table(m)) => m
            .iter()
            .map(|(k, v)| match v {
                toml::Value::String(s) => Ok((k.clone(), s.clone())),
                other => Err(format!(
                    "`{key}.{k}` must be a string, not {}",
                    other.type_str()
                )),
            })
            .collect(),
        Some(other) => Err(format!("`{key}` must be a table, not {}", other.type_str())),
    }
}

/// A byte count of at least 1 KiB.
fn bytes(t: &toml::Table, key: &str) -> Result<Option<usize>, String> {
    match t.get(key) {
        None => Ok(None),
        Some(toml::Value::Integer(n)) if *n >= 1024 => usize::try_from(*n)
            .map(Some)
            .map_err(|_| format!("`{key}` is too large")),
        Some(toml::Value::Integer(n)) => Err(format!(
            "`{key}` must be a number of bytes of at least 1024, not {n}"
        )),
        Some(other) => Err(format!(
            "`{key}` must be a number of bytes, not {}",
            other.type_str()
        )),
    }
}

fn seconds(t: &toml::Table, key: &str) -> Result<Option<Duration>, String> {
    let secs = match t.get(key) {
        None => return Ok(None),
        Some(toml::Value::Integer(n)) => *n as f64,
        Some(toml::Value::Float(f)) => *f,
        Some(other) => {
            return Err(format!(
                "`{key}` must be a number of seconds, not {}",
                other.type_str()
            ));
        }
    };
    if !secs.is_finite() || secs <= 0.0 || secs > 86_400.0 {
        return Err(format!(
            "`{key}` must be more than 0 and at most 86400 seconds, not {secs}"
        ));
    }
    Ok(Some(Duration::from_secs_f64(secs)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers(text: &str) -> (Vec<ServerConfig>, Vec<String>) {
        let table: toml::Table = text.parse().unwrap();
        let raw: BTreeMap<String, toml::Value> = match table.get("mcp_servers") {
            Some(toml::Value::Table(t)) => t.clone().into_iter().collect(),
            _ => BTreeMap::new(),
        };
        parse(&raw)
    }

    #[test]
    fn stdio_and_http_servers_parse_with_defaults() {
        let (s, w) = servers(
            r#"
[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-server"]
env = { TOKEN = "x" }
cwd = "/tmp"
enabled_tools = ["search"]

[mcp_servers.remote]
url = "https://example.com/mcp"
bearer_token_env_var = "REMOTE_TOKEN"
http_headers = { "X-Team" = "core" }
startup_timeout_sec = 2.5
tool_timeout_sec = 5
max_reply_bytes = 1048576
disabled_tools = ["delete"]
enabled = false
"#,
        );
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(s.len(), 2);
        let docs = &s[0];
        assert_eq!(docs.name, "docs");
        assert!(docs.enabled);
        assert_eq!(docs.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
        assert_eq!(docs.tool_timeout, DEFAULT_TOOL_TIMEOUT);
        assert_eq!(docs.max_reply_bytes, DEFAULT_MAX_REPLY_BYTES);
        assert!(docs.allows("search") && !docs.allows("other"));
        assert_eq!(docs.endpoint(), "npx -y docs-server");
        let Transport::Stdio { env, cwd, .. } = &docs.transport else {
            panic!("stdio expected")
        };
        assert_eq!(env["TOKEN"], "x");
        assert_eq!(cwd.as_deref(), Some(std::path::Path::new("/tmp")));
        let remote = &s[1];
        assert!(!remote.enabled);
        assert_eq!(remote.startup_timeout, Duration::from_millis(2500));
        assert_eq!(remote.tool_timeout, Duration::from_secs(5));
        assert_eq!(remote.max_reply_bytes, 1_048_576);
        assert!(remote.allows("search") && !remote.allows("delete"));
        let Transport::Http {
            bearer_token_env_var,
            headers,
            ..
        } = &remote.transport
        else {
            panic!("http expected")
        };
        assert_eq!(bearer_token_env_var.as_deref(), Some("REMOTE_TOKEN"));
        assert_eq!(headers["X-Team"], "core");
    }

    #[test]
    fn the_example_config_servers_parse_cleanly() {
        let (s, w) = servers(&crate::config::uncommented_example());
        assert!(w.is_empty(), "{w:?}");
        let names: Vec<&str> = s.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["docs", "tracker"]);
        assert_eq!(s[0].startup_timeout, DEFAULT_STARTUP_TIMEOUT);
        assert_eq!(s[0].tool_timeout, DEFAULT_TOOL_TIMEOUT);
        assert_eq!(s[0].max_reply_bytes, DEFAULT_MAX_REPLY_BYTES);
    }

    #[test]
    fn mistakes_are_warnings_never_failures() {
        let (s, w) = servers(
            r#"
[mcp_servers]
plain = 3
[mcp_servers.both]
command = "a"
url = "http://b"
[mcp_servers.neither]
args = []
[mcp_servers.badtype]
command = 7
[mcp_servers.badtimeout]
command = "x"
startup_timeout_sec = -1
[mcp_servers.badurl]
url = "ftp://x"
[mcp_servers.badsize]
command = "x"
max_reply_bytes = 0
[mcp_servers.typo]
command = "x"
comand = "y"
url_headers = 1
bearer_token_env_var = "T"
[mcp_servers.badlist]
command = "x"
enabled_tools = "all"
"#,
        );
        let names: Vec<&str> = s.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["typo"]);
        let all = w.join("\n");
        for needle in [
            "mcp_servers.plain: expected a table",
            "mcp_servers.both: give either",
            "mcp_servers.neither: needs `command`",
            "mcp_servers.badtype: `command` must be a string",
            "mcp_servers.badtimeout: `startup_timeout_sec`",
            "mcp_servers.badurl: `url` must start",
            "mcp_servers.badsize: `max_reply_bytes` must be a number of bytes of at least 1024",
            "mcp_servers.typo: unknown key `comand`",
            "mcp_servers.typo: unknown key `url_headers`",
            "mcp_servers.typo.bearer_token_env_var: only for a `url` server",
            "mcp_servers.badlist: `enabled_tools` must be a list",
        ] {
            assert!(all.contains(needle), "missing {needle}:\n{all}");
        }
    }
}
