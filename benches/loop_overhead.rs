//! Loop overhead: runs of N turns, each turn one assistant message with 4 shared calls to a
//! no-op tool, from a zero-latency provider. Reports time per turn (criterion) and, once before
//! the timed runs, heap bytes kept per transcript message (a counting allocator), so growth
//! can be checked to follow the messages kept and nothing else.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use futures::StreamExt;
use pi::agent::engine::config::LoopConfig;
use pi::agent::engine::run::run_prompt;
use pi::agent::policy::soft::SoftState;
use pi::agent::protocol::abort::AbortSignal;
use pi::agent::protocol::events::AgentEvent;
use pi::agent::protocol::hooks::Injected;
use pi::agent::protocol::stream::{EventStream, Model, Provider, ProviderRequest, StreamEvent};
use pi::agent::protocol::tool::{AgentTool, ToolError, ToolInvocation, ToolOutput, ToolSet};
use pi::agent::protocol::types::AgentMessage;
use pi::agent::scripted::reply;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is handed to the system allocator unchanged; the counters beside it
// are atomics and never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        // SAFETY: the caller's `layout` contract is passed on as it came.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` above (the system allocator) with this `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Answers with 4 tool calls for `turns` calls, then with text. The events are built before
/// the run, so the timing is the loop's own work.
struct Replay {
    scripts: std::sync::Mutex<std::collections::VecDeque<Vec<StreamEvent>>>,
}

impl Replay {
    fn new(turns: usize) -> Self {
        let scripts = (0..turns)
            .map(|n| {
                let script = if n + 1 < turns {
                    let calls: Vec<_> = (0..4)
                        .map(|k| reply::call(&format!("t{n}c{k}"), "noop", json!({"k": k})))
                        .collect();
                    reply::tools(&calls)
                } else {
                    reply::text("done")
                };
                script
                    .into_iter()
                    .filter_map(|s| match s {
                        pi::agent::scripted::Step::Event(e) => Some(e),
                        _ => None,
                    })
                    .collect()
            })
            .collect();
        Replay {
            scripts: std::sync::Mutex::new(scripts),
        }
    }
}

impl Provider for Replay {
    fn stream(&self, _request: ProviderRequest, _cancel: CancellationToken) -> EventStream {
        let events = match self.scripts.lock() {
            Ok(mut q) => q.pop_front().unwrap_or_default(),
            Err(_) => Vec::new(),
        };
        futures::stream::iter(events.into_iter().map(Ok)).boxed()
    }
}

struct Noop;

#[async_trait]
impl AgentTool for Noop {
    fn name(&self) -> &str {
        "noop"
    }
    fn description(&self) -> &str {
        "does nothing"
    }
    fn parameters(&self) -> &Value {
        static S: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
        S.get_or_init(|| json!({"type": "object", "properties": {"k": {"type": "integer"}}}))
    }
    async fn execute(&self, _call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

async fn run_turns(provider: Arc<Replay>) -> Vec<AgentMessage> {
    let mut config = LoopConfig::new(provider, Model::new("bench", "bench", "bench"));
    config.tools = Arc::new(ToolSet::new([Arc::new(Noop) as Arc<dyn AgentTool>]));
    // Every turn repeats the same calls on purpose; the stuck-model guard would stop it.
    config.max_repeated_tool_turns = None;
    let sink = Arc::new(|_e: AgentEvent| {});
    let out = run_prompt(
        vec![Injected::plain(AgentMessage::user("go"))],
        Vec::new(),
        config,
        SoftState::default(),
        AbortSignal::new(),
        sink,
    )
    .await;
    match out.into_result() {
        Ok(o) => o.context,
        Err(f) => panic!("bench run failed: {}", f.error),
    }
}

fn memory_report(rt: &tokio::runtime::Runtime) {
    for turns in [500usize, 1000, 2000] {
        let before = LIVE.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let provider = Arc::new(Replay::new(turns));
        let context = rt.block_on(run_turns(provider));
        let kept = LIVE.load(Ordering::Relaxed).saturating_sub(before);
        let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before);
        println!(
            "memory: {turns} turns, {} messages kept: {} KiB live after the run ({} B/message), peak {} KiB",
            context.len(),
            kept / 1024,
            kept / context.len().max(1),
            peak / 1024
        );
        drop(context);
    }
}

fn bench(c: &mut Criterion) {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("no tokio runtime: {e}"),
    };
    memory_report(&rt);
    let mut group = c.benchmark_group("loop_overhead");
    group.sample_size(20);
    {
        let turns = 1000usize;
        group.throughput(Throughput::Elements(turns as u64));
        group.bench_with_input(
            BenchmarkId::new("turns_x4_shared_calls", turns),
            &turns,
            |b, &t| {
                b.to_async(&rt).iter_batched(
                    || Arc::new(Replay::new(t)),
                    run_turns,
                    criterion::BatchSize::LargeInput,
                );
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
