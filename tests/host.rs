//! The host through its operations: runs, new sessions, listing, opening, naming, exporting,
//! stats and shutdown, each answered on the one event stream, with the session files checked;
//! messages queued as a run ended are run by the host.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use pi::agent::engine::facade::{Agent, AgentSettings};
use pi::agent::protocol::command::{Accepted, AgentError, WhenBusy};
use pi::agent::protocol::events::{AgentEvent, RunEvent};
use pi::agent::protocol::thinking::ThinkingLevel;
use pi::agent::protocol::types::AgentMessage;
use pi::agent::scripted::{ScriptedProvider, Step, reply};
use pi::approval::gate::GateHooks;
use pi::approval::rules::Rules;
use pi::approval::{ApprovalMode, Decision, Gate};
use pi::host::{self, Client, FrontEvent, HostEvent, HostParts, OpBody, Prompt};
use pi::provider::catalog::{Catalog, ModelInfo};
use pi::session::{ListScope, Session, SessionPaths, SessionRecorder};
use support::*;

const WAIT: Duration = Duration::from_secs(5);

fn model_info() -> ModelInfo {
    let m = model();
    let mut info = Catalog::builtin(&|_| None)
        .resolve("ollama", "qwen3:8b")
        .unwrap()
        .0;
    info.id = m.id;
    info
}

struct Rig {
    client: Client,
    dir: tempfile::TempDir,
    /// Message counts that followed listings (set aside by [`Rig::answer`]).
    counts: Vec<(PathBuf, usize)>,
    /// Agent events read while looking for a host event, and host events read while looking
    /// for an agent event: each kind is read in its own order.
    runs: std::collections::VecDeque<RunEvent>,
    hosts: std::collections::VecDeque<HostEvent>,
}

impl Rig {
    fn new(p: &ScriptedProvider, saving: bool) -> Self {
        Self::with_settings(p, saving, |_| {})
    }

    fn with_settings(
        p: &ScriptedProvider,
        saving: bool,
        change: impl FnOnce(&mut AgentSettings),
    ) -> Self {
        Self::build(p, saving, change, None)
    }

    /// A rig whose agent has the bash tool and asks through the host before running it.
    fn asking(p: &ScriptedProvider) -> (Self, Arc<Gate>) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = Arc::new(pi::tools::context::ToolContext::new(dir.path()));
        let gate = Arc::new(Gate::new(ApprovalMode::Ask, Rules::default(), ctx.clone()));
        let hooks = gate.clone();
        let rig = Self::build(
            p,
            false,
            move |s| {
                s.hooks = Arc::new(GateHooks(hooks));
                s.tools = Arc::new(pi::agent::protocol::tool::ToolSet::new(
                    pi::tools::build_with(&["bash"], ctx).unwrap(),
                ));
            },
            Some((gate.clone(), dir)),
        );
        (rig, gate)
    }

    fn build(
        p: &ScriptedProvider,
        saving: bool,
        change: impl FnOnce(&mut AgentSettings),
        asking: Option<(Arc<Gate>, tempfile::TempDir)>,
    ) -> Self {
        let (approval, dir, asks_person) = match asking {
            Some((gate, dir)) => (gate, dir, true),
            None => {
                let dir = tempfile::tempdir().unwrap();
                let ctx = Arc::new(pi::tools::context::ToolContext::new(dir.path()));
                let gate = Arc::new(Gate::new(ApprovalMode::Auto, Rules::default(), ctx));
                (gate, dir, false)
            }
        };
        let mut settings = AgentSettings::new(Arc::new(p.clone()), model());
        change(&mut settings);
        let agent = Agent::new(settings);
        let paths = SessionPaths::in_dir(dir.path().join("sessions"), None);
        let recorder = saving.then(|| SessionRecorder::new_session(&paths.dir, dir.path()));
        let session_id = recorder
            .as_ref()
            .map(|r| r.session_id().to_string())
            .unwrap_or_default();
        let client = host::spawn(HostParts {
            agent,
            recorder,
            paths: saving.then_some(paths),
            cwd: dir.path().to_path_buf(),
            catalog: Arc::new(Catalog::builtin(&|_| None)),
            model: model_info(),
            thinking: ThinkingLevel::Off,
            session_id,
            session_name: None,
            live_updates: true,
            secrets: Default::default(),
            shell: pi::tools::build_with(
                &["bash"],
                Arc::new(pi::tools::context::ToolContext::new(
                    dir.path().to_path_buf(),
                )),
            )
            .unwrap()
            .into_iter()
            .next(),
            mcp: None,
            notices: None,
            login: Some(host::login::LoginParts {
                providers: Arc::new(pi::provider::Providers::new(
                    Arc::new(Catalog::builtin(&|_| None)),
                    None,
                    Arc::new(|_| None),
                )),
                agent_dir: Some(dir.path().join("agent")),
                env: Arc::new(|_| None),
            }),
            approval,
            asks_person,
            remember_in: Some(dir.path().join("agent").join("settings.json")),
            templates: Default::default(),
            skills: Default::default(),
            hooks: None,
            session_slot: None,
            checkpoints: None,
            plan: false,
            web_search: false,
            ends_process: false,
        });
        Rig {
            client,
            dir,
            counts: Vec::new(),
            runs: Default::default(),
            hosts: Default::default(),
        }
    }

    /// The next agent event (host events read meanwhile are kept for [`Rig::answer`]).
    async fn next_run(&mut self) -> Option<RunEvent> {
        if let Some(e) = self.runs.pop_front() {
            return Some(e);
        }
        loop {
            match self.client.events.recv().await? {
                FrontEvent::Run(e) => return Some(e),
                FrontEvent::Host { event, .. } => self.hosts.push_back(event),
                FrontEvent::Answer { .. } => {}
            }
        }
    }

    /// The next host event (agent events read meanwhile are kept for [`Rig::next_run`]).
    async fn next_host(&mut self) -> Option<HostEvent> {
        if let Some(e) = self.hosts.pop_front() {
            return Some(e);
        }
        loop {
            match self.client.events.recv().await? {
                FrontEvent::Run(e) => self.runs.push_back(e),
                FrontEvent::Host { event, .. } => return Some(event),
                FrontEvent::Answer { .. } => {}
            }
        }
    }

    /// Prompt and wait for that run's end; returns its messages.
    async fn prompt(&mut self, text: &str) -> Vec<AgentMessage> {
        let accepted = self
            .client
            .prompt(Prompt::text(text, WhenBusy::Refuse))
            .await;
        let Ok(Accepted::Started(run)) = accepted else {
            panic!("the prompt did not start a run: {accepted:?}");
        };
        loop {
            let e = tokio::time::timeout(WAIT, self.next_run())
                .await
                .expect("agent_end in time")
                .expect("events");
            if let AgentEvent::AgentEnd { messages, .. } = e.event {
                assert_eq!(e.run, Some(run), "the run's own agent_end");
                return messages;
            }
        }
    }

    /// Wait for the current run's end; its events as JSON text.
    async fn wait_end(&mut self) -> String {
        let mut seen = String::new();
        loop {
            let e = tokio::time::timeout(WAIT, self.next_run())
                .await
                .expect("agent_end in time")
                .expect("events");
            seen.push_str(&serde_json::to_string(&e.event).unwrap_or_default());
            if e.event.kind() == "agent_end" {
                return seen;
            }
        }
    }

    /// Start a run without waiting for it, then wait for its first event of kind `kind`.
    async fn start_until(&mut self, text: &str, kind: &str) {
        self.client
            .commands
            .send(OpBody::Prompt(Prompt::text(text, WhenBusy::Refuse)));
        loop {
            let e = tokio::time::timeout(WAIT, self.next_run())
                .await
                .expect("the event in time")
                .expect("events");
            if e.event.kind() == kind {
                return;
            }
        }
    }

    /// The next answer; message counts (which follow every listing) are set aside.
    async fn answer(&mut self) -> HostEvent {
        loop {
            let e = tokio::time::timeout(WAIT, self.next_host())
                .await
                .expect("an answer in time")
                .expect("host events");
            match e {
                HostEvent::MessageCounts(c) => self.counts.extend(c),
                e => return e,
            }
        }
    }

    fn session_files(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(self.dir.path().join("sessions"))
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        v.sort();
        v
    }
}

