//! `!command` and `!!command` from the editor: run in the session's folder through the bash
//! tool (its limits, its process group, its spill file), shown to the person, and — for `!` —
//! added to the conversation so the next request carries it.
//!
//! The run is recorded as the Node.js `pi` records it: a `bashExecution` message (`command`,
//! `output`, `exitCode`, `cancelled`, `truncated`, `fullOutputPath`, `excludeFromContext`),
//! which the session loader turns into the text the model sees; the live agent gets the same
//! text at once. While it runs, the host keeps reading commands: an agent abort (Esc) stops it.
//!
//! These are the person's own commands (the RPC client's `bash` too), so they run outside the
//! sandbox (`--sandbox`), which limits what the model does, and outside a PID namespace (so
//! `ps` shows the whole system); they still die with pi and their process group is killed
//! when they return (see [`crate::tools::launch`]).

use std::collections::VecDeque;

use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Host, HostEvent, Op, OpBody};
use crate::agent::protocol::tool::{ProgressSink, ToolCallContext, ToolInvocation};
use crate::agent::protocol::types::{AgentMessage, ContentBlock, CustomMessage, now_ms};

/// What a `!` command did.
#[derive(Clone, Debug, PartialEq)]
pub struct ShellResult {
    pub command: String,
    /// What the tool returned (output, possibly cut, with its note).
    pub output: String,
    pub exit_code: Option<i64>,
    pub cancelled: bool,
    pub failed: bool,
    /// Added to the conversation (`!`), or only shown (`!!`).
    pub included: bool,
    /// Why the command was not run at all (`None`: it ran).
    pub refused: Option<String>,
}

impl ShellResult {
    fn refused(command: String, why: &str) -> Self {
        ShellResult {
            command,
            output: String::new(),
            exit_code: None,
            cancelled: false,
            failed: true,
            included: false,
            refused: Some(why.to_string()),
        }
    }
}

impl Host {
    pub(super) async fn shell(
        &mut self,
        command: String,
        include: bool,
        commands: &mut mpsc::UnboundedReceiver<Op>,
        deferred: &mut VecDeque<Op>,
    ) {
        let Some(tool) = self.shell.clone() else {
            let refused = ShellResult::refused(command, "no shell to run the command in");
            self.tell(HostEvent::ShellDone(Box::new(refused)));
            return;
        };
        if include && self.agent.is_streaming() {
            let refused = ShellResult::refused(
                command,
                "Cannot add a command's output while the agent is working; wait, press Esc, or \
                 use !! to only look at it",
            );
            self.tell(HostEvent::ShellDone(Box::new(refused)));
            return;
        }
        let cancel = CancellationToken::new();
        let id = format!("shell_{}", now_ms());
        let call = ToolInvocation {
            tool_call_id: id.clone(),
            args: json!({ "command": command }),
            cancel: cancel.clone(),
            steering: CancellationToken::new(),
            progress: ProgressSink::discard(),
            context: ToolCallContext {
                batch_id: id.clone().into(),
                index: 0,
                total: 1,
                tool_calls: vec![(id, "bash".to_string())].into(),
            },
        };
        let run = tool.execute(call);
        tokio::pin!(run);
        let mut open = true;
        let result = loop {
            tokio::select! {
                r = &mut run => break r,
                c = commands.recv(), if open => match c {
                    Some(Op { body: OpBody::Abort { .. } | OpBody::AbortShell, .. }) => {
                        cancel.cancel()
                    }
                    // A run going on beside a `!!` command may be waiting for approval.
                    Some(Op { body: OpBody::Approve { request, decision }, .. }) => {
                        self.approval.answer(request, decision);
                    }
                    Some(other) => deferred.push_back(other),
                    None => {
                        open = false;
                        cancel.cancel();
                    }
                },
            }
        };
        let cancelled = cancel.is_cancelled();
        let (output, details, failed) = match result {
            Ok(out) => {
                let text = ContentBlock::joined_text(&out.content).into_owned();
                (text, out.details, out.is_error)
            }
            Err(e) => (e.to_string(), Value::Null, true),
        };
        let exit_code = details.get("exitCode").and_then(Value::as_i64);
        let truncated = details.get("truncation").is_some_and(|t| !t.is_null())
            || details.get("fullOutputPath").is_some();
        let mut fields = Map::new();
        fields.insert("command".into(), json!(command));
        fields.insert("output".into(), json!(output));
        fields.insert("exitCode".into(), json!(exit_code));
        fields.insert("cancelled".into(), json!(cancelled));
        fields.insert("truncated".into(), json!(truncated));
        if let Some(p) = details.get("fullOutputPath") {
            fields.insert("fullOutputPath".into(), p.clone());
        }
        if !include {
            fields.insert("excludeFromContext".into(), json!(true));
        }
        fields.insert("timestamp".into(), json!(now_ms()));
        let message = AgentMessage::from(CustomMessage::new("bashExecution", fields));
        if let Some(r) = &self.recorder {
            let m = message.clone();
            r.with(move |r| {
                r.append_message(&m);
            });
        }
        let mut included = false;
        if include && let Some(for_model) = crate::session::branch_context::convert_custom(message)
        {
            let mut messages = self.agent.messages();
            messages.push(for_model);
            included = self.agent.replace_messages(messages).is_ok();
        }
        self.tell(HostEvent::ShellDone(Box::new(ShellResult {
            command,
            output,
            exit_code,
            cancelled,
            failed,
            included,
            refused: None,
        })));
    }
}
