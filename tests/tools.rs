//! The coding tools against real files and real processes, each rule in a temporary folder.
//!
//! Tests run as whatever user CI uses; as root, permission bits do not stop reads or writes, so
//! "unreadable" is exercised with things no user can read as a file (a folder, a FIFO, a
//! device) and the permission-bit case only asserts when not running as root.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pi::agent::policy::validate::validate_arguments;
use pi::agent::protocol::tool::{
    AgentTool, Concurrency, ProgressSink, RegisteredTool, ToolCallContext, ToolError,
    ToolInvocation, ToolOutput,
};
use pi::agent::protocol::types::ContentBlock;
use pi::agent::scripted::reply;
use pi::tools::{self, ToolContext};
use serde_json::{Value, json};
use support::*;
use tokio_util::sync::CancellationToken;

// ------------------------------------------------------------------------------------------
// Helpers
// ------------------------------------------------------------------------------------------

fn context(dir: &Path) -> Arc<ToolContext> {
    Arc::new(
        ToolContext::new(dir)
            .with_kill_grace(Duration::from_millis(300))
            .with_progress_interval(Duration::from_millis(50)),
    )
}

fn tool(name: &str, dir: &Path) -> Arc<dyn AgentTool> {
    tools::build_with(&[name], context(dir))
        .unwrap()
        .pop()
        .unwrap()
}

fn invocation(args: Value, cancel: CancellationToken, progress: ProgressSink) -> ToolInvocation {
    ToolInvocation {
        tool_call_id: "call_1".into(),
        args,
        cancel,
        steering: CancellationToken::new(),
        progress,
        context: ToolCallContext {
            batch_id: "b".into(),
            index: 0,
            total: 1,
            tool_calls: vec![("call_1".to_string(), "t".to_string())].into(),
        },
    }
}

/// What the model would see: text, whether it is an error, and the details.
struct Seen {
    text: String,
    is_error: bool,
    details: Value,
    output: Option<ToolOutput>,
}

fn seen(result: Result<ToolOutput, ToolError>) -> Seen {
    match result {
        Ok(o) => Seen {
            text: o
                .content
                .iter()
                .filter_map(ContentBlock::as_text)
                .collect::<Vec<_>>()
                .join(""),
            is_error: o.is_error,
            details: o.details.clone(),
            output: Some(o),
        },
        Err(e) => Seen {
            text: e.0,
            is_error: true,
            details: Value::Null,
            output: None,
        },
    }
}

async fn run_tool(t: &Arc<dyn AgentTool>, args: Value) -> Seen {
    seen(
        t.execute(invocation(
            args,
            CancellationToken::new(),
            ProgressSink::discard(),
        ))
        .await,
    )
}

async fn call(name: &str, dir: &Path, args: Value) -> Seen {
    run_tool(&tool(name, dir), args).await
}

fn ok(s: &Seen) {
    assert!(!s.is_error, "expected success, got error: {}", s.text);
}

fn err(s: &Seen, needle: &str) {
    assert!(s.is_error, "expected an error, got: {}", s.text);
    assert!(
        s.text.contains(needle),
        "error should mention {needle:?}: {}",
        s.text
    );
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Processes of group `pgid` that are not zombies (from /proc; Linux).
fn live_members(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid pgrp ..."; comm may hold spaces, so split after the last ')'.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(2) == Some(&pgid.to_string().as_str()) && fields.first() != Some(&"Z") {
            out.push(pid);
        }
    }
    out
}

/// A progress sink that records the text of every update.
fn recording_sink() -> (ProgressSink, Arc<Mutex<Vec<String>>>) {
    let updates = Arc::new(Mutex::new(Vec::<String>::new()));
    let into = updates.clone();
    let sink = ProgressSink::new(move |o: ToolOutput| {
        let t = o
            .content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect::<String>();
        into.lock().unwrap().push(t);
    });
    (sink, updates)
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

// ------------------------------------------------------------------------------------------
// Registry, schemas, declarations
// ------------------------------------------------------------------------------------------

#[test]
fn registry_builds_default_and_optional_tools() {
    let d = tmp();
    let names: Vec<String> = tools::build(tools::DEFAULT_TOOLS, d.path())
        .unwrap()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    assert_eq!(names, ["read", "bash", "edit", "write"]);
    assert_eq!(tools::build(tools::ALL_TOOLS, d.path()).unwrap().len(), 8);
    let e = tools::build(&["read", "web"], d.path())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("Unknown tool \"web\"") && e.contains("grep, find, ls"));
}

#[test]
fn schemas_compile_and_declarations_match_the_rules() {
    let d = tmp();
    for t in tools::build(tools::ALL_TOOLS, d.path()).unwrap() {
        assert!(!t.description().is_empty());
        let reg = RegisteredTool::new(t.clone());
        reg.validator().unwrap();
        let args = json!({});
        let (conc, intr) = (
            t.concurrency(&args).unwrap(),
            t.interruptible(&args).unwrap(),
        );
        let expected = match t.name() {
            "read" | "grep" | "find" | "ls" => (Concurrency::Shared, true),
            "write" | "edit" => (Concurrency::Exclusive, false),
            "bash" => (Concurrency::Exclusive, false),
            // One list: two calls in a batch must not race to set it.
            "todo" => (Concurrency::Exclusive, false),
            other => panic!("unexpected tool {other}"),
        };
        assert_eq!((conc, intr), expected, "{}", t.name());
    }
}

#[test]
fn validator_repairs_edits_sent_as_a_json_string() {
    let d = tmp();
    let reg = RegisteredTool::new(tool("edit", d.path()));
    let fixed = validate_arguments(
        &reg,
        &json!({"path": "a", "edits": "[{\"oldText\": \"x\", \"newText\": \"y\"}]"}),
    )
    .unwrap();
    assert!(fixed["edits"].is_array());
}

