//! Claude Code's names for pi's tools (`bash` is `Bash`, `find` is `Glob`), for what people
//! bring from it: hook matchers and inputs, agent definitions' `tools`, commands'
//! `allowed-tools`. MCP tools are `mcp__server__tool` in both.

/// pi's name and Claude Code's, one pair per tool.
const NAMES: &[(&str, &str)] = &[
    ("bash", "Bash"),
    ("edit", "Edit"),
    ("write", "Write"),
    ("read", "Read"),
    ("grep", "Grep"),
    ("find", "Glob"),
    ("ls", "LS"),
    ("task", "Task"),
];

/// Other names of Claude Code's that stand for one of pi's tools.
const ALIASES: &[(&str, &str)] = &[("MultiEdit", "edit"), ("Agent", "task")];

/// Claude Code's name for `tool` (the name itself when Claude Code has none of its own).
pub fn claude_name(tool: &str) -> &str {
    NAMES
        .iter()
        .find(|(pi, _)| *pi == tool)
        .map_or(tool, |(_, claude)| claude)
}

/// pi's tool for one of Claude Code's names, `None` when pi has no such tool under it.
pub fn pi_name(claude: &str) -> Option<&'static str> {
    NAMES
        .iter()
        .find(|(_, c)| *c == claude)
        .map(|(pi, _)| *pi)
        .or_else(|| {
            ALIASES
                .iter()
                .find(|(c, _)| *c == claude)
                .map(|(_, pi)| *pi)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_ways() {
        assert_eq!(claude_name("find"), "Glob");
        assert_eq!(claude_name("mcp__gh__search"), "mcp__gh__search");
        assert_eq!(pi_name("Glob"), Some("find"));
        assert_eq!(pi_name("MultiEdit"), Some("edit"));
        assert_eq!(pi_name("WebFetch"), None);
    }
}
