//! Plan mode: the agent looks before it acts. While it is on, the approval gate refuses every
//! call that could change files or run commands (allow rules still let theirs through, as in
//! read-only), and the system prompt asks for a plan instead of changes. Turning it off puts
//! both back; the plan stays in the conversation as context for acting on it.

use super::{Host, HostEvent};

/// What the system prompt says while planning.
pub const PLAN_NOTE: &str = "# Plan mode\n\nThe person has asked for a plan before any \
change. Explore with the reading tools (read, grep, find, ls) as much as you need, but do not \
change files or run commands: those calls are refused until the plan is accepted. Then answer \
with the plan itself: the goal in a sentence, the files to change and how, the steps in order, \
how to check the result, and the risks or open questions. Keep it short enough to review.";

impl Host {
    /// Plan mode on or off.
    pub(super) fn set_plan_mode(&mut self, on: bool) {
        self.approval.set_planning(on);
        self.agent.update_settings(|s| {
            s.system_prompt.retain(|p| p != PLAN_NOTE);
            if on {
                s.system_prompt.push(PLAN_NOTE.to_string());
            }
        });
        self.tell(HostEvent::PlanMode(on));
    }
}
