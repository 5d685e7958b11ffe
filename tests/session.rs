//! Session files (issue 5): the JSONL v3 format of the Node.js `pi` read and written, the
//! recorder fed by a real agent run, damage that must not stop a load (torn last line, corrupt
//! middle line, a crash while a tool ran), branching, compaction, old formats, listing,
//! finding and forking; one branch copied to a new file, the tree laid out for display,
//! renaming and deleting, counting messages, and tree-shaped files of the Node.js `pi`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::HashSet;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use pi::agent::engine::facade::{Agent, AgentSettings};
use pi::agent::protocol::events::AgentEvent;
use pi::agent::protocol::stream::Model;
use pi::agent::protocol::thinking::ThinkingLevel;
use pi::agent::protocol::types::{
    AgentMessage, AssistantMessage, ContentBlock, Cost, CustomMessage, Message, StopReason,
    TextContent, ThinkingContent, ToolCall, ToolResultMessage, Usage, UserContent, UserMessage,
};
use pi::agent::scripted::{ScriptedProvider, reply};
use pi::session::entry::{ParsedLine, parse_line};
use pi::session::list::{HEAD_BYTES, TAIL_BYTES};
use pi::session::lock::{SessionLock, lock_path};
use pi::session::manage::{delete, rename};
use pi::session::{
    BranchSummary, Compaction, CustomMessageEntry, EntryKind, ListScope, MessageOrigin, ModelRef,
    RecorderTask, STARTED_TOOL_TEXT, Session, SessionError, SessionPaths, SessionRecorder,
    StartFrom, TreeFilter, TreeKind, TreeRow, UNFINISHED_TOOL_TEXT, branch_to_new, count_messages,
    filter_rows, find_session, fork, list_sessions, newest_session, open_session, resume_hint,
    tree_rows,
};
use serde_json::{Map, Value, json};

const FIXTURE: &str = "tests/fixtures/node_v3_session.jsonl";
const FIXTURE_V1: &str = "tests/fixtures/node_v1_session.jsonl";
/// A Node.js `pi` session with a name, model and thinking changes, a label and two branches
/// from one reply (the second opened by a branch summary).
const FIXTURE_TREE: &str = "tests/fixtures/node_v3_tree_session.jsonl";
/// What the Node.js `pi` writes when it copies the first branch of [`FIXTURE_TREE`] to a new
/// file: `parentSession` in the header, the label written again at the end.
const FIXTURE_FORKED: &str = "tests/fixtures/node_v3_forked_session.jsonl";

/// A scratch directory removed at the end of the test.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "pi-session-{tag}-{}-{}",
            std::process::id(),
            pi::session::ids::random_u64()
        ));
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn user(text: &str, ts: i64) -> AgentMessage {
    AgentMessage::from(Message::User(UserMessage {
        content: UserContent::Text(text.into()),
        synthetic: false,
        steering: false,
        attribution: None,
        timestamp: ts,
    }))
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args,
        intent: None,
        thought_signature: None,
    }
}

fn assistant(text: &str, calls: Vec<ToolCall>, ts: i64) -> AgentMessage {
    let mut m = AssistantMessage::empty("anthropic-messages", "anthropic", "claude-sonnet-4-5");
    if !text.is_empty() {
        m.content.push(ContentBlock::text(text));
    }
    m.stop_reason = if calls.is_empty() {
        StopReason::Stop
    } else {
        StopReason::ToolUse
    };
    m.content
        .extend(calls.into_iter().map(ContentBlock::ToolCall));
    m.timestamp = ts;
    m.into()
}

fn tool_result(id: &str, name: &str, text: &str, ts: i64) -> AgentMessage {
    ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: name.into(),
        content: vec![ContentBlock::text(text)],
        details: None,
        is_error: false,
        useless: false,
        timestamp: ts,
    }
    .into()
}

fn lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn copy_fixture(dir: &Path, name: &str) -> PathBuf {
    let dest = dir.join(format!(
        "2026-12-02T09-34-49-681Z_01a2361b-5150-7635-b3fd-ab0404bb9f84{name}.jsonl"
    ));
    fs::copy(FIXTURE, &dest).unwrap();
    dest
}

// ----- the Node.js format -----------------------------------------------------------------

fn fixture_expected_messages() -> Vec<AgentMessage> {
    let usage = |input, output, cache_read, cache_write, total, cost: [f64; 5]| Usage {
        input,
        output,
        cache_read,
        cache_write,
        total_tokens: total,
        reasoning_tokens: None,
        cost: Cost {
            input: cost[0],
            output: cost[1],
            cache_read: cost[2],
            cache_write: cost[3],
            total: cost[4],
        },
    };
    let first = AssistantMessage {
        content: vec![
            ContentBlock::Thinking(ThinkingContent {
                thinking: "The user wants the README. I will read it.".into(),
                thinking_signature: Some("EqQBCkgIARABGAIiQL7xg".into()),
                item_id: None,
            }),
            ContentBlock::text("Let me look at it."),
            ContentBlock::ToolCall(call(
                "toolu_01HcG4mE8Qy1",
                "read",
                json!({"path": "README.md"}),
            )),
        ],
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        usage: usage(
            1203,
            58,
            0,
            1180,
            2441,
            [0.003609, 0.00087, 0.0, 0.004425, 0.008904],
        ),
        stop_reason: StopReason::ToolUse,
        timestamp: 1796204092110,
        ..Default::default()
    };
    let second = AssistantMessage {
        content: vec![ContentBlock::Text(TextContent {
            text: "README.md describes **Mock**, a tiny project used in tests.".into(),
            text_signature: None,
            ..Default::default()
        })],
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        usage: usage(
            1290,
            21,
            1180,
            0,
            2491,
            [0.00387, 0.000315, 0.000354, 0.0, 0.004539],
        ),
        stop_reason: StopReason::Stop,
        timestamp: 1796204094910,
        ..Default::default()
    };
    vec![
        AgentMessage::from(Message::User(UserMessage {
            content: UserContent::Blocks(vec![ContentBlock::text("What is in README.md?")]),
            synthetic: false,
            steering: false,
            attribution: None,
            timestamp: 1796204092103,
        })),
        first.into(),
        tool_result(
            "toolu_01HcG4mE8Qy1",
            "read",
            "# Mock\n\nA tiny project used in tests.\n",
            1796204094901,
        ),
        second.into(),
    ]
}

