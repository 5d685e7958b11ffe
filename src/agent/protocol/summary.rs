//! What a run reports about itself with `agent_end` when telemetry is on: [`RunSummary`]
//! (calls by stop reason, tool calls by status, token usage, cost, errors, steps) and
//! [`RunCoverage`] (tools offered and used, models and providers that answered).
//!
//! These are the data types only; the loop fills them through the collector in
//! `policy::summary`. Every map is a `BTreeMap` and every list sorted, so the JSON is stable.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Provider calls of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ChatStats {
    pub total: u64,
    /// Calls per stop reason (`stop`, `toolUse`, `error`, ...).
    pub by_stop_reason: BTreeMap<String, u64>,
    pub total_latency_ms: u64,
}

/// Tool calls by how they ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ToolCounts {
    pub total: u64,
    pub ok: u64,
    pub error: u64,
    pub skipped: u64,
    pub blocked: u64,
    pub timeout: u64,
    pub aborted: u64,
    pub total_latency_ms: u64,
}

impl ToolCounts {
    /// Count one call that ended with `status` after `latency_ms`.
    pub fn record(&mut self, status: ToolStatus, latency_ms: u64) {
        self.total = self.total.saturating_add(1);
        let slot = match status {
            ToolStatus::Ok => &mut self.ok,
            ToolStatus::Error => &mut self.error,
            ToolStatus::Skipped => &mut self.skipped,
            ToolStatus::Blocked => &mut self.blocked,
            ToolStatus::Timeout => &mut self.timeout,
            ToolStatus::Aborted => &mut self.aborted,
        };
        *slot = slot.saturating_add(1);
        self.total_latency_ms = self.total_latency_ms.saturating_add(latency_ms);
    }

    /// Add another set of counters to this one.
    pub fn merge(&mut self, other: &ToolCounts) {
        self.total = self.total.saturating_add(other.total);
        self.ok = self.ok.saturating_add(other.ok);
        self.error = self.error.saturating_add(other.error);
        self.skipped = self.skipped.saturating_add(other.skipped);
        self.blocked = self.blocked.saturating_add(other.blocked);
        self.timeout = self.timeout.saturating_add(other.timeout);
        self.aborted = self.aborted.saturating_add(other.aborted);
        self.total_latency_ms = self.total_latency_ms.saturating_add(other.total_latency_ms);
    }
}

/// Tool calls of a run: the totals, and the same counters per tool name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ToolStats {
    #[serde(flatten)]
    pub totals: ToolCounts,
    pub by_name: BTreeMap<String, ToolCounts>,
}

/// Token usage of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct UsageStats {
    /// Everything the model read: fresh input plus cache reads plus cache writes.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input served from the prompt cache (part of `input_tokens`).
    pub cached_input_tokens: u64,
    /// Input written to the prompt cache (part of `input_tokens`).
    pub cache_write_tokens: u64,
    /// Reasoning tokens (part of `output_tokens`).
    pub reasoning_output_tokens: u64,
    /// The provider's total, or input + output when it gave none.
    pub total_tokens: u64,
}

/// The cost estimate of a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CostStats {
    pub estimated_usd: f64,
    /// Why some calls are missing from the estimate (sorted, deduplicated).
    pub unavailable_reasons: Vec<String>,
}

/// Errors of a run, by type (chat stop reasons, error class names, `tool_*` statuses).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ErrorStats {
    pub total: u64,
    pub by_type: BTreeMap<String, u64>,
}

/// Everything a run did, in numbers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RunSummary {
    pub chats: ChatStats,
    pub tools: ToolStats,
    pub usage: UsageStats,
    pub cost: CostStats,
    pub errors: ErrorStats,
    /// Provider calls made (successful or not).
    pub step_count: u32,
}

/// Which tools and models a run touched. Every list is sorted and deduplicated.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RunCoverage {
    pub tools_available: Vec<String>,
    pub tools_invoked: Vec<String>,
    /// Available but never invoked.
    pub tools_unused: Vec<String>,
    pub models_used: Vec<String>,
    pub providers_used: Vec<String>,
}

/// How a tool call ended, for the summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolStatus {
    Ok,
    Error,
    Skipped,
    Blocked,
    Timeout,
    Aborted,
}

impl ToolStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolStatus::Ok => "ok",
            ToolStatus::Error => "error",
            ToolStatus::Skipped => "skipped",
            ToolStatus::Blocked => "blocked",
            ToolStatus::Timeout => "timeout",
            ToolStatus::Aborted => "aborted",
        }
    }

    /// The error type recorded for this status when no more specific one is known.
    pub fn default_error_type(self) -> Option<&'static str> {
        match self {
            ToolStatus::Ok => None,
            ToolStatus::Error => Some("tool_error"),
            ToolStatus::Skipped => Some("tool_skipped"),
            ToolStatus::Blocked => Some("tool_blocked"),
            ToolStatus::Timeout => Some("tool_timeout"),
            ToolStatus::Aborted => Some("tool_aborted"),
        }
    }
}
