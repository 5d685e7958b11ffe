//! Per-run telemetry: the collector that fills a [`RunSummary`] and [`RunCoverage`].
//!
//! The loop feeds a [`RunCollector`] as it goes: one chat record per provider call (or a failed
//! call), one tool record per executed call, and orphan tool records for calls that never ran
//! (placeholders, skipped or aborted calls). At the end it reads the two snapshots.
//! [`aggregate_summaries`] and [`aggregate_coverage`] fold several runs into one. Counters
//! saturate instead of overflowing; nothing here panics.

use std::collections::{BTreeMap, BTreeSet};

use crate::agent::protocol::summary::{RunCoverage, RunSummary, ToolCounts, ToolStatus};
use crate::agent::protocol::types::{StopReason, Usage};

fn bump(map: &mut BTreeMap<String, u64>, key: &str, n: u64) {
    match map.get_mut(key) {
        Some(v) => *v = v.saturating_add(n),
        None => {
            map.insert(key.to_string(), n);
        }
    }
}

fn merge_counts(into: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>) {
    for (k, v) in from {
        bump(into, k, *v);
    }
}

/// Adds `value` to a sorted, deduplicated list.
fn insert_sorted(list: &mut Vec<String>, value: &str) {
    if let Err(at) = list.binary_search_by(|x| x.as_str().cmp(value)) {
        list.insert(at, value.to_string());
    }
}

fn model_label(provider: &str, model: &str) -> String {
    match (provider.is_empty(), model.is_empty()) {
        (false, false) => format!("{provider}/{model}"),
        (true, false) => model.to_string(),
        (false, true) => format!("{provider}/(unknown model)"),
        (true, true) => "(unknown model)".to_string(),
    }
}

/// Collects one run's records. Create one per run; read it with [`RunCollector::summary`] and
/// [`RunCollector::coverage`].
#[derive(Default)]
pub struct RunCollector {
    summary: RunSummary,
    tools_available: BTreeSet<String>,
    tools_invoked: BTreeSet<String>,
    models: BTreeSet<String>,
    providers: BTreeSet<String>,
}

impl RunCollector {
    pub fn new() -> Self {
        Self::default()
    }

