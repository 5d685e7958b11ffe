//! Subagent definitions: Markdown files whose front matter names the agent (`name`,
//! `description`, `tools`, `model`) and whose body is its system prompt, as Claude Code writes
//! them, from `.pi/agents/*.md`, `~/.pi/agent/agents/*.md`, `.claude/agents/*.md` and
//! `~/.claude/agents/*.md` (the first of a name wins, in that order), plus the built-in
//! `general-purpose` agent.

use std::path::{Path, PathBuf};

use crate::config::front_matter;

/// The built-in agent's name.
pub const GENERAL: &str = "general-purpose";

/// One kind of subagent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Definition {
    pub name: String,
    /// When to use it (shown to the model in the tool's description).
    pub description: String,
    /// The tools it may use, in pi's names (`None`: all of the parent's but `task`).
    pub tools: Option<Vec<String>>,
    /// `None` or `inherit`: the parent's model; else a model id (looked up in the parent's
    /// provider first) or `provider/id`.
    pub model: Option<String>,
    /// Its system prompt.
    pub prompt: String,
    /// The file it came from (`None`: built in).
    pub path: Option<PathBuf>,
}

impl Definition {
    /// Whether it may start subagents of its own (its `tools` name the task tool).
    pub fn may_delegate(&self) -> bool {
        self.tools
            .as_ref()
            .is_some_and(|t| t.iter().any(|n| n == "task"))
    }
}

/// The built-in agent: every tool of the parent's, the parent's model.
pub fn general_purpose() -> Definition {
    Definition {
        name: GENERAL.into(),
        description: "A general agent for research and multi-step tasks: searching code, \
                      reading many files, trying things out. Use it when a job would fill your \
                      own context."
            .into(),
        tools: None,
        model: None,
        prompt: "You are a subagent of a coding agent, working on one task it gave you. Use \
                 your tools to do the task fully, then answer with what you found or did: \
                 the facts, file paths and line numbers the agent needs, briefly. Your answer \
                 is all the agent sees of your work."
            .into(),
        path: None,
    }
}

/// pi's name for a tool named in a definition's `tools` (Claude Code's names are taken too).
fn tool_name(raw: &str) -> String {
    crate::tools::claude_names::pi_name(raw).map_or_else(|| raw.to_string(), str::to_string)
}

/// Where to look.
#[derive(Clone, Debug, Default)]
pub(crate) struct Places {
    pub agent_dir: Option<PathBuf>,
    pub home: Option<PathBuf>,
    pub cwd: PathBuf,
}

/// The definitions found, the built-in one first, and a warning for each file left out.
pub(crate) fn discover(places: &Places) -> (Vec<Definition>, Vec<String>) {
    let mut found = vec![general_purpose()];
    let mut warnings = Vec::new();
    let mut folders = vec![places.cwd.join(".pi/agents")];
    if let Some(a) = &places.agent_dir {
        folders.push(a.join("agents"));
    }
    folders.push(places.cwd.join(".claude/agents"));
    if let Some(h) = &places.home {
        folders.push(h.join(".claude/agents"));
    }
    for folder in folders {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        files.sort();
        for file in files {
            match std::fs::read_to_string(&file)
                .map_err(|e| format!("cannot read it ({e})"))
                .and_then(|text| parse(&text, &file))
            {
                Ok(d) if found.iter().any(|f| f.name == d.name) => {}
                Ok(d) => found.push(d),
                Err(why) => warnings.push(format!("agent {}: {why}; skipped", file.display())),
            }
        }
    }
    (found, warnings)
}

/// A definition from its file.
pub(crate) fn parse(text: &str, path: &Path) -> Result<Definition, String> {
    let (front, body) = front_matter::split(text);
    let name = front_matter::field(front, "name")
        .filter(|n| !n.is_empty())
        .or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .ok_or("it has no name")?;
    if name.contains(char::is_whitespace) {
        return Err(format!("the name `{name}` holds spaces"));
    }
    let description = front_matter::field(front, "description")
        .filter(|d| !d.is_empty())
        .ok_or("it has no description (the model needs it to know when to use the agent)")?;
    let tools = front_matter::field(front, "tools")
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.trim_start_matches('[')
                .trim_end_matches(']')
                .split([',', ' '])
                .map(|s| front_matter::unquote(s.trim()))
                .filter(|s| !s.is_empty())
                .map(tool_name)
                .collect()
        });
    let model = front_matter::field(front, "model").filter(|m| !m.is_empty() && m != "inherit");
    let prompt = body.trim().to_string();
    if prompt.is_empty() {
        return Err("its body (the agent's system prompt) is empty".into());
    }
    Ok(Definition {
        name,
        description,
        tools,
        model,
        prompt,
        path: Some(path.to_path_buf()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_agent_files_read_as_they_are() {
        let d = parse(
            "---\nname: code-reviewer\ndescription: Reviews code for bugs. Use after changes.\ntools: Read, Grep, Glob, Bash\nmodel: sonnet\n---\nYou are a careful reviewer.\n",
            Path::new("/x/code-reviewer.md"),
        )
        .unwrap();
        assert_eq!(d.name, "code-reviewer");
        assert_eq!(
            d.tools.as_deref().unwrap(),
            ["read", "grep", "find", "bash"]
        );
        assert_eq!(d.model.as_deref(), Some("sonnet"));
        assert_eq!(d.prompt, "You are a careful reviewer.");
        assert!(!d.may_delegate());
        let inherit = parse(
            "---\nname: a\ndescription: b\nmodel: inherit\ntools: Read, Task\n---\nbody",
            Path::new("a.md"),
        )
        .unwrap();
        assert_eq!(inherit.model, None);
        assert!(inherit.may_delegate());
        assert!(parse("---\nname: a\n---\nbody", Path::new("a.md")).is_err());
        assert!(parse("---\nname: a\ndescription: b\n---\n", Path::new("a.md")).is_err());
    }

    #[test]
    fn folders_in_order_and_the_built_in_first() {
        let d = std::env::temp_dir().join(format!("pi-agents-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let put = |p: &str, name: &str, desc: &str| {
            let path = d.join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(
                path,
                format!("---\nname: {name}\ndescription: {desc}\n---\nPrompt.\n"),
            )
            .unwrap();
        };
        put("proj/.pi/agents/review.md", "review", "project");
        put("home/.pi/agent/agents/review.md", "review", "user");
        put("proj/.claude/agents/tests.md", "tests", "claude project");
        put("home/.claude/agents/docs.md", "docs", "claude user");
        std::fs::write(d.join("proj/.pi/agents/broken.md"), "no front matter").unwrap();
        let (found, warnings) = discover(&Places {
            agent_dir: Some(d.join("home/.pi/agent")),
            home: Some(d.join("home")),
            cwd: d.join("proj"),
        });
        let names: Vec<(&str, &str)> = found
            .iter()
            .map(|f| (f.name.as_str(), f.description.as_str()))
            .collect();
        assert_eq!(names[0].0, GENERAL);
        assert_eq!(
            &names[1..],
            [
                ("review", "project"),
                ("tests", "claude project"),
                ("docs", "claude user")
            ]
        );
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