/// The field names of a JSON object, in file order.
fn field_names(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

#[test]
fn node_fixture_loads_with_model_thinking_and_context() {
    let s = Session::load(Path::new(FIXTURE)).unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(s.header.version, 3);
    assert_eq!(s.id(), "01a2361b-5150-7635-b3fd-ab0404bb9f84");
    assert_eq!(s.cwd(), "/tmp/mock");
    assert_eq!(s.entries.len(), 6);
    assert_eq!(s.leaf_id(), Some("9f13ab27"));
    let ctx = s.context();
    assert_eq!(ctx.messages, fixture_expected_messages());
    assert_eq!(
        ctx.origins,
        ["c41e8a90", "0b6f7d15", "e2d4c6b8", "9f13ab27"]
            .map(|id| MessageOrigin::Message(id.into()))
            .to_vec()
    );
    assert_eq!(
        ctx.model,
        Some(ModelRef {
            provider: "anthropic".into(),
            model_id: "claude-sonnet-4-5".into()
        })
    );
    assert_eq!(ctx.thinking_level, Some(ThinkingLevel::Medium));
    assert_eq!(ctx.leaf_id.as_deref(), Some("9f13ab27"));
    assert_eq!(ctx.placeholders, 0);
    // Moving the messages out gives the same context.
    assert_eq!(s.clone().into_context().messages, ctx.messages);
}

fn numbers_as_f64(v: Value) -> Value {
    match v {
        Value::Number(n) => json!(n.as_f64().unwrap()),
        Value::Array(a) => Value::Array(a.into_iter().map(numbers_as_f64).collect()),
        Value::Object(o) => {
            Value::Object(o.into_iter().map(|(k, v)| (k, numbers_as_f64(v))).collect())
        }
        other => other,
    }
}

#[test]
fn node_fixture_lines_serialize_back_to_the_same_json() {
    let all = [FIXTURE, FIXTURE_TREE, FIXTURE_FORKED].map(|f| lines(Path::new(f)));
    for line in all.concat() {
        let back = match parse_line(line.as_bytes()).unwrap() {
            ParsedLine::Header(h) => h.to_line(),
            ParsedLine::Entry(e) => pi::session::SessionEntry {
                id: e.id.unwrap(),
                parent_id: e.parent_id.flatten(),
                timestamp: e.timestamp.unwrap(),
                kind: e.kind,
            }
            .to_line(),
        };
        // Numbers compare by value (`0` and `0.0` are the same number to JavaScript).
        let a = numbers_as_f64(serde_json::from_str(&line).unwrap());
        let b = numbers_as_f64(serde_json::from_str(&back).unwrap());
        assert_eq!(a, b);
    }
}

#[tokio::test]
async fn node_fixture_resumes_into_an_agent_and_appends_under_its_leaf() {
    let dir = Scratch::new("resume");
    let path = copy_fixture(dir.path(), "");
    let session = Session::load(&path).unwrap();
    let mut recorder = SessionRecorder::resume(&session).unwrap();
    let ctx = session.into_context();

    let provider = ScriptedProvider::new([reply::text("It also has a LICENSE.")]);
    let model = ctx.model.clone().unwrap();
    let agent = Agent::new(AgentSettings::new(
        Arc::new(provider.clone()),
        Model::new(&model.provider, "anthropic-messages", &model.model_id),
    ));
    agent.replace_messages(ctx.messages.clone()).unwrap();
    assert_eq!(recorder.set_model(&model.provider, &model.model_id), None);
    assert_eq!(recorder.set_thinking_level(ThinkingLevel::Medium), None);
    let task = RecorderTask::from_events(agent.subscribe(), recorder);
    agent.prompt_text("Anything else?").unwrap();
    agent.wait_idle().await;
    recorder = task.finish().await.unwrap();
    assert!(recorder.take_errors().is_empty());

    // The provider saw the resumed history, then the new prompt.
    let sent = &provider.requests()[0].context.messages;
    assert_eq!(sent.len(), 5);
    for (got, want) in sent.iter().zip(fixture_expected_messages()) {
        assert_eq!(AgentMessage::Llm(got.clone()), want);
    }

    // The file keeps its old lines byte for byte and grows under the old leaf.
    let after = lines(&path);
    assert_eq!(after[..7], lines(Path::new(FIXTURE))[..]);
    assert_eq!(after.len(), 9);
    let reloaded = Session::load(&path).unwrap();
    assert!(reloaded.warnings.is_empty());
    let new_user = &reloaded.entries[6];
    assert_eq!(new_user.parent_id.as_deref(), Some("9f13ab27"));
    assert_eq!(
        reloaded.entries[7].parent_id.as_deref(),
        Some(new_user.id.as_str())
    );
    assert_eq!(reloaded.context().messages, agent.messages());
}

// ----- writing ----------------------------------------------------------------------------

fn every_kind() -> Vec<EntryKind> {
    let mut unknown = Map::new();
    unknown.insert("tier".into(), json!("priority"));
    unknown.insert("nested".into(), json!({"a": [1, 2, {"b": null}]}));
    vec![
        EntryKind::ModelChange {
            provider: "openai".into(),
            model_id: "gpt-5".into(),
        },
        EntryKind::ThinkingLevelChange {
            thinking_level: "high".into(),
        },
        EntryKind::Message(user("hello", 1)),
        EntryKind::Message(assistant("hi", vec![call("c1", "bash", json!({"command": "ls"}))], 2)),
        EntryKind::Message(tool_result("c1", "bash", "a\nb", 3)),
        EntryKind::Message(AgentMessage::from(CustomMessage::new(
            "bashExecution",
            json!({"command": "ls", "output": "x", "exitCode": 0, "cancelled": false, "truncated": false, "timestamp": 4})
                .as_object()
                .unwrap()
                .clone(),
        ))),
        EntryKind::SessionInfo {
            name: Some("refactor".into()),
        },
        EntryKind::Label {
            target_id: "will-be-replaced".into(),
            label: Some("checkpoint".into()),
        },
        EntryKind::Label {
            target_id: "will-be-replaced".into(),
            label: None,
        },
        EntryKind::Compaction(Box::new(Compaction {
            summary: "did things".into(),
            first_kept_entry_id: "will-be-replaced".into(),
            tokens_before: 12345,
            details: Some(json!({"readFiles": ["a.rs"], "modifiedFiles": []})),
            from_hook: Some(false),
        })),
        EntryKind::Compaction(Box::new(Compaction {
            summary: "again".into(),
            first_kept_entry_id: "will-be-replaced".into(),
            tokens_before: 1,
            details: None,
            from_hook: None,
        })),
        EntryKind::BranchSummary(Box::new(BranchSummary {
            from_id: "will-be-replaced".into(),
            summary: "tried another way".into(),
            details: None,
            from_hook: Some(true),
        })),
        EntryKind::Custom {
            custom_type: "my-ext".into(),
            data: Some(Box::new(json!({"count": 42}))),
        },
        EntryKind::Custom {
            custom_type: "my-ext".into(),
            data: None,
        },
        EntryKind::CustomMessage(Box::new(CustomMessageEntry {
            custom_type: "my-ext".into(),
            content: UserContent::Blocks(vec![ContentBlock::text("injected")]),
            display: false,
            details: Some(json!({"k": 1})),
        })),
        EntryKind::Unknown {
            entry_type: "model_usage".into(),
            fields: Box::new(unknown),
        },
    ]
}

#[test]
fn every_entry_type_round_trips_through_a_file() {
    let dir = Scratch::new("kinds");
    let mut rec = SessionRecorder::new_session(dir.path(), Path::new("/work/app"));
    let mut written = Vec::new();
    let mut first_id: Option<String> = None;
    for mut kind in every_kind() {
        if let Some(first) = &first_id {
            match &mut kind {
                EntryKind::Label { target_id, .. } => *target_id = first.clone(),
                EntryKind::Compaction(c) => c.first_kept_entry_id = first.clone(),
                EntryKind::BranchSummary(b) => b.from_id = first.clone(),
                _ => {}
            }
        }
        let id = rec.append(kind.clone());
        first_id.get_or_insert(id.clone());
        written.push((id, kind));
    }
    rec.close().unwrap();
    assert!(rec.take_errors().is_empty());

    let s = Session::load(rec.path()).unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(s.id(), rec.session_id());
    assert_eq!(s.header.cwd, "/work/app");
    assert_eq!(s.entries.len(), written.len());
    let mut parent: Option<String> = None;
    for (entry, (id, kind)) in s.entries.iter().zip(&written) {
        assert_eq!(&entry.id, id);
        assert_eq!(entry.parent_id, parent);
        assert_eq!(&entry.kind, kind);
        assert!(pi::session::time::ms_from_iso(&entry.timestamp).is_some());
        parent = Some(id.clone());
    }
    // Each line also survives parse → write unchanged.
    for line in lines(rec.path()).iter().skip(1) {
        let ParsedLine::Entry(e) = parse_line(line.as_bytes()).unwrap() else {
            panic!("entry expected")
        };
        let again = pi::session::SessionEntry {
            id: e.id.unwrap(),
            parent_id: e.parent_id.flatten(),
            timestamp: e.timestamp.unwrap(),
            kind: e.kind,
        }
        .to_line();
        assert_eq!(&again, line);
    }
}

#[test]
fn header_and_file_name_follow_the_node_layout() {
    let dir = Scratch::new("layout");
    let paths = SessionPaths::for_cwd(dir.path(), Path::new("/tmp/mock"));
    let mut rec = SessionRecorder::new_session(&paths.dir, Path::new("/tmp/mock"));
    rec.append_message(&assistant("hi", vec![], 1));
    let path = rec.path().to_path_buf();
    assert_eq!(
        path.parent().unwrap(),
        dir.path().join("sessions").join("--tmp-mock--")
    );
    let name = path.file_name().unwrap().to_str().unwrap();
    let (stamp, rest) = name.split_once('_').unwrap();
    assert_eq!(rest, format!("{}.jsonl", rec.session_id()));
    assert_eq!(stamp.len(), "2026-12-02T09-34-49-681Z".len());
    assert!(!stamp.contains(':') && !stamp.contains('.'));
    let header: Value = serde_json::from_str(&lines(&path)[0]).unwrap();
    assert_eq!(
        field_names(&header),
        ["type", "version", "id", "timestamp", "cwd"]
    );
    assert_eq!(header["version"], 3);
    assert_eq!(
        pi::session::time::file_stamp(header["timestamp"].as_str().unwrap()),
        stamp
    );
    let id = rec.session_id();
    assert_eq!(&id[14..15], "7", "UUIDv7: {id}");
    let entry: Value = serde_json::from_str(&lines(&path)[1]).unwrap();
    assert_eq!(
        field_names(&entry),
        ["type", "id", "parentId", "timestamp", "message"]
    );
    assert_eq!(entry["parentId"], Value::Null);
}

#[test]
fn the_file_is_created_with_the_first_message() {
    let dir = Scratch::new("lazy");
    let sessions = dir.path().join("sessions").join("--w--");
    let mut rec = SessionRecorder::new_session(&sessions, Path::new("/w"));
    rec.set_model("anthropic", "claude-sonnet-4-5");
    rec.set_thinking_level(ThinkingLevel::High);
    // Settings alone wait in memory.
    assert!(!sessions.exists(), "no folder before a message");
    assert!(!rec.is_persisted());
    assert_eq!(rec.pending_lines(), 3);

    // The prompt is on disk at once, so a crash before the reply keeps it.
    rec.append_message(&user("hello", 1));
    assert!(rec.is_persisted());
    let l = lines(rec.path());
    assert_eq!(l.len(), 4);
    let types: Vec<String> = l
        .iter()
        .map(|x| {
            serde_json::from_str::<Value>(x).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        types,
        [
            "session",
            "model_change",
            "thinking_level_change",
            "message"
        ]
    );
    rec.append_message(&assistant("hi", vec![], 2));
    assert_eq!(lines(rec.path()).len(), 5);
    // Each later entry is on disk as soon as it is appended (before any sync).
    rec.append_message(&user("more", 3));
    assert_eq!(lines(rec.path()).len(), 6);
    // Unchanged settings write nothing; changed ones do.
    assert_eq!(rec.set_model("anthropic", "claude-sonnet-4-5"), None);
    assert_eq!(rec.set_thinking_level(ThinkingLevel::High), None);
    assert!(rec.set_thinking_level(ThinkingLevel::Low).is_some());
    assert_eq!(lines(rec.path()).len(), 7);

    // A session in which nothing was said leaves nothing behind.
    let mut quiet = SessionRecorder::new_session(&dir.path().join("quiet"), Path::new("/w"));
    quiet.set_model("anthropic", "claude-sonnet-4-5");
    quiet.close().unwrap();
    drop(quiet);
    assert!(!dir.path().join("quiet").exists());
}

#[test]
fn a_failed_write_loses_no_entry_and_is_reported() {
    let dir = Scratch::new("fail");
    // The session folder's place is taken by a file, so creating it fails.
    let blocked = dir.path().join("sessions");
    fs::write(&blocked, "not a folder").unwrap();
    let mut rec = SessionRecorder::new_session(&blocked.join("--w--"), Path::new("/w"));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    rec.set_error_reporter(Box::new(move |e| sink.lock().unwrap().push(e.to_string())));
    rec.append_message(&user("q", 1));
    rec.append_message(&assistant("a", vec![], 2));
    rec.append_message(&user("q2", 3));
    assert!(!rec.is_persisted());
    let errors = seen.lock().unwrap().clone();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(
        errors[0].contains("cannot create the folder of session file"),
        "{}",
        errors[0]
    );
    assert_eq!(rec.pending_lines(), 4);

    // The disk comes back: everything goes out, in order, with the next write.
    fs::remove_file(&blocked).unwrap();
    rec.append_message(&assistant("a2", vec![], 4));
    assert_eq!(rec.pending_lines(), 0);
    let s = Session::load(rec.path()).unwrap();
    assert!(s.warnings.is_empty());
    let texts: Vec<String> = s
        .context()
        .messages
        .iter()
        .map(|m| match m.as_llm() {
            Some(Message::User(u)) => u.content.joined_text(),
            Some(Message::Assistant(a)) => a.text(),
            _ => String::new(),
        })
        .collect();
    assert_eq!(texts, ["q", "a", "q2", "a2"]);
}

#[test]
fn known_secrets_are_masked_in_what_is_written() {
    let dir = Scratch::new("secret");
    let key = "sk-ant-api03-SECRETSECRETSECRET";
    let mut rec = SessionRecorder::new_session(dir.path(), Path::new("/w"));
    rec.add_secret(key);
    rec.set_model("anthropic", "claude-sonnet-4-5");
    let mut failed = AssistantMessage::empty("anthropic-messages", "anthropic", "claude");
    failed.stop_reason = StopReason::Error;
    failed.error_message = Some(format!("401: invalid x-api-key {key}"));
    rec.append_message(&failed.into());
    rec.close().unwrap();
    let text = fs::read_to_string(rec.path()).unwrap();
    assert!(!text.contains(key));
    assert!(text.contains("[redacted]"));
}

#[tokio::test]
async fn a_recorded_run_parses_back_with_the_same_ids_and_tree() {
    let dir = Scratch::new("run");
    let provider = ScriptedProvider::new([
        reply::tools(&[reply::call("c1", "echo", json!({"text": "one"}))]),
        reply::text("done"),
        reply::text("second answer"),
    ]);
    let settings = AgentSettings::new(Arc::new(provider.clone()), support::model())
        .with_tools(vec![support::TestTool::echo("echo").arc()]);
    let agent = Agent::new(settings);
    let mut rec = SessionRecorder::new_session(dir.path(), Path::new("/w"));
    rec.set_model("scripted", "scripted-model");
    rec.set_thinking_level(ThinkingLevel::Off);
    let task = RecorderTask::from_events(agent.subscribe_filtered(SessionRecorder::wants), rec);
    agent.prompt_text("use the tool").unwrap();
    agent.wait_idle().await;
    task.with(|r| {
        r.set_name("tool test");
    });
    agent.prompt_text("again").unwrap();
    agent.wait_idle().await;
    let rec = task.finish().await.unwrap();

    let s = Session::load(rec.path()).unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(s.name(), Some("tool test"));
    let ids: Vec<&str> = s.entries.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len());
    assert!(ids.iter().all(|id| id.len() == 8));
    for pair in s.entries.windows(2) {
        assert_eq!(pair[1].parent_id.as_deref(), Some(pair[0].id.as_str()));
    }
    assert_eq!(rec.leaf_id(), s.leaf_id());
    // Whatever the agent holds, the file gives back.
    assert_eq!(s.context().messages, agent.messages());
    let ctx = s.context();
    assert_eq!(ctx.thinking_level, Some(ThinkingLevel::Off));
    assert_eq!(ctx.model.unwrap().model_id, "scripted-model");
}

#[tokio::test]
async fn a_harmony_leak_discarded_by_the_loop_is_neither_recorded_nor_kept_by_the_agent() {
    let dir = Scratch::new("harmony");
    let leak = "Reading.commentary to=functions.read {\"path\":\"a\"}";
    let provider = ScriptedProvider::new([reply::text(leak), reply::text("clean")]);
    let model = Model::new("openai", "openai-responses", "gpt-5");
    let agent = Agent::new(AgentSettings::new(Arc::new(provider.clone()), model));
    let rec = SessionRecorder::new_session(dir.path(), Path::new("/w"));
    let task = RecorderTask::from_events(agent.subscribe_filtered(SessionRecorder::wants), rec);
    agent.prompt_text("look").unwrap();
    agent.wait_idle().await;
    let rec = task.finish().await.unwrap();

    assert_eq!(provider.request_count(), 2);
    let kept: Vec<String> = agent
        .messages()
        .iter()
        .filter_map(AgentMessage::as_assistant)
        .map(AssistantMessage::text)
        .collect();
    assert_eq!(kept, ["clean"]);
    let s = Session::load(rec.path()).unwrap();
    assert_eq!(s.context().messages, agent.messages());
    let file = fs::read_to_string(rec.path()).unwrap();
    assert!(!file.contains("to=functions"), "{file}");
}

// ----- damage -----------------------------------------------------------------------------

#[test]
fn a_file_cut_anywhere_loads() {
    let full = fs::read(FIXTURE).unwrap();
    let line_ends: Vec<usize> = full
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i + 1)
        .collect();
    for cut in 0..=full.len() {
        let s = Session::read(&full[..cut], None).unwrap();
        let complete_lines = line_ends.iter().filter(|e| **e <= cut).count();
        let expected_entries = complete_lines.saturating_sub(1);
        // A cut right at the end of a line's JSON (before its newline) still parses.
        let extra = usize::from(
            cut > 0
                && !line_ends.contains(&cut)
                && line_ends.contains(&(cut + 1))
                && complete_lines > 0,
        );
        assert_eq!(s.entries.len(), expected_entries + extra, "cut at {cut}");
        let torn = cut > 0 && !line_ends.contains(&cut) && extra == 0 && complete_lines > 0;
        if torn {
            assert_eq!(s.warnings.len(), 1, "cut at {cut}: {:?}", s.warnings);
            assert_eq!(s.warnings[0].line, complete_lines + 1);
            assert!(s.warnings[0].message.contains("ends in the middle"));
        }
    }
}

