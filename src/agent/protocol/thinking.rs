//! Thinking levels: the effort a reasoning model is asked for.
//!
//! [`Effort`] is what the loop hands to providers per call (`reasoning`), together with a
//! `disable_reasoning` flag. [`ThinkingLevel`] is what a person or a config picks: it adds `off`
//! (no reasoning) and `inherit` (defer to a higher-level selector). Providers map an effort to
//! their wire form (effort strings or token budgets); [`clamp_effort`] picks the closest level a
//! model supports.

use serde::{Deserialize, Serialize};

/// Reasoning effort, ordered from least to most.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
    Max,
}

impl Effort {
    pub const ALL: [Effort; 6] = [
        Effort::Minimal,
        Effort::Low,
        Effort::Medium,
        Effort::High,
        Effort::Xhigh,
        Effort::Max,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Minimal => "minimal",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::Xhigh => "xhigh",
            Effort::Max => "max",
        }
    }

    /// Default Anthropic-style token budget for this effort.
    pub fn default_budget_tokens(self) -> u32 {
        match self {
            Effort::Minimal => 1024,
            Effort::Low => 4096,
            Effort::Medium => 8192,
            Effort::High => 16384,
            Effort::Xhigh | Effort::Max => 32768,
        }
    }
}

/// What a person selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    Inherit,
    Off,
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
    Max,
}

impl ThinkingLevel {
    /// The effort to request, or `None` for `off`/`inherit`.
    pub fn effort(self) -> Option<Effort> {
        match self {
            ThinkingLevel::Inherit | ThinkingLevel::Off => None,
            ThinkingLevel::Minimal => Some(Effort::Minimal),
            ThinkingLevel::Low => Some(Effort::Low),
            ThinkingLevel::Medium => Some(Effort::Medium),
            ThinkingLevel::High => Some(Effort::High),
            ThinkingLevel::Xhigh => Some(Effort::Xhigh),
            ThinkingLevel::Max => Some(Effort::Max),
        }
    }

    /// Resolve `inherit` against a parent level; the result is never `Inherit`
    /// unless the parent is.
    pub fn resolve(self, parent: ThinkingLevel) -> ThinkingLevel {
        if self == ThinkingLevel::Inherit {
            parent
        } else {
            self
        }
    }

    /// The `(reasoning, disable_reasoning)` pair the loop passes to providers.
    pub fn to_request(self) -> (Option<Effort>, bool) {
        (self.effort(), self == ThinkingLevel::Off)
    }

    /// The level after this one when a person cycles through them (Shift+Tab,
    /// `cycle_thinking_level`): off, minimal, low, medium, high, xhigh, then off again.
    pub fn cycled(self) -> ThinkingLevel {
        use ThinkingLevel::*;
        const ORDER: [ThinkingLevel; 6] = [Off, Minimal, Low, Medium, High, Xhigh];
        let i = ORDER.iter().position(|l| *l == self).unwrap_or(0);
        ORDER[(i + 1) % ORDER.len()]
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingLevel::Inherit => "inherit",
            ThinkingLevel::Off => "off",
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
            ThinkingLevel::Xhigh => "xhigh",
            ThinkingLevel::Max => "max",
        }
    }
}

impl std::str::FromStr for ThinkingLevel {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "inherit" => ThinkingLevel::Inherit,
            "off" | "none" => ThinkingLevel::Off,
            "minimal" => ThinkingLevel::Minimal,
            "low" => ThinkingLevel::Low,
            "medium" => ThinkingLevel::Medium,
            "high" => ThinkingLevel::High,
            "xhigh" => ThinkingLevel::Xhigh,
            "max" => ThinkingLevel::Max,
            other => {
                return Err(format!(
                    "unknown thinking level `{other}` (expected off, minimal, low, medium, high, xhigh or max)"
                ));
            }
        })
    }
}

/// The highest supported effort not above `requested`, else the lowest supported one.
/// `supported` must be in ascending order; an empty list yields `None`.
pub fn clamp_effort(requested: Effort, supported: &[Effort]) -> Option<Effort> {
    supported
        .iter()
        .rev()
        .find(|e| **e <= requested)
        .or_else(|| supported.first())
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_and_map_to_requests() {
        assert_eq!(
            "off".parse::<ThinkingLevel>().unwrap().to_request(),
            (None, true)
        );
        assert_eq!(
            "High".parse::<ThinkingLevel>().unwrap().to_request(),
            (Some(Effort::High), false)
        );
        assert!("loud".parse::<ThinkingLevel>().is_err());
        assert_eq!(
            ThinkingLevel::Inherit.resolve(ThinkingLevel::Low),
            ThinkingLevel::Low
        );
        assert_eq!(
            ThinkingLevel::Off.resolve(ThinkingLevel::Low),
            ThinkingLevel::Off
        );
    }

    #[test]
    fn clamping_picks_highest_not_above_else_lowest() {
        let s = [Effort::Low, Effort::Medium, Effort::High];
        assert_eq!(clamp_effort(Effort::Xhigh, &s), Some(Effort::High));
        assert_eq!(clamp_effort(Effort::Medium, &s), Some(Effort::Medium));
        assert_eq!(clamp_effort(Effort::Minimal, &s), Some(Effort::Low));
        assert_eq!(clamp_effort(Effort::Low, &[]), None);
    }

    #[test]
    fn efforts_are_ordered() {
        assert!(Effort::Minimal < Effort::Max);
        assert_eq!(Effort::High.default_budget_tokens(), 16384);
    }
}
