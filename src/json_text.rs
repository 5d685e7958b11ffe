//! Long JSON strings, written and read without serde_json's byte-at-a-time loops.
//!
//! A resumed session's history is mostly a few long strings (tool output, file contents), read
//! from the session file once and written into every request. serde_json escapes a string one
//! byte at a time through a table, and unescapes one into a scratch buffer that grows by
//! doubling (a fresh one for every line), then copies it out. Here the clean runs between
//! escapes are found sixteen bytes at a time and copied whole, a string's escaped length is
//! counted without writing it, and a literal is unescaped straight into a string of the right
//! size. The bytes are exactly serde_json's: `"`, `\` and the control characters are escaped,
//! those with a short form (`\b \t \n \f \r`) by it and the rest as `\u00xx`; nothing else is.
//!
//! A leaf: it imports nothing from the crate.

use memchr::memchr;

/// What byte `b` becomes inside a string literal: itself (`0`), a short escape (the letter
/// after the backslash), or `u` for `\u00xx`.
const fn escape_of(b: u8) -> u8 {
    match b {
        b'"' => b'"',
        b'\\' => b'\\',
        0x08 => b'b',
        0x09 => b't',
        0x0a => b'n',
        0x0c => b'f',
        0x0d => b'r',
        0x00..=0x1f => b'u',
        _ => 0,
    }
}

/// True when none of the sixteen bytes needs escaping (written so the compiler can compare
/// them all at once).
#[inline]
fn clean(chunk: &[u8; 16]) -> bool {
    let mut dirty = false;
    for &b in chunk {
        dirty |= (b < 0x20) | (b == b'"') | (b == b'\\');
    }
    !dirty
}

/// The index of the first byte of `bytes[from..]` that needs escaping (`bytes.len()` when
/// none does).
#[inline]
fn next_escape(bytes: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = bytes.get(i..i + 16) {
        let chunk: &[u8; 16] = match chunk.try_into() {
            Ok(c) => c,
            Err(_) => break,
        };
        if !clean(chunk) {
            break;
        }
        i += 16;
    }
    while let Some(&b) = bytes.get(i) {
        if escape_of(b) != 0 {
            return i;
        }
        i += 1;
    }
    bytes.len()
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Append `s` as a JSON string literal (with its quotes), byte for byte what
/// `serde_json::to_writer` writes for it.
pub fn write_string(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    write_escaped(out, s.as_bytes());
    out.push(b'"');
}

/// Append the inside of a string literal for `bytes` (escaped, no quotes). Escaping is byte
/// by byte, so text may come in any number of pieces.
pub fn write_escaped(out: &mut Vec<u8>, bytes: &[u8]) {
    let mut start = 0;
    loop {
        let i = next_escape(bytes, start);
        out.extend_from_slice(&bytes[start..i]);
        let Some(&b) = bytes.get(i) else { break };
        match escape_of(b) {
            b'u' => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ]),
            letter => out.extend_from_slice(&[b'\\', letter]),
        }
        start = i + 1;
    }
}

/// How many bytes [`write_string`] would append for `s`.
pub fn string_len(s: &str) -> u64 {
    escaped_len(s.as_bytes()) + 2
}

/// How many bytes [`write_escaped`] would append for `bytes`.
pub fn escaped_len(bytes: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU running this has AVX2, checked just above; the function needs
        // nothing else.
        return unsafe { escaped_len_avx2(bytes) };
    }
    escaped_len_portable(bytes)
}

/// [`escaped_len_portable`] compiled for AVX2: the same loop in 32-byte vectors, twice as
/// fast (a resumed history's request body is counted before it is sent).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn escaped_len_avx2(bytes: &[u8]) -> u64 {
    escaped_len_portable(bytes)
}

/// [`escaped_len`] for any CPU.
#[inline(always)]
fn escaped_len_portable(bytes: &[u8]) -> u64 {
    // Summed in 16-bit counters over blocks of 8 KiB (at most 5 per byte: 40,960 fits),
    // a reduction the compiler turns into vector code (5 GB/s with the baseline's 16-byte
    // vectors, 2.3 times a 32-bit sum).
    let mut extra = 0u64;
    for block in bytes.chunks(8192) {
        let n = block
            .iter()
            .fold(0u16, |n, &b| n.wrapping_add(u16::from(extra_of(b))));
        extra += u64::from(n);
    }
    bytes.len() as u64 + extra
}

/// The bytes escaping adds for `b`: 1 for `"`, `\` and the short escapes, 5 for `\u00xx`
/// (branch-free, for [`string_len`]'s vector loop).
#[inline(always)]
fn extra_of(b: u8) -> u8 {
    let control = u8::from(b < 0x20);
    let short = u8::from(matches!(b, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d));
    let quote = u8::from((b == b'"') | (b == b'\\'));
    control * 5 - short * 4 + quote
}

