//! What hooks add to a tool call: the `PreToolUse` step with no hook for the tool (the
//! matcher check only), with one trivial command hook (`true`: a bash start, its JSON input
//! written, its exit read), and with one that answers in JSON.
//!
//! `cargo bench --bench hooks`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use criterion::{Criterion, criterion_group, criterion_main};
use pi::agent::protocol::abort::AbortSignal;
use pi::hooks::{Hooks, RunContext};
use serde_json::{Value, json};

fn hooks(command: &str, matcher: &str) -> Hooks {
    let mut by_file = BTreeMap::new();
    by_file.insert(
        "bench".to_string(),
        json!({"PreToolUse": [{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}]}),
    );
    let ctx = RunContext {
        cwd: std::env::temp_dir(),
        env: vec![("PATH".into(), std::env::var_os("PATH").unwrap_or_default())],
    };
    Hooks::from_config(&by_file, ctx).0
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let args: Value = json!({"command": "cargo test"});
    let signal = AbortSignal::new();
    let call = |h: &Hooks| {
        rt.block_on(h.pre_tool_use("bash", "call-1", &args, &signal));
    };
    let other = hooks("true", "Write");
    c.bench_function("PreToolUse, no hook for this tool", |b| {
        b.iter(|| call(&other))
    });
    let trivial = hooks("true", "Bash");
    c.bench_function("PreToolUse, one trivial hook (true)", |b| {
        b.iter(|| call(&trivial))
    });
    let answer = hooks(
        r#"echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'"#,
        "Bash",
    );
    c.bench_function("PreToolUse, one hook answering JSON", |b| {
        b.iter(|| call(&answer))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
