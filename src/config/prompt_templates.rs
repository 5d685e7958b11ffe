//! Prompt templates: Markdown files that `/name args` expands into a whole prompt, in the Node.js
//! pi's format (`~/.pi/agent/prompts/*.md`, `.pi/prompts/*.md`, settings' `prompts`,
//! `--prompt-template`) and as Claude Code's custom commands (`~/.claude/commands/**/*.md`,
//! `.claude/commands/**/*.md`, a subfolder making a `folder:name` namespace).
//!
//! A file may open with a `---` front matter holding `description` and `argument-hint`; the
//! rest is the body. In the body `$1`, `$2`, … are the arguments, `$@` and `$ARGUMENTS` all of
//! them, `${@:N}` those from the Nth on and `${@:N:L}` L of them from the Nth. Arguments are
//! split like a shell's words (quotes group, and are removed).
//!
//! When two templates share a name the first found wins, in this order: `--prompt-template`
//! files, the project's, the user's, settings' `prompts`, then Claude's (project, then user).
//! Built-in commands are never shadowed: the front ends look them up first.

use std::path::{Path, PathBuf};

pub(crate) use super::found::Places;
pub use super::found::Source;

/// One template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptTemplate {
    /// What follows `/`.
    pub name: String,
    pub description: String,
    pub argument_hint: Option<String>,
    pub body: String,
    pub source: Source,
    pub path: PathBuf,
    /// Claude Code's `model`: the model the prompt's run uses (then the current one again).
    pub model: Option<String>,
    /// Claude Code's `allowed-tools`: permission rules (`Bash(git add:*)`) that need no
    /// approval during the prompt's run.
    pub allowed_tools: Vec<String>,
}

impl PromptTemplate {
    /// Where it came from, in words (`/help`).
    pub(crate) fn source_label(&self) -> String {
        self.source.label("--prompt-template", "command")
    }
}

/// Every template found, and a warning for each file that could not be read.
pub(crate) fn discover(places: &Places) -> (Vec<PromptTemplate>, Vec<String>) {
    let mut found = Vec::new();
    let mut warnings = Vec::new();
    let mut add = |path: &Path, source: Source, recursive: bool| {
        collect(path, source, recursive, &mut found, &mut warnings);
    };
    for p in &places.flags {
        add(p, Source::Flag, false);
    }
    if !places.no_discovery {
        add(&places.cwd.join(".pi/prompts"), Source::Project, false);
        if let Some(a) = &places.agent_dir {
            add(&a.join("prompts"), Source::User, false);
        }
        for p in &places.settings {
            add(p, Source::Settings, false);
        }
        add(
            &places.cwd.join(".claude/commands"),
            Source::ClaudeProject,
            true,
        );
        if let Some(h) = &places.home {
            add(&h.join(".claude/commands"), Source::ClaudeUser, true);
        }
    }
    // The first of each name wins.
    let mut seen = std::collections::HashSet::new();
    found.retain(|t: &PromptTemplate| seen.insert(t.name.clone()));
    (found, warnings)
}

/// Templates at `path`: the file itself, or the `.md` files in the folder (and, for Claude's
/// folders, in its subfolders, named `sub:name`).
fn collect(
    path: &Path,
    source: Source,
    recursive: bool,
    found: &mut Vec<PromptTemplate>,
    warnings: &mut Vec<String>,
) {
    if path.is_file() {
        let name = stem(path);
        read_one(path, name, source, found, warnings);
        return;
    }
    let mut files = Vec::new();
    walk(path, "", recursive, &mut files);
    files.sort();
    for (name, file) in files {
        read_one(&file, name, source, found, warnings);
    }
}

fn walk(dir: &Path, prefix: &str, recursive: bool, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        let Ok(kind) = std::fs::metadata(&path) else {
            continue;
        };
        if kind.is_dir() {
            if recursive && let Some(sub) = path.file_name().and_then(|n| n.to_str()) {
                walk(&path, &format!("{prefix}{sub}:"), true, out);
            }
        } else if path.extension().is_some_and(|x| x == "md") {
            out.push((format!("{prefix}{}", stem(&path)), path));
        }
    }
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn read_one(
    path: &Path,
    name: String,
    source: Source,
    found: &mut Vec<PromptTemplate>,
    warnings: &mut Vec<String>,
) {
    let usable = !name.is_empty() && !name.chars().any(char::is_whitespace);
    if !usable {
        warnings.push(format!(
            "{}: a template's name cannot be empty or hold spaces; skipped",
            path.display()
        ));
        return;
    }
    match std::fs::read_to_string(path) {
        Ok(text) => found.push(parse(&text, name, source, path.to_path_buf())),
        Err(e) => warnings.push(format!("{}: cannot read it ({e}); skipped", path.display())),
    }
}

