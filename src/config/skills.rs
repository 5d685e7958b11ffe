//! Skills, after the Agent Skills standard as the Node.js pi reads them: a folder holding a
//! `SKILL.md` (front matter `name` and `description`, then instructions), found in the user's
//! and the project's skill folders, settings' `skills` and `--skill` paths.
//!
//! Only each skill's name, description and file go into the system prompt; the model reads the
//! file when a task matches (progressive disclosure). `/skill:name args` sends the whole file
//! as the prompt instead. Files that break the standard's naming rules still load, with a
//! warning; a skill without a description is skipped with one.
//!
//! Where they are looked for, the first of a name winning: `--skill` paths (always, even with
//! `--no-skills`), the project's `.pi/skills` and `.agents/skills` (in the working folder and
//! its parents up to the repository root), the user's `~/.pi/agent/skills` and
//! `~/.agents/skills`, settings' `skills`, then Claude Code's `.claude/skills` (project, then
//! `~/.claude/skills`). In `.pi/skills` and `~/.pi/agent/skills` a bare `.md` file at the top
//! is a skill too; elsewhere only folders with a `SKILL.md` are.

use std::path::{Path, PathBuf};

/// The longest name the standard allows.
const NAME_MAX: usize = 64;
/// The longest description the standard allows.
const DESCRIPTION_MAX: usize = 1024;
/// How deep a skill folder is searched for `SKILL.md` files.
const DEPTH_MAX: usize = 6;

pub(crate) use super::found::Places;
pub use super::found::Source;

/// One skill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// Its `SKILL.md` (or the bare `.md` file).
    pub path: PathBuf,
    /// The folder its relative paths start from.
    pub base_dir: PathBuf,
    pub source: Source,
    /// `disable-model-invocation: true` keeps it out of the system prompt: only `/skill:name`
    /// uses it.
    pub model_invocable: bool,
}

impl Skill {
    /// Where it came from, in words (`/help`).
    pub(crate) fn source_label(&self) -> String {
        self.source.label("--skill", "skill")
    }
}

/// Every skill found, and a warning for each problem met (never an error).
pub(crate) fn discover(places: &Places) -> (Vec<Skill>, Vec<String>) {
    let mut found: Vec<Skill> = Vec::new();
    let mut warnings = Vec::new();
    let mut add = |path: &Path, source: Source, bare_md: bool| {
        if path.is_file() {
            read_skill(path, source, &mut found, &mut warnings);
        } else {
            scan(path, source, bare_md, 0, &mut found, &mut warnings);
        }
    };
    for p in &places.flags {
        add(p, Source::Flag, true);
    }
    if !places.no_discovery {
        add(&places.cwd.join(".pi/skills"), Source::Project, true);
        for dir in up_to_repository_root(&places.cwd) {
            add(&dir.join(".agents/skills"), Source::Project, false);
        }
        if let Some(a) = &places.agent_dir {
            add(&a.join("skills"), Source::User, true);
        }
        if let Some(h) = &places.home {
            add(&h.join(".agents/skills"), Source::User, false);
        }
        for p in &places.settings {
            add(p, Source::Settings, true);
        }
        for dir in up_to_repository_root(&places.cwd) {
            add(&dir.join(".claude/skills"), Source::ClaudeProject, false);
        }
        if let Some(h) = &places.home {
            add(&h.join(".claude/skills"), Source::ClaudeUser, false);
        }
    }
    for p in places.flags.iter().filter(|p| !p.exists()) {
        warnings.push(format!("--skill {}: no such file or folder", p.display()));
    }
    // The first of each name wins; the same file met twice is no clash.
    let mut kept: Vec<Skill> = Vec::new();
    for s in found {
        match kept.iter().find(|k| k.name == s.name) {
            Some(k) if same_file(&k.path, &s.path) => {}
            Some(k) => warnings.push(format!(
                "skill \"{}\" at {} is already loaded from {}; the first one is used",
                s.name,
                s.path.display(),
                k.path.display()
            )),
            None => kept.push(s),
        }
    }
    (kept, warnings)
}

fn same_file(a: &Path, b: &Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

/// The working folder and its parents up to the repository's root (the folder holding
/// `.git`), or up to the filesystem root outside a repository.
fn up_to_repository_root(cwd: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in cwd.ancestors() {
        out.push(dir.to_path_buf());
        if dir.join(".git").exists() {
            break;
        }
    }
    out
}

/// The skills under `dir`: the folder itself when it holds a `SKILL.md`, else (with
/// `bare_md`, at the top only) its `.md` files, and the skills of its subfolders.
fn scan(
    dir: &Path,
    source: Source,
    bare_md: bool,
    depth: usize,
    found: &mut Vec<Skill>,
    warnings: &mut Vec<String>,
) {
    let skill_md = dir.join("SKILL.md");
    if skill_md.is_file() {
        read_skill(&skill_md, source, found, warnings);
        return;
    }
    if depth > DEPTH_MAX {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        if path.is_dir() {
            scan(&path, source, false, depth + 1, found, warnings);
        } else if bare_md && depth == 0 && path.extension().is_some_and(|x| x == "md") {
            read_skill(&path, source, found, warnings);
        }
    }
}

fn read_skill(path: &Path, source: Source, found: &mut Vec<Skill>, warnings: &mut Vec<String>) {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            if let Some(s) = parse(&text, path, source, warnings) {
                found.push(s);
            }
        }
        Err(e) => warnings.push(format!(
            "skill {}: cannot read it ({e}); skipped",
            path.display()
        )),
    }
}

