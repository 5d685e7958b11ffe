//! GPT-5 Harmony protocol-leak detection (spec agent-core §13.1).
//!
//! GPT-5 models are trained on OpenAI's Harmony chat format. Now and then one of them writes
//! pieces of that format into its visible output instead of making a real tool call: control
//! tokens such as `<|channel|>`, or a routing header like `commentary to=functions.bash`. Such
//! a reply is garbage for the user and poison for the context (the model copies it again on the
//! next turn), so the loop throws it away and samples the turn again.
//!
//! This module only decides. [`applies_to`] says which models are checked; [`detect`] looks at
//! a final reply's text and thinking blocks and reports the signal classes that fired:
//!
//! * `H`: a Harmony control token (`<|start|>`, `<|end|>`, `<|channel|>`, `<|message|>`,
//!   `<|call|>`, `<|return|>`). One is enough to trip.
//! * `M`: the marker `to=functions.<name>`. On its own it never trips (people write about
//!   Harmony too); it needs at least one co-signal close to it:
//!   * `C`: a channel word (`analysis`, `commentary`, `assistant`, `user`, `system`,
//!     `developer`, `tool`) right before the marker;
//!   * `G`: a known glitch token ([`GLITCH_TOKENS`]) within [`GLITCH_REACH`] characters;
//!   * `S`: two or more non-Latin letters in a row within [`SCRIPT_REACH`] characters, in
//!     otherwise ASCII surroundings (≥ 85 % ASCII over ±[`ASCII_REACH`] characters), the
//!     typical shape of a sampled-garbage token after the marker;
//!   * `B`: a body cascade: the word `code` shortly after the marker, then another marker
//!     within [`CASCADE_REACH`] characters;
//!   * `R`: fake result framing: `code_output` near the marker, then `Cell <n>:` within
//!     [`FRAMING_REACH`] characters.
//!
//! Anything inside a fenced code block (```` ``` ```` or `~~~`) is ignored. Tool-call arguments
//! are never looked at: an edit that legitimately contains the marker must run.

use std::fmt;
use std::ops::Range;

use crate::agent::protocol::stream::Model;
use crate::agent::protocol::types::{AssistantMessage, ContentBlock};

/// Re-samples of one turn before a leak fails it.
pub const MAX_RETRIES: u32 = 2;

/// Added to a configured temperature on each re-sample.
pub const TEMPERATURE_STEP: f64 = 0.05;

/// Harmony's control tokens (signal `H`).
pub const CONTROL_TOKENS: &[&str] = &[
    "<|start|>",
    "<|end|>",
    "<|channel|>",
    "<|message|>",
    "<|call|>",
    "<|return|>",
];

/// The routing marker (signal `M`), followed by a function name.
pub const MARKER: &str = "to=functions.";

/// Channel and role words that precede the marker in a Harmony header (signal `C`).
pub const CHANNEL_WORDS: &[&str] = &[
    "analysis",
    "commentary",
    "assistant",
    "user",
    "system",
    "developer",
    "tool",
];

/// Tokens seen in leaked GPT-5 output around the marker (signal `G`): the `constrain` token
/// that announces the argument format, and role and channel names run together once the
/// control tokens between them were stripped.
pub const GLITCH_TOKENS: &[&str] = &[
    "<|constrain|>",
    "assistantcommentary",
    "assistantanalysis",
    "assistantfinal",
];

/// How far (characters, either side) a glitch token may be from the marker.
pub const GLITCH_REACH: usize = 64;
/// How far (characters, either side) a non-Latin run may be from the marker.
pub const SCRIPT_REACH: usize = 32;
/// The surroundings (characters, either side) that must be mostly ASCII for `S`.
pub const ASCII_REACH: usize = 200;
/// Share of ASCII characters the surroundings need for `S`, in percent.
pub const ASCII_PERCENT: usize = 85;
/// How far after the marker the word `code` may start a cascade.
pub const CASCADE_CODE_REACH: usize = 40;
/// How far after `code` the next marker of a cascade may be.
pub const CASCADE_REACH: usize = 200;
/// How far (characters, either side) `code_output` may be from the marker.
pub const FRAMING_NEAR: usize = 200;
/// How far after `code_output` the `Cell <n>:` line may be.
pub const FRAMING_REACH: usize = 80;

