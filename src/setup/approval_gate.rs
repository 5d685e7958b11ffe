//! Building the approval gate from flags and config.
//!
//! The mode comes from `--approval`, else config (`approval = "…"` or `[approval] mode`), else
//! `auto`. The project's `.pi/config.toml` may only tighten what the person's own config says:
//! a stricter mode and more `deny` rules are taken, a looser mode and `allow` rules are
//! ignored with a warning (a repository should not be able to switch asking off).

use std::sync::Arc;

use crate::approval::rules::Rules;
use crate::approval::{ApprovalMode, Gate};
use crate::config::{ApprovalSetting, ApprovalTable, Config};
use crate::tools::ToolContext;

/// The agent folder's setting combined with the project's, as the module note says.
pub fn with_project(
    global: Option<ApprovalSetting>,
    project: ApprovalSetting,
    warnings: &mut Vec<String>,
) -> ApprovalSetting {
    let mut table = match global {
        Some(ApprovalSetting::Table(t)) => t,
        Some(ApprovalSetting::Mode(m)) => ApprovalTable {
            mode: Some(m),
            ..ApprovalTable::default()
        },
        None => ApprovalTable::default(),
    };
    let own = table
        .mode
        .as_deref()
        .and_then(ApprovalMode::parse)
        .unwrap_or_default();
    if let Some(m) = project.mode() {
        match ApprovalMode::parse(m) {
            Some(p) if p >= own => table.mode = Some(p.as_str().to_string()),
            Some(p) => warnings.push(format!(
                ".pi/config.toml: approval mode `{}` is looser than your own `{}`, so it is \
                 ignored (a project can only make approval stricter)",
                p.as_str(),
                own.as_str()
            )),
            None => warnings.push(format!(
                ".pi/config.toml: unknown approval mode `{m}` (ignored)"
            )),
        }
    }
    if !project.allow().is_empty() {
        warnings.push(
            ".pi/config.toml: approval.allow rules are ignored in a project's config (put them \
             in the agent folder's config.toml)"
                .into(),
        );
    }
    table.deny.extend(project.deny().iter().cloned());
    ApprovalSetting::Table(table)
}

/// The gate for this run; `flag` is `--approval`. Files in `agent_dir` are guarded from
/// `write` and `edit` like a project's trust files.
pub fn gate(
    flag: Option<&str>,
    config: &Config,
    ctx: Arc<ToolContext>,
    agent_dir: Option<std::path::PathBuf>,
    warnings: &mut Vec<String>,
) -> Result<Arc<Gate>, String> {
    let mode = match flag {
        Some(f) => ApprovalMode::parse(f).ok_or_else(|| {
            format!("--approval: unknown mode `{f}` (expected auto, ask or read-only)")
        })?,
        None => match config.approval.as_ref().and_then(|a| a.mode()) {
            Some(m) => ApprovalMode::parse(m).ok_or_else(|| {
                format!("config approval: unknown mode `{m}` (expected auto, ask or read-only)")
            })?,
            None => ApprovalMode::Auto,
        },
    };
    let (allow, deny) = match &config.approval {
        Some(a) => (a.allow(), a.deny()),
        None => (&[][..], &[][..]),
    };
    let (rules, rule_warnings) = Rules::new(allow, deny);
    warnings.extend(rule_warnings);
    Ok(Arc::new(
        Gate::new(mode, rules, ctx).with_agent_dir(agent_dir),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(mode: Option<&str>, allow: &[&str], deny: &[&str]) -> ApprovalSetting {
        ApprovalSetting::Table(ApprovalTable {
            mode: mode.map(str::to_string),
            allow: allow.iter().map(ToString::to_string).collect(),
            deny: deny.iter().map(ToString::to_string).collect(),
        })
    }

    #[test]
    fn a_project_can_only_tighten() {
        let mut w = Vec::new();
        let got = with_project(
            Some(ApprovalSetting::Mode("ask".into())),
            table(Some("auto"), &["bash"], &["bash:rm *"]),
            &mut w,
        );
        assert_eq!(got.mode(), Some("ask"));
        assert!(got.allow().is_empty());
        assert_eq!(got.deny(), ["bash:rm *"]);
        assert_eq!(w.len(), 2, "{w:?}");
        let mut w = Vec::new();
        let got = with_project(None, table(Some("read-only"), &[], &[]), &mut w);
        assert_eq!(got.mode(), Some("read-only"));
        assert!(w.is_empty());
    }

    #[test]
    fn the_flag_wins_and_bad_modes_are_errors() {
        let ctx = Arc::new(ToolContext::new("/tmp"));
        let mut config = Config {
            approval: Some(ApprovalSetting::Mode("read-only".into())),
            ..Config::default()
        };
        let mut w = Vec::new();
        assert_eq!(
            gate(Some("ask"), &config, ctx.clone(), None, &mut w)
                .unwrap()
                .mode(),
            ApprovalMode::Ask
        );
        assert_eq!(
            gate(None, &config, ctx.clone(), None, &mut w)
                .unwrap()
                .mode(),
            ApprovalMode::ReadOnly
        );
        assert!(gate(Some("never"), &config, ctx.clone(), None, &mut w).is_err());
        config.approval = Some(ApprovalSetting::Mode("sometimes".into()));
        assert!(gate(None, &config, ctx, None, &mut w).is_err());
    }
}
