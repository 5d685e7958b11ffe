//! Model patterns, as `--model`, `--models` and `enabled_models` (the Node.js pi's
//! `enabledModels`) take them.
//!
//! A pattern is matched against `provider/id`, the id and the model's name, ignoring case: with
//! `*` or `?` it is a glob that must match one of them whole; without, it is a search that one
//! of them must contain (`sonnet`). An optional `:level` suffix names a thinking level.
//!
//! For `--model`, a pattern that matches several models picks the best one: models whose
//! provider has a key first, then ids without a date stamp, then the newest-looking id. When the
//! best candidates come from different providers with keys, nothing is guessed: the error lists
//! them.

use crate::agent::protocol::thinking::ThinkingLevel;
use crate::provider::catalog::{Catalog, ModelInfo};

/// A pattern split from its thinking level.
pub fn split_level(pattern: &str) -> (&str, Option<ThinkingLevel>) {
    let pattern = pattern.trim();
    match pattern.rsplit_once(':') {
        Some((head, tail)) => match tail.parse::<ThinkingLevel>() {
            Ok(level) if !head.is_empty() => (head, Some(level)),
            _ => (pattern, None),
        },
        None => (pattern, None),
    }
}

/// `*` any run of characters, `?` one; both sides already lower-cased.
fn glob(pattern: &[char], text: &[char]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some(('*', rest)) => (0..=text.len()).any(|i| glob(rest, &text[i..])),
        Some(('?', rest)) => !text.is_empty() && glob(rest, &text[1..]),
        Some((c, rest)) => text.first() == Some(c) && glob(rest, &text[1..]),
    }
}

/// Whether `pattern` (without a level) names `model`.
pub fn matches(pattern: &str, model: &ModelInfo) -> bool {
    let p = pattern.trim().to_lowercase();
    if p.is_empty() {
        return false;
    }
    let full = format!("{}/{}", model.provider, model.id).to_lowercase();
    let fields = [full, model.id.to_lowercase(), model.name.to_lowercase()];
    if p.contains('*') || p.contains('?') {
        let pc: Vec<char> = p.chars().collect();
        fields
            .iter()
            .any(|f| glob(&pc, &f.chars().collect::<Vec<_>>()))
    } else {
        fields.iter().any(|f| f.contains(&p))
    }
}

/// Whether an id ends in a date stamp (`-20250514`, `-2024-08-06`): a pinned snapshot, which
/// loses to the alias that follows the newest one.
fn dated(id: &str) -> bool {
    let parts: Vec<&str> = id.rsplit(['-', '@']).take(3).collect();
    let numeric = |s: &str, n: usize| s.len() == n && s.chars().all(|c| c.is_ascii_digit());
    match parts.as_slice() {
        [last, ..] if numeric(last, 8) => true,
        [d, m, y] => numeric(y, 4) && numeric(m, 2) && numeric(d, 2),
        _ => false,
    }
}

/// The one model `pattern` (without a level) names. `has_key` says whether a provider can be
/// used now.
pub fn best_match(
    pattern: &str,
    models: &[ModelInfo],
    has_key: &dyn Fn(&str) -> bool,
) -> Result<ModelInfo, String> {
    let p = pattern.trim();
    let lower = p.to_lowercase();
    // Exact ids and names first: `gpt-5` is gpt-5, not gpt-5-mini.
    let exact: Vec<&ModelInfo> = models
        .iter()
        .filter(|m| {
            m.id.to_lowercase() == lower
                || m.name.to_lowercase() == lower
                || format!("{}/{}", m.provider, m.id).to_lowercase() == lower
        })
        .collect();
    let found: Vec<&ModelInfo> = if exact.is_empty() {
        models.iter().filter(|m| matches(p, m)).collect()
    } else {
        exact
    };
    if found.is_empty() {
        return Err(format!(
            "no model matches `{p}` (see `pi --list-models`, or name it as provider/id)"
        ));
    }
    let usable: Vec<&ModelInfo> = found
        .iter()
        .copied()
        .filter(|m| has_key(&m.provider))
        .collect();
    let mut pool = if usable.is_empty() { found } else { usable };
    pool.sort_by(|a, b| {
        dated(&a.id)
            .cmp(&dated(&b.id))
            .then_with(|| b.id.cmp(&a.id))
            .then_with(|| a.provider.cmp(&b.provider))
    });
    let best = pool[0];
    let rivals: Vec<&ModelInfo> = pool
        .iter()
        .copied()
        .filter(|m| m.provider != best.provider && has_key(&m.provider))
        .collect();
    if has_key(&best.provider) && !rivals.is_empty() {
        let mut names: Vec<String> = std::iter::once(best)
            .chain(rivals)
            .map(|m| format!("{}/{}", m.provider, m.id))
            .collect();
        names.dedup();
        return Err(format!(
            "`{p}` matches models of several providers: {}. Name one as provider/id",
            names.join(", ")
        ));
    }
    Ok(best.clone())
}

/// [`best_match`] among `provider`'s models first (`sonnet` finds that provider's Sonnet),
/// then among all of `models`; every provider counts as usable.
pub fn best_match_near(
    pattern: &str,
    models: &[ModelInfo],
    provider: &str,
) -> Result<ModelInfo, String> {
    let same: Vec<ModelInfo> = models
        .iter()
        .filter(|m| m.provider == provider)
        .cloned()
        .collect();
    best_match(pattern, &same, &|_| true).or_else(|_| best_match(pattern, models, &|_| true))
}