/// Whether replies of `model` are checked: a GPT-5 model (`gpt-5…`, also behind a
/// `vendor/` prefix such as `openai/gpt-5-codex`) served over an OpenAI wire API, or any
/// model of the `openai-codex` provider.
pub fn applies_to(model: &Model) -> bool {
    let id = model.id.to_ascii_lowercase();
    let name = id.rsplit('/').next().unwrap_or(&id);
    if !name.starts_with("gpt-5") {
        return false;
    }
    matches!(
        model.api.as_str(),
        "openai-responses" | "openai-completions" | "azure-openai-responses"
    ) || model.provider == "openai-codex"
}

/// A set of signal classes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Signals(u8);

impl Signals {
    pub const H: Signals = Signals(1);
    pub const M: Signals = Signals(1 << 1);
    pub const C: Signals = Signals(1 << 2);
    pub const G: Signals = Signals(1 << 3);
    pub const S: Signals = Signals(1 << 4);
    pub const B: Signals = Signals(1 << 5);
    pub const R: Signals = Signals(1 << 6);

    const ALL: [(Signals, char); 7] = [
        (Signals::H, 'H'),
        (Signals::M, 'M'),
        (Signals::C, 'C'),
        (Signals::G, 'G'),
        (Signals::S, 'S'),
        (Signals::B, 'B'),
        (Signals::R, 'R'),
    ];

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn contains(self, other: Signals) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn insert(&mut self, other: Signals) {
        self.0 |= other.0;
    }

    /// Co-signals only (everything but `H` and `M`).
    fn co_signals(self) -> Signals {
        Signals(self.0 & !(Signals::H.0 | Signals::M.0))
    }
}

impl std::ops::BitOr for Signals {
    type Output = Signals;

    fn bitor(self, other: Signals) -> Signals {
        Signals(self.0 | other.0)
    }
}

impl fmt::Display for Signals {
    /// The letters joined with `+`, e.g. `M+C+G`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let letters: Vec<String> = Signals::ALL
            .iter()
            .filter(|(s, _)| self.contains(*s))
            .map(|(_, c)| c.to_string())
            .collect();
        f.write_str(&letters.join("+"))
    }
}

/// Where a leak was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Surface {
    Text,
    Thinking,
}

impl Surface {
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Text => "text",
            Surface::Thinking => "thinking",
        }
    }
}

/// A leak in a reply: the first block that trips, and what fired there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leak {
    pub surface: Surface,
    /// Index of the block in the message's content.
    pub block: usize,
    pub signals: Signals,
    /// Length (bytes) of the tripping block.
    pub len: usize,
}

impl Leak {
    /// The `errorMessage` of the discarded attempt.
    pub fn discarded_text(&self) -> String {
        format!(
            "Discarded: the reply leaked GPT-5 Harmony protocol text in its {} ({})",
            self.surface.as_str(),
            self.signals
        )
    }

    /// Why a turn fails after the last re-sample leaked too.
    pub fn persisted_text(&self) -> String {
        format!(
            "GPT-5 Harmony protocol leak persisted after {MAX_RETRIES} retries ({}, in the {})",
            self.signals,
            self.surface.as_str()
        )
    }
}

/// The first text or thinking block of `message` that trips, if any. Tool-call arguments are
/// not checked.
pub fn detect(message: &AssistantMessage) -> Option<Leak> {
    message.content.iter().enumerate().find_map(|(block, b)| {
        let (surface, text) = match b {
            ContentBlock::Text(t) => (Surface::Text, t.text.as_str()),
            ContentBlock::Thinking(t) => (Surface::Thinking, t.thinking.as_str()),
            _ => return None,
        };
        let signals = scan(text);
        (!signals.is_empty()).then_some(Leak {
            surface,
            block,
            signals,
            len: text.len(),
        })
    })
}

