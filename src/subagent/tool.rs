//! The `task` tool: the model hands a job to a subagent, a child agent with its own context,
//! its definition's system prompt, tools and model, and gets its final answer back as the
//! call's result.
//!
//! The child shares the parent's provider, approval gate and hooks (so approvals, the sandbox
//! and `PreToolUse` hooks apply inside it), runs its tools from the parent's set, and cannot
//! start subagents of its own unless its definition lists the task tool (and then only
//! [`MAX_DEPTH`] levels down). While it works, progress updates say what it is doing; Esc
//! aborts it with the parent's run. Its transcript is saved as a session of its own, beside
//! the parent's in `subagents/`, and the result names that file. What it spent is in the
//! result's details ([`super::usage_of`]), which the footer and `/session` add up.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::SessionSlot;
use super::definitions::{Definition, GENERAL};
use crate::agent::engine::facade::{Agent, WeakAgent};
use crate::agent::protocol::abort::AbortSignal;
use crate::agent::protocol::events::AgentEvent;
use crate::agent::protocol::hooks::{AfterToolCallInfo, BeforeToolCall, LoopHooks, ResultOverride};
use crate::agent::protocol::stream::Model;
use crate::agent::protocol::tool::{
    AgentTool, IntentMode, ToolError, ToolInvocation, ToolOutput, ToolSet,
};
use crate::agent::protocol::types::{
    AgentMessage, AssistantMessage, Message, StopReason, ToolCall, Usage, UserMessage,
};
use crate::provider::catalog::Catalog;

/// How deep subagents may nest: the parent's subagents are level 1.
pub const MAX_DEPTH: u32 = 2;

/// How many times `SubagentStop` hooks may send a subagent back to work.
const STOP_ROUNDS: u32 = 4;

/// The task tool.
pub struct TaskTool {
    definitions: Arc<Vec<Definition>>,
    /// The agent whose tool this is (set once it exists).
    parent: OnceLock<WeakAgent>,
    catalog: Arc<Catalog>,
    /// The parent's session file, which the child's session names as its parent.
    session: Arc<SessionSlot>,
    hooks: Option<Arc<crate::hooks::Hooks>>,
    secrets: crate::secrets::Secrets,
    cwd: PathBuf,
    /// 1 for the parent's own task tool.
    depth: u32,
    description: String,
    parameters: Value,
}

/// What the tool needs from the composition root.
pub struct TaskParts {
    pub definitions: Arc<Vec<Definition>>,
    pub catalog: Arc<Catalog>,
    pub session: Arc<SessionSlot>,
    pub hooks: Option<Arc<crate::hooks::Hooks>>,
    pub secrets: crate::secrets::Secrets,
    pub cwd: PathBuf,
}

impl TaskTool {
    pub fn new(parts: TaskParts) -> Self {
        Self::at_depth(parts, 1)
    }

