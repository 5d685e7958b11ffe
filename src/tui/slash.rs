//! Slash commands: one table of what can be typed after `/` (its name, arguments and what it
//! does), completion as `/` is typed, parsing a submitted line, and the nearest known name for
//! one that is not known.
//!
//! Every lookup goes through a [`CommandTable`], so commands added to it later (prompt
//! templates, skills) are completed, listed by `/help` and found like the built-in ones. What a
//! built-in command does lives with the app (`App::run_command`).

use std::borrow::Cow;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    pub name: Cow<'static, str>,
    pub args: Cow<'static, str>,
    pub help: Cow<'static, str>,
    /// A prompt template: the line is sent as a prompt, which the host expands.
    pub expands: bool,
}

const fn builtin(name: &'static str, args: &'static str, help: &'static str) -> Command {
    Command {
        name: Cow::Borrowed(name),
        args: Cow::Borrowed(args),
        help: Cow::Borrowed(help),
        expands: false,
    }
}

/// The commands pi itself has, in the order `/help` and completion list them.
const BUILTIN: &[Command] = &[
    builtin("help", "", "keys and commands"),
    builtin("model", "[search]", "choose the model"),
    builtin(
        "thinking",
        "[level]",
        "thinking level: off, minimal, low, medium, high, xhigh",
    ),
    builtin("new", "", "start a new conversation"),
    builtin(
        "theme",
        "[name]",
        "choose the colours (dark, light, or a theme file)",
    ),
    builtin(
        "todos",
        "",
        "show or fold the model's task list above the editor",
    ),
    builtin(
        "compact",
        "[focus]",
        "condense the conversation now (the text given says what to keep in focus)",
    ),
    builtin(
        "plan",
        "[on|off]",
        "plan mode: only reading tools run, and the model answers with a plan to accept",
    ),
    builtin("resume", "", "open a saved session"),
    builtin("tree", "", "move to any point of the session"),
    builtin("fork", "", "a new session from one of your earlier prompts"),
    builtin(
        "rewind",
        "",
        "go back before an earlier prompt, putting back the files the agent changed",
    ),
    builtin("clone", "", "copy this branch into a new session"),
    builtin("name", "<name>", "name this session"),
    builtin("session", "", "messages, tokens and cost so far"),
    builtin("mcp", "", "MCP servers: their state and tools"),
    builtin(
        "login",
        "",
        "sign in to a subscription, add an API key for a provider, or use a local server",
    ),
    builtin(
        "logout",
        "<id>",
        "sign out of a subscription (or drop a provider's stored key)",
    ),
    builtin("copy", "", "copy the last answer to the clipboard (OSC 52)"),
    builtin(
        "export",
        "[file]",
        "write the conversation as an HTML page (markdown for a .md name)",
    ),
    builtin("quit", "", "leave pi"),
];

/// Names other coding agents use, and the command of pi that does that job.
const SYNONYMS: &[(&str, &str)] = &[
    ("clear", "new"),
    ("reset", "new"),
    ("cost", "session"),
    ("usage", "session"),
    ("stats", "session"),
    ("status", "session"),
    ("exit", "quit"),
    ("models", "model"),
    ("sessions", "resume"),
    ("keys", "help"),
    ("undo", "rewind"),
];

/// What can be typed after `/`.
#[derive(Clone, Debug)]
pub struct CommandTable {
    commands: Vec<Command>,
}

impl Default for CommandTable {
    fn default() -> Self {
        CommandTable {
            commands: BUILTIN.to_vec(),
        }
    }
}

impl CommandTable {
    /// Add a command (a prompt template, a skill); a name already taken is not added twice.
    pub fn add(&mut self, command: Command) -> bool {
        if self.find(&command.name).is_some() {
            return false;
        }
        self.commands.push(command);
        true
    }

    /// Add the prompt templates (a name a built-in command has is left to it).
    pub(crate) fn add_templates(
        &mut self,
        templates: &[crate::config::prompt_templates::PromptTemplate],
    ) {
        for t in templates {
            self.add(Command {
                name: t.name.clone().into(),
                args: t.argument_hint.clone().unwrap_or_default().into(),
                help: format!("{} ({})", t.description, t.source_label()).into(),
                expands: true,
            });
        }
    }

    /// Add each skill as `/skill:name`, its arguments appended to its instructions.
    pub(crate) fn add_skills(&mut self, skills: &[crate::config::skills::Skill]) {
        for s in skills {
            self.add(Command {
                name: format!("skill:{}", s.name).into(),
                args: "[request]".into(),
                help: format!("{} ({})", s.description, s.source_label()).into(),
                expands: true,
            });
        }
    }

    /// Whether `text` is `/name …` for a prompt template or a skill.
    fn find_expanding(&self, text: &str) -> bool {
        parse(text).is_some_and(|(name, _)| self.find(name).is_some_and(|c| c.expands))
    }

    pub fn all(&self) -> &[Command] {
        &self.commands
    }

    pub fn find(&self, name: &str) -> Option<&Command> {
        self.commands.iter().find(|c| c.name == name)
    }

    /// Commands matching what is typed so far (`/mo` → `model`), when the editor holds only a
    /// command word.
    pub fn completions(&self, editor_text: &str) -> Vec<&Command> {
        let Some(word) = editor_text.strip_prefix('/') else {
            return Vec::new();
        };
        if word.contains(char::is_whitespace) {
            return Vec::new();
        }
        self.commands
            .iter()
            .filter(|c| c.name.starts_with(word))
            .collect()
    }

