//! The RPC commands, mapped onto the host: agent commands (prompt, steer, follow-up, abort,
//! model, thinking, queue modes, compaction, state) go straight to the agent; session commands
//! (new session, name, `bash`) are answered when the host reports back. `compact` is answered
//! when its run's `compaction_end` arrives: with what it did (the first kept entry named by
//! the session recorder, through the host), or `success: false` when nothing was compacted.
//! `set_model` names models by the rule `--model` and `/model` follow
//! ([`crate::setup::select::model_by_id`]). A command this pi has no feature for gets
//! `success: false` saying so.

use std::collections::VecDeque;

use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::response;
use crate::agent::protocol::command::{AgentCommand, AgentError, AgentState, QueueMode, WhenBusy};
use crate::agent::protocol::events::{AgentEvent, RunId};
use crate::agent::protocol::thinking::ThinkingLevel;
use crate::agent::protocol::types::{
    AgentMessage, ContentBlock, ImageContent, Message, UserContent, UserMessage,
};
use crate::host::{Command, Commands, HostEvent};
use crate::provider::catalog::{Catalog, ModelInfo};
use crate::setup::StartInfo;
use crate::setup::select::model_by_id;

/// Commands of the Node.js pi this pi has no feature for (extensions and their dialogs).
const UNSUPPORTED: &[&str] = &["extension_ui_response"];

/// A command waiting for the host's answer.
struct Waiting {
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

fn text_field(cmd: &Value, key: &str) -> Result<String, String> {
    cmd.get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| format!("`{key}` must be a string"))
}

/// The user message of a prompt, steer or follow-up: its text and any images.
fn user_message(cmd: &Value, steering: bool) -> Result<AgentMessage, String> {
    let text = text_field(cmd, "message")?;
    let images: Vec<ImageContent> = match cmd.get("images") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => serde_json::from_value::<Vec<Value>>(v.clone())
            .map_err(|e| format!("`images` must be a list of images: {e}"))?
            .into_iter()
            .map(|i| {
                serde_json::from_value::<ImageContent>(i)
                    .map_err(|e| format!("an image needs `data` and `mimeType`: {e}"))
            })
            .collect::<Result<_, _>>()?,
    };
    let mut m = UserMessage::new(text.clone());
    m.steering = steering;
    if !images.is_empty() {
        let mut blocks = vec![ContentBlock::text(text)];
        blocks.extend(images.into_iter().map(ContentBlock::Image));
        m.content = UserContent::Blocks(blocks);
    }
    Ok(AgentMessage::Llm(std::sync::Arc::new(Message::User(m))))
}

fn queue_mode(cmd: &Value) -> Result<(QueueMode, &'static str), String> {
    match cmd.get("mode").and_then(Value::as_str) {
        Some("all") => Ok((QueueMode::All, "all")),
        Some("one-at-a-time") => Ok((QueueMode::OneAtATime, "one-at-a-time")),
        _ => Err("`mode` must be \"all\" or \"one-at-a-time\"".into()),
    }
}

