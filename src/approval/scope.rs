//! What "allow for this session" (`a`) remembers of a `bash` command, and the words the
//! question uses to say so before the key is pressed.
//!
//! A plain program keeps a prefix: the program and its subcommand (`git status`, `cargo test`,
//! `ls`), so later runs with other arguments pass without asking. A prefix is only ever taken
//! from, and only ever matches, a simple command whose arguments cannot carry a program of
//! their own. Everything else is remembered exactly, as the whole command line:
//!
//! * shells and interpreters (`bash`, `python3`, `node`, `perl`, …) with an option before their
//!   first argument (`-c`, `-e`, `-m`, `--eval`, `-` …) or with no argument at all (they read
//!   code from stdin); with a script file first (`python3 x.py`) the prefix is the program
//!   plus that file, never the program alone;
//! * wrappers that run another program (`env`, `sudo`, `xargs`, `nohup`, `timeout`, `nice`,
//!   `time`, `exec`, `ssh`, …), and `awk`/`sed`, whose program text can run commands;
//! * `find` with an action that runs or changes things (`-exec`, `-ok`, `-delete`, …), `git`
//!   with a global option before its subcommand (`-c`, `-C`, `--exec-path`) or `git config`;
//! * any option that names something to run (`--exec…`, `--command`, `--pager`, `--config`, …);
//! * a program word that is not a plain name or path (quotes, `$`, globs, `VAR=value`, `(`,
//!   shell keywords), or a command holding controls, unusual spaces or invisible characters;
//! * a command that cannot be split into simple commands (substitutions, redirections).
//!
//! If any simple command of a line needs the exact form, the whole line is remembered exactly.

use std::collections::HashSet;

use super::command;

/// How much of one simple command `a` may remember.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Later simple commands starting with these words pass.
    Prefix(String),
    /// Only this very command line passes again.
    Exact,
}

/// What `a` remembers of a whole command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Remember {
    Prefixes(Vec<String>),
    /// The trimmed command line.
    Exact(String),
}

impl Remember {
    /// What `a` allows, in words ("commands starting with `git status`", "this exact command").
    pub(crate) fn describe(&self) -> String {
        match self {
            Remember::Prefixes(p) => {
                let list: Vec<String> = p.iter().map(|p| format!("`{p}`")).collect();
                format!("commands starting with {}", list.join(", "))
            }
            Remember::Exact(_) => "this exact command".to_string(),
        }
    }
}

/// `command` without the blanks around it that the shell ignores (spaces, tabs, line
/// breaks); any other character at either end is part of the command and stays.
pub(crate) fn trimmed(command: &str) -> &str {
    command.trim_matches([' ', '\t', '\n'])
}

/// What `a` on `command` remembers.
pub(crate) fn of_command(command: &str) -> Remember {
    let line = trimmed(command);
    let exact = || Remember::Exact(line.to_string());
    // Splitting trims Unicode blanks the shell does not: such a line is only ever exact.
    if line.chars().any(odd_char) {
        return exact();
    }
    let Some(segments) = command::segments(line).filter(|s| !s.is_empty()) else {
        return exact();
    };
    let mut prefixes: Vec<String> = Vec::new();
    for s in &segments {
        match scope(s) {
            Scope::Prefix(p) if !prefixes.contains(&p) => prefixes.push(p),
            Scope::Prefix(_) => {}
            Scope::Exact => return exact(),
        }
    }
    Remember::Prefixes(prefixes)
}

/// Whether `command` is covered by what was remembered: the same line exactly, or every
/// simple command of it prefix-scoped and starting with a remembered prefix.
pub(crate) fn covered(command: &str, exact: &HashSet<String>, prefixes: &HashSet<String>) -> bool {
    let line = trimmed(command);
    if exact.contains(line) {
        return true;
    }
    if line.chars().any(odd_char) {
        return false;
    }
    let Some(segments) = command::segments(line).filter(|s| !s.is_empty()) else {
        return false;
    };
    segments.iter().all(|s| {
        matches!(scope(s), Scope::Prefix(_))
            && prefixes.iter().any(|p| command::starts_with_words(s, p))
    })
}