/// A template from its file's text.
pub(crate) fn parse(text: &str, name: String, source: Source, path: PathBuf) -> PromptTemplate {
    let (front, body) = super::front_matter::split(text);
    let field = |key: &str| super::front_matter::field(front, key);
    let body = body.trim().to_string();
    let description = field("description")
        .filter(|d| !d.is_empty())
        .or_else(|| {
            body.lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .map(|l| l.chars().take(80).collect())
        })
        .unwrap_or_default();
    PromptTemplate {
        name,
        description,
        argument_hint: field("argument-hint").filter(|h| !h.is_empty()),
        body,
        source,
        path,
        model: field("model").filter(|m| !m.is_empty() && m != "inherit"),
        allowed_tools: field("allowed-tools")
            .map(|t| split_rules(&t))
            .unwrap_or_default(),
    }
}

/// Permission rules separated by commas (or spaces) outside parentheses:
/// `Bash(git add:*), Bash(git status:*) Read` is three.
fn split_rules(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in text.trim_start_matches('[').trim_end_matches(']').chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth == 0 && (c == ',' || c.is_whitespace()) {
            let rule = super::front_matter::unquote(current.trim()).to_string();
            if !rule.is_empty() {
                out.push(rule);
            }
            current.clear();
        } else {
            current.push(c);
        }
    }
    let rule = super::front_matter::unquote(current.trim()).to_string();
    if !rule.is_empty() {
        out.push(rule);
    }
    out
}

/// `text` with its `/name args` expanded, when it names one of `templates`.
#[cfg(test)]
pub(crate) fn expand(templates: &[PromptTemplate], text: &str) -> Option<String> {
    expand_with(templates, text).map(|(text, _)| text)
}

/// [`expand`], with the template used (for its `model` and `allowed-tools`).
pub(crate) fn expand_with<'a>(
    templates: &'a [PromptTemplate],
    text: &str,
) -> Option<(String, &'a PromptTemplate)> {
    let rest = text.trim_start().strip_prefix('/')?;
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let t = templates.iter().find(|t| t.name == name)?;
    Some((substitute(&t.body, &split_args(args)), t))
}

/// Shell-like words: whitespace separates, single or double quotes group (and are removed),
/// a backslash keeps the next character.
pub(crate) fn split_args(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                if let Some(n) = chars.next() {
                    word.push(n);
                }
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The body with its placeholders filled in from `args`.
pub(crate) fn substitute(body: &str, args: &[String]) -> String {
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (text, used) = placeholder(after, args).unwrap_or_else(|| ("$".to_string(), 0));
        out.push_str(&text);
        rest = &after[used..];
    }
    out.push_str(rest);
    out
}

