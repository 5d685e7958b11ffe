//! The question `pi -c` asks when the newest session file of the folder has no valid header,
//! on the plain terminal before the full screen opens (like the question about a session open
//! in another pi): go on with the next newest session, continue in a repaired copy of the
//! damaged file (it is left as it is), or start a new session. Without a terminal on stdin
//! nothing is asked: pi stops and names the flags for each choice.

use std::io::BufRead;

use crate::host::view::UnreadableNewest;
use crate::visible::visible;

/// What the person chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Open the next newest session.
    Next,
    /// Continue in a repaired copy of the damaged file.
    Repair,
    /// Start a new session.
    New,
    /// Leave pi.
    Quit,
}

/// The choices that apply, in order, the first being the default.
fn offered(found: &UnreadableNewest) -> Vec<Choice> {
    let mut out = Vec::new();
    if found.next.is_some() {
        out.push(Choice::Next);
    }
    if found.repairable {
        out.push(Choice::Repair);
    }
    out.extend([Choice::New, Choice::Quit]);
    out
}

fn key(choice: Choice) -> char {
    match choice {
        Choice::Next => 'n',
        Choice::Repair => 'r',
        Choice::New => 's',
        Choice::Quit => 'q',
    }
}

/// The question's text (without the prompt).
pub fn question(found: &UnreadableNewest) -> String {
    let mut text = format!(
        "pi: the newest session of this folder has no valid session header ({}):\n  {}\n\n",
        visible(&found.reason),
        visible(&found.path.display().to_string())
    );
    for (i, choice) in offered(found).into_iter().enumerate() {
        let what = match choice {
            Choice::Next => {
                let next = found
                    .next
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                format!("open the next newest session: {}", visible(&next))
            }
            Choice::Repair => {
                "repair: continue in a repaired copy of it (the file is left as it is)".into()
            }
            Choice::New => "start a new session".into(),
            Choice::Quit => "quit".into(),
        };
        let default = if i == 0 { " (the default)" } else { "" };
        text.push_str(&format!("  {}  {what}{default}\n", key(choice)));
    }
    text
}

/// The answer typed on a line: a choice's letter, empty for the default; anything else (or
/// the end of input) quits.
pub fn parse(found: &UnreadableNewest, line: Option<&str>) -> Choice {
    let offered = offered(found);
    let Some(line) = line.map(|l| l.trim().to_ascii_lowercase()) else {
        return Choice::Quit;
    };
    if line.is_empty() {
        return offered[0];
    }
    offered
        .into_iter()
        .find(|c| line.len() == 1 && line.starts_with(key(*c)))
        .unwrap_or(Choice::Quit)
}

/// Ask on the terminal.
pub fn ask(found: &UnreadableNewest) -> Choice {
    let keys: Vec<String> = offered(found)
        .into_iter()
        .map(|c| key(c).to_string())
        .collect();
    eprint!("{}Choice [{}]: ", question(found), keys.join("/"));
    let mut line = String::new();
    let read = match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.as_str()),
    };
    parse(found, read)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn found(next: bool, repairable: bool) -> UnreadableNewest {
        UnreadableNewest {
            path: PathBuf::from("/s/new.jsonl"),
            reason: "its first line cannot be read".into(),
            next: next.then(|| PathBuf::from("/s/old.jsonl")),
            repairable,
        }
    }

    #[test]
    fn only_the_choices_that_apply_are_offered_the_first_by_default() {
        let all = found(true, true);
        let q = question(&all);
        assert!(
            q.contains("/s/new.jsonl") && q.contains("/s/old.jsonl"),
            "{q}"
        );
        assert!(q.contains("n  open the next newest session") && q.contains("(the default)"));
        assert!(q.contains("r  repair") && q.contains("s  start a new session"));
        assert_eq!(parse(&all, Some("\n")), Choice::Next);
        assert_eq!(parse(&all, Some("r\n")), Choice::Repair);
        assert_eq!(parse(&all, Some(" S ")), Choice::New);
        assert_eq!(parse(&all, Some("q")), Choice::Quit);
        assert_eq!(parse(&all, None), Choice::Quit, "end of input");
        assert_eq!(parse(&all, Some("yes")), Choice::Quit);

        // Nothing older and nothing to repair: a new session is the default.
        let bare = found(false, false);
        let q = question(&bare);
        assert!(!q.contains("next newest") && !q.contains("repair"), "{q}");
        assert_eq!(parse(&bare, Some("")), Choice::New);
        assert_eq!(parse(&bare, Some("n")), Choice::Quit, "not offered");
        assert_eq!(parse(&found(false, true), Some("")), Choice::Repair);
    }
}
