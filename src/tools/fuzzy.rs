//! The forgiving comparison `edit` falls back to when `oldText` is not in the file verbatim.
//!
//! Models retype code rather than copy it, and the usual differences are invisible: trailing
//! spaces, curly quotes where the file has straight ones (or the reverse), an en dash for a
//! hyphen, a no-break space, a compatibility character (`ﬁ`, full-width forms), CRLF against LF.
//! [`normalize`] folds all of these the same way on both sides:
//!
//! * NFKC per character (compatibility forms to their plain equivalents);
//! * curly single and double quotes to `'` and `"`; Unicode dashes and the minus sign to `-`;
//!   typographic spaces to a plain space;
//! * carriage returns dropped; spaces and tabs at the end of each line dropped.
//!
//! Unlike a plain string transform, [`Normalized`] remembers where each byte of the folded text
//! came from, so a match found in folded text maps back to an exact range of the original and
//! only that range is replaced: the rest of the file keeps its bytes, quotes and spaces.

use std::ops::Range;

use unicode_normalization::UnicodeNormalization;

use super::context::is_odd_space;

/// Folded text and, for each of its bytes, the offset of the source character it came from.
pub(crate) struct Normalized {
    pub text: String,
    origin: Vec<usize>,
}

impl Normalized {
    /// The source range (in the string given to [`normalize`]) covering folded `range`.
    pub(crate) fn source_range(&self, source: &str, range: Range<usize>) -> Option<Range<usize>> {
        if range.is_empty() {
            return None;
        }
        let start = *self.origin.get(range.start)?;
        let last = *self.origin.get(range.end - 1)?;
        let width = source.get(last..)?.chars().next()?.len_utf8();
        Some(start..last + width)
    }
}

/// Fold `source`, keeping the byte map.
pub(crate) fn normalize(source: &str) -> Normalized {
    let mut folder = Folder::new(source.len(), true);
    for (offset, c) in source.char_indices() {
        fold_char(c, |f| folder.push(f, offset));
    }
    folder.finish()
}

/// Fold `source` without a byte map (for the needle).
pub(crate) fn normalize_plain(source: &str) -> String {
    let mut folder = Folder::new(source.len(), false);
    for c in source.chars() {
        fold_char(c, |f| folder.push(f, 0));
    }
    folder.finish().text
}

/// Feed the folded form of `c` to `emit`.
fn fold_char(c: char, mut emit: impl FnMut(char)) {
    match c {
        '\r' => {}
        c if c.is_ascii() => emit(c),
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => emit('\''),
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => emit('"'),
        '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{FE58}' | '\u{FE63}' | '\u{FF0D}' => emit('-'),
        c if is_odd_space(c) => emit(' '),
        c => {
            for n in std::iter::once(c).nfkc() {
                emit(n);
            }
        }
    }
}

/// Builds folded text, holding back spaces until it knows they are not at a line end.
struct Folder {
    text: String,
    origin: Vec<usize>,
    keep_map: bool,
    pending: Vec<(char, usize)>,
}

impl Folder {
    fn new(capacity: usize, keep_map: bool) -> Self {
        Folder {
            text: String::with_capacity(capacity),
            origin: if keep_map {
                Vec::with_capacity(capacity)
            } else {
                Vec::new()
            },
            keep_map,
            pending: Vec::new(),
        }
    }

    fn put(&mut self, c: char, offset: usize) {
        self.text.push(c);
        if self.keep_map {
            self.origin
                .extend(std::iter::repeat_n(offset, c.len_utf8()));
        }
    }

    fn push(&mut self, c: char, offset: usize) {
        match c {
            ' ' | '\t' => self.pending.push((c, offset)),
            '\n' => {
                self.pending.clear();
                self.put('\n', offset);
            }
            c => {
                for (p, o) in std::mem::take(&mut self.pending) {
                    self.put(p, o);
                }
                self.put(c, offset);
            }
        }
    }

    fn finish(self) -> Normalized {
        Normalized {
            text: self.text,
            origin: self.origin,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_quotes_dashes_spaces_and_trailing_whitespace() {
        assert_eq!(
            normalize_plain("say \u{201C}hi\u{201D} \u{2014} it\u{2019}s\u{00A0}ok   \r\nnext\t"),
            "say \"hi\" - it's ok\nnext"
        );
        assert_eq!(normalize_plain("\u{FB01}le"), "file");
    }

    #[test]
    fn maps_matches_back_to_source_bytes() {
        let src = "let s = \u{201C}caf\u{e9}\u{201D};   \nnext";
        let n = normalize(src);
        let needle = normalize_plain("let s = \"caf\u{e9}\";\nnext");
        let at = n.text.find(&needle).unwrap();
        let range = n.source_range(src, at..at + needle.len()).unwrap();
        assert_eq!(&src[range], src);

        let needle = normalize_plain("\"caf\u{e9}\"");
        let at = n.text.find(&needle).unwrap();
        let range = n.source_range(src, at..at + needle.len()).unwrap();
        assert_eq!(&src[range], "\u{201C}caf\u{e9}\u{201D}");
    }

    #[test]
    fn empty_range_maps_to_nothing() {
        let n = normalize("abc");
        assert!(n.source_range("abc", 1..1).is_none());
    }
}