    fn at_depth(parts: TaskParts, depth: u32) -> Self {
        let mut description = String::from(
            "Hand a self-contained job to a subagent: it works with its own context and tools \
             and answers once, with its findings. Use it for searches and multi-step work that \
             would fill your context, and start several at once for independent jobs. Give it \
             everything it needs in `prompt`: it sees nothing of this conversation.\n\nAgents:",
        );
        for d in parts.definitions.iter() {
            description.push_str(&format!("\n- {}: {}", d.name, d.description));
        }
        let names: Vec<&str> = parts.definitions.iter().map(|d| d.name.as_str()).collect();
        let parameters = json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "The job in 3 to 5 words"},
                "prompt": {"type": "string", "description": "The whole task for the subagent"},
                "subagent_type": {
                    "type": "string",
                    "enum": names,
                    "description": format!("Which agent (default {GENERAL})")
                }
            },
            "required": ["description", "prompt"]
        });
        TaskTool {
            definitions: parts.definitions,
            parent: OnceLock::new(),
            catalog: parts.catalog,
            session: parts.session,
            hooks: parts.hooks,
            secrets: parts.secrets,
            cwd: parts.cwd,
            depth,
            description,
            parameters,
        }
    }

    /// The agent this tool belongs to (called once, after it is built).
    pub fn attach(&self, agent: &Agent) {
        let _ = self.parent.set(agent.downgrade());
    }

    /// The model `def` asks for, from the parent's: `None` keeps it; a bare id is looked up
    /// among the parent's provider's models first (`sonnet` finds its Sonnet), then anywhere.
    fn model_for(&self, def: &Definition, parent: &Model) -> (Model, Option<String>) {
        let Some(wanted) = def.model.as_deref() else {
            return (parent.clone(), None);
        };
        if let Some((provider, id)) = wanted.split_once('/')
            && let Ok((m, _)) = self.catalog.resolve(provider, id)
        {
            return (m.to_model(), None);
        }
        let found = crate::setup::patterns::best_match_near(
            wanted,
            self.catalog.models(),
            &parent.provider,
        );
        match found {
            Ok(m) => (m.to_model(), None),
            Err(_) => (
                parent.clone(),
                Some(format!(
                    "no model `{wanted}` was found for the {} agent; it used {}",
                    def.name, parent.id
                )),
            ),
        }
    }

    /// The child's tools: the parent's that the definition allows, and a task tool of its own
    /// when it may delegate and the depth allows.
    fn child_tools(
        &self,
        def: &Definition,
        parent: &ToolSet,
    ) -> (Vec<Arc<dyn AgentTool>>, Option<Arc<TaskTool>>) {
        let allowed = |name: &str| {
            def.tools
                .as_ref()
                .is_none_or(|t| t.iter().any(|n| n == name))
        };
        let mut tools: Vec<Arc<dyn AgentTool>> = parent
            .iter()
            .map(|r| r.tool.clone())
            .filter(|t| t.name() != "task" && allowed(t.name()))
            .collect();
        let nested = (def.may_delegate() && self.depth < MAX_DEPTH).then(|| {
            Arc::new(TaskTool::at_depth(
                TaskParts {
                    definitions: self.definitions.clone(),
                    catalog: self.catalog.clone(),
                    session: self.session.clone(),
                    hooks: self.hooks.clone(),
                    secrets: self.secrets.clone(),
                    cwd: self.cwd.clone(),
                },
                self.depth + 1,
            ))
        });
        if let Some(t) = &nested {
            tools.push(t.clone());
        }
        (tools, nested)
    }

    /// A session file for the child beside the parent's (`None` when the parent saves none).
    fn recorder(&self, child: &Agent, model: &Model) -> Option<crate::session::RecorderTask> {
        let parent = crate::sync::lock(&self.session.0).clone()?;
        let dir = parent.parent()?.join("subagents");
        let mut r = crate::session::SessionRecorder::new_with_parent(
            &dir,
            &self.cwd,
            Some(parent.display().to_string()),
        );
        r.set_model(&model.provider, &model.id);
        r.share_secrets(&self.secrets);
        Some(crate::session::RecorderTask::from_events(
            child.subscribe_filtered(crate::session::SessionRecorder::wants),
            r,
        ))
    }
}

/// The parent's tool hooks (approval gate, `PreToolUse`/`PostToolUse`), and nothing else of
/// its hooks: a subagent's end is not the parent's `Stop`.
struct ChildHooks(Arc<dyn LoopHooks>);

#[async_trait]
impl LoopHooks for ChildHooks {
    async fn before_tool_call(
        &self,
        assistant: &AssistantMessage,
        call: &ToolCall,
        args: &mut Value,
        signal: &AbortSignal,
    ) -> Result<BeforeToolCall, String> {
        self.0.before_tool_call(assistant, call, args, signal).await
    }

    fn transform_tool_arguments(&self, args: Value, tool_name: &str) -> Value {
        self.0.transform_tool_arguments(args, tool_name)
    }

    async fn after_tool_call(
        &self,
        info: AfterToolCallInfo<'_>,
        signal: &AbortSignal,
    ) -> Result<Option<ResultOverride>, String> {
        self.0.after_tool_call(info, signal).await
    }
}

/// What the child did, as its events tell it.
#[derive(Default)]
struct Record {
    tools: Vec<String>,
    usage: Usage,
    current: Option<String>,
    answer: Option<AssistantMessage>,
}

impl Record {
    /// The child's last reply neither failed nor was stopped.
    fn ended_well(&self) -> bool {
        self.answer
            .as_ref()
            .is_some_and(|a| !matches!(a.stop_reason, StopReason::Error | StopReason::Aborted))
    }

    fn status(&self, name: &str) -> String {
        let tokens = self.usage.input + self.usage.output + self.usage.cache_read;
        format!(
            "{name}: {} · {} tool call{} · {} tokens",
            self.current.as_deref().unwrap_or("thinking"),
            self.tools.len(),
            if self.tools.len() == 1 { "" } else { "s" },
            tokens
        )
    }

