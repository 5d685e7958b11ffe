//! Tests of the markdown renderer: block by block, streamed against whole, tables at several widths.

use super::*;
use ratatui::style::{Color, Modifier};

fn plain(lines: &[Line<'static>]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect()
}

#[test]
fn the_line_still_being_written_is_drawn() {
    let mut cache = StreamCache::default();
    assert_eq!(
        plain(&cache.render("A single line without a newline", 40)),
        ["A single line without a newline"]
    );
    assert_eq!(
        plain(&cache.render("A single line without a newline, grow", 20)),
        ["A single line", "without a newline,", "grow"]
    );
    let out = cache.render("Done.\n\nNow **bol", 40);
    assert_eq!(plain(&out), ["Done.", "", "Now bol"]);
    assert!(out[2].spans[1].style.add_modifier.contains(Modifier::BOLD));
}

#[test]
fn renders_paragraphs_lists_and_code() {
    let md = "# Title\n\nSome *text* and `code`.\n\n- one\n- two\n  1. nested\n\n```rust\nfn main() {}\n```\n";
    let out = plain(&render(md, 40));
    assert_eq!(
        out,
        [
            "Title",
            "",
            "Some text and code.",
            "",
            "• one",
            "• two",
            "  1. nested",
            "",
            "```rust",
            "  fn main() {}",
        ]
    );
}

#[test]
fn list_items_wrap_under_their_text() {
    let out = plain(&render("- alpha beta gamma delta", 14));
    assert_eq!(out, ["• alpha beta", "  gamma delta"]);
}

#[test]
fn escapes_in_markdown_are_shown_not_run() {
    let out = plain(&render("hi \u{1b}[2Jthere", 40));
    assert_eq!(out, ["hi ␛[2Jthere"]);
}

/// A markdown answer with every kind of block the renderer knows, the awkward cases
/// included: loose and nested lists, code in lists, blank lines inside code, a setext
/// heading, an indented code block, an HTML block, tables, quotes and a rule.
fn long_document(sections: usize) -> String {
    let mut s = String::from(
        "Intro paragraph that wraps across the width of the screen a few times over.\n\n",
    );
    for i in 0..sections {
        s.push_str(&format!(
            "## Section {i}\n\nSome **bold** and *italic* text with `code` and a [link](https://e.com/{i}).\n\
             It goes on for a second line.\n\n\
             - item one\n- item two\n  continued\n  - nested {i}\n\n- loose item\n\n\
             1. first\n2. second\n\n   para in item\n\n   ```sh\n   echo {i}\n   ```\n\n\
             ```rust\nfn f{i}() -> u32 {{\n    let s = \"str {{\";\n\n    // comment\n    {i}\n}}\n```\n\n\
             > quoted *text*\n> more\n\n\
             | col | other |\n|-----|-------|\n| {i} | `x` |\n| y | z |\n\n\
             Setext {i}\n---------\n\n\
             ```python\ndef g{i}():\n    '''doc'''\n    return {i}\n```\n\n\
             ```nosuchlang\nplain {i}\n```\n\n\
             ```\nno language\n```\n\n\
             \x20   indented code {i}\n\n    more indented\n\n\
             <div>\nhtml {i}\n</div>\n\n\
             ***\n\nTail paragraph {i}.\n"
        ));
    }
    s
}

/// Small deterministic pseudo-random numbers (xorshift), so the test needs no crate.
fn chunk_sizes(seed: u64) -> impl Iterator<Item = usize> {
    let mut x = seed;
    std::iter::repeat_with(move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % 40) as usize + 1
    })
}

/// Stream `doc` in random chunks through one cache; at every step the rows must equal a
/// fresh full render of what the frame shows. Returns how many bytes the cache held at the
/// end.
fn stream_matches_full_render(doc: &str, width: usize, seed: u64) -> usize {
    let mut cache = StreamCache::default();
    let mut at = 0;
    let mut last = None;
    for size in chunk_sizes(seed) {
        if at >= doc.len() {
            break;
        }
        let mut end = (at + size).min(doc.len());
        while !doc.is_char_boundary(end) {
            end += 1;
        }
        at = end;
        let text = &doc[..at];
        if last == Some(text.len()) {
            continue;
        }
        last = Some(text.len());
        assert_eq!(
            cache.render(text, width),
            render(&open_line::shown(text), width),
            "width {width}, after {} bytes",
            text.len()
        );
    }
    assert_eq!(cache.render(doc, width), render(doc, width));
    cache.cached_len()
}

#[test]
fn streaming_cache_equals_a_full_render_at_every_step() {
    let doc = long_document(3);
    for (width, seed) in [(80, 0x9e37_79b9_7f4a_7c15), (33, 0x2545_f491_4f6c_dd1d)] {
        let cached = stream_matches_full_render(&doc, width, seed);
        // The cache really holds the finished blocks: all but the last one.
        assert!(cached > doc.len() - 40, "cached {cached} of {}", doc.len());
    }
}

