//! The RPC commands, mapped onto the host: each line is deserialised into a
//! [`RpcCommand`](super::wire::RpcCommand) and carried out as the host's operations. Prompts,
//! steering, follow-ups, compaction and the state are answered as soon as the host answers the
//! operation (before the run's events, as the Node pi does); session commands (new session,
//! name, `bash`, stats, ...) when the host's event naming that operation arrives. `compact` is
//! answered when its run's `compaction_end` arrives: with what it did (the first kept entry
//! named by the session recorder, through the host), or `success: false` when nothing was
//! compacted. `set_model` names models by the rule `--model` and `/model` follow
//! ([`crate::setup::select::model_by_id`]). A command this pi has no feature for gets
//! `success: false` saying so.

use std::collections::VecDeque;

use serde_json::{Value, json};

use super::response;
use super::wire::{self, RpcCommand, StreamingBehavior};
use crate::agent::protocol::command::{AgentAnswer, AgentError, AgentState, QueueMode, WhenBusy};
use crate::agent::protocol::events::{AgentEvent, RunId};
use crate::agent::protocol::thinking::ThinkingLevel;
use crate::agent::protocol::types::{ImageContent, Message};
use crate::host::{Answer, Commands, FrontEvents, HostEvent, OpBody, OpId, Prompt};
use crate::provider::catalog::{Catalog, ModelInfo};
use crate::setup::StartInfo;
use crate::setup::select::model_by_id;

/// A command waiting for the host's answer.
struct Waiting {
    /// The operation the host answers.
    op: Option<OpId>,
    id: Option<Value>,
    command: &'static str,
    /// What the answer is built on (a compaction's result, waiting for its entry id).
    partial: Option<Value>,
}

/// A `compact` whose run is going.
struct Compacting {
    id: Option<Value>,
    run: RunId,
}

/// What RPC mode keeps between commands.
pub struct Session {
    commands: Commands,
    models: Vec<ModelInfo>,
    catalog: std::sync::Arc<Catalog>,
    model: ModelInfo,
    thinking: ThinkingLevel,
    session_id: String,
    session_name: Option<String>,
    /// The file the session is saved in (`None` with `--no-session`).
    session_file: Option<std::path::PathBuf>,
    compacting: bool,
    steering_mode: &'static str,
    follow_up_mode: &'static str,
    streaming: bool,
    auto_compaction: bool,
    /// What `cycle_model` steps through (`--models` / `enabled_models`), with their levels.
    scoped: Vec<(ModelInfo, Option<ThinkingLevel>)>,
    /// Providers with no key (skipped by `cycle_model` without a scope).
    keyless: Vec<String>,
    waiting: VecDeque<Waiting>,
    /// `compact` commands answered when their run's `compaction_end` arrives.
    compactions: Vec<Compacting>,
    /// What `get_commands` lists: the prompt templates and skills a prompt can name.
    listed_commands: Vec<Value>,
}

/// `get_commands`' entries: each prompt template, then each skill as `skill:name` (when skill
/// commands are on), with where it came from.
fn listed_commands(info: &StartInfo) -> Vec<Value> {
    let templates = info.templates.iter().map(|t| {
        json!({
            "name": t.name,
            "description": t.description,
            "source": "prompt",
            "location": t.source.location(),
            "path": t.path,
        })
    });
    let skills = info.skills.iter().filter(|_| info.skill_commands).map(|s| {
        json!({
            "name": format!("skill:{}", s.name),
            "description": s.description,
            "source": "skill",
            "location": s.source.location(),
            "path": s.path,
        })
    });
    templates.chain(skills).collect()
}

/// The Node.js pi's `Model` object.
pub fn model_json(m: &ModelInfo) -> Value {
    json!({
        "id": m.id,
        "name": m.name,
        "api": m.api.as_str(),
        "provider": m.provider,
        "baseUrl": m.base_url,
        "reasoning": m.reasoning,
        "input": if m.images { json!(["text", "image"]) } else { json!(["text"]) },
        "contextWindow": m.context_window,
        "maxTokens": m.max_tokens,
        "cost": {
            "input": m.pricing.input,
            "output": m.pricing.output,
            "cacheRead": m.pricing.cache_read,
            "cacheWrite": m.pricing.cache_write,
        },
    })
}

/// The Node pi's name for a queue mode.
fn mode_label(mode: QueueMode) -> &'static str {
    match mode {
        QueueMode::All => "all",
        QueueMode::OneAtATime => "one-at-a-time",
    }
}

