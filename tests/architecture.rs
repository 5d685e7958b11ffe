//! The module boundaries, held by reading the source: every `crate::…` path (and every
//! `super::…` path, resolved) is checked against the layout's rules.
//!
//! * `sync` (the poison-tolerant lock), `paths` (`~` in paths) and `json_text` (fast JSON
//!   strings) are leaves: they import nothing from the crate, and anyone may import them (the
//!   agent only `sync`).
//! * `agent` imports nothing else in the crate but `sync`, and no terminal, HTTP, file or
//!   process API; within it, `protocol` imports only itself and `policy` only `protocol` and itself.
//! * `provider`, `tools`, `mcp`, `session`, `config` and `attach` import no front end, nor
//!   `setup` or `host`; of the agent they know only its contract, `agent::protocol` (not the
//!   loop's `engine` nor its `policy`).
//! * `setup` and `host` import no front end; the front ends (`tui`, `print`, `rpc`) import
//!   each other never, nor `cli`.
//! * `tui` (its tests aside) reaches `session`, `tools` and `mcp` only through `host` (its
//!   commands, events and `host::view`).
//! * Inside `tui`, only the loop (`tui` itself, `screen`) and the frame's layout (`render`)
//!   know the `app`: components (popups, composer, footer, cells, ...) do not import it.
//! * `reqwest` appears only in `provider`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

/// One use of another module: the file, the line, and the module path it names.
#[derive(Debug)]
struct Reference {
    file: String,
    line: usize,
    target: Vec<String>,
}

/// The module path of a source file (`src/agent/engine/run.rs` → `agent::engine::run`).
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The identifiers after `start` in `text`, joined by `::` (`a::b::c`).
fn path_after(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        let ident: String = rest.chars().take_while(|c| is_ident(*c)).collect();
        if ident.is_empty() {
            break;
        }
        rest = &rest[ident.len()..];
        out.push(ident);
        match rest.strip_prefix("::") {
            Some(r) => rest = r,
            None => break,
        }
    }
    out
}

/// Every `crate::` and `super::` path of one file, resolved to a path from the crate root.
/// Group imports (`crate::{a, b}`) are reported as the path up to the brace, which the rules
/// treat as touching everything below it.
fn references(rel: &Path, text: &str) -> Vec<Reference> {
    let module = module_of(rel);
    // A file's own module: `super` of a file `a/b.rs` (module a::b) is `a`.
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut i = 0;
        while i < code.len() {
            let rest = &code[i..];
            let boundary = i == 0 || !code[..i].ends_with(|c: char| is_ident(c) || c == ':');
            if boundary && rest.starts_with("crate::") {
                out.push(Reference {
                    file: rel.display().to_string(),
                    line: n + 1,
                    target: path_after(&rest["crate::".len()..]),
                });
                i += "crate::".len();
            } else if boundary && rest.starts_with("super::") {
                let mut base = module.clone();
                let mut r = rest;
                while let Some(after) = r.strip_prefix("super::") {
                    base.pop();
                    r = after;
                }
                let mut target = base;
                target.extend(path_after(r));
                out.push(Reference {
                    file: rel.display().to_string(),
                    line: n + 1,
                    target,
                });
                i += rest.len() - r.len();
            } else {
                i += rest.chars().next().map_or(1, char::len_utf8);
            }
        }
    }
    out
}

