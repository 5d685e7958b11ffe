//! Hooks: the person's commands run at moments of a session, in Claude Code's documented
//! format, so hooks written for it work here unchanged.
//!
//! [`settings`] reads the groups from the files that may hold them, [`run`] runs one command,
//! and this module puts the two together per event: which commands a moment runs (matched on
//! the tool's name, Claude's or pi's, or on the event's source), the JSON they read on stdin,
//! and what their exit code and JSON answer mean for that event. [`gate`] plugs the tool
//! events into the loop in front of the approval gate; the host calls the others.
//!
//! The exit-code contract: 0 goes on (stdout may be a JSON answer), 2 blocks where the event
//! can be blocked (stderr says why, to the model or the person), anything else, a crash or a
//! timeout is an error the person sees while the session goes on, unless the hook says
//! `fail = "closed"`, which makes a failing `PreToolUse` hook block the call.
//!
//! With no hooks configured nothing here runs: [`Hooks::is_empty`] is checked first.

pub mod gate;
pub(crate) mod run;
pub mod settings;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Mutex;

use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::agent::protocol::abort::AbortSignal;
use crate::sync::lock;
pub use run::RunContext;
use run::{Ended, Ran};
pub use settings::Event;
use settings::{Group, HookCommand};

use crate::tools::claude_names::claude_name as claude_tool_name;

/// What every hook's input says of the session.
#[derive(Clone, Debug, Default)]
struct SessionFacts {
    session_id: String,
    transcript_path: Option<PathBuf>,
    /// Claude Code's name for the approval mode.
    permission_mode: &'static str,
}

/// The hooks of a session.
pub struct Hooks {
    groups: Vec<Group>,
    ctx: RunContext,
    session: Mutex<SessionFacts>,
    /// Where errors the person should see go (the front end's notices).
    notices: Mutex<Option<mpsc::UnboundedSender<String>>>,
}

/// How a `PreToolUse` hook wants the approval gate to treat the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Permission {
    /// Run without asking the person (deny rules and read-only mode still refuse).
    Allow,
    /// Ask the person even where the mode would not.
    Ask,
}

/// What the `PreToolUse` hooks decided about one call.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PreToolVerdict {
    /// Not run: why (for the model).
    pub block: Option<String>,
    pub permission: Option<Permission>,
    /// New arguments, in pi's names.
    pub updated_input: Option<Value>,
    /// Text for the model alongside the result.
    pub context: Vec<String>,
    /// `continue: false`: the run stops after this call, with this reason for the person.
    pub stop: Option<String>,
}

/// What the `PostToolUse` hooks said about a result.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PostToolVerdict {
    /// Text for the model, added to the result.
    pub feedback: Vec<String>,
    pub stop: Option<String>,
}

/// What the `UserPromptSubmit` hooks decided.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PromptVerdict {
    /// Not sent: why (for the person).
    pub block: Option<String>,
    /// Context added with the prompt.
    pub context: Vec<String>,
}

/// How one command's run reads, whatever its event.
enum Said {
    /// Exit 0; stdout, which may be a JSON answer.
    Fine {
        json: Option<Map<String, Value>>,
        stdout: String,
    },
    /// Exit 2: stderr.
    Block(String),
    /// Any other end: the message for the person.
    Failed(String),
    /// The run it served was aborted.
    Aborted,
}

impl Hooks {
    pub(crate) fn new(groups: Vec<settings::Group>, ctx: RunContext) -> Self {
        Hooks {
            groups,
            ctx,
            session: Mutex::new(SessionFacts {
                permission_mode: "default",
                ..SessionFacts::default()
            }),
            notices: Mutex::new(None),
        }
    }

    /// The hooks of config's `hooks` (by file), with a warning for each part left out.
    pub fn from_config(
        by_file: &std::collections::BTreeMap<String, Value>,
        ctx: RunContext,
    ) -> (Hooks, Vec<String>) {
        let mut groups = Vec::new();
        let mut warnings = Vec::new();
        for (file, value) in by_file {
            let (mut g, mut w) = settings::parse(value, file);
            groups.append(&mut g);
            warnings.append(&mut w);
        }
        (Hooks::new(groups, ctx), warnings)
    }