#[test]
fn streaming_cache_handles_link_definitions_and_escapes() {
    // A reference definition resolves a link written before it.
    let refs = "See [the docs][d].\n\n- a\n- b\n\n[d]: https://example.com\n\nAfter.\n";
    stream_matches_full_render(refs, 40, 7);
    // An escape sequence that swallows newlines (OSC without terminator) and a stray CSI.
    let esc = "one\n\n\u{1b}]0;title\n\ntwo\u{7}\n\nthree \u{1b}[31mred\n\n```rust\nlet a = 1;\n```\n\nend\n";
    stream_matches_full_render(esc, 40, 11);
    let out = render(esc, 40);
    assert!(
        out.iter()
            .all(|l| l.spans.iter().all(|s| !s.content.contains('\u{1b}')))
    );
}

#[test]
fn streaming_cache_starts_over_on_a_new_width_or_text() {
    let doc = long_document(1);
    let mut cache = StreamCache::default();
    assert_eq!(cache.render(&doc, 50), render(&doc, 50));
    assert!(cache.cached_len() > 0);
    assert_eq!(cache.render(&doc, 30), render(&doc, 30));
    let other = "Other text\n\nwith two blocks\n";
    assert_eq!(cache.render(other, 30), render(other, 30));
    assert_eq!(cache.cached_len(), "Other text\n\n".len());
}

#[test]
fn the_cached_rows_are_shared_not_copied() {
    let doc = long_document(1);
    let mut cache = StreamCache::default();
    cache.rows(&doc, 60);
    let first = cache.rows(&doc, 60);
    let again = cache.rows(&doc, 60);
    assert!(first.shares_with(&again));
    assert_eq!(again.to_vec(), render(&doc, 60));
}

