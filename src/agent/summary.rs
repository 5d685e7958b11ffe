//! Run summary and tool coverage. (stub: to be completed)

use serde::{Deserialize, Serialize};

use super::types::{StopReason, Usage};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    pub step_count: u32,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunCoverage {
    pub tools_available: Vec<String>,
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

#[derive(Default)]
pub struct RunCollector {
    steps: u32,
}

impl RunCollector {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn note_tools_available<'a>(&mut self, _names: impl Iterator<Item = &'a str>) {}
    pub fn record_chat(
        &mut self,
        _model: &str,
        _provider: &str,
        _stop_reason: StopReason,
        _latency_ms: u64,
        _usage: &Usage,
    ) {
        self.steps += 1;
    }
    pub fn fail_chat(
        &mut self,
        _model: &str,
        _provider: &str,
        _latency_ms: u64,
        _error_type: &str,
    ) {
        self.steps += 1;
    }
    pub fn record_tool(
        &mut self,
        _name: &str,
        _status: ToolStatus,
        _latency_ms: u64,
        _error_type: Option<&str>,
    ) {
    }
    pub fn record_orphan_tool(&mut self, _name: &str, _status: ToolStatus) {}
    pub fn summary(&self) -> RunSummary {
        RunSummary {
            step_count: self.steps,
        }
    }
    pub fn coverage(&self) -> RunCoverage {
        RunCoverage::default()
    }
}
