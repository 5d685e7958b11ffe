//! Long JSON strings, written and read without serde_json's byte-at-a-time loops.
//!
//! A resumed session's history is mostly a few long strings (tool output, file contents), read
//! from the session file once and written into every request. serde_json escapes a string one
//! byte at a time through a table, and unescapes one into a scratch buffer that grows by
//! doubling (a fresh one for every line), then copies it out. Here the clean runs between
//! escapes are found 32 bytes at a time (one AVX2 comparison where the CPU has it) and copied
//! whole, a string's escaped length is counted without writing it, and a literal is unescaped
//! straight into a string of the right size. The bytes are exactly serde_json's: `"`, `\` and
//! the control characters are escaped, those with a short form (`\b \t \n \f \r`) by it and
//! the rest as `\u00xx`; nothing else is.
//!
//! A leaf: it imports nothing from the crate.

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

/// What [`escape_of`] says for every byte, looked up instead of matched.
const ESCAPES: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = escape_of(b as u8);
        b += 1;
    }
    table
};

/// Bytes looked at together when searching a string for the bytes that matter (escapes when
/// writing, backslashes when reading).
const LANES: usize = 32;

/// Bit `i` set when byte `i` of `chunk` needs escaping.
#[inline(always)]
fn dirty_mask(chunk: &[u8; LANES]) -> u32 {
    let mut mask = 0u32;
    for (i, &b) in chunk.iter().enumerate() {
        mask |= u32::from((b < 0x20) | (b == b'"') | (b == b'\\')) << i;
    }
    mask
}

/// Bit `i` set when byte `i` of `chunk` is a backslash.
#[inline(always)]
fn backslash_mask(chunk: &[u8; LANES]) -> u32 {
    let mut mask = 0u32;
    for (i, &b) in chunk.iter().enumerate() {
        mask |= u32::from(b == b'\\') << i;
    }
    mask
}

/// [`dirty_mask`] in three AVX2 comparisons (the compiler does not find them in the loop).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn dirty_mask_avx2(chunk: &[u8; LANES]) -> u32 {
    use std::arch::x86_64::{
        _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_min_epu8, _mm256_movemask_epi8,
        _mm256_or_si256, _mm256_set1_epi8,
    };
    // SAFETY: `chunk` is 32 readable bytes, all an unaligned 32-byte load reads.
    let v = unsafe { _mm256_loadu_si256(chunk.as_ptr().cast()) };
    // A byte is a control character when it is its own minimum with 0x1f.
    let control = _mm256_cmpeq_epi8(_mm256_min_epu8(v, _mm256_set1_epi8(0x1f)), v);
    let quote = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'"' as i8));
    let backslash = _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\\' as i8));
    _mm256_movemask_epi8(_mm256_or_si256(control, _mm256_or_si256(quote, backslash)))
        .cast_unsigned()
}

/// [`backslash_mask`] in one AVX2 comparison.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn backslash_mask_avx2(chunk: &[u8; LANES]) -> u32 {
    use std::arch::x86_64::{
        _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_set1_epi8,
    };
    // SAFETY: `chunk` is 32 readable bytes, all an unaligned 32-byte load reads.
    let v = unsafe { _mm256_loadu_si256(chunk.as_ptr().cast()) };
    _mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\\' as i8))).cast_unsigned()
}

/// Strings shorter than this (roles, ids, names: most of a body's strings by count) are
/// handled by the code inlined where they are written: a call into the vector code costs more
/// than it saves on them.
#[cfg(target_arch = "x86_64")]
const SHORT: usize = 2 * LANES;

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
    #[cfg(target_arch = "x86_64")]
    if bytes.len() >= SHORT && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU running this has AVX2, checked just above; the function needs
        // nothing else.
        return unsafe { write_escaped_avx2(out, bytes) };
    }
    write_escaped_portable(out, bytes);
}

