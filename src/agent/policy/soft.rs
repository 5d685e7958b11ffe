//! Soft tool requirements: make the model call one tool first without touching `tool_choice`.
//!
//! Forcing `tool_choice` busts the provider's prompt cache, so a requirement is first stated
//! in a reminder message (once per requirement id). Only when the model ignores it are its
//! calls skipped and the next request forced to the tool, at most [`MAX_SOFT_ESCALATIONS`]
//! times in a row before the run fails rather than loop forever.

use crate::agent::protocol::hooks::SoftToolRequirement;
use crate::agent::protocol::stream::ToolChoice;
use crate::agent::protocol::types::AssistantMessage;

/// Forced turns allowed before the run gives up on a requirement.
pub const MAX_SOFT_ESCALATIONS: u32 = 3;

/// Where a requirement stands across turns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SoftState {
    pub id: Option<String>,
    pub forced: Option<ToolChoice>,
    pub escalations: u32,
}

impl SoftState {
    /// Activate `req`. Returns true when its id is new (its reminder must be injected).
    pub fn activate(&mut self, req: &SoftToolRequirement) -> bool {
        if self.id.as_deref() == Some(req.id.as_str()) {
            return false;
        }
        *self = SoftState {
            id: Some(req.id.clone()),
            forced: None,
            escalations: 0,
        };
        true
    }

    pub fn clear(&mut self) {
        *self = SoftState::default();
    }
}

/// Whether a static tool choice rules out ever calling `tool_name`, which turns the soft gate off.
pub fn hard_choice_blocks(choice: Option<&ToolChoice>, tool_name: &str) -> bool {
    match choice {
        Some(ToolChoice::None) => true,
        Some(ToolChoice::Tool(name)) => name != tool_name,
        _ => false,
    }
}

/// Compliant iff there is at least one call and every call satisfies the requirement.
pub fn is_compliant(req: &SoftToolRequirement, message: &AssistantMessage) -> bool {
    let mut any = false;
    for call in message.tool_calls() {
        any = true;
        let ok = match &req.satisfies {
            Some(f) => f(call),
            None => call.name == req.tool_name,
        };
        if !ok {
            return false;
        }
    }
    any
}

/// The error that ends a run whose requirement was ignored too often.
pub fn escalation_error(tool_name: &str) -> String {
    format!(
        "The model still had not called the required `{tool_name}` tool after {MAX_SOFT_ESCALATIONS} forced turns; \
         stopping instead of forcing it forever."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::types::{ContentBlock, ToolCall, empty_object};
    use std::sync::Arc;

    fn req(
        satisfies: Option<crate::agent::protocol::hooks::ToolCallPredicate>,
    ) -> SoftToolRequirement {
        SoftToolRequirement {
            id: "r1".into(),
            tool_name: "todo".into(),
            satisfies,
            reminder: vec![],
        }
    }

    fn msg(names: &[&str]) -> AssistantMessage {
        let mut m = AssistantMessage::default();
        for (i, n) in names.iter().enumerate() {
            m.content.push(ContentBlock::ToolCall(ToolCall {
                id: format!("c{i}"),
                name: n.to_string(),
                arguments: empty_object(),
                intent: None,
                thought_signature: None,
            }));
        }
        m
    }

    #[test]
    fn compliance_needs_every_call_to_satisfy() {
        let r = req(None);
        assert!(is_compliant(&r, &msg(&["todo"])));
        assert!(!is_compliant(&r, &msg(&["todo", "bash"])));
        assert!(!is_compliant(&r, &msg(&[])));
        let any_read = req(Some(Arc::new(|c: &ToolCall| c.name.starts_with("re"))));
        assert!(is_compliant(&any_read, &msg(&["read", "rename"])));
        assert!(!is_compliant(&any_read, &msg(&["todo"])));
    }

    #[test]
    fn activation_is_once_per_id() {
        let mut s = SoftState::default();
        assert!(s.activate(&req(None)));
        s.escalations = 2;
        assert!(!s.activate(&req(None)));
        assert_eq!(s.escalations, 2);
        let mut other = req(None);
        other.id = "r2".into();
        assert!(s.activate(&other));
        assert_eq!(s.escalations, 0);
    }

    #[test]
    fn blocking_choices() {
        assert!(hard_choice_blocks(Some(&ToolChoice::None), "a"));
        assert!(hard_choice_blocks(Some(&ToolChoice::Tool("b".into())), "a"));
        assert!(!hard_choice_blocks(
            Some(&ToolChoice::Tool("a".into())),
            "a"
        ));
        assert!(!hard_choice_blocks(Some(&ToolChoice::Required), "a"));
        assert!(!hard_choice_blocks(None, "a"));
    }
}