    /// Notes the tools offered to the model (called with each request's tool list).
    pub fn note_tools_available<'a>(&mut self, names: impl Iterator<Item = &'a str>) {
        for name in names {
            if !self.tools_available.contains(name) {
                self.tools_available.insert(name.to_string());
            }
        }
    }

    fn note_model(&mut self, model: &str, provider: &str) {
        if !model.is_empty() && !self.models.contains(model) {
            self.models.insert(model.to_string());
        }
        if !provider.is_empty() && !self.providers.contains(provider) {
            self.providers.insert(provider.to_string());
        }
    }

    fn note_error(&mut self, error_type: &str) {
        let errors = &mut self.summary.errors;
        errors.total = errors.total.saturating_add(1);
        bump(&mut errors.by_type, error_type, 1);
    }

    fn count_chat(&mut self, model: &str, provider: &str, stop_reason: &str, latency_ms: u64) {
        self.note_model(model, provider);
        let s = &mut self.summary;
        s.step_count = s.step_count.saturating_add(1);
        s.chats.total = s.chats.total.saturating_add(1);
        s.chats.total_latency_ms = s.chats.total_latency_ms.saturating_add(latency_ms);
        bump(&mut s.chats.by_stop_reason, stop_reason, 1);
    }

    /// Records a provider call that produced a response.
    pub fn record_chat(
        &mut self,
        model: &str,
        provider: &str,
        stop_reason: StopReason,
        latency_ms: u64,
        usage: &Usage,
    ) {
        self.count_chat(model, provider, stop_reason.as_str(), latency_ms);
        if matches!(stop_reason, StopReason::Error | StopReason::Aborted) {
            self.note_error(stop_reason.as_str());
        }

        let input = usage
            .input
            .saturating_add(usage.cache_read)
            .saturating_add(usage.cache_write);
        let total = if usage.total_tokens > 0 {
            usage.total_tokens
        } else {
            usage.input.saturating_add(usage.output)
        };
        let u = &mut self.summary.usage;
        u.input_tokens = u.input_tokens.saturating_add(input);
        u.output_tokens = u.output_tokens.saturating_add(usage.output);
        u.cached_input_tokens = u.cached_input_tokens.saturating_add(usage.cache_read);
        u.cache_write_tokens = u.cache_write_tokens.saturating_add(usage.cache_write);
        u.reasoning_output_tokens = u
            .reasoning_output_tokens
            .saturating_add(usage.reasoning_tokens.unwrap_or(0));
        u.total_tokens = u.total_tokens.saturating_add(total);

        let used_tokens = input > 0 || usage.output > 0;
        let cost = usage.cost.total;
        let cost_stats = &mut self.summary.cost;
        if !cost.is_finite() || cost < 0.0 {
            insert_sorted(
                &mut cost_stats.unavailable_reasons,
                &format!("invalid cost reported for {}", model_label(provider, model)),
            );
        } else if cost > 0.0 {
            cost_stats.estimated_usd += cost;
        } else if used_tokens {
            insert_sorted(
                &mut cost_stats.unavailable_reasons,
                &format!("no price known for {}", model_label(provider, model)),
            );
        }
    }

    /// Records a provider call that failed before producing a response.
    pub fn fail_chat(&mut self, model: &str, provider: &str, latency_ms: u64, error_type: &str) {
        self.count_chat(model, provider, StopReason::Error.as_str(), latency_ms);
        let error_type = error_type.trim();
        self.note_error(if error_type.is_empty() {
            StopReason::Error.as_str()
        } else {
            error_type
        });
    }

    /// Records a tool call that ran (or was meant to run) with a span. A non-`Ok` status
    /// counts as an error of type `error_type`, or of the status's default type.
    pub fn record_tool(
        &mut self,
        name: &str,
        status: ToolStatus,
        latency_ms: u64,
        error_type: Option<&str>,
    ) {
        let tools = &mut self.summary.tools;
        tools.totals.record(status, latency_ms);
        match tools.by_name.get_mut(name) {
            Some(counts) => counts.record(status, latency_ms),
            None => {
                let mut counts = ToolCounts::default();
                counts.record(status, latency_ms);
                tools.by_name.insert(name.to_string(), counts);
            }
        }
        if !self.tools_invoked.contains(name) {
            self.tools_invoked.insert(name.to_string());
        }
        if let Some(default_type) = status.default_error_type() {
            let given = error_type.map(str::trim).filter(|t| !t.is_empty());
            self.note_error(given.unwrap_or(default_type));
        }
    }

    /// Records a call that never ran (a placeholder or a call skipped before starting).
    pub fn record_orphan_tool(&mut self, name: &str, status: ToolStatus) {
        self.record_tool(name, status, 0, None);
    }

    pub fn summary(&self) -> RunSummary {
        self.summary.clone()
    }

    pub fn coverage(&self) -> RunCoverage {
        RunCoverage {
            tools_available: self.tools_available.iter().cloned().collect(),
            tools_invoked: self.tools_invoked.iter().cloned().collect(),
            tools_unused: self
                .tools_available
                .difference(&self.tools_invoked)
                .cloned()
                .collect(),
            models_used: self.models.iter().cloned().collect(),
            providers_used: self.providers.iter().cloned().collect(),
        }
    }
}

/// Folds several runs into one summary: counters and latencies summed, maps merged key by key,
/// unavailable-cost reasons merged (sorted, deduplicated).
pub fn aggregate_summaries(summaries: &[RunSummary]) -> RunSummary {
    let mut out = RunSummary::default();
    let mut reasons = BTreeSet::new();
    for s in summaries {
        out.chats.total = out.chats.total.saturating_add(s.chats.total);
        out.chats.total_latency_ms = out
            .chats
            .total_latency_ms
            .saturating_add(s.chats.total_latency_ms);
        merge_counts(&mut out.chats.by_stop_reason, &s.chats.by_stop_reason);

        out.tools.totals.merge(&s.tools.totals);
        for (name, counts) in &s.tools.by_name {
            out.tools
                .by_name
                .entry(name.clone())
                .or_default()
                .merge(counts);
        }

        let (u, v) = (&mut out.usage, &s.usage);
        u.input_tokens = u.input_tokens.saturating_add(v.input_tokens);
        u.output_tokens = u.output_tokens.saturating_add(v.output_tokens);
        u.cached_input_tokens = u.cached_input_tokens.saturating_add(v.cached_input_tokens);
        u.cache_write_tokens = u.cache_write_tokens.saturating_add(v.cache_write_tokens);
        u.reasoning_output_tokens = u
            .reasoning_output_tokens
            .saturating_add(v.reasoning_output_tokens);
        u.total_tokens = u.total_tokens.saturating_add(v.total_tokens);

        if s.cost.estimated_usd.is_finite() {
            out.cost.estimated_usd += s.cost.estimated_usd;
        }
        reasons.extend(s.cost.unavailable_reasons.iter().cloned());

        out.errors.total = out.errors.total.saturating_add(s.errors.total);
        merge_counts(&mut out.errors.by_type, &s.errors.by_type);

        out.step_count = out.step_count.saturating_add(s.step_count);
    }
    out.cost.unavailable_reasons = reasons.into_iter().collect();
    out
}