/// A rule broken by `r`, if any. `from` is the module path of the file.
fn broken_rule(from: &[String], r: &Reference) -> Option<String> {
    let top = from.first().map(String::as_str).unwrap_or("");
    let second = from.get(1).map(String::as_str).unwrap_or("");
    let to = r.target.first().map(String::as_str).unwrap_or("");
    let to_second = r.target.get(1).map(String::as_str).unwrap_or("");
    let front_ends = ["tui", "print", "rpc"];
    let fail = |why: &str| Some(format!("{}:{}: {why}", r.file, r.line));
    // (`super::` in a file's inline `mod tests` resolves one level short, to the empty path.)
    if matches!(top, "sync" | "paths" | "json_text") && !to.is_empty() && to != top {
        return fail(&format!("the leaf {top} imports crate::{to}"));
    }
    if top == "agent" {
        if to != "agent" && to != "sync" {
            return fail(&format!("agent imports crate::{to}"));
        }
        if second == "protocol" && to_second != "protocol" {
            return fail(&format!("agent::protocol imports agent::{to_second}"));
        }
        if second == "policy" && !matches!(to_second, "protocol" | "policy") {
            return fail(&format!("agent::policy imports agent::{to_second}"));
        }
        return None;
    }
    let lower = [
        "provider", "tools", "session", "config", "attach", "approval", "mcp",
    ];
    if lower.contains(&top) && (front_ends.contains(&to) || matches!(to, "cli" | "setup" | "host"))
    {
        return fail(&format!("{top} imports crate::{to}"));
    }
    if lower.contains(&top) && to == "agent" && to_second != "protocol" {
        let what = if to_second.is_empty() {
            "crate::agent (name agent::protocol)".to_string()
        } else {
            format!("agent::{to_second} (only agent::protocol)")
        };
        return fail(&format!("{top} imports {what}"));
    }
    if matches!(top, "setup" | "host") && (front_ends.contains(&to) || to == "cli") {
        return fail(&format!("{top} imports the front end crate::{to}"));
    }
    if front_ends.contains(&top) && to != top && (front_ends.contains(&to) || to == "cli") {
        return fail(&format!("front end {top} imports crate::{to}"));
    }
    let in_tests = from.iter().any(|m| m == "tests");
    if top == "tui" && !in_tests && matches!(to, "session" | "tools" | "mcp") {
        return fail(&format!("tui imports crate::{to} (go through crate::host)"));
    }
    let knows_app = matches!(second, "" | "app" | "render" | "screen");
    if top == "tui" && !in_tests && to == "tui" && to_second == "app" && !knows_app {
        return fail(&format!(
            "tui::{second} imports tui::app (a component knows only its part)"
        ));
    }
    None
}

/// Words the `agent` module must not use: it knows nothing of the terminal, HTTP or files.
const AGENT_FORBIDDEN: &[&str] = &[
    "reqwest",
    "crossterm",
    "ratatui",
    "std::fs",
    "tokio::fs",
    "std::process",
    "tokio::process",
    "std::net",
    "tokio::net",
];

