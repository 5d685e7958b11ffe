//! The tool events in the loop: `PreToolUse` hooks run before the approval gate (they may
//! refuse a call, change its arguments, or tell the gate to allow or ask), `PostToolUse` hooks
//! after the call (what they say reaches the model with the result). A hook's
//! `continue: false` stops the run before the next model call. `Stop` hooks run where the run
//! would end: one that says the work is not done sends the agent back to it, in the same run.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;

use super::{Event, Hooks};
use crate::agent::protocol::abort::AbortSignal;
use crate::agent::protocol::hooks::{
    AfterToolCallInfo, BeforeToolCall, GateDecision, LoopHooks, ResultOverride,
};
use crate::agent::protocol::stream::LlmContext;
use crate::agent::protocol::types::{
    AgentMessage, AssistantMessage, ContentBlock, Message, ToolCall, UserMessage,
};
use crate::approval::gate::Gate;
use crate::sync::lock;

/// The approval gate with the person's tool hooks in front of and behind it.
pub struct HookedGate {
    gate: Arc<Gate>,
    hooks: Arc<Hooks>,
    /// A hook's `continue: false`: the reason, until the next model call stops the run.
    stop: Mutex<Option<String>>,
    /// `additionalContext` of `PreToolUse` hooks, by call id, added to the result.
    context: Mutex<HashMap<String, Vec<String>>>,
    /// How many times in a row `Stop` hooks have sent the agent back to work.
    stop_rounds: AtomicU32,
}

/// How many times in a row `Stop` hooks may send the agent back to work before pi stops
/// listening to them (a hook that ignores `stop_hook_active` would loop for ever).
const STOP_ROUNDS: u32 = 8;

impl HookedGate {
    pub fn new(gate: Arc<Gate>, hooks: Arc<Hooks>) -> Self {
        HookedGate {
            gate,
            hooks,
            stop: Mutex::new(None),
            context: Mutex::new(HashMap::new()),
            stop_rounds: AtomicU32::new(0),
        }
    }
}

#[async_trait]
impl LoopHooks for HookedGate {
    async fn before_tool_call(
        &self,
        _assistant: &AssistantMessage,
        call: &ToolCall,
        args: &mut Value,
        signal: &AbortSignal,
    ) -> Result<BeforeToolCall, String> {
        if !self.hooks.has(Event::PreToolUse) {
            return Ok(self.gate.decide(&call.name, args, signal).await);
        }
        let v = self
            .hooks
            .pre_tool_use(&call.name, &call.id, args, signal)
            .await;
        if let Some(s) = v.stop {
            *lock(&self.stop) = Some(s);
        }
        if let Some(why) = v.block {
            return Ok(BeforeToolCall::Block(Some(why)));
        }
        if !v.context.is_empty() {
            lock(&self.context).insert(call.id.clone(), v.context);
        }
        let effective = v.updated_input.as_ref().unwrap_or(args);
        let decided = self
            .gate
            .decide_hinted(&call.name, effective, signal, v.permission)
            .await;
        Ok(match (decided, v.updated_input) {
            (BeforeToolCall::Proceed, Some(updated)) => BeforeToolCall::Revise(updated),
            (d, _) => d,
        })
    }

    async fn after_tool_call(
        &self,
        info: AfterToolCallInfo<'_>,
        signal: &AbortSignal,
    ) -> Result<Option<ResultOverride>, String> {
        let mut notes = lock(&self.context)
            .remove(&info.tool_call.id)
            .unwrap_or_default();
        if self.hooks.has(Event::PostToolUse) {
            let (result, is_error) = (info.result, info.is_error);
            let v = self
                .hooks
                .post_tool_use(
                    &info.tool_call.name,
                    &info.tool_call.id,
                    info.args,
                    || super::tool_response(result, is_error),
                    signal,
                )
                .await;
            if let Some(s) = v.stop {
                *lock(&self.stop) = Some(s);
            }
            notes.extend(v.feedback);
        }
        if notes.is_empty() {
            return Ok(None);
        }
        let mut content = info.result.content.clone();
        content.push(ContentBlock::text(format!(
            "\n\n[hook] {}",
            notes.join("\n[hook] ")
        )));
        Ok(Some(ResultOverride {
            content: Some(content),
            ..ResultOverride::default()
        }))
    }

    fn has_model_gate(&self) -> bool {
        true
    }

    async fn before_model_call(
        &self,
        _context: &LlmContext,
        _signal: &AbortSignal,
    ) -> Result<GateDecision, String> {
        Ok(match lock(&self.stop).take() {
            Some(why) => GateDecision::Stop(Some(why)),
            None => GateDecision::Proceed,
        })
    }

    async fn follow_up_messages(&self, signal: &AbortSignal) -> Vec<AgentMessage> {
        if !self.hooks.has(Event::Stop) || signal.is_aborted() {
            return Vec::new();
        }
        let rounds = self.stop_rounds.load(Ordering::SeqCst);
        let Some(reason) = self.hooks.stop(Event::Stop, rounds > 0, signal).await else {
            self.stop_rounds.store(0, Ordering::SeqCst);
            return Vec::new();
        };
        if rounds >= STOP_ROUNDS || signal.is_aborted() {
            self.stop_rounds.store(0, Ordering::SeqCst);
            self.hooks.notice(format!(
                "A Stop hook sent the agent back to work {STOP_ROUNDS} times in a row; pi lets \
                 it stop here. The hook said: {reason}"
            ));
            return Vec::new();
        }
        self.stop_rounds.store(rounds + 1, Ordering::SeqCst);
        let mut m = UserMessage::new(format!(
            "A Stop hook says the work is not finished: {reason}"
        ));
        m.synthetic = true;
        vec![AgentMessage::from(Message::User(m))]
    }
}