#[tokio::test]
async fn every_tool_observes_a_fired_abort_token() {
    let d = tmp();
    fs::write(d.path().join("f.txt"), "x\n").unwrap();
    let cases = [
        ("read", json!({"path": "f.txt"})),
        ("write", json!({"path": "g.txt", "content": "y"})),
        (
            "edit",
            json!({"path": "f.txt", "oldText": "x", "newText": "z"}),
        ),
        ("bash", json!({"command": "sleep 5"})),
        ("grep", json!({"pattern": "x"})),
        ("find", json!({"pattern": "*"})),
        ("ls", json!({})),
    ];
    for (name, args) in cases {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let started = Instant::now();
        let s = seen(
            tool(name, d.path())
                .execute(invocation(args, cancel, ProgressSink::discard()))
                .await,
        );
        assert!(s.is_error, "{name} ignored the abort: {}", s.text);
        assert!(
            s.text.to_lowercase().contains("abort"),
            "{name}: {}",
            s.text
        );
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{name} was slow"
        );
    }
    assert!(!d.path().join("g.txt").exists());
    assert_eq!(fs::read_to_string(d.path().join("f.txt")).unwrap(), "x\n");
}

// ------------------------------------------------------------------------------------------
// read
// ------------------------------------------------------------------------------------------

#[tokio::test]
async fn read_returns_raw_lines_relative_to_the_working_directory() {
    let d = tmp();
    fs::create_dir(d.path().join("src")).unwrap();
    fs::write(d.path().join("src/a.txt"), "alpha\nbeta\n").unwrap();
    let s = call("read", d.path(), json!({"path": "src/a.txt"})).await;
    ok(&s);
    assert_eq!(s.text, "alpha\nbeta");
    let abs = d.path().join("src/a.txt");
    let s = call("read", Path::new("/"), json!({"path": abs})).await;
    assert_eq!(s.text, "alpha\nbeta");
}

#[tokio::test]
async fn read_expands_the_home_folder() {
    let home = std::env::var("HOME").unwrap();
    let d = tempfile::tempdir_in(&home).unwrap();
    fs::write(d.path().join("h.txt"), "at home\n").unwrap();
    let rel = d.path().strip_prefix(&home).unwrap();
    let s = call(
        "read",
        Path::new("/"),
        json!({"path": format!("~/{}/h.txt", rel.display())}),
    )
    .await;
    ok(&s);
    assert_eq!(s.text, "at home");
}

#[tokio::test]
async fn read_offset_and_limit_say_how_to_continue() {
    let d = tmp();
    let body: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    fs::write(d.path().join("f"), body).unwrap();
    let s = call(
        "read",
        d.path(),
        json!({"path": "f", "offset": 3, "limit": 2}),
    )
    .await;
    ok(&s);
    assert_eq!(
        s.text,
        "line 3\nline 4\n\n[6 more lines in the file. Continue with offset=5.]"
    );
    let s = call("read", d.path(), json!({"path": "f", "offset": 9})).await;
    assert_eq!(s.text, "line 9\nline 10");
    let s = call("read", d.path(), json!({"path": "f", "offset": 11})).await;
    err(&s, "past the end");
    err(&s, "10 lines");
    let s = call("read", d.path(), json!({"path": "f", "limit": 0})).await;
    err(&s, "limit");
}

#[tokio::test]
async fn read_caps_at_2000_lines_and_50_kb() {
    let d = tmp();
    let body: String = (1..=5000).map(|i| format!("{i}\n")).collect();
    fs::write(d.path().join("many"), body).unwrap();
    let s = call("read", d.path(), json!({"path": "many"})).await;
    assert!(s.text.starts_with("1\n2\n"));
    assert!(
        s.text
            .ends_with("2000\n\n[Lines 1-2000 of 5000 shown. Continue with offset=2001.]"),
        "{}",
        &s.text[s.text.len() - 80..]
    );
    // A limit above the cap is still capped.
    let s = call("read", d.path(), json!({"path": "many", "limit": 3000})).await;
    assert!(s.text.contains("[Lines 1-2000 of 5000 shown"));

    let wide: String = (1..=200)
        .map(|i| format!("{i:04} {}\n", "w".repeat(995)))
        .collect();
    fs::write(d.path().join("wide"), wide).unwrap();
    let s = call("read", d.path(), json!({"path": "wide"})).await;
    assert!(s.text.len() <= 50 * 1024 + 200);
    assert!(
        s.text
            .contains("[Lines 1-51 of 200 shown (50 KB limit). Continue with offset=52.]"),
        "{}",
        &s.text[s.text.len() - 100..]
    );
}

