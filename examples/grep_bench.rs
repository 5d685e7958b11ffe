//! Times-able front end to `pi`'s grep, for `bench/grep_vs_rg.sh`.
//!
//! `grep_bench all PATTERN DIR` runs the search engine with no limit and prints every line in
//! the tool's format (`path:line: text`), the same work `rg -n PATTERN DIR` does.
//! `grep_bench tool PATTERN DIR` runs the `grep` tool itself as the model calls it (default
//! limit of 100 matches, 50 KB cap) and prints its text.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use pi::agent::protocol::tool::{ProgressSink, ToolCallContext, ToolInvocation};
use pi::tools::ToolContext;
use pi::tools::grep::{GrepOptions, GrepTool, format_hits, search};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn usage() -> ! {
    eprintln!("usage: grep_bench all|tool PATTERN DIR");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [mode, pattern, dir] = args.as_slice() else {
        usage()
    };
    let dir = PathBuf::from(dir);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match mode.as_str() {
        "all" => {
            let opts = GrepOptions {
                pattern: pattern.clone(),
                ignore_case: false,
                literal: false,
                context: 0,
                glob: None,
                limit: usize::MAX - 1,
            };
            let started = std::time::Instant::now();
            let result = match search(&dir, &opts, &CancellationToken::new()) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("{e}");
                    std::process::exit(1)
                }
            };
            let searched = started.elapsed();
            let (text, _) = format_hits(
                &result,
                opts.limit,
                pi::tools::truncate::GREP_MAX_LINE_CHARS,
                |p| p.display().to_string(),
            );
            let formatted = started.elapsed();
            if !text.is_empty() {
                let _ = writeln!(out, "{text}");
            }
            let _ = out.flush();
            if std::env::var_os("GREP_BENCH_PHASES").is_some() {
                eprintln!(
                    "search {:?}, format {:?}, write {:?}",
                    searched,
                    formatted - searched,
                    started.elapsed() - formatted
                );
            }
        }
        "tool" => {
            let runtime = match tokio::runtime::Runtime::new() {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("{e}");
                    std::process::exit(1)
                }
            };
            let tool = GrepTool::new(Arc::new(ToolContext::new(&dir)));
            let call = ToolInvocation {
                tool_call_id: "bench".into(),
                args: json!({"pattern": pattern}),
                cancel: CancellationToken::new(),
                steering: CancellationToken::new(),
                progress: ProgressSink::discard(),
                context: ToolCallContext {
                    batch_id: "bench".into(),
                    index: 0,
                    total: 1,
                    tool_calls: Vec::new().into(),
                },
            };
            use pi::agent::protocol::tool::AgentTool;
            match runtime.block_on(tool.execute(call)) {
                Ok(o) => {
                    for block in &o.content {
                        if let Some(t) = block.as_text() {
                            let _ = writeln!(out, "{t}");
                        }
                    }
                }
                Err(e) => {
                    eprintln!("{e}");
                    std::process::exit(1)
                }
            }
        }
        _ => usage(),
    }
}
