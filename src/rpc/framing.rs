//! Reading stdin as JSON lines: records end at LF only (a trailing CR is dropped), so the
//! Unicode line and paragraph separators inside JSON strings never split a record. A thread
//! reads and hands whole lines to the loop; the channel closes when stdin does.
//!
//! [`Splitter`] looks at each byte once: it searches only the bytes that just arrived for the
//! line break (never the unfinished line again), so a line costs time in proportion to its
//! length however it is cut into reads. A line longer than the limit is not kept: its bytes
//! are counted and dropped up to its line break, and the loop gets [`Input::TooLong`] in its
//! place, answers it with an error, and reads on.

use std::io::Read;

use tokio::sync::mpsc;

/// Default for `[rpc] max_line_bytes`: the longest command line read (64 MiB; a prompt with a
/// few large images fits).
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// What the reader hands the loop.
#[derive(Debug, PartialEq, Eq)]
pub enum Input {
    /// One record, without its line break.
    Line(Vec<u8>),
    /// A line of `bytes` bytes, over `limit`, was dropped.
    TooLong { bytes: usize, limit: usize },
}

/// Cuts a byte stream into records; see the module note.
pub struct Splitter {
    /// The unfinished line.
    buf: Vec<u8>,
    limit: usize,
    /// The current line is over the limit: how many of its bytes were dropped so far.
    dropped: Option<usize>,
}

impl Splitter {
    pub fn new(limit: usize) -> Self {
        Splitter {
            buf: Vec::new(),
            limit,
            dropped: None,
        }
    }

    /// Take in `chunk`; each record it completes goes to `out`.
    pub fn feed(&mut self, mut chunk: &[u8], out: &mut impl FnMut(Input)) {
        while !chunk.is_empty() {
            let newline = memchr::memchr(b'\n', chunk);
            let content = newline.unwrap_or(chunk.len());
            if let Some(dropped) = &mut self.dropped {
                *dropped += content;
                let Some(at) = newline else {
                    return;
                };
                let bytes = *dropped;
                self.dropped = None;
                out(self.too_long(bytes));
                chunk = &chunk[at + 1..];
                continue;
            }
            if self.buf.len() + content > self.limit {
                // Free the start at once; the rest is only counted.
                self.dropped = Some(self.buf.len());
                self.buf = Vec::new();
                continue;
            }
            let Some(at) = newline else {
                self.buf.extend_from_slice(chunk);
                return;
            };
            let mut record = std::mem::take(&mut self.buf);
            record.extend_from_slice(&chunk[..at]);
            if record.last() == Some(&b'\r') {
                record.pop();
            }
            out(Input::Line(record));
            chunk = &chunk[at + 1..];
        }
    }

    /// The input ended: a last line without LF counts.
    pub fn finish(&mut self, out: &mut impl FnMut(Input)) {
        if let Some(bytes) = self.dropped.take() {
            out(self.too_long(bytes));
        } else if !self.buf.is_empty() {
            let mut record = std::mem::take(&mut self.buf);
            if record.last() == Some(&b'\r') {
                record.pop();
            }
            out(Input::Line(record));
        }
    }

    fn too_long(&self, bytes: usize) -> Input {
        Input::TooLong {
            bytes,
            limit: self.limit,
        }
    }
}

/// Lines of stdin, as they complete, each at most `limit` bytes; closed at end of input.
pub fn read_stdin(limit: usize) -> mpsc::UnboundedReceiver<Input> {
    let (tx, rx) = mpsc::unbounded_channel();
    let spawned = std::thread::Builder::new()
        .name("pi-rpc-stdin".into())
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut splitter = Splitter::new(limit);
            let mut chunk = vec![0u8; 64 * 1024];
            // Becomes false once the loop stopped listening.
            let open = std::cell::Cell::new(true);
            let mut send = |input| {
                if tx.send(input).is_err() {
                    open.set(false);
                }
            };
            loop {
                match stdin.read(&mut chunk) {
                    Ok(0) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                    Ok(n) => splitter.feed(&chunk[..n], &mut send),
                }
                if !open.get() {
                    return;
                }
            }
            splitter.finish(&mut send);
        });
    if spawned.is_err() {
        // No thread, no input: the loop sees stdin as closed and shuts down cleanly.
        return mpsc::unbounded_channel().1;
    }
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(input: &[u8], piece: usize, limit: usize) -> Vec<Input> {
        let mut s = Splitter::new(limit);
        let mut out = Vec::new();
        for c in input.chunks(piece) {
            s.feed(c, &mut |i| out.push(i));
        }
        s.finish(&mut |i| out.push(i));
        out
    }

    fn line(text: &str) -> Input {
        Input::Line(text.as_bytes().to_vec())
    }

    #[test]
    fn records_end_at_lf_only() {
        let input = "{\"a\":\"x\u{2028}y\"}\r\n{\"b\":1}\n{\"c\"".as_bytes();
        for piece in 1..input.len() {
            assert_eq!(
                split(input, piece, 1024),
                vec![
                    line("{\"a\":\"x\u{2028}y\"}"),
                    line("{\"b\":1}"),
                    line("{\"c\"")
                ],
                "read {piece} bytes at a time"
            );
        }
    }

    #[test]
    fn a_line_over_the_limit_is_dropped_and_the_next_one_read() {
        let input = b"12345\n1234567890\nabc\n1234567";
        for piece in 1..input.len() {
            assert_eq!(
                split(input, piece, 5),
                vec![
                    line("12345"),
                    Input::TooLong {
                        bytes: 10,
                        limit: 5
                    },
                    line("abc"),
                    Input::TooLong { bytes: 7, limit: 5 },
                ],
                "read {piece} bytes at a time"
            );
        }
    }

    #[test]
    fn a_dropped_line_is_not_kept_in_memory() {
        let mut s = Splitter::new(10);
        let mut out = Vec::new();
        s.feed(&[b'x'; 8], &mut |i| out.push(i));
        s.feed(&[b'x'; 1000], &mut |i| out.push(i));
        assert!(out.is_empty());
        assert_eq!(s.buf.capacity(), 0);
        s.feed(b"x\n", &mut |i| out.push(i));
        assert_eq!(
            out,
            vec![Input::TooLong {
                bytes: 1009,
                limit: 10
            }]
        );
    }
}