#[tokio::test]
async fn read_a_100_mb_file_with_a_limit_streams_it() {
    let d = tmp();
    let path = d.path().join("big.log");
    {
        use std::io::Write;
        let line = format!("{}\n", "0123456789".repeat(10)); // 101 bytes
        let block = line.repeat(10_000); // ~1 MB
        let mut f = std::io::BufWriter::new(fs::File::create(&path).unwrap());
        for _ in 0..100 {
            f.write_all(block.as_bytes()).unwrap();
        }
    }
    assert!(fs::metadata(&path).unwrap().len() >= 100_000_000);
    let started = Instant::now();
    let s = call("read", d.path(), json!({"path": "big.log", "limit": 5})).await;
    ok(&s);
    assert!(
        s.text
            .ends_with("[999995 more lines in the file. Continue with offset=6.]"),
        "{}",
        s.text
    );
    let s = call(
        "read",
        d.path(),
        json!({"path": "big.log", "offset": 999_999, "limit": 5}),
    )
    .await;
    ok(&s);
    assert_eq!(s.text.lines().count(), 2);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn read_keeps_crlf_lines_and_drops_a_bom() {
    let d = tmp();
    fs::write(d.path().join("w.txt"), "\u{FEFF}one\r\ntwo\r\n").unwrap();
    let s = call("read", d.path(), json!({"path": "w.txt"})).await;
    ok(&s);
    // The tool returns the lines as stored; the loop's coercion strips the CRs the model sees.
    assert_eq!(s.text, "one\r\ntwo\r");
    let (coerced, _) = pi::agent::policy::coerce::coerce_output(s.output.unwrap());
    assert_eq!(coerced.content[0].as_text().unwrap(), "one\ntwo");
}

#[tokio::test]
async fn read_returns_images_by_content_and_refuses_binaries() {
    let d = tmp();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend_from_slice(&[0, 0, 0, 13, b'I', b'H', b'D', b'R', 0, 0, 0, 1]);
    fs::write(d.path().join("picture.dat"), &png).unwrap();
    let s = call("read", d.path(), json!({"path": "picture.dat"})).await;
    ok(&s);
    let out = s.output.unwrap();
    let image = out
        .content
        .iter()
        .find_map(|b| match b {
            ContentBlock::Image(i) => Some(i.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(image.mime_type, "image/png");
    use base64::Engine;
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(&image.data)
            .unwrap(),
        png
    );

    fs::write(d.path().join("gif.bin"), b"GIF89a\x01\x00\x01\x00").unwrap();
    let s = call("read", d.path(), json!({"path": "gif.bin"})).await;
    assert!(matches!(
        &s.output.unwrap().content[1],
        ContentBlock::Image(i) if i.mime_type == "image/gif"
    ));

    fs::write(d.path().join("prog"), b"\x7fELF\x02\x01\x01\x00\x00\x00").unwrap();
    let s = call("read", d.path(), json!({"path": "prog"})).await;
    err(&s, "binary file");
}

#[tokio::test]
async fn read_follows_symlinks_and_reports_broken_ones() {
    let d = tmp();
    fs::write(d.path().join("target.txt"), "real\n").unwrap();
    symlink("target.txt", d.path().join("link.txt")).unwrap();
    symlink("missing.txt", d.path().join("dangling")).unwrap();
    let s = call("read", d.path(), json!({"path": "link.txt"})).await;
    assert_eq!(s.text, "real");
    let s = call("read", d.path(), json!({"path": "dangling"})).await;
    err(&s, "File not found: dangling");
    let s = call("read", d.path(), json!({"path": "nope.txt"})).await;
    err(&s, "File not found: nope.txt");
}

#[tokio::test]
async fn read_refuses_what_cannot_be_read_as_a_file() {
    let d = tmp();
    fs::create_dir(d.path().join("dir")).unwrap();
    let s = call("read", d.path(), json!({"path": "dir"})).await;
    err(&s, "is a folder");

    // A FIFO with no writer would block an open() forever; the tool refuses it first.
    let fifo = d.path().join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let started = Instant::now();
    let s = call("read", d.path(), json!({"path": "pipe"})).await;
    err(&s, "not a regular file");
    assert!(started.elapsed() < Duration::from_secs(2));

    let s = call("read", d.path(), json!({"path": "/dev/null"})).await;
    err(&s, "not a regular file");

    // Permission bits: only meaningful when not root (root reads anything).
    let locked = d.path().join("locked.txt");
    fs::write(&locked, "secret\n").unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    let s = call("read", d.path(), json!({"path": "locked.txt"})).await;
    if is_root() {
        ok(&s);
    } else {
        err(&s, "Permission denied");
    }
}

// ------------------------------------------------------------------------------------------
// write
// ------------------------------------------------------------------------------------------

#[tokio::test]
async fn write_creates_parent_folders() {
    let d = tmp();
    let s = call(
        "write",
        d.path(),
        json!({"path": "a/b/c.txt", "content": "hello\n"}),
    )
    .await;
    ok(&s);
    assert!(s.text.contains("a/b/c.txt"), "{}", s.text);
    assert_eq!(
        fs::read_to_string(d.path().join("a/b/c.txt")).unwrap(),
        "hello\n"
    );
}

#[tokio::test]
async fn write_replaces_atomically_keeping_permissions() {
    let d = tmp();
    let p = d.path().join("run.sh");
    fs::write(&p, "old\n").unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o751)).unwrap();
    let s = call(
        "write",
        d.path(),
        json!({"path": "run.sh", "content": "new\n"}),
    )
    .await;
    ok(&s);
    assert_eq!(fs::read_to_string(&p).unwrap(), "new\n");
    assert_eq!(
        fs::metadata(&p).unwrap().permissions().mode() & 0o7777,
        0o751
    );
    // No temporary file is left beside it.
    let names: Vec<_> = fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["run.sh"]);
}