/// The value of the placeholder at the start of `s` (just after a `$`), and its length.
fn placeholder(s: &str, args: &[String]) -> Option<(String, usize)> {
    let all = || args.join(" ");
    if s.starts_with("ARGUMENTS") {
        return Some((all(), "ARGUMENTS".len()));
    }
    if s.starts_with('@') {
        return Some((all(), 1));
    }
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 {
        let n: usize = s[..digits].parse().ok()?;
        let value = n
            .checked_sub(1)
            .and_then(|i| args.get(i))
            .cloned()
            .unwrap_or_default();
        return Some((value, digits));
    }
    // `${@:N}` and `${@:N:L}`.
    let inner = s.strip_prefix("{@:")?;
    let end = inner.find('}')?;
    let mut parts = inner[..end].split(':');
    let start: usize = parts.next()?.trim().parse().ok()?;
    let len: Option<usize> = match parts.next() {
        Some(l) => Some(l.trim().parse().ok()?),
        None => None,
    };
    let from = start.max(1) - 1;
    let picked: Vec<&str> = args
        .iter()
        .skip(from)
        .take(len.unwrap_or(usize::MAX))
        .map(String::as_str)
        .collect();
    Some((picked.join(" "), "{@:".len() + end + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        split_args(s)
    }

    #[test]
    fn arguments_fill_the_placeholders() {
        let a = args(r#"Button "onClick handler" 'disabled support'"#);
        assert_eq!(a, ["Button", "onClick handler", "disabled support"]);
        assert_eq!(
            substitute("Create $1 with: $@", &a),
            "Create Button with: Button onClick handler disabled support"
        );
        assert_eq!(
            substitute("All: $ARGUMENTS.", &a),
            "All: Button onClick handler disabled support."
        );
        assert_eq!(substitute("${@:2}", &a), "onClick handler disabled support");
        assert_eq!(substitute("${@:2:1}|", &a), "onClick handler|");
        assert_eq!(substitute("$3 $4 $10", &a), "disabled support  ");
        assert_eq!(substitute("costs $5 and $", &[]), "costs  and $");
        assert_eq!(substitute("price: $x", &[]), "price: $x");
        assert_eq!(args(r"a\ b  c"), ["a b", "c"]);
        assert!(args("   ").is_empty());
    }

    #[test]
    fn front_matter_gives_the_description_and_hint() {
        let t = parse(
            "---\ndescription: Review PRs\nargument-hint: \"<PR-URL>\"\n---\nReview $1 now.\n",
            "pr".into(),
            Source::User,
            "pr.md".into(),
        );
        assert_eq!(t.description, "Review PRs");
        assert_eq!(t.argument_hint.as_deref(), Some("<PR-URL>"));
        assert_eq!(t.body, "Review $1 now.");
        // Without front matter the first non-empty line describes it.
        let t = parse(
            "\n\nFix the tests.\nThen run them.",
            "fix".into(),
            Source::User,
            "f.md".into(),
        );
        assert_eq!(t.description, "Fix the tests.");
        assert_eq!(t.argument_hint, None);
        // A front matter never closed is body.
        let t = parse("---\nnot closed", "x".into(), Source::User, "x.md".into());
        assert_eq!(t.body, "---\nnot closed");
    }

    #[test]
    fn claude_commands_model_and_allowed_tools() {
        let t = parse(
            "---\nallowed-tools: Bash(git add:*), Bash(git status:*), Read\nmodel: haiku\ndescription: Commit\n---\nCommit.",
            "commit".into(),
            Source::ClaudeProject,
            "c.md".into(),
        );
        assert_eq!(
            t.allowed_tools,
            ["Bash(git add:*)", "Bash(git status:*)", "Read"]
        );
        assert_eq!(t.model.as_deref(), Some("haiku"));
    }

    #[test]
    fn expanding_a_line_that_names_a_template() {
        let t = vec![parse(
            "Review $1 carefully.",
            "review".into(),
            Source::User,
            "r.md".into(),
        )];
        assert_eq!(
            expand(&t, "/review src/main.rs").as_deref(),
            Some("Review src/main.rs carefully.")
        );
        assert_eq!(expand(&t, "/other x"), None);
        assert_eq!(expand(&t, "review x"), None);
    }

    #[test]
    fn folders_are_read_in_order_with_claude_namespaces() {
        let d = std::env::temp_dir().join(format!("pi-templates-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let (home, cwd, agent) = (d.join("home"), d.join("proj"), d.join("home/.pi/agent"));
        for (path, text) in [
            ("home/.pi/agent/prompts/review.md", "user review"),
            ("home/.pi/agent/prompts/only-user.md", "mine"),
            ("proj/.pi/prompts/review.md", "project review"),
            ("proj/.pi/prompts/notes.txt", "not a template"),
            (
                "proj/.claude/commands/frontend/component.md",
                "---\ndescription: a component\n---\nMake $ARGUMENTS",
            ),
            ("proj/.claude/commands/review.md", "claude review"),
            ("home/.claude/commands/deploy.md", "deploy it"),
            ("flag.md", "from the flag"),
        ] {
            let p = d.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let places = Places {
            agent_dir: Some(agent),
            home: Some(home),
            cwd,
            flags: vec![d.join("flag.md")],
            settings: vec![],
            no_discovery: false,
        };
        let (found, warnings) = discover(&places);
        assert!(warnings.is_empty(), "{warnings:?}");
        let names: Vec<(&str, Source)> =
            found.iter().map(|t| (t.name.as_str(), t.source)).collect();
        assert_eq!(
            names,
            [
                ("flag", Source::Flag),
                ("review", Source::Project),
                ("only-user", Source::User),
                ("frontend:component", Source::ClaudeProject),
                ("deploy", Source::ClaudeUser),
            ]
        );
        assert_eq!(found[1].body, "project review");
        let (only_flag, _) = discover(&Places {
            no_discovery: true,
            ..places
        });
        assert_eq!(only_flag.len(), 1);
        let _ = std::fs::remove_dir_all(&d);
    }
}
