//! Server-sent events: bytes in, `event`/`data` records out.
//!
//! The parser is incremental: feed it whatever chunks the network delivers (an event may be
//! split anywhere, even inside a UTF-8 character or a CRLF) and it yields each complete event
//! once its blank line arrives. Comments (`:` lines) are skipped, multi-line `data` is joined
//! with `\n`, and `\r\n`, `\n` and `\r` all end lines, as the SSE standard says.
//!
//! [`SseParser::progress`] counts what shows the server is alive: dispatched events and
//! comment lines (the keep-alives some servers send while a model thinks). Bytes that trickle
//! in without completing either are not progress, so an idle timeout measured on it ends a
//! stalled stream however slowly the bytes come.

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, empty when the server sent none.
    pub event: String,
    pub data: String,
}

#[derive(Default)]
pub(crate) struct SseParser {
    /// The start of a line whose end has not arrived yet.
    buf: Vec<u8>,
    /// The event being gathered; handed out by reference and cleared (its buffers are reused,
    /// so a long stream allocates nothing per event).
    current: SseEvent,
    has_data: bool,
    /// A `\r` ended the last chunk: a `\n` starting the next one belongs to it.
    pending_cr: bool,
    /// Events dispatched and comment lines read so far.
    progress: u64,
}

impl SseParser {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Feed a chunk; complete events are appended to `out`.
    #[cfg(test)]
    pub(crate) fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) {
        self.feed_with(chunk, |e| out.push(e.clone()));
    }

    /// Feed a chunk; `on_event` sees each complete event as it is dispatched.
    pub(crate) fn feed_with(&mut self, chunk: &[u8], mut on_event: impl FnMut(&SseEvent)) {
        let mut start = 0;
        if self.pending_cr && chunk.first() == Some(&b'\n') {
            start = 1;
        }
        self.pending_cr = false;
        while let Some(found) = memchr::memchr2(b'\n', b'\r', &chunk[start..]) {
            let end = start + found;
            if self.buf.is_empty() {
                self.line(&chunk[start..end], &mut on_event);
            } else {
                self.buf.extend_from_slice(&chunk[start..end]);
                let line = std::mem::take(&mut self.buf);
                self.line(&line, &mut on_event);
                self.buf = line;
                self.buf.clear();
            }
            start = end + 1;
            if chunk[end] == b'\r' {
                match chunk.get(end + 1) {
                    Some(b'\n') => start += 1,
                    Some(_) => {}
                    None => self.pending_cr = true,
                }
            }
        }
        self.buf.extend_from_slice(&chunk[start..]);
    }

    /// Events dispatched and comment lines read so far: it changes whenever the server
    /// completed something.
    pub(crate) fn progress(&self) -> u64 {
        self.progress
    }

    /// The stream ended: dispatch a final event that lacked its blank line.
    #[cfg(test)]
    pub(crate) fn finish(&mut self, out: &mut Vec<SseEvent>) {
        self.finish_with(|e| out.push(e.clone()));
    }

    /// [`SseParser::finish`] with a callback.
    pub(crate) fn finish_with(&mut self, mut on_event: impl FnMut(&SseEvent)) {
        if !self.buf.is_empty() {
            let line = std::mem::take(&mut self.buf);
            self.line(&line, &mut on_event);
        }
        self.dispatch(&mut on_event);
    }

    fn line(&mut self, line: &[u8], on_event: &mut impl FnMut(&SseEvent)) {
        if line.is_empty() {
            self.dispatch(on_event);
            return;
        }
        if line[0] == b':' {
            self.progress += 1;
            return;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(pos) => {
                let v = &line[pos + 1..];
                (&line[..pos], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        match field {
            b"event" => {
                self.current.event.clear();
                push_text(&mut self.current.event, value);
            }
            b"data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                push_text(&mut self.current.data, value);
                self.has_data = true;
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, on_event: &mut impl FnMut(&SseEvent)) {
        if self.has_data {
            self.progress += 1;
            on_event(&self.current);
            self.current.data.clear();
        }
        self.current.event.clear();
        self.has_data = false;
    }
}

/// Append bytes as text (invalid UTF-8 becomes U+FFFD).
fn push_text(into: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => into.push_str(text),
        Err(_) => into.push_str(&String::from_utf8_lossy(bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_chunks(input: &[u8], size: usize) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in input.chunks(size) {
            p.feed(c, &mut out);
        }
        p.finish(&mut out);
        out
    }

    #[test]
    fn events_survive_any_chunking() {
        let input = "event: a\ndata: {\"x\":1}\n\n: keep-alive\n\nevent: b\r\ndata: line1\r\ndata: line2\r\n\r\ndata: é\n\n".as_bytes();
        let expected = vec![
            SseEvent {
                event: "a".into(),
                data: "{\"x\":1}".into(),
            },
            SseEvent {
                event: "b".into(),
                data: "line1\nline2".into(),
            },
            SseEvent {
                event: "".into(),
                data: "é".into(),
            },
        ];
        for size in 1..input.len() {
            assert_eq!(parse_in_chunks(input, size), expected, "chunk size {size}");
        }
    }

    #[test]
    fn a_final_event_without_blank_line_is_kept_and_empty_ones_are_not() {
        assert_eq!(
            parse_in_chunks(b"event: only\n\ndata: [DONE]", 4),
            vec![SseEvent {
                event: "".into(),
                data: "[DONE]".into()
            }]
        );
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        assert_eq!(
            parse_in_chunks(b"data: a\xffb\n\n", 2),
            vec![SseEvent {
                event: "".into(),
                data: "a\u{fffd}b".into()
            }]
        );
    }

    #[test]
    fn progress_counts_whole_events_and_comments_not_bytes() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for b in b"data: {\"a\":1}\n" {
            p.feed(&[*b], &mut out);
        }
        assert_eq!(p.progress(), 0, "a line of an event is not progress yet");
        p.feed(b"\n", &mut out);
        assert_eq!(p.progress(), 1);
        p.feed(b": keep-alive", &mut out);
        assert_eq!(p.progress(), 1, "an unfinished comment is not progress");
        p.feed(b"\n\n\n", &mut out);
        assert_eq!(p.progress(), 2, "blank lines alone are not progress");
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn bare_cr_line_endings_work() {
        assert_eq!(
            parse_in_chunks(b"data: a\r\rdata: b\r\r", 3),
            vec![
                SseEvent {
                    event: "".into(),
                    data: "a".into()
                },
                SseEvent {
                    event: "".into(),
                    data: "b".into()
                },
            ]
        );
    }
}