    /// `read ×3, bash ×1`, in first-use order.
    fn tool_summary(&self) -> String {
        let mut counts: Vec<(&str, usize)> = Vec::new();
        for t in &self.tools {
            match counts.iter_mut().find(|(n, _)| n == t) {
                Some((_, c)) => *c += 1,
                None => counts.push((t, 1)),
            }
        }
        counts
            .iter()
            .map(|(n, c)| format!("{n} ×{c}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn add_usage(total: &mut Usage, u: &Usage) {
    total.input += u.input;
    total.output += u.output;
    total.cache_read += u.cache_read;
    total.cache_write += u.cache_write;
    total.total_tokens += u.total_tokens;
    total.cost.input += u.cost.input;
    total.cost.output += u.cost.output;
    total.cost.cache_read += u.cost.cache_read;
    total.cost.cache_write += u.cost.cache_write;
    total.cost.total += u.cost.total;
}

/// A short label for a call the child starts: `read src/main.rs`, `bash cargo test`.
fn call_label(name: &str, args: &Value) -> String {
    let detail = ["path", "command", "pattern", "file_path"]
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str))
        .unwrap_or("");
    let detail: String = detail
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(60)
        .collect();
    if detail.is_empty() {
        name.to_string()
    } else {
        format!("{name} {detail}")
    }
}

#[async_trait]
impl AgentTool for TaskTool {
    fn name(&self) -> &str {
        "task"
    }

    fn label(&self) -> &str {
        "subagent"
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> &Value {
        &self.parameters
    }

    fn intent_mode(&self) -> IntentMode {
        IntentMode::Omit
    }

    fn derive_intent(&self, args: &Value) -> Option<String> {
        args.get("description")
            .and_then(Value::as_str)
            .map(str::to_string)
    }

    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let args = &call.args;
        let prompt = args
            .get("prompt")
            .and_then(Value::as_str)
            .filter(|p| !p.trim().is_empty())
            .ok_or_else(|| {
                ToolError::new("`prompt` is required: the whole task for the subagent")
            })?;
        let kind = args
            .get("subagent_type")
            .and_then(Value::as_str)
            .filter(|k| !k.is_empty())
            .unwrap_or(GENERAL);
        let Some(def) = self.definitions.iter().find(|d| d.name == kind) else {
            let names: Vec<&str> = self.definitions.iter().map(|d| d.name.as_str()).collect();
            return Err(ToolError::new(format!(
                "No subagent is called `{kind}`; there are: {}",
                names.join(", ")
            )));
        };
        let child = self.build_child(def)?;
        let mut events = child.agent.subscribe();
        let progress = Progress {
            id: call.tool_call_id.clone(),
            name: def.name.clone(),
            depth: self.depth,
            session_file: child.session_file.clone(),
            sink: call.progress.clone(),
        };
        let mut rec = Record::default();
        progress.send("running", &rec);
        child
            .agent
            .prompt_text(prompt)
            .map_err(|e| ToolError::new(format!("the subagent could not start: {e}")))?;
        self.follow(&child.agent, &mut events, &call.cancel, &progress, &mut rec)
            .await;
        if let Some(r) = child.recorder {
            r.finish().await;
        }
        Ok(result(def, &rec, &progress, child.model_note.as_deref()))
    }
}

/// A child agent ready to run, and what goes with it.
struct Child {
    agent: Agent,
    recorder: Option<crate::session::RecorderTask>,
    session_file: Option<PathBuf>,
    model_note: Option<String>,
}

/// Sends the running subagent's state as the call's progress, tagged with its id.
struct Progress {
    id: String,
    name: String,
    depth: u32,
    session_file: Option<PathBuf>,
    sink: crate::agent::protocol::tool::ProgressSink,
}

impl Progress {
    fn details(&self, status: &str, rec: &Record) -> Value {
        json!({"subagent": {
            "id": self.id,
            "name": self.name,
            "depth": self.depth,
            "status": status,
            "tools": rec.tools.len(),
            "usage": rec.usage,
            "sessionFile": self.session_file,
        }})
    }

    fn send(&self, status: &str, rec: &Record) {
        self.sink.update(
            ToolOutput::text(rec.status(&self.name)).with_details(self.details(status, rec)),
        );
    }
}

impl TaskTool {
    /// The child for `def`: the parent's settings with the definition's model, tools and
    /// prompt, the parent's tool hooks, and a session file when the parent saves one.
    fn build_child(&self, def: &Definition) -> Result<Child, ToolError> {
        let parent = self
            .parent
            .get()
            .and_then(WeakAgent::upgrade)
            .ok_or_else(|| ToolError::new("the agent this subagent would serve has stopped"))?;
        let ps = parent.settings();
        let (model, model_note) = self.model_for(def, &ps.model);
        let (tools, nested) = self.child_tools(def, &ps.tools);
        let mut settings = ps.clone();
        settings.model = model.clone();
        settings.tools = Arc::new(ToolSet::new(tools));
        settings.system_prompt = vec![format!(
            "{}\n\nCurrent date: {}\nCurrent working directory: {}",
            def.prompt,
            crate::config::instructions::today(),
            self.cwd.display()
        )];
        settings.hooks = Arc::new(ChildHooks(ps.hooks.clone()));
        settings.tool_choice = None;
        settings.deadline = None;
        let agent = Agent::new(settings);
        if let Some(t) = &nested {
            t.attach(&agent);
        }
        let recorder = self.recorder(&agent, &model);
        let session_file = recorder.as_ref().map(|r| r.path().to_path_buf());
        Ok(Child {
            agent,
            recorder,
            session_file,
            model_note,
        })
    }