#[test]
fn a_torn_file_resumes_without_gluing_the_next_entry_to_the_fragment() {
    let dir = Scratch::new("torn");
    let path = copy_fixture(dir.path(), "");
    let full = fs::read(&path).unwrap();
    fs::write(&path, &full[..full.len() - 40]).unwrap();
    let s = Session::load(&path).unwrap();
    assert_eq!(s.leaf_id(), Some("e2d4c6b8"));
    assert_eq!(s.warnings.len(), 1);
    let mut rec = SessionRecorder::resume(&s).unwrap();
    let id = rec.append_message(&assistant("answer again", vec![], 5));
    rec.close().unwrap();
    let again = Session::load(&path).unwrap();
    assert_eq!(
        again.warnings.len(),
        1,
        "only the old fragment: {:?}",
        again.warnings
    );
    assert_eq!(again.leaf_id(), Some(id.as_str()));
    assert_eq!(
        again.entry(&id).unwrap().parent_id.as_deref(),
        Some("e2d4c6b8")
    );
    // The file was only appended to.
    assert_eq!(
        fs::read(&path).unwrap()[..full.len() - 40],
        full[..full.len() - 40]
    );
}

#[test]
fn a_corrupt_middle_line_is_skipped_with_a_warning_and_the_branch_holds() {
    let mut l = lines(Path::new(FIXTURE));
    l[3] = r#"{"type":"message","id":"c41e8a90","parentId":"a07c33d2","tim\u0000 garbage"#.into();
    let text = l.join("\n") + "\n";
    let before = text.clone();
    let s = Session::read(text.as_bytes(), None).unwrap();
    assert_eq!(text, before);
    assert_eq!(s.entries.len(), 5);
    assert_eq!(s.warnings[0].line, 4);
    assert!(s.warnings[0].message.contains("unreadable line skipped"));
    assert!(
        s.warnings[1].message.contains("damaged line"),
        "{:?}",
        s.warnings
    );
    let ctx = s.context();
    // The user message is gone; the rest of the conversation (and the settings) remain.
    assert_eq!(ctx.messages, fixture_expected_messages()[1..].to_vec());
    assert_eq!(ctx.thinking_level, Some(ThinkingLevel::Medium));
}

#[test]
fn a_crash_while_a_tool_ran_gets_placeholder_results() {
    let dir = Scratch::new("crash");
    let mut rec = SessionRecorder::new_session(dir.path(), Path::new("/w"));
    rec.append_message(&user("edit both files", 1));
    rec.append_message(&assistant(
        "",
        vec![
            call("c1", "edit", json!({"path": "a"})),
            call("c2", "bash", json!({"command": "sleep 100"})),
        ],
        2,
    ));
    rec.append_message(&tool_result("c1", "edit", "ok", 3));
    // The process dies here, while `c2` runs (the file does not say it started).
    let path = rec.path().to_path_buf();
    std::mem::forget(rec);

    let s = Session::load(&path).unwrap();
    let ctx = s.context();
    assert_eq!(ctx.placeholders, 1);
    assert_eq!(ctx.messages.len(), 4);
    let r = ctx.messages[3].as_tool_result().unwrap();
    assert_eq!(r.tool_call_id, "c2");
    assert_eq!(r.tool_name, "bash");
    assert!(r.is_error);
    assert_eq!(r.text(), UNFINISHED_TOOL_TEXT);
    assert!(!r.text().contains("not run"));
    assert_eq!(r.details.as_ref().unwrap()["execution"], "unknown");
    assert_eq!(r.timestamp, 2);
    assert_eq!(ctx.origins[3], MessageOrigin::Placeholder);
    // Loading never writes the placeholder into the file.
    assert_eq!(lines(&path).len(), 4);

    // Resumed, then the user types: the placeholder stays right after the tool results.
    let mut rec = SessionRecorder::resume(&s).unwrap();
    rec.append_message(&user("what happened?", 5));
    rec.close().unwrap();
    let ctx = Session::load(&path).unwrap().context();
    let roles: Vec<&str> = ctx.messages.iter().map(AgentMessage::role).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "toolResult", "toolResult", "user"]
    );
}

#[test]
fn a_call_recorded_as_started_resumes_as_started_with_an_unknown_outcome() {
    let dir = Scratch::new("started");
    let mut rec = SessionRecorder::new_session(dir.path(), Path::new("/w"));
    rec.append_message(&user("deploy", 1));
    let asked = assistant(
        "",
        vec![
            call("c1", "bash", json!({"command": "./deploy.sh"})),
            call("c2", "read", json!({"path": "log"})),
        ],
        2,
    );
    rec.handle(&AgentEvent::MessageEnd {
        message: asked.clone(),
    });
    rec.handle(&AgentEvent::ToolExecutionStart {
        tool_call_id: "c1".into(),
        tool_name: "bash".into(),
        args: Arc::new(json!({"command": "./deploy.sh"})),
        intent: None,
    });
    // Killed while `c1` runs; `c2` had not started.
    let path = rec.path().to_path_buf();
    std::mem::forget(rec);
    let ctx = Session::load(&path).unwrap().context();
    assert_eq!(ctx.placeholders, 2);
    let results: Vec<_> = ctx
        .messages
        .iter()
        .filter_map(AgentMessage::as_tool_result)
        .collect();
    assert_eq!(results[0].tool_call_id, "c1");
    assert_eq!(results[0].text(), STARTED_TOOL_TEXT);
    assert_eq!(results[0].details.as_ref().unwrap()["execution"], "started");
    assert_eq!(results[1].tool_call_id, "c2");
    assert_eq!(results[1].text(), UNFINISHED_TOOL_TEXT);
    // The record of the start is not a message.
    let roles: Vec<&str> = ctx.messages.iter().map(AgentMessage::role).collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "toolResult"]);
}

/// A new session in which the person asked to look, and a `read` call (`c1`) answered `alpha`.
fn look_and_read(tag: &str) -> (Scratch, SessionRecorder) {
    let dir = Scratch::new(tag);
    let mut rec = SessionRecorder::new_session(dir.path(), Path::new("/w"));
    rec.append_message(&user("look", 1));
    rec.append_message(&assistant(
        "",
        vec![call("c1", "read", json!({"path": "a"}))],
        2,
    ));
    rec.append_message(&tool_result("c1", "read", "alpha", 3));
    (dir, rec)
}

#[test]
fn a_result_whose_call_is_gone_becomes_a_quoted_user_message() {
    let (_dir, mut rec) = look_and_read("orphan");
    // A second answer to the same call, and one to a call no message made.
    rec.append_message(&tool_result("c1", "read", "alpha again", 4));
    rec.append_message(&tool_result("zz", "bash", "from nowhere", 5));
    rec.append_message(&assistant("done", vec![], 6));
    rec.close().unwrap();
    let ctx = Session::load(rec.path()).unwrap().context();
    assert_eq!(ctx.orphan_results, 2);
    assert_eq!(ctx.placeholders, 0);
    let roles: Vec<&str> = ctx.messages.iter().map(AgentMessage::role).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "user",
            "user",
            "assistant"
        ]
    );
    let quoted = match ctx.messages[4].as_llm() {
        Some(Message::User(u)) => u.content.joined_text(),
        other => panic!("{other:?}"),
    };
    assert!(
        quoted.contains("`bash`") && quoted.ends_with("from nowhere"),
        "{quoted}"
    );
}