    /// The known command someone typing `/name` most likely meant: the one other agents call
    /// that, else one the name begins or is begun by, else the closest spelling (a few edits
    /// away at most).
    pub fn nearest(&self, name: &str) -> Option<&Command> {
        let name = name.to_lowercase();
        if let Some(c) = self.find(&name) {
            return Some(c);
        }
        if let Some(c) = SYNONYMS
            .iter()
            .find(|(other, _)| *other == name)
            .and_then(|(_, ours)| self.find(ours))
        {
            return Some(c);
        }
        if let Some(c) = self
            .commands
            .iter()
            .find(|c| !name.is_empty() && (c.name.starts_with(&name) || name.starts_with(&*c.name)))
        {
            return Some(c);
        }
        let most = (name.chars().count() / 3).max(1) + 1;
        self.commands
            .iter()
            .map(|c| (edit_distance(&name, &c.name), c))
            .filter(|(d, _)| *d <= most)
            .min_by_key(|(d, _)| *d)
            .map(|(_, c)| c)
    }
}

/// What a submitted line is, as far as commands go.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// `/name args` for a known command.
    Known(&'a str, &'a str),
    /// `/name ...` for a name no command has.
    Unknown(&'a str),
    /// `//rest`: the text to send, beginning with one `/`.
    Literal(&'a str),
    /// Anything else (a path like `/usr/bin/ls` included) is a prompt.
    Prompt,
}

impl CommandTable {
    pub fn classify<'a>(&self, text: &'a str) -> Line<'a> {
        if let Some(rest) = text.trim_start().strip_prefix('/')
            && rest.starts_with('/')
        {
            return Line::Literal(rest);
        }
        match parse(text) {
            Some((_, _)) if self.find_expanding(text) => Line::Prompt,
            Some((name, args)) if self.find(name).is_some() => Line::Known(name, args),
            Some((name, _)) => Line::Unknown(name),
            None => Line::Prompt,
        }
    }
}

/// `/name rest` → (`name`, `rest`), if the text is a command line.
pub fn parse(text: &str) -> Option<(&str, &str)> {
    let rest = text.trim().strip_prefix('/')?;
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if name.is_empty() || name.contains('/') {
        return None;
    }
    Some((name, args.trim()))
}

/// Levenshtein distance in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == *cb {
                diagonal
            } else {
                1 + diagonal.min(above).min(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_and_parses() {
        let table = CommandTable::default();
        let names: Vec<_> = table.completions("/n").iter().map(|c| &*c.name).collect();
        assert_eq!(names, ["new", "name"]);
        assert!(table.completions("/model gpt").is_empty());
        assert!(table.completions("hello").is_empty());
        assert_eq!(parse("/name  my work "), Some(("name", "my work")));
        assert_eq!(parse("/usr/bin/ls"), None);
    }

    #[test]
    fn lines_are_known_unknown_literal_or_prompts() {
        let table = CommandTable::default();
        assert_eq!(table.classify("/name x"), Line::Known("name", "x"));
        assert_eq!(table.classify("/clear"), Line::Unknown("clear"));
        assert_eq!(table.classify("//clear it"), Line::Literal("/clear it"));
        assert_eq!(table.classify("/usr/bin/ls"), Line::Prompt);
        assert_eq!(table.classify("hello /new"), Line::Prompt);
    }

    #[test]
    fn the_nearest_command_is_a_synonym_a_prefix_or_a_close_spelling() {
        let table = CommandTable::default();
        let nearest = |n: &str| table.nearest(n).map(|c| c.name.to_string());
        assert_eq!(nearest("clear").as_deref(), Some("new"));
        assert_eq!(nearest("cost").as_deref(), Some("session"));
        assert_eq!(nearest("exp").as_deref(), Some("export"));
        assert_eq!(nearest("modle").as_deref(), Some("model"));
        assert_eq!(nearest("Thinkin").as_deref(), Some("thinking"));
        assert_eq!(nearest("xyzzyplugh"), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn templates_are_completed_and_sent_as_prompts_but_never_shadow_a_command() {
        use crate::config::prompt_templates::{Source, parse as template};
        let mut table = CommandTable::default();
        let review = {
            let text = "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $1";
            template(text, "review".into(), Source::Project, "r.md".into())
        };
        let model = template("x", "model".into(), Source::User, "m.md".into());
        table.add_templates(&[review, model]);
        let found = table.completions("/rev");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].args, "<file>");
        assert_eq!(found[0].help, "Review a file (project)");
        assert_eq!(table.classify("/review a.rs"), Line::Prompt);
        // The built-in /model stays a command.
        assert_eq!(table.classify("/model"), Line::Known("model", ""));
        assert!(!table.find("model").unwrap().expands);
    }

    #[test]
    fn added_commands_are_found_completed_and_not_doubled() {
        let mut table = CommandTable::default();
        let review = Command {
            name: "review".to_string().into(),
            args: "".into(),
            help: "a skill".to_string().into(),
            expands: false,
        };
        assert!(table.add(review.clone()));
        assert!(!table.add(review));
        assert_eq!(table.classify("/review now"), Line::Known("review", "now"));
        let names: Vec<_> = table.completions("/re").iter().map(|c| &*c.name).collect();
        assert_eq!(names, ["resume", "rewind", "review"]);
        assert!(!table.add(builtin("help", "", "again")));
    }

    #[test]
    fn skills_are_commands_named_skill_colon() {
        use crate::config::skills::{Skill, Source};
        let mut table = CommandTable::default();
        table.add_skills(&[Skill {
            name: "pdf".into(),
            description: "Work with PDFs".into(),
            path: "s/pdf/SKILL.md".into(),
            base_dir: "s/pdf".into(),
            source: Source::ClaudeUser,
            model_invocable: true,
        }]);
        let found = table.completions("/skill:");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].name, "skill:pdf");
        assert_eq!(found[0].help, "Work with PDFs (user, Claude skill)");
        assert_eq!(table.classify("/skill:pdf forms.pdf"), Line::Prompt);
    }
}
