//! Salvaging the entries a damaged line still holds.
//!
//! A session line that does not parse is usually one of three things: the torn end of a write
//! cut short (the loader skips it), a line with bytes that are not UTF-8 (a disk error, a
//! hand edit, a tool that wrote raw bytes into a file later pasted in), or two entries on one
//! line (a torn write followed by the next write without the newline that should separate
//! them, or two writers at once). [`salvage`] recovers what it can from the last two:
//!
//! * invalid UTF-8 is decoded lossily (each bad sequence becomes U+FFFD) and parsed again;
//! * a line holding several JSON values is split where each complete value ends; a fragment
//!   that is not a whole value is dropped, and the search for the next entry resumes at the next
//!   `{"type":"` (where every entry line starts).
//!
//! Only pieces that parse as a session header or as an entry of a known type are kept, so a
//! content block from inside a torn message (which also starts with `{"type":`) never turns
//! into an entry.

use serde::de::IgnoredAny;

use super::entry::{EntryKind, ParsedLine, parse_line};

/// What a damaged line gave up.
pub(crate) struct Salvaged {
    pub parsed: Vec<ParsedLine>,
    /// What was done, for the load warning.
    pub note: String,
    /// Part of the line was dropped (an entry before the salvaged ones may be missing).
    pub lost_fragment: bool,
}

const ENTRY_START: &[u8] = b"{\"type\":\"";

/// Recover the entries of a line `parse_line` refused; `None` when nothing usable is in it.
pub(crate) fn salvage(line: &[u8]) -> Option<Salvaged> {
    let lossy;
    let (bytes, replaced) = match std::str::from_utf8(line) {
        Ok(_) => (line, false),
        Err(_) => {
            lossy = String::from_utf8_lossy(line).into_owned();
            (lossy.as_bytes(), true)
        }
    };
    if replaced && let Ok(p) = parse_line(bytes).map_err(drop).and_then(usable) {
        return Some(Salvaged {
            parsed: vec![p],
            note: "bytes that are not UTF-8 were replaced with U+FFFD".into(),
            lost_fragment: false,
        });
    }
    let (parsed, lost_fragment) = split(bytes);
    if parsed.is_empty() {
        return None;
    }
    let mut note = format!("{} entries recovered from one line", parsed.len());
    if parsed.len() == 1 {
        note = "an entry recovered from a damaged line".into();
    }
    if lost_fragment {
        note.push_str("; a cut-off fragment was dropped");
    }
    if replaced {
        note.push_str("; bytes that are not UTF-8 were replaced with U+FFFD");
    }
    Some(Salvaged {
        parsed,
        note,
        lost_fragment,
    })
}

/// A parsed piece worth keeping: a header or an entry of a known type.
fn usable(p: ParsedLine) -> Result<ParsedLine, ()> {
    match &p {
        ParsedLine::Header(_) => Ok(p),
        ParsedLine::Entry(e) if !matches!(e.kind, EntryKind::Unknown { .. }) => Ok(p),
        ParsedLine::Entry(_) => Err(()),
    }
}

/// Every whole, usable entry in `bytes`, and whether anything was dropped.
fn split(bytes: &[u8]) -> (Vec<ParsedLine>, bool) {
    let mut out = Vec::new();
    let mut lost = false;
    let mut pos = skip_space(bytes, 0);
    while pos < bytes.len() {
        let rest = &bytes[pos..];
        let mut values = serde_json::Deserializer::from_slice(rest).into_iter::<IgnoredAny>();
        let end = match values.next() {
            Some(Ok(_)) => Some(values.byte_offset()),
            _ => None,
        };
        let piece = end.and_then(|end| {
            parse_line(&rest[..end])
                .ok()
                .and_then(|p| usable(p).ok())
                .map(|p| (p, end))
        });
        match piece {
            Some((p, end)) => {
                out.push(p);
                pos = skip_space(bytes, pos + end);
            }
            None => {
                lost = true;
                match memchr::memmem::find(&bytes[pos + 1..], ENTRY_START) {
                    Some(at) => pos += 1 + at,
                    None => break,
                }
            }
        }
    }
    (out, lost)
}

fn skip_space(bytes: &[u8], mut pos: usize) -> usize {
    while bytes.get(pos).is_some_and(u8::is_ascii_whitespace) {
        pos += 1;
    }
    pos
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str =
        r#"{"type":"session_info","id":"aaaaaaaa","parentId":null,"timestamp":"t","name":"a"}"#;
    const B: &str = r#"{"type":"message","id":"bbbbbbbb","parentId":"aaaaaaaa","timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}}"#;

    fn ids(s: &Salvaged) -> Vec<String> {
        s.parsed
            .iter()
            .map(|p| match p {
                ParsedLine::Entry(e) => e.id.clone().unwrap_or_default(),
                ParsedLine::Header(_) => "header".into(),
            })
            .collect()
    }

    #[test]
    fn two_entries_glued_together_are_both_kept() {
        let s = salvage(format!("{A}{B}").as_bytes()).unwrap();
        assert_eq!(ids(&s), ["aaaaaaaa", "bbbbbbbb"]);
        assert!(!s.lost_fragment);
        assert!(s.note.contains("2 entries"));
    }

    #[test]
    fn a_torn_write_before_an_entry_is_dropped_and_the_entry_kept() {
        // The torn write was a message cut inside a content block.
        let torn = &B[..B.find("\"hi\"").unwrap()];
        let s = salvage(format!("{torn}{A}").as_bytes()).unwrap();
        assert_eq!(ids(&s), ["aaaaaaaa"]);
        assert!(s.lost_fragment);
    }

    #[test]
    fn a_content_block_never_becomes_an_entry() {
        let torn = r#"{"type":"message","id":"cccccccc","parentId":null,"timestamp":"t","message":{"role":"assistant","content":[{"type":"toolCall","id":"call_1","name":"bash","arguments":{}}"#;
        assert!(salvage(torn.as_bytes()).is_none());
    }

    #[test]
    fn invalid_utf8_is_replaced_not_dropped() {
        let mut line = B.as_bytes().to_vec();
        let at = B.find("hi").unwrap();
        line.splice(at..at, [0xff, 0xfe]);
        let s = salvage(&line).unwrap();
        assert_eq!(ids(&s), ["bbbbbbbb"]);
        assert!(s.note.contains("U+FFFD"));
        let ParsedLine::Entry(e) = &s.parsed[0] else {
            panic!()
        };
        let EntryKind::Message(m) = &e.kind else {
            panic!()
        };
        let text = serde_json::to_string(m).unwrap();
        assert!(text.contains("\u{fffd}\u{fffd}hi"), "{text}");
    }

    #[test]
    fn garbage_gives_nothing() {
        assert!(salvage(b"not json at all").is_none());
        assert!(salvage(b"").is_none());
        assert!(salvage(&[0xff, 0x00, b'{']).is_none());
    }
}