type Done = Option<(&'static str, Result<Option<Value>, String>)>;

impl Session {
    pub fn new(info: StartInfo, commands: Commands) -> Self {
        let listed_commands = listed_commands(&info);
        Session {
            listed_commands,
            commands,
            models: info.models,
            catalog: info.catalog,
            model: info.model,
            thinking: info.thinking,
            session_id: info.session_id,
            session_name: info.session_name,
            session_file: info.session_file,
            compacting: false,
            steering_mode: match info.config.steering_mode.as_deref() {
                Some("all") => "all",
                _ => "one-at-a-time",
            },
            follow_up_mode: match info.config.follow_up_mode.as_deref() {
                Some("all") => "all",
                _ => "one-at-a-time",
            },
            streaming: false,
            auto_compaction: info.config.compaction.settings().enabled,
            scoped: info.scoped_models,
            keyless: info.providers_without_key,
            waiting: VecDeque::new(),
            compactions: Vec::new(),
        }
    }

    /// Follow the run's state from its events; returns the responses they complete (a
    /// `compact` whose compaction failed or did nothing).
    pub fn observe(&mut self, run: Option<RunId>, event: &AgentEvent) -> Vec<String> {
        match event {
            AgentEvent::AgentStart => self.streaming = true,
            AgentEvent::AgentEnd { .. } => {
                self.streaming = false;
                self.compacting = false;
                // A compaction run that ended without saying what it did.
                return self
                    .take_compaction(run)
                    .map(|c| response(&c.id, "compact", Err("nothing was compacted".to_string())))
                    .into_iter()
                    .collect();
            }
            AgentEvent::CompactionStart { .. } => self.compacting = true,
            AgentEvent::CompactionEnd {
                result,
                aborted,
                error_message,
                ..
            } => {
                self.compacting = false;
                let Some(c) = self.take_compaction(run) else {
                    return Vec::new();
                };
                let Some(r) = result else {
                    let why = match (error_message, aborted) {
                        (Some(e), _) if e.starts_with("nothing") => e.clone(),
                        (Some(e), _) => format!("nothing was compacted: {e}"),
                        (None, true) => "the compaction was stopped; nothing was compacted".into(),
                        (None, false) => "nothing was compacted".into(),
                    };
                    return vec![response(&c.id, "compact", Err(why))];
                };
                // The entry it keeps from is the recorder's to name: ask the host.
                let data = json!({
                    "summary": r.summary,
                    "firstKeptEntryId": Value::Null,
                    "tokensBefore": r.tokens_before,
                    "tokensAfter": r.tokens_after,
                    "details": r.details,
                });
                let op = self.commands.send(OpBody::RecordedCompaction);
                self.waiting.push_back(Waiting {
                    op,
                    id: c.id,
                    command: "compact",
                    partial: Some(data),
                });
            }
            _ => {}
        }
        Vec::new()
    }

    fn take_compaction(&mut self, run: Option<RunId>) -> Option<Compacting> {
        let at = self.compactions.iter().position(|c| Some(c.run) == run)?;
        Some(self.compactions.remove(at))
    }

    /// One line from stdin; returns the lines to write (its response, when it has one now).
    /// Waiting for the host's answer to a prompt or the state, events that come first stay in
    /// `events` for the caller.
    pub async fn handle_line(&mut self, line: &[u8], events: &mut FrontEvents) -> Vec<String> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Vec::new();
        }
        let cmd: Value = match serde_json::from_slice(line) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => {
                return vec![response(
                    &None,
                    "parse",
                    Err("Failed to parse command: a command is a JSON object".into()),
                )];
            }
            Err(e) => {
                return vec![response(
                    &None,
                    "parse",
                    Err(format!("Failed to parse command: {e}")),
                )];
            }
        };
        let id = cmd.get("id").cloned();
        let Some(kind) = cmd.get("type").and_then(Value::as_str).map(str::to_string) else {
            return vec![response(
                &id,
                "unknown",
                Err("a command needs a `type`".into()),
            )];
        };
        let command = match wire::parse(&kind, cmd) {
            Ok(c) => c,
            // Answered under the name it was sent with.
            Err(e) => return vec![response(&id, &kind, Err(e))],
        };
        match self.dispatch(command, &id, events).await {
            Some((name, result)) => vec![response(&id, name, result)],
            None => Vec::new(),
        }
    }

    /// Send `body` and wait for the host's answer.
    async fn ask(&self, body: OpBody, events: &mut FrontEvents) -> Option<AgentAnswer> {
        let op = self.commands.send(body)?;
        match events.answer(op).await {
            Some(Answer::Agent(a)) => Some(a),
            _ => None,
        }
    }

    async fn snapshot(&self, events: &mut FrontEvents) -> Result<AgentState, String> {
        match self.ask(OpBody::Snapshot, events).await {
            Some(AgentAnswer::State(s)) => Ok(*s),
            _ => Err("the agent is gone".to_string()),
        }
    }

    /// A prompt, steer or follow-up: answered once the host has started or queued it.
    async fn prompt(
        &mut self,
        name: &'static str,
        text: String,
        images: Option<Vec<ImageContent>>,
        when_busy: WhenBusy,
        events: &mut FrontEvents,
    ) -> Done {
        let prompt = Prompt {
            text,
            images: images.unwrap_or_default(),
            when_busy,
            ..Prompt::default()
        };
        let result = match self.ask(OpBody::Prompt(prompt), events).await {
            Some(AgentAnswer::Prompt(Ok(_))) => {
                self.streaming = true;
                Ok(None)
            }
            Some(AgentAnswer::Prompt(Err(AgentError::Busy))) => Err("The agent is already \
                working: send the prompt with streamingBehavior \"steer\" or \"followUp\" to \
                queue it"
                .to_string()),
            Some(AgentAnswer::Prompt(Err(e))) => Err(e.to_string()),
            _ => Err("the agent is gone".to_string()),
        };
        Some((name, result))
    }

    /// Carry out a command; `None` when its answer comes later from the host.
    #[allow(
        clippy::too_many_lines,
        reason = "one short arm per RPC command: a table of the protocol, not logic"
    )]
    async fn dispatch(
        &mut self,
        command: RpcCommand,
        id: &Option<Value>,
        events: &mut FrontEvents,
    ) -> Done {
        let done = |name: &'static str, r: Result<Option<Value>, String>| Some((name, r));
        match command {
            RpcCommand::Prompt {
                message,
                images,
                streaming_behavior,
            } => {
                let when_busy = StreamingBehavior::when_busy(streaming_behavior);
                self.prompt("prompt", message, images, when_busy, events)
                    .await
            }
            // Queued while a run is active; with none, they start one.
            RpcCommand::Steer { message, images } => {
                self.prompt("steer", message, images, WhenBusy::Steer, events)
                    .await
            }
            RpcCommand::FollowUp { message, images } => {
                self.prompt("follow_up", message, images, WhenBusy::FollowUp, events)
                    .await
            }
            RpcCommand::Abort => {
                self.commands.send(OpBody::Abort { reason: None });
                done("abort", Ok(None))
            }
            RpcCommand::NewSession => self.wait(OpBody::NewSession, id, "new_session"),
            RpcCommand::GetState => {
                let state = match self.snapshot(events).await {
                    Ok(s) => s,
                    Err(e) => return done("get_state", Err(e)),
                };
                let mut data = json!({
                    "model": model_json(&self.model),
                    "thinkingLevel": self.thinking.as_str(),
                    "isStreaming": state.is_streaming,
                    "isCompacting": self.compacting,
                    "steeringMode": self.steering_mode,
                    "followUpMode": self.follow_up_mode,
                    "sessionId": self.session_id,
                    "autoCompactionEnabled": self.auto_compaction,
                    "messageCount": state.messages.len(),
                    "pendingMessageCount": state.pending_messages,
                    "isPaused": state.paused,
                });
                if let Some(n) = &self.session_name {
                    data["sessionName"] = json!(n);
                }
                if let Some(f) = &self.session_file {
                    data["sessionFile"] = json!(f.display().to_string());
                }
                done("get_state", Ok(Some(data)))
            }
            RpcCommand::GetMessages => match self.snapshot(events).await {
                Ok(s) => done("get_messages", Ok(Some(json!({"messages": s.messages})))),
                Err(e) => done("get_messages", Err(e)),
            },
            RpcCommand::GetLastAssistantText => match self.snapshot(events).await {
                Ok(s) => {
                    let text = s.messages.iter().rev().find_map(|m| match m.as_llm() {
                        Some(Message::Assistant(a)) => Some(a.text()),
                        _ => None,
                    });
                    done("get_last_assistant_text", Ok(Some(json!({"text": text}))))
                }
                Err(e) => done("get_last_assistant_text", Err(e)),
            },
            RpcCommand::SetModel { provider, model_id } => {
                // The rule `--model` and `/model` follow too.
                match model_by_id(&self.catalog, &provider, &model_id, Some(&self.model)) {
                    Ok((m, warning)) => {
                        if let Some(w) = warning {
                            eprintln!("pi: warning: {}", crate::visible::visible(&w));
                        }
                        self.set_model(&m);
                        let data = model_json(&m);
                        self.model = m;
                        done("set_model", Ok(Some(data)))
                    }
                    Err(e) => done(
                        "set_model",
                        Err(format!("Model not found: {provider}/{model_id} ({e})")),
                    ),
                }
            }
            RpcCommand::GetAvailableModels => {
                let models: Vec<Value> = self.models.iter().map(model_json).collect();
                done("get_available_models", Ok(Some(json!({"models": models}))))
            }
            RpcCommand::SetThinkingLevel { level } => match level.parse::<ThinkingLevel>() {
                Ok(level) => {
                    self.commands.send(OpBody::SetThinking { level });
                    self.thinking = level;
                    done("set_thinking_level", Ok(None))
                }
                Err(e) => done("set_thinking_level", Err(e)),
            },
            RpcCommand::SetSteeringMode { mode } => {
                self.commands.send(OpBody::SetSteeringMode { mode });
                self.steering_mode = mode_label(mode);
                done("set_steering_mode", Ok(None))
            }
            RpcCommand::SetFollowUpMode { mode } => {
                self.commands.send(OpBody::SetFollowUpMode { mode });
                self.follow_up_mode = mode_label(mode);
                done("set_follow_up_mode", Ok(None))
            }
            RpcCommand::Compact {
                custom_instructions,
            } => {
                let focus = custom_instructions;
                match self.ask(OpBody::Compact { focus }, events).await {
                    // Answered with what it did when its `compaction_end` arrives.
                    Some(AgentAnswer::Run(Ok(run))) => {
                        self.compactions.push(Compacting {
                            id: id.clone(),
                            run,
                        });
                        None
                    }
                    Some(AgentAnswer::Run(Err(e))) => done("compact", Err(e.to_string())),
                    _ => done("compact", Err("the agent is gone".into())),
                }
            }
            RpcCommand::Pause | RpcCommand::Resume => {
                let pause = matches!(command, RpcCommand::Pause);
                self.commands.send(OpBody::SetPaused { paused: pause });
                done(
                    if pause { "pause" } else { "resume" },
                    Ok(Some(json!({"paused": pause}))),
                )
            }
            RpcCommand::AbortRetry => {
                self.commands.send(OpBody::AbortRetry);
                done("abort_retry", Ok(None))
            }
            RpcCommand::AbortBash => {
                self.commands.send(OpBody::AbortShell);
                done("abort_bash", Ok(None))
            }
            RpcCommand::Bash { command } => self.wait(
                OpBody::Shell {
                    command,
                    include: true,
                },
                id,
                "bash",
            ),
            RpcCommand::SetSessionName { name } => {
                self.wait(OpBody::NameSession { name }, id, "set_session_name")
            }
            RpcCommand::CycleThinkingLevel => {
                if !self.model.reasoning {
                    return done("cycle_thinking_level", Ok(Some(Value::Null)));
                }
                let next = self.thinking.cycled();
                self.commands.send(OpBody::SetThinking { level: next });
                self.thinking = next;
                done(
                    "cycle_thinking_level",
                    Ok(Some(json!({"level": next.as_str()}))),
                )
            }
            RpcCommand::SetAutoCompaction { enabled } => {
                self.commands.send(OpBody::SetAutoCompaction { enabled });
                self.auto_compaction = enabled;
                done("set_auto_compaction", Ok(None))
            }
            RpcCommand::SetAutoRetry { enabled } => {
                self.commands.send(OpBody::SetAutoRetry { enabled });
                done("set_auto_retry", Ok(None))
            }
            RpcCommand::CycleModel => {
                let scoped = !self.scoped.is_empty();
                let keyless = &self.keyless;
                let Some((model, level)) = crate::setup::patterns::cycle(
                    &self.scoped,
                    &self.models,
                    &|p| !keyless.iter().any(|k| k == p),
                    &self.model,
                    true,
                ) else {
                    return done("cycle_model", Ok(Some(Value::Null)));
                };
                self.set_model(&model);
                if let Some(l) = level.filter(|_| model.reasoning) {
                    self.commands.send(OpBody::SetThinking { level: l });
                    self.thinking = l;
                }
                let data = json!({
                    "model": model_json(&model),
                    "thinkingLevel": self.thinking.as_str(),
                    "isScoped": scoped,
                });
                self.model = model;
                done("cycle_model", Ok(Some(data)))
            }
            RpcCommand::GetCommands => {
                // No extension commands in this pi: its prompt templates and skills.
                let commands = self.listed_commands.clone();
                done("get_commands", Ok(Some(json!({ "commands": commands }))))
            }
            RpcCommand::GetSessionStats => self.wait(OpBody::Stats, id, "get_session_stats"),
            RpcCommand::ExportHtml { output_path } => {
                let path = output_path.map(std::path::PathBuf::from);
                self.wait(OpBody::Export { path }, id, "export_html")
            }
            RpcCommand::SwitchSession { session_path } => self.wait(
                OpBody::OpenSession {
                    path: std::path::PathBuf::from(session_path),
                },
                id,
                "switch_session",
            ),
            RpcCommand::Fork { entry_id } => {
                self.wait(OpBody::Fork { target: entry_id }, id, "fork")
            }
            RpcCommand::Clone => self.wait(OpBody::Clone, id, "clone"),
            RpcCommand::GetForkMessages => self.wait(OpBody::ForkPoints, id, "get_fork_messages"),
            RpcCommand::SetPlanMode { enabled } => {
                self.commands.send(OpBody::SetPlanMode { on: enabled });
                done("set_plan_mode", Ok(Some(json!({ "enabled": enabled }))))
            }
            RpcCommand::Rewind {
                entry_id,
                mode,
                force,
                dry_run,
            } => {
                let body = if dry_run {
                    OpBody::RewindPlan { target: entry_id }
                } else {
                    OpBody::Rewind {
                        target: entry_id,
                        mode,
                        force,
                    }
                };
                self.wait(body, id, "rewind")
            }
            // Refused by `wire::parse`.
            RpcCommand::ExtensionUiResponse | RpcCommand::Unknown => None,
        }
    }

    /// Talk to `model` from now on (the host finds it by the same name).
    fn set_model(&self, model: &ModelInfo) {
        self.commands.send(OpBody::SetModel {
            provider: model.provider.clone(),
            id: model.id.clone(),
        });
    }

    /// Send a host operation whose answer comes later, as an event naming it.
    fn wait(&mut self, body: OpBody, id: &Option<Value>, name: &'static str) -> Done {
        let op = self.commands.send(body);
        self.waiting.push_back(Waiting {
            op,
            id: id.clone(),
            command: name,
            partial: None,
        });
        None
    }

    /// An event from the host: the response of the command waiting for it (`reply_to`: the
    /// operation it answers).
    pub fn host_event(&mut self, reply_to: Option<OpId>, event: HostEvent) -> Vec<String> {
        let answer = match event {
            HostEvent::NewSession {
                session_id, path, ..
            } => {
                self.session_id = session_id;
                self.session_file = path;
                self.session_name = None;
                Some(("new_session", Ok(Some(json!({"cancelled": false})))))
            }
            HostEvent::Named(name) => {
                self.session_name = Some(name);
                Some(("set_session_name", Ok(None)))
            }
            HostEvent::ShellDone(r) => Some((
                "bash",
                match r.refused {
                    Some(why) => Err(why),
                    None => Ok(Some(json!({
                        "output": r.output,
                        "exitCode": r.exit_code,
                        "cancelled": r.cancelled,
                        "truncated": false,
                    }))),
                },
            )),
            HostEvent::Stats(st) => Some(("get_session_stats", Ok(Some(stats_json(&st))))),
            HostEvent::Exported(path) => Some((
                "export_html",
                Ok(Some(json!({"path": path.display().to_string()}))),
            )),
            HostEvent::Opened(opened) => {
                let command = self
                    .waiting_for(reply_to, "")
                    .and_then(|at| self.waiting.get(at))
                    .map(|w| w.command)
                    .filter(|c| matches!(*c, "switch_session" | "fork" | "clone"))
                    .unwrap_or("switch_session");
                self.session_id = opened.session_id.clone();
                self.session_name = opened.name.clone();
                self.session_file = Some(opened.path.clone());
                self.model = opened.model.clone();
                self.thinking = opened.thinking;
                let data = if command == "fork" {
                    json!({"text": opened.draft.clone().unwrap_or_default(), "cancelled": false})
                } else {
                    json!({"cancelled": false})
                };
                Some((command, Ok(Some(data))))
            }
            HostEvent::ForkPoints(points) => {
                let messages: Vec<Value> = points
                    .into_iter()
                    .map(|(id, text)| json!({"entryId": id, "text": text}))
                    .collect();
                Some(("get_fork_messages", Ok(Some(json!({"messages": messages})))))
            }
            HostEvent::RewindPlan(p) => Some((
                "rewind",
                Ok(Some(json!({ "entryId": p.target, "files": p.plan.files }))),
            )),
            HostEvent::FilesRestored(r) => {
                let paths = |v: &[std::path::PathBuf]| -> Vec<String> {
                    v.iter().map(|p| p.display().to_string()).collect()
                };
                let failed: Vec<Value> = r
                    .failed
                    .iter()
                    .map(|(p, why)| json!({"path": p.display().to_string(), "error": why}))
                    .collect();
                Some((
                    "rewind",
                    Ok(Some(json!({
                        "restored": paths(&r.restored),
                        "kept": paths(&r.kept),
                        "failed": failed,
                    }))),
                ))
            }
            HostEvent::CompactionRecorded(first_kept) => {
                let at = self.waiting_for(reply_to, "compact");
                let Some(w) = at.and_then(|at| self.waiting.remove(at)) else {
                    return Vec::new();
                };
                let mut data = w.partial.unwrap_or_else(|| json!({}));
                data["firstKeptEntryId"] = json!(first_kept);
                return vec![response(&w.id, "compact", Ok(Some(data)))];
            }
            HostEvent::Failed(why) => {
                let at = self.waiting_for(reply_to, "");
                at.and_then(|at| self.waiting.get(at))
                    .map(|w| (w.command, Err::<Option<Value>, String>(why)))
            }
            // The server said the model's real window: `get_state` and the stats count
            // against it from now on.
            HostEvent::ModelWindow {
                provider,
                id,
                window,
            } => {
                if self.model.provider == provider && self.model.id == id {
                    self.model.context_window = window;
                }
                None
            }
            // Something to know that answers no command (a choice that could not be
            // remembered): said on stderr, as warnings are.
            HostEvent::Notice(text) => {
                eprintln!("pi: {}", crate::visible::visible(&text));
                None
            }
            _ => None,
        };
        let Some((command, result)) = answer else {
            return Vec::new();
        };
        let at = self.waiting_for(reply_to, command).unwrap_or(0);
        match self.waiting.remove(at) {
            Some(w) => vec![response(&w.id, w.command, result)],
            None => Vec::new(),
        }
    }

    /// Where in `waiting` the command is that the host answers: the operation `reply_to`
    /// names, else the oldest `command` (the oldest of all for `""`).
    fn waiting_for(&self, reply_to: Option<OpId>, command: &str) -> Option<usize> {
        reply_to
            .and_then(|op| self.waiting.iter().position(|w| w.op == Some(op)))
            .or_else(|| {
                self.waiting
                    .iter()
                    .position(|w| command.is_empty() || w.command == command)
            })
    }
}

/// `get_session_stats`' data.
fn stats_json(st: &crate::host::SessionStats) -> Value {
    let u = &st.usage;
    let mut data = json!({
        "sessionFile": st.path.as_ref().map(|p| p.display().to_string()),
        "sessionId": st.session_id,
        "userMessages": st.user_messages,
        "assistantMessages": st.assistant_messages,
        "toolCalls": st.tool_calls,
        "toolResults": st.tool_results,
        "totalMessages": st.user_messages + st.assistant_messages + st.tool_results,
        "tokens": {
            "input": u.input,
            "output": u.output,
            "cacheRead": u.cache_read,
            "cacheWrite": u.cache_write,
            "total": u.input + u.output + u.cache_read + u.cache_write,
        },
        "cost": u.cost,
    });
    if st.context_window > 0 {
        data["contextUsage"] = json!({
            "tokens": u.context,
            "contextWindow": st.context_window,
            "percent": u.context as f64 * 100.0 / st.context_window as f64,
        });
    }
    data
}
