//! Plan mode in the terminal: `/plan` and Alt+M turn it on and off, and a plan the model
//! gives is put to the person to accept, edit or reject.

use super::*;
use crate::tui::popup::plan::{Outcome, PlanChoice};

/// What accepting a plan sends the model.
const ACCEPTED: &str = "The plan above is accepted. Carry it out now.";

impl App {
    /// `/plan [on|off]`: no argument switches.
    pub(super) fn plan_command(&mut self, args: &str) {
        let on = match args.trim() {
            "on" => true,
            "off" => false,
            "" => !self.planning,
            other => {
                self.notice(format!("/plan takes on or off, not `{}`", sanitize(other)));
                return;
            }
        };
        self.set_planning(on);
        self.notice(if on {
            "Plan mode: only reading tools run, and the model answers with a plan to accept"
        } else {
            "Plan mode off: the agent acts"
        });
    }

    fn set_planning(&mut self, on: bool) {
        self.planning = on;
        self.port.set_plan_mode(on);
    }

    /// A run ended in plan mode with an answer: put the plan to the person.
    pub(super) fn offer_plan(&mut self) {
        if !self.planning {
            return;
        }
        if let Some(text) = self.last_answer.clone().filter(|t| !t.trim().is_empty()) {
            self.popups.push(Popup::Plan(PlanChoice { text }));
        }
    }

    /// What the plan question decided.
    pub(super) fn plan_done(&mut self, outcome: Outcome, plan: String) {
        match outcome {
            Outcome::Nothing => {}
            Outcome::Close => self.popups.close_plan(),
            Outcome::Accept => {
                self.popups.close_plan();
                self.set_planning(false);
                self.notice("Plan accepted: plan mode is off, the agent acts on it");
                self.composer.editor.set_text(ACCEPTED);
                self.submit(Delivery::Steer);
            }
            Outcome::Edit => {
                self.popups.close_plan();
                self.set_planning(false);
                self.composer
                    .editor
                    .set_text(&format!("Carry out this plan:\n\n{plan}"));
                self.notice("Plan mode is off: edit the plan, then send it to act on it");
            }
            Outcome::Reject => {
                self.popups.close_plan();
                self.notice("Plan rejected: still planning. Say what to change");
            }
        }
    }
}