#[tokio::test]
async fn a_resumed_crash_gives_the_provider_a_complete_history() {
    let dir = Scratch::new("crash-run");
    let mut rec = SessionRecorder::new_session(dir.path(), Path::new("/w"));
    rec.append_message(&user("run it", 1));
    rec.append_message(&assistant(
        "",
        vec![call("c9", "bash", json!({"command": "make"}))],
        2,
    ));
    let path = rec.path().to_path_buf();
    std::mem::forget(rec);

    let ctx = Session::load(&path).unwrap().into_context();
    let provider = ScriptedProvider::new([reply::text("The build was interrupted.")]);
    let agent = Agent::new(AgentSettings::new(
        Arc::new(provider.clone()),
        support::model(),
    ));
    agent.replace_messages(ctx.messages).unwrap();
    agent.prompt_text("and now?").unwrap();
    agent.wait_idle().await;
    let sent = &provider.requests()[0].context.messages;
    let roles: Vec<&str> = sent.iter().map(|m| m.role()).collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "user"]);
    let Message::ToolResult(r) = &*sent[2] else {
        panic!("tool result expected")
    };
    assert_eq!(r.tool_call_id, "c9");
}

#[test]
fn damaged_and_missing_files_are_errors_not_panics() {
    let dir = Scratch::new("bad");
    let missing = dir.path().join("nope.jsonl");
    let err = Session::load(&missing).unwrap_err();
    assert!(matches!(err, SessionError::Io { .. }));
    assert!(
        err.to_string().contains("cannot open session file"),
        "{err}"
    );
    let garbage = dir.path().join("garbage.jsonl");
    fs::write(&garbage, b"\x00\x01\x02 not json\n{{{{\n").unwrap();
    assert!(matches!(
        Session::load(&garbage),
        Err(SessionError::NotASession(_))
    ));
    let empty = dir.path().join("empty.jsonl");
    fs::write(&empty, b"").unwrap();
    let s = Session::load(&empty).unwrap();
    assert!(s.entries.is_empty());
    assert!(s.context().messages.is_empty());
}

// ----- tree, compaction, old formats ------------------------------------------------------

#[test]
fn branching_follows_parent_ids() {
    let dir = Scratch::new("branch");
    let mut rec = SessionRecorder::new_session(dir.path(), Path::new("/w"));
    rec.append_message(&user("u1", 1));
    let a1 = rec.append_message(&assistant("a1", vec![], 2));
    rec.append_message(&user("u2", 3));
    let a2 = rec.append_message(&assistant("a2", vec![], 4));
    rec.branch_from(Some(&a1)).unwrap();
    rec.append_message(&user("u2-retry", 5));
    rec.append_message(&assistant("a2-retry", vec![], 6));
    assert!(rec.branch_from(Some("ffffffff")).is_err());
    rec.close().unwrap();

    let s = Session::load(rec.path()).unwrap();
    let text = |ctx: &pi::session::SessionContext| -> Vec<String> {
        ctx.messages
            .iter()
            .map(|m| match m.as_llm() {
                Some(Message::User(u)) => u.content.joined_text(),
                Some(Message::Assistant(a)) => a.text(),
                _ => String::new(),
            })
            .collect()
    };
    assert_eq!(text(&s.context()), ["u1", "a1", "u2-retry", "a2-retry"]);
    assert_eq!(text(&s.context_at(Some(&a2))), ["u1", "a1", "u2", "a2"]);
    assert!(s.context_at(None).messages.is_empty());
    assert_eq!(s.children(&a1).len(), 2);
    assert_eq!(s.branch(Some(&a2)).len(), 4);
}

#[test]
fn compaction_replaces_the_older_part_with_its_summary() {
    let dir = Scratch::new("compact");
    let mut rec = SessionRecorder::new_session(dir.path(), Path::new("/w"));
    rec.append_message(&user("old question", 1));
    rec.append_message(&assistant("old answer", vec![], 2));
    let kept = rec.append_message(&user("kept question", 3));
    rec.append_message(&assistant("kept answer", vec![], 4));
    let c = rec.append(EntryKind::Compaction(Box::new(Compaction {
        summary: "We talked about old things.".into(),
        first_kept_entry_id: kept.clone(),
        tokens_before: 5000,
        details: None,
        from_hook: None,
    })));
    rec.append_message(&user("new question", 6));
    rec.append(EntryKind::BranchSummary(Box::new(BranchSummary {
        from_id: kept.clone(),
        summary: "An abandoned attempt.".into(),
        details: None,
        from_hook: None,
    })));
    rec.append(EntryKind::CustomMessage(Box::new(CustomMessageEntry {
        custom_type: "ext".into(),
        content: UserContent::Text("from an extension".into()),
        display: true,
        details: None,
    })));
    rec.append(EntryKind::Custom {
        custom_type: "ext-state".into(),
        data: Some(Box::new(json!(1))),
    });
    rec.close().unwrap();

    let ctx = Session::load(rec.path()).unwrap().context();
    let texts: Vec<String> = ctx
        .messages
        .iter()
        .map(|m| match m.as_llm() {
            Some(Message::User(u)) => u.content.joined_text(),
            Some(Message::Assistant(a)) => a.text(),
            _ => String::new(),
        })
        .collect();
    assert_eq!(texts.len(), 6, "{texts:?}");
    assert!(texts[0].starts_with(pi::session::branch_context::COMPACTION_PREAMBLE));
    assert!(texts[0].contains("<summary>\nWe talked about old things.\n</summary>"));
    assert_eq!(
        texts[1..4],
        ["kept question", "kept answer", "new question"]
    );
    assert!(texts[4].contains("An abandoned attempt."));
    assert_eq!(texts[5], "from an extension");
    assert_eq!(ctx.origins[0], MessageOrigin::CompactionSummary(c));
    assert!(matches!(ctx.origins[4], MessageOrigin::BranchSummary(_)));
    assert!(matches!(ctx.origins[5], MessageOrigin::CustomMessage(_)));
    assert!(ctx.messages[0].as_user().unwrap().synthetic);
}

#[test]
fn version_one_files_are_chained_and_migrated() {
    let s = Session::load(Path::new(FIXTURE_V1)).unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(s.header.version, 1);
    assert_eq!(s.entries.len(), 8);
    for pair in s.entries.windows(2) {
        assert_eq!(pair[1].parent_id.as_deref(), Some(pair[0].id.as_str()));
    }
    // Stable ids: the same on every load.
    let again = Session::load(Path::new(FIXTURE_V1)).unwrap();
    assert_eq!(
        s.entries.iter().map(|e| &e.id).collect::<Vec<_>>(),
        again.entries.iter().map(|e| &e.id).collect::<Vec<_>>()
    );
    let ctx = s.context();
    let texts: Vec<String> = ctx
        .messages
        .iter()
        .map(|m| match m.as_llm() {
            Some(Message::User(u)) => u.content.joined_text(),
            Some(Message::Assistant(a)) => a.text(),
            other => format!("{other:?}"),
        })
        .collect();
    assert!(texts[0].contains("The user asked two questions."));
    assert_eq!(
        texts[1..],
        [
            "second question",
            "second answer",
            "remember the tests",
            "third question"
        ]
    );
    assert_eq!(ctx.thinking_level, Some(ThinkingLevel::Low));
    assert_eq!(ctx.model.unwrap().model_id, "gpt-4o");
}

#[test]
fn node_extra_roles_reach_the_model_as_user_messages() {
    let header = r#"{"type":"session","version":3,"id":"019a0000-0000-7000-8000-000000000001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#;
    let bash = r#"{"type":"message","id":"aaaaaaaa","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"bashExecution","command":"ls","output":"a.txt\n","exitCode":2,"cancelled":false,"truncated":true,"fullOutputPath":"/tmp/out","timestamp":5}}"#;
    let hidden = r#"{"type":"message","id":"bbbbbbbb","parentId":"aaaaaaaa","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"bashExecution","command":"env","output":"SECRET=1","exitCode":0,"cancelled":false,"truncated":false,"excludeFromContext":true,"timestamp":6}}"#;
    let other = r#"{"type":"message","id":"cccccccc","parentId":"bbbbbbbb","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"someExtension","x":1,"timestamp":7}}"#;
    let text = format!("{header}\n{bash}\n{hidden}\n{other}\n");
    let session = Session::read(text.as_bytes(), None).unwrap();
    let ctx = session.context();
    assert_eq!(ctx.messages.len(), 2);
    let u = ctx.messages[0].as_user().unwrap();
    assert_eq!(
        u.content.joined_text(),
        "Ran `ls`\n```\na.txt\n```\n(exit code 2)\n(output truncated; full output in /tmp/out)"
    );
    assert_eq!(u.timestamp, 5);
    // A role this pi does not know is reported at load and quoted, never silently dropped.
    assert_eq!(session.warnings.len(), 1, "{:?}", session.warnings);
    assert_eq!(session.warnings[0].line, 4);
    assert!(session.warnings[0].message.contains("`someExtension`"));
    let quoted = ctx.messages[1].as_user().unwrap();
    assert!(quoted.synthetic);
    let q = quoted.content.joined_text();
    assert!(
        q.contains("`someExtension`") && q.contains("\"x\":1"),
        "{q}"
    );
    assert_eq!(quoted.timestamp, 7);
}

// ----- finding, listing, forking ----------------------------------------------------------

/// A session file of about `size` bytes: header, a user message, filler, a name near the end.
fn write_session(dir: &Path, n: usize, size: usize, name: Option<&str>, first: &str) -> PathBuf {
    let id = pi::session::ids::uuid_v7_at(1_700_000_000_000 + n as i64);
    let ts = pi::session::time::iso_from_ms(1_700_000_000_000 + n as i64);
    let path = dir.join(pi::session::layout::session_file_name(&ts, &id));
    let mut out = std::io::BufWriter::new(fs::File::create(&path).unwrap());
    let header = pi::session::SessionHeader::new(id, ts.clone(), "/proj".into(), None);
    writeln!(out, "{}", header.to_line()).unwrap();
    let mut parent: Option<String> = None;
    let mut written = 0usize;
    let mut k = 0u32;
    let mut push =
        |out: &mut std::io::BufWriter<fs::File>, kind: EntryKind, written: &mut usize| {
            k += 1;
            let id = format!("{k:08x}");
            let line = pi::session::SessionEntry {
                id: id.clone(),
                parent_id: parent.replace(id),
                timestamp: ts.clone(),
                kind,
            }
            .to_line();
            *written += line.len() + 1;
            writeln!(out, "{line}").unwrap();
        };
    push(&mut out, EntryKind::Message(user(first, 1)), &mut written);
    let filler = "x".repeat(4000);
    while written < size {
        push(
            &mut out,
            EntryKind::Message(tool_result("c", "read", &filler, 2)),
            &mut written,
        );
    }
    if let Some(name) = name {
        push(
            &mut out,
            EntryKind::SessionInfo {
                name: Some(name.into()),
            },
            &mut written,
        );
        push(
            &mut out,
            EntryKind::Message(assistant("after naming", vec![], 3)),
            &mut written,
        );
    }
    drop(out);
    path
}

