//! Benchmark helper for `bench/session_resume.sh`: generate realistic session files, then time
//! resuming one (load → context → agent) and listing many.
//!
//! ```text
//! session_load gen <file> <entries> <megabytes>    one session of about that size
//! session_load gen-many <dir> <count> <megabytes>  many sessions of about that size each
//! session_load count <dir>                          count the messages of every session there
//! session_load prepare <file>                      prepare a compaction: cut, request, entry
//! session_load load <file>                         resume: prints milliseconds and counts
//! session_load list <dir>                          list the folder: prints milliseconds
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use pi::agent::engine::facade::{Agent, AgentSettings};
use pi::agent::protocol::stream::Model;
use pi::agent::protocol::types::{
    AgentMessage, AssistantMessage, ContentBlock, Message, StopReason, ThinkingContent, ToolCall,
    ToolResultMessage, Usage, UserContent, UserMessage,
};
use pi::agent::scripted::ScriptedProvider;
use pi::session::ids::{random_u64, uuid_v7_at};
use pi::session::layout::session_file_name;
use pi::session::time::iso_from_ms;
use pi::session::{
    EntryKind, ListScope, Session, SessionEntry, SessionHeader, SessionPaths, SessionRecorder,
    list_sessions,
};
use serde_json::json;

const CODE: &str = r#"pub fn parse_config(path: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Io(path.into(), e))?;
    let table: toml::Table = text.parse().map_err(|e| ConfigError::Syntax { line: 3, col: "x" })?;
    // Walk every key and warn about the ones we do not know.
    for (key, value) in &table {
        if !KNOWN.contains(&key.as_str()) { warnings.push(format!("unknown key `{key}`\t(ignored)")); }
    }
    Ok(Config::from_table(table))
}
"#;

/// Deterministic pseudo-random numbers (xorshift), seeded once.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() as usize) % (hi - lo).max(1)
    }
}

fn text_of(len: usize) -> String {
    let mut s = String::with_capacity(len + CODE.len());
    while s.len() < len {
        s.push_str(CODE);
    }
    s.truncate(len);
    while !s.is_char_boundary(s.len()) {
        s.pop();
    }
    s
}

fn usage() -> Usage {
    Usage {
        input: 12_000,
        output: 300,
        cache_read: 11_000,
        cache_write: 500,
        total_tokens: 23_800,
        ..Default::default()
    }
}

/// Write one session with `entries` entries of about `bytes` bytes in total.
fn generate(path: &Path, entries: usize, bytes: usize, seed: u64) -> std::io::Result<()> {
    let mut rng = Rng(seed | 1);
    let start = 1_790_000_000_000i64;
    let id = uuid_v7_at(start);
    let header = SessionHeader::new(id, iso_from_ms(start), "/work/project".into(), None);
    let mut w = Writer {
        out: BufWriter::with_capacity(1 << 20, File::create(path)?),
        parent: None,
        written: 0,
        n: 0,
        start,
    };
    writeln!(w.out, "{}", header.to_line())?;
    w.emit(EntryKind::ModelChange {
        provider: "anthropic".into(),
        model_id: "claude-sonnet-4-5".into(),
    })?;
    w.emit(EntryKind::ThinkingLevelChange {
        thinking_level: "medium".into(),
    })?;
    // Budget per tool result so the file lands near `bytes`.
    let turns = (entries.saturating_sub(2)) / 2;
    let mut call = 0usize;
    while w.n < entries {
        let ts = start + w.n as i64 * 1000;
        let remaining_entries = entries - w.n;
        if w.n % 20 == 2 || remaining_entries == 1 {
            let len = rng.range(80, 1500);
            w.emit(EntryKind::Message(AgentMessage::from(Message::User(
                UserMessage {
                    content: UserContent::Text(text_of(len)),
                    synthetic: false,
                    steering: false,
                    attribution: None,
                    timestamp: ts,
                },
            ))))?;
            continue;
        }
        call += 1;
        let call_id = format!("toolu_{call:08}");
        let mut a = AssistantMessage::empty("anthropic-messages", "anthropic", "claude-sonnet-4-5");
        a.timestamp = ts;
        a.usage = usage();
        a.content.push(ContentBlock::Thinking(ThinkingContent {
            thinking: text_of(rng.range(100, 600)),
            thinking_signature: Some("EqQBCkgIARABGAIiQL7xg".repeat(8)),
            item_id: None,
        }));
        a.content
            .push(ContentBlock::text(text_of(rng.range(50, 400))));
        a.content.push(ContentBlock::ToolCall(ToolCall {
            id: call_id.clone(),
            name: "read".into(),
            arguments: json!({"path": format!("src/module_{call}.rs"), "offset": 1, "limit": 400}),
            intent: None,
            thought_signature: None,
        }));
        a.stop_reason = StopReason::ToolUse;
        w.emit(EntryKind::Message(a.into()))?;
        // Tool results carry the bulk: most are a few KB, one in ten is large.
        let left_bytes = bytes.saturating_sub(w.written);
        let left_results = turns.saturating_sub(call).max(1);
        let avg = left_bytes / left_results;
        let len = if rng.range(0, 10) == 0 {
            rng.range(avg * 4, avg * 8)
        } else {
            rng.range(avg / 4, avg * 2 / 3 + 1)
        };
        let r = ToolResultMessage {
            tool_call_id: call_id,
            tool_name: "read".into(),
            content: vec![ContentBlock::text(text_of(len.max(64)))],
            details: Some(json!({"truncation": null})),
            is_error: false,
            useless: false,
            timestamp: ts + 1,
        };
        w.emit(EntryKind::Message(r.into()))?;
    }
    w.out.flush()
}

