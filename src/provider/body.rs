//! A request's JSON body: written whole when it is small, sent as it is written when it is not.
//!
//! Most requests are small, and are written once into one buffer ([`JsonBody::Whole`], a body
//! reqwest can send again on a fresh connection). A resumed session's request can be tens of
//! megabytes: writing it out with `to_vec` held the whole text beside the JSON value it came
//! from. Past [`WHOLE`] bytes the value is measured instead (a pass that writes nothing, for
//! the `content-length` header) and then written in pieces of about [`PIECE`] bytes as the
//! connection takes them, each array element of the top-level object (`messages`, `input`,
//! `contents`) dropped once written. Either way the bytes are exactly `serde_json::to_vec`'s.
//!
//! A wire format can also leave its long array out of the value altogether ([`LazyMember`]):
//! the value then holds an empty array at that member's place, and the elements are written
//! from their sources (the conversation's messages) each time the body is measured or
//! written, so a long history is never held as JSON values at all.

use std::io;
use std::sync::Arc;

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use crate::json_text;

/// Where a member's array elements come from when the body is written: each source (a
/// message) writes zero or more elements.
pub trait LazyItems: Send + Sync {
    /// How many sources there are.
    fn sources(&self) -> usize;
    /// Write the elements of source `i`, each through [`ElementSink::element`].
    fn write(&self, i: usize, out: &mut ElementSink<'_, '_>) -> io::Result<()>;
}

/// A top-level member whose array is written from [`LazyItems`] instead of from the value.
#[derive(Clone)]
pub struct LazyMember {
    /// The member's name; the value holds an empty array under it, where it belongs.
    pub key: &'static str,
    pub items: Arc<dyn LazyItems>,
}

impl std::fmt::Debug for LazyMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "LazyMember({}, {} sources)",
            self.key,
            self.items.sources()
        )
    }
}

impl PartialEq for LazyMember {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && Arc::ptr_eq(&self.items, &other.items)
    }
}

/// Where body text goes: into a buffer, or only counted (to measure the body without
/// holding it).
pub enum Out<'a> {
    Bytes(&'a mut Vec<u8>),
    Count(&'a mut u64),
}

impl Out<'_> {
    /// Append JSON text as it is.
    pub fn raw(&mut self, bytes: &[u8]) {
        match self {
            Out::Bytes(out) => out.extend_from_slice(bytes),
            Out::Count(n) => **n += bytes.len() as u64,
        }
    }

    /// Append a string literal (the same bytes serde_json writes, found faster: a history's
    /// long strings are most of a large body).
    pub fn string(&mut self, s: &str) {
        match self {
            Out::Bytes(out) => json_text::write_string(out, s),
            Out::Count(n) => **n += json_text::string_len(s),
        }
    }

    /// [`Out::string`] for a text whose literal length may be known already (see
    /// [`crate::agent::protocol::types::LiteralLen`]): measuring it then costs nothing.
    pub fn measured_string(&mut self, s: &str, literal_len: Option<u64>) {
        match (self, literal_len) {
            (Out::Count(n), Some(len)) => **n += len,
            (out, _) => out.string(s),
        }
    }

    /// Append the JSON text of `value` as a string literal (a tool call's `arguments`): the
    /// bytes of `serde_json::to_string(&value.to_string())`, without making either text. The
    /// value is walked here rather than through serde's serializer, which would hand each
    /// key, quote and comma to the escaper as a piece of its own (a long history has ten
    /// thousand calls, measured and then written).
    pub fn value_as_string(&mut self, value: &Value) -> io::Result<()> {
        self.raw(b"\"");
        self.escaped_value(value)?;
        self.raw(b"\"");
        Ok(())
    }

    /// The JSON text of `value`, escaped as the inside of a string literal.
    fn escaped_value(&mut self, value: &Value) -> io::Result<()> {
        match value {
            Value::Null => self.raw(b"null"),
            Value::Bool(true) => self.raw(b"true"),
            Value::Bool(false) => self.raw(b"false"),
            // Digits, signs, `.` and `e`: a number needs no escaping.
            Value::Number(n) => self.value(n)?,
            Value::String(s) => self.twice_escaped_string(s),
            Value::Array(items) => {
                self.raw(b"[");
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.raw(b",");
                    }
                    self.escaped_value(item)?;
                }
                self.raw(b"]");
            }
            Value::Object(map) => {
                self.raw(b"{");
                for (i, (key, item)) in map.iter().enumerate() {
                    if i > 0 {
                        self.raw(b",");
                    }
                    self.twice_escaped_string(key);
                    self.raw(b":");
                    self.escaped_value(item)?;
                }
                self.raw(b"}");
            }
        }
        Ok(())
    }

    /// A string literal inside JSON text that is itself inside a string literal: its quotes
    /// become `\"`, and its text is escaped twice (once for each literal).
    fn twice_escaped_string(&mut self, s: &str) {
        self.raw(b"\\\"");
        let bytes = s.as_bytes();
        if json_text::escaped_len(bytes) == bytes.len() as u64 {
            // Nothing to escape once, so nothing to escape twice (names, paths, numbers).
            self.raw(bytes);
        } else {
            let mut once = Vec::with_capacity(bytes.len() + 8);
            json_text::write_escaped(&mut once, bytes);
            match self {
                Out::Bytes(out) => json_text::write_escaped(out, &once),
                Out::Count(n) => **n += json_text::escaped_len(&once),
            }
        }
        self.raw(b"\\\"");
    }

    /// Append any value, written by serde_json.
    pub fn value(&mut self, value: &(impl Serialize + ?Sized)) -> io::Result<()> {
        serde_json::to_writer(self, value).map_err(io::Error::from)
    }
}