/// Everything wrong with one file.
fn check_file(rel: &Path, text: &str) -> Vec<String> {
    let from = module_of(rel);
    let mut problems: Vec<String> = references(rel, text)
        .iter()
        .filter_map(|r| broken_rule(&from, r))
        .collect();
    let top = from.first().map(String::as_str).unwrap_or("");
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        if top != "provider" && code.contains("reqwest") {
            problems.push(format!(
                "{}:{}: reqwest outside provider",
                rel.display(),
                n + 1
            ));
        }
        if top == "agent" {
            for word in AGENT_FORBIDDEN {
                if code.contains(word) {
                    problems.push(format!("{}:{}: agent uses {word}", rel.display(), n + 1));
                }
            }
        }
    }
    problems
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn the_source_keeps_its_module_boundaries() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 50, "the source was not found");
    let mut problems = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap_or(f);
        let text = std::fs::read_to_string(f).unwrap_or_default();
        problems.extend(check_file(rel, &text));
    }
    assert!(
        problems.is_empty(),
        "imports across forbidden boundaries:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_checker_catches_each_kind_of_crossing() {
    let cases = [
        (
            "agent/engine/run.rs",
            "use crate::session::SessionRecorder;",
        ),
        (
            "agent/protocol/types.rs",
            "use crate::agent::engine::run::Run;",
        ),
        ("agent/protocol/types.rs", "use super::super::policy::x;"),
        (
            "agent/policy/soft.rs",
            "use crate::agent::engine::facade::Agent;",
        ),
        ("agent/engine/run.rs", "let t = std::fs::read(p);"),
        ("config/mod.rs", "use crate::tui::theme::Theme;"),
        ("session/task.rs", "crate::print::run(x)"),
        ("tools/bash.rs", "use crate::host::Client;"),
        ("attach/load.rs", "use crate::tui::app::App;"),
        ("tui/app.rs", "use crate::print::PrintOptions;"),
        ("tui/app.rs", "use crate::session::ListScope;"),
        ("tui/files.rs", "crate::tools::walk::parallel(&root, None)"),
        (
            "tui/popup/tree.rs",
            "use crate::session::tree_rows::TreeRow;",
        ),
        ("tui/render.rs", "use crate::mcp::ServerStatus;"),
        ("tui/popup/model.rs", "use crate::tui::app::App;"),
        ("tui/footer.rs", "use super::app::App;"),
        ("print/mod.rs", "use crate::tui::{self, TuiOptions};"),
        ("print/mod.rs", "use crate::cli::Cli;"),
        ("host/mod.rs", "use crate::tui::app::App;"),
        ("setup/mod.rs", "fn f() -> reqwest::Client { todo!() }"),
        ("sync.rs", "use crate::agent::lock;"),
        ("paths.rs", "use crate::sync::lock;"),
        ("agent/engine/run.rs", "crate::paths::short_home(p)"),
        (
            "agent/engine/run.rs",
            "use crate::session::lock::SessionLock;",
        ),
        (
            "provider/emit.rs",
            "use crate::agent::policy::validate::PARSE_ERROR_KEY;",
        ),
        (
            "session/task.rs",
            "use crate::agent::engine::facade::Agent;",
        ),
        (
            "session/context.rs",
            "crate::agent::policy::compaction::summary_message(s, t)",
        ),
        (
            "config/mod.rs",
            "Some(crate::agent::engine::config::DEFAULT_MAX_REPEATED_TOOL_TURNS)",
        ),
        ("tools/read.rs", "use crate::agent::{engine, protocol};"),
        ("mcp/client.rs", "use crate::agent::policy::coerce::x;"),
        ("attach/load.rs", "use crate::agent::engine::run::Run;"),
    ];
    for (file, line) in cases {
        let problems = check_file(Path::new(file), line);
        assert!(!problems.is_empty(), "not caught: {file}: {line}");
    }
    let fine = [
        ("agent/mod.rs", "pub(crate) use crate::sync::lock;"),
        ("tui/theme.rs", "*crate::sync::read(&GLOBAL)"),
        ("tools/context.rs", "crate::paths::expand_home_in(p, h)"),
        ("paths.rs", "use super::*;"),
        (
            "agent/engine/run.rs",
            "use crate::agent::policy::soft::SoftState;",
        ),
        (
            "agent/policy/soft.rs",
            "use crate::agent::protocol::hooks::X;",
        ),
        (
            "agent/protocol/events.rs",
            "use super::stream::StreamEvent;",
        ),
        (
            "tui/app.rs",
            "use super::cells::Cell; use crate::host::HostEvent;",
        ),
        (
            "cli/mod.rs",
            "use crate::print::{self, PrintOptions}; use crate::tui;",
        ),
        ("tui/app.rs", "use crate::host::view::ListScope;"),
        ("tui/render.rs", "use super::app::App;"),
        ("tui/app/keys.rs", "use super::super::popup::Popup;"),
        (
            "tui/tests/tree.rs",
            "let s = crate::session::Session::read(r, None);",
        ),
        (
            "session/task.rs",
            "use crate::agent::protocol::events::RunEvent;",
        ),
        (
            "config/mod.rs",
            "crate::agent::protocol::compaction::CompactionSettings::default()",
        ),
        (
            "provider/http.rs",
            "let c = reqwest::Client::new(); // std::fs in a comment",
        ),
    ];
    for (file, line) in fine {
        let problems = check_file(Path::new(file), line);
        assert!(problems.is_empty(), "{file}: {line}: {problems:?}");
    }
}