/// Appends entries, each a child of the previous one.
struct Writer {
    out: BufWriter<File>,
    parent: Option<String>,
    written: usize,
    n: usize,
    start: i64,
}

impl Writer {
    fn emit(&mut self, kind: EntryKind) -> std::io::Result<()> {
        self.n += 1;
        let id = format!("{:08x}", self.n as u32 ^ 0x5a5a_0000);
        let line = SessionEntry {
            id: id.clone(),
            parent_id: self.parent.replace(id),
            timestamp: iso_from_ms(self.start + self.n as i64 * 1000),
            kind,
        }
        .to_line();
        self.written += line.len() + 1;
        writeln!(self.out, "{line}")
    }
}

/// What happens before the model is asked for a compaction summary of a long session, and
/// after: the cut point, the request text, the entry appended to a copy of the file.
fn prepare(path: &Path) -> Result<(), String> {
    use pi::agent::policy::compaction::{
        MAX_TOOL_RESULT_CHARS, assemble, history_request, plan, turn_prefix_request,
    };
    let session = Session::load(path).map_err(|e| e.to_string())?;
    let context = session.context();
    let copy = std::env::temp_dir().join(format!("pi-prepare-{}.jsonl", std::process::id()));
    fs::copy(path, &copy).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let messages = &context.messages;
    let plan = plan(messages, 20_000).ok_or("nothing to compact")?;
    // The transcript part of each request bounded as for a 200k-token model.
    let budget = (200_000 - 16_384) * 4;
    let history = history_request(messages, &plan, None, MAX_TOOL_RESULT_CHARS, budget);
    let prefix = plan
        .turn_prefix
        .clone()
        .map(|p| turn_prefix_request(messages, p, None, MAX_TOOL_RESULT_CHARS, budget));
    let planned = started.elapsed();
    let summary = assemble("## Goal\n(the model's notes)", None, &plan.files);
    let first_kept = context.origins[plan.first_kept]
        .entry_id()
        .ok_or("the first kept message has no entry")?
        .to_string();
    let entry = SessionEntry {
        id: "c0mpact1".into(),
        parent_id: session.leaf_id().map(str::to_string),
        timestamp: "2026-12-03T00:00:00.000Z".into(),
        kind: EntryKind::Compaction(Box::new(pi::session::Compaction {
            summary,
            first_kept_entry_id: first_kept,
            tokens_before: plan.tokens_before,
            details: Some(plan.files.details()),
            from_hook: None,
        })),
    };
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(&copy)
        .map_err(|e| e.to_string())?;
    writeln!(f, "{}", entry.to_line()).map_err(|e| e.to_string())?;
    f.sync_data().map_err(|e| e.to_string())?;
    let took = started.elapsed();
    let _ = fs::remove_file(&copy);
    println!(
        "prepare: {:.1} ms (cut + requests {:.1} ms) | {} messages, {} summarised, requests {:.1} KB + {:.1} KB (split turn)",
        took.as_secs_f64() * 1000.0,
        planned.as_secs_f64() * 1000.0,
        messages.len(),
        plan.first_kept,
        history.prompt.len() as f64 / 1024.0,
        prefix.map_or(0.0, |p| p.prompt.len() as f64 / 1024.0)
    );
    Ok(())
}

