//! Syntax colours for fenced code blocks in assistant markdown, loaded on first use.
//!
//! syntect's bundled grammars and themes (pure Rust: `fancy-regex`, no Oniguruma) cost a few
//! milliseconds and a few megabytes to decode, so they live in a [`OnceLock`] that is filled
//! only when the markdown renderer meets the first fenced block whose info string names a
//! language ([`syntax_for`]). `pi --version`, print mode and answers without code never load
//! them; [`syntaxes_loaded`] tells tests whether that has happened.
//!
//! [`highlight`] turns a block's lines into coloured spans (foreground only: the renderer keeps
//! its own gutter and no theme background). Any parse error, an over-long line or a missing
//! grammar gives `None` and the caller draws the block in the plain code colour. A [`Memo`]
//! remembers the lines of the last block it coloured and the parser state after them, so
//! re-rendering a code block that is still streaming colours only its new lines.
//!
//! Colour choices are in two places only: the palette's `syntax` theme name and [`color`].

use std::sync::OnceLock;

use ratatui::style::{Color, Style};
use ratatui::text::Span;
use syntect::highlighting::{HighlightIterator, HighlightState, Highlighter, Theme, ThemeSet};
use syntect::parsing::{ParseState, ScopeStack, SyntaxReference, SyntaxSet};

/// The syntect theme used when the palette names one syntect does not bundle.
pub const FALLBACK_THEME: &str = "base16-ocean.dark";

/// Lines longer than this (minified code, data) are not coloured: the regex engine's cost
/// grows with line length and such lines are unreadable either way.
const MAX_LINE: usize = 4_096;

struct Assets {
    syntaxes: SyntaxSet,
    themes: ThemeSet,
}

impl Assets {
    /// The syntect theme of the current palette (dark or light).
    fn theme(&self) -> Option<&Theme> {
        let name = super::theme::current().syntax;
        self.themes
            .themes
            .get(name)
            .or_else(|| self.themes.themes.get(FALLBACK_THEME))
    }
}

static ASSETS: OnceLock<Option<Assets>> = OnceLock::new();

fn assets() -> Option<&'static Assets> {
    ASSETS
        .get_or_init(|| {
            Some(Assets {
                syntaxes: SyntaxSet::load_defaults_newlines(),
                themes: ThemeSet::load_defaults(),
            })
        })
        .as_ref()
}

/// Whether the grammars and theme have been loaded in this process.
pub fn syntaxes_loaded() -> bool {
    ASSETS.get().is_some()
}

/// The foreground colour for a syntect style. The one place theme colours become terminal
/// colours; backgrounds are ignored on purpose.
pub fn color(style: syntect::highlighting::Style) -> Color {
    let c = style.foreground;
    Color::Rgb(c.r, c.g, c.b)
}

/// Info strings that mean "no language": they never load the grammars.
const PLAIN: &[&str] = &[
    "text",
    "txt",
    "plain",
    "plaintext",
    "output",
    "log",
    "console",
];

/// The grammar for a fence's info string (` ```rust `, ` ```py title="x" `, ` ```{.sh} `):
/// its first word, matched as a file extension or a grammar name, with a few common aliases.
/// `None` for no language, a plain one, or one the bundled grammars lack.
pub fn syntax_for(info: &str) -> Option<&'static SyntaxReference> {
    let word = info
        .trim_start_matches(['{', '.', ' '])
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | '{' | '}' | '='))
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    if word.is_empty() || PLAIN.contains(&word.as_str()) {
        return None;
    }
    let token = match word.as_str() {
        "ts" | "typescript" | "tsx" | "jsx" | "mjs" | "cjs" | "javascript" => "js",
        "shell" | "zsh" | "bash" | "shell-session" | "sh" => "sh",
        "py3" | "python3" | "python" => "py",
        "rust" => "rs",
        "c++" => "cpp",
        "golang" => "go",
        "yml" => "yaml",
        "jsonc" | "json5" => "json",
        w => w,
    };
    assets()?.syntaxes.find_syntax_by_token(token)
}

/// The coloured lines of the last block highlighted, and the parser state after them and
/// before the last one (a streaming block's last line is usually the one still changing).
#[derive(Default)]
pub struct Memo {
    syntax: String,
    /// The syntect theme the remembered spans were coloured with.
    theme: &'static str,
    lines: Vec<String>,
    spans: Vec<Vec<Span<'static>>>,
    state: Option<(ParseState, HighlightState)>,
    before_last: Option<(ParseState, HighlightState)>,
}

/// Colour `lines` (one code line each, without newlines) as `syntax`, reusing `memo` when the
/// block starts with the lines it remembers. `None` when any line fails to highlight.
pub fn highlight(
    lines: &[&str],
    syntax: &'static SyntaxReference,
    memo: &mut Memo,
) -> Option<Vec<Vec<Span<'static>>>> {
    let result = highlight_with(lines, syntax, memo);
    if result.is_none() {
        *memo = Memo::default();
    }
    result
}

fn highlight_with(
    lines: &[&str],
    syntax: &'static SyntaxReference,
    memo: &mut Memo,
) -> Option<Vec<Vec<Span<'static>>>> {
    let assets = assets()?;
    if lines.iter().any(|l| l.len() > MAX_LINE) {
        return None;
    }
    let theme = assets.theme()?;
    let highlighter = Highlighter::new(theme);
    let theme_name = super::theme::current().syntax;
    let same_kind = memo.syntax == syntax.name && memo.theme == theme_name;
    let known = memo.lines.len();
    let same_start = |n: usize| n <= lines.len() && memo.lines[..n] == lines[..n];
    if same_kind && memo.state.is_some() && same_start(known) {
        // Everything remembered is still there: go on after it.
    } else if same_kind && known > 0 && memo.before_last.is_some() && same_start(known - 1) {
        // Only the last line remembered changed: colour it again from the state before it.
        memo.lines.pop();
        memo.spans.pop();
        memo.state = memo.before_last.take();
    } else {
        *memo = Memo {
            syntax: syntax.name.clone(),
            theme: theme_name,
            ..Memo::default()
        };
    }
    let (mut parse, mut colours) = match memo.state.take() {
        Some(state) => state,
        None => (
            ParseState::new(syntax),
            HighlightState::new(&highlighter, ScopeStack::new()),
        ),
    };
    let mut text = String::new();
    let count = lines.len();
    for (i, line) in lines.iter().enumerate().skip(memo.lines.len()) {
        if i + 1 == count {
            memo.before_last = Some((parse.clone(), colours.clone()));
        }
        text.clear();
        text.push_str(line);
        text.push('\n');
        let ops = parse.parse_line(&text, &assets.syntaxes).ok()?;
        let spans: Vec<Span<'static>> =
            HighlightIterator::new(&mut colours, &ops, &text, &highlighter)
                .filter_map(|(style, piece)| {
                    let piece = piece.trim_end_matches('\n');
                    (!piece.is_empty())
                        .then(|| Span::styled(piece.to_string(), Style::new().fg(color(style))))
                })
                .collect();
        memo.lines.push((*line).to_string());
        memo.spans.push(spans);
    }
    memo.state = Some((parse, colours));
    Some(memo.spans.clone())
}