    /// No hooks at all: nothing needs to run.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Whether any hook listens to `event`.
    pub fn has(&self, event: Event) -> bool {
        self.groups.iter().any(|g| g.event == event)
    }

    /// The session the hooks' input names (a new, resumed or forked one).
    pub fn set_session(&self, id: &str, transcript: Option<PathBuf>) {
        let mut s = lock(&self.session);
        s.session_id = id.to_string();
        s.transcript_path = transcript;
    }

    /// The approval mode, under Claude Code's names.
    pub fn set_permission_mode(&self, mode: crate::approval::ApprovalMode) {
        lock(&self.session).permission_mode = match mode {
            crate::approval::ApprovalMode::Auto => "bypassPermissions",
            crate::approval::ApprovalMode::Ask => "default",
            crate::approval::ApprovalMode::ReadOnly => "plan",
        };
    }

    /// Where errors the person should see are sent.
    pub fn set_notices(&self, tx: mpsc::UnboundedSender<String>) {
        *lock(&self.notices) = Some(tx);
    }

    pub(crate) fn notice(&self, text: String) {
        if let Some(tx) = lock(&self.notices).as_ref() {
            let _ = tx.send(text);
        }
    }

    /// The commands `event` runs for a subject known by `names` (each command once).
    fn commands_for(&self, event: Event, names: &[&str]) -> Vec<&HookCommand> {
        let mut seen = HashSet::new();
        self.groups
            .iter()
            .filter(|g| g.event == event && (names.is_empty() || g.matcher.accepts(names)))
            .flat_map(|g| g.commands.iter())
            .filter(|c| seen.insert(c.command.as_str()))
            .collect()
    }

    /// The JSON on a hook's stdin: the session's facts, the event's name and `fields`.
    fn input(&self, event: Event, fields: Value) -> Vec<u8> {
        let s = lock(&self.session).clone();
        let mut o = Map::new();
        o.insert("session_id".into(), s.session_id.into());
        o.insert(
            "transcript_path".into(),
            s.transcript_path
                .map_or(Value::Null, |p| p.display().to_string().into()),
        );
        o.insert("cwd".into(), self.ctx.cwd.display().to_string().into());
        o.insert("hook_event_name".into(), event.name().into());
        o.insert("permission_mode".into(), s.permission_mode.into());
        if let Value::Object(f) = fields {
            o.extend(f);
        }
        serde_json::to_vec(&Value::Object(o)).unwrap_or_default()
    }

    /// Run the commands of `event` for `names` at once, each with the same input; `fields`
    /// is built only when some command runs.
    async fn fire(
        &self,
        event: Event,
        names: &[&str],
        fields: impl FnOnce() -> Value,
        signal: &AbortSignal,
    ) -> Vec<(HookCommand, Ran)> {
        let commands = self.commands_for(event, names);
        if commands.is_empty() {
            return Vec::new();
        }
        let input = self.input(event, fields());
        let runs = commands
            .iter()
            .map(|c| run::run(c, &input, &self.ctx, signal));
        let done = futures::future::join_all(runs).await;
        commands.into_iter().cloned().zip(done).collect()
    }

    /// What one run said; a `systemMessage` goes to the person at once.
    fn said(&self, event: Event, hook: &HookCommand, ran: Ran) -> Said {
        let failed = |why: String| {
            Said::Failed(format!(
                "{} hook `{}` ({}) {why}",
                event.name(),
                short(&hook.command),
                hook.source
            ))
        };
        match ran.ended {
            Ended::Exit(0) => {
                let json = serde_json::from_str::<Value>(ran.stdout.trim())
                    .ok()
                    .and_then(|v| match v {
                        Value::Object(o) => Some(o),
                        _ => None,
                    });
                if let Some(msg) = json
                    .as_ref()
                    .and_then(|j| j.get("systemMessage"))
                    .and_then(Value::as_str)
                {
                    self.notice(msg.to_string());
                }
                Said::Fine {
                    json,
                    stdout: ran.stdout,
                }
            }
            Ended::Exit(2) => Said::Block(ran.stderr.trim().to_string()),
            Ended::Exit(code) => failed(format!(
                "failed with exit code {code}{}",
                first_line(&ran.stderr)
            )),
            Ended::Crashed => failed(format!("crashed{}", first_line(&ran.stderr))),
            Ended::TimedOut(t) => failed(format!(
                "took longer than {} s and was stopped",
                t.as_secs_f64()
            )),
            Ended::NotStarted(e) => failed(format!("could not start: {e}")),
            Ended::Aborted => Said::Aborted,
        }
    }