fn fg_of(lines: &[Line<'static>], text: &str) -> Vec<Option<Color>> {
    lines
        .iter()
        .flat_map(|l| l.spans.iter())
        .filter(|s| s.content.contains(text))
        .map(|s| s.style.fg)
        .collect()
}

#[test]
fn code_colours_follow_the_light_and_dark_palettes() {
    use crate::tui::theme::{self, Theme};
    let md = "```rust\nfn main() { let x = \"s\"; }\n```\n";
    let colours = |t: Theme| {
        theme::scoped(t, || {
            let out = render(md, 60);
            out[1]
                .spans
                .iter()
                .skip(1)
                .map(|s| s.style.fg)
                .collect::<Vec<_>>()
        })
    };
    let (dark, light) = (colours(Theme::DARK), colours(Theme::LIGHT));
    assert_ne!(dark, light, "the light palette has its own code colours");
    assert!(light.iter().all(|c| matches!(c, Some(Color::Rgb(..)))));
}

#[test]
fn known_languages_are_coloured_and_others_stay_plain() {
    let md = "```rust\nfn main() { let x = \"s\"; }\n```\n\n```nosuchlang\nfn main() {}\n```\n\n```\nfn main() {}\n```\n";
    let out = render(md, 60);
    // Rust: several distinct theme colours, none of them the plain code colour.
    let colours: std::collections::HashSet<_> =
        out[1].spans.iter().skip(1).map(|s| s.style.fg).collect();
    assert!(colours.len() >= 3, "{:?}", out[1]);
    assert!(colours.iter().all(|c| matches!(c, Some(Color::Rgb(..)))));
    assert!(out[1].spans.iter().all(|s| s.style.bg.is_none()));
    // Unknown language and no language: the one plain code colour.
    let plain = fg_of(&out[4..], "fn main() {}");
    assert_eq!(plain, [Some(Color::Yellow), Some(Color::Yellow)]);
}

#[test]
fn fence_info_strings_map_to_grammars() {
    let name = |info: &str| highlight::syntax_for(info).map(|s| s.name.as_str());
    assert_eq!(name("rust"), Some("Rust"));
    assert_eq!(name("rs"), Some("Rust"));
    assert_eq!(name("rust,ignore"), Some("Rust"));
    assert_eq!(name("py"), Some("Python"));
    assert_eq!(name("python title=\"x.py\""), Some("Python"));
    assert_eq!(name("{.sh}"), Some("Bourne Again Shell (bash)"));
    assert_eq!(name("bash"), Some("Bourne Again Shell (bash)"));
    assert_eq!(name("ts"), Some("JavaScript"));
    assert_eq!(name("JSON"), Some("JSON"));
    assert_eq!(name(""), None);
    assert_eq!(name("text"), None);
    assert_eq!(name("nosuchlang"), None);
}

#[test]
fn over_long_lines_and_odd_code_fall_back_or_colour_without_panicking() {
    let long = format!("```rust\nlet s = \"{}\";\n```\n", "x".repeat(5_000));
    let out = render(&long, 50);
    assert!(out.len() > 50);
    assert!(
        out[1..]
            .iter()
            .flat_map(|l| l.spans.iter().skip(1))
            .all(|s| s.style.fg == Some(Color::Yellow))
    );
    // Unbalanced strings, stray braces, control characters, odd Unicode.
    let odd =
        "```python\n'''\nnever closed \u{7} é 中文\n}}}))\n\tdef (\n```\n\n```rust\n\"\n/*\n```\n";
    let out = plain(&render(odd, 30));
    assert!(
        out.contains(&"  never closed ␇ é 中文".to_string()),
        "{out:?}"
    );
}

#[test]
fn code_blocks_keep_their_blank_lines_and_html_is_its_own_block() {
    let out = plain(&render("```\na\n\nb\n```\n", 20));
    assert_eq!(out, ["  a", "  ", "  b"]);
    let out = plain(&render("<div>\nx\n</div>\n\nafter\n", 20));
    assert_eq!(out, ["<div>", "x", "</div>", "", "after"]);
}

#[test]
fn an_unfinished_code_block_is_coloured_as_it_grows() {
    let full = "```python\ndef f():\n    return \"s\"\n\nprint(f())\n```\n";
    let mut cache = StreamCache::default();
    for end in 1..full.len() {
        let text = &full[..end];
        let shown = open_line::shown(text);
        assert_eq!(cache.render(text, 40), render(&shown, 40), "{text:?}");
    }
}

/// Open lines that could still change the blocks above them: a setext underline, an HTML
/// block start, a table's delimiter row, list items right under a paragraph, a fence.
const TRICKY: &str = "Intro line\n- item\n- two\n\nTitle\n---\n\nPara\n===\n\npara\n<div>\nx\n</div>\n\n\
    | a | b |\n|---|:-:|\n| 1 | 2 |\n\n1. one\n2) two\n\n> quote\ncontinued lazily\n\n\
    ```\ncode ``` not closing\n```\n\n    indented **code\n\nend **bold** and `code` *it*\n";

#[test]
fn streaming_byte_by_byte_equals_a_full_render() {
    for width in [40, 13] {
        let mut cache = StreamCache::default();
        for end in 1..=TRICKY.len() {
            let text = &TRICKY[..end];
            let shown = open_line::shown(text);
            assert_eq!(
                cache.render(text, width),
                render(&shown, width),
                "width {width}: {text:?}"
            );
        }
    }
    stream_matches_full_render(TRICKY, 30, 5);
}

/// A table at a width: its rows as text, the right edge marked to show the padding.
fn table_at(md: &str, width: usize) -> String {
    let mut out = format!("width {width}:\n");
    for line in plain(&render(md, width)) {
        assert!(wrap::width(&line) <= width, "{line:?} wider than {width}");
        out.push_str(&line);
        out.push_str("¶\n");
    }
    out
}

const TABLE: &str = "| Name | Size | Notes |\n|:-----|-----:|:-----:|\n\
    | alpha | 12 | the first one |\n\
    | beta, a longer name | 1,024 | wraps when the width is short of room |\n\
    | 表格 | 3 | 宽字符 |\n";

#[test]
fn tables_are_aligned_to_their_columns_at_every_width() {
    let shown: Vec<String> = [80, 44, 30, 16]
        .iter()
        .map(|&w| table_at(TABLE, w))
        .collect();
    insta::assert_snapshot!(shown.join("\n"));
}

#[test]
fn tables_in_quotes_and_lists_keep_their_gutter() {
    let md = "> | a | b |\n> |---|---|\n> | 1 | 2 |\n\n- item\n\n  | k | v |\n  |---|--:|\n  | x | 10 |\n";
    insta::assert_snapshot!(table_at(md, 30));
}

#[test]
fn a_table_streamed_row_by_row_equals_a_full_render() {
    for width in [80, 30, 16] {
        let mut cache = StreamCache::default();
        let text = format!("Intro.\n\n{TABLE}\nAfter.\n");
        for end in (1..=text.len()).filter(|&e| text.is_char_boundary(e)) {
            let part = &text[..end];
            assert_eq!(
                cache.render(part, width),
                render(&open_line::shown(part), width),
                "width {width}: {part:?}"
            );
        }
    }
}

#[test]
fn a_frame_without_new_text_reuses_the_last_rows() {
    let mut cache = StreamCache::default();
    let text = "Done.\n\nA paragraph still being wri";
    let first = cache.rows(text, 40);
    let again = cache.rows(text, 40);
    assert!(first.shares_with(&again));
    assert_eq!(again.len(), first.len());
}
