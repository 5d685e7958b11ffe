//! Where Markdown workflow files are found (prompt templates and Claude commands, skills): the
//! places to look, and which kind of place one came from.

use std::path::PathBuf;

/// Where a file came from (`/help` says it; RPC's `get_commands` gives its `location`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A path given on the command line.
    Flag,
    Project,
    User,
    /// A path in settings.json or config.toml.
    Settings,
    /// The project's Claude Code folder.
    ClaudeProject,
    /// The person's Claude Code folder.
    ClaudeUser,
}

impl Source {
    /// In words: `flag` names the command-line option, `kind` what Claude Code calls the file
    /// (`project, Claude skill`).
    pub(crate) fn label(self, flag: &str, kind: &str) -> String {
        match self {
            Source::Flag => flag.to_string(),
            Source::Project => "project".into(),
            Source::User => "user".into(),
            Source::Settings => "settings".into(),
            Source::ClaudeProject => format!("project, Claude {kind}"),
            Source::ClaudeUser => format!("user, Claude {kind}"),
        }
    }

    /// The Node pi's three locations: `user`, `project` or `path`.
    pub(crate) fn location(self) -> &'static str {
        match self {
            Source::Project | Source::ClaudeProject => "project",
            Source::User | Source::ClaudeUser => "user",
            Source::Flag | Source::Settings => "path",
        }
    }
}

/// Where to look.
#[derive(Clone, Debug, Default)]
pub(crate) struct Places {
    /// `~/.pi/agent`.
    pub agent_dir: Option<PathBuf>,
    /// The home folder (for `~/.claude/…` and `~/.agents/…`).
    pub home: Option<PathBuf>,
    pub cwd: PathBuf,
    /// Files or folders named on the command line.
    pub flags: Vec<PathBuf>,
    /// Files or folders named in settings.json or config.toml.
    pub settings: Vec<PathBuf>,
    /// Only the command line's: nothing else is looked for.
    pub no_discovery: bool,
}