    /// Run the `PreToolUse` hooks for a call of `tool` with `args`.
    pub async fn pre_tool_use(
        &self,
        tool: &str,
        call_id: &str,
        args: &Value,
        signal: &AbortSignal,
    ) -> PreToolVerdict {
        let claude = claude_tool_name(tool);
        let fields = || {
            json!({
                "tool_name": claude,
                "tool_input": claude_input(tool, args, &self.ctx.cwd),
                "tool_use_id": call_id,
            })
        };
        let mut v = PreToolVerdict::default();
        let mut blocks = Vec::new();
        for (hook, ran) in self
            .fire(Event::PreToolUse, &[claude, tool], fields, signal)
            .await
        {
            match self.said(Event::PreToolUse, &hook, ran) {
                Said::Fine { json: Some(j), .. } => {
                    read_stop(&j, &mut v.stop);
                    let specific = j.get("hookSpecificOutput");
                    let field = |k: &str| {
                        specific
                            .and_then(|s| s.get(k))
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    };
                    let reason = field("permissionDecisionReason")
                        .or_else(|| j.get("reason").and_then(Value::as_str).map(str::to_string));
                    let decision = field("permissionDecision").or_else(|| {
                        // The older spelling: `decision: approve | block`.
                        match j.get("decision").and_then(Value::as_str) {
                            Some("approve") => Some("allow".into()),
                            Some("block") => Some("deny".into()),
                            _ => None,
                        }
                    });
                    match decision.as_deref() {
                        Some("deny") => blocks.push(reason.unwrap_or_else(|| {
                            format!("a PreToolUse hook ({}) refused it", hook.source)
                        })),
                        Some("ask") => v.permission = Some(Permission::Ask),
                        Some("allow") if v.permission.is_none() => {
                            v.permission = Some(Permission::Allow);
                        }
                        _ => {}
                    }
                    if let Some(updated) = specific.and_then(|s| s.get("updatedInput"))
                        && updated.is_object()
                    {
                        v.updated_input = Some(pi_input(tool, args, updated, &self.ctx.cwd));
                    }
                    if let Some(c) = field("additionalContext") {
                        v.context.push(c);
                    }
                }
                Said::Fine { json: None, .. } => {}
                Said::Block(stderr) => blocks.push(if stderr.is_empty() {
                    format!("a PreToolUse hook ({}) refused it", hook.source)
                } else {
                    stderr
                }),
                Said::Failed(msg) if hook.fail_closed => {
                    self.notice(msg.clone());
                    blocks.push(format!(
                        "{msg}; it is set to fail closed, so the call was not run"
                    ));
                }
                Said::Failed(msg) => self.notice(msg),
                Said::Aborted => blocks.push("the run was stopped while a hook checked it".into()),
            }
        }
        if !blocks.is_empty() {
            v.block = Some(format!("Not run: {}", blocks.join("\n")));
        }
        v
    }

    /// Run the `PostToolUse` hooks for a finished call (`response`: what the tool returned,
    /// as [`tool_response`] gives it, built only when a hook runs).
    pub async fn post_tool_use(
        &self,
        tool: &str,
        call_id: &str,
        args: &Value,
        response: impl FnOnce() -> Value,
        signal: &AbortSignal,
    ) -> PostToolVerdict {
        let claude = claude_tool_name(tool);
        let fields = || {
            json!({
                "tool_name": claude,
                "tool_input": claude_input(tool, args, &self.ctx.cwd),
                "tool_response": response(),
                "tool_use_id": call_id,
            })
        };
        let mut v = PostToolVerdict::default();
        for (hook, ran) in self
            .fire(Event::PostToolUse, &[claude, tool], fields, signal)
            .await
        {
            match self.said(Event::PostToolUse, &hook, ran) {
                Said::Fine { json: Some(j), .. } => {
                    read_stop(&j, &mut v.stop);
                    if j.get("decision").and_then(Value::as_str) == Some("block")
                        && let Some(r) = j.get("reason").and_then(Value::as_str)
                    {
                        v.feedback.push(r.to_string());
                    }
                    if let Some(c) = j
                        .get("hookSpecificOutput")
                        .and_then(|s| s.get("additionalContext"))
                        .and_then(Value::as_str)
                    {
                        v.feedback.push(c.to_string());
                    }
                }
                Said::Block(stderr) if !stderr.is_empty() => v.feedback.push(stderr),
                Said::Failed(msg) => self.notice(msg),
                _ => {}
            }
        }
        v
    }