/// The signal classes that trip in `text` (empty when it does not trip).
pub fn scan(text: &str) -> Signals {
    if !text.contains("<|") && !text.contains(MARKER) {
        return Signals::default();
    }
    let fences = fenced_ranges(text);
    let outside = |at: usize| !fences.iter().any(|r| r.contains(&at));
    let mut fired = Signals::default();
    for token in CONTROL_TOKENS {
        if text.match_indices(token).any(|(at, _)| outside(at)) {
            fired.insert(Signals::H);
            break;
        }
    }
    let markers: Vec<Range<usize>> = markers(text).filter(|m| outside(m.start)).collect();
    let lower = text.to_ascii_lowercase();
    for (i, marker) in markers.iter().enumerate() {
        let mut co = Signals::default();
        if channel_word_before(text, marker.start) {
            co.insert(Signals::C);
        }
        if glitch_near(text, &lower, marker) {
            co.insert(Signals::G);
        }
        if script_run_near(text, marker) {
            co.insert(Signals::S);
        }
        if cascade_after(text, &lower, marker, &markers[i + 1..]) {
            co.insert(Signals::B);
        }
        if framing_near(text, &lower, marker) {
            co.insert(Signals::R);
        }
        if !co.co_signals().is_empty() {
            fired.insert(Signals::M);
            fired.insert(co);
        }
    }
    fired
}

/// Byte ranges of fenced code blocks (an unclosed fence runs to the end).
fn fenced_ranges(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut open: Option<(usize, char, usize)> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let trimmed = line.trim_start_matches(' ');
        if line.len() - trimmed.len() > 3 {
            continue;
        }
        let Some(ch) = trimmed.chars().next().filter(|c| *c == '`' || *c == '~') else {
            continue;
        };
        let run = trimmed.chars().take_while(|c| *c == ch).count();
        if run < 3 {
            continue;
        }
        match open {
            None => open = Some((start, ch, run)),
            Some((from, c, n)) if c == ch && run >= n => {
                out.push(from..offset);
                open = None;
            }
            Some(_) => {}
        }
    }
    if let Some((from, _, _)) = open {
        out.push(from..text.len());
    }
    out
}

/// Byte ranges of every `to=functions.<name>` (the name included).
fn markers(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    text.match_indices(MARKER).filter_map(|(at, _)| {
        let after = at + MARKER.len();
        let name = text[after..]
            .char_indices()
            .take_while(|(i, c)| {
                c.is_ascii_alphanumeric() || *c == '_' || (*i > 0 && matches!(c, '.' | '-'))
            })
            .last()
            .map(|(i, c)| i + c.len_utf8())?;
        Some(at..after + name)
    })
}

/// The byte index `n` characters before `at` (or 0).
fn back(text: &str, at: usize, n: usize) -> usize {
    if n == 0 {
        return at;
    }
    text[..at]
        .char_indices()
        .rev()
        .nth(n - 1)
        .map_or(0, |(i, _)| i)
}

/// The byte index `n` characters after `at` (or the end).
fn ahead(text: &str, at: usize, n: usize) -> usize {
    text[at..]
        .char_indices()
        .nth(n)
        .map_or(text.len(), |(i, _)| at + i)
}

fn channel_word_before(text: &str, at: usize) -> bool {
    let before = text[..at].trim_end();
    let word_start = before
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_ascii_alphabetic())
        .last()
        .map_or(before.len(), |(i, _)| i);
    let word = before[word_start..].to_ascii_lowercase();
    CHANNEL_WORDS.contains(&word.as_str())
}

fn glitch_near(text: &str, lower: &str, marker: &Range<usize>) -> bool {
    let from = back(text, marker.start, GLITCH_REACH);
    let to = ahead(text, marker.end, GLITCH_REACH);
    GLITCH_TOKENS.iter().any(|g| lower[from..to].contains(g))
}

/// A letter of a script other than Latin (CJK, Cyrillic, Greek, Arabic, ...).
fn non_latin_letter(c: char) -> bool {
    if c.is_ascii() || !c.is_alphabetic() {
        return false;
    }
    let latin = matches!(
        c as u32,
        0x00C0..=0x024F | 0x1E00..=0x1EFF | 0x2C60..=0x2C7F | 0xA720..=0xA7FF | 0xAB30..=0xAB6F
    );
    !latin
}