fn texts(path: &Path) -> Vec<String> {
    Session::load(path)
        .unwrap()
        .into_context()
        .messages
        .iter()
        .map(|m| match m.as_llm() {
            Some(pi::agent::protocol::types::Message::User(u)) => u.content.joined_text(),
            Some(pi::agent::protocol::types::Message::Assistant(a)) => a.text(),
            _ => String::new(),
        })
        .collect()
}

#[tokio::test]
async fn new_session_ends_the_file_and_starts_another() {
    let p = scripts(vec![
        reply::text("first answer"),
        reply::text("second answer"),
    ]);
    let mut rig = Rig::new(&p, true);
    rig.prompt("one").await;
    assert!(rig.client.commands.send(OpBody::NewSession).is_some());
    let HostEvent::NewSession { after_run, .. } = rig.answer().await else {
        panic!("expected NewSession");
    };
    assert_eq!(after_run, 1);
    rig.prompt("two").await;
    // The second request starts from an empty conversation.
    assert_eq!(request_roles(&p, 1), ["user"]);
    let closed = rig.client.shutdown().await.unwrap();
    assert!(closed.saved);
    let files = rig.session_files();
    assert_eq!(files.len(), 2, "{files:?}");
    let all: Vec<Vec<String>> = files.iter().map(|f| texts(f)).collect();
    assert!(all.contains(&vec!["one".to_string(), "first answer".to_string()]));
    assert!(all.contains(&vec!["two".to_string(), "second answer".to_string()]));
}

#[tokio::test]
async fn listing_and_opening_a_session_switch_the_conversation_and_the_file() {
    let p = scripts(vec![
        reply::text("old answer"),
        reply::text("fresh answer"),
        reply::text("continued"),
    ]);
    let mut rig = Rig::new(&p, true);
    rig.prompt("old question").await;
    rig.client.commands.send(OpBody::NewSession);
    rig.answer().await;
    rig.prompt("fresh question").await;

    rig.client.commands.send(OpBody::ListSessions {
        scope: ListScope::CurrentFolder,
    });
    let HostEvent::Sessions { sessions, .. } = rig.answer().await else {
        panic!("expected a listing");
    };
    assert_eq!(sessions.len(), 2);
    let old = sessions
        .iter()
        .find(|s| s.first_message.as_deref() == Some("old question"))
        .expect("the first session is listed")
        .path
        .clone();
    rig.client
        .commands
        .send(OpBody::OpenSession { path: old.clone() });
    let HostEvent::Opened(opened) = rig.answer().await else {
        panic!("expected Opened");
    };
    assert_eq!(opened.path, old);
    assert_eq!(opened.messages.len(), 2);
    rig.prompt("and then?").await;
    // The model sees the opened conversation, and the reply goes to its file.
    assert_eq!(request_roles(&p, 2), ["user", "assistant", "user"]);
    rig.client.shutdown().await;
    assert_eq!(
        texts(&old),
        ["old question", "old answer", "and then?", "continued"]
    );
}

#[tokio::test]
async fn opening_is_refused_while_a_run_is_active() {
    let p = scripts(vec![vec![Step::Stall]]);
    let mut rig = Rig::new(&p, true);
    rig.start_until("go", "turn_start").await;
    rig.client.commands.send(OpBody::OpenSession {
        path: rig.dir.path().join("x.jsonl"),
    });
    let HostEvent::Failed(why) = rig.answer().await else {
        panic!("expected a refusal");
    };
    assert!(why.contains("working"), "{why}");
    let closed = rig.client.shutdown().await.unwrap();
    assert!(closed.saved, "the aborted run was recorded");
}