    /// Follow the child's events to its end, aborting it when the call is cancelled and
    /// sending it back to work when a `SubagentStop` hook says so.
    async fn follow(
        &self,
        child: &Agent,
        events: &mut tokio::sync::mpsc::UnboundedReceiver<crate::agent::protocol::events::RunEvent>,
        cancel: &tokio_util::sync::CancellationToken,
        progress: &Progress,
        rec: &mut Record,
    ) {
        let mut stop_rounds = 0;
        let mut aborted = false;
        loop {
            let event = tokio::select! {
                e = events.recv() => e,
                () = cancel.cancelled(), if !aborted => {
                    aborted = true;
                    child.abort(Some("The run was stopped".into()));
                    continue;
                }
            };
            let Some(run_event) = event else { break };
            match run_event.event {
                AgentEvent::ToolExecutionStart {
                    tool_name, args, ..
                } => {
                    rec.current = Some(call_label(&tool_name, &args));
                    rec.tools.push(tool_name);
                }
                AgentEvent::ToolExecutionEnd { .. } => rec.current = None,
                AgentEvent::MessageEnd { message } => {
                    if let Some(Message::Assistant(a)) = message.as_llm() {
                        add_usage(&mut rec.usage, &a.usage);
                        rec.answer = Some(a.clone());
                    }
                }
                AgentEvent::AgentEnd { .. } => {
                    if !aborted
                        && rec.ended_well()
                        && stop_rounds < STOP_ROUNDS
                        && self.sent_back(child, stop_rounds > 0).await
                    {
                        stop_rounds += 1;
                        continue;
                    }
                    break;
                }
                _ => continue,
            }
            progress.send("running", rec);
        }
    }

    /// Run the `SubagentStop` hooks; true when one sent the child back to work.
    async fn sent_back(&self, child: &Agent, active: bool) -> bool {
        let Some(h) = self
            .hooks
            .as_ref()
            .filter(|h| h.has(crate::hooks::Event::SubagentStop))
        else {
            return false;
        };
        let signal = AbortSignal::new();
        let Some(reason) = h
            .stop(crate::hooks::Event::SubagentStop, active, &signal)
            .await
        else {
            return false;
        };
        let mut m = UserMessage::new(format!(
            "A SubagentStop hook says the work is not finished: {reason}"
        ));
        m.synthetic = true;
        child
            .prompt(vec![AgentMessage::from(Message::User(m))])
            .is_ok()
    }
}

/// The call's result: the child's answer (or why it has none) and a line on what it did.
fn result(
    def: &Definition,
    rec: &Record,
    progress: &Progress,
    model_note: Option<&str>,
) -> ToolOutput {
    let answer = rec.answer.as_ref();
    let failed = answer.map_or(Some("it gave no answer".to_string()), |a| {
        match a.stop_reason {
            StopReason::Aborted => Some("it was stopped".into()),
            StopReason::Error => Some(
                a.error_message
                    .clone()
                    .unwrap_or_else(|| "its model call failed".into()),
            ),
            _ => None,
        }
    });
    let mut footer = format!(
        "[{} subagent: {} tool call{}",
        def.name,
        rec.tools.len(),
        if rec.tools.len() == 1 { "" } else { "s" }
    );
    if !rec.tools.is_empty() {
        footer.push_str(&format!(" ({})", rec.tool_summary()));
    }
    if let Some(f) = &progress.session_file {
        footer.push_str(&format!("; transcript: {}", f.display()));
    }
    footer.push(']');
    if let Some(note) = model_note {
        footer.push_str(&format!("\n[{note}]"));
    }
    let said = answer
        .map(|a| a.text().trim().to_string())
        .unwrap_or_default();
    match failed {
        Some(why) => {
            let mut text = format!("The {} subagent did not finish: {why}.", def.name);
            if !said.is_empty() {
                text.push_str(&format!("\n\nWhat it said last:\n{said}"));
            }
            text.push_str(&format!("\n\n{footer}"));
            // The work it did still counts: an error result with its details.
            let mut out = ToolOutput::text(text).with_details(progress.details("failed", rec));
            out.is_error = true;
            out
        }
        None => {
            let said = if said.is_empty() {
                "(the subagent finished without a written answer)".to_string()
            } else {
                said
            };
            ToolOutput::text(format!("{said}\n\n{footer}"))
                .with_details(progress.details("done", rec))
        }
    }
}
