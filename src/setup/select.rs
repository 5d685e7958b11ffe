//! Choosing the model and thinking level for a run.
//!
//! Order: `--model` (with `--provider` for a bare id), then `model` in config (or the Node.js
//! pi's `defaultModel`), then the first provider with a key (the built-in ones in a fixed order,
//! then any other), then a local server found by a short probe (Ollama, then llama.cpp). Nothing found is an error that says how to set a
//! key or start a local server. `--model` accepts `provider/id:thinking`; since local ids often
//! contain `:` (`qwen3:8b`), the suffix counts as a thinking level only when it names one.

use crate::agent::protocol::thinking::ThinkingLevel;
use crate::config::Config;
use crate::provider::EnvLookup;
use crate::provider::catalog::{Catalog, ModelInfo};
use crate::provider::keys;

use super::patterns;

/// The chosen model and level, with warnings to show.
#[derive(Clone, Debug)]
pub struct Selection {
    pub model: ModelInfo,
    pub thinking: ThinkingLevel,
    pub warnings: Vec<String>,
    /// No key and no local server were found: the model is a stand-in until one is set up.
    pub missing: bool,
}

/// Split `provider/id:thinking` into its parts.
pub fn parse_model_arg(
    arg: &str,
    provider_flag: Option<&str>,
    catalog: &Catalog,
) -> Result<(Option<String>, String, Option<ThinkingLevel>), String> {
    let arg = arg.trim();
    let (rest, thinking) = match arg.rsplit_once(':') {
        Some((head, tail)) => match tail.parse::<ThinkingLevel>() {
            Ok(level) => (head, Some(level)),
            Err(_) => (arg, None),
        },
        None => (arg, None),
    };
    if rest.is_empty() {
        return Err("--model needs a model id".into());
    }
    if let Some(p) = provider_flag {
        let id = rest
            .strip_prefix(&format!("{p}/"))
            .unwrap_or(rest)
            .to_string();
        return Ok((Some(p.to_string()), id, thinking));
    }
    if let Some((p, id)) = rest.split_once('/')
        && catalog.provider(p).is_some()
    {
        return Ok((Some(p.to_string()), id.to_string(), thinking));
    }
    Ok((None, rest.to_string(), thinking))
}

/// The model `provider`/`id` names, by the one rule every way of choosing a model follows
/// (`--model`, `/model`, RPC `set_model`): a catalogued model as listed; the model in use
/// (`current`, which may be a local one the catalogue lacks) as it is; any other id on a known
/// provider as given, with default limits and a warning to show (new models work on day one);
/// an unknown provider is an error.
pub fn model_by_id(
    catalog: &Catalog,
    provider: &str,
    id: &str,
    current: Option<&ModelInfo>,
) -> Result<(ModelInfo, Option<String>), String> {
    if catalog.find(provider, id).is_none()
        && let Some(m) = current.filter(|m| m.provider == provider && m.id == id)
    {
        return Ok((m.clone(), None));
    }
    catalog.resolve(provider, id)
}

