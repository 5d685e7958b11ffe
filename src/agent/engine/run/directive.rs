//! The host's tool directive for a call: a hard tool choice, or a soft requirement with its
//! reminder and escalation.

use super::*;

impl Run {
    pub(super) fn resolve_directive(&mut self, inputs: &mut Vec<AgentMessage>) {
        self.directive.resolved = true;
        self.directive.host_choice = None;
        self.directive.soft_req = None;
        if self.aborted() {
            return;
        }
        match self.hooks.tool_directive() {
            Some(ToolDirective::Hard(choice)) => {
                self.directive.host_choice = Some(choice);
                self.directive.soft.clear();
            }
            Some(ToolDirective::Soft(req)) if self.call.tools.contains(&req.tool_name) => {
                if self.directive.soft.activate(&req) {
                    for m in &req.reminder {
                        self.push(m.clone());
                        self.transcript.unemitted.push(m.clone());
                        inputs.push(m.clone());
                    }
                }
                self.directive.soft_req = Some(req);
            }
            _ => self.directive.soft.clear(),
        }
    }

    /// The required tool's name when the reply breaks an active soft requirement.
    pub(super) fn soft_violation(
        &mut self,
        assistant: &AssistantMessage,
    ) -> Result<Option<String>, LoopError> {
        let Some(req) = &self.directive.soft_req else {
            return Ok(None);
        };
        if hard_choice_blocks(self.cfg.tool_choice.as_ref(), &req.tool_name)
            || is_compliant(req, assistant)
        {
            return Ok(None);
        }
        if self.directive.soft.escalations >= crate::agent::policy::soft::MAX_SOFT_ESCALATIONS {
            return Err(LoopError::new(escalation_error(&req.tool_name)));
        }
        self.directive.soft.forced = Some(ToolChoice::Tool(req.tool_name.clone()));
        self.directive.soft.escalations += 1;
        Ok(Some(req.tool_name.clone()))
    }
}