/// The model a person cycles to (Ctrl+P, Shift+Ctrl+P, RPC `cycle_model`) from `current`: the
/// next (or previous) of the scope when there is one, else of the models whose provider has a
/// key, with the level its pattern names. `None` when there is no other model to go to.
pub fn cycle(
    scoped: &[(ModelInfo, Option<ThinkingLevel>)],
    models: &[ModelInfo],
    has_key: &dyn Fn(&str) -> bool,
    current: &ModelInfo,
    forward: bool,
) -> Option<(ModelInfo, Option<ThinkingLevel>)> {
    let ring: Vec<(ModelInfo, Option<ThinkingLevel>)> = if scoped.is_empty() {
        models
            .iter()
            .filter(|m| has_key(&m.provider))
            .map(|m| (m.clone(), None))
            .collect()
    } else {
        scoped.to_vec()
    };
    let here = ring
        .iter()
        .position(|(m, _)| m.provider == current.provider && m.id == current.id);
    let n = ring.len();
    if n == 0 || (n == 1 && here.is_some()) {
        return None;
    }
    let next = match (here, forward) {
        (Some(i), true) => (i + 1) % n,
        (Some(i), false) => (i + n - 1) % n,
        (None, true) => 0,
        (None, false) => n - 1,
    };
    ring.into_iter().nth(next)
}

/// The models a list of patterns names, in the order given, each once, with the level a
/// pattern attaches. Patterns that name nothing come back as warnings.
pub fn scope(
    patterns: &[String],
    catalog: &Catalog,
) -> (Vec<(ModelInfo, Option<ThinkingLevel>)>, Vec<String>) {
    let mut out: Vec<(ModelInfo, Option<ThinkingLevel>)> = Vec::new();
    let mut warnings = Vec::new();
    for raw in patterns.iter().flat_map(|p| p.split(',')) {
        let (pattern, level) = split_level(raw);
        if pattern.is_empty() {
            continue;
        }
        let before = out.len();
        for m in catalog.models().iter().filter(|m| matches(pattern, m)) {
            if !out
                .iter()
                .any(|(o, _)| o.provider == m.provider && o.id == m.id)
            {
                out.push((m.clone(), level));
            }
        }
        if out.len() == before {
            warnings.push(format!("model pattern `{pattern}` matches no model"));
        }
    }
    (out, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        Catalog::builtin(&|_| None)
    }

    #[test]
    fn globs_and_searches_match_provider_id_and_name() {
        let c = catalog();
        let haiku = c.find("anthropic", "claude-haiku-4-5").unwrap();
        assert!(matches("claude-*", haiku));
        assert!(matches("anthropic/*", haiku));
        assert!(matches("HAIKU", haiku));
        assert!(matches("Claude Haiku", haiku), "the name");
        assert!(!matches("claude-*-5-x", haiku));
        assert!(!matches("gpt", haiku));
        assert!(matches("claude-haiku-4-?", haiku));
    }

    #[test]
    fn a_search_picks_the_best_model_and_ambiguity_lists_the_candidates() {
        let c = catalog();
        let all = |_: &str| true;
        let none = |_: &str| false;
        let anthropic_only = |p: &str| p == "anthropic";
        let openai_only = |p: &str| p == "openai";
        let m = best_match("gpt-5", c.models(), &openai_only).unwrap();
        assert_eq!(
            (m.provider.as_str(), m.id.as_str()),
            ("openai", "gpt-5"),
            "an exact id"
        );
        let e = best_match("gpt-5", c.models(), &all).unwrap_err();
        assert!(e.contains("azure-openai-responses/gpt-5"), "{e}");
        let m = best_match("sonnet", c.models(), &anthropic_only).unwrap();
        assert_eq!(
            (m.provider.as_str(), m.id.as_str()),
            ("anthropic", "claude-sonnet-4-5")
        );
        let m = best_match("sonnet", c.models(), &none).unwrap();
        assert_eq!(m.id, "claude-sonnet-4-5", "newest id without any key");
        let e = best_match("sonnet", c.models(), &all).unwrap_err();
        assert!(e.contains("anthropic/claude-sonnet-4-5"), "{e}");
        assert!(e.contains("openrouter/anthropic/claude-sonnet-4.5"), "{e}");
        assert!(
            best_match("no-such-thing", c.models(), &all)
                .unwrap_err()
                .contains("no model")
        );
    }

    #[test]
    fn dated_snapshots_lose_to_aliases() {
        assert!(dated("claude-sonnet-4-20250514"));
        assert!(dated("gpt-4o-2024-08-06"));
        assert!(!dated("claude-sonnet-4-5"));
        assert!(!dated("qwen3:8b"));
    }

    #[test]
    fn scopes_keep_order_levels_and_report_empty_patterns() {
        let c = catalog();
        let (models, warnings) = scope(
            &["claude-haiku*:low,gpt-5".into(), "nothing-here".into()],
            &c,
        );
        let ids: Vec<&str> = models.iter().map(|(m, _)| m.id.as_str()).collect();
        assert_eq!(ids[0], "claude-haiku-4-5");
        assert_eq!(models[0].1, Some(ThinkingLevel::Low));
        assert!(ids.contains(&"gpt-5") && ids.contains(&"gpt-5-mini"));
        assert_eq!(warnings.len(), 1);
        assert_eq!(split_level("ollama/qwen3:8b"), ("ollama/qwen3:8b", None));
        assert_eq!(
            split_level("sonnet:high"),
            ("sonnet", Some(ThinkingLevel::High))
        );
    }
}