/// A string literal's text, and whether the literal is exactly what [`write_string`] writes
/// for that text.
#[derive(Debug, PartialEq)]
pub struct Unescaped {
    pub text: String,
    /// True when the literal used no escape `write_string` would not (`\/`): its length is
    /// then the text's [`string_len`], known without counting.
    pub as_written: bool,
}

/// The text of a JSON string literal (quotes included) that a JSON parser has already
/// checked, unescaped into a string of its size. `None` when it is not a string literal or
/// holds a `\u` escape: the caller then decodes it the general way (those are rare, and
/// surrogate pairs are best left to the parser).
pub fn unescape_literal(literal: &str) -> Option<Unescaped> {
    let inner = literal.strip_prefix('"')?.strip_suffix('"')?;
    let bytes = inner.as_bytes();
    let mut out = String::with_capacity(inner.len());
    let mut as_written = true;
    let mut i = 0;
    while let Some(at) = memchr(b'\\', &bytes[i..]) {
        // A backslash is ASCII, so both slice ends are character boundaries.
        out.push_str(inner.get(i..i + at)?);
        let c = match bytes.get(i + at + 1)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => {
                as_written = false;
                '/'
            }
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            _ => return None,
        };
        out.push(c);
        i += at + 2;
    }
    out.push_str(inner.get(i..)?);
    Some(Unescaped {
        text: out,
        as_written,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Strings that exercise every escape, at every offset within a sixteen-byte chunk.
    fn samples() -> Vec<String> {
        let mut out: Vec<String> = vec![
            String::new(),
            "plain".into(),
            "a \"quoted\"\nline\t\u{1}é😀\\/\u{7f}".into(),
            (0u8..0x80).map(char::from).collect(),
            "x".repeat(100),
            // Longer than one counting block (8 KiB), escapes throughout.
            "a\"\\\n\u{1}\té".repeat(1000),
        ];
        for special in (0u8..0x20).map(char::from).chain(['"', '\\', '/', 'é']) {
            for at in 0..40 {
                let mut s = "a".repeat(at);
                s.push(special);
                s.push_str(&"b".repeat(37 - at % 37));
                s.push(special);
                out.push(s);
            }
        }
        out
    }

    #[test]
    fn both_ways_of_counting_agree() {
        for s in samples() {
            let portable = escaped_len_portable(s.as_bytes());
            assert_eq!(escaped_len(s.as_bytes()), portable, "{s:?}");
            assert_eq!(portable + 2, serde_json::to_vec(&s).unwrap().len() as u64);
        }
    }

    #[test]
    fn writing_matches_serde_json_byte_for_byte_and_the_length_is_exact() {
        for s in samples() {
            let expected = serde_json::to_vec(&s).unwrap();
            let mut out = b"prefix".to_vec();
            write_string(&mut out, &s);
            assert_eq!(&out[6..], &expected[..], "{s:?}");
            assert_eq!(string_len(&s), expected.len() as u64, "{s:?}");
        }
    }

    #[test]
    fn text_escaped_in_pieces_is_text_escaped_whole() {
        for s in samples() {
            let mut whole = Vec::new();
            write_string(&mut whole, &s);
            let mut pieces = b"\"".to_vec();
            let mut counted = 2;
            for piece in s.as_bytes().chunks(7) {
                write_escaped(&mut pieces, piece);
                counted += escaped_len(piece);
            }
            pieces.push(b'"');
            assert_eq!(pieces, whole, "{s:?}");
            assert_eq!(counted, whole.len() as u64, "{s:?}");
        }
    }

    #[test]
    fn reading_back_gives_the_string_or_defers_unicode_escapes() {
        for s in samples() {
            let literal = serde_json::to_string(&s).unwrap();
            match unescape_literal(&literal) {
                Some(back) => {
                    assert_eq!(back.text, s);
                    assert!(back.as_written, "{literal}");
                    assert_eq!(string_len(&back.text), literal.len() as u64);
                }
                // serde_json writes `\u00xx` only for control characters without a short form.
                None => assert!(literal.contains("\\u"), "{literal}"),
            }
        }
        let slash = unescape_literal(r#""a\/b""#).unwrap();
        assert_eq!(slash.text, "a/b");
        assert!(
            !slash.as_written,
            "`\\/` is longer than what is written for `/`"
        );
        assert_eq!(unescape_literal(r#""\ud83d\ude00""#), None);
        assert_eq!(unescape_literal("12"), None);
        assert_eq!(unescape_literal("\""), None);
    }
}