/// [`write_escaped`] with AVX2 comparisons.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn write_escaped_avx2(out: &mut Vec<u8>, bytes: &[u8]) {
    escape_by(out, bytes, |chunk| dirty_mask_avx2(chunk));
}

/// [`write_escaped`] for any CPU.
#[inline(always)]
fn write_escaped_portable(out: &mut Vec<u8>, bytes: &[u8]) {
    escape_by(out, bytes, dirty_mask);
}

/// [`write_escaped`], with `mask` saying which bytes of each chunk need escaping.
#[inline(always)]
fn escape_by(out: &mut Vec<u8>, bytes: &[u8], mask: impl Fn(&[u8; LANES]) -> u32) {
    let mut w = Escaper::new(out, bytes);
    let mut rest = bytes;
    while let Some((chunk, tail)) = rest.split_first_chunk::<LANES>() {
        w.chunk(mask(chunk));
        rest = tail;
    }
    w.finish(rest);
}

/// Escapes text [`LANES`] bytes at a time, given which bytes of each chunk need escaping:
/// the clean run before each such byte is copied whole, so the cost goes with the number of
/// escapes (a newline every forty bytes in source code), not with the text's length.
struct Escaper<'a> {
    out: &'a mut Vec<u8>,
    bytes: &'a [u8],
    /// The first byte not yet copied.
    start: usize,
    /// Where the next chunk starts.
    at: usize,
}

impl<'a> Escaper<'a> {
    #[inline(always)]
    fn new(out: &'a mut Vec<u8>, bytes: &'a [u8]) -> Self {
        out.reserve(bytes.len());
        Escaper {
            out,
            bytes,
            start: 0,
            at: 0,
        }
    }

    /// The next chunk, with bit `i` of `mask` set when its byte `i` needs escaping.
    #[inline(always)]
    fn chunk(&mut self, mut mask: u32) {
        while mask != 0 {
            self.escape(self.at + mask.trailing_zeros() as usize);
            mask &= mask - 1;
        }
        self.at += LANES;
    }

    /// The bytes after the last whole chunk, then the rest of the text.
    #[inline(always)]
    fn finish(mut self, rest: &[u8]) {
        for (k, &b) in rest.iter().enumerate() {
            if ESCAPES[usize::from(b)] != 0 {
                self.escape(self.at + k);
            }
        }
        self.out.extend_from_slice(&self.bytes[self.start..]);
    }

    #[inline(always)]
    fn escape(&mut self, i: usize) {
        self.out.extend_from_slice(&self.bytes[self.start..i]);
        push_escape(self.out, self.bytes[i]);
        self.start = i + 1;
    }
}

/// Append the escape for `b`, a byte that needs one.
#[inline(always)]
fn push_escape(out: &mut Vec<u8>, b: u8) {
    match ESCAPES[usize::from(b)] {
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
}

/// How many bytes [`write_string`] would append for `s`.
pub fn string_len(s: &str) -> u64 {
    escaped_len(s.as_bytes()) + 2
}

/// How many bytes [`write_escaped`] would append for `bytes`.
pub fn escaped_len(bytes: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if bytes.len() >= SHORT && std::arch::is_x86_feature_detected!("avx2") {
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
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU running this has AVX2, checked just above; the function needs
        // nothing else.
        return unsafe { unescape_avx2(inner) };
    }
    unescape_portable(inner)
}

/// [`unescape_literal`] with AVX2 comparisons.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn unescape_avx2(inner: &str) -> Option<Unescaped> {
    unescape_by(inner, |chunk| backslash_mask_avx2(chunk))
}

/// [`unescape_literal`] for any CPU.
#[inline(always)]
fn unescape_portable(inner: &str) -> Option<Unescaped> {
    unescape_by(inner, backslash_mask)
}

/// The inside of a string literal unescaped, with `mask` saying where each chunk's
/// backslashes are.
#[inline(always)]
fn unescape_by(inner: &str, mask: impl Fn(&[u8; LANES]) -> u32) -> Option<Unescaped> {
    let mut u = Unescaper::new(inner);
    let mut rest = inner.as_bytes();
    while let Some((chunk, tail)) = rest.split_first_chunk::<LANES>() {
        u.chunk(mask(chunk))?;
        rest = tail;
    }
    u.finish(rest)
}