/// Folds several runs' coverage into one: every list merged (sorted, deduplicated);
/// `toolsUnused` is recomputed as the tools available in some run but invoked in none.
pub fn aggregate_coverage(coverages: &[RunCoverage]) -> RunCoverage {
    let mut available = BTreeSet::new();
    let mut invoked = BTreeSet::new();
    let mut models = BTreeSet::new();
    let mut providers = BTreeSet::new();
    for c in coverages {
        available.extend(c.tools_available.iter().cloned());
        invoked.extend(c.tools_invoked.iter().cloned());
        models.extend(c.models_used.iter().cloned());
        providers.extend(c.providers_used.iter().cloned());
    }
    RunCoverage {
        tools_unused: available.difference(&invoked).cloned().collect(),
        tools_available: available.into_iter().collect(),
        tools_invoked: invoked.into_iter().collect(),
        models_used: models.into_iter().collect(),
        providers_used: providers.into_iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::types::Cost;
    use serde_json::json;

    fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64, cost: f64) -> Usage {
        Usage {
            input,
            output,
            cache_read,
            cache_write,
            total_tokens: 0,
            reasoning_tokens: None,
            cost: Cost {
                total: cost,
                ..Default::default()
            },
        }
    }

    fn sample() -> RunCollector {
        let mut c = RunCollector::new();
        c.note_tools_available(["write", "read", "bash"].into_iter());
        c.note_tools_available(["read", "grep"].into_iter());
        c.record_chat(
            "claude",
            "anthropic",
            StopReason::ToolUse,
            100,
            &usage(10, 5, 100, 20, 0.01),
        );
        c.record_tool("read", ToolStatus::Ok, 7, None);
        c.record_tool("bash", ToolStatus::Error, 30, Some("SpawnError"));
        c.record_tool("read", ToolStatus::Timeout, 50, None);
        c.record_orphan_tool("bash", ToolStatus::Skipped);
        c.record_chat(
            "claude",
            "anthropic",
            StopReason::Stop,
            40,
            &usage(3, 2, 0, 0, 0.02),
        );
        c
    }

    #[test]
    fn chats_and_steps_are_counted() {
        let s = sample().summary();
        assert_eq!(s.step_count, 2);
        assert_eq!(s.chats.total, 2);
        assert_eq!(s.chats.total_latency_ms, 140);
        let reasons: Vec<_> = s.chats.by_stop_reason.iter().collect();
        assert_eq!(
            reasons,
            vec![(&"stop".to_string(), &1), (&"toolUse".to_string(), &1)]
        );
    }

    #[test]
    fn usage_includes_cache_tokens_in_input() {
        let s = sample().summary();
        assert_eq!(s.usage.input_tokens, 10 + 100 + 20 + 3);
        assert_eq!(s.usage.cached_input_tokens, 100);
        assert_eq!(s.usage.cache_write_tokens, 20);
        assert_eq!(s.usage.output_tokens, 7);
        // no provider total: input + output of each call
        assert_eq!(s.usage.total_tokens, 15 + 5);
        assert!((s.cost.estimated_usd - 0.03).abs() < 1e-12);
        assert!(s.cost.unavailable_reasons.is_empty());
    }

    #[test]
    fn provider_total_and_reasoning_tokens_are_used_when_given() {
        let mut c = RunCollector::new();
        let mut u = usage(10, 5, 0, 0, 0.0);
        u.total_tokens = 99;
        u.reasoning_tokens = Some(4);
        c.record_chat("m", "p", StopReason::Stop, 0, &u);
        let s = c.summary();
        assert_eq!(s.usage.total_tokens, 99);
        assert_eq!(s.usage.reasoning_output_tokens, 4);
    }

    #[test]
    fn tools_are_counted_by_status_and_name() {
        let s = sample().summary();
        let t = &s.tools;
        assert_eq!(t.totals.total, 4);
        assert_eq!(
            (
                t.totals.ok,
                t.totals.error,
                t.totals.timeout,
                t.totals.skipped
            ),
            (1, 1, 1, 1)
        );
        assert_eq!(t.totals.total_latency_ms, 87);
        let names: Vec<_> = t.by_name.keys().cloned().collect();
        assert_eq!(names, vec!["bash", "read"]);
        let read = t.by_name["read"];
        assert_eq!(
            (read.total, read.ok, read.timeout, read.total_latency_ms),
            (2, 1, 1, 57)
        );
        let bash = t.by_name["bash"];
        assert_eq!(
            (bash.total, bash.error, bash.skipped, bash.total_latency_ms),
            (2, 1, 1, 30)
        );
    }

    #[test]
    fn errors_are_typed() {
        let mut c = sample();
        c.record_chat("m", "p", StopReason::Aborted, 1, &Usage::default());
        c.record_chat("m", "p", StopReason::Error, 1, &Usage::default());
        c.fail_chat("m", "p", 5, "HarmonyInterruption");
        c.fail_chat("m", "p", 5, "  ");
        c.record_tool("x", ToolStatus::Blocked, 0, None);
        c.record_tool("x", ToolStatus::Ok, 0, Some("ignored"));
        c.record_orphan_tool("y", ToolStatus::Aborted);
        let s = c.summary();
        let expected: BTreeMap<String, u64> = [
            ("HarmonyInterruption", 1),
            ("SpawnError", 1),
            ("aborted", 1),
            ("error", 2),
            ("tool_aborted", 1),
            ("tool_blocked", 1),
            ("tool_skipped", 1),
            ("tool_timeout", 1),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(s.errors.by_type, expected);
        assert_eq!(s.errors.total, 9);
        assert_eq!(s.step_count, 6);
        assert_eq!(s.chats.by_stop_reason["error"], 3);
        assert_eq!(s.chats.total_latency_ms, 140 + 12);
    }

    #[test]
    fn missing_prices_are_reported_once_each() {
        let mut c = RunCollector::new();
        c.record_chat("m2", "zeta", StopReason::Stop, 0, &usage(5, 1, 0, 0, 0.0));
        c.record_chat("m1", "alpha", StopReason::Stop, 0, &usage(0, 0, 3, 0, 0.0));
        c.record_chat("m2", "zeta", StopReason::Stop, 0, &usage(5, 1, 0, 0, 0.0));
        // no tokens, no cost: nothing to explain
        c.record_chat("m3", "beta", StopReason::Error, 0, &Usage::default());
        c.record_chat(
            "m4",
            "beta",
            StopReason::Stop,
            0,
            &usage(1, 1, 0, 0, f64::NAN),
        );
        let s = c.summary();
        assert_eq!(
            s.cost.unavailable_reasons,
            vec![
                "invalid cost reported for beta/m4",
                "no price known for alpha/m1",
                "no price known for zeta/m2",
            ]
        );
        assert_eq!(s.cost.estimated_usd, 0.0);
    }

    #[test]
    fn coverage_is_sorted_and_deduplicated() {
        let mut c = sample();
        c.record_chat("gpt", "openai", StopReason::Stop, 0, &Usage::default());
        c.record_orphan_tool("unknown_tool", ToolStatus::Error);
        let cov = c.coverage();
        assert_eq!(cov.tools_available, vec!["bash", "grep", "read", "write"]);
        assert_eq!(cov.tools_invoked, vec!["bash", "read", "unknown_tool"]);
        assert_eq!(cov.tools_unused, vec!["grep", "write"]);
        assert_eq!(cov.models_used, vec!["claude", "gpt"]);
        assert_eq!(cov.providers_used, vec!["anthropic", "openai"]);
    }

    #[test]
    fn summary_json_uses_camel_case_and_flat_tool_totals() {
        let v = serde_json::to_value(sample().summary()).unwrap();
        assert_eq!(v["stepCount"], 2);
        assert_eq!(v["chats"]["byStopReason"]["toolUse"], 1);
        assert_eq!(v["tools"]["total"], 4);
        assert_eq!(v["tools"]["totalLatencyMs"], 87);
        assert_eq!(v["tools"]["byName"]["read"]["timeout"], 1);
        assert_eq!(v["usage"]["cachedInputTokens"], 100);
        assert!(v["cost"]["unavailableReasons"].is_array());
        assert_eq!(v["errors"]["byType"]["SpawnError"], 1);
        let back: RunSummary = serde_json::from_value(v).unwrap();
        assert_eq!(back, sample().summary());
        let cov = serde_json::to_value(sample().coverage()).unwrap();
        assert_eq!(cov["toolsUnused"], json!(["grep", "write"]));
        assert_eq!(
            serde_json::from_value::<RunCoverage>(cov).unwrap(),
            sample().coverage()
        );
    }

    #[test]
    fn aggregation_sums_and_merges() {
        let a = sample().summary();
        let mut c = RunCollector::new();
        c.record_chat("m", "p", StopReason::Stop, 10, &usage(1, 1, 0, 0, 0.0));
        c.record_tool("grep", ToolStatus::Ok, 3, None);
        c.record_tool("read", ToolStatus::Ok, 1, None);
        let b = c.summary();
        let s = aggregate_summaries(&[a.clone(), b]);
        assert_eq!(s.step_count, 3);
        assert_eq!(s.chats.total, 3);
        assert_eq!(s.chats.by_stop_reason["stop"], 2);
        assert_eq!(s.chats.total_latency_ms, 150);
        assert_eq!(s.tools.totals.total, 6);
        assert_eq!(s.tools.totals.ok, 3);
        assert_eq!(
            s.tools.by_name.keys().collect::<Vec<_>>(),
            vec!["bash", "grep", "read"]
        );
        assert_eq!(s.tools.by_name["read"].total, 3);
        assert_eq!(s.usage.input_tokens, a.usage.input_tokens + 1);
        assert!((s.cost.estimated_usd - 0.03).abs() < 1e-12);
        assert_eq!(s.cost.unavailable_reasons, vec!["no price known for p/m"]);
        assert_eq!(s.errors.total, a.errors.total);
        // the same reasons twice stay deduplicated
        let twice = aggregate_summaries(&[s.clone(), s.clone()]);
        assert_eq!(
            twice.cost.unavailable_reasons,
            vec!["no price known for p/m"]
        );
        assert_eq!(twice.step_count, 6);
        assert_eq!(aggregate_summaries(&[]), RunSummary::default());
        assert_eq!(aggregate_summaries(std::slice::from_ref(&a)), a);
    }

    #[test]
    fn coverage_aggregation_merges_and_recomputes_unused() {
        let a = RunCoverage {
            tools_available: vec!["read".into(), "write".into()],
            tools_invoked: vec!["read".into()],
            tools_unused: vec!["write".into()],
            models_used: vec!["m2".into()],
            providers_used: vec!["p".into()],
        };
        let b = RunCoverage {
            tools_available: vec!["bash".into(), "write".into()],
            tools_invoked: vec!["write".into()],
            tools_unused: vec!["bash".into()],
            models_used: vec!["m1".into(), "m2".into()],
            providers_used: vec!["p".into()],
        };
        let c = aggregate_coverage(&[a, b]);
        assert_eq!(c.tools_available, vec!["bash", "read", "write"]);
        assert_eq!(c.tools_invoked, vec!["read", "write"]);
        assert_eq!(c.tools_unused, vec!["bash"]);
        assert_eq!(c.models_used, vec!["m1", "m2"]);
        assert_eq!(c.providers_used, vec!["p"]);
        assert_eq!(aggregate_coverage(&[]), RunCoverage::default());
    }

    #[test]
    fn counters_saturate_instead_of_panicking() {
        let mut c = RunCollector::new();
        c.record_tool("t", ToolStatus::Ok, u64::MAX, None);
        c.record_tool("t", ToolStatus::Ok, u64::MAX, None);
        let mut u = usage(u64::MAX, u64::MAX, u64::MAX, 1, 0.0);
        u.total_tokens = u64::MAX;
        c.record_chat("m", "p", StopReason::Stop, u64::MAX, &u);
        c.record_chat("m", "p", StopReason::Stop, u64::MAX, &u);
        let s = c.summary();
        assert_eq!(s.tools.totals.total_latency_ms, u64::MAX);
        assert_eq!(s.usage.input_tokens, u64::MAX);
        assert_eq!(s.chats.total_latency_ms, u64::MAX);
        let agg = aggregate_summaries(&[s.clone(), s]);
        assert_eq!(agg.usage.total_tokens, u64::MAX);
    }
}