fn set_mtime(path: &Path, secs_ago: u64) {
    let t = SystemTime::now() - Duration::from_secs(secs_ago);
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

#[test]
fn listing_one_thousand_sessions_is_fast_and_reads_bounded_bytes() {
    let dir = Scratch::new("list");
    let paths = SessionPaths::for_cwd(dir.path(), Path::new("/proj"));
    fs::create_dir_all(&paths.dir).unwrap();
    let size = 60 * 1024;
    for n in 0..1000 {
        let name = (n % 3 == 0).then(|| format!("named {n}"));
        let p = write_session(
            &paths.dir,
            n,
            size,
            name.as_deref(),
            &format!("question {n}"),
        );
        set_mtime(&p, 10_000 - n as u64);
    }
    fs::write(paths.dir.join("stray.jsonl"), "not a session\n").unwrap();
    fs::write(paths.dir.join("notes.txt"), "ignored").unwrap();

    let started = Instant::now();
    let list = list_sessions(&paths, ListScope::CurrentFolder);
    let took = started.elapsed();
    assert_eq!(list.sessions.len(), 1000);
    let per_file = (HEAD_BYTES + TAIL_BYTES) as u64;
    assert!(
        list.bytes_read <= 1000 * per_file + 100,
        "read {} bytes",
        list.bytes_read
    );
    let on_disk: u64 = list.sessions.iter().map(|s| s.size).sum();
    assert!(list.bytes_read < on_disk);
    // Generous for debug builds and busy machines; the release figure is in bench/.
    assert!(took < Duration::from_secs(3), "listing took {took:?}");

    // Newest first, names from the tail, previews from the head.
    let newest = &list.sessions[0];
    assert_eq!(newest.first_message.as_deref(), Some("question 999"));
    assert_eq!(newest.name.as_deref(), Some("named 999"));
    assert_eq!(newest.title(), "named 999");
    assert_eq!(list.sessions[1].name, None);
    assert_eq!(list.sessions[1].title(), "question 998");
    assert_eq!(
        list.sessions[999].first_message.as_deref(),
        Some("question 0")
    );
    assert!(
        list.sessions
            .windows(2)
            .all(|w| w[0].modified >= w[1].modified)
    );
    assert_eq!(newest.cwd, "/proj");
}

#[test]
fn a_huge_first_message_gives_a_cut_preview() {
    let dir = Scratch::new("huge");
    let long = format!("please {}", "refactor ".repeat(10_000));
    let p = write_session(dir.path(), 1, 200_000, None, &long);
    let info = pi::session::session_info(&p).unwrap();
    let preview = info.first_message.unwrap();
    assert!(preview.starts_with("please refactor refactor"));
    assert!(preview.chars().count() <= pi::session::list::PREVIEW_CHARS + 1);
}

#[test]
fn a_header_longer_than_the_head_still_lists() {
    let dir = Scratch::new("longhead");
    let p = write_session(dir.path(), 1, 100_000, Some("long"), "hi");
    let text = fs::read_to_string(&p).unwrap();
    let deep = format!("/{}", "very-long-folder-name/".repeat(400));
    let text = text.replacen("\"cwd\":\"/proj\"", &format!("\"cwd\":\"{deep}\""), 1);
    fs::write(&p, text).unwrap();
    let info = pi::session::session_info(&p).unwrap();
    assert_eq!(info.cwd, deep);
    assert_eq!(info.first_message.as_deref(), Some("hi"));
    assert_eq!(info.name.as_deref(), Some("long"));
}

#[test]
fn newest_find_and_scopes() {
    let dir = Scratch::new("find");
    let here = SessionPaths::for_cwd(dir.path(), Path::new("/proj"));
    let there = SessionPaths::for_cwd(dir.path(), Path::new("/other"));
    fs::create_dir_all(&here.dir).unwrap();
    fs::create_dir_all(&there.dir).unwrap();
    assert_eq!(newest_session(&here.dir), None);
    let a = write_session(&here.dir, 1, 10, None, "a");
    let b = write_session(&here.dir, 2, 10, None, "b");
    let c = write_session(&there.dir, 3, 10, None, "c");
    set_mtime(&a, 100);
    set_mtime(&b, 50);
    // The newest file is not a session: passed over.
    fs::write(here.dir.join("zzz.jsonl"), "garbage\n").unwrap();
    assert_eq!(newest_session(&here.dir), Some(b.clone()));
    set_mtime(&a, 10);
    assert_eq!(newest_session(&here.dir), Some(a.clone()));

    let id_of = |p: &Path| pi::session::list::header_id(p).unwrap();
    let (ida, idc) = (id_of(&a), id_of(&c));
    // Full id, unique prefix (ids share their time prefix, so take the random tail).
    let found = find_session(&here, &ida).unwrap();
    assert_eq!(found.path, a);
    assert!(found.in_current_folder);
    let found = find_session(&here, &idc).unwrap();
    assert_eq!(found.path, c);
    assert!(!found.in_current_folder);
    // A prefix shared by a and b is ambiguous.
    let shared = &ida[..8];
    assert!(id_of(&b).starts_with(shared));
    assert!(matches!(
        find_session(&here, shared),
        Err(SessionError::Ambiguous { .. })
    ));
    // Paths.
    let found = find_session(&here, c.to_str().unwrap()).unwrap();
    assert_eq!(found.id, idc);
    assert!(!found.in_current_folder);
    assert!(matches!(
        find_session(&here, "does-not-exist"),
        Err(SessionError::NotFound(_))
    ));
    assert!(matches!(
        find_session(&here, "/no/such/file.jsonl"),
        Err(SessionError::NotFound(_))
    ));
    // All folders.
    assert_eq!(
        list_sessions(&here, ListScope::CurrentFolder)
            .sessions
            .len(),
        2
    );
    assert_eq!(
        list_sessions(&here, ListScope::AllFolders).sessions.len(),
        3
    );
}

#[test]
fn fork_copies_the_entries_under_a_new_id() {
    let dir = Scratch::new("fork");
    let src = copy_fixture(dir.path(), "");
    let dest = dir.path().join("sessions").join("--here--");
    let forked = fork(&src, &dest, Path::new("/here")).unwrap();
    assert_ne!(forked.id, "01a2361b-5150-7635-b3fd-ab0404bb9f84");
    assert_eq!(forked.path.parent().unwrap(), dest);
    let new_lines = lines(&forked.path);
    let old_lines = lines(&src);
    assert_eq!(new_lines[1..], old_lines[1..]);
    let s = Session::load(&forked.path).unwrap();
    assert_eq!(s.id(), forked.id);
    assert_eq!(s.cwd(), "/here");
    assert_eq!(
        s.header.parent_session.as_deref(),
        Some(fs::canonicalize(&src).unwrap().to_str().unwrap())
    );
    assert_eq!(s.context().messages, fixture_expected_messages());
    assert_eq!(
        fs::read_dir(&dest).unwrap().count(),
        1,
        "no temporary file left"
    );

    // An old-format source is written out migrated.
    let forked = fork(Path::new(FIXTURE_V1), &dest, Path::new("/here")).unwrap();
    let s = Session::load(&forked.path).unwrap();
    assert!(s.warnings.is_empty());
    assert_eq!(s.header.version, 3);
    let old = Session::load(Path::new(FIXTURE_V1)).unwrap();
    assert_eq!(s.context().messages, old.context().messages);
    assert!(
        lines(&forked.path)[1..]
            .iter()
            .all(|l| l.contains("\"parentId\""))
    );
}

#[test]
fn large_files_parse_in_two_halves_with_the_same_result() {
    let dir = Scratch::new("halves");
    let path = write_session(dir.path(), 7, 6 << 20, Some("big"), "start");
    // Damage a line in the second half and cut the last line short.
    let text = fs::read_to_string(&path).unwrap();
    let mut l: Vec<&str> = text.lines().collect();
    let bad_line = l.len() * 3 / 4;
    l[bad_line] = "{\"type\":\"message\",\"id\":";
    let mut damaged = l.join("\n");
    damaged.truncate(damaged.len() - 10);
    fs::write(&path, &damaged).unwrap();

    let from_file = Session::load(&path).unwrap();
    let from_memory = Session::read(damaged.as_bytes(), Some(&path)).unwrap();
    assert_eq!(from_file.entries, from_memory.entries);
    assert_eq!(from_file.warnings, from_memory.warnings);
    assert_eq!(from_file.warnings[0].line, bad_line + 1);
    assert_eq!(from_file.warnings.last().unwrap().line, l.len());
    assert_eq!(from_file.entries.len(), l.len() - 3);
    // The chain holds across the damaged line: the branch reaches the first message.
    let ctx = from_file.context();
    // Every entry but the name is a message.
    assert_eq!(ctx.messages.len(), from_file.entries.len() - 1);
    assert_eq!(
        ctx.messages[0].as_user().unwrap().content.joined_text(),
        "start"
    );
}

#[test]
fn opening_from_the_command_line_flags() {
    let dir = Scratch::new("open");
    let cwd = Path::new("/tmp/mock");
    let here = SessionPaths::for_cwd(dir.path(), cwd);
    let there = SessionPaths::for_cwd(dir.path(), Path::new("/elsewhere"));

    // --continue with nothing to continue starts a new session in this folder.
    let o = open_session(&here, cwd, StartFrom::Continue).unwrap();
    assert!(!o.resumed);
    assert!(o.context.messages.is_empty());
    assert_eq!(o.recorder.path().parent().unwrap(), here.dir);
    drop(o);

    // With the fixture in this folder, --continue resumes it.
    fs::create_dir_all(&here.dir).unwrap();
    let src = copy_fixture(&here.dir, "");
    let o = open_session(&here, cwd, StartFrom::Continue).unwrap();
    assert!(o.resumed && !o.other_folder);
    assert_eq!(o.recorder.path(), src);
    assert_eq!(o.context.messages, fixture_expected_messages());
    assert_eq!(o.recorded_cwd, None);
    assert!(o.warnings.is_empty());
    drop(o);

    // --session by id prefix from another project's folder.
    let o = open_session(
        &there,
        Path::new("/elsewhere"),
        StartFrom::Session("01a2361b-5150-7635"),
    )
    .unwrap();
    assert!(o.resumed && o.other_folder);
    assert_eq!(o.recorded_cwd.as_deref(), Some("/tmp/mock"));
    drop(o);

    // --fork copies into this folder under a new id.
    let o = open_session(&there, Path::new("/elsewhere"), StartFrom::Fork("01a2361b")).unwrap();
    assert!(o.resumed);
    assert_ne!(
        o.recorder.session_id(),
        "01a2361b-5150-7635-b3fd-ab0404bb9f84"
    );
    assert_eq!(o.recorder.path().parent().unwrap(), there.dir);
    assert_eq!(o.context.messages, fixture_expected_messages());
    assert_eq!(
        o.recorder.header().parent_session.as_deref(),
        Some(fs::canonicalize(&src).unwrap().to_str().unwrap())
    );
    drop(o);

    // --session with a new path starts a session stored exactly there.
    let new_path = dir.path().join("mine.jsonl");
    let mut o = open_session(&here, cwd, StartFrom::Session(new_path.to_str().unwrap())).unwrap();
    assert!(!o.resumed);
    o.recorder.append_message(&assistant("hello", vec![], 1));
    assert!(new_path.is_file());
    let id = o.recorder.session_id().to_string();
    drop(o);
    assert_eq!(Session::load(&new_path).unwrap().id(), id);

    // A file without its header is continued in a repaired copy, never appended to.
    let headless = dir.path().join("headless.jsonl");
    let body = lines(Path::new(FIXTURE))[1..].join("\n") + "\n";
    fs::write(&headless, &body).unwrap();
    let o = open_session(&here, cwd, StartFrom::File(&headless)).unwrap();
    assert_ne!(o.recorder.path(), headless);
    assert!(
        o.warnings
            .iter()
            .any(|w| w.message.contains("repaired copy"))
    );
    assert_eq!(o.context.messages, fixture_expected_messages());
    assert_eq!(fs::read_to_string(&headless).unwrap(), body);
    let repaired = Session::load(o.recorder.path()).unwrap();
    assert!(!repaired.header_missing() && repaired.warnings.is_empty());
    drop(o);

    // A picked file; unknown ids are errors.
    let o = open_session(&here, cwd, StartFrom::File(&new_path)).unwrap();
    assert_eq!(o.context.messages.len(), 1);
    assert!(matches!(
        open_session(&here, cwd, StartFrom::Session("zzzz")),
        Err(SessionError::NotFound(_))
    ));
    assert_eq!(
        resume_hint(&id),
        format!("To resume this session: pi -c here, or pi --session {id}")
    );
}

// ----- over HTTP: a resumed crash as the Anthropic API receives it --------------------------

mod wire {
    use super::support::server::{Chunk, Reply, event};
    use serde_json::json;

    /// A short text answer in the Anthropic Messages stream format.
    pub fn text_reply(text: &str) -> Reply {
        let chunks: Vec<Chunk> = vec![
            event(
                "message_start",
                &json!({"type": "message_start", "message": {
                    "id": "msg_01", "type": "message", "role": "assistant", "content": [],
                    "model": "claude-sonnet-4-5", "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": 25, "output_tokens": 1}}}),
            ),
            event(
                "content_block_start",
                &json!({"type": "content_block_start", "index": 0,
                        "content_block": {"type": "text", "text": ""}}),
            ),
            event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": text}}),
            ),
            event(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": 0}),
            ),
            event(
                "message_delta",
                &json!({"type": "message_delta",
                        "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                        "usage": {"output_tokens": 5}}),
            ),
            event("message_stop", &json!({"type": "message_stop"})),
        ];
        Reply::sse(chunks)
    }
}

#[tokio::test]
async fn a_crash_mid_tool_resumes_into_a_request_the_api_accepts() {
    let dir = Scratch::new("http");
    // The Node.js fixture, cut off after an assistant message that called two tools, one of
    // which had answered when the process died.
    let path = copy_fixture(dir.path(), "");
    let mut l = lines(&path);
    l.truncate(5);
    l[4] = l[4].replace(
        r#"{"type":"toolCall","id":"toolu_01HcG4mE8Qy1","name":"read","arguments":{"path":"README.md"}}"#,
        r#"{"type":"toolCall","id":"toolu_01HcG4mE8Qy1","name":"read","arguments":{"path":"README.md"}},{"type":"toolCall","id":"toolu_02Zz","name":"bash","arguments":{"command":"cargo test"}}"#,
    );
    l.push(lines(Path::new(FIXTURE))[5].clone());
    fs::write(&path, l.join("\n") + "\n").unwrap();

    let server = support::server::TestServer::start(vec![wire::text_reply("Resumed.")]).await;
    let providers = support::http_providers(&server, "anthropic");
    let session = Session::load(&path).unwrap();
    let recorder = SessionRecorder::resume(&session).unwrap();
    let ctx = session.into_context();
    assert_eq!(ctx.placeholders, 1);
    let model = pi::provider::catalog::Catalog::builtin(&|_| None)
        .find("anthropic", "claude-sonnet-4-5")
        .unwrap()
        .to_model();
    let agent = Agent::new(AgentSettings::new(Arc::new(providers), model));
    agent.replace_messages(ctx.messages).unwrap();
    let task =
        RecorderTask::from_events(agent.subscribe_filtered(SessionRecorder::wants), recorder);
    agent.prompt_text("The build was stuck; go on.").unwrap();
    agent.wait_idle().await;
    let recorder = task.finish().await.unwrap();

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let messages = requests[0].body["messages"].as_array().unwrap().clone();
    // Every tool_use is answered by a tool_result in the very next message.
    let mut calls = 0;
    for (i, m) in messages.iter().enumerate() {
        if m["role"] != "assistant" {
            continue;
        }
        for block in m["content"].as_array().unwrap() {
            if block["type"] != "tool_use" {
                continue;
            }
            calls += 1;
            let answered = messages[i + 1]["content"]
                .as_array()
                .unwrap()
                .iter()
                .any(|b| b["type"] == "tool_result" && b["tool_use_id"] == block["id"]);
            assert!(answered, "{} has no result: {messages:#?}", block["id"]);
        }
    }
    assert_eq!(calls, 2);
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    assert!(last.to_string().contains("The build was stuck"));

    // The answer went to the file, and no key did.
    let text = fs::read_to_string(recorder.path()).unwrap();
    assert!(text.contains("Resumed."));
    assert!(!text.contains("test-key-123"));
    assert!(requests[0].header("x-api-key").is_some());
}

#[test]
fn damaged_lines_give_up_their_entries_and_the_pairing_holds() {
    let (_dir, mut rec) = look_and_read("damaged");
    rec.append_message(&assistant("seen", vec![], 4));
    rec.append_message(&user("caf\u{e9} time", 5));
    rec.append_message(&assistant("ok", vec![], 6));
    rec.close().unwrap();
    let path = rec.path().to_path_buf();
    drop(rec);
    let original = fs::read(&path).unwrap();
    let text = String::from_utf8(original.clone()).unwrap();
    let l: Vec<&str> = text.lines().collect();
    // Line 3 (the call) and line 4 (its result) glued together; line 6 with a broken byte.
    let mut damaged = Vec::new();
    for (i, line) in l.iter().enumerate() {
        let mut bytes = line.as_bytes().to_vec();
        if line.contains("caf\u{e9}") {
            let at = line.find('\u{e9}').unwrap();
            bytes[at + 1] = 0xff;
        }
        damaged.extend(bytes);
        if i != 2 {
            damaged.push(b'\n');
        }
    }
    fs::write(&path, &damaged).unwrap();
    let s = Session::load(&path).unwrap();
    assert_eq!(s.warnings.len(), 2, "{:?}", s.warnings);
    let ctx = s.context();
    let roles: Vec<&str> = ctx.messages.iter().map(AgentMessage::role).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert_eq!(ctx.placeholders, 0);
    let text = match ctx.messages[4].as_llm() {
        Some(Message::User(u)) => u.content.joined_text(),
        other => panic!("{other:?}"),
    };
    assert_eq!(text, "caf\u{fffd}\u{fffd} time");

    // The call's line lost entirely: its result is quoted as text, never sent bare.
    let without_call: Vec<&str> = l
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 2)
        .map(|(_, x)| *x)
        .collect();
    fs::write(&path, without_call.join("\n") + "\n").unwrap();
    let ctx = Session::load(&path).unwrap().context();
    assert_eq!(ctx.orphan_results, 1);
    assert!(ctx.messages.iter().all(|m| m.as_tool_result().is_none()));
}

