//! Slash commands: the list, completion as `/` is typed, and parsing a submitted line.
//!
//! This module only knows names, descriptions and arguments; what a command does lives in
//! `app.rs` (`App::run_command`).

pub struct Command {
    pub name: &'static str,
    pub args: &'static str,
    pub help: &'static str,
}

pub const COMMANDS: &[Command] = &[
    Command {
        name: "help",
        args: "",
        help: "keys and commands",
    },
    Command {
        name: "model",
        args: "[search]",
        help: "choose the model",
    },
    Command {
        name: "thinking",
        args: "[level]",
        help: "thinking level: off, minimal, low, medium, high, xhigh",
    },
    Command {
        name: "new",
        args: "",
        help: "start a new conversation",
    },
    Command {
        name: "compact",
        args: "[focus]",
        help: "condense the conversation now (the text given says what to keep in focus)",
    },
    Command {
        name: "resume",
        args: "",
        help: "open a saved session",
    },
    Command {
        name: "tree",
        args: "",
        help: "move to any point of the session (Esc Esc)",
    },
    Command {
        name: "fork",
        args: "",
        help: "a new session from one of your earlier prompts",
    },
    Command {
        name: "clone",
        args: "",
        help: "copy this branch into a new session",
    },
    Command {
        name: "name",
        args: "<name>",
        help: "name this session",
    },
    Command {
        name: "session",
        args: "",
        help: "messages, tokens and cost so far",
    },
    Command {
        name: "mcp",
        args: "",
        help: "MCP servers: their state and tools",
    },
    Command {
        name: "login",
        args: "",
        help: "add an API key for a provider, or use a local server",
    },
    Command {
        name: "copy",
        args: "",
        help: "copy the last answer to the clipboard (OSC 52)",
    },
    Command {
        name: "export",
        args: "[file]",
        help: "write the conversation as markdown",
    },
    Command {
        name: "quit",
        args: "",
        help: "leave pi",
    },
];

/// Commands matching what is typed so far (`/mo` → `model`), when the editor holds only a
/// command word.
pub fn completions(editor_text: &str) -> Vec<&'static Command> {
    let Some(word) = editor_text.strip_prefix('/') else {
        return Vec::new();
    };
    if word.contains(char::is_whitespace) {
        return Vec::new();
    }
    COMMANDS
        .iter()
        .filter(|c| c.name.starts_with(word))
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_and_parses() {
        let names: Vec<_> = completions("/n").iter().map(|c| c.name).collect();
        assert_eq!(names, ["new", "name"]);
        assert!(completions("/model gpt").is_empty());
        assert!(completions("hello").is_empty());
        assert_eq!(parse("/name  my work "), Some(("name", "my work")));
        assert_eq!(parse("/usr/bin/ls"), None);
    }
}