impl io::Write for Out<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.raw(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Ask the CPU to bring the memory at `p` into its cache; a hint only (nothing is read, and
/// any address will do). Lazy items are walked in order, twice (measured, then written), and
/// a loaded history's messages lie scattered between their long texts: fetched only when
/// reached, each was a wait on memory.
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch only hints the cache; it reads nothing and cannot fault, whatever
    // the address, and SSE (which has it) is part of every x86-64 CPU.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Writes array elements with the commas between them.
pub struct ElementSink<'a, 'b> {
    out: &'a mut Out<'b>,
    wrote_one: &'a mut bool,
}

impl ElementSink<'_, '_> {
    /// Write one element, through `write`.
    pub fn element(
        &mut self,
        write: impl FnOnce(&mut Out<'_>) -> io::Result<()>,
    ) -> io::Result<()> {
        if *self.wrote_one {
            self.out.raw(b",");
        }
        write(self.out)?;
        *self.wrote_one = true;
        Ok(())
    }
}

/// About how many bytes each piece of the body holds (one element may make it longer).
pub const PIECE: usize = 64 << 10;

/// Bodies up to this many bytes are written whole.
pub const WHOLE: usize = 1 << 20;

/// A request body, whole or in pieces.
pub enum JsonBody {
    Whole(Vec<u8>),
    /// The body's length in bytes, and its pieces in order.
    Pieces(u64, Pieces),
}

/// The body of `value`: whole when it takes at most [`WHOLE`] bytes (written once), else in
/// pieces (the partial first writing is dropped).
pub fn json_body(value: Value, lazy: Option<LazyMember>) -> io::Result<JsonBody> {
    if let Some(lazy) = lazy {
        return lazy_body(value, lazy);
    }
    let mut capped = Capped(Vec::new());
    match serde_json::to_writer(&mut capped, &value) {
        Ok(()) => Ok(JsonBody::Whole(capped.0)),
        Err(_) if capped.0.len() > WHOLE => {
            drop(capped);
            let (len, pieces) = json_pieces(value)?;
            Ok(JsonBody::Pieces(len, pieces))
        }
        Err(e) => Err(e.into()),
    }
}

/// A buffer that refuses to grow past [`WHOLE`] bytes (it takes the write that crosses it, so
/// its length then says why it failed).
struct Capped(Vec<u8>);

impl io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.0.len() > WHOLE {
            return Err(io::Error::other("larger than a whole body"));
        }
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The body of `value` in pieces: its length in bytes and its pieces, in order.
pub fn json_pieces(value: Value) -> io::Result<(u64, Pieces)> {
    let mut len = 0u64;
    Out::Count(&mut len).value(&value)?;
    Ok((len, Pieces::new(value, None).announced(len)))
}

/// A body with a lazy member: measured first (counted, nothing held), then written whole
/// when small, else piece by piece as the connection takes it.
fn lazy_body(value: Value, lazy: LazyMember) -> io::Result<JsonBody> {
    let mut len = 0u64;
    let mut measure = Pieces::new(value.clone(), Some(lazy.clone()));
    while measure.step(&mut Out::Count(&mut len))? {}
    if len > WHOLE as u64 {
        let pieces = Pieces::new(value, Some(lazy)).announced(len);
        return Ok(JsonBody::Pieces(len, pieces));
    }
    let mut whole = Vec::with_capacity(len as usize);
    let mut write = Pieces::new(value, Some(lazy));
    while write.step(&mut Out::Bytes(&mut whole))? {}
    Ok(JsonBody::Whole(whole))
}

/// Where the writing of the body stands.
enum Stage {
    /// Nothing written yet.
    Start(Value),
    /// Inside the top-level object: the members left, and whether one was written.
    Members {
        rest: serde_json::map::IntoIter,
        wrote_one: bool,
    },
    /// Inside a lazy member's array: the next source, whether an element was written, then
    /// the members left.
    Lazy {
        next: usize,
        wrote_one: bool,
        rest: serde_json::map::IntoIter,
    },
    /// Inside an array that is a member's value: its elements left, then the members left.
    Elements {
        elements: std::vec::IntoIter<Value>,
        wrote_one: bool,
        rest: serde_json::map::IntoIter,
    },
    Done,
}

/// The body's pieces, written one at a time (an iterator for `futures::stream::iter`).
pub struct Pieces {
    stage: Stage,
    lazy: Option<LazyMember>,
    /// The length sent in `content-length`, and how much has been written so far.
    announced: Option<u64>,
    written: u64,
}

impl Pieces {
    fn new(value: Value, lazy: Option<LazyMember>) -> Self {
        Pieces {
            stage: Stage::Start(value),
            lazy,
            announced: None,
            written: 0,
        }
    }

    /// Pieces that must add up to `len` bytes: a body that comes out longer or shorter than
    /// was measured ends in an error instead of a request the server would misread.
    fn announced(mut self, len: u64) -> Self {
        self.announced = Some(len);
        self
    }

    /// An error when what was written so far (everything, when `ended`) does not match the
    /// announced length.
    fn check_length(&self, ended: bool) -> io::Result<()> {
        match self.announced {
            Some(len) if self.written > len || (ended && self.written != len) => {
                Err(io::Error::other(format!(
                    "the request body came out at {} bytes where {len} were measured; it was \
                     not sent whole",
                    self.written
                )))
            }
            _ => Ok(()),
        }
    }

    /// Write the next part (a bracket, a member, an element) into `out`; false at the end.
    fn step(&mut self, out: &mut Out<'_>) -> io::Result<bool> {
        self.stage = match std::mem::replace(&mut self.stage, Stage::Done) {
            Stage::Done => return Ok(false),
            Stage::Start(Value::Object(map)) => {
                out.raw(b"{");
                Stage::Members {
                    rest: map.into_iter(),
                    wrote_one: false,
                }
            }
            Stage::Start(other) => {
                out.value(&other)?;
                Stage::Done
            }
            Stage::Members {
                mut rest,
                wrote_one,
            } => match rest.next() {
                None => {
                    out.raw(b"}");
                    Stage::Done
                }
                Some((key, value)) => {
                    if wrote_one {
                        out.raw(b",");
                    }
                    out.string(&key);
                    out.raw(b":");
                    let lazy = self.lazy.as_ref().is_some_and(|l| l.key == key);
                    match value {
                        _ if lazy => {
                            out.raw(b"[");
                            Stage::Lazy {
                                next: 0,
                                wrote_one: false,
                                rest,
                            }
                        }
                        Value::Array(elements) => {
                            out.raw(b"[");
                            Stage::Elements {
                                elements: elements.into_iter(),
                                wrote_one: false,
                                rest,
                            }
                        }
                        value => {
                            out.value(&value)?;
                            Stage::Members {
                                rest,
                                wrote_one: true,
                            }
                        }
                    }
                }
            },
            Stage::Lazy {
                next,
                mut wrote_one,
                rest,
            } => match self.lazy.as_ref() {
                Some(lazy) if next < lazy.items.sources() => {
                    let mut sink = ElementSink {
                        out,
                        wrote_one: &mut wrote_one,
                    };
                    lazy.items.write(next, &mut sink)?;
                    Stage::Lazy {
                        next: next + 1,
                        wrote_one,
                        rest,
                    }
                }
                _ => {
                    out.raw(b"]");
                    Stage::Members {
                        rest,
                        wrote_one: true,
                    }
                }
            },
            Stage::Elements {
                mut elements,
                wrote_one,
                rest,
            } => match elements.next() {
                None => {
                    out.raw(b"]");
                    Stage::Members {
                        rest,
                        wrote_one: true,
                    }
                }
                Some(element) => {
                    if wrote_one {
                        out.raw(b",");
                    }
                    out.value(&element)?;
                    Stage::Elements {
                        elements,
                        wrote_one: true,
                        rest,
                    }
                }
            },
        };
        Ok(true)
    }
}

impl Iterator for Pieces {
    type Item = io::Result<Bytes>;

    fn next(&mut self) -> Option<Self::Item> {
        // Room for a piece and the element that ends it, most times: growing it copies.
        let mut out = Vec::with_capacity(PIECE + PIECE / 2);
        let mut ended = false;
        while out.len() < PIECE {
            match self.step(&mut Out::Bytes(&mut out)) {
                Ok(true) => {}
                Ok(false) => {
                    ended = true;
                    break;
                }
                Err(e) => {
                    self.stage = Stage::Done;
                    return Some(Err(e));
                }
            }
        }
        self.written += out.len() as u64;
        if let Err(e) = self.check_length(ended) {
            self.stage = Stage::Done;
            self.announced = None;
            return Some(Err(e));
        }
        (!out.is_empty()).then(|| Ok(Bytes::from(out)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_value_written_as_a_string_is_its_json_text_quoted_byte_for_byte() {
        let values = [
            json!({}),
            json!([]),
            json!(null),
            json!({"path": "src/main.rs", "offset": 1, "limit": 400}),
            json!({"command": "echo \"hi\" \\ there\n\tdone\u{1}", "timeout": 2.5}),
            json!({"k\"ey\\": [1, -2, 3.25e10, true, false, null, "é😀/"], "n": {"deep": [[]]}}),
            json!({"old": "a\\b".repeat(40), "new": "\u{7f}\u{1f}\r\u{8}\u{c}"}),
            json!(["x", "y", "z"]),
            json!(18446744073709551615u64),
            json!(-9223372036854775808i64),
        ];
        for v in values {
            let expected = serde_json::to_string(&v.to_string()).unwrap();
            let mut bytes = Vec::new();
            Out::Bytes(&mut bytes).value_as_string(&v).unwrap();
            assert_eq!(String::from_utf8(bytes).unwrap(), expected, "{v}");
            let mut n = 0;
            Out::Count(&mut n).value_as_string(&v).unwrap();
            assert_eq!(n, expected.len() as u64, "{v}");
        }
    }

    fn written(value: &Value) -> (u64, Vec<Bytes>) {
        let (len, pieces) = json_pieces(value.clone()).unwrap();
        (len, pieces.collect::<io::Result<Vec<_>>>().unwrap())
    }

    #[test]
    fn a_small_body_is_written_whole_and_a_large_one_in_pieces() {
        let small = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        match json_body(small.clone(), None).unwrap() {
            JsonBody::Whole(bytes) => assert_eq!(bytes, serde_json::to_vec(&small).unwrap()),
            JsonBody::Pieces(..) => panic!("a small body went in pieces"),
        }
        let message = json!({"role": "user", "content": "x".repeat(1000)});
        let large = json!({"model": "m", "messages": vec![message; 2000]});
        match json_body(large.clone(), None).unwrap() {
            JsonBody::Pieces(len, pieces) => {
                let joined: Vec<u8> = pieces
                    .collect::<io::Result<Vec<_>>>()
                    .unwrap()
                    .iter()
                    .flat_map(|p| p.iter().copied())
                    .collect();
                assert_eq!(joined, serde_json::to_vec(&large).unwrap());
                assert_eq!(len, joined.len() as u64);
            }
            JsonBody::Whole(_) => panic!("a 2 MB body was held whole"),
        }
    }

    #[test]
    fn the_pieces_are_exactly_to_vecs_bytes_and_the_length_says_so() {
        let values = [
            json!({"model": "m", "stream": true, "messages": [
                {"role": "user", "content": "a \"quoted\"\nline\t\u{1}é😀"},
                {"role": "assistant", "content": [], "tool_calls": [{"id": "1"}]},
            ], "tools": [], "temperature": 0.5, "n": null, "o": {"k": [1, 2]}}),
            json!({}),
            json!({"empty": []}),
            json!({"a": [[1], []], "b": [{}]}),
            json!([1, 2, 3]),
            json!("text"),
            json!(null),
        ];
        for value in values {
            let (len, pieces) = written(&value);
            let joined: Vec<u8> = pieces.iter().flat_map(|p| p.iter().copied()).collect();
            let expected = serde_json::to_vec(&value).unwrap();
            assert_eq!(
                String::from_utf8(joined).unwrap(),
                String::from_utf8(expected.clone()).unwrap()
            );
            assert_eq!(len, expected.len() as u64);
        }
    }

    #[test]
    fn a_long_history_goes_out_in_pieces_none_much_longer_than_one_piece() {
        let message = json!({"role": "user", "content": "x".repeat(1000)});
        let value = json!({"model": "m", "messages": vec![message; 2000]});
        let (len, pieces) = written(&value);
        assert!(len > 2_000_000);
        assert!(pieces.len() > 25, "{} pieces", pieces.len());
        assert!(pieces.iter().all(|p| p.len() < PIECE + 1100));
    }

    #[test]
    fn pieces_that_do_not_add_up_to_the_announced_length_end_in_an_error() {
        let value = json!({"messages": ["y".repeat(3 * PIECE), "z"]});
        let (len, _) = written(&value);
        for announced in [len - 1, len + 1] {
            let pieces = Pieces::new(value.clone(), None).announced(announced);
            let result = pieces.collect::<io::Result<Vec<_>>>();
            let err = result.unwrap_err().to_string();
            assert!(
                err.contains(&format!("where {announced} were measured")),
                "{err}"
            );
        }
        let exact = Pieces::new(value.clone(), None).announced(len);
        assert!(exact.collect::<io::Result<Vec<_>>>().is_ok());
    }

    #[test]
    fn an_element_longer_than_a_piece_is_written_whole() {
        let value = json!({"messages": ["y".repeat(3 * PIECE), "z"]});
        let (len, pieces) = written(&value);
        let joined: Vec<u8> = pieces.iter().flat_map(|p| p.iter().copied()).collect();
        assert_eq!(joined, serde_json::to_vec(&value).unwrap());
        assert_eq!(len, joined.len() as u64);
    }
}
