//! The facade's side of the loop's hooks: the queues and live settings it answers from, the
//! one-shot tool choices it keeps between runs, then the host's own hooks.

use super::*;

/// What the facade keeps of tool choice between runs.
#[derive(Default)]
pub(super) struct ToolState {
    pub(super) soft: SoftState,
    pub(super) choices: OneShotChoices,
}

/// One-shot hard tool choices: queued by the host, claimed by a turn, deferred by a gate stop.
#[derive(Default)]
pub(super) struct OneShotChoices {
    pub(super) queued: Option<ToolChoice>,
    /// Handed to the turn being built; served once that turn's model call is made.
    pub(super) claimed: Option<ToolChoice>,
    /// Claimed by a turn that a gate stopped before the call: offered first next time.
    pub(super) deferred: Option<ToolChoice>,
}

pub(super) fn choice_available(choice: &ToolChoice, tools: &ToolSet) -> bool {
    match choice {
        ToolChoice::Tool(name) => tools.contains(name),
        _ => true,
    }
}

/// The facade's side of the loop: its queues, its live settings, then the host's hooks.
pub(super) struct FacadeHooks {
    pub(super) agent: Agent,
    pub(super) user: Arc<dyn LoopHooks>,
}

#[async_trait]
impl LoopHooks for FacadeHooks {
    async fn sync_before_model_call(&self, signal: &AbortSignal) -> ContextRefresh {
        // A new turn means the previous turn's claimed choice was sent.
        let hooks = {
            let mut shared = self.agent.shared();
            shared.tool_state.choices.claimed = None;
            shared.host_hooks.model_call.snapshot()
        };
        host_hooks::run_all(hooks, signal).await;
        let user = self.user.sync_before_model_call(signal).await;
        let s = self.agent.settings();
        let (reasoning, disable) = s.thinking.to_request();
        ContextRefresh {
            system_prompt: Some(user.system_prompt.unwrap_or(s.system_prompt)),
            tools: Some(user.tools.unwrap_or(s.tools)),
            model: Some(user.model.unwrap_or(s.model)),
            reasoning: Some(user.reasoning.unwrap_or(reasoning)),
            disable_reasoning: Some(user.disable_reasoning.unwrap_or(disable)),
        }
    }

    fn tool_directive(&self) -> Option<ToolDirective> {
        let s = self.agent.settings();
        {
            let mut shared = self.agent.shared();
            let choices = &mut shared.tool_state.choices;
            if let Some(c) = choices.deferred.take()
                && choice_available(&c, &s.tools)
            {
                choices.claimed = Some(c.clone());
                return Some(ToolDirective::Hard(c));
            }
        }
        if let Some(d) = self.user.tool_directive() {
            return Some(d);
        }
        {
            let mut shared = self.agent.shared();
            let choices = &mut shared.tool_state.choices;
            if let Some(c) = choices.queued.take()
                && choice_available(&c, &s.tools)
            {
                choices.claimed = Some(c.clone());
                return Some(ToolDirective::Hard(c));
            }
        }
        match s.tool_choice {
            Some(ToolChoice::Tool(name)) if !s.tools.contains(&name) => None,
            Some(c) => Some(ToolDirective::Hard(c)),
            None => None,
        }
    }

    fn on_tool_choice_rejected(&self) -> Result<(), String> {
        {
            let mut shared = self.agent.shared();
            let choices = &mut shared.tool_state.choices;
            if let Some(c) = choices.claimed.take() {
                choices.deferred = Some(c);
            }
        }
        self.user.on_tool_choice_rejected()
    }

    async fn transform_context(
        &self,
        messages: &[AgentMessage],
        signal: &AbortSignal,
    ) -> Option<Vec<AgentMessage>> {
        self.user.transform_context(messages, signal).await
    }

    fn convert_to_llm(&self, messages: &[AgentMessage]) -> Option<Vec<Message>> {
        self.user.convert_to_llm(messages)
    }

    fn transform_provider_context(&self, context: &mut LlmContext, model: &Model) {
        self.user.transform_provider_context(context, model)
    }

    fn has_model_gate(&self) -> bool {
        self.user.has_model_gate()
    }

    async fn before_model_call(
        &self,
        context: &LlmContext,
        signal: &AbortSignal,
    ) -> Result<GateDecision, String> {
        self.user.before_model_call(context, signal).await
    }

    fn on_assistant_event(&self, partial: &AssistantMessage, event: &StreamEvent) {
        self.user.on_assistant_event(partial, event)
    }

    async fn transform_assistant_message(
        &self,
        message: &mut AssistantMessage,
        signal: &AbortSignal,
    ) -> Result<(), String> {
        self.user.transform_assistant_message(message, signal).await
    }

    fn resolve_fallback_tool(&self, name: &str) -> Option<Arc<dyn AgentTool>> {
        self.user.resolve_fallback_tool(name)
    }

    async fn before_tool_call(
        &self,
        assistant: &AssistantMessage,
        call: &ToolCall,
        args: &mut Value,
        signal: &AbortSignal,
    ) -> Result<BeforeToolCall, String> {
        self.user
            .before_tool_call(assistant, call, args, signal)
            .await
    }

    fn transform_tool_arguments(&self, args: Value, tool_name: &str) -> Value {
        self.user.transform_tool_arguments(args, tool_name)
    }

    async fn after_tool_call(
        &self,
        info: AfterToolCallInfo<'_>,
        signal: &AbortSignal,
    ) -> Result<Option<ResultOverride>, String> {
        self.user.after_tool_call(info, signal).await
    }

    async fn on_turn_end(&self, messages: &[AgentMessage], info: TurnEndInfo<'_>) {
        self.user.on_turn_end(messages, info).await
    }

    async fn on_before_yield(&self) {
        self.user.on_before_yield().await
    }

    async fn steering_messages(&self, signal: &AbortSignal) -> Vec<AgentMessage> {
        if self
            .agent
            .inner
            .suppress_steering_once
            .swap(false, Ordering::SeqCst)
        {
            return Vec::new();
        }
        self.agent.run_dequeue_hooks(signal).await;
        let mut out = self.user.steering_messages(signal).await;
        out.extend(self.agent.take_queue(QueueSide::Steering, signal));
        out
    }

    fn peek_steering(&self) -> SteeringPeek {
        match self.agent.peek_steering() {
            SteeringPeek::Empty => match self.user.peek_steering() {
                SteeringPeek::Unsupported => SteeringPeek::Empty,
                other => other,
            },
            queued => queued,
        }
    }

    fn steering_notify(&self) -> Option<Arc<Notify>> {
        Some(self.agent.inner.steer_notify.clone())
    }

    async fn follow_up_messages(&self, signal: &AbortSignal) -> Vec<AgentMessage> {
        self.agent.run_dequeue_hooks(signal).await;
        let mut out = self.user.follow_up_messages(signal).await;
        out.extend(self.agent.take_queue(QueueSide::FollowUp, signal));
        out
    }

    fn aside_messages(&self) -> Vec<AsideEntry> {
        self.user.aside_messages()
    }

    fn on_run_end(&self, summary: &RunSummary, coverage: &RunCoverage) {
        self.user.on_run_end(summary, coverage)
    }
}