fn resume(path: &Path) -> Result<(), String> {
    let started = Instant::now();
    let session = Session::load(path).map_err(|e| e.to_string())?;
    let loaded = started.elapsed();
    let file_bytes = session.byte_len();
    let entries = session.entries.len();
    let warnings = session.warnings.len();
    let recorder = SessionRecorder::resume(&session).map_err(|e| e.to_string())?;
    let t_rec = started.elapsed();
    let ctx = session.into_context();
    let t_ctx = started.elapsed();
    if std::env::var_os("PHASES").is_some() {
        eprintln!("phases: load {loaded:?} recorder {t_rec:?} context {t_ctx:?}");
    }
    let model = ctx
        .model
        .clone()
        .ok_or_else(|| "the session names no model".to_string())?;
    let agent = Agent::new(AgentSettings::new(
        Arc::new(ScriptedProvider::default()),
        Model::new(&model.provider, "anthropic-messages", &model.model_id),
    ));
    let messages = ctx.messages.len();
    agent
        .replace_messages(ctx.messages)
        .map_err(|e| e.to_string())?;
    let ready = started.elapsed();
    println!(
        "resume: {:.1} ms (load {:.1} ms) | {entries} entries, {messages} messages, {:.1} MB, {warnings} warnings, leaf {}",
        ready.as_secs_f64() * 1000.0,
        loaded.as_secs_f64() * 1000.0,
        file_bytes as f64 / 1e6,
        recorder.leaf_id().unwrap_or("-"),
    );
    Ok(())
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).cloned().ok_or("missing argument (see --help)");
    let num =
        |i: usize| -> Result<usize, String> { arg(i)?.parse::<usize>().map_err(|e| e.to_string()) };
    match args.first().map(String::as_str) {
        Some("gen") => generate(Path::new(&arg(1)?), num(2)?, num(3)? << 20, 0x9e37_79b9)
            .map_err(|e| e.to_string()),
        Some("gen-many") => {
            let dir = arg(1)?;
            let (count, mb) = (num(2)?, num(3)?);
            fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            for i in 0..count {
                let ts = 1_790_000_000_000i64 + i as i64 * 60_000;
                let name = session_file_name(&iso_from_ms(ts), &uuid_v7_at(ts));
                let entries = (mb << 20) / 2500 + 3;
                generate(&Path::new(&dir).join(name), entries, mb << 20, random_u64())
                    .map_err(|e| e.to_string())?;
            }
            Ok(())
        }
        Some("load") => resume(Path::new(&arg(1)?)),
        Some("prepare") => prepare(Path::new(&arg(1)?)),
        Some("list") => {
            let paths = SessionPaths::in_dir(arg(1)?, None);
            let started = Instant::now();
            let list = list_sessions(&paths, ListScope::CurrentFolder);
            let took = started.elapsed();
            let total: u64 = list.sessions.iter().map(|s| s.size).sum();
            println!(
                "list: {:.1} ms | {} sessions, {:.1} MB on disk, {:.1} MB read",
                took.as_secs_f64() * 1000.0,
                list.sessions.len(),
                total as f64 / 1e6,
                list.bytes_read as f64 / 1e6
            );
            Ok(())
        }
        Some("count") => {
            // What the /resume picker does after a listing: count every listed file's messages.
            let paths = SessionPaths::in_dir(arg(1)?, None);
            let list = list_sessions(&paths, ListScope::CurrentFolder);
            let started = Instant::now();
            let messages: usize = list
                .sessions
                .iter()
                .filter_map(|s| pi::session::list::count_messages(&s.path))
                .sum();
            println!(
                "count: {:.1} ms | {} sessions, {messages} messages",
                started.elapsed().as_secs_f64() * 1000.0,
                list.sessions.len()
            );
            Ok(())
        }
        _ => {
            println!(
                "usage: session_load gen|gen-many|load|list|count ... (see the source header)"
            );
            Ok(())
        }
    }
}