#[tokio::test]
async fn names_exports_and_stats_are_answered() {
    let p = scripts(vec![reply::full(&["the answer"], &[])]);
    let mut rig = Rig::new(&p, true);
    rig.prompt("the question").await;

    rig.client.commands.send(OpBody::NameSession {
        name: "  parser work ".into(),
    });
    let HostEvent::Named(name) = rig.answer().await else {
        panic!("expected Named");
    };
    assert_eq!(name, "parser work");

    rig.client.commands.send(OpBody::Export {
        path: Some(PathBuf::from("out.md")),
    });
    let HostEvent::Exported(path) = rig.answer().await else {
        panic!("expected Exported");
    };
    assert_eq!(path, rig.dir.path().join("out.md"));
    let md = std::fs::read_to_string(&path).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    assert!(md.contains("## User\n\nthe question") && md.contains("the answer"));

    rig.client.commands.send(OpBody::Export {
        path: Some(rig.dir.path().join("no/such/folder/out.md")),
    });
    let HostEvent::Failed(why) = rig.answer().await else {
        panic!("expected a failed export");
    };
    assert!(why.contains("cannot write"), "{why}");

    rig.client.commands.send(OpBody::Stats);
    let HostEvent::Stats(stats) = rig.answer().await else {
        panic!("expected Stats");
    };
    assert_eq!(stats.user_messages, 1);
    assert_eq!(stats.assistant_messages, 1);
    assert_eq!(stats.name.as_deref(), Some("parser work"));
    assert!(stats.path.as_ref().is_some_and(|p| p.exists()));
    assert_eq!(stats.context_window, model_info().context_window);

    rig.client.shutdown().await;
    let info = pi::session::session_info(&rig.session_files()[0]).unwrap();
    assert_eq!(info.name.as_deref(), Some("parser work"));
}

#[tokio::test]
async fn without_saving_session_commands_say_so() {
    let p = scripts(vec![reply::text("hi")]);
    let mut rig = Rig::new(&p, false);
    rig.client.commands.send(OpBody::ListSessions {
        scope: ListScope::CurrentFolder,
    });
    let HostEvent::Failed(why) = rig.answer().await else {
        panic!("expected a refusal");
    };
    assert!(why.contains("not saved"), "{why}");
    rig.prompt("hello").await;
    let closed = rig.client.shutdown().await.unwrap();
    assert!(!closed.saved);
    assert!(rig.session_files().is_empty());
}