// ----- one branch to a new file, the tree, renaming, deleting, counting -------------------

/// u1 → a1 → (u2 → a2 → label on u1) | (u2-retry → a2-retry), with a name on the shared
/// part. Returns the file and the ids of a1, a2, the label entry and a2-retry.
fn two_branches(dir: &Path) -> (PathBuf, [String; 4]) {
    let mut rec = SessionRecorder::new_session(dir, Path::new("/w"));
    rec.set_model("anthropic", "claude-sonnet-4-5");
    rec.set_thinking_level(ThinkingLevel::Low);
    let u1 = rec.append_message(&user("u1", 1));
    rec.set_name("two ways");
    let a1 = rec.append_message(&assistant("a1", vec![], 2));
    rec.append_message(&user("u2", 3));
    let a2 = rec.append_message(&assistant("a2", vec![], 4));
    let label = rec.append(EntryKind::Label {
        target_id: u1,
        label: Some("start".into()),
    });
    rec.branch_from(Some(&a1)).unwrap();
    rec.set_thinking_level(ThinkingLevel::High);
    rec.append_message(&user("u2-retry", 5));
    let retry = rec.append_message(&assistant("a2-retry", vec![], 6));
    rec.close().unwrap();
    assert!(rec.take_errors().is_empty());
    (rec.path().to_path_buf(), [a1, a2, label, retry])
}

fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn branch_to_new_copies_only_the_branch_into_a_new_session() {
    let dir = Scratch::new("branch-new");
    let (src, [_, a2, label, retry]) = two_branches(dir.path());
    let source = Session::load(&src).unwrap();
    let dest = dir.path().join("sessions").join("--here--");

    for leaf in [&a2, &retry] {
        let forked = branch_to_new(&source, Some(leaf), &dest, Path::new("/here")).unwrap();
        assert_eq!(forked.path.parent().unwrap(), dest);
        assert_eq!(mode_of(&forked.path), 0o600);
        assert_eq!(mode_of(&dest), 0o700);
        let copy = Session::load(&forked.path).unwrap();
        assert!(copy.warnings.is_empty(), "{:?}", copy.warnings);
        assert_eq!(copy.id(), forked.id);
        assert_ne!(copy.id(), source.id());
        assert_eq!(&copy.id()[14..15], "7", "UUIDv7");
        assert_eq!(copy.cwd(), "/here");
        assert_eq!(
            copy.header.parent_session.as_deref(),
            Some(fs::canonicalize(&src).unwrap().to_str().unwrap())
        );
        // The branch, root first, ids and parents unchanged; then the label set later on one
        // of its entries, written again (as the Node.js pi does).
        let want: Vec<_> = source.branch(Some(leaf)).into_iter().cloned().collect();
        assert_eq!(copy.entries[..want.len()], want[..]);
        let extra = &copy.entries[want.len()..];
        assert_eq!(extra.len(), 1, "{extra:?}");
        assert!(matches!(&extra[0].kind, EntryKind::Label { label: Some(l), .. } if l == "start"));
        assert_eq!(extra[0].parent_id.as_deref(), Some(leaf.as_str()));
        let (ours, theirs) = (copy.context(), source.context_at(Some(leaf)));
        assert_eq!(ours.messages, theirs.messages);
        assert_eq!(
            (ours.model, ours.thinking_level),
            (theirs.model, theirs.thinking_level)
        );
        // The name was set on the shared part, so both copies keep it.
        assert_eq!(copy.name(), Some("two ways"));
    }
    // A label comes along when its entry is on the branch: set on the branch itself, or set
    // later elsewhere and written again; a label on an entry off the branch does not.
    let labelled = |leaf: &str| {
        let copy = branch_to_new(&source, Some(leaf), &dest, Path::new("/here")).unwrap();
        let copy = Session::load(&copy.path).unwrap();
        let labels: Vec<String> = copy.labels().into_values().map(str::to_string).collect();
        (labels, copy.context().thinking_level)
    };
    assert_eq!(
        labelled(&label),
        (vec!["start".to_string()], Some(ThinkingLevel::Low))
    );
    assert_eq!(
        labelled(&a2),
        (vec!["start".to_string()], Some(ThinkingLevel::Low))
    );
    assert_eq!(
        labelled(&retry),
        (vec!["start".to_string()], Some(ThinkingLevel::High))
    );
    let copy = branch_to_new(&source, Some(&label), &dest, Path::new("/here")).unwrap();
    let labels = lines(&copy.path)
        .iter()
        .filter(|l| l.contains(r#""type":"label""#))
        .count();
    assert_eq!(
        labels, 1,
        "a label already on the branch is not written twice"
    );

    // No leaf: a session with only its header.
    let empty = branch_to_new(&source, None, &dest, Path::new("/here")).unwrap();
    assert_eq!(lines(&empty.path).len(), 1);
    assert!(Session::load(&empty.path).unwrap().entries.is_empty());

    // An id the session does not have makes no file.
    let before = fs::read_dir(&dest).unwrap().count();
    assert!(matches!(
        branch_to_new(&source, Some("ffffffff"), &dest, Path::new("/here")),
        Err(SessionError::NotFound(id)) if id == "ffffffff"
    ));
    assert_eq!(fs::read_dir(&dest).unwrap().count(), before);
    assert!(
        fs::read_dir(&dest).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".tmp")),
        "no temporary file left"
    );

    // A session read from memory has no file to name as the parent.
    let text = fs::read(&src).unwrap();
    let in_memory = Session::read(&text[..], None).unwrap();
    let orphan = branch_to_new(&in_memory, Some(&retry), &dest, Path::new("/here")).unwrap();
    let orphan = Session::load(&orphan.path).unwrap();
    assert_eq!(orphan.header.parent_session, None);
    assert_eq!(
        orphan.context().messages,
        source.context_at(Some(&retry)).messages
    );
}

fn drawn(rows: &[TreeRow]) -> Vec<String> {
    rows.iter()
        .map(|r| {
            let label = r
                .label
                .as_deref()
                .map_or(String::new(), |l| format!("[{l}] "));
            let mark = if r.is_leaf { " <" } else { "" };
            format!("{}{label}{}{mark}", r.prefix, r.text)
        })
        .collect()
}

#[test]
fn a_recorded_branch_switch_shows_in_the_tree() {
    let dir = Scratch::new("tree");
    let (src, [a1, _, _, retry]) = two_branches(dir.path());
    let s = Session::load(&src).unwrap();
    let rows = tree_rows(&s, Some(&retry));
    assert_eq!(
        drawn(&rows),
        [
            "anthropic/claude-sonnet-4-5",
            "low",
            "[start] u1",
            "two ways",
            "a1",
            "├─ u2",
            "│  a2",
            "│  start",
            "└─ high",
            "   u2-retry",
            "   a2-retry <",
        ]
    );
    let a1_row = rows.iter().position(|r| r.id == a1).unwrap();
    assert!(rows[..=a1_row].iter().all(|r| r.on_path));
    assert!(rows[a1_row + 1..a1_row + 4].iter().all(|r| !r.on_path));
    assert!(rows[a1_row + 4..].iter().all(|r| r.on_path));
    let texts = |mode, query| -> Vec<String> {
        filter_rows(&rows, mode, query)
            .into_iter()
            .map(|i| rows[i].text.clone())
            .collect()
    };
    assert_eq!(
        texts(TreeFilter::Default, ""),
        ["u1", "a1", "u2", "a2", "u2-retry", "a2-retry"]
    );
    assert_eq!(texts(TreeFilter::UserOnly, "retry"), ["u2-retry"]);
    assert_eq!(texts(TreeFilter::LabeledOnly, ""), ["u1"]);
}

