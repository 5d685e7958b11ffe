//! Project instructions (`AGENTS.md` / `CLAUDE.md`) and the system prompt built around them.
//!
//! Context files load in this order: the agent folder's `AGENTS.md`, then one file per folder
//! from the filesystem root down to the working directory (ancestors first). In each folder the
//! first existing of `AGENTS.md`, `AGENTS.MD`, `CLAUDE.md`, `CLAUDE.MD` wins. The system prompt
//! is the template in `assets/system_prompt.md` (or a replacement from `--system-prompt`,
//! `.pi/SYSTEM.md` or the agent folder's `SYSTEM.md`), then appended text, the project context
//! under `# Project Context` with a `## <path>` heading per file, then the date and folder.

use std::path::{Path, PathBuf};

/// The built-in template.
pub(crate) const TEMPLATE: &str = include_str!("../../assets/system_prompt.md");

const NAMES: [&str; 4] = ["AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD"];

/// One loaded context file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ContextFile {
    pub path: PathBuf,
    pub text: String,
}

fn first_in(dir: &Path) -> Option<ContextFile> {
    // Each name is tried in turn rather than listing the folder: an ancestor such as `/tmp` or
    // a home folder can hold thousands of entries, and every start walks all ancestors.
    NAMES.iter().find_map(|name| {
        let path = dir.join(name);
        let text = std::fs::read_to_string(&path).ok()?;
        (!text.trim().is_empty()).then_some(ContextFile { path, text })
    })
}

/// Context files in load order.
pub(crate) fn discover(agent_dir: Option<&Path>, cwd: &Path) -> Vec<ContextFile> {
    let mut out = Vec::new();
    if let Some(d) = agent_dir
        && let Some(f) = first_in(d)
    {
        out.push(f);
    }
    let mut dirs: Vec<&Path> = cwd.ancestors().collect();
    dirs.reverse();
    for d in dirs {
        if let Some(f) = first_in(d)
            && !out.iter().any(|o| o.path == f.path)
        {
            out.push(f);
        }
    }
    out
}

/// What goes into the system prompt.
#[derive(Clone, Debug, Default)]
pub(crate) struct PromptParts {
    /// `--system-prompt` text, or a SYSTEM.md, replacing the template.
    pub replacement: Option<String>,
    /// `--append-system-prompt` text or an APPEND_SYSTEM.md.
    pub append: Option<String>,
    /// `(name, one-line description)` of each active tool.
    pub tools: Vec<(String, String)>,
    pub context_files: Vec<ContextFile>,
    /// The skills the model may choose (`skills::prompt_section`), or empty.
    pub skills: String,
    /// `YYYY-MM-DD`.
    pub date: String,
    pub cwd: String,
}

/// The longest a tool's line in the system prompt's list may be.
const TOOL_LINE_MAX: usize = 160;

/// The first sentence of a tool description, for the system prompt's tool list: the whole
/// description (with its rules) goes to the model with the tool's definition, so the prompt
/// only names what each tool is for, and no token of the first request is spent twice.
pub(crate) fn tool_line(description: &str) -> String {
    let first = description.lines().next().unwrap_or("").trim();
    let mut end = first.len();
    for (i, _) in first.match_indices(". ") {
        let before = &first[..i];
        // "e.g." and "i.e." end no sentence.
        if !(before.ends_with("e.g") || before.ends_with("i.e")) {
            end = i + 1;
            break;
        }
    }
    let sentence = &first[..end];
    if sentence.chars().count() <= TOOL_LINE_MAX {
        return sentence.to_string();
    }
    let cut: String = sentence.chars().take(TOOL_LINE_MAX).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
    format!("{cut}…")
}

fn guidelines(tools: &[(String, String)]) -> String {
    let has = |n: &str| tools.iter().any(|(t, _)| t == n);
    let mut g = String::new();
    if has("grep") || has("find") || has("ls") {
        g.push_str("- Explore with grep, find and ls rather than bash where they fit.\n");
    } else if has("bash") {
        g.push_str("- Explore with bash (ls, rg, find) when you need to look around.\n");
    }
    if has("read") {
        g.push_str("- Use read to look at files, not cat or sed.\n");
    }
    if has("edit") {
        g.push_str("- Use edit for changes to existing files; use write only for new files or full rewrites.\n");
    }
    g
}

