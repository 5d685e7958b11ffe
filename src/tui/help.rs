//! The text of `/help` and of key hints, made from the live keymap (keybindings.json over the
//! defaults) and the command table, so a remapped key is named by its new binding wherever pi
//! names it.

use super::keymap::{ACTIONS, Action, Keymap};
use super::slash::CommandTable;

/// Keys that are not actions of the keymap (fixed, or part of the text), as (keys, what).
fn fixed_keys(keys: &Keymap) -> Vec<(String, String)> {
    let mut out = vec![
        (
            "\\ Enter".to_string(),
            "new line (where Shift+Enter is not seen)".to_string(),
        ),
        ("@".to_string(), "pick a project file to attach".to_string()),
        (
            "!cmd, !!cmd".to_string(),
            "run a command (!!: kept out of the context)".to_string(),
        ),
        (
            "//text".to_string(),
            "send text that begins with /".to_string(),
        ),
        (
            "Ctrl+Home/End".to_string(),
            "top/bottom of the conversation".to_string(),
        ),
        ("wheel".to_string(), "scroll".to_string()),
    ];
    if let Some(esc) = keys.label(Action::Interrupt) {
        out.push((
            format!("{esc} {esc}"),
            "the session tree (on an empty editor)".to_string(),
        ));
    }
    out
}

/// What `/help` shows: every bound action with its keys as they are now, the fixed keys, the
/// commands, and what keybindings.json changed.
pub fn text(keys: &Keymap, commands: &CommandTable) -> String {
    let bound: Vec<(String, String)> = ACTIONS
        .iter()
        .filter_map(|s| Some((keys.labels(s.action)?, s.what.to_string())))
        .chain(fixed_keys(keys))
        .collect();
    let listed: Vec<(String, String)> = commands
        .all()
        .iter()
        .map(|c| {
            (
                format!("/{} {}", c.name, c.args).trim_end().to_string(),
                c.help.to_string(),
            )
        })
        .collect();
    let width = |rows: &[(String, String)]| {
        rows.iter()
            .map(|(k, _)| k.chars().count())
            .max()
            .unwrap_or(0)
            + 2
    };
    let mut s = String::from("Keys\n");
    let w = width(&bound);
    for (k, what) in &bound {
        s.push_str(&format!("  {k:<w$}{what}\n"));
    }
    s.push_str("Commands\n");
    let w = width(&listed);
    for (head, what) in &listed {
        s.push_str(&format!("  {head:<w$}{what}\n"));
    }
    let changes = keys.changes();
    if !changes.is_empty() {
        s.push_str("Changed in keybindings.json\n");
        for (k, spec) in changes {
            s.push_str(&format!("  {k}  {} ({})\n", spec.what, spec.id));
        }
    }
    s
}

/// An action's first key for a hint, or the command that does the same when it has none.
pub fn key_or(keys: &Keymap, action: Action, otherwise: &str) -> String {
    keys.label(action).unwrap_or_else(|| otherwise.to_string())
}

/// The start-up header's second line: the keys to know first.
pub fn header_keys(keys: &Keymap) -> String {
    let mut parts = vec!["/help commands".to_string()];
    for (action, what) in [
        (Action::Interrupt, "interrupt"),
        (Action::Exit, "quit"),
        (Action::ModelSelect, "model"),
    ] {
        if let Some(k) = keys.label(action) {
            parts.push(format!("{k} {what}"));
        }
    }
    parts.push("@ files".to_string());
    parts.push("!cmd shell".to_string());
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_names_every_bound_action_by_its_live_keys() {
        let (keys, warnings) = Keymap::with_user(r#"{ "app.model.select": "ctrl+y" }"#);
        assert!(!warnings.is_empty(), "ctrl+y was the yank key");
        let text = text(&keys, &CommandTable::default());
        assert!(text.contains("  Ctrl+Y "), "{text}");
        assert!(
            !text.lines().any(|l| l.trim_start().starts_with("Ctrl+L ")),
            "{text}"
        );
        for must in ["Ctrl+S ", "Alt+A ", "Ctrl+O ", "Alt+Enter ", "Ctrl+- "] {
            assert!(text.contains(must), "{must} missing:\n{text}");
        }
        assert!(text.contains("/export [file]"), "{text}");
        assert!(text.contains("HTML"), "{text}");
        let header = header_keys(&keys);
        assert_eq!(
            header,
            "/help commands · Esc interrupt · Ctrl+D quit · Ctrl+Y model · @ files · !cmd shell"
        );
    }

    #[test]
    fn an_action_with_no_key_left_is_not_listed_and_the_header_skips_it() {
        let (keys, _) = Keymap::with_user(r#"{ "app.model.select": [] }"#);
        assert!(!header_keys(&keys).contains("model"));
        assert!(!text(&keys, &CommandTable::default()).contains("choose a model\n  "));
        assert_eq!(key_or(&keys, Action::ModelSelect, "/model"), "/model");
    }
}
