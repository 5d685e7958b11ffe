//! Whether a project's held settings (`config::trust`) apply to this run.
//!
//! They apply when `--trust-project` is given (this run only; nothing is remembered, since the
//! person did not see the list) or when the trust store holds this folder with this exact hash
//! as trusted. Otherwise they are dropped, and one notice names the folder, lists what was
//! left out and says how to trust it. The interactive UI asks first ([`pending`]): the answer
//! is written to the store before the core starts, so [`decide`] then finds it.

use std::path::Path;

use crate::config::trust::Held;
use crate::config::trust::store::{Standing, Store};

/// The held settings apply (`true`), or not, with the notice to show. `accepted` is the hash
/// the person just said yes to (the interactive question), which applies only if the files
/// still hold exactly those settings.
pub fn decide(
    held: &Held,
    agent_dir: Option<&Path>,
    flag: bool,
    accepted: Option<&str>,
) -> (bool, Option<String>) {
    if held.is_empty() || flag || accepted == Some(held.hash().as_str()) {
        return (true, None);
    }
    let store = Store::load(agent_dir);
    let standing = store.standing(&held.folder, &held.hash());
    if standing == Standing::Trusted {
        return (true, None);
    }
    let reason = match standing {
        Standing::Changed => "they changed since you last answered for this folder",
        Standing::Declined => "you chose to go on without them",
        _ => "this folder is not trusted",
    };
    let mut text = format!(
        "{}: its project settings (.pi, .claude) ask for things that act on your behalf, ignored because {reason}:",
        held.folder.display()
    );
    for line in held.describe() {
        text.push_str("\n  - ");
        text.push_str(&line);
    }
    if let Some(problem) = store.problem() {
        text.push_str(&format!("\n(the trust store cannot be read: {problem})"));
    }
    if standing == Standing::Declined {
        let file = store
            .path()
            .map_or("trusted-projects.json".to_string(), |p| {
                p.display().to_string()
            });
        text.push_str(&format!(
            "\nTo be asked again, remove this folder from {file}; --trust-project uses them for \
             one run."
        ));
    } else {
        text.push_str(
            "\nTo use them, start `pi` here and trust the folder when asked, or pass \
             --trust-project (this run only).",
        );
    }
    (false, Some(text))
}

/// A folder whose held settings the person has not answered for (new, or changed since).
pub struct Pending {
    pub held: Held,
    /// It was answered for before, with other settings.
    pub changed: bool,
    store: Store,
}

impl Pending {
    /// What would run, where keys would go, what would loosen: one line each.
    pub fn lines(&self) -> Vec<String> {
        self.held.describe()
    }

    /// The hash of the settings asked about.
    pub fn hash(&self) -> String {
        self.held.hash()
    }

    /// Remember the answer (`trusted`, or going on without them) for these exact settings.
    pub fn record(mut self, trusted: bool) -> Result<(), String> {
        let hash = self.held.hash();
        self.store.record(&self.held.folder, &hash, trusted)
    }
}

/// The question to put before starting, if there is one. A config that cannot be read gives
/// none here (the start reports the error).
pub fn pending(agent_dir: Option<&Path>, cwd: &Path) -> Option<Pending> {
    let loaded = crate::config::load(agent_dir, cwd).ok()?;
    if loaded.held.is_empty() {
        return None;
    }
    let store = Store::load(agent_dir);
    let standing = store.standing(&loaded.held.folder, &loaded.held.hash());
    match standing {
        Standing::Trusted | Standing::Declined => None,
        Standing::Changed | Standing::Unknown => Some(Pending {
            held: loaded.held,
            changed: standing == Standing::Changed,
            store,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_or_a_trusted_hash_applies_the_rest_drop_with_one_notice() {
        let d = tempfile::tempdir().unwrap();
        let proj = d.path().join("proj");
        std::fs::create_dir_all(proj.join(".pi")).unwrap();
        std::fs::write(
            proj.join(".pi/config.toml"),
            "[mcp_servers.x]\ncommand = \"touch\"\nargs = [\"m\"]\n",
        )
        .unwrap();
        let agent = d.path().join("agent");
        let p = pending(Some(&agent), &proj).unwrap();
        assert!(!p.changed);
        assert_eq!(p.lines(), ["MCP server `x` runs: touch m"]);
        let held = p.held.clone();
        let (apply, notice) = decide(&held, Some(&agent), false, None);
        assert!(!apply);
        let notice = notice.unwrap();
        assert!(
            notice.contains("not trusted") && notice.contains("touch m"),
            "{notice}"
        );
        assert!(notice.contains("--trust-project"), "{notice}");
        assert_eq!(decide(&held, Some(&agent), true, None), (true, None));
        assert_eq!(
            decide(&held, Some(&agent), false, Some(&held.hash())),
            (true, None)
        );
        assert!(!decide(&held, Some(&agent), false, Some("sha256:other")).0);
        p.record(true).unwrap();
        assert!(pending(Some(&agent), &proj).is_none(), "answered");
        assert_eq!(decide(&held, Some(&agent), false, None), (true, None));
        std::fs::write(
            proj.join(".pi/config.toml"),
            "[mcp_servers.x]\ncommand = \"touch\"\nargs = [\"n\"]\n",
        )
        .unwrap();
        let p = pending(Some(&agent), &proj).unwrap();
        assert!(p.changed);
        let held = p.held.clone();
        assert!(
            decide(&held, Some(&agent), false, None)
                .1
                .unwrap()
                .contains("changed")
        );
        p.record(false).unwrap();
        assert!(pending(Some(&agent), &proj).is_none());
        let (apply, notice) = decide(&held, Some(&agent), false, None);
        assert!(!apply && notice.unwrap().contains("go on without them"));
    }
}
