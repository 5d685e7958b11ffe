//! Hook settings in Claude Code's shape, read from any of the files that may hold them:
//!
//! ```json
//! {"PreToolUse": [{"matcher": "Bash|Write", "hooks": [{"type": "command", "command": "…", "timeout": 30}]}]}
//! ```
//!
//! config.toml writes the same as `[[hooks.PreToolUse]]` tables. A hook of another `type`
//! than `command`, an event pi does not know, or a matcher that is not a valid regular
//! expression is a warning and is left out; the rest still load.

use std::time::Duration;

use serde_json::Value;

/// A hook's time limit when it names none (Claude Code's default).
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The moments a hook can run at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Event {
    PreToolUse,
    PostToolUse,
    UserPromptSubmit,
    Stop,
    SubagentStop,
    SessionStart,
    SessionEnd,
    PreCompact,
    Notification,
}

impl Event {
    pub const ALL: [Event; 9] = [
        Event::PreToolUse,
        Event::PostToolUse,
        Event::UserPromptSubmit,
        Event::Stop,
        Event::SubagentStop,
        Event::SessionStart,
        Event::SessionEnd,
        Event::PreCompact,
        Event::Notification,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Event::PreToolUse => "PreToolUse",
            Event::PostToolUse => "PostToolUse",
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::Stop => "Stop",
            Event::SubagentStop => "SubagentStop",
            Event::SessionStart => "SessionStart",
            Event::SessionEnd => "SessionEnd",
            Event::PreCompact => "PreCompact",
            Event::Notification => "Notification",
        }
    }

    fn parse(name: &str) -> Option<Event> {
        Event::ALL.into_iter().find(|e| e.name() == name)
    }
}

/// What a group's `matcher` accepts: tool names (for the tool events), or the source, trigger
/// or reason the other events carry.
#[derive(Clone, Debug)]
pub(crate) enum Matcher {
    /// No matcher, `""` or `"*"`.
    All,
    /// Plain names, `A|B`: one of them exactly.
    Names(Vec<String>),
    /// Anything else: a regular expression the whole name must match.
    Pattern(regex::Regex),
}

impl Matcher {
    fn parse(text: &str) -> Result<Matcher, String> {
        let t = text.trim();
        if t.is_empty() || t == "*" {
            return Ok(Matcher::All);
        }
        if t.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '|')
        {
            return Ok(Matcher::Names(
                t.split('|')
                    .map(str::to_string)
                    .filter(|s| !s.is_empty())
                    .collect(),
            ));
        }
        regex::Regex::new(&format!("^(?:{t})$"))
            .map(Matcher::Pattern)
            .map_err(|e| format!("the matcher `{t}` is not a regular expression ({e})"))
    }

    /// Whether any of `names` (one thing under its several names) is accepted.
    pub(crate) fn accepts(&self, names: &[&str]) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Names(list) => names.iter().any(|n| list.iter().any(|l| l == n)),
            Matcher::Pattern(re) => names.iter().any(|n| re.is_match(n)),
        }
    }
}

/// One command to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookCommand {
    pub command: String,
    pub timeout: Duration,
    /// `fail = "closed"`: a `PreToolUse` hook that crashes, times out or cannot start blocks
    /// the call instead of letting it through.
    pub fail_closed: bool,
    /// The file it was written in (named in notices).
    pub source: String,
}

/// A matcher and the commands it runs.
#[derive(Clone, Debug)]
pub(crate) struct Group {
    pub event: Event,
    pub matcher: Matcher,
    pub commands: Vec<HookCommand>,
}

/// The groups of one file's `hooks` value, and a warning for each part left out.
pub(crate) fn parse(value: &Value, source: &str) -> (Vec<Group>, Vec<String>) {
    let mut groups = Vec::new();
    let mut warnings = Vec::new();
    let Some(events) = value.as_object() else {
        warnings.push(format!(
            "{source}: `hooks` should map event names to lists; ignored"
        ));
        return (groups, warnings);
    };
    for (name, list) in events {
        let Some(event) = Event::parse(name) else {
            warnings.push(format!(
                "{source}: hooks for `{name}` are not run by pi (it runs {}); ignored",
                Event::ALL.map(Event::name).join(", ")
            ));
            continue;
        };
        let Some(list) = list.as_array() else {
            warnings.push(format!(
                "{source}: hooks.{name} should be a list of matcher groups; ignored"
            ));
            continue;
        };
        for g in list {
            match group(event, g, source) {
                Ok((group, mut problems)) => {
                    warnings.append(&mut problems);
                    if !group.commands.is_empty() {
                        groups.push(group);
                    }
                }
                Err(why) => warnings.push(format!("{source}: hooks.{name}: {why}; ignored")),
            }
        }
    }
    (groups, warnings)
}

