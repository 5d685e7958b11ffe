//! The environment commands run in: pi's own, minus secrets.
//!
//! A model that runs `env` must not see a provider key: it would land in the session file and
//! go back to the provider with the next request. [`EnvPolicy`] removes every variable pi reads
//! a key from, and by default every name that looks like a credential (`*_API_KEY`, `*_TOKEN`,
//! `*_SECRET*`, `*PASSWORD*`, `*_ACCESS_KEY*`, `*_PRIVATE_KEY*`, case-insensitive). `[tools.env]` in config adds `exclude`
//! patterns and `include` patterns; a variable matching `include` is kept whatever else says.
//! Patterns are globs over the variable name (`*` and `?`), matched without regard to case.

use std::ffi::{OsStr, OsString};

use globset::{Glob, GlobMatcher};

use super::ToolSetupError;

/// Names removed by default.
pub(crate) const DEFAULT_EXCLUDE: &[&str] = &[
    "*_API_KEY",
    "*_TOKEN",
    "*_SECRET*",
    "*PASSWORD*",
    "*_ACCESS_KEY*",
    "*_PRIVATE_KEY*",
];

/// Which variables of pi's environment the tools' commands get.
#[derive(Debug)]
pub struct EnvPolicy {
    exclude: Vec<GlobMatcher>,
    include: Vec<GlobMatcher>,
    /// Exact names pi reads keys from.
    secrets: Vec<String>,
}

fn matcher(pattern: &str) -> Result<GlobMatcher, ToolSetupError> {
    Glob::new(&pattern.to_ascii_uppercase())
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolSetupError::BadEnvPattern {
            pattern: pattern.to_string(),
            reason: e.to_string(),
        })
}

impl Default for EnvPolicy {
    /// The default exclusions only.
    fn default() -> Self {
        EnvPolicy {
            exclude: DEFAULT_EXCLUDE
                .iter()
                .filter_map(|p| matcher(p).ok())
                .collect(),
            include: Vec::new(),
            secrets: Vec::new(),
        }
    }
}

impl EnvPolicy {
    /// The default exclusions, `exclude` and `include` from config, and the variables pi reads
    /// keys from.
    pub(crate) fn new(
        exclude: &[String],
        include: &[String],
        secrets: Vec<String>,
    ) -> Result<Self, ToolSetupError> {
        let exclude = DEFAULT_EXCLUDE
            .iter()
            .map(|p| matcher(p))
            .chain(exclude.iter().map(|p| matcher(p)))
            .collect::<Result<_, _>>()?;
        let include = include
            .iter()
            .map(|p| matcher(p))
            .collect::<Result<_, _>>()?;
        Ok(EnvPolicy {
            exclude,
            include,
            secrets: secrets
                .into_iter()
                .map(|s| s.to_ascii_uppercase())
                .collect(),
        })
    }

    /// Whether a command gets the variable `name`.
    pub(crate) fn allows(&self, name: &OsStr) -> bool {
        let upper = name.to_string_lossy().to_ascii_uppercase();
        if self.include.iter().any(|m| m.is_match(&upper)) {
            return true;
        }
        !(self.secrets.contains(&upper) || self.exclude.iter().any(|m| m.is_match(&upper)))
    }

    /// The variables of `vars` a command gets.
    pub(crate) fn filter(
        &self,
        vars: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Vec<(OsString, OsString)> {
        vars.into_iter().filter(|(k, _)| self.allows(k)).collect()
    }

    /// The values of `vars` that are withheld and long enough to be a credential (for masking
    /// anywhere they might still appear).
    pub(crate) fn withheld_values(
        &self,
        vars: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Vec<String> {
        vars.into_iter()
            .filter(|(k, _)| !self.allows(k))
            .filter_map(|(_, v)| v.into_string().ok())
            .filter(|v| v.trim().len() >= 8)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn keys_and_credential_names_are_withheld() {
        let p = EnvPolicy::new(&[], &[], vec!["MY_LLM_KEY".into()]).unwrap();
        let kept = p.filter(os(&[
            ("PATH", "/bin"),
            ("HOME", "/h"),
            ("ANTHROPIC_API_KEY", "sk-ant-123456789"),
            ("openai_api_key", "sk-lower"),
            ("GITHUB_TOKEN", "ghp_x"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
            ("DB_PASSWORD", "x"),
            ("AWS_ACCESS_KEY_ID", "x"),
            ("MY_LLM_KEY", "x"),
            ("TOKENIZERS_PARALLELISM", "false"),
        ]));
        let names: Vec<_> = kept.iter().map(|(k, _)| k.to_string_lossy()).collect();
        assert_eq!(names, ["PATH", "HOME", "TOKENIZERS_PARALLELISM"]);
    }

    #[test]
    fn config_adds_exclusions_and_include_wins() {
        let p = EnvPolicy::new(
            &["CORP_*".to_string()],
            &["GITHUB_TOKEN".to_string()],
            Vec::new(),
        )
        .unwrap();
        assert!(!p.allows(OsStr::new("CORP_VPN")));
        assert!(p.allows(OsStr::new("GITHUB_TOKEN")));
        assert!(!p.allows(OsStr::new("NPM_TOKEN")));
        assert!(EnvPolicy::new(&["[".to_string()], &[], Vec::new()).is_err());
        let values = p.withheld_values(os(&[("NPM_TOKEN", "npm_abcdefgh"), ("X_TOKEN", "short")]));
        assert_eq!(values, ["npm_abcdefgh"]);
    }
}