/// A skill from its file's text, with a warning for each rule of the standard it breaks;
/// `None` (and a warning) when it has no description.
pub(crate) fn parse(
    text: &str,
    path: &Path,
    source: Source,
    warnings: &mut Vec<String>,
) -> Option<Skill> {
    use super::front_matter::field;
    let (front, _) = super::front_matter::split(text);
    let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let is_skill_md = path.file_name().is_some_and(|n| n == "SKILL.md");
    let folder = base_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let default_name = if is_skill_md {
        folder.clone()
    } else {
        path.file_stem()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let name = field(front, "name")
        .filter(|n| !n.is_empty())
        .unwrap_or(default_name);
    let at = path.display();
    let Some(description) = field(front, "description").filter(|d| !d.trim().is_empty()) else {
        warnings.push(format!(
            "skill {at}: it has no description, which the model needs to know when to use it; skipped"
        ));
        return None;
    };
    if name.is_empty() || name.contains(char::is_whitespace) {
        warnings.push(format!(
            "skill {at}: the name \"{name}\" cannot be used as a command; skipped"
        ));
        return None;
    }
    for problem in name_problems(&name) {
        warnings.push(format!("skill {at}: the name \"{name}\" {problem}"));
    }
    if is_skill_md && name != folder {
        warnings.push(format!(
            "skill {at}: the name \"{name}\" differs from its folder \"{folder}\""
        ));
    }
    if description.chars().count() > DESCRIPTION_MAX {
        warnings.push(format!(
            "skill {at}: the description is longer than {DESCRIPTION_MAX} characters"
        ));
    }
    let model_invocable =
        field(front, "disable-model-invocation").is_none_or(|v| !v.eq_ignore_ascii_case("true"));
    Some(Skill {
        name,
        description,
        path: path.to_path_buf(),
        base_dir,
        source,
        model_invocable,
    })
}

/// What is wrong with a name under the standard's rules (lowercase letters, digits and single
/// inner hyphens, at most 64 characters).
fn name_problems(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    if name.chars().count() > NAME_MAX {
        out.push(format!("is longer than {NAME_MAX} characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        out.push("should hold only lowercase letters, digits and hyphens".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        out.push("should not start or end with a hyphen".into());
    }
    if name.contains("--") {
        out.push("should not hold two hyphens in a row".into());
    }
    out
}

/// The system prompt's part naming the skills the model may choose (empty when none).
pub(crate) fn prompt_section(skills: &[Skill]) -> String {
    let listed: Vec<&Skill> = skills.iter().filter(|s| s.model_invocable).collect();
    if listed.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "# Skills\n\nThese skills hold instructions for particular kinds of task. When a task \
         matches a skill's description, read its file with the read tool before you start, and \
         follow it. Paths a skill mentions are relative to the folder holding its file.\n\n\
         <available_skills>\n",
    );
    for s in listed {
        out.push_str(&format!(
            "  <skill>\n    <name>{}</name>\n    <description>{}</description>\n    <location>{}</location>\n  </skill>\n",
            xml(&s.name),
            xml(&s.description),
            xml(&s.path.display().to_string())
        ));
    }
    out.push_str("</available_skills>");
    out
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// The prompt `/skill:name args` stands for: the skill's instructions (read now, so an edit
/// shows at once), where its paths start, then the person's arguments. `None` when `text` is
/// not such a line for a known skill; `Some(Err)` when its file cannot be read.
pub(crate) fn expand(skills: &[Skill], text: &str) -> Option<Result<String, String>> {
    let rest = text.trim_start().strip_prefix("/skill:")?;
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let skill = skills.iter().find(|s| s.name == name)?;
    Some(expand_one(skill, args.trim()))
}

fn expand_one(skill: &Skill, args: &str) -> Result<String, String> {
    let text = std::fs::read_to_string(&skill.path).map_err(|e| {
        format!(
            "the skill \"{}\" cannot be read from {} ({e})",
            skill.name,
            skill.path.display()
        )
    })?;
    let (_, body) = super::front_matter::split(&text);
    let mut out = format!(
        "<skill name=\"{}\" location=\"{}\">\nRelative paths below start at {}.\n\n{}\n</skill>",
        xml(&skill.name),
        xml(&skill.path.display().to_string()),
        skill.base_dir.display(),
        body.trim()
    );
    if !args.is_empty() {
        out.push_str("\n\nUser: ");
        out.push_str(args);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> PathBuf {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let d = std::env::temp_dir().join(format!(
            "pi-skills-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&d);
        for (path, text) in files {
            let p = d.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        d
    }

    fn skill_md(name: &str, description: &str) -> String {
        format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\nSteps.\n")
    }

    #[test]
    fn every_place_in_order_the_first_name_winning() {
        let d = tree(&[
            ("proj/.git/HEAD", ""),
            (
                "proj/sub/.pi/skills/pdf/SKILL.md",
                &skill_md("pdf", "project pdf"),
            ),
            (
                "proj/sub/.pi/skills/quick.md",
                &skill_md("quick", "a bare file"),
            ),
            (
                "proj/.agents/skills/lint/SKILL.md",
                &skill_md("lint", "repo lint"),
            ),
            (
                "proj/.agents/skills/loose.md",
                &skill_md("loose", "ignored: bare"),
            ),
            (
                ".agents/skills/far/SKILL.md",
                &skill_md("far", "above the repository"),
            ),
            (
                "home/.pi/agent/skills/pdf/SKILL.md",
                &skill_md("pdf", "user pdf"),
            ),
            (
                "home/.agents/skills/group/deep/SKILL.md",
                &skill_md("deep", "nested"),
            ),
            (
                "home/.claude/skills/claude-one/SKILL.md",
                &skill_md("claude-one", "from Claude"),
            ),
            ("flag/SKILL.md", &skill_md("flag", "from the flag")),
        ]);
        let places = Places {
            agent_dir: Some(d.join("home/.pi/agent")),
            home: Some(d.join("home")),
            cwd: d.join("proj/sub"),
            flags: vec![d.join("flag")],
            settings: vec![],
            no_discovery: false,
        };
        let (found, warnings) = discover(&places);
        let names: Vec<(&str, Source)> =
            found.iter().map(|s| (s.name.as_str(), s.source)).collect();
        assert_eq!(
            names,
            [
                ("flag", Source::Flag),
                ("pdf", Source::Project),
                ("quick", Source::Project),
                ("lint", Source::Project),
                ("deep", Source::User),
                ("claude-one", Source::ClaudeUser),
            ]
        );
        assert_eq!(found[1].description, "project pdf");
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("\"pdf\"") && w.contains("first")),
            "{warnings:?}"
        );
        let (only_flag, _) = discover(&Places {
            no_discovery: true,
            ..places
        });
        assert_eq!(only_flag.len(), 1);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn rule_breaking_skills_load_with_warnings_and_a_missing_description_skips() {
        let d = tree(&[
            (
                "s/Bad--Name/SKILL.md",
                &skill_md("Bad--Name", "works anyway"),
            ),
            ("s/other/SKILL.md", &skill_md("mismatch", "named apart")),
            ("s/nodesc/SKILL.md", "---\nname: nodesc\n---\nbody"),
            (
                "s/hidden/SKILL.md",
                "---\nname: hidden\ndescription: x\ndisable-model-invocation: true\n---\n",
            ),
        ]);
        let (found, warnings) = discover(&Places {
            flags: vec![d.join("s")],
            no_discovery: true,
            ..Places::default()
        });
        let names: Vec<&str> = found.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["Bad--Name", "hidden", "mismatch"]);
        let all = warnings.join("\n");
        assert!(all.contains("lowercase"), "{all}");
        assert!(all.contains("two hyphens"), "{all}");
        assert!(all.contains("differs from its folder \"other\""), "{all}");
        assert!(all.contains("no description"), "{all}");
        assert!(!found[1].model_invocable);
        let section = prompt_section(&found);
        assert!(section.contains("<name>mismatch</name>"), "{section}");
        assert!(!section.contains("hidden"), "{section}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_skill_command_sends_the_file_with_the_arguments() {
        let d = tree(&[(
            "pdf/SKILL.md",
            "---\nname: pdf\ndescription: d\n---\nRun ./extract.sh <file>\n",
        )]);
        let (found, _) = discover(&Places {
            flags: vec![d.join("pdf")],
            no_discovery: true,
            ..Places::default()
        });
        let out = expand(&found, "/skill:pdf report.pdf").unwrap().unwrap();
        assert!(out.starts_with("<skill name=\"pdf\""), "{out}");
        assert!(out.contains("Run ./extract.sh <file>"), "{out}");
        assert!(out.contains(&d.join("pdf").display().to_string()), "{out}");
        assert!(out.ends_with("User: report.pdf"), "{out}");
        assert!(!out.contains("description: d"), "{out}");
        assert!(expand(&found, "/skill:none").is_none());
        assert!(expand(&found, "/pdf").is_none());
        std::fs::remove_file(d.join("pdf/SKILL.md")).unwrap();
        assert!(expand(&found, "/skill:pdf").unwrap().is_err());
        let _ = std::fs::remove_dir_all(&d);
    }
}