#[tokio::test]
async fn write_through_a_symlink_keeps_the_link() {
    let d = tmp();
    fs::create_dir(d.path().join("real")).unwrap();
    fs::write(d.path().join("real/conf"), "a").unwrap();
    symlink("real/conf", d.path().join("conf")).unwrap();
    let s = call("write", d.path(), json!({"path": "conf", "content": "b"})).await;
    ok(&s);
    assert!(
        fs::symlink_metadata(d.path().join("conf"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read_to_string(d.path().join("real/conf")).unwrap(), "b");
}

#[tokio::test]
async fn write_errors_are_clear() {
    let d = tmp();
    fs::write(d.path().join("file"), "x").unwrap();
    let s = call(
        "write",
        d.path(),
        json!({"path": "file/inner.txt", "content": "y"}),
    )
    .await;
    err(&s, "file/inner.txt");
    fs::create_dir(d.path().join("folder")).unwrap();
    let s = call("write", d.path(), json!({"path": "folder", "content": "y"})).await;
    err(&s, "folder");
    let s = call("write", d.path(), json!({"path": "x"})).await;
    err(&s, "`content` argument is required");
}

// ------------------------------------------------------------------------------------------
// edit
// ------------------------------------------------------------------------------------------

#[tokio::test]
async fn edit_single_and_multiple_replacements_with_a_numbered_diff() {
    let d = tmp();
    let p = d.path().join("code.rs");
    let body: String = (1..=20).map(|i| format!("let v{i} = {i};\n")).collect();
    fs::write(&p, &body).unwrap();

    let s = call(
        "edit",
        d.path(),
        json!({"path": "code.rs", "oldText": "let v3 = 3;", "newText": "let v3 = 33;"}),
    )
    .await;
    ok(&s);
    assert_eq!(s.text, "Applied 1 edit to code.rs.");
    assert_eq!(s.details["firstChangedLine"], 3);
    let diff = s.details["diff"].as_str().unwrap();
    assert!(diff.contains("- 3 let v3 = 3;"), "{diff}");
    assert!(diff.contains("+ 3 let v3 = 33;"), "{diff}");
    assert!(diff.contains("  1 let v1 = 1;"), "{diff}");
    assert!(
        s.details["patch"]
            .as_str()
            .unwrap()
            .contains("@@ -1,7 +1,7 @@")
    );

    let s = call(
        "edit",
        d.path(),
        json!({"path": "code.rs", "edits": [
            {"oldText": "let v18 = 18;", "newText": "let v18 = 0;"},
            {"oldText": "let v1 = 1;\n", "newText": ""}
        ]}),
    )
    .await;
    ok(&s);
    assert_eq!(s.text, "Applied 2 edits to code.rs.");
    let now = fs::read_to_string(&p).unwrap();
    assert!(now.starts_with("let v2 = 2;\nlet v3 = 33;\n"));
    assert!(now.contains("let v18 = 0;\n"));
    assert!(s.details["diff"].as_str().unwrap().contains("..."));
}

#[tokio::test]
async fn edit_accepts_edits_as_a_json_string() {
    let d = tmp();
    fs::write(d.path().join("f"), "one two").unwrap();
    let s = call(
        "edit",
        d.path(),
        json!({"path": "f", "edits": "[{\"oldText\": \"two\", \"newText\": \"2\"}]"}),
    )
    .await;
    ok(&s);
    assert_eq!(fs::read_to_string(d.path().join("f")).unwrap(), "one 2");
}

#[tokio::test]
async fn edit_errors_leave_the_file_alone() {
    let d = tmp();
    let p = d.path().join("f.txt");
    let original = "alpha\nbeta\nalpha\ngamma\n";
    fs::write(&p, original).unwrap();
    let cases = [
        (json!({"oldText": "delta", "newText": "x"}), "not found"),
        (
            json!({"oldText": "alpha", "newText": "x"}),
            "occurs 2 times",
        ),
        (
            json!({"edits": [
                {"oldText": "beta\nalpha", "newText": "x"},
                {"oldText": "alpha\ngamma", "newText": "y"}
            ]}),
            "edits[0] and edits[1] overlap",
        ),
        (json!({"oldText": "beta", "newText": "beta"}), "No change"),
        (json!({"oldText": "", "newText": "x"}), "empty"),
        (json!({"oldText": "beta"}), "go together"),
        (json!({}), "nothing to do"),
    ];
    for (mut args, needle) in cases {
        args["path"] = json!("f.txt");
        let s = call("edit", d.path(), args).await;
        err(&s, needle);
        assert_eq!(fs::read_to_string(&p).unwrap(), original);
    }
    let s = call(
        "edit",
        d.path(),
        json!({"path": "missing.txt", "oldText": "a", "newText": "b"}),
    )
    .await;
    err(&s, "File not found: missing.txt");
}

#[tokio::test]
async fn edit_preserves_crlf_and_bom() {
    let d = tmp();
    let p = d.path().join("win.txt");
    fs::write(&p, "\u{FEFF}first\r\nsecond\r\nthird\r\n").unwrap();
    let s = call(
        "edit",
        d.path(),
        json!({"path": "win.txt", "oldText": "second\nthird", "newText": "2nd\n3rd\n3.5th"}),
    )
    .await;
    ok(&s);
    assert_eq!(
        fs::read(&p).unwrap(),
        "\u{FEFF}first\r\n2nd\r\n3rd\r\n3.5th\r\n".as_bytes()
    );
    // The diff is shown without CRs or the mark.
    let diff = s.details["diff"].as_str().unwrap();
    assert!(
        !diff.contains('\r') && !diff.contains('\u{FEFF}'),
        "{diff:?}"
    );

    // LF files stay LF even when the model sends CRLF.
    fs::write(d.path().join("unix.txt"), "a\nb\n").unwrap();
    let s = call(
        "edit",
        d.path(),
        json!({"path": "unix.txt", "oldText": "a\r\nb", "newText": "A\r\nB"}),
    )
    .await;
    ok(&s);
    assert_eq!(
        fs::read_to_string(d.path().join("unix.txt")).unwrap(),
        "A\nB\n"
    );
}

#[tokio::test]
async fn edit_falls_back_to_a_forgiving_match() {
    let d = tmp();
    let p = d.path().join("q.py");
    fs::write(
        &p,
        "msg = \u{201C}don\u{2019}t panic\u{201D}   \nrange = 1\u{2013}2\nkeep = \u{201C}me\u{201D}\n",
    )
    .unwrap();
    let s = call(
        "edit",
        d.path(),
        json!({"path": "q.py", "oldText": "msg = \"don't panic\"\nrange = 1-2", "newText": "msg = \"relax\"\nrange = 1-3"}),
    )
    .await;
    ok(&s);
    assert!(
        s.text.contains("edits[0] matched only after ignoring"),
        "{}",
        s.text
    );
    assert_eq!(
        fs::read_to_string(&p).unwrap(),
        "msg = \"relax\"\nrange = 1-3\nkeep = \u{201C}me\u{201D}\n"
    );
}

#[tokio::test]
async fn edit_keeps_permissions_and_symlinks() {
    let d = tmp();
    fs::write(d.path().join("script"), "echo hi\n").unwrap();
    fs::set_permissions(d.path().join("script"), fs::Permissions::from_mode(0o700)).unwrap();
    symlink("script", d.path().join("alias")).unwrap();
    let s = call(
        "edit",
        d.path(),
        json!({"path": "alias", "oldText": "hi", "newText": "bye"}),
    )
    .await;
    ok(&s);
    assert_eq!(
        fs::read_to_string(d.path().join("script")).unwrap(),
        "echo bye\n"
    );
    assert!(
        fs::symlink_metadata(d.path().join("alias"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        fs::metadata(d.path().join("script"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
}

#[tokio::test]
async fn edit_refuses_non_utf8_files() {
    let d = tmp();
    fs::write(d.path().join("latin1"), b"caf\xe9\n").unwrap();
    let s = call(
        "edit",
        d.path(),
        json!({"path": "latin1", "oldText": "caf", "newText": "tea"}),
    )
    .await;
    err(&s, "not UTF-8");
}

// ------------------------------------------------------------------------------------------
// bash
// ------------------------------------------------------------------------------------------

#[tokio::test]
async fn bash_merges_output_in_the_working_directory() {
    let d = tmp();
    let s = call(
        "bash",
        d.path(),
        json!({"command": "echo out; echo err >&2; echo out2; pwd"}),
    )
    .await;
    ok(&s);
    let real = fs::canonicalize(d.path()).unwrap();
    assert_eq!(s.text, format!("out\nerr\nout2\n{}\n", real.display()));
    assert_eq!(s.details["exitCode"], 0);

    let s = call("bash", d.path(), json!({"command": "true"})).await;
    assert_eq!(s.text, "(no output)");
}

#[tokio::test]
async fn bash_nonzero_exit_is_an_error_with_the_code() {
    let d = tmp();
    let s = call("bash", d.path(), json!({"command": "echo failing; exit 3"})).await;
    err(&s, "Command exited with code 3.");
    assert!(s.text.starts_with("failing\n"));
    assert_eq!(s.details["exitCode"], 3);
}

#[tokio::test]
async fn bash_timeout_kills_the_group_and_says_so() {
    let d = tmp();
    let started = Instant::now();
    let s = call(
        "bash",
        d.path(),
        json!({"command": "echo begun; sleep 30", "timeout": 0.5}),
    )
    .await;
    err(&s, "Command timed out after 0.5 seconds");
    assert!(s.text.starts_with("begun\n"));
    assert_eq!(s.details["timedOut"], true);
    // sleep dies of SIGTERM: no SIGKILL was needed.
    assert_eq!(s.details["killed"], false);
    assert!(s.text.contains("were sent SIGTERM"), "{}", s.text);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn bash_command_ignoring_term_is_killed() {
    let d = tmp();
    let started = Instant::now();
    let s = call(
        "bash",
        d.path(),
        json!({"command": "trap '' TERM; echo $$; sleep 30; echo survived", "timeout": 0.3}),
    )
    .await;
    err(&s, "timed out");
    err(&s, "SIGKILL");
    assert!(!s.text.contains("survived"));
    assert_eq!(s.details["killed"], true);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // The whole group is gone, the sleeper included (zombies waiting for init do not count).
    let pgid: i32 = s.text.lines().next().unwrap().trim().parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(2);
    while !live_members(pgid).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        live_members(pgid).is_empty(),
        "process group {pgid} survived: {:?}",
        live_members(pgid)
    );
}

#[tokio::test]
async fn bash_abort_stops_the_command() {
    let d = tmp();
    let t = tool("bash", d.path());
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    // Abort once the command is seen working (its first output arrived).
    let progress = ProgressSink::new(move |partial| {
        let working = partial
            .content
            .iter()
            .filter_map(ContentBlock::as_text)
            .any(|t| t.contains("working"));
        if working {
            trigger.cancel();
        }
    });
    let started = Instant::now();
    let s = seen(
        t.execute(invocation(
            json!({"command": "echo working; sleep 30"}),
            cancel,
            progress,
        ))
        .await,
    );
    err(&s, "Command aborted");
    assert!(s.text.starts_with("working\n"));
    assert_eq!(s.details["aborted"], true);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn bash_abort_of_a_pipeline_that_honours_sigterm_needs_no_sigkill() {
    // A long grace: were the run to wait for it (or for init to reap the pipeline's orphaned
    // members), the timeout below would fire.
    let d = tmp();
    let ctx = Arc::new(
        ToolContext::new(d.path())
            .with_kill_grace(Duration::from_secs(60))
            .with_progress_interval(Duration::from_millis(20)),
    );
    let t = tools::build_with(&["bash"], ctx).unwrap().pop().unwrap();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let progress = ProgressSink::new(move |partial| {
        if partial
            .content
            .iter()
            .filter_map(ContentBlock::as_text)
            .any(|t| t.contains("working"))
        {
            trigger.cancel();
        }
    });
    let run = t.execute(invocation(
        json!({"command": "echo working; sleep 30 | cat; echo never"}),
        cancel,
        progress,
    ));
    let s = seen(
        tokio::time::timeout(Duration::from_secs(10), run)
            .await
            .expect("the run ends without waiting out the grace"),
    );
    err(&s, "Command aborted");
    assert_eq!(s.details["killed"], false, "{}", s.text);
    assert!(!s.text.contains("never"));
}

#[tokio::test]
async fn bash_background_jobs_end_with_their_call() {
    // A job left holding the output neither hangs the call nor outlives it.
    let d = tmp();
    let started = Instant::now();
    let s = call(
        "bash",
        d.path(),
        json!({"command": "(sleep 0.4; echo late; touch wrote-late) & echo started"}),
    )
    .await;
    ok(&s);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(s.text.starts_with("started"), "{}", s.text);
    assert!(!s.text.contains("late"));
    // Give the job well over its 0.4 s to show it is gone.
    let marker = d.path().join("wrote-late");
    let deadline = Instant::now() + Duration::from_millis(1500);
    while !marker.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!marker.exists(), "the background job outlived its call");
}

#[tokio::test]
async fn bash_10_mb_of_output_keeps_the_tail_and_spills_the_rest() {
    let d = tmp();
    let started = Instant::now();
    let s = call(
        "bash",
        d.path(),
        json!({"command": "head -c 10000000 /dev/zero | tr '\\0' 'x' | fold -w 100; echo; echo THE END"}),
    )
    .await;
    ok(&s);
    assert!(started.elapsed() < Duration::from_secs(30));
    let (body, notice) = s.text.rsplit_once("\n\n").unwrap();
    assert!(body.len() <= 50 * 1024, "{}", body.len());
    assert!(body.ends_with("THE END"));
    assert!(notice.starts_with("[Lines "), "{notice}");
    assert!(
        notice.contains("-100001 of 100001 shown. Full output: "),
        "{notice}"
    );
    let path = s.details["fullOutputPath"].as_str().unwrap().to_string();
    assert!(notice.contains(&path));
    let full = fs::metadata(&path).unwrap().len();
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the full output is readable by its owner only");
    }
    fs::remove_file(&path).unwrap();
    assert_eq!(full, s.details["totalBytes"].as_u64().unwrap());
    // 100,000 lines of 100 x's, each ending in a newline, then "THE END\n".
    assert_eq!(full, 10_000_000 + 100_000 + 8);
}

#[tokio::test]
async fn bash_streams_throttled_progress() {
    let d = tmp();
    let (progress, updates) = recording_sink();
    let t = tool("bash", d.path());
    let s = seen(
        t.execute(invocation(
            json!({"command": "for i in 1 2 3 4 5; do echo tick $i; sleep 0.15; done"}),
            CancellationToken::new(),
            progress,
        ))
        .await,
    );
    ok(&s);
    let updates = updates.lock().unwrap().clone();
    assert!(updates.len() >= 3, "{updates:?}");
    assert!(updates[0].starts_with("tick 1"));
    // Each update carries the output so far.
    for w in updates.windows(2) {
        assert!(w[1].starts_with(&w[0]), "{updates:?}");
    }

    // Output that arrives just after an update is not held back until the next output.
    let (progress, trailing) = recording_sink();
    let s = seen(
        t.execute(invocation(
            json!({"command": "echo a; sleep 0.01; echo b; sleep 0.6; echo c"}),
            CancellationToken::new(),
            progress,
        ))
        .await,
    );
    ok(&s);
    let trailing = trailing.lock().unwrap().clone();
    assert!(trailing.iter().any(|u| u == "a\nb\n"), "{trailing:?}");

    // A burst of output does not produce an update per chunk.
    let (progress, count) = recording_sink();
    let s = seen(
        t.execute(invocation(
            json!({"command": "for i in $(seq 1 2000); do echo line $i; done"}),
            CancellationToken::new(),
            progress,
        ))
        .await,
    );
    ok(&s);
    let count = count.lock().unwrap().len();
    assert!(count < 50, "{count}");
}

#[tokio::test]
async fn bash_bad_arguments_and_missing_working_directory() {
    let d = tmp();
    let s = call("bash", d.path(), json!({"command": "  "})).await;
    err(&s, "empty");
    let s = call("bash", d.path(), json!({"command": "true", "timeout": -1})).await;
    err(&s, "positive");
    // 0 and null mean no timeout (small models send them for "none").
    for none in [json!(0), json!(null)] {
        let s = call(
            "bash",
            d.path(),
            json!({"command": "echo ran", "timeout": none}),
        )
        .await;
        ok(&s);
        assert!(s.text.contains("ran"), "{none}: {}", s.text);
    }
    let gone = d.path().join("gone");
    let s = call("bash", &gone, json!({"command": "true"})).await;
    err(&s, "does not exist");
}

// ------------------------------------------------------------------------------------------
// grep
// ------------------------------------------------------------------------------------------

fn tree(d: &Path, files: &[(&str, &str)]) {
    for (path, body) in files {
        let p = d.join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, body).unwrap();
    }
}

#[tokio::test]
async fn grep_formats_sorted_matches_with_relative_paths() {
    let d = tmp();
    tree(
        d.path(),
        &[
            ("src/b.rs", "fn beta() {}\nlet needle = 2;\n"),
            ("src/a.rs", "let needle = 1;\n"),
            ("README.md", "no match here\n"),
        ],
    );
    let s = call("grep", d.path(), json!({"pattern": "needle"})).await;
    ok(&s);
    assert_eq!(
        s.text,
        "src/a.rs:1: let needle = 1;\nsrc/b.rs:2: let needle = 2;"
    );
    let s = call(
        "grep",
        d.path(),
        json!({"pattern": "needle", "path": "src/b.rs"}),
    )
    .await;
    assert_eq!(s.text, "src/b.rs:2: let needle = 2;");
    let s = call("grep", d.path(), json!({"pattern": "absent"})).await;
    ok(&s);
    assert_eq!(s.text, "No matches found.");
}

#[tokio::test]
async fn grep_options_case_literal_context_glob() {
    let d = tmp();
    tree(
        d.path(),
        &[
            ("x.txt", "one\nTwo a.b\nthree\naxb\nfive\n"),
            ("y.md", "two\n"),
        ],
    );
    let s = call(
        "grep",
        d.path(),
        json!({"pattern": "two", "ignoreCase": true}),
    )
    .await;
    assert_eq!(s.text, "x.txt:2: Two a.b\ny.md:1: two");
    let s = call("grep", d.path(), json!({"pattern": "a.b", "literal": true})).await;
    assert_eq!(s.text, "x.txt:2: Two a.b");
    let s = call("grep", d.path(), json!({"pattern": "a.b"})).await;
    assert_eq!(s.text, "x.txt:2: Two a.b\nx.txt:4: axb");
    let s = call("grep", d.path(), json!({"pattern": "three", "context": 1})).await;
    assert_eq!(s.text, "x.txt-2- Two a.b\nx.txt:3: three\nx.txt-4- axb");
    let s = call(
        "grep",
        d.path(),
        json!({"pattern": "(?i)two", "glob": "*.md"}),
    )
    .await;
    assert_eq!(s.text, "y.md:1: two");
    tree(
        d.path(),
        &[("sub/deep/z.md", "two\n"), ("other/z.md", "two\n")],
    );
    let s = call(
        "grep",
        d.path(),
        json!({"pattern": "two", "glob": "sub/**/*.md"}),
    )
    .await;
    assert_eq!(s.text, "sub/deep/z.md:1: two");
}

#[tokio::test]
async fn grep_honours_gitignore_includes_hidden_and_skips_binary() {
    let d = tmp();
    tree(
        d.path(),
        &[
            (".gitignore", "build/\n*.log\n"),
            ("build/out.txt", "token\n"),
            ("debug.log", "token\n"),
            (".hidden/conf", "token\n"),
            (".git/config", "token\n"),
            ("kept.txt", "token\n"),
        ],
    );
    fs::write(d.path().join("blob.bin"), b"token\0binary\n").unwrap();
    let s = call("grep", d.path(), json!({"pattern": "token"})).await;
    assert_eq!(s.text, ".hidden/conf:1: token\nkept.txt:1: token");
}

#[tokio::test]
async fn grep_searches_an_ignored_file_when_named_explicitly() {
    let d = tmp();
    tree(
        d.path(),
        &[(".gitignore", "*.log\n"), ("app.log", "error here\n")],
    );
    let s = call("grep", d.path(), json!({"pattern": "error"})).await;
    assert_eq!(s.text, "No matches found.");
    let s = call(
        "grep",
        d.path(),
        json!({"pattern": "error", "path": "app.log"}),
    )
    .await;
    assert_eq!(s.text, "app.log:1: error here");
}

#[tokio::test]
async fn grep_limit_and_long_lines_are_announced() {
    let d = tmp();
    let body: String = (1..=50).map(|i| format!("hit {i}\n")).collect();
    tree(d.path(), &[("many.txt", &body)]);
    let s = call("grep", d.path(), json!({"pattern": "hit", "limit": 5})).await;
    ok(&s);
    let (lines, notice) = s.text.split_once("\n\n").unwrap();
    assert_eq!(lines.lines().count(), 5);
    assert_eq!(
        notice,
        "[Stopped at 5 matches. Pass limit=10 for more, or narrow the pattern or path.]"
    );
    assert_eq!(s.details["limitReached"], true);
    // Exactly `limit` matches is not "more".
    let s = call("grep", d.path(), json!({"pattern": "hit", "limit": 50})).await;
    assert!(!s.text.contains("Stopped"));

    tree(
        d.path(),
        &[("wide.txt", &format!("key {}\n", "z".repeat(2000)))],
    );
    let s = call("grep", d.path(), json!({"pattern": "key"})).await;
    let first = s.text.lines().next().unwrap();
    assert!(first.chars().count() < 600, "{}", first.len());
    assert!(s.text.contains("cut at 500 characters"));
    assert!(
        s.text
            .contains("[Lines longer than 500 characters were cut")
    );
}

#[tokio::test]
async fn grep_caps_output_at_50_kb() {
    let d = tmp();
    let body: String = (1..=400)
        .map(|i| format!("m{i} {}\n", "q".repeat(300)))
        .collect();
    tree(d.path(), &[("big.txt", &body)]);
    let s = call("grep", d.path(), json!({"pattern": "m", "limit": 1000})).await;
    assert!(s.text.len() < 52 * 1024);
    assert!(s.text.contains("[Output cut at 50 KB."));
}

#[tokio::test]
async fn grep_bad_input_is_an_error() {
    let d = tmp();
    let s = call("grep", d.path(), json!({"pattern": "fn (("})).await;
    err(&s, "not a valid regular expression");
    let s = call("grep", d.path(), json!({"pattern": "x", "path": "nowhere"})).await;
    err(&s, "Path not found: nowhere");
    let s = call("grep", d.path(), json!({"pattern": "x", "glob": "a{"})).await;
    err(&s, "glob");
}

// ------------------------------------------------------------------------------------------
// find
// ------------------------------------------------------------------------------------------

#[tokio::test]
async fn find_matches_names_and_paths() {
    let d = tmp();
    tree(
        d.path(),
        &[
            ("src/main.rs", ""),
            ("src/tools/read.rs", ""),
            ("tests/a.rs", ""),
            (".config/x.rs", ""),
            ("target/debug/gen.rs", ""),
            (".gitignore", "target/\n"),
            ("notes.md", ""),
        ],
    );
    let s = call("find", d.path(), json!({"pattern": "*.rs"})).await;
    ok(&s);
    assert_eq!(
        s.text,
        ".config/x.rs\nsrc/main.rs\nsrc/tools/read.rs\ntests/a.rs"
    );
    let s = call("find", d.path(), json!({"pattern": "src/*.rs"})).await;
    assert_eq!(s.text, "src/main.rs");
    let s = call("find", d.path(), json!({"pattern": "src/**/*.rs"})).await;
    assert_eq!(s.text, "src/main.rs\nsrc/tools/read.rs");
    let s = call("find", d.path(), json!({"pattern": "tools"})).await;
    assert_eq!(s.text, "src/tools/");
    let s = call("find", d.path(), json!({"pattern": "*.rs", "path": "src"})).await;
    assert_eq!(s.text, "src/main.rs\nsrc/tools/read.rs");
    let s = call("find", d.path(), json!({"pattern": "notes.MD"})).await;
    assert!(
        s.text.starts_with("No files"),
        "capitals match exactly: {}",
        s.text
    );
    let s = call("find", d.path(), json!({"pattern": "NOTES.md"})).await;
    assert!(s.text.starts_with("No files"), "{}", s.text);
    let s = call("find", d.path(), json!({"pattern": "notes.*"})).await;
    assert_eq!(s.text, "notes.md");
    tree(d.path(), &[("README.md", "")]);
    let s = call("find", d.path(), json!({"pattern": "readme*"})).await;
    assert_eq!(s.text, "README.md", "lower case matches any case");
    let s = call("find", d.path(), json!({"pattern": "*.py"})).await;
    ok(&s);
    assert!(s.text.starts_with("No files or folders match"));
}

#[tokio::test]
async fn find_limit_and_errors() {
    let d = tmp();
    for i in 0..30 {
        fs::write(d.path().join(format!("f{i:02}.txt")), "").unwrap();
    }
    let s = call("find", d.path(), json!({"pattern": "*.txt", "limit": 10})).await;
    let (list, notice) = s.text.split_once("\n\n").unwrap();
    assert_eq!(list.lines().count(), 10);
    assert!(notice.contains("Stopped at 10 results. Pass limit=20"));
    let s = call(
        "find",
        d.path(),
        json!({"pattern": "*.txt", "path": "f00.txt"}),
    )
    .await;
    err(&s, "not a folder");
    let s = call("find", d.path(), json!({"pattern": "[z"})).await;
    err(&s, "not valid");
}

// ------------------------------------------------------------------------------------------
// ls
// ------------------------------------------------------------------------------------------

#[tokio::test]
async fn ls_sorts_marks_folders_and_shows_dotfiles() {
    let d = tmp();
    tree(
        d.path(),
        &[("b.txt", ""), ("A.txt", ""), (".env", ""), ("src/x", "")],
    );
    fs::create_dir(d.path().join("Docs")).unwrap();
    symlink("src", d.path().join("link-to-src")).unwrap();
    let s = call("ls", d.path(), json!({})).await;
    ok(&s);
    assert_eq!(s.text, ".env\nA.txt\nb.txt\nDocs/\nlink-to-src/\nsrc/");
    let s = call("ls", d.path(), json!({"path": "src"})).await;
    assert_eq!(s.text, "x");
    fs::create_dir(d.path().join("empty")).unwrap();
    let s = call("ls", d.path(), json!({"path": "empty"})).await;
    ok(&s);
    assert_eq!(s.text, "(empty is empty.)");
}

#[tokio::test]
async fn ls_limit_and_errors() {
    let d = tmp();
    for i in 0..12 {
        fs::write(d.path().join(format!("{i:02}")), "").unwrap();
    }
    let s = call("ls", d.path(), json!({"limit": 5})).await;
    assert_eq!(
        s.text,
        "00\n01\n02\n03\n04\n\n[Showing 5 of 12 entries. Pass limit=12 to see all.]"
    );
    let s = call("ls", d.path(), json!({"path": "00"})).await;
    err(&s, "is a file");
    let s = call("ls", d.path(), json!({"path": "nope"})).await;
    err(&s, "Path not found: nope");
}

// ------------------------------------------------------------------------------------------
// Through the agent loop
// ------------------------------------------------------------------------------------------

#[tokio::test]
async fn tools_run_inside_the_agent_loop() {
    let d = tmp();
    let tools = tools::build_with(tools::ALL_TOOLS, context(d.path())).unwrap();
    let p = scripts(vec![
        reply::tools(&[reply::call(
            "c1",
            "write",
            json!({"path": "notes/todo.md", "content": "- buy milk\n"}),
        )]),
        reply::tools(&[
            reply::call("c2", "read", json!({"path": "notes/todo.md"})),
            reply::call("c3", "ls", json!({"path": "notes"})),
            reply::call("c4", "grep", json!({"pattern": "milk"})),
        ]),
        reply::tools(&[reply::call(
            "c5",
            "edit",
            json!({"path": "notes/todo.md", "edits": [{"oldText": "milk", "newText": "bread"}]}),
        )]),
        reply::tools(&[reply::call(
            "c6",
            "bash",
            json!({"command": "cat notes/todo.md"}),
        )]),
        reply::text("done"),
    ]);
    let (rec, out) = run(config(&p, tools), "go", vec![]).await;
    out.unwrap();
    let results = rec.tool_results();
    let by_id = |id: &str| {
        results
            .iter()
            .find(|r| r.0 == id)
            .map(|r| (r.1.clone(), r.2))
            .unwrap()
    };
    assert!(!by_id("c1").1);
    assert_eq!(by_id("c2"), ("- buy milk".to_string(), false));
    assert_eq!(by_id("c3"), ("todo.md".to_string(), false));
    assert_eq!(
        by_id("c4"),
        ("notes/todo.md:1: - buy milk".to_string(), false)
    );
    assert_eq!(
        by_id("c5"),
        ("Applied 1 edit to notes/todo.md.".into(), false)
    );
    assert_eq!(by_id("c6"), ("- buy bread\n".to_string(), false));
}

// ------------------------------------------------------------------------------------------
// Configured limits
// ------------------------------------------------------------------------------------------

/// Tools built with small limits (as `[tools]` in config.toml gives them) cut there, and their
/// notices and descriptions name the configured numbers, not the defaults.
#[tokio::test]
async fn tools_built_with_small_limits_cut_at_them() {
    let d = tmp();
    let body: String = (1..=50).map(|i| format!("line {i}\n")).collect();
    fs::write(d.path().join("f.txt"), &body).unwrap();
    fs::write(
        d.path().join("long.txt"),
        format!("needle {}\n", "x".repeat(100)),
    )
    .unwrap();
    for i in 0..8 {
        fs::write(d.path().join(format!("e{i}.md")), "needle\n").unwrap();
    }
    let limits = tools::ToolLimits {
        max_lines: 10,
        max_bytes: 2048,
        grep_max_line_chars: 20,
        grep_limit: 3,
        find_limit: 4,
        ls_limit: 5,
    };
    let built = tools::build_with_limits(tools::ALL_TOOLS, d.path(), limits).unwrap();
    let get = |name: &str| built.iter().find(|t| t.name() == name).unwrap().clone();

    let read = get("read");
    assert!(read.description().contains("at most 10 lines or 2 KB"));
    let s = run_tool(&read, json!({"path": "f.txt"})).await;
    ok(&s);
    assert!(s.text.starts_with("line 1\n") && s.text.contains("line 10\n"));
    assert!(!s.text.contains("line 11\n"));
    assert!(
        s.text
            .ends_with("[Lines 1-10 of 50 shown. Continue with offset=11.]"),
        "{}",
        s.text
    );

    let bash = get("bash");
    assert!(bash.description().contains("last 10 lines or 2 KB"));
    let s = run_tool(&bash, json!({"command": "seq 1 30"})).await;
    ok(&s);
    assert!(s.text.starts_with("21\n22\n"), "{}", s.text);
    assert!(s.text.contains("[Lines 21-30 of 30 shown."), "{}", s.text);
    if let Some(p) = s.details["fullOutputPath"].as_str() {
        let _ = fs::remove_file(p);
    }

    let grep = get("grep");
    assert!(grep.description().contains("(default 3)"));
    assert!(grep.description().contains("cut at 20 characters"));
    let s = run_tool(&grep, json!({"pattern": "needle"})).await;
    ok(&s);
    assert!(
        s.text.contains("Stopped at 3 matches. Pass limit=6"),
        "{}",
        s.text
    );
    let s = run_tool(&grep, json!({"pattern": "needle", "path": "long.txt"})).await;
    assert!(s.text.contains("[line cut at 20 characters]"), "{}", s.text);
    assert!(
        s.text.contains("Lines longer than 20 characters"),
        "{}",
        s.text
    );

    let find = get("find");
    let s = run_tool(&find, json!({"pattern": "*.md"})).await;
    assert!(s.text.contains("Stopped at 4 results"), "{}", s.text);
    assert_eq!(s.text.lines().filter(|l| l.ends_with(".md")).count(), 4);

    let ls = get("ls");
    assert!(ls.description().contains("(default 5)"));
    let s = run_tool(&ls, json!({})).await;
    assert!(s.text.contains("Showing 5 of 10 entries"), "{}", s.text);

    // A byte limit smaller than the output: the notice names it.
    let small = tools::ToolLimits {
        max_bytes: 40,
        ..limits
    };
    let ls = tools::build_with_limits(&["ls"], d.path(), small)
        .unwrap()
        .pop()
        .unwrap();
    let s = run_tool(&ls, json!({"limit": 100})).await;
    assert!(s.text.contains("Output cut at 40 B after"), "{}", s.text);
    let read = tools::build_with_limits(&["read"], d.path(), small)
        .unwrap()
        .pop()
        .unwrap();
    let s = run_tool(&read, json!({"path": "f.txt"})).await;
    assert!(s.text.contains("(40 B limit)"), "{}", s.text);
}

/// With no configuration the descriptions still say what they always said.
#[test]
fn default_descriptions_name_the_default_limits() {
    let d = tmp();
    let built = tools::build(tools::ALL_TOOLS, d.path()).unwrap();
    let desc = |name: &str| {
        built
            .iter()
            .find(|t| t.name() == name)
            .unwrap()
            .description()
            .to_string()
    };
    assert!(desc("read").contains("at most 2000 lines or 50 KB per call; when more remains"));
    assert!(desc("bash").contains("keeps the last 2000 lines or 50 KB of output; when"));
    assert!(desc("grep").contains("(default 100), long lines cut at 500 characters."));
    assert!(desc("find").contains("at most `limit` (default 1000)."));
    assert!(desc("ls").ends_with("Returns at most `limit` entries (default 500)."));
}
