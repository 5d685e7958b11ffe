//! Server-sent events: bytes in, `event`/`data` records out.
//!
//! The parser is incremental: feed it whatever chunks the network delivers (an event may be
//! split anywhere, even inside a UTF-8 character or a CRLF) and it yields each complete event
//! once its blank line arrives. Comments (`:` lines) are skipped, multi-line `data` is joined
//! with `\n`, and `\r\n`, `\n` and `\r` all end lines, as the SSE standard says.

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, empty when the server sent none.
    pub event: String,
    pub data: String,
}

#[derive(Default)]
pub struct SseParser {
    buf: Vec<u8>,
    event: String,
    data: String,
    has_data: bool,
    /// A `\r` ended the last chunk: a `\n` starting the next one belongs to it.
    pending_cr: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed a chunk; complete events are appended to `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) {
        let mut start = 0;
        let mut i = 0;
        if self.pending_cr && chunk.first() == Some(&b'\n') {
            start = 1;
            i = 1;
        }
        self.pending_cr = false;
        while i < chunk.len() {
            let b = chunk[i];
            if b == b'\n' || b == b'\r' {
                self.buf.extend_from_slice(&chunk[start..i]);
                let line = std::mem::take(&mut self.buf);
                self.line(&line, out);
                if b == b'\r' {
                    if i + 1 < chunk.len() {
                        if chunk[i + 1] == b'\n' {
                            i += 1;
                        }
                    } else {
                        self.pending_cr = true;
                    }
                }
                start = i + 1;
            }
            i += 1;
        }
        self.buf.extend_from_slice(&chunk[start..]);
    }

    /// The stream ended: dispatch a final event that lacked its blank line.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if !self.buf.is_empty() {
            let line = std::mem::take(&mut self.buf);
            self.line(&line, out);
        }
        self.dispatch(out);
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.find(':') {
            Some(pos) => {
                let v = &text[pos + 1..];
                (&text[..pos], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&text[..], ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.has_data {
            out.push(SseEvent {
                event: std::mem::take(&mut self.event),
                data: std::mem::take(&mut self.data),
            });
        } else {
            self.event.clear();
        }
        self.has_data = false;
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
