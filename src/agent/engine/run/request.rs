//! The request: the provider context built from the transcript (with the incremental
//! conversion cache and the prompt-cache log) and the per-call stream options.

use super::*;

impl Run {
    /// transform_context → convert_to_llm → provider normalisation → tools.
    pub(super) async fn provider_context(&mut self) -> LlmContext {
        let transformed = self
            .hooks
            .transform_context(&self.context, &self.signal)
            .await;
        let shared = |v: Vec<Message>| v.into_iter().map(Arc::new).collect::<Vec<_>>();
        let custom = match &transformed {
            Some(msgs) => Some(
                self.hooks
                    .convert_to_llm(msgs)
                    .map(shared)
                    .unwrap_or_else(|| default_convert_to_llm(msgs)),
            ),
            None => self.hooks.convert_to_llm(&self.context).map(shared),
        };
        let messages: Arc<Vec<Arc<Message>>> = match custom {
            Some(msgs) => {
                self.llm_cache = Arc::new(Vec::new());
                self.converted = 0;
                Arc::new(msgs)
            }
            None => {
                if self.converted > self.context.len() {
                    self.llm_cache = Arc::new(Vec::new());
                    self.converted = 0;
                }
                let fresh = default_convert_to_llm(&self.context[self.converted..]);
                // The previous request is gone by now, so this appends in place.
                Arc::make_mut(&mut self.llm_cache).extend(fresh);
                self.converted = self.context.len();
                self.llm_cache.clone()
            }
        };
        let messages = normalize_messages_for_provider(messages, &self.model);
        let options = ToolNormalizeOptions {
            inject_intent: self.cfg.intent_tracing,
            prune_descriptions: self.cfg.prune_tool_descriptions,
        };
        let mut ctx = match &self.cfg.append_only {
            Some(ao) => {
                let mut ao = lock(ao);
                // A model changed between calls (or runs) starts the log over.
                ao.note_model(&self.model.provider, &self.model.api, &self.model.id);
                ao.sync_and_build(
                    &self.system_prompt,
                    &self.tools,
                    options,
                    messages.as_ref().clone(),
                )
            }
            None => {
                let key = Arc::as_ptr(&self.tools) as usize;
                let specs = match &self.tool_specs {
                    Some((k, specs)) if *k == key => specs.clone(),
                    _ => {
                        let specs = normalize_tools(&self.tools, options);
                        self.tool_specs = Some((key, specs.clone()));
                        specs
                    }
                };
                LlmContext {
                    system_prompt: self.system_prompt.clone(),
                    messages,
                    tools: specs,
                }
            }
        };
        self.hooks.transform_provider_context(&mut ctx, &self.model);
        self.collect(|c| c.note_tools_available(ctx.tools.iter().map(|t| t.name.as_str())));
        ctx
    }

    pub(super) fn request_options(&self) -> StreamOptions {
        StreamOptions {
            reasoning: self.reasoning,
            disable_reasoning: self.disable_reasoning,
            tool_choice: self
                .host_choice
                .clone()
                .or_else(|| self.soft.forced.clone())
                .or_else(|| self.cfg.tool_choice.clone()),
            temperature: self
                .cfg
                .temperature
                .map(|t| t + harmony::TEMPERATURE_STEP * f64::from(self.harmony_retries)),
            max_tokens: self.cfg.max_tokens,
            session_id: self.cfg.session_id.clone(),
        }
    }
}