#[test]
fn rename_appends_a_name_under_the_leaf_unless_a_writer_holds_the_file() {
    let dir = Scratch::new("rename");
    let path = copy_fixture(dir.path(), "");
    let before = lines(&path);
    rename(&path, "  Readme questions ").unwrap();
    let s = Session::load(&path).unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(s.name(), Some("Readme questions"));
    let after = lines(&path);
    assert_eq!(
        after[..before.len()],
        before[..],
        "nothing already there changes"
    );
    assert_eq!(after.len(), before.len() + 1);
    let entry: Value = serde_json::from_str(&after[before.len()]).unwrap();
    assert_eq!(
        field_names(&entry),
        ["type", "id", "parentId", "timestamp", "name"]
    );
    assert_eq!(entry["type"], "session_info");
    assert_eq!(entry["parentId"], "9f13ab27");
    assert!(pi::session::time::ms_from_iso(entry["timestamp"].as_str().unwrap()).is_some());
    let id = entry["id"].as_str().unwrap();
    assert!(id.len() == 8 && id.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(s.entries.iter().filter(|e| e.id == id).count(), 1);
    assert!(!lock_path(&path).exists(), "the lock is released");

    // A live pi writing the file (this process's recorder here) refuses the rename.
    let mut recorder = SessionRecorder::resume(&s).unwrap();
    recorder.lock().unwrap();
    match rename(&path, "other") {
        Err(SessionError::Locked { pid, .. }) => assert_eq!(pid, std::process::id()),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(lines(&path).len(), after.len());
    assert!(lock_path(&path).exists(), "the writer keeps its lock");
    recorder.close().unwrap();
    drop(recorder);

    // So does a bare lock; once it is gone the rename goes through.
    let lock = SessionLock::acquire(&path).unwrap();
    assert!(matches!(
        rename(&path, "other"),
        Err(SessionError::Locked { .. })
    ));
    drop(lock);
    rename(&path, "other").unwrap();
    let s = Session::load(&path).unwrap();
    assert_eq!(s.name(), Some("other"));
    assert_eq!(
        s.entries.last().unwrap().parent_id.as_deref(),
        Some(id),
        "the second name hangs under the first"
    );
    assert!(matches!(
        rename(&path, " \t "),
        Err(SessionError::EmptyName)
    ));
}

#[test]
fn delete_removes_the_file_and_a_stale_lock_unless_a_writer_holds_it() {
    let dir = Scratch::new("delete");
    let path = copy_fixture(dir.path(), "");
    let lock = SessionLock::acquire(&path).unwrap();
    assert!(matches!(delete(&path), Err(SessionError::Locked { .. })));
    assert!(path.exists());
    drop(lock);

    // A lock left by a process that is gone does not stop the delete, and goes too.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    fs::write(lock_path(&path), format!("{} token\n", gone.id())).unwrap();
    delete(&path).unwrap();
    assert!(!path.exists());
    assert!(!lock_path(&path).exists());
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    assert!(matches!(delete(&path), Err(SessionError::Io { .. })));
}

#[test]
fn message_counts_match_the_loaded_sessions() {
    let dir = Scratch::new("count");
    assert_eq!(count_messages(Path::new(FIXTURE)), Some(4));
    assert_eq!(count_messages(Path::new(FIXTURE_TREE)), Some(8));
    assert_eq!(count_messages(Path::new(FIXTURE_FORKED)), Some(6));
    let (src, _) = two_branches(dir.path());
    let messages = |s: &Session| {
        s.entries
            .iter()
            .filter(|e| matches!(e.kind, EntryKind::Message(_)))
            .count()
    };
    let s = Session::load(&src).unwrap();
    assert_eq!(messages(&s), 6);
    assert_eq!(count_messages(&src), Some(6));

    // A torn last line is not a message; a line another program wrote with spaces is.
    let mut text = fs::read_to_string(&src).unwrap();
    text.push_str(
        r#"{ "type": "message", "id": "0000abcd", "parentId": null, "timestamp": "2026-01-01T00:00:00.000Z", "message": {"role": "user", "content": "spaced", "timestamp": 7} }"#,
    );
    text.push('\n');
    text.push_str(r#"{"type":"message","id":"0000abce","parentId":"0000abcd","timestamp":"2026-"#);
    fs::write(&src, &text).unwrap();
    let s = Session::load(&src).unwrap();
    assert_eq!(messages(&s), 7);
    assert_eq!(count_messages(&src), Some(7));

    assert_eq!(count_messages(&dir.path().join("missing.jsonl")), None);
    let header_only = dir.path().join("h.jsonl");
    fs::write(&header_only, format!("{}\n", lines(Path::new(FIXTURE))[0])).unwrap();
    assert_eq!(count_messages(&header_only), Some(0));
}

// ----- tree-shaped files of the Node.js `pi` ----------------------------------------------

#[test]
fn node_tree_fixture_loads_with_its_branches_name_and_label() {
    let s = Session::load(Path::new(FIXTURE_TREE)).unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(s.name(), Some("Refactor app.rs"));
    let labels: Vec<(&str, &str)> = s.labels().into_iter().collect();
    assert_eq!(labels, [("e2b9d714", "module-split")]);
    assert_eq!(s.children("1d4b7e20").len(), 2);

    let rows = tree_rows(&s, s.leaf_id());
    assert_eq!(
        drawn(&rows),
        [
            "anthropic/claude-sonnet-4-5",
            "low",
            "How should I split src/app.rs?",
            "Two ways: split it by module, or extract only the config parsing.",
            "├─ Refactor app.rs",
            "│  [module-split] Try the module split first.",
            "│  (tool calls: bash)",
            "│  bash: app.rs",
            "│  Split app.rs into app/ui.rs and app/state.rs; main.rs only wires them.",
            "│  module-split",
            "└─ Tried splitting app.rs by module into app/ui.rs and app/state.rs.",
            "   high",
            "   openai/gpt-5",
            "   Keep app.rs whole and extract only the config parsing.",
            "   Extracted the config parsing into src/config.rs; app.rs keeps the rest. <",
        ]
    );
    let kinds: Vec<TreeKind> = rows.iter().map(|r| r.kind).collect();
    use TreeKind::*;
    assert_eq!(
        kinds,
        [
            ModelChange,
            ThinkingChange,
            User,
            Assistant,
            SessionInfo,
            User,
            Assistant,
            ToolResult,
            Assistant,
            Label,
            BranchSummary,
            ThinkingChange,
            ModelChange,
            User,
            Assistant
        ]
    );
    let on_path: Vec<bool> = rows.iter().map(|r| r.on_path).collect();
    assert_eq!(on_path, [&[true; 4][..], &[false; 6], &[true; 5]].concat());

    // The last entry's context: the second branch only, opened by the summary of the first,
    // with the model and thinking level that branch chose.
    let ctx = s.context();
    assert_eq!(
        ctx.origins,
        [
            MessageOrigin::Message("c7e1a9d3".into()),
            MessageOrigin::Message("1d4b7e20".into()),
            MessageOrigin::BranchSummary("2c6f9a15".into()),
            MessageOrigin::Message("b4a2d8e6".into()),
            MessageOrigin::Message("4f8e0c1b".into()),
        ]
    );
    let summary = match ctx.messages[2].as_llm() {
        Some(Message::User(u)) => u.content.joined_text(),
        other => panic!("{other:?}"),
    };
    assert!(summary.contains("The split compiled but moved too much at once."));
    assert_eq!(
        ctx.model,
        Some(ModelRef {
            provider: "openai".into(),
            model_id: "gpt-5".into()
        })
    );
    assert_eq!(ctx.thinking_level, Some(ThinkingLevel::High));
    // The first branch keeps its own.
    let first = s.context_at(Some("5b8d1e46"));
    assert_eq!(first.messages.len(), 6);
    assert_eq!(first.model.unwrap().provider, "anthropic");
    assert_eq!(first.thinking_level, Some(ThinkingLevel::Low));
}

#[test]
fn node_forked_fixture_knows_its_parent_and_matches_our_copy_of_that_branch() {
    let forked = Session::load(Path::new(FIXTURE_FORKED)).unwrap();
    assert!(forked.warnings.is_empty(), "{:?}", forked.warnings);
    assert_eq!(
        forked.header.parent_session.as_deref(),
        Some(
            "/home/me/.pi/agent/sessions/--tmp-mock--/2026-12-03T10-00-00-000Z_5f0c2a7e-93d1-4b8a-a6e2-1c4d7f9b3e05.jsonl"
        )
    );
    assert_eq!(forked.name(), Some("Refactor app.rs"));
    let labels: Vec<(&str, &str)> = forked.labels().into_iter().collect();
    assert_eq!(labels, [("e2b9d714", "module-split")]);
    let rows = tree_rows(&forked, forked.leaf_id());
    assert_eq!(rows.len(), 10);
    assert!(rows.iter().all(|r| r.prefix.is_empty() && r.on_path));
    assert_eq!(rows[5].label.as_deref(), Some("module-split"));

    // Our copy of the same branch holds the same entries, and the labels written again at the
    // end, as the Node.js `pi` writes them.
    let dir = Scratch::new("node-fork");
    let tree = Session::load(Path::new(FIXTURE_TREE)).unwrap();
    let ours = branch_to_new(&tree, Some("5b8d1e46"), dir.path(), Path::new("/tmp/mock")).unwrap();
    let ours = Session::load(&ours.path).unwrap();
    assert_eq!(ours.entries[..9], forked.entries[..9]);
    assert_eq!(ours.entries.len(), forked.entries.len());
    assert_eq!(ours.labels(), forked.labels());
    assert_eq!(ours.context().messages, forked.context().messages);
    let (ours, theirs) = (ours.context(), tree.context_at(Some("5b8d1e46")));
    assert_eq!(ours.messages, theirs.messages);
    assert_eq!(
        (ours.model, ours.thinking_level),
        (theirs.model, theirs.thinking_level)
    );
}

#[test]
fn what_we_write_for_tree_entries_has_the_node_field_names() {
    // The field names, in order, of each entry type and of a forked header, as the Node.js
    // `pi` writes them (from the fixtures).
    let mut node: std::collections::HashMap<String, Vec<String>> = Default::default();
    for line in [FIXTURE_TREE, FIXTURE_FORKED]
        .map(|f| lines(Path::new(f)))
        .concat()
    {
        let v: Value = serde_json::from_str(&line).unwrap();
        let key = match (v["type"].as_str().unwrap(), v.get("parentSession")) {
            ("session", Some(_)) => "forked header".to_string(),
            (t, _) => t.to_string(),
        };
        let names: Vec<String> = field_names(&v).into_iter().map(str::to_string).collect();
        if let Some(seen) = node.insert(key.clone(), names.clone()) {
            assert_eq!(seen, names, "the fixtures disagree on {key}");
        }
    }

    let dir = Scratch::new("node-fields");
    let mut rec = SessionRecorder::new_session(dir.path(), Path::new("/tmp/mock"));
    rec.set_model("anthropic", "claude-sonnet-4-5");
    rec.set_thinking_level(ThinkingLevel::Low);
    let u1 = rec.append_message(&user("How should I split it?", 1));
    let a1 = rec.append_message(&assistant("Two ways.", vec![], 2));
    rec.set_name("Refactor");
    rec.append(EntryKind::Label {
        target_id: u1.clone(),
        label: Some("start".into()),
    });
    rec.branch_from(Some(&a1)).unwrap();
    let summary = rec.append(EntryKind::BranchSummary(Box::new(BranchSummary {
        from_id: a1.clone(),
        summary: "Tried one way.".into(),
        details: Some(json!({"readFiles": [], "modifiedFiles": []})),
        from_hook: None,
    })));
    rec.set_model("openai", "gpt-5");
    rec.branch_from(Some(&a1)).unwrap();
    let retry = rec.append_message(&user("Another way?", 3));
    rec.close().unwrap();
    let path = rec.path().to_path_buf();
    drop(rec);
    rename(&path, "Renamed").unwrap();

    let ours = lines(&path);
    let mut types = HashSet::new();
    for line in &ours[1..] {
        let v: Value = serde_json::from_str(line).unwrap();
        let t = v["type"].as_str().unwrap();
        types.insert(t.to_string());
        assert_eq!(
            field_names(&v),
            node[t].iter().map(String::as_str).collect::<Vec<_>>(),
            "{line}"
        );
    }
    for t in [
        "model_change",
        "thinking_level_change",
        "message",
        "session_info",
        "label",
        "branch_summary",
    ] {
        assert!(types.contains(t), "{t} was written");
    }
    // Both switches hang their first entry under the branch point.
    let s = Session::load(&path).unwrap();
    assert_eq!(s.entry(&summary).unwrap().parent_id.as_deref(), Some(&*a1));
    assert_eq!(s.entry(&retry).unwrap().parent_id.as_deref(), Some(&*a1));
    assert_eq!(s.name(), Some("Renamed"));

    // A copy of one branch: the Node.js header, the entries as in the source.
    let copy = branch_to_new(&s, Some(&summary), dir.path(), Path::new("/tmp/mock")).unwrap();
    let copied = lines(&copy.path);
    let header: Value = serde_json::from_str(&copied[0]).unwrap();
    assert_eq!(
        field_names(&header),
        node["forked header"]
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
    );
    let source_lines: std::collections::HashMap<String, Value> = ours[1..]
        .iter()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["id"].as_str().unwrap().to_string(), v)
        })
        .collect();
    let branch_len = s.branch(Some(&summary)).len();
    assert!(
        copied.len() > branch_len,
        "header + branch (+ labels written again)"
    );
    for line in &copied[1..] {
        let v: Value = serde_json::from_str(line).unwrap();
        let Some(original) = source_lines.get(v["id"].as_str().unwrap()) else {
            // A label written again for an entry of the branch: Node's label fields.
            assert_eq!(v["type"], "label");
            assert_eq!(
                field_names(&v),
                node["label"].iter().map(String::as_str).collect::<Vec<_>>()
            );
            continue;
        };
        assert_eq!(&v, original);
        assert_eq!(field_names(&v), field_names(original));
    }
}

const FIXTURE_COMPACTED: &str = "tests/fixtures/node_v3_compacted_session.jsonl";

#[test]
fn a_node_compacted_session_resumes_with_its_summary_and_kept_messages() {
    use pi::agent::policy::compaction::{context_tokens, plan, summary_of};
    let s = Session::load(Path::new(FIXTURE_COMPACTED)).unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let ctx = s.context();
    let texts: Vec<String> = ctx
        .messages
        .iter()
        .map(pi::tui::port::message_text)
        .collect();
    assert_eq!(texts.len(), 5, "{texts:?}");
    let summary = summary_of(&ctx.messages[0]).unwrap();
    assert!(summary.starts_with("## Goal\nFix add()"));
    assert_eq!(
        texts[1..],
        [
            "Now add a test for negative numbers.",
            "Added add_handles_negatives in tests/add.rs.",
            "Run the tests.",
            "All 12 tests pass."
        ]
    );
    // Only the reply after the compaction counts its usage (300 + 40).
    let t = context_tokens(&ctx.messages);
    assert!(t.from_usage);
    assert_eq!(t.tokens, 340);
    // The next compaction builds on the Node pi's summary and keeps its file list.
    let p = plan(&ctx.messages, 5).unwrap();
    assert_eq!(p.previous_summary.as_deref(), Some(summary));
    assert!(p.files.read.contains("src/lib.rs"));
}

#[test]
fn our_compaction_entry_has_the_node_fields_in_the_node_order() {
    let node: Value = lines(Path::new(FIXTURE_COMPACTED))
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "compaction")
        .unwrap();
    let dir = Scratch::new("compaction-fields");
    let mut rec = SessionRecorder::new_session(dir.path(), Path::new("/tmp/mock"));
    let kept = rec.append_message(&user("kept", 1));
    rec.append(EntryKind::Compaction(Box::new(Compaction {
        summary: "s".into(),
        first_kept_entry_id: kept,
        tokens_before: 10,
        details: Some(json!({"readFiles": [], "modifiedFiles": []})),
        from_hook: None,
    })));
    rec.close().unwrap();
    let ours: Value = lines(rec.path())
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "compaction")
        .unwrap();
    assert_eq!(field_names(&ours), field_names(&node));
    assert_eq!(field_names(&ours["details"]), field_names(&node["details"]));
}
