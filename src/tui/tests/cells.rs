//! Snapshots of transcript cells: markdown answers, highlighted code, thinking, tool cells (collapsed, expanded, a write's content), errors and notices.

use super::*;

// ----- snapshots of cells -----------------------------------------------------------------

#[test]
fn snapshot_user_and_assistant_markdown() {
    let now = Instant::now();
    let md = "## Plan\n\nI will **read** the file, then run `cargo test`:\n\n1. read `src/main.rs`\n2. fix the *bug*\n\n> a quote\n\n```rust\nfn main() {}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nSee [docs](https://example.com).";
    let cells = vec![
        Cell::User("fix the failing test please".into()),
        Cell::assistant(assistant(vec![ContentBlock::text(md)]), false),
    ];
    insta::assert_snapshot!(cells_screen(cells, &view(now), 60, 28));
}

#[test]
fn snapshot_highlighted_rust_and_python() {
    let md = "Rust:\n\n```rust\n// add one\nfn inc(x: u32) -> u32 {\n    x + 1\n}\n```\n\nPython:\n\n```py\ndef greet(name):\n    return f\"hi {name}\"\n```";
    insta::assert_snapshot!(styled_cells_screen(vec![answer(md)], 40, 14));
}

#[test]
fn snapshot_unknown_language_code_block_is_plain() {
    let md = "```klingon\nqapla' 42\n```\n\n```\nno language\n```";
    insta::assert_snapshot!(styled_cells_screen(vec![answer(md)], 30, 6));
}

#[test]
fn a_streaming_answer_shows_the_same_rows_as_the_finished_one() {
    let (mut app, _port) = app();
    app.handle_agent_event(AgentEvent::AgentStart);
    app.handle_agent_event(AgentEvent::MessageStart {
        message: AgentMessage::from(Message::Assistant(assistant(vec![]))),
    });
    let md = "## Plan\n\n- read\n- fix\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nDone.\n";
    let now = Instant::now();
    for piece in md.as_bytes().chunks(7) {
        let delta = String::from_utf8_lossy(piece).into_owned();
        app.handle_agent_event(AgentEvent::MessageUpdate {
            assistant_message_event: StreamEvent::TextDelta {
                content_index: 0,
                delta,
            },
        });
        screen(&mut app, 40, 24, now);
    }
    let streamed = screen(&mut app, 40, 24, now);
    let finished = cells_screen(vec![answer(md)], &view(now), 40, 24);
    for row in finished.lines().map(|l| l.trim_matches('"').trim_end()) {
        assert!(streamed.contains(row), "{row:?} missing from\n{streamed}");
    }
}

#[test]
fn snapshot_thinking_shown_and_hidden() {
    let now = Instant::now();
    let msg = assistant(vec![
        ContentBlock::Thinking(ThinkingContent {
            thinking: "The user wants a greeting.\nKeep it short.".into(),
            ..Default::default()
        }),
        ContentBlock::text("Hello!"),
    ]);
    let shown = cells_screen(vec![Cell::assistant(msg.clone(), false)], &view(now), 40, 6);
    let mut hidden_view = view(now);
    hidden_view.show_thinking = false;
    let hidden = cells_screen(vec![Cell::assistant(msg, false)], &hidden_view, 40, 4);
    insta::assert_snapshot!(format!("{shown}\n{hidden}"));
}

#[test]
fn snapshot_tool_cells() {
    let now = Instant::now();
    let long: String = (1..=12).map(|i| format!("line {i}\n")).collect();
    let cells = vec![
        tool(
            "bash",
            json!({"command": "cargo build"}),
            ToolState::Running {
                started: now - Duration::from_millis(2300),
            },
            "Compiling pi\n",
        ),
        tool(
            "bash",
            json!({"command": "seq 12"}),
            ToolState::Done {
                ok: true,
                took: Duration::from_millis(300),
            },
            &long,
        ),
        tool(
            "read",
            json!({"path": "src/lib.rs", "offset": 10, "limit": 31}),
            ToolState::Done {
                ok: true,
                took: Duration::from_millis(10),
            },
            &long,
        ),
        tool(
            "grep",
            json!({"pattern": "TODO", "path": "src"}),
            ToolState::Done {
                ok: false,
                took: Duration::from_millis(50),
            },
            "grep: src: permission denied",
        ),
        tool("edit", json!({"path": "a.rs"}), ToolState::Skipped, ""),
        Cell::Tool(ToolCell {
            id: "t2".into(),
            name: "edit".into(),
            args: Arc::new(json!({"path": "src/a.rs"})),
            state: ToolState::Done {
                ok: true,
                took: Duration::from_millis(4),
            },
            output: "Edited src/a.rs".into(),
            diff: Some(" 10 fn a() {\n-11     old();\n+11     new();\n 12 }".into()),
            saved: None,
        }),
    ];
    insta::assert_snapshot!(cells_screen(cells, &view(now), 60, 40));
}

#[test]
fn snapshot_tool_output_expanded() {
    let now = Instant::now();
    let long: String = (1..=8).map(|i| format!("line {i}\n")).collect();
    let mut v = view(now);
    v.expand_tools = true;
    let cells = vec![tool(
        "bash",
        json!({"command": "seq 8"}),
        ToolState::Done {
            ok: true,
            took: Duration::from_millis(1200),
        },
        &long,
    )];
    insta::assert_snapshot!(cells_screen(cells, &v, 40, 11));
}

#[test]
fn snapshot_write_cell_shows_the_content_collapsed_then_expanded() {
    let now = Instant::now();
    let content: String = (1..=13).map(|i| format!("fn f{i}() {{}}\n")).collect();
    let written = || {
        tool(
            "write",
            json!({"path": "src/gen.rs", "content": content}),
            ToolState::Done {
                ok: true,
                took: Duration::from_millis(3),
            },
            "Successfully wrote 156 bytes to src/gen.rs",
        )
    };
    let refused = tool(
        "write",
        json!({"path": "/etc/x", "content": "secret"}),
        ToolState::Done {
            ok: false,
            took: Duration::from_millis(1),
        },
        "permission denied: /etc/x",
    );
    // The expand key is named as keybindings.json binds it.
    let mut collapsed = view(now);
    collapsed.expand_key = "Alt+X".into();
    let mut expanded = view(now);
    expanded.expand_tools = true;
    let a = cells_screen(vec![written(), refused], &collapsed, 50, 17);
    let b = cells_screen(vec![written()], &expanded, 50, 15);
    assert!(!a.contains("Successfully wrote"), "{a}");
    insta::assert_snapshot!(format!("{a}\n{b}"));
}

#[test]
fn snapshot_divider_error_aborted_notice() {
    let now = Instant::now();
    let cells = vec![
        Cell::Divider,
        Cell::Error("401 Unauthorized: check your API key".into()),
        Cell::Aborted("Operation aborted".into()),
        Cell::Notice("overloaded — retrying (1/3) in 2.0s".into()),
    ];
    insta::assert_snapshot!(cells_screen(cells, &view(now), 50, 9));
}