#[tokio::test]
async fn dropping_the_client_aborts_the_run_and_flushes_the_session() {
    let (mut steps, _) = reply::open(&["partial\n"], &[]);
    steps.push(Step::Stall);
    let p = scripts(vec![steps]);
    let mut rig = Rig::new(&p, true);
    rig.start_until("go", "message_update").await;
    let dir = rig.dir;
    drop(rig.client);
    // The host notices, aborts and writes the aborted partial.
    let sessions = dir.path().join("sessions");
    let file = tokio::time::timeout(WAIT, async {
        loop {
            // The session file, not the lock beside it.
            if let Some(f) = std::fs::read_dir(&sessions).ok().and_then(|rd| {
                rd.flatten()
                    .find(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
            }) {
                let path = f.path();
                if texts(&path).len() == 2 {
                    return path;
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the session is written");
    assert_eq!(texts(&file), ["go", "partial\n"]);
}

#[tokio::test]
async fn a_prompt_waits_for_the_session_file_and_is_refused_while_it_cannot_be_made() {
    let p = scripts(vec![reply::text("answer")]);
    let mut rig = Rig::new(&p, true);
    // A file stands where the session folder goes.
    let blocker = rig.dir.path().join("sessions");
    std::fs::write(&blocker, "not a folder").unwrap();
    let refused = rig
        .client
        .prompt(Prompt::text("one", WhenBusy::Refuse))
        .await;
    let Err(AgentError::Refused(why)) = refused else {
        panic!("expected a refusal, got {refused:?}");
    };
    assert!(why.contains("cannot create the folder"), "{why}");
    assert!(
        why.contains("nothing was sent to the model and nothing was saved"),
        "{why}"
    );
    assert!(p.requests().is_empty(), "no model was asked");
    // The same for a prompt with files to read: refused before anything is read or sent.
    let refused = rig
        .client
        .prompt(Prompt {
            text: "one again, with @notes.txt".into(),
            mentions: true,
            ..Prompt::default()
        })
        .await;
    let Err(AgentError::Refused(why)) = refused else {
        panic!("expected a refusal, got {refused:?}");
    };
    assert!(why.contains("nothing was sent"), "{why}");
    assert!(p.requests().is_empty());

    // The folder can be made now: the next prompt goes out, and the session holds it whole.
    std::fs::remove_file(&blocker).unwrap();
    rig.prompt("two").await;
    assert_eq!(p.requests().len(), 1);
    let closed = rig.client.shutdown().await.unwrap();
    assert!(closed.saved);
    assert_eq!(closed.unsaved, None);
    assert!(closed.farewell().unwrap().contains("To resume"));
    let files: Vec<PathBuf> = rig
        .session_files()
        .into_iter()
        .filter(|f| f.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1);
    assert_eq!(texts(&files[0]), ["two", "answer"]);
}

#[tokio::test]
async fn a_session_that_could_not_be_written_is_not_offered_for_resuming() {
    let p = scripts(vec![reply::text("lost")]);
    let mut rig = Rig::new(&p, true);
    std::fs::write(rig.dir.path().join("sessions"), "not a folder").unwrap();
    let refused = rig
        .client
        .prompt(Prompt::text("one", WhenBusy::Refuse))
        .await;
    assert!(
        matches!(refused, Err(AgentError::Refused(_))),
        "{refused:?}"
    );
    let closed = rig.client.shutdown().await.unwrap();
    assert!(!closed.saved);
    assert_eq!(
        closed.unsaved, None,
        "nothing was said, so nothing is missing"
    );
    assert_eq!(closed.farewell(), None, "no way to resume is offered");
}

/// Texts of request `i`'s messages (user and assistant text), in order.
fn request_texts(p: &ScriptedProvider, i: usize) -> Vec<String> {
    p.requests()[i]
        .context
        .messages
        .iter()
        .map(|m| match m.as_ref() {
            pi::agent::protocol::types::Message::User(u) => u.content.joined_text(),
            pi::agent::protocol::types::Message::Assistant(a) => a.text(),
            pi::agent::protocol::types::Message::ToolResult(r) => r.text(),
            _ => String::new(),
        })
        .collect()
}

impl Rig {
    async fn tree(&mut self) -> pi::host::SessionTree {
        self.client.commands.send(OpBody::Tree);
        match self.answer().await {
            HostEvent::Tree(t) => *t,
            other => panic!("expected a tree, got {other:?}"),
        }
    }

    /// The id of the tree row of kind `kind` whose text contains `text`.
    async fn row_id(&mut self, kind: pi::session::tree_rows::TreeKind, text: &str) -> String {
        let tree = self.tree().await;
        tree.rows
            .iter()
            .find(|r| r.kind == kind && r.text.contains(text))
            .unwrap_or_else(|| panic!("no {kind:?} row with {text:?}: {:?}", tree.rows))
            .id
            .clone()
    }
}

#[tokio::test]
async fn new_session_leaves_the_first_file_as_it_was() {
    let p = scripts(vec![reply::text("first answer"), reply::text("second")]);
    let mut rig = Rig::new(&p, true);
    rig.prompt("one").await;
    rig.client.commands.send(OpBody::NewSession);
    let HostEvent::NewSession { .. } = rig.answer().await else {
        panic!("expected NewSession");
    };
    let first = rig.session_files()[0].clone();
    let before = std::fs::read(&first).unwrap();
    rig.client.commands.send(OpBody::NameSession {
        name: "later".into(),
    });
    rig.answer().await;
    rig.client.commands.send(OpBody::SetThinking {
        level: ThinkingLevel::High,
    });
    let other = Catalog::builtin(&|_| None)
        .resolve("anthropic", "claude-sonnet-4-5")
        .unwrap()
        .0;
    rig.client.commands.send(OpBody::SetModel {
        provider: other.provider,
        id: other.id,
    });
    rig.prompt("two").await;
    rig.client.shutdown().await;
    assert_eq!(
        std::fs::read(&first).unwrap(),
        before,
        "nothing more in the old file"
    );
    let second: Vec<PathBuf> = rig
        .session_files()
        .into_iter()
        .filter(|f| *f != first)
        .collect();
    assert_eq!(second.len(), 1);
    let s = Session::load(&second[0]).unwrap();
    assert_eq!(s.name(), Some("later"));
    let context = s.context();
    assert_eq!(context.thinking_level, Some(ThinkingLevel::High));
    // The switch is recorded (the context's model then follows the replies, which name the
    // model that wrote them: here the scripted one).
    assert!(s.entries.iter().any(|e| matches!(&e.kind,
        pi::session::EntryKind::ModelChange { provider, model_id }
            if provider == "anthropic" && model_id == "claude-sonnet-4-5")));
}

#[tokio::test]
async fn moving_to_an_earlier_prompt_branches_and_the_next_request_holds_only_that_branch() {
    use pi::session::tree_rows::TreeKind;
    let p = scripts(vec![
        reply::text("answer one"),
        reply::text("answer two"),
        reply::text("answer two bis"),
    ]);
    let mut rig = Rig::new(&p, true);
    rig.prompt("prompt one").await;
    rig.prompt("prompt two").await;
    let target = rig.row_id(TreeKind::User, "prompt two").await;
    rig.client.commands.send(OpBody::Navigate {
        target: target.clone(),
    });
    let HostEvent::Navigated(nav) = rig.answer().await else {
        panic!("expected Navigated");
    };
    assert_eq!(nav.draft.as_deref(), Some("prompt two"));
    assert_eq!(nav.messages.len(), 2, "prompt one and its answer");
    rig.prompt("prompt two, reworded").await;
    assert_eq!(
        request_texts(&p, 2),
        ["prompt one", "answer one", "prompt two, reworded"]
    );
    // The file holds both branches; the tree shows them side by side, the new one current.
    let tree = rig.tree().await;
    let users: Vec<&str> = tree
        .rows
        .iter()
        .filter(|r| r.kind == TreeKind::User)
        .map(|r| r.text.as_str())
        .collect();
    assert_eq!(users, ["prompt one", "prompt two", "prompt two, reworded"]);
    let on_path: Vec<&str> = tree
        .rows
        .iter()
        .filter(|r| r.on_path && r.kind == TreeKind::User)
        .map(|r| r.text.as_str())
        .collect();
    assert_eq!(on_path, ["prompt one", "prompt two, reworded"]);
    rig.client.shutdown().await;
    let texts = support::resumed_texts(&rig.session_files()[0]);
    assert_eq!(
        texts,
        [
            "prompt one",
            "answer one",
            "prompt two, reworded",
            "answer two bis"
        ]
    );

    // Moving to an answer goes on from it, with no draft.
    let p = scripts(vec![
        reply::text("a1"),
        reply::text("a2"),
        reply::text("a3"),
    ]);
    let mut rig = Rig::new(&p, true);
    rig.prompt("q1").await;
    rig.prompt("q2").await;
    let a1 = rig.row_id(TreeKind::Assistant, "a1").await;
    rig.client.commands.send(OpBody::Navigate { target: a1 });
    let HostEvent::Navigated(nav) = rig.answer().await else {
        panic!("expected Navigated");
    };
    assert!(nav.draft.is_none());
    rig.prompt("q3").await;
    assert_eq!(request_texts(&p, 2), ["q1", "a1", "q3"]);
}

#[tokio::test]
async fn labels_are_set_and_cleared_from_the_tree() {
    use pi::session::tree_rows::TreeKind;
    let p = scripts(vec![reply::text("the answer")]);
    let mut rig = Rig::new(&p, true);
    rig.prompt("the question").await;
    let id = rig.row_id(TreeKind::User, "the question").await;
    rig.client.commands.send(OpBody::Label {
        target: id.clone(),
        label: Some(" checkpoint ".into()),
    });
    let HostEvent::Tree(tree) = rig.answer().await else {
        panic!("expected a fresh tree");
    };
    let row = tree.rows.iter().find(|r| r.id == id).unwrap();
    assert_eq!(row.label.as_deref(), Some("checkpoint"));
    rig.client.commands.send(OpBody::Label {
        target: id.clone(),
        label: None,
    });
    let HostEvent::Tree(tree) = rig.answer().await else {
        panic!("expected a fresh tree");
    };
    assert_eq!(tree.rows.iter().find(|r| r.id == id).unwrap().label, None);
    rig.client.shutdown().await;
    let s = Session::load(&rig.session_files()[0]).unwrap();
    let labels: Vec<_> = s
        .entries
        .iter()
        .filter(|e| e.kind.type_name() == "label")
        .collect();
    assert_eq!(labels.len(), 2);
    assert!(s.labels().is_empty());
}

#[tokio::test]
async fn fork_and_clone_write_new_files_that_name_their_parent() {
    use pi::session::tree_rows::TreeKind;
    let p = scripts(vec![
        reply::text("answer one"),
        reply::text("answer two"),
        reply::text("in the fork"),
    ]);
    let mut rig = Rig::new(&p, true);
    rig.prompt("prompt one").await;
    rig.prompt("prompt two").await;
    // (The tree is read once the recorder has written what the run emitted.)
    let target = rig.row_id(TreeKind::User, "prompt two").await;
    let original = rig.session_files()[0].clone();
    rig.client.commands.send(OpBody::Fork { target });
    let HostEvent::Opened(opened) = rig.answer().await else {
        panic!("expected Opened");
    };
    assert_eq!(opened.draft.as_deref(), Some("prompt two"));
    assert_ne!(opened.path, original);
    assert_eq!(opened.messages.len(), 2);
    let header = pi::session::list::read_header(&opened.path).unwrap();
    let parent = std::fs::canonicalize(&original).unwrap();
    assert_eq!(header.parent_session.as_deref(), parent.to_str());
    rig.prompt("prompt two in the fork").await;
    assert_eq!(
        request_texts(&p, 2),
        ["prompt one", "answer one", "prompt two in the fork"]
    );

    // Clone the fork's branch: a third file with the same conversation.
    rig.client.commands.send(OpBody::Clone);
    let HostEvent::Opened(cloned) = rig.answer().await else {
        panic!("expected Opened");
    };
    assert!(cloned.draft.is_none());
    assert_eq!(cloned.messages.len(), 4);
    let header = pi::session::list::read_header(&cloned.path).unwrap();
    let fork_path = std::fs::canonicalize(&opened.path).unwrap();
    assert_eq!(header.parent_session.as_deref(), fork_path.to_str());
    rig.client.shutdown().await;
    assert_eq!(rig.session_files().len(), 3);
    // The original is untouched by what happened in the fork.
    let s = Session::load(&original).unwrap();
    assert_eq!(s.context().messages.len(), 4);
}

#[tokio::test]
async fn the_picker_renames_and_deletes_listed_sessions() {
    let p = scripts(vec![reply::text("old answer"), reply::text("new answer")]);
    let mut rig = Rig::new(&p, true);
    rig.prompt("old question").await;
    rig.client.commands.send(OpBody::NewSession);
    rig.answer().await;
    rig.prompt("new question").await;
    // Listing waits for the recorder's writes.
    rig.client.commands.send(OpBody::ListSessions {
        scope: ListScope::CurrentFolder,
    });
    rig.answer().await;
    let files = rig.session_files();
    let old = files
        .iter()
        .find(|f| std::fs::read_to_string(f).unwrap().contains("old question"))
        .unwrap()
        .clone();
    let scope = ListScope::CurrentFolder;
    rig.client.commands.send(OpBody::RenameSession {
        path: old.clone(),
        name: "the old one".into(),
        scope,
    });
    let HostEvent::Sessions { sessions, .. } = rig.answer().await else {
        panic!("expected a fresh listing");
    };
    let listed = sessions.iter().find(|s| s.path == old).unwrap();
    assert_eq!(listed.name.as_deref(), Some("the old one"));
    // The counts follow the listing.
    let deadline = std::time::Instant::now() + WAIT;
    while !rig.counts.contains(&(old.clone(), 2)) {
        assert!(std::time::Instant::now() < deadline, "{:?}", rig.counts);
        if let Ok(Some(HostEvent::MessageCounts(c))) =
            tokio::time::timeout(Duration::from_millis(50), rig.next_host()).await
        {
            rig.counts.extend(c);
        }
    }
    // The session in use cannot be deleted; another one can.
    let current = files
        .iter()
        .find(|f| **f != old && f.extension().is_some_and(|x| x == "jsonl"))
        .unwrap_or_else(|| panic!("{files:?}"))
        .clone();
    rig.client.commands.send(OpBody::DeleteSession {
        path: current.clone(),
        scope,
    });
    let HostEvent::Failed(why) = rig.answer().await else {
        panic!("expected a refusal");
    };
    assert!(why.contains("in use"), "{why}");
    rig.client.commands.send(OpBody::DeleteSession {
        path: old.clone(),
        scope,
    });
    let HostEvent::Sessions { sessions, .. } = rig.answer().await else {
        panic!("expected a fresh listing");
    };
    assert!(!old.exists());
    assert!(sessions.iter().all(|s| s.path != old));
    rig.client.shutdown().await;
}

/// A rig whose agent keeps only ~20 tokens of the newest messages when compacting.
fn compacting_rig(p: &ScriptedProvider) -> Rig {
    Rig::with_settings(p, true, |s| {
        s.compaction = Some(pi::agent::policy::compaction::CompactionSettings {
            enabled: true,
            reserve_tokens: 0,
            keep_recent_tokens: 20,
            scale_with_window: false,
        });
    })
}

impl Rig {
    /// Agent events until one of `kind`; returns it.
    async fn until_event(&mut self, kind: &str) -> AgentEvent {
        loop {
            let e = tokio::time::timeout(WAIT, self.next_run())
                .await
                .unwrap_or_else(|_| panic!("{kind} in time"))
                .expect("events");
            if e.event.kind() == kind {
                return e.event;
            }
        }
    }

    async fn until_compaction_end(&mut self) -> AgentEvent {
        self.until_event("compaction_end").await
    }

    /// `/compact` (no focus), once its summary request is under way.
    async fn start_compaction(&mut self) {
        self.client.commands.send(OpBody::Compact { focus: None });
        self.until_event("compaction_start").await;
    }
}

#[tokio::test]
async fn compact_with_a_focus_writes_the_entry_and_a_resume_sees_summary_and_kept() {
    let long = "word ".repeat(200);
    // A short second prompt would fit the ~20 tokens kept; this one (~30) is kept whole and
    // the first turn is summarised.
    let second = "second question, a longer one to keep, ".repeat(3);
    let p = scripts(vec![
        reply::text("first answer"),
        reply::text("second answer"),
        reply::text("## Goal\nKeep the parser work."),
        reply::text("third answer"),
    ]);
    let mut rig = compacting_rig(&p);
    rig.prompt(&format!("first question {long}")).await;
    rig.prompt(&second).await;
    rig.client.commands.send(OpBody::Compact {
        focus: Some("the parser".into()),
    });
    let AgentEvent::CompactionEnd { result, reason, .. } = rig.until_compaction_end().await else {
        unreachable!()
    };
    assert_eq!(
        reason,
        pi::agent::protocol::events::CompactionReason::Manual
    );
    let result = result.expect("a compaction");
    assert!(result.summary.contains("Keep the parser work."));
    // The summary request: no tools, the focus, the older part.
    let req = &p.requests()[2];
    assert!(req.context.tools.is_empty());
    let asked = request_texts(&p, 2).join("\n");
    assert!(
        asked.contains("the parser") && asked.contains("first question"),
        "{asked}"
    );
    // The next request holds the summary, then the kept messages only.
    rig.prompt("and now?").await;
    let sent = request_texts(&p, 3);
    assert!(sent[0].contains("Keep the parser work."), "{sent:?}");
    assert!(
        !sent.iter().any(|t| t.contains("first question")),
        "{sent:?}"
    );
    rig.client.shutdown().await;
    // The file has the entry; resuming gives the same conversation.
    let path = rig.session_files()[0].clone();
    let s = Session::load(&path).unwrap();
    assert!(s.entries.iter().any(|e| e.kind.type_name() == "compaction"));
    let texts = support::resumed_texts(&path);
    assert!(texts[0].contains("Keep the parser work."));
    assert_eq!(
        texts[1..],
        [second.as_str(), "second answer", "and now?", "third answer"]
    );
}

#[tokio::test]
async fn esc_during_compaction_leaves_the_conversation_as_it_was() {
    let long = "word ".repeat(200);
    let p = scripts(vec![
        reply::text(&format!("first answer {long}")),
        reply::text("second answer"),
        vec![Step::Stall],
    ]);
    let mut rig = compacting_rig(&p);
    rig.prompt(&format!("first question {long}")).await;
    rig.prompt("second question").await;
    // Once the summary request is under way:
    rig.start_compaction().await;
    rig.client.commands.send(OpBody::Abort { reason: None });
    let AgentEvent::CompactionEnd {
        result, aborted, ..
    } = rig.until_compaction_end().await
    else {
        unreachable!()
    };
    assert!(result.is_none() && aborted);
    rig.client.shutdown().await;
    let path = rig.session_files()[0].clone();
    let s = Session::load(&path).unwrap();
    assert!(!s.entries.iter().any(|e| e.kind.type_name() == "compaction"));
    assert_eq!(support::resumed_texts(&path).len(), 4);
}

#[tokio::test]
async fn messages_queued_during_a_compaction_are_run_after_it_in_order() {
    let long = "word ".repeat(200);
    let second = "second question, a longer one to keep, ".repeat(3);
    let mut summary = vec![Step::Delay(Duration::from_millis(200))];
    summary.extend(reply::text("## Goal\nNotes."));
    let p = scripts(vec![
        reply::text(&format!("first answer {long}")),
        reply::text("second answer"),
        summary,
        reply::text("took the steer"),
        reply::text("took the follow-up"),
    ]);
    let mut rig = compacting_rig(&p);
    rig.prompt(&format!("first question {long}")).await;
    rig.prompt(&second).await;
    // Once the summary request is under way:
    rig.start_compaction().await;
    rig.client
        .commands
        .send(OpBody::Prompt(Prompt::text("steer me", WhenBusy::Steer)));
    rig.client.commands.send(OpBody::Prompt(Prompt::text(
        "then this",
        WhenBusy::FollowUp,
    )));
    let AgentEvent::CompactionEnd { result, .. } = rig.until_compaction_end().await else {
        unreachable!()
    };
    assert!(result.is_some());
    // The compaction took neither; nobody asks, and the host runs them once it has ended,
    // the steer first.
    loop {
        let AgentEvent::MessageEnd { message } = rig.until_event("message_end").await else {
            unreachable!()
        };
        if pi::tui::port::message_text(&message) == "took the follow-up" {
            break;
        }
    }
    let third = request_texts(&p, 3).join("\n");
    assert!(
        third.contains("steer me") && !third.contains("then this"),
        "{third}"
    );
    assert!(request_texts(&p, 4).join("\n").contains("then this"));
    rig.client.shutdown().await;
}

#[tokio::test]
async fn messages_queued_when_a_run_fails_wait_for_the_person() {
    let p = scripts(vec![vec![Step::Stall], reply::text("not asked")]);
    let mut rig = Rig::new(&p, true);
    rig.start_until("go", "agent_start").await;
    rig.client
        .commands
        .send(OpBody::Prompt(Prompt::text("later", WhenBusy::FollowUp)));
    rig.client.commands.send(OpBody::Abort { reason: None });
    rig.until_event("agent_end").await;
    // Nothing more runs: the queue is still there to take back.
    rig.client.commands.send(OpBody::TakeQueued);
    let HostEvent::Queued(queued) = rig.answer().await else {
        panic!("expected the queues");
    };
    let texts: Vec<String> = queued.iter().map(pi::tui::port::message_text).collect();
    assert_eq!(texts, ["later"]);
    assert_eq!(p.requests().len(), 1);
    rig.client.shutdown().await;
}

#[tokio::test]
async fn leaving_a_branch_can_summarise_it_where_the_conversation_goes_on() {
    use pi::session::tree_rows::TreeKind;
    let p = scripts(vec![
        reply::text("answer one"),
        reply::text("answer two"),
        reply::text("## Goal\nApproach two was slow."),
        reply::text("answer two bis"),
    ]);
    let mut rig = Rig::new(&p, true);
    rig.prompt("prompt one").await;
    rig.prompt("prompt two").await;
    let old_leaf = rig.tree().await.leaf.unwrap();
    let target = rig.row_id(TreeKind::User, "prompt two").await;
    rig.client.commands.send(OpBody::NavigateSummarized {
        target,
        focus: Some("speed".into()),
    });
    let HostEvent::Navigated(nav) = rig.answer().await else {
        panic!("expected Navigated");
    };
    assert_eq!(nav.draft.as_deref(), Some("prompt two"));
    assert_eq!(nav.messages.len(), 3, "prompt one, its answer, the summary");
    // The summary request: no tools, the branch left (prompt two and its answer), the focus.
    assert!(p.requests()[2].context.tools.is_empty());
    let asked = request_texts(&p, 2).join("\n");
    assert!(
        asked.contains("answer two") && asked.contains("speed"),
        "{asked}"
    );
    assert!(
        !asked.contains("answer one"),
        "only what is left behind: {asked}"
    );
    rig.prompt("prompt two, faster").await;
    let sent = request_texts(&p, 3);
    assert_eq!(sent.len(), 4, "{sent:?}");
    assert!(sent[2].contains("Approach two was slow."));
    rig.client.shutdown().await;
    let s = Session::load(&rig.session_files()[0]).unwrap();
    let summary = s
        .entries
        .iter()
        .find(|e| e.kind.type_name() == "branch_summary")
        .expect("a branch_summary entry");
    let pi::session::EntryKind::BranchSummary(b) = &summary.kind else {
        unreachable!()
    };
    assert_eq!(b.from_id, old_leaf);
    let texts = support::resumed_texts(&rig.session_files()[0]);
    assert_eq!(texts.len(), 5, "{texts:?}");
    assert!(texts[2].contains("Approach two was slow."));
    assert_eq!(texts[3], "prompt two, faster");
}

#[tokio::test]
async fn an_abort_while_the_branch_is_summarised_moves_nothing() {
    use pi::session::tree_rows::TreeKind;
    let p = scripts(vec![
        reply::text("answer one"),
        reply::text("answer two"),
        vec![Step::Stall],
    ]);
    let mut rig = Rig::new(&p, true);
    rig.prompt("prompt one").await;
    rig.prompt("prompt two").await;
    let target = rig.row_id(TreeKind::User, "prompt two").await;
    rig.client.commands.send(OpBody::NavigateSummarized {
        target,
        focus: None,
    });
    // A command sent meanwhile waits; the abort stops the summary.
    rig.client.commands.send(OpBody::Stats);
    rig.client.commands.send(OpBody::Abort { reason: None });
    let HostEvent::Failed(why) = rig.answer().await else {
        panic!("expected the stop");
    };
    assert!(why.contains("nothing moved"), "{why}");
    let HostEvent::Stats(_) = rig.answer().await else {
        panic!("the deferred command is answered after");
    };
    rig.client.shutdown().await;
    let texts = support::resumed_texts(&rig.session_files()[0]);
    assert_eq!(
        texts,
        ["prompt one", "answer one", "prompt two", "answer two"]
    );
}

#[tokio::test]
async fn bang_commands_run_and_their_output_joins_the_conversation_or_not() {
    let p = scripts(vec![reply::text("noted")]);
    let mut rig = Rig::new(&p, true);
    rig.client.commands.send(OpBody::Shell {
        command: "echo from-the-shell".into(),
        include: true,
    });
    let HostEvent::ShellDone(r) = rig.answer().await else {
        panic!("expected ShellDone");
    };
    assert!(
        r.output.contains("from-the-shell") && r.included && !r.failed,
        "{r:?}"
    );
    assert_eq!(r.exit_code, Some(0));
    // `!!`: shown, not added.
    rig.client.commands.send(OpBody::Shell {
        command: "echo only-for-me".into(),
        include: false,
    });
    let HostEvent::ShellDone(r) = rig.answer().await else {
        panic!("expected ShellDone");
    };
    assert!(r.output.contains("only-for-me") && !r.included);
    rig.prompt("what did it print?").await;
    let sent = request_texts(&p, 0).join("\n");
    assert!(
        sent.contains("echo from-the-shell") && sent.contains("from-the-shell"),
        "{sent}"
    );
    assert!(!sent.contains("only-for-me"), "{sent}");
    // Esc stops a running command.
    rig.client.commands.send(OpBody::Shell {
        command: "sleep 20".into(),
        include: false,
    });
    rig.client.commands.send(OpBody::Abort { reason: None });
    let started = std::time::Instant::now();
    let HostEvent::ShellDone(r) = rig.answer().await else {
        panic!("expected ShellDone");
    };
    assert!(r.cancelled && started.elapsed() < Duration::from_secs(3));
    rig.client.shutdown().await;
    // The file holds both runs as the Node pi writes them.
    let text = std::fs::read_to_string(&rig.session_files()[0]).unwrap();
    let runs: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["message"]["role"] == "bashExecution")
        .collect();
    assert_eq!(runs.len(), 3);
    assert_eq!(runs[0]["message"]["command"], "echo from-the-shell");
    assert_eq!(runs[0]["message"]["exitCode"], 0);
    assert!(runs[0]["message"].get("excludeFromContext").is_none());
    assert_eq!(runs[1]["message"]["excludeFromContext"], true);
    assert_eq!(runs[2]["message"]["cancelled"], true);
    let resumed = support::resumed_texts(&rig.session_files()[0]).join("\n");
    assert!(resumed.contains("from-the-shell") && !resumed.contains("only-for-me"));
}

#[tokio::test]
async fn compact_on_a_short_conversation_says_there_is_nothing_to_compact() {
    let p = scripts(vec![reply::text("hi")]);
    let mut rig = Rig::new(&p, true);
    rig.prompt("hello").await;
    rig.client.commands.send(OpBody::Compact { focus: None });
    let AgentEvent::CompactionEnd {
        result,
        error_message,
        ..
    } = rig.until_compaction_end().await
    else {
        unreachable!()
    };
    assert!(result.is_none());
    assert!(error_message.unwrap().contains("nothing to compact"));
    assert_eq!(p.requests().len(), 1, "no summary was asked for");
    rig.client.shutdown().await;
}

#[tokio::test]
async fn a_prompt_with_files_attaches_what_it_names_and_says_what_was_left_out() {
    let p = scripts(vec![reply::text("read them")]);
    let mut rig = Rig::new(&p, true);
    let dir = rig.dir.path().to_path_buf();
    std::fs::write(dir.join("notes.txt"), "the notes\n").unwrap();
    std::fs::write(dir.join("huge.log"), "x".repeat(300 * 1024)).unwrap();
    std::fs::write(dir.join("shot.png"), b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
    rig.client.commands.send(OpBody::Prompt(Prompt {
        text: "see @notes.txt, @huge.log and @nobody".into(),
        files: vec![pi::attach::FileRef {
            name: "shot.png".into(),
            path: dir.join("shot.png"),
            image: true,
        }],
        mentions: true,
        when_busy: WhenBusy::Steer,
        ..Prompt::default()
    }));
    let mut notices = Vec::new();
    for _ in 0..2 {
        match rig.answer().await {
            HostEvent::Notice(n) => notices.push(n),
            other => panic!("expected a notice, got {other:?}"),
        }
    }
    assert!(
        notices[0].starts_with("cannot attach huge.log: it is 300.0 KB")
            && notices[0].ends_with("; sent without it"),
        "{notices:?}"
    );
    assert_eq!(
        notices[1],
        format!(
            "{} does not take images, so this was sent without shot.png",
            model_info().id
        )
    );
    loop {
        let e = tokio::time::timeout(WAIT, rig.next_run())
            .await
            .expect("agent_end in time")
            .expect("events");
        if matches!(e.event, AgentEvent::AgentEnd { .. }) {
            break;
        }
    }
    // The request: the readable file and the prompt; no image, nothing of the big file.
    assert_eq!(
        request_texts(&p, 0),
        ["<file name=\"notes.txt\">\nthe notes\n</file>\nsee @notes.txt, @huge.log and @nobody"]
    );
}

#[tokio::test]
async fn login_saves_the_key_and_switches_to_the_providers_default_model() {
    let p = ScriptedProvider::new(vec![reply::text("your key is gsk-host-test")]);
    let mut rig = Rig::new(&p, true);
    rig.client.commands.send(OpBody::Login {
        provider: "groq".into(),
        key: host::login::SecretKey("gsk-host-test".into()),
    });
    let HostEvent::LoggedIn(done) = rig.answer().await else {
        panic!("no LoggedIn");
    };
    assert_eq!(done.provider, "groq");
    assert_eq!(done.model.unwrap().id, "openai/gpt-oss-120b");
    let file = done.file.unwrap();
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains("gsk-host-test")
    );
    // A bad key or an unknown provider is refused with a reason, and nothing is written.
    rig.client.commands.send(OpBody::Login {
        provider: "groq".into(),
        key: host::login::SecretKey("two words".into()),
    });
    let HostEvent::Failed(why) = rig.answer().await else {
        panic!("no refusal");
    };
    assert!(why.contains("one word"), "{why}");
    rig.client.commands.send(OpBody::Login {
        provider: "nobody".into(),
        key: host::login::SecretKey("k".into()),
    });
    let HostEvent::Failed(why) = rig.answer().await else {
        panic!("no refusal");
    };
    assert!(why.contains("nobody"), "{why}");
    assert!(
        !std::fs::read_to_string(&file)
            .unwrap()
            .contains("two words")
    );
    // From the login on, the key is masked in the open session's file.
    rig.prompt("what is my key?").await;
    assert!(rig.client.shutdown().await.unwrap().saved);
    let saved = std::fs::read_to_string(&rig.session_files()[0]).unwrap();
    assert!(saved.contains("your key is"), "{saved}");
    assert!(!saved.contains("gsk-host-test"), "{saved}");
}

#[tokio::test]
async fn an_approval_request_reaches_the_front_end_and_its_answer_decides_the_call() {
    let p = ScriptedProvider::new([
        reply::tools(&[reply::call(
            "c1",
            "bash",
            serde_json::json!({"command": "echo yes > approved.txt"}),
        )]),
        reply::text("ran it"),
        reply::tools(&[reply::call(
            "c2",
            "bash",
            serde_json::json!({"command": "echo no > refused.txt"}),
        )]),
        reply::text("did not run it"),
    ]);
    let (mut rig, gate) = Rig::asking(&p);
    let cwd = rig.dir.path().to_path_buf();

    rig.start_until("make a file", "message_start").await;
    let HostEvent::Approval(request) = rig.answer().await else {
        panic!("an approval request");
    };
    assert_eq!(request.tool, "bash");
    assert_eq!(request.subject, "echo yes > approved.txt");
    assert!(
        !cwd.join("approved.txt").exists(),
        "nothing runs before the answer"
    );
    rig.client.commands.send(OpBody::Approve {
        request: request.id,
        decision: Decision::Once,
    });
    let ended = rig.wait_end().await;
    assert!(cwd.join("approved.txt").exists());
    assert!(ended.contains("ran it"), "{ended}");

    rig.start_until("another", "message_start").await;
    let HostEvent::Approval(request) = rig.answer().await else {
        panic!("an approval request");
    };
    rig.client.commands.send(OpBody::Approve {
        request: request.id,
        decision: Decision::Refuse(Some("not now".into())),
    });
    let ended = rig.wait_end().await;
    assert!(!cwd.join("refused.txt").exists());
    assert!(
        ended.contains("did not allow") && ended.contains("not now"),
        "the refusal reaches the model as the call's result: {ended}"
    );
    // The mode can be changed through the host.
    rig.client.commands.send(OpBody::SetApproval {
        mode: ApprovalMode::ReadOnly,
    });
    rig.client.commands.send(OpBody::Stats);
    let _ = rig.answer().await;
    assert_eq!(gate.mode(), ApprovalMode::ReadOnly);
}

#[tokio::test]
async fn a_subscription_sign_in_shows_its_address_and_is_cancelled_and_logout_drops_a_key() {
    use pi::provider::subscription::flows::Notice;
    let p = ScriptedProvider::new(vec![]);
    let mut rig = Rig::new(&p, false);
    rig.client.commands.send(OpBody::SignIn {
        provider: "nobody".into(),
    });
    let HostEvent::Failed(why) = rig.answer().await else {
        panic!("no refusal");
    };
    assert!(why.contains("no subscription"), "{why}");
    rig.client.commands.send(OpBody::SignIn {
        provider: "claude".into(),
    });
    let HostEvent::SignInNotice(Notice::OpenUrl { url, paste_hint }) = rig.answer().await else {
        panic!("no address to open");
    };
    assert!(
        url.starts_with("https://claude.ai/oauth/authorize?"),
        "{url}"
    );
    assert!(paste_hint);
    rig.client.commands.send(OpBody::CancelSignIn);
    let HostEvent::Failed(why) = rig.answer().await else {
        panic!("no end");
    };
    assert!(why.contains("Claude Pro/Max sign-in cancelled"), "{why}");
    assert!(!rig.dir.path().join("agent").join("auth.json").exists());

    rig.client.commands.send(OpBody::Login {
        provider: "groq".into(),
        key: host::login::SecretKey("gsk-host-logout".into()),
    });
    assert!(matches!(rig.answer().await, HostEvent::LoggedIn(_)));
    rig.client.commands.send(OpBody::Logout {
        provider: "groq".into(),
    });
    let HostEvent::Notice(said) = rig.answer().await else {
        panic!("no notice");
    };
    assert!(said.contains("Removed the stored key for groq"), "{said}");
    let file = rig.dir.path().join("agent").join("auth.json");
    assert!(
        !std::fs::read_to_string(file)
            .unwrap()
            .contains("gsk-host-logout")
    );
    rig.client.commands.send(OpBody::Logout {
        provider: "openai-codex".into(),
    });
    let HostEvent::Failed(why) = rig.answer().await else {
        panic!("no refusal");
    };
    assert!(
        why.contains("nothing is stored for `openai-codex`"),
        "{why}"
    );
}
