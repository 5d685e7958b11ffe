//! The request: the provider context built from the transcript (with the incremental
//! conversion cache and the prompt-cache log) and the per-call stream options.

use super::*;

impl Run {
    /// transform_context → convert_to_llm → provider normalisation → tools.
    pub(super) async fn provider_context(&mut self) -> LlmContext {
        let transformed = self
            .hooks
            .transform_context(&self.transcript.context, &self.signal)
            .await;
        let shared = |v: Vec<Message>| v.into_iter().map(Arc::new).collect::<Vec<_>>();
        let custom = match &transformed {
            Some(msgs) => Some(
                self.hooks
                    .convert_to_llm(msgs)
                    .map(shared)
                    .unwrap_or_else(|| default_convert_to_llm(msgs)),
            ),
            None => self
                .hooks
                .convert_to_llm(&self.transcript.context)
                .map(shared),
        };
        let messages: Arc<Vec<Arc<Message>>> = match custom {
            Some(msgs) => {
                self.request.llm_cache = Arc::new(Vec::new());
                self.request.converted = 0;
                Arc::new(msgs)
            }
            None => {
                if self.request.converted > self.transcript.context.len() {
                    self.request.llm_cache = Arc::new(Vec::new());
                    self.request.converted = 0;
                }
                let fresh =
                    default_convert_to_llm(&self.transcript.context[self.request.converted..]);
                // The previous request is gone by now, so this appends in place.
                Arc::make_mut(&mut self.request.llm_cache).extend(fresh);
                self.request.converted = self.transcript.context.len();
                self.request.llm_cache.clone()
            }
        };
        let messages = normalize_messages_for_provider(messages, &self.call.model);
        let options = ToolNormalizeOptions {
            inject_intent: self.cfg.intent_tracing,
            prune_descriptions: self.cfg.prune_tool_descriptions,
        };
        let mut ctx = match &self.cfg.append_only {
            Some(ao) => {
                let mut ao = lock(ao);
                // A model changed between calls (or runs) starts the log over.
                ao.note_model(
                    &self.call.model.provider,
                    &self.call.model.api,
                    &self.call.model.id,
                );
                ao.sync_and_build(
                    &self.call.system_prompt,
                    &self.call.tools,
                    options,
                    messages.as_ref().clone(),
                )
            }
            None => {
                let key = Arc::as_ptr(&self.call.tools) as usize;
                let specs = match &self.request.tool_specs {
                    Some((k, specs)) if *k == key => specs.clone(),
                    _ => {
                        let specs = normalize_tools(&self.call.tools, options);
                        self.request.tool_specs = Some((key, specs.clone()));
                        specs
                    }
                };
                LlmContext {
                    system_prompt: self.call.system_prompt.clone(),
                    messages,
                    tools: specs,
                }
            }
        };
        self.hooks
            .transform_provider_context(&mut ctx, &self.call.model);
        self.collect(|c| c.note_tools_available(ctx.tools.iter().map(|t| t.name.as_str())));
        ctx
    }

    pub(super) fn request_options(&self) -> StreamOptions {
        StreamOptions {
            reasoning: self.call.reasoning,
            disable_reasoning: self.call.disable_reasoning,
            tool_choice: self
                .directive
                .host_choice
                .clone()
                .or_else(|| self.directive.soft.forced.clone())
                .or_else(|| self.cfg.tool_choice.clone()),
            temperature: self
                .cfg
                .temperature
                .map(|t| t + harmony::TEMPERATURE_STEP * f64::from(self.reply.harmony_retries)),
            max_tokens: self.cfg.max_tokens,
            session_id: self.cfg.session_id.clone(),
        }
    }
}