/// Unescapes the inside of a string literal [`LANES`] bytes at a time, given where each
/// chunk's backslashes are: the run before each escape is copied whole.
struct Unescaper<'a> {
    inner: &'a str,
    out: String,
    as_written: bool,
    /// The first byte not yet copied (past the last escape).
    start: usize,
    /// Where the next chunk starts.
    at: usize,
}

impl<'a> Unescaper<'a> {
    #[inline(always)]
    fn new(inner: &'a str) -> Self {
        Unescaper {
            inner,
            out: String::with_capacity(inner.len()),
            as_written: true,
            start: 0,
            at: 0,
        }
    }

    /// The next chunk, with bit `i` of `mask` set when its byte `i` is a backslash. `None`
    /// for an escape this does not decode.
    #[inline(always)]
    fn chunk(&mut self, mut mask: u32) -> Option<()> {
        while mask != 0 {
            self.unescape(self.at + mask.trailing_zeros() as usize)?;
            mask &= mask - 1;
        }
        self.at += LANES;
        Some(())
    }

    /// The bytes after the last whole chunk, then the rest of the text.
    #[inline(always)]
    fn finish(mut self, rest: &[u8]) -> Option<Unescaped> {
        for (k, &b) in rest.iter().enumerate() {
            if b == b'\\' {
                self.unescape(self.at + k)?;
            }
        }
        self.out.push_str(self.inner.get(self.start..)?);
        Some(Unescaped {
            text: self.out,
            as_written: self.as_written,
        })
    }

    /// The backslash at `i`.
    #[inline(always)]
    fn unescape(&mut self, i: usize) -> Option<()> {
        // A backslash that `start` has passed is the second half of an escape (`\\`).
        if i < self.start {
            return Some(());
        }
        // A backslash is ASCII, so both ends of the run are character boundaries.
        self.out.push_str(self.inner.get(self.start..i)?);
        let c = match self.inner.as_bytes().get(i + 1)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => {
                self.as_written = false;
                '/'
            }
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            _ => return None,
        };
        self.out.push(c);
        self.start = i + 2;
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Strings that exercise every escape, at every offset within a chunk of [`LANES`] bytes
    /// and across the chunks' seams.
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
    fn the_portable_code_writes_and_reads_what_the_vector_code_does() {
        for s in samples() {
            let mut vector = Vec::new();
            write_escaped(&mut vector, s.as_bytes());
            let mut portable = Vec::new();
            write_escaped_portable(&mut portable, s.as_bytes());
            assert_eq!(portable, vector, "{s:?}");
            let literal = serde_json::to_string(&s).unwrap();
            let inner = &literal[1..literal.len() - 1];
            assert_eq!(
                unescape_portable(inner),
                unescape_literal(&literal),
                "{s:?}"
            );
        }
    }

    #[test]
    fn escaped_backslashes_are_read_in_pairs_wherever_the_chunks_end() {
        for len in 0..3 * LANES {
            for at in 0..len {
                // Backslashes from `at` on: each pair is one escaped backslash, and a pair
                // may straddle a chunk's end.
                let text: String = (0..len).map(|i| if i < at { 'a' } else { '\\' }).collect();
                let literal = serde_json::to_string(&text).unwrap();
                let back = unescape_literal(&literal).unwrap();
                assert_eq!(back.text, text, "{literal}");
                assert!(back.as_written);
            }
        }
        // An escape whose backslash ends one chunk and whose letter starts the next.
        let seam = format!("\"{}a\\n\"", "\\\\".repeat(LANES / 2 - 1));
        assert_eq!(
            unescape_literal(&seam).map(|u| u.text),
            Some(format!("{}a\n", "\\".repeat(LANES / 2 - 1)))
        );
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