fn script_run_near(text: &str, marker: &Range<usize>) -> bool {
    let from = back(text, marker.start, SCRIPT_REACH);
    let to = ahead(text, marker.end, SCRIPT_REACH);
    let mut run = 0;
    let has_run = text[from..to].chars().any(|c| {
        run = if non_latin_letter(c) { run + 1 } else { 0 };
        run >= 2
    });
    if !has_run {
        return false;
    }
    let from = back(text, marker.start, ASCII_REACH);
    let to = ahead(text, marker.end, ASCII_REACH);
    let (mut total, mut ascii) = (0usize, 0usize);
    for c in text[from..to].chars() {
        total += 1;
        if c.is_ascii() {
            ascii += 1;
        }
    }
    total > 0 && ascii * 100 >= total * ASCII_PERCENT
}

/// `code` as a whole word shortly after the marker, then another marker soon after it.
fn cascade_after(text: &str, lower: &str, marker: &Range<usize>, later: &[Range<usize>]) -> bool {
    let to = ahead(text, marker.end, CASCADE_CODE_REACH);
    let window = &lower[marker.end..to];
    let code = window.match_indices("code").find(|(i, _)| {
        let before = window[..*i].chars().next_back();
        let after = window[i + 4..].chars().next();
        !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            && !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    });
    let Some((i, _)) = code else {
        return false;
    };
    let code_end = marker.end + i + 4;
    let limit = ahead(text, code_end, CASCADE_REACH);
    later.iter().any(|m| m.start >= code_end && m.start < limit)
}