impl Session {
    pub fn new(info: StartInfo, commands: Commands) -> Self {
        Session {
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
                self.commands.send(Command::RecordedCompaction);
                self.waiting.push_back(Waiting {
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
    pub async fn handle_line(&mut self, line: &[u8]) -> Vec<String> {
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
        match self.dispatch(&kind, &cmd, &id).await {
            // An unknown command is answered under the name it was sent with.
            Some(("unknown", result)) => vec![response(&id, &kind, result)],
            Some((name, result)) => vec![response(&id, name, result)],
            None => Vec::new(),
        }
    }

    async fn snapshot(&self) -> Result<AgentState, String> {
        let (reply, rx) = oneshot::channel();
        self.commands.agent(AgentCommand::Snapshot(reply));
        rx.await.map_err(|_| "the agent is gone".to_string())
    }

    /// Carry out a command; `None` when its answer comes later from the host.
    #[allow(
        clippy::too_many_lines,
        reason = "the string dispatch that the command protocol replaces (issue 29 point 1)"
    )]
    async fn dispatch(
        &mut self,
        kind: &str,
        cmd: &Value,
        id: &Option<Value>,
    ) -> Option<(&'static str, Result<Option<Value>, String>)> {
        let done = |name: &'static str, r: Result<Option<Value>, String>| Some((name, r));
        match kind {
            "prompt" => {
                let message = match user_message(cmd, false) {
                    Ok(m) => m,
                    Err(e) => return done("prompt", Err(e)),
                };
                let when_busy = match cmd.get("streamingBehavior").and_then(Value::as_str) {
                    None => WhenBusy::Refuse,
                    Some("steer") => WhenBusy::Steer,
                    Some("followUp") => WhenBusy::FollowUp,
                    Some(other) => {
                        return done(
                            "prompt",
                            Err(format!(
                                "unknown streamingBehavior `{other}` (expected \"steer\" or \"followUp\")"
                            )),
                        );
                    }
                };
                let result = match self.commands.prompt(vec![message], when_busy).await {
                    Ok(_) => {
                        self.streaming = true;
                        Ok(None)
                    }
                    Err(AgentError::Busy) => Err("The agent is already working: send the \
                        prompt with streamingBehavior \"steer\" or \"followUp\" to queue it"
                        .to_string()),
                    Err(e) => Err(e.to_string()),
                };
                done("prompt", result)
            }
            "steer" | "follow_up" => {
                let steer = kind == "steer";
                let name = if steer { "steer" } else { "follow_up" };
                match user_message(cmd, steer) {
                    Ok(m) => {
                        self.commands.agent(if steer {
                            AgentCommand::Steer(m)
                        } else {
                            AgentCommand::FollowUp(m)
                        });
                        done(name, Ok(None))
                    }
                    Err(e) => done(name, Err(e)),
                }
            }
            "abort" => {
                self.commands.agent(AgentCommand::Abort { reason: None });
                done("abort", Ok(None))
            }
            "new_session" => {
                self.commands.send(Command::NewSession);
                self.waiting.push_back(Waiting {
                    id: id.clone(),
                    command: "new_session",
                    partial: None,
                });
                None
            }
            "get_state" => {
                let state = match self.snapshot().await {
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
            "get_messages" => match self.snapshot().await {
                Ok(s) => done("get_messages", Ok(Some(json!({"messages": s.messages})))),
                Err(e) => done("get_messages", Err(e)),
            },
            "get_last_assistant_text" => match self.snapshot().await {
                Ok(s) => {
                    let text = s.messages.iter().rev().find_map(|m| match m.as_llm() {
                        Some(Message::Assistant(a)) => Some(a.text()),
                        _ => None,
                    });
                    done("get_last_assistant_text", Ok(Some(json!({"text": text}))))
                }
                Err(e) => done("get_last_assistant_text", Err(e)),
            },
            "set_model" => {
                let provider = cmd.get("provider").and_then(Value::as_str).unwrap_or("");
                let model_id = cmd.get("modelId").and_then(Value::as_str).unwrap_or("");
                // The rule `--model` and `/model` follow too.
                match model_by_id(&self.catalog, provider, model_id, Some(&self.model)) {
                    Ok((m, warning)) => {
                        if let Some(w) = warning {
                            eprintln!("pi: warning: {}", crate::visible::visible(&w));
                        }
                        self.commands.send(Command::SetModel(Box::new(m.clone())));
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
            "get_available_models" => {
                let models: Vec<Value> = self.models.iter().map(model_json).collect();
                done("get_available_models", Ok(Some(json!({"models": models}))))
            }
            "set_thinking_level" => {
                match cmd
                    .get("level")
                    .and_then(Value::as_str)
                    .ok_or_else(|| "`level` must be a string".to_string())
                    .and_then(str::parse::<ThinkingLevel>)
                {
                    Ok(level) => {
                        self.commands.send(Command::SetThinking(level));
                        self.thinking = level;
                        done("set_thinking_level", Ok(None))
                    }
                    Err(e) => done("set_thinking_level", Err(e)),
                }
            }
            "set_steering_mode" | "set_follow_up_mode" => {
                let steering = kind == "set_steering_mode";
                let name = if steering {
                    "set_steering_mode"
                } else {
                    "set_follow_up_mode"
                };
                match queue_mode(cmd) {
                    Ok((mode, label)) => {
                        if steering {
                            self.commands.agent(AgentCommand::SetSteeringMode(mode));
                            self.steering_mode = label;
                        } else {
                            self.commands.agent(AgentCommand::SetFollowUpMode(mode));
                            self.follow_up_mode = label;
                        }
                        done(name, Ok(None))
                    }
                    Err(e) => done(name, Err(e)),
                }
            }
            "compact" => {
                let focus = cmd
                    .get("customInstructions")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                let (reply, rx) = oneshot::channel();
                self.commands.agent(AgentCommand::Compact {
                    focus,
                    reply: Some(reply),
                });
                match rx.await {
                    // Answered with what it did when its `compaction_end` arrives.
                    Ok(Ok(run)) => {
                        self.compactions.push(Compacting {
                            id: id.clone(),
                            run,
                        });
                        None
                    }
                    Ok(Err(e)) => done("compact", Err(e.to_string())),
                    Err(_) => done("compact", Err("the agent is gone".into())),
                }
            }
            // pi's own: hold the agent back at its next step (no Node.js counterpart).
            "pause" | "resume" => {
                let pause = kind == "pause";
                self.commands.agent(AgentCommand::SetPaused(pause));
                done(
                    if pause { "pause" } else { "resume" },
                    Ok(Some(json!({"paused": pause}))),
                )
            }
            "abort_retry" => {
                self.commands.agent(AgentCommand::AbortRetry);
                done("abort_retry", Ok(None))
            }
            "abort_bash" => {
                self.commands.send(Command::AbortShell);
                done("abort_bash", Ok(None))
            }
            "bash" => match text_field(cmd, "command") {
                Ok(command) => {
                    self.commands.send(Command::Shell {
                        command,
                        include: true,
                    });
                    self.waiting.push_back(Waiting {
                        id: id.clone(),
                        command: "bash",
                        partial: None,
                    });
                    None
                }
                Err(e) => done("bash", Err(e)),
            },
            "set_session_name" => match text_field(cmd, "name") {
                Ok(name) => {
                    self.commands.send(Command::NameSession(name));
                    self.waiting.push_back(Waiting {
                        id: id.clone(),
                        command: "set_session_name",
                        partial: None,
                    });
                    None
                }
                Err(e) => done("set_session_name", Err(e)),
            },
            "cycle_thinking_level" => {
                if !self.model.reasoning {
                    return done("cycle_thinking_level", Ok(Some(Value::Null)));
                }
                let next = self.thinking.cycled();
                self.commands.send(Command::SetThinking(next));
                self.thinking = next;
                done(
                    "cycle_thinking_level",
                    Ok(Some(json!({"level": next.as_str()}))),
                )
            }
            "set_auto_compaction" | "set_auto_retry" => {
                let compaction = kind == "set_auto_compaction";
                let name = if compaction {
                    "set_auto_compaction"
                } else {
                    "set_auto_retry"
                };
                let Some(on) = cmd.get("enabled").and_then(Value::as_bool) else {
                    return done(name, Err("`enabled` must be true or false".into()));
                };
                if compaction {
                    self.commands.send(Command::SetAutoCompaction(on));
                    self.auto_compaction = on;
                } else {
                    self.commands.send(Command::SetAutoRetry(on));
                }
                done(name, Ok(None))
            }
            "cycle_model" => {
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
                self.commands
                    .send(Command::SetModel(Box::new(model.clone())));
                if let Some(l) = level.filter(|_| model.reasoning) {
                    self.commands.send(Command::SetThinking(l));
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
            "get_commands" => {
                // No extension commands, prompt templates or skills in this pi.
                done("get_commands", Ok(Some(json!({"commands": []}))))
            }
            "get_session_stats" => self.wait(Command::Stats, id, "get_session_stats"),
            "export_html" => {
                let path = cmd
                    .get("outputPath")
                    .and_then(Value::as_str)
                    .map(std::path::PathBuf::from);
                self.wait(Command::Export(path), id, "export_html")
            }
            "switch_session" => match text_field(cmd, "sessionPath") {
                Ok(p) => self.wait(
                    Command::OpenSession(std::path::PathBuf::from(p)),
                    id,
                    "switch_session",
                ),
                Err(e) => done("switch_session", Err(e)),
            },
            "fork" => match text_field(cmd, "entryId") {
                Ok(entry) => self.wait(Command::Fork(entry), id, "fork"),
                Err(e) => done("fork", Err(e)),
            },
            "clone" => self.wait(Command::Clone, id, "clone"),
            "get_fork_messages" => self.wait(Command::ForkPoints, id, "get_fork_messages"),
            other if UNSUPPORTED.contains(&other) => Some((
                static_name(other),
                Err(format!(
                    "`{other}` is not supported: this pi has no extensions"
                )),
            )),
            other => Some(("unknown", Err(format!("Unknown command: {other}")))),
        }
    }

    /// Send a host command whose answer comes later.
    fn wait(
        &mut self,
        command: Command,
        id: &Option<Value>,
        name: &'static str,
    ) -> Option<(&'static str, Result<Option<Value>, String>)> {
        self.commands.send(command);
        self.waiting.push_back(Waiting {
            id: id.clone(),
            command: name,
            partial: None,
        });
        None
    }

    /// An answer from the host: the response of the command waiting for it.
    pub fn host_event(&mut self, event: HostEvent) -> Vec<String> {
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
            HostEvent::Stats(st) => {
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
                Some(("get_session_stats", Ok(Some(data))))
            }
            HostEvent::Exported(path) => Some((
                "export_html",
                Ok(Some(json!({"path": path.display().to_string()}))),
            )),
            HostEvent::Opened(opened) => {
                let command = self
                    .waiting
                    .iter()
                    .map(|w| w.command)
                    .find(|c| matches!(*c, "switch_session" | "fork" | "clone"))
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
            HostEvent::CompactionRecorded(first_kept) => {
                let at = self.waiting.iter().position(|w| w.command == "compact");
                let Some(w) = at.and_then(|at| self.waiting.remove(at)) else {
                    return Vec::new();
                };
                let mut data = w.partial.unwrap_or_else(|| json!({}));
                data["firstKeptEntryId"] = json!(first_kept);
                return vec![response(&w.id, "compact", Ok(Some(data)))];
            }
            HostEvent::Failed(why) => self
                .waiting
                .front()
                .map(|w| (w.command, Err::<Option<Value>, String>(why))),
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
        let at = self
            .waiting
            .iter()
            .position(|w| w.command == command)
            .unwrap_or(0);
        match self.waiting.remove(at) {
            Some(w) => vec![response(&w.id, w.command, result)],
            None => Vec::new(),
        }
    }
}

/// The name of an unsupported command as a `'static` str for its response.
fn static_name(kind: &str) -> &'static str {
    UNSUPPORTED
        .iter()
        .find(|k| **k == kind)
        .copied()
        .unwrap_or("unknown")
}