    /// Run the `UserPromptSubmit` hooks for a prompt about to be sent.
    pub async fn user_prompt_submit(&self, prompt: &str, signal: &AbortSignal) -> PromptVerdict {
        let mut v = PromptVerdict::default();
        let fields = || json!({ "prompt": prompt });
        for (hook, ran) in self
            .fire(Event::UserPromptSubmit, &[], fields, signal)
            .await
        {
            match self.said(Event::UserPromptSubmit, &hook, ran) {
                Said::Fine { json: Some(j), .. } => {
                    let mut stop = None;
                    read_stop(&j, &mut stop);
                    if j.get("decision").and_then(Value::as_str) == Some("block") {
                        let why = j.get("reason").and_then(Value::as_str).unwrap_or("");
                        v.block = Some(why.to_string());
                    } else if let Some(s) = stop {
                        v.block = Some(s);
                    }
                    if let Some(c) = j
                        .get("hookSpecificOutput")
                        .and_then(|s| s.get("additionalContext"))
                        .and_then(Value::as_str)
                    {
                        v.context.push(c.to_string());
                    }
                }
                Said::Fine { json: None, stdout } if !stdout.trim().is_empty() => {
                    v.context.push(stdout.trim().to_string());
                }
                Said::Block(stderr) => v.block = Some(stderr),
                Said::Failed(msg) => self.notice(msg),
                _ => {}
            }
        }
        if let Some(b) = v.block.as_mut()
            && b.trim().is_empty()
        {
            *b = "a UserPromptSubmit hook refused this prompt".into();
        }
        v
    }

    /// Run the `Stop` hooks (or `SubagentStop`) as a run ends; `Some(reason)` when one says
    /// the agent must go on, with what to do.
    pub async fn stop(&self, event: Event, active: bool, signal: &AbortSignal) -> Option<String> {
        let fields = || json!({ "stop_hook_active": active });
        let mut go_on = Vec::new();
        for (hook, ran) in self.fire(event, &[], fields, signal).await {
            match self.said(event, &hook, ran) {
                Said::Fine { json: Some(j), .. } => {
                    let stops = j.get("continue").and_then(Value::as_bool) == Some(false);
                    if !stops
                        && j.get("decision").and_then(Value::as_str) == Some("block")
                        && let Some(r) = j.get("reason").and_then(Value::as_str)
                    {
                        go_on.push(r.to_string());
                    }
                }
                Said::Block(stderr) if !stderr.is_empty() => go_on.push(stderr),
                Said::Failed(msg) => self.notice(msg),
                _ => {}
            }
        }
        (!go_on.is_empty()).then(|| go_on.join("\n"))
    }

    /// Run the `SessionStart` hooks; the context they add for the model.
    pub async fn session_start(&self, source: &str) -> Vec<String> {
        let signal = AbortSignal::new();
        let mut context = Vec::new();
        let fields = || json!({ "source": source });
        for (hook, ran) in self
            .fire(Event::SessionStart, &[source], fields, &signal)
            .await
        {
            match self.said(Event::SessionStart, &hook, ran) {
                Said::Fine { json: Some(j), .. } => {
                    if let Some(c) = j
                        .get("hookSpecificOutput")
                        .and_then(|s| s.get("additionalContext"))
                        .and_then(Value::as_str)
                    {
                        context.push(c.to_string());
                    }
                }
                Said::Fine { json: None, stdout } if !stdout.trim().is_empty() => {
                    context.push(stdout.trim().to_string());
                }
                Said::Block(e) | Said::Failed(e) if !e.is_empty() => self.notice(e),
                _ => {}
            }
        }
        context
    }