/// Resolve the model named on the command line or in config: an exact `provider/id` or id, else
/// a pattern (see [`patterns`]); an unknown id on a known provider is used as given (new models
/// work on day one), with a warning.
fn resolve_named(
    arg: &str,
    provider_flag: Option<&str>,
    catalog: &Catalog,
    has_key: &dyn Fn(&str) -> bool,
) -> Result<(ModelInfo, Option<ThinkingLevel>, Option<String>), String> {
    let (provider, id, thinking) = parse_model_arg(arg, provider_flag, catalog)?;
    match provider {
        Some(p) => {
            if let Some(m) = catalog.find(&p, &id) {
                return Ok((m.clone(), thinking, None));
            }
            let own: Vec<ModelInfo> = catalog
                .models()
                .iter()
                .filter(|m| m.provider == p && patterns::matches(&id, m))
                .cloned()
                .collect();
            if !own.is_empty() {
                return Ok((patterns::best_match(&id, &own, has_key)?, thinking, None));
            }
            let (m, warning) = model_by_id(catalog, &p, &id, None)?;
            Ok((m, thinking, warning))
        }
        None => {
            let found: Vec<&ModelInfo> = catalog.models().iter().filter(|m| m.id == id).collect();
            let usable: Vec<&ModelInfo> = found
                .iter()
                .copied()
                .filter(|m| has_key(&m.provider))
                .collect();
            match (found.as_slice(), usable.as_slice()) {
                ([one], _) | (_, [one]) => Ok(((*one).clone(), thinking, None)),
                ([], _) => Ok((
                    patterns::best_match(&id, catalog.models(), has_key)?,
                    thinking,
                    None,
                )),
                (many, _) => Err(format!(
                    "model `{id}` is offered by several providers ({}): name it as provider/id",
                    many.iter()
                        .map(|m| m.provider.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        }
    }
}

/// What the flags say about the model.
#[derive(Clone, Debug, Default)]
pub struct ModelFlags {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub thinking: Option<String>,
    /// A key given on the command line counts as a key for the default provider.
    pub has_api_key: bool,
    /// With no model to be found, start on the first built-in default anyway (marked
    /// [`Selection::missing`]) so the interactive UI can open and help set one up.
    pub allow_missing: bool,
}

/// Pick the model and thinking level.
pub async fn select(
    cli: &ModelFlags,
    config: &Config,
    catalog: &mut Catalog,
    env: &EnvLookup,
) -> Result<Selection, String> {
    let mut warnings = Vec::new();
    let mut missing = false;
    let named = cli
        .model
        .clone()
        .or_else(|| config.model.clone())
        .or_else(|| {
            cli.provider
                .as_deref()
                .and_then(crate::provider::catalog::default_model)
                .map(str::to_string)
        });
    let has_key = |p: &str| {
        catalog
            .provider(p)
            .is_some_and(|info| keys::has_key(info, None, &|k| env(k)))
    };
    let (model, suffix) = match named {
        Some(arg) => {
            let (m, t, w) = resolve_named(&arg, cli.provider.as_deref(), catalog, &has_key)?;
            warnings.extend(w);
            (m, t)
        }
        None => match first_with_key(catalog, cli.has_api_key, env) {
            Some(m) => (m, None),
            None => match crate::provider::local::probe_local(env, &*catalog).await {
                Some(m) => (m, None),
                None if cli.allow_missing => {
                    missing = true;
                    let (p, id) = crate::provider::catalog::DEFAULT_MODELS
                        .first()
                        .ok_or_else(|| NO_MODEL_HELP.to_string())?;
                    (catalog.resolve(p, id)?.0, None)
                }
                None => return Err(NO_MODEL_HELP.to_string()),
            },
        },
    };
    let level = match (&cli.thinking, suffix, &config.thinking) {
        (Some(t), _, _) => t.parse::<ThinkingLevel>()?,
        (None, Some(t), _) => t,
        (None, None, Some(t)) => t
            .parse::<ThinkingLevel>()
            .map_err(|e| format!("config thinking: {e}"))?,
        (None, None, None) => ThinkingLevel::Medium,
    };
    let thinking = if model.reasoning {
        level
    } else {
        ThinkingLevel::Off
    };
    Ok(Selection {
        model,
        thinking,
        warnings,
        missing,
    })
}

/// The model to start with when none is named: the default of the first built-in provider
/// with a key (a `--api-key` counts for the first), else the first listed model of any other
/// provider with a key, or needing none (custom providers of config.toml or `models.json`;
/// the built-in local servers list no models and are left to the probe).
fn first_with_key(catalog: &Catalog, cli_key: bool, env: &EnvLookup) -> Option<ModelInfo> {
    let keyed = |p: &str| {
        catalog
            .provider(p)
            .is_some_and(|info| keys::has_key(info, None, &|k| env(k)))
    };
    if cli_key {
        let (p, id) = crate::provider::catalog::DEFAULT_MODELS.first()?;
        return catalog.resolve(p, id).ok().map(|(m, _)| m);
    }
    for (p, id) in crate::provider::catalog::DEFAULT_MODELS {
        if keyed(p) {
            return catalog.resolve(p, id).ok().map(|(m, _)| m);
        }
    }
    catalog
        .models()
        .iter()
        .find(|m| keyed(&m.provider))
        .cloned()
}

/// What to say when no model can be found.
pub const NO_MODEL_HELP: &str = "No model to talk to. Set an API key (for example ANTHROPIC_API_KEY or \
OPENAI_API_KEY) and optionally pick a model with --model provider/id, sign in to a subscription \
(`pi --login openai-codex`, `anthropic` or `github-copilot`), or start a local server (Ollama on \
127.0.0.1:11434, or llama.cpp's server on 127.0.0.1:8080). `pi --list-models` shows the known \
models.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_arguments_split_provider_id_and_thinking() {
        let c = Catalog::builtin(&|_| None);
        assert_eq!(
            parse_model_arg("anthropic/claude-sonnet-4-5:high", None, &c).unwrap(),
            (
                Some("anthropic".into()),
                "claude-sonnet-4-5".into(),
                Some(ThinkingLevel::High)
            )
        );
        assert_eq!(
            parse_model_arg("ollama/qwen3:8b", None, &c).unwrap(),
            (Some("ollama".into()), "qwen3:8b".into(), None)
        );
        assert_eq!(
            parse_model_arg("anthropic/claude-3.5-sonnet", Some("openrouter"), &c).unwrap(),
            (
                Some("openrouter".into()),
                "anthropic/claude-3.5-sonnet".into(),
                None
            )
        );
        assert_eq!(
            parse_model_arg("gpt-5:low", None, &c).unwrap(),
            (None, "gpt-5".into(), Some(ThinkingLevel::Low))
        );
        assert!(parse_model_arg(":high", None, &c).is_err());
    }

    #[test]
    fn bare_ids_are_found_in_the_catalogue() {
        let c = Catalog::builtin(&|_| None);
        let all = |_: &str| true;
        let (m, _, _) = resolve_named("claude-haiku-4-5", None, &c, &all).unwrap();
        assert_eq!(m.provider, "anthropic");
        assert!(
            resolve_named("nonexistent-model", None, &c, &all)
                .unwrap_err()
                .contains("provider/id")
        );
        let (m, level, w) = resolve_named("haiku:high", None, &c, &all).unwrap();
        assert_eq!(
            (m.id.as_str(), level, w),
            ("claude-haiku-4-5", Some(ThinkingLevel::High), None)
        );
        let (m, _, _) = resolve_named("anthropic/sonnet", None, &c, &all).unwrap();
        assert_eq!(m.id, "claude-sonnet-4-5", "a pattern within one provider");
        let (m, _, w) = resolve_named("anthropic/claude-opus-9", None, &c, &all).unwrap();
        assert_eq!(m.id, "claude-opus-9", "an unknown id is used as given");
        assert!(w.unwrap().contains("not in the catalogue"));
    }
}
