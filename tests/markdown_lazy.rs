//! The syntax-highlighting grammars load on the first code block that names a language, and
//! not before: rendering markdown without such a block (plain fences included) leaves them
//! unloaded. A test binary of its own, so no other test has loaded them first.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use pi::tui::highlight::syntaxes_loaded;
use pi::tui::markdown::{StreamCache, render};

#[test]
fn grammars_load_only_for_a_code_block_with_a_language() {
    let md = "# Title\n\nText with `code`, a [link](https://e.com) and a list:\n\n- one\n- two\n\n\
              | a | b |\n|---|---|\n| 1 | 2 |\n\n```\nno language\n```\n\n```text\nplain\n```\n\n    indented\n";
    assert!(!syntaxes_loaded());
    let out = render(md, 60);
    assert!(out.len() > 10);
    let mut cache = StreamCache::default();
    for end in 0..md.len() {
        cache.render(&md[..end], 60);
    }
    assert!(!syntaxes_loaded());

    render("```rust\nfn main() {}\n```\n", 60);
    assert!(syntaxes_loaded());
}
