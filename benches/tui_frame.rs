//! One TUI frame: a transcript of N messages (user, assistant markdown, tool cells) drawn at
//! 200×50 on ratatui's `TestBackend`, at N = 1,000 and N = 10,000. A frame renders only the
//! visible cells (cached per width), so the time should not grow with the transcript length.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use pi::agent::protocol::thinking::ThinkingLevel;
use pi::agent::protocol::types::{AssistantMessage, ContentBlock};
use pi::tui::app::App;
use pi::tui::cells::{Cell, ToolCell, ToolState};
use pi::tui::render;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

mod common;
use common::{idle_port, model};

const MD: &str = "## Step\n\nI will **read** the file, then run `cargo test`:\n\n1. read `src/main.rs`\n2. fix the *bug*\n\n> a quote\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n";

fn app_with(messages: usize) -> App {
    let mut app = App::new(idle_port(), model(), ThinkingLevel::Medium);
    for i in 0..messages {
        let cell = match i % 3 {
            0 => Cell::User(format!(
                "message {i}: please fix the failing test in src/lib.rs"
            )),
            1 => Cell::assistant(
                AssistantMessage {
                    content: vec![ContentBlock::text(format!("{MD}\nAnswer {i}."))],
                    ..Default::default()
                },
                false,
            ),
            _ => Cell::Tool(ToolCell {
                id: format!("t{i}"),
                name: "bash".into(),
                args: Arc::new(json!({"command": "cargo test"})),
                state: ToolState::Done {
                    ok: true,
                    took: Duration::from_millis(1200),
                },
                output: (0..20).map(|l| format!("line {l} of output\n")).collect(),
                diff: None,
                saved: None,
            }),
        };
        app.transcript.push(cell);
    }
    app
}

fn frame(c: &mut Criterion) {
    let mut group = c.benchmark_group("tui_frame_200x50");
    for n in [1_000usize, 10_000] {
        let mut app = app_with(n);
        let mut term = match Terminal::new(TestBackend::new(200, 50)) {
            Ok(t) => t,
            Err(e) => panic!("test backend: {e}"),
        };
        let now = Instant::now();
        // First frame fills the per-width cache; the timed frames are the steady state.
        let _ = term.draw(|f| render::draw(f, &mut app, now));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                app.dirty = true;
                let _ = term.draw(|f| render::draw(f, &mut app, now));
            })
        });
    }
    group.finish();
}

criterion_group!(benches, frame);
criterion_main!(benches);