/// Shells and interpreters: their arguments are code or a script.
fn is_interpreter(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "sh",
        "bash",
        "zsh",
        "dash",
        "ksh",
        "mksh",
        "ash",
        "yash",
        "fish",
        "csh",
        "tcsh",
        "node",
        "nodejs",
        "ruby",
        "irb",
        "perl",
        "php",
        "tclsh",
        "wish",
        "rscript",
        "r",
        "julia",
        "osascript",
        "pwsh",
        "powershell",
        "expect",
        "guile",
        "racket",
        "elixir",
        "escript",
        "groovy",
        "jshell",
        "luajit",
        "runghc",
        "ghci",
        "ocaml",
        "scala",
        "swift",
    ];
    // Versioned names: python3, python3.12, pypy3, lua5.4, perl5.36.
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let lower = name.to_ascii_lowercase();
    NAMES.contains(&lower.as_str())
        || matches!(
            base,
            "python" | "pypy" | "lua" | "perl" | "ruby" | "php" | "node"
        )
}

/// Programs that run another program given in their arguments, or whose program text can run
/// commands: always exact.
const WRAPPERS: &[&str] = &[
    "env",
    "sudo",
    "doas",
    "su",
    "runuser",
    "sg",
    "nohup",
    "timeout",
    "nice",
    "ionice",
    "xargs",
    "stdbuf",
    "time",
    "command",
    "builtin",
    "exec",
    "eval",
    "source",
    ".",
    "watch",
    "strace",
    "ltrace",
    "gdb",
    "valgrind",
    "perf",
    "chroot",
    "unshare",
    "nsenter",
    "setsid",
    "flock",
    "parallel",
    "script",
    "busybox",
    "ssh",
    "chrt",
    "taskset",
    "fakeroot",
    "systemd-run",
    "firejail",
    "bwrap",
    "proot",
    "entr",
    "hyperfine",
    "caffeinate",
    "sshpass",
    "deno",
    "bun",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "sed",
    "gsed",
    "trap",
    "coproc",
];

/// Shell words that start a compound command, not a program.
const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "function", "select", "!", "{", "}", "[[", "]]", "(", ")", "((",
];

/// `find` actions that run commands or change files.
const FIND_ACTIONS: &[&str] = &[
    "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
];

/// Words inside an option that say it names something to run.
const RUNNING_OPTIONS: &[&str] = &[
    "exec", "command", "eval", "shell", "rsh", "pager", "editor", "hook", "script", "program",
    "config", "plugin", "require", "preload", "import",
];

/// A word made only of characters a plain program name, path or file name uses (no quotes,
/// escapes, expansions, globs or assignments).
fn plain_word(w: &str) -> bool {
    !w.is_empty()
        && w.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '+' | '-' | ':' | '@' | ',')
        })
}

/// A character that makes a command impossible to read off the screen as it runs: controls
/// (but tab), spaces other than the plain one, invisible format characters.
fn odd_char(c: char) -> bool {
    (c.is_control() && c != '\t' && c != '\n')
        || (!c.is_ascii() && (c.is_whitespace() || crate::visible::is_invisible(c)))
}

/// How much of the simple command `segment` may be remembered (see the module docs).
pub(crate) fn scope(segment: &str) -> Scope {
    if segment.chars().any(odd_char) {
        return Scope::Exact;
    }
    let words: Vec<&str> = segment.split_whitespace().collect();
    let Some(&first) = words.first() else {
        return Scope::Exact;
    };
    if !plain_word(first) || KEYWORDS.contains(&first) {
        return Scope::Exact;
    }
    let name = first.rsplit('/').next().unwrap_or(first);
    if name.is_empty() || WRAPPERS.contains(&name) {
        return Scope::Exact;
    }
    let args = &words[1..];
    let runs_something = |w: &&str| {
        w.starts_with('-') && {
            let lower = w.to_ascii_lowercase();
            RUNNING_OPTIONS.iter().any(|o| lower.contains(o))
        }
    };
    if args.iter().any(runs_something) {
        return Scope::Exact;
    }
    if is_interpreter(name) {
        return match args.first() {
            Some(script) if plain_word(script) && !script.starts_with(['-', '+']) => {
                Scope::Prefix(format!("{first} {script}"))
            }
            _ => Scope::Exact,
        };
    }
    let exact = match name {
        "git" => args
            .first()
            .is_some_and(|w| w.starts_with('-') || *w == "config"),
        "find" => args.iter().any(|w| FIND_ACTIONS.contains(w)),
        _ => false,
    };
    if exact {
        return Scope::Exact;
    }
    Scope::Prefix(prefix(first, args.first().copied()))
}

