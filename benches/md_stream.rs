//! Streaming a long markdown answer: ~57 KB of mixed markdown (headings, paragraphs, lists,
//! fenced code in several languages, tables, quotes) arriving in 10-byte deltas, with a
//! 120×40 frame drawn after every delta, the way the UI does while a model streams. One
//! iteration is the whole stream; the throughput figure is steps (delta + frame) per second.
//!
//! Two more shapes: `frame_per_66_deltas` is 2,000 tokens/s at the UI's 30 frames a second
//! (6-byte deltas, a frame after every 66), and `frames_without_new_text` draws 100 frames of
//! a half-streamed answer with nothing new (a spinner's frames), which should cost only the
//! drawing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pi::agent::protocol::events::AgentEvent;
use pi::agent::protocol::stream::StreamEvent;
use pi::agent::protocol::thinking::ThinkingLevel;
use pi::agent::protocol::types::{AgentMessage, AssistantMessage, Message};
use pi::tui::app::App;
use pi::tui::render;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

mod common;
use common::{idle_port, model};

/// About 57 KB of the kind of markdown a coding model writes.
fn document() -> String {
    let mut s = String::new();
    for i in 0..52 {
        s.push_str(&format!(
            "## Step {i}: change `module_{i}`\n\n\
             The function **parse_{i}** reads the *input* and returns a `Result`; it fails \
             when the header is missing, which is what the test in `tests/case_{i}.rs` checks. \
             See [the docs](https://example.com/docs/{i}) for the format.\n\n\
             - first, open `src/module_{i}.rs`\n\
             - then replace the loop\n  - keep the early return\n  - drop the clone\n\
             1. build\n2. test\n\n\
             ```rust\n\
             pub fn parse_{i}(input: &str) -> Result<Vec<u32>, String> {{\n\
             \x20   let mut out = Vec::new();\n\
             \x20   for (n, line) in input.lines().enumerate() {{\n\
             \x20       // skip blank lines\n\
             \x20       if line.trim().is_empty() {{\n\
             \x20           continue;\n\
             \x20       }}\n\
             \x20       let v: u32 = line.parse().map_err(|e| format!(\"line {{n}}: {{e}}\"))?;\n\
             \x20       out.push(v * {i});\n\
             \x20   }}\n\
             \x20   Ok(out)\n\
             }}\n\
             ```\n\n\
             > Note: the old version allocated a `String` per line.\n\n\
             | case | before | after |\n|---|---|---|\n| small | {i} ms | 1 ms |\n| large | 90 ms | 12 ms |\n\n\
             ```python\n\
             def check_{i}(path):\n\
             \x20   \"\"\"Run the parser over a file.\"\"\"\n\
             \x20   with open(path) as f:\n\
             \x20       return [int(x) * {i} for x in f if x.strip()]\n\
             ```\n\n\
             ```text\n\
             test case_{i} ... ok\n\
             test result: ok. 1 passed; 0 failed\n\
             ```\n\n"
        ));
    }
    s
}

fn streaming_app() -> (App, Terminal<TestBackend>) {
    let mut app = App::new(idle_port(), model(), ThinkingLevel::Medium);
    let term = match Terminal::new(TestBackend::new(120, 40)) {
        Ok(t) => t,
        Err(e) => panic!("test backend: {e}"),
    };
    app.handle_agent_event(AgentEvent::AgentStart);
    app.handle_agent_event(AgentEvent::MessageStart {
        message: AgentMessage::from(Message::Assistant(AssistantMessage::default())),
    });
    (app, term)
}

fn delta(app: &mut App, text: &str) {
    app.handle_agent_event(AgentEvent::MessageUpdate {
        assistant_message_event: StreamEvent::TextDelta {
            content_index: 0,
            delta: text.to_string(),
        },
    });
}

/// `doc` cut into pieces of about `size` bytes (on character boundaries).
fn pieces(doc: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < doc.len() {
        let mut end = (at + size).min(doc.len());
        while !doc.is_char_boundary(end) {
            end += 1;
        }
        out.push(&doc[at..end]);
        at = end;
    }
    out
}

fn paced(c: &mut Criterion) {
    let doc = document();
    let deltas = pieces(&doc, 6);
    let mut group = c.benchmark_group("md_stream_57k");
    group.sample_size(10);
    group.throughput(Throughput::Elements(deltas.len().div_ceil(66) as u64));
    group.bench_function("frame_per_66_deltas_120x40", |b| {
        b.iter(|| {
            let (mut app, mut term) = streaming_app();
            let now = Instant::now();
            for frame in deltas.chunks(66) {
                for d in frame {
                    delta(&mut app, d);
                }
                let _ = term.draw(|f| render::draw(f, &mut app, now));
            }
        })
    });
    group.finish();

    let mut group = c.benchmark_group("md_stream_half");
    group.throughput(Throughput::Elements(100));
    let (mut app, mut term) = streaming_app();
    let half = pieces(&doc, doc.len() / 2 + 1);
    delta(&mut app, half[0]);
    let now = Instant::now();
    group.bench_function("frames_without_new_text_120x40", |b| {
        b.iter(|| {
            for _ in 0..100 {
                let _ = term.draw(|f| render::draw(f, &mut app, now));
            }
        })
    });
    group.finish();
}

fn stream(c: &mut Criterion) {
    let doc = document();
    let steps = doc.len().div_ceil(10);
    let mut group = c.benchmark_group("md_stream_57k");
    group.sample_size(10);
    group.throughput(Throughput::Elements(steps as u64));
    group.bench_function("10_byte_steps_120x40", |b| {
        b.iter(|| {
            let mut app = App::new(idle_port(), model(), ThinkingLevel::Medium);
            let mut term = match Terminal::new(TestBackend::new(120, 40)) {
                Ok(t) => t,
                Err(e) => panic!("test backend: {e}"),
            };
            app.handle_agent_event(AgentEvent::AgentStart);
            app.handle_agent_event(AgentEvent::MessageStart {
                message: AgentMessage::from(Message::Assistant(AssistantMessage::default())),
            });
            let now = Instant::now();
            let bytes = doc.as_bytes();
            let mut at = 0;
            while at < bytes.len() {
                let mut end = (at + 10).min(bytes.len());
                while !doc.is_char_boundary(end) {
                    end += 1;
                }
                app.handle_agent_event(AgentEvent::MessageUpdate {
                    assistant_message_event: StreamEvent::TextDelta {
                        content_index: 0,
                        delta: doc[at..end].to_string(),
                    },
                });
                app.dirty = true;
                let _ = term.draw(|f| render::draw(f, &mut app, now));
                at = end;
            }
        })
    });
    group.finish();
}

criterion_group!(benches, stream, paced);
criterion_main!(benches);