    /// Run the hooks of an event that only informs (`SessionEnd`, `PreCompact`,
    /// `Notification`): `subject` is what their matcher sees, `fields` their input.
    pub async fn inform(&self, event: Event, subject: &str, fields: Value) {
        let signal = AbortSignal::new();
        let names: &[&str] = if subject.is_empty() { &[] } else { &[subject] };
        for (hook, ran) in self.fire(event, names, || fields, &signal).await {
            match self.said(event, &hook, ran) {
                Said::Failed(msg) => self.notice(msg),
                Said::Block(e) if !e.is_empty() => self.notice(e),
                _ => {}
            }
        }
    }
}

/// `continue: false` stops the session's work, with `stopReason` for the person.
fn read_stop(j: &Map<String, Value>, stop: &mut Option<String>) {
    if j.get("continue").and_then(Value::as_bool) == Some(false) {
        let why = j
            .get("stopReason")
            .and_then(Value::as_str)
            .unwrap_or("a hook asked to stop");
        *stop = Some(why.to_string());
    }
}

fn short(command: &str) -> String {
    let line = command.lines().next().unwrap_or("");
    if line.chars().count() > 60 {
        format!("{}…", line.chars().take(60).collect::<String>())
    } else {
        line.to_string()
    }
}

fn first_line(stderr: &str) -> String {
    stderr
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .map(|l| format!(": {l}"))
        .unwrap_or_default()
}

/// A call's arguments as Claude Code's hooks expect them: pi's own names, plus Claude's where
/// they differ (`file_path`, absolute; `old_string`/`new_string`).
pub fn claude_input(tool: &str, args: &Value, cwd: &std::path::Path) -> Value {
    let mut out = args.clone();
    let Some(o) = out.as_object_mut() else {
        return out;
    };
    if matches!(tool, "read" | "write" | "edit")
        && let Some(p) = o.get("path").and_then(Value::as_str)
    {
        let abs = cwd.join(p).display().to_string();
        o.insert("file_path".into(), abs.into());
    }
    if tool == "edit" {
        for (ours, theirs) in [("oldText", "old_string"), ("newText", "new_string")] {
            if let Some(v) = o.get(ours).cloned() {
                o.insert(theirs.into(), v);
            }
        }
    }
    out
}

/// A hook's `updatedInput` over the call's arguments, in pi's names: the keys it gives replace
/// the call's; Claude's spellings (`file_path`, `old_string`, `new_string`) set pi's field
/// unless the hook also changed that field itself, and are not passed on.
fn pi_input(tool: &str, original: &Value, updated: &Value, cwd: &std::path::Path) -> Value {
    let (Some(orig), Some(upd)) = (original.as_object(), updated.as_object()) else {
        return updated.clone();
    };
    let mut out = orig.clone();
    let aliases: &[(&str, &str)] = match tool {
        "read" | "write" => &[("path", "file_path")],
        "edit" => &[
            ("path", "file_path"),
            ("oldText", "old_string"),
            ("newText", "new_string"),
        ],
        _ => &[],
    };
    for (k, v) in upd {
        if aliases.iter().any(|(_, theirs)| theirs == k) {
            continue;
        }
        out.insert(k.clone(), v.clone());
    }
    for (ours, theirs) in aliases {
        let Some(v) = upd.get(*theirs) else { continue };
        let ours_changed = upd.get(*ours).is_some_and(|o| Some(o) != orig.get(*ours));
        // The alias pi itself sent, returned as it was, changes nothing.
        let alias_as_sent = claude_input(tool, original, cwd)
            .get(*theirs)
            .is_some_and(|sent| sent == v);
        if !ours_changed && !alias_as_sent {
            out.insert((*ours).to_string(), v.clone());
        }
    }
    Value::Object(out)
}

/// A finished call's result as `PostToolUse` hooks read it.
pub fn tool_response(output: &crate::agent::protocol::tool::ToolOutput, is_error: bool) -> Value {
    let text: Vec<&str> = output
        .content
        .iter()
        .filter_map(crate::agent::protocol::types::ContentBlock::as_text)
        .collect();
    json!({
        "output": text.join("\n"),
        "success": !is_error,
        "isError": is_error,
        "details": output.details,
    })
}

#[cfg(test)]
mod tests;