/// `code_output` near the marker, followed closely by `Cell <digits>:`.
fn framing_near(text: &str, lower: &str, marker: &Range<usize>) -> bool {
    let from = back(text, marker.start, FRAMING_NEAR);
    let to = ahead(text, marker.end, FRAMING_NEAR);
    lower[from..to].match_indices("code_output").any(|(i, _)| {
        let start = from + i + "code_output".len();
        let end = ahead(text, start, FRAMING_REACH);
        lower[start..end].match_indices("cell").any(|(j, _)| {
            let rest = &lower[start + j + 4..end];
            let rest = rest.trim_start_matches(' ');
            let digits = rest.chars().take_while(char::is_ascii_digit).count();
            digits > 0 && rest[digits..].starts_with(':')
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::types::{TextContent, ThinkingContent, ToolCall};

    fn fired(text: &str) -> String {
        scan(text).to_string()
    }

    #[test]
    fn control_tokens_trip_alone() {
        assert_eq!(fired("Sure.<|channel|>analysis<|message|>look"), "H");
        assert_eq!(fired("done<|end|>"), "H");
        assert_eq!(fired("<|return|>"), "H");
    }

    #[test]
    fn marker_with_a_channel_word_trips() {
        assert_eq!(
            fired("Let me look.commentary to=functions.read {\"path\":\"a\"}"),
            "M+C"
        );
        assert_eq!(fired("analysis  to=functions.bash"), "M+C");
        assert_eq!(fired("Assistant to=functions.edit"), "M+C");
    }

    #[test]
    fn marker_with_a_glitch_token_trips() {
        assert_eq!(
            fired("ok assistantcommentary\nnow to=functions.bash json"),
            "M+G"
        );
        assert_eq!(fired("x to=functions.bash <|constrain|>json"), "M+G");
    }

    #[test]
    fn marker_with_a_non_latin_run_in_ascii_text_trips() {
        let text = "I will now list the files in the repository. to=functions.ls 天天 {\"path\":\".\"} \
                    and then read the README to see what the project does.";
        assert_eq!(fired(text), "M+S");
        // Mostly non-ASCII surroundings do not count as a glitch.
        let prose =
            "这是一个关于函数调用的说明，标记 to=functions.ls 在这里出现，后面还有很多中文文字。";
        assert_eq!(fired(prose), "");
    }

    #[test]
    fn marker_with_a_body_cascade_trips() {
        let text = "to=functions.bash code {\"cmd\":\"ls\"} then to=functions.read code {}";
        assert!(
            scan(text).contains(Signals::M | Signals::B),
            "{}",
            scan(text)
        );
        assert_eq!(fired(text), "M+B");
        assert_eq!(
            fired("x to=functions.bash code{\"cmd\":\"ls\"}\nto=functions.read"),
            "M+B"
        );
    }

    #[test]
    fn marker_with_fake_result_framing_trips() {
        let text = "Running to=functions.python now\ncode_output\nCell 3: 42";
        assert_eq!(fired(text), "M+R");
        assert_eq!(
            fired("to=functions.python code_output and then Cell x:"),
            ""
        );
    }

    #[test]
    fn a_marker_alone_does_not_trip() {
        assert_eq!(
            fired("The header looks like `to=functions.bash` in Harmony."),
            ""
        );
        assert_eq!(fired("route to=functions.read"), "");
        assert_eq!(fired("to=functions."), "");
    }

    #[test]
    fn fenced_blocks_are_ignored() {
        let text = "Example:\n```\ncommentary to=functions.bash\n<|call|>\n```\nThat is all.";
        assert_eq!(fired(text), "");
        let tilde = "~~~text\nanalysis to=functions.read <|message|>\n~~~";
        assert_eq!(fired(tilde), "");
        // An unclosed fence hides the rest of the text.
        assert_eq!(fired("```\nassistant to=functions.x"), "");
        // After the fence closes, leaks count again.
        assert_eq!(fired("```\nx\n```\ncommentary to=functions.x"), "M+C");
    }

    #[test]
    fn ordinary_non_ascii_text_does_not_trip() {
        assert_eq!(
            fired("这是普通的中文段落，没有任何协议标记。Привет, мир! Γειά σου."),
            ""
        );
        assert_eq!(fired("Café déjà vu — naïve façade"), "");
    }

    #[test]
    fn detection_covers_text_and_thinking_but_not_tool_arguments() {
        let mut m = AssistantMessage::empty("openai-responses", "openai", "gpt-5");
        m.content.push(ContentBlock::ToolCall(ToolCall {
            id: "c1".into(),
            name: "edit".into(),
            arguments: serde_json::json!({"newText": "commentary to=functions.bash <|call|>"}),
            intent: None,
            thought_signature: None,
        }));
        assert_eq!(detect(&m), None);
        m.content.push(ContentBlock::Thinking(ThinkingContent {
            thinking: "plan<|channel|>".into(),
            ..Default::default()
        }));
        let leak = detect(&m).unwrap();
        assert_eq!(leak.surface, Surface::Thinking);
        assert_eq!(leak.block, 1);
        assert!(
            leak.discarded_text().contains("(H)"),
            "{}",
            leak.discarded_text()
        );
        m.content.insert(
            0,
            ContentBlock::Text(TextContent {
                text: "tool to=functions.read".into(),
                text_signature: None,
                ..Default::default()
            }),
        );
        let leak = detect(&m).unwrap();
        assert_eq!((leak.surface, leak.block), (Surface::Text, 0));
        assert!(leak.persisted_text().contains("M+C"));
    }

    #[test]
    fn only_gpt5_on_openai_apis_is_checked() {
        let m = |provider: &str, api: &str, id: &str| Model::new(provider, api, id);
        assert!(applies_to(&m("openai", "openai-responses", "gpt-5")));
        assert!(applies_to(&m("openai", "openai-completions", "GPT-5-mini")));
        assert!(applies_to(&m(
            "azure-openai-responses",
            "azure-openai-responses",
            "gpt-5.1-codex"
        )));
        assert!(applies_to(&m(
            "openrouter",
            "openai-completions",
            "openai/gpt-5"
        )));
        assert!(applies_to(&m(
            "openai-codex",
            "codex-responses",
            "gpt-5-codex"
        )));
        assert!(!applies_to(&m("openai", "openai-responses", "gpt-4o")));
        assert!(!applies_to(&m("openai", "openai-responses", "o3")));
        assert!(!applies_to(&m(
            "anthropic",
            "anthropic-messages",
            "gpt-5-lookalike"
        )));
        assert!(!applies_to(&m("google", "google-generative-ai", "gemini")));
    }

    #[test]
    fn offsets_stay_on_char_boundaries() {
        assert_eq!(back("héllo", 3, 1), 1);
        assert_eq!(back("héllo", 3, 0), 3);
        assert_eq!(back("héllo", 3, 10), 0);
        assert_eq!(ahead("héllo", 1, 1), 3);
        assert_eq!(ahead("héllo", 1, 10), 6);
        // Multibyte text all around a marker must not panic.
        let _ = scan("ééééé to=functions.x ééééé code ééé to=functions.y code_output Cell 1:");
    }
}