fn group(event: Event, value: &Value, source: &str) -> Result<(Group, Vec<String>), String> {
    let matcher = match value.get("matcher") {
        None | Some(Value::Null) => Matcher::All,
        Some(Value::String(s)) => Matcher::parse(s)?,
        Some(_) => return Err("`matcher` should be text".into()),
    };
    let hooks = value
        .get("hooks")
        .and_then(Value::as_array)
        .ok_or("a group needs a `hooks` list")?;
    let mut commands = Vec::new();
    let mut problems = Vec::new();
    for h in hooks {
        let kind = h.get("type").and_then(Value::as_str).unwrap_or("command");
        if kind != "command" {
            problems.push(format!(
                "{source}: hooks.{}: a `{kind}` hook cannot run in pi (only `command` hooks do); ignored",
                event.name()
            ));
            continue;
        }
        let Some(command) = h
            .get("command")
            .and_then(Value::as_str)
            .filter(|c| !c.trim().is_empty())
        else {
            problems.push(format!(
                "{source}: hooks.{}: a hook without a `command`; ignored",
                event.name()
            ));
            continue;
        };
        let timeout = h
            .get("timeout")
            .and_then(Value::as_f64)
            .filter(|t| t.is_finite() && *t > 0.0)
            .map_or(DEFAULT_TIMEOUT, |t| {
                Duration::from_secs_f64(t.min(86_400.0))
            });
        let fail_closed = h.get("fail").and_then(Value::as_str) == Some("closed");
        commands.push(HookCommand {
            command: command.to_string(),
            timeout,
            fail_closed,
            source: source.to_string(),
        });
    }
    Ok((
        Group {
            event,
            matcher,
            commands,
        },
        problems,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matchers_exact_alternatives_patterns_and_all() {
        let m = |t: &str| Matcher::parse(t).unwrap();
        assert!(m("Bash").accepts(&["Bash", "bash"]));
        assert!(!m("Bash").accepts(&["BashOutput"]));
        assert!(m("Edit|Write").accepts(&["Write"]));
        assert!(m("edit").accepts(&["Edit", "edit"]));
        assert!(m("mcp__github__.*").accepts(&["mcp__github__search"]));
        assert!(!m("mcp__github__.*").accepts(&["mcp__gitlab__search"]));
        assert!(m("Notebook.*").accepts(&["NotebookEdit"]));
        assert!(m("*").accepts(&["anything"]));
        assert!(m("").accepts(&["anything"]));
        assert!(Matcher::parse("(unclosed").is_err());
    }

    #[test]
    fn settings_load_with_warnings_for_what_cannot_run() {
        let value = json!({
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [
                    {"type": "command", "command": "./guard.sh", "timeout": 5, "fail": "closed"},
                    {"type": "prompt", "prompt": "is this ok?"}
                ]},
                {"matcher": "(bad", "hooks": [{"type": "command", "command": "x"}]}
            ],
            "Stop": [{"hooks": [{"command": "./done.sh"}]}],
            "PermissionRequest": [{"hooks": [{"type": "command", "command": "x"}]}]
        });
        let (groups, warnings) = parse(&value, "settings.json");
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].event, Event::PreToolUse);
        let c = &groups[0].commands[0];
        assert_eq!(c.timeout, Duration::from_secs(5));
        assert!(c.fail_closed);
        assert_eq!(groups[1].commands[0].timeout, DEFAULT_TIMEOUT);
        let all = warnings.join("\n");
        assert!(all.contains("`prompt` hook"), "{all}");
        assert!(all.contains("not a regular expression"), "{all}");
        assert!(all.contains("PermissionRequest"), "{all}");
        assert_eq!(warnings.len(), 3);
    }
}
