//! The trust question, asked on the plain terminal before the UI starts (like the
//! question about a session open in another pi): the folder's `.pi` settings that would act
//! for the person are listed, one line each, and the answer is remembered with their hash
//! (`setup::trust`). Without a terminal on stdin nothing is asked and they stay off.

use std::io::{BufRead, IsTerminal};

use crate::setup::trust::Pending;
use crate::visible::visible;

/// What the person chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrustChoice {
    /// Use the settings, now and in later runs (until they change).
    Trust,
    /// Go on without them (remembered until they change).
    Without,
    /// Leave pi.
    Quit,
}

/// The question's text.
pub fn question(p: &Pending) -> String {
    let mut text = format!(
        "pi: {} has project settings (.pi, .claude) that would act on your behalf{}:\n",
        visible(&p.held.folder.display().to_string()),
        if p.changed {
            " (they changed since you last answered)"
        } else {
            ""
        }
    );
    for line in p.lines() {
        text.push_str(&format!("  - {}\n", visible(&line)));
    }
    text.push_str(
        "\n  y  trust this folder: use them, now and next time (asked again if they change)\n  \
         n  go on without them (the default; not asked again until they change)\n  \
         q  quit\n",
    );
    text
}

/// The answer typed on a line (anything else is the default, going on without them).
pub fn parse(line: Option<&str>) -> TrustChoice {
    match line.map(|l| l.trim().to_ascii_lowercase()) {
        None => TrustChoice::Quit,
        Some(l) if l == "y" || l == "yes" => TrustChoice::Trust,
        Some(l) if l == "q" || l == "quit" => TrustChoice::Quit,
        Some(_) => TrustChoice::Without,
    }
}

/// Ask, if there is a terminal to ask on; `None` when there is not.
pub fn ask(p: &Pending) -> Option<TrustChoice> {
    if !std::io::stdin().is_terminal() {
        return None;
    }
    eprint!("{}Trust this folder? [y/N/q]: ", question(p));
    let mut line = String::new();
    let read = match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.as_str()),
    };
    Some(parse(read))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse_with_going_on_without_as_the_default() {
        assert_eq!(parse(Some("y\n")), TrustChoice::Trust);
        assert_eq!(parse(Some(" YES ")), TrustChoice::Trust);
        assert_eq!(parse(Some("\n")), TrustChoice::Without);
        assert_eq!(parse(Some("n")), TrustChoice::Without);
        assert_eq!(parse(Some("q")), TrustChoice::Quit);
        assert_eq!(parse(None), TrustChoice::Quit, "end of input");
    }
}