/// The program, and its subcommand when the second word looks like one (`git status`).
fn prefix(first: &str, second: Option<&str>) -> String {
    match second {
        Some(second)
            if second.len() > 1
                && second.starts_with(|c: char| c.is_ascii_lowercase())
                && second
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') =>
        {
            format!("{first} {second}")
        }
        _ => first.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Scope {
        Scope::Prefix(s.to_string())
    }

    #[test]
    fn plain_programs_keep_a_prefix() {
        assert_eq!(scope("git status --short"), p("git status"));
        assert_eq!(scope("cargo test -q"), p("cargo test"));
        assert_eq!(scope("ls -la"), p("ls"));
        assert_eq!(scope("./run.sh fast"), p("./run.sh fast"));
        assert_eq!(scope("find . -name '*.rs'"), p("find"));
    }

    #[test]
    fn interpreters_keep_their_script_or_nothing() {
        assert_eq!(scope("python3 x.py --fast"), p("python3 x.py"));
        assert_eq!(
            scope("/usr/bin/python3.12 x.py"),
            p("/usr/bin/python3.12 x.py")
        );
        assert_eq!(scope("bash build.sh"), p("bash build.sh"));
        for s in [
            "bash -c 'echo tests ok'",
            "bash -lc 'x'",
            "sh",
            "python3 -c 'print(1)'",
            "python3 -m http.server",
            "python3 -u x.py",
            "python3 - < x",
            "node -e 1",
            "node --eval 1",
            "ruby -e 1",
            "perl -E 1",
            "perl -pe 1 f",
            "bash +x s.sh",
            "python3 'x.py'",
        ] {
            assert_eq!(scope(s), Scope::Exact, "{s}");
        }
    }

    #[test]
    fn wrappers_and_running_options_are_exact() {
        for s in [
            "env FOO=1 cargo test",
            "sudo ls",
            "xargs rm",
            "nohup make",
            "timeout 5 cargo test",
            "nice -n 5 make",
            "time cargo build",
            "exec ls",
            "ssh host ls",
            "awk '{print}' f",
            "sed -n 1p f",
            "find . -exec rm {} ;",
            "find . -delete",
            "git -c core.pager=sh log",
            "git -C /tmp status",
            "git --exec-path=/tmp status",
            "git config core.pager x",
            "tar --checkpoint-action=exec=sh -cf a b",
            "rsync --rsh=sh a b",
            "FOO=bar make",
            "$X ls",
            "'ls'",
            "\\rm x",
            "( rm x )",
            "if true",
            "ls\u{a0}-la",
            "ls\u{200b}",
            "ls\u{1b}[2K",
        ] {
            assert_eq!(scope(s), Scope::Exact, "{s}");
        }
    }

    #[test]
    fn a_line_is_exact_when_any_part_is() {
        assert_eq!(
            of_command("git status && cargo test -q | tail"),
            Remember::Prefixes(vec![
                "git status".into(),
                "cargo test".into(),
                "tail".into()
            ])
        );
        assert_eq!(
            of_command(" cargo build && bash -c 'x' "),
            Remember::Exact("cargo build && bash -c 'x'".into())
        );
        assert_eq!(
            of_command("echo hi > f"),
            Remember::Exact("echo hi > f".into())
        );
        assert_eq!(
            of_command("echo hi | bash"),
            Remember::Exact("echo hi | bash".into())
        );
        assert_eq!(of_command("bash -c x").describe(), "this exact command");
        assert_eq!(trimmed("\u{a0}ls\r \n"), "\u{a0}ls\r");
        assert_eq!(
            of_command("git status; ls").describe(),
            "commands starting with `git status`, `ls`"
        );
    }

    #[test]
    fn exact_lines_and_prefixes_never_cover_more() {
        let all: HashSet<String> = ["python3 x.py".to_string(), "git".to_string()].into();
        let exact: HashSet<String> = ["bash -c 'echo tests ok'".to_string()].into();
        let (exact, all) = (&exact, &all);
        assert!(covered("bash -c 'echo tests ok'", exact, all));
        assert!(!covered(
            "bash -c 'echo PWNED > f; rm -f hello.txt'",
            exact,
            all
        ));
        assert!(!covered("bash -c 'echo tests ok'; rm x", exact, all));
        assert!(covered("python3 x.py --flag", exact, all));
        assert!(!covered("python3 -c 'import os'", exact, all));
        assert!(!covered("python3 y.py", exact, all));
        assert!(covered("git log", exact, all));
        assert!(!covered("git -c core.pager=sh log", exact, all));
        assert!(!covered("git config core.pager sh", exact, all));
        assert!(!covered("git status;\u{a0}evil", exact, all));
        assert_eq!(
            of_command("ls;\u{a0}evil"),
            Remember::Exact("ls;\u{a0}evil".into())
        );
    }
}