/// Build the system prompt.
pub(crate) fn build(parts: &PromptParts) -> String {
    let mut prompt = match &parts.replacement {
        Some(r) => r.trim_end().to_string(),
        None => {
            let tools = if parts.tools.is_empty() {
                "- (none: answer from what you know and what the user gives you)\n".to_string()
            } else {
                parts
                    .tools
                    .iter()
                    .map(|(n, d)| format!("- {n}: {d}\n"))
                    .collect()
            };
            TEMPLATE
                .replace("{{tools}}\n", &tools)
                .replace("{{guidelines}}", &guidelines(&parts.tools))
                .trim_end()
                .to_string()
        }
    };
    if let Some(a) = parts.append.as_deref().filter(|a| !a.trim().is_empty()) {
        prompt.push_str("\n\n");
        prompt.push_str(a.trim_end());
    }
    if !parts.context_files.is_empty() {
        prompt.push_str("\n\n# Project Context\n\nInstructions from the user's context files:\n");
        for f in &parts.context_files {
            prompt.push_str(&format!(
                "\n## {}\n\n{}\n",
                f.path.display(),
                f.text.trim_end()
            ));
        }
    }
    if !parts.skills.is_empty() {
        prompt.push_str("\n\n");
        prompt.push_str(&parts.skills);
    }
    prompt.push_str(&format!(
        "\n\nCurrent date: {}\nCurrent working directory: {}",
        parts.date, parts.cwd
    ));
    prompt
}

/// Today's date as `YYYY-MM-DD` (UTC).
pub(crate) fn today() -> String {
    let days = crate::agent::protocol::types::now_ms() / 86_400_000;
    // Civil-from-days (Howard Hinnant).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02}")
}

/// The replacement prompt from `.pi/SYSTEM.md` or the agent folder's `SYSTEM.md`.
pub(crate) fn system_file(agent_dir: Option<&Path>, cwd: &Path, name: &str) -> Option<String> {
    let project = cwd.join(".pi").join(name);
    let global = agent_dir.map(|d| d.join(name));
    [Some(project), global]
        .into_iter()
        .flatten()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .filter(|t| !t.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("pi-ctx-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn discovery_goes_from_agent_folder_then_root_down_to_cwd() {
        let root = temp("discover");
        let agent = root.join("agent");
        let proj = root.join("work/proj");
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::create_dir_all(proj.join("sub")).unwrap();
        std::fs::write(agent.join("AGENTS.md"), "global rules").unwrap();
        std::fs::write(root.join("work/CLAUDE.md"), "work rules").unwrap();
        std::fs::write(proj.join("AGENTS.md"), "project rules").unwrap();
        std::fs::write(proj.join("CLAUDE.md"), "ignored: AGENTS.md wins").unwrap();
        std::fs::write(proj.join("sub/AGENTS.md"), "  \n").unwrap();
        let found = discover(Some(&agent), &proj.join("sub"));
        let texts: Vec<&str> = found.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(texts, ["global rules", "work rules", "project rules"]);
    }

    #[test]
    fn the_prompt_lists_tools_context_date_and_folder() {
        let parts = PromptParts {
            tools: vec![
                ("read".into(), "Read a file".into()),
                ("grep".into(), "Search".into()),
            ],
            context_files: vec![ContextFile {
                path: "/p/AGENTS.md".into(),
                text: "Use tabs.".into(),
            }],
            append: Some("Extra rule.".into()),
            date: "2026-12-02".into(),
            cwd: "/p".into(),
            ..Default::default()
        };
        let p = build(&parts);
        assert!(p.contains("- read: Read a file\n- grep: Search\n"));
        assert!(p.contains("Use read to look at files"));
        assert!(p.contains("Extra rule."));
        assert!(p.contains("# Project Context") && p.contains("## /p/AGENTS.md\n\nUse tabs."));
        assert!(p.ends_with("Current date: 2026-12-02\nCurrent working directory: /p"));
        assert!(!p.contains("{{"));
        let replaced = build(&PromptParts {
            replacement: Some("Just be a pirate.".into()),
            ..parts
        });
        assert!(replaced.starts_with("Just be a pirate."));
        assert!(
            replaced.contains("# Project Context"),
            "context still appended"
        );
    }

    #[test]
    fn a_tool_is_listed_by_its_first_sentence() {
        assert_eq!(
            tool_line("Read a file from disk. Text comes back as it is, e.g. with tabs."),
            "Read a file from disk."
        );
        assert_eq!(
            tool_line("Search, e.g. for names. Results are sorted."),
            "Search, e.g. for names."
        );
        assert_eq!(tool_line("List a folder"), "List a folder");
        assert_eq!(tool_line("Two lines.\nSecond."), "Two lines.");
        let long = "word ".repeat(60);
        let line = tool_line(&long);
        assert!(line.ends_with('…') && line.chars().count() <= TOOL_LINE_MAX + 1);
    }

    #[test]
    fn today_is_a_calendar_date() {
        let t = today();
        assert_eq!(t.len(), 10);
        assert!(t.starts_with("20"));
    }
}
