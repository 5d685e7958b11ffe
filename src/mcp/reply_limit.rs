//! A size limit on the JSON-RPC lines a stdio MCP server writes.
//!
//! [`ReplyLimit`] sits between the server's stdout and the SDK's line reader. Lines within the
//! limit pass through untouched, byte for byte as they arrive (nothing is buffered here). A line
//! that grows past the limit stops passing at once: a line break ends what the reader already
//! has (an unfinished JSON text, which the SDK skips as unparsable), the rest of the line is
//! read and thrown away, and when it ends, if it was the reply to one of pi's requests, an
//! error reply with the same `id` takes its place. The call that waited for it fails at once
//! with [`TooLarge`]'s message instead of waiting out its timeout, and memory never holds more
//! than the limit of one line.
//!
//! Finding the `id` needs no parsing: [`Outline`] follows the line's top-level object byte by
//! byte (strings, escapes and nesting) and keeps the value of its `id` key and whether it has
//! `result` or `error` (a reply) or `method` (the server's own request or notification, which
//! gets no made-up answer and is only dropped).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, ReadBuf};

/// Default for `max_reply_bytes`: the largest line a server may send (16 MiB, the SDK's own
/// limit for HTTP replies).
pub(crate) const DEFAULT_MAX_REPLY_BYTES: usize = 16 * 1024 * 1024;

/// The JSON-RPC error code of the made-up reply (implementation-defined server error range).
const CODE: i64 = -32000;
/// Marks the made-up reply in its `data`, so the caller can tell it from a server's error.
const MARK: &str = "piReplyTooLarge";

/// Bytes read from the server at a time.
const CHUNK: usize = 64 * 1024;

/// A reply larger than the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TooLarge {
    /// The whole line's length in bytes.
    pub bytes: usize,
    pub limit: usize,
}

impl TooLarge {
    /// The made-up error reply for request `id`.
    fn reply(self, id: &Value) -> Vec<u8> {
        let mut line = json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": CODE,
                "message": format!("reply of {} bytes, over the limit of {}", self.bytes, self.limit),
                "data": { MARK: { "bytes": self.bytes, "limit": self.limit } },
            },
        })
        .to_string()
        .into_bytes();
        line.push(b'\n');
        line
    }

    /// The limit's error in an SDK error's `data`, if it is one of these.
    pub(crate) fn from_data(data: Option<&Value>) -> Option<TooLarge> {
        let d = data?.get(MARK)?;
        let n = |k: &str| d.get(k).and_then(Value::as_u64).map(|v| v as usize);
        Some(TooLarge {
            bytes: n("bytes")?,
            limit: n("limit")?,
        })
    }
}

/// The server's stdout, with lines past `limit` replaced as the module note says.
pub(crate) struct ReplyLimit<R> {
    inner: R,
    limit: usize,
    buf: Box<[u8]>,
    /// Unprocessed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    /// Bytes of the current line so far (not counting its line break).
    line: usize,
    /// The current line went over the limit: its bytes are thrown away until it ends.
    skipping: bool,
    outline: Outline,
    /// Bytes of pi's own to hand out before anything else.
    own: Vec<u8>,
    own_at: usize,
    eof: bool,
}

impl<R> ReplyLimit<R> {
    pub(crate) fn new(inner: R, limit: usize) -> Self {
        ReplyLimit {
            inner,
            limit,
            buf: vec![0; CHUNK].into_boxed_slice(),
            start: 0,
            end: 0,
            line: 0,
            skipping: false,
            outline: Outline::default(),
            own: Vec::new(),
            own_at: 0,
            eof: false,
        }
    }

    /// Queue pi's own bytes.
    fn say(&mut self, bytes: &[u8]) {
        if self.own_at == self.own.len() {
            self.own.clear();
            self.own_at = 0;
        }
        self.own.extend_from_slice(bytes);
    }

    /// The oversized line ended (`bytes` long): answer it if it was a reply.
    fn ended_oversized(&mut self, bytes: usize) {
        let too_large = TooLarge {
            bytes,
            limit: self.limit,
        };
        if let Some(id) = self.outline.reply_id() {
            let reply = too_large.reply(&id);
            self.say(&reply);
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for ReplyLimit<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        dst: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.own_at < this.own.len() {
                let n = (this.own.len() - this.own_at).min(dst.remaining());
                dst.put_slice(&this.own[this.own_at..this.own_at + n]);
                this.own_at += n;
                return Poll::Ready(Ok(()));
            }
            if this.start == this.end {
                if this.eof {
                    return Poll::Ready(Ok(()));
                }
                let mut read = ReadBuf::new(&mut this.buf);
                ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
                let n = read.filled().len();
                this.start = 0;
                this.end = n;
                if n == 0 {
                    this.eof = true;
                    continue;
                }
            }
            let avail = &this.buf[this.start..this.end];
            let newline = memchr::memchr(b'\n', avail);
            // The rest of the current line in this chunk, and its line break when there.
            let content = newline.unwrap_or(avail.len());
            let piece = newline.map_or(avail.len(), |i| i + 1);
            if this.skipping {
                this.outline.feed(&avail[..piece]);
                this.start += piece;
                this.line += content;
                if newline.is_some() {
                    let bytes = this.line;
                    this.ended_oversized(bytes);
                    this.skipping = false;
                    this.line = 0;
                    this.outline = Outline::default();
                }
                continue;
            }
            if this.line + content > this.limit {
                this.skipping = true;
                if this.line > 0 {
                    // End the part the reader has: it is dropped as unreadable.
                    this.say(b"\n");
                }
                continue;
            }
            if dst.remaining() == 0 {
                return Poll::Ready(Ok(()));
            }
            let n = piece.min(dst.remaining());
            let passed = &avail[..n];
            this.outline.feed(passed);
            dst.put_slice(passed);
            this.start += n;
            if newline.is_some() && n == piece {
                this.line = 0;
                this.outline = Outline::default();
            } else {
                this.line += n;
            }
            return Poll::Ready(Ok(()));
        }
    }
}

/// The longest `id` kept (a longer one is not answered).
const MAX_ID: usize = 256;

/// Follows a JSON text's top-level object byte by byte; see the module note.
#[derive(Debug, Default)]
struct Outline {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// At depth 1, the next string is a key.
    want_key: bool,
    /// Inside a depth-1 key: its first bytes.
    in_key: bool,
    key: Vec<u8>,
    /// The last depth-1 key read, until its value starts.
    last_key: Option<Key>,
    /// Reading the `id` value (its raw JSON text goes to `id`).
    in_id: bool,
    id: Vec<u8>,
    id_overflow: bool,
    reply: bool,
    request: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Id,
    Other,
}

impl Outline {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    fn keep_id(&mut self, b: u8) {
        if self.id.len() < MAX_ID {
            self.id.push(b);
        } else {
            self.id_overflow = true;
        }
    }

    fn byte(&mut self, b: u8) {
        if self.in_string {
            let closing = !self.escaped && b == b'"';
            self.escaped = !self.escaped && b == b'\\';
            if self.in_key {
                if closing {
                    self.in_key = false;
                    self.end_key();
                } else if self.key.len() <= 8 {
                    self.key.push(b);
                }
            } else if self.in_id {
                self.keep_id(b);
                if closing {
                    self.in_id = false;
                }
            }
            if closing {
                self.in_string = false;
            }
            return;
        }
        if self.in_id && self.depth == 1 {
            match b {
                b' ' | b'\t' | b'\r' | b'\n' if self.id.is_empty() => return,
                b' ' | b'\t' | b'\r' | b'\n' | b',' | b'{' | b'}' | b'[' | b']' => {
                    // The value ended (or is no id at all): read on as usual.
                    self.in_id = false;
                }
                b'"' if self.id.is_empty() => {
                    self.keep_id(b);
                    self.in_string = true;
                    self.escaped = false;
                    return;
                }
                _ => {
                    self.keep_id(b);
                    return;
                }
            }
        }
        match b {
            b'"' => {
                self.in_string = true;
                self.escaped = false;
                if self.depth == 1 && self.want_key {
                    self.in_key = true;
                    self.key.clear();
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth == 1 {
                    self.want_key = b == b'{';
                }
                self.in_id = false;
            }
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                self.in_id = false;
            }
            b':' if self.depth == 1 => {
                self.want_key = false;
                if self.last_key.take() == Some(Key::Id) {
                    self.in_id = true;
                    self.id.clear();
                    self.id_overflow = false;
                }
            }
            b',' if self.depth == 1 => {
                self.want_key = true;
                self.in_id = false;
            }
            _ => {}
        }
    }

    fn end_key(&mut self) {
        let key = match self.key.as_slice() {
            b"id" => Key::Id,
            b"result" | b"error" => {
                self.reply = true;
                Key::Other
            }
            b"method" => {
                self.request = true;
                Key::Other
            }
            _ => Key::Other,
        };
        self.last_key = Some(key);
    }

    /// The `id` of a reply (a number or a string), if the line was one.
    fn reply_id(&self) -> Option<Value> {
        if !self.reply || self.request || self.id_overflow {
            return None;
        }
        match serde_json::from_slice::<Value>(&self.id).ok()? {
            v @ (Value::Number(_) | Value::String(_)) => Some(v),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// Hands out `data` `piece` bytes per read.
    struct Pieces {
        data: Vec<u8>,
        at: usize,
        piece: usize,
    }

    impl AsyncRead for Pieces {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            dst: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let n = self
                .piece
                .min(self.data.len() - self.at)
                .min(dst.remaining());
            let at = self.at;
            dst.put_slice(&self.data[at..at + n]);
            self.at += n;
            Poll::Ready(Ok(()))
        }
    }

    /// Everything `input` reads as through a limit of `limit`, read `piece` bytes at a time
    /// (and handed out in reads of at most `out` bytes).
    async fn through(input: &[u8], limit: usize, piece: usize, out: usize) -> String {
        let mut r = ReplyLimit::new(
            Pieces {
                data: input.to_vec(),
                at: 0,
                piece,
            },
            limit,
        );
        let mut all = Vec::new();
        let mut buf = vec![0; out];
        loop {
            let n = r.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            all.extend_from_slice(&buf[..n]);
        }
        String::from_utf8(all).unwrap()
    }

    /// The JSON lines of `text` that parse (the cut-off start of a dropped line does not).
    fn messages(text: &str) -> Vec<Value> {
        text.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    #[tokio::test]
    async fn lines_within_the_limit_pass_unchanged() {
        let input = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n{\"a\":\"é\"}\r\n{\"tail\":1}";
        for piece in [1, 2, 7, 1000] {
            for out in [1, 3, 4096] {
                assert_eq!(through(input.as_bytes(), 40, piece, out).await, input);
            }
        }
    }

    #[tokio::test]
    async fn a_reply_over_the_limit_becomes_an_error_reply_with_its_id() {
        let big = "x".repeat(5000);
        for (line, id) in [
            (
                format!("{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{{\"text\":\"{big}\"}}}}"),
                json!(7),
            ),
            // The id after the big part, and a string id with an escaped quote.
            (
                format!(
                    "{{\"result\":{{\"text\":\"{big}\",\"id\":99}},\"id\" : \"a\\\"b\",\"jsonrpc\":\"2.0\"}}"
                ),
                json!("a\"b"),
            ),
        ] {
            let input =
                format!("{{\"id\":1,\"result\":{{}}}}\n{line}\n{{\"id\":2,\"result\":{{}}}}\n");
            for piece in [1, 100, 4096, 100_000] {
                let text = through(input.as_bytes(), 1000, piece, 512).await;
                let m = messages(&text);
                assert_eq!(m.len(), 3, "{piece}: {text:.300}");
                assert_eq!(m[0]["id"], 1);
                assert_eq!(m[1]["id"], id);
                assert_eq!(m[1]["error"]["code"], CODE);
                let t = TooLarge::from_data(m[1]["error"].get("data")).unwrap();
                assert_eq!(
                    t,
                    TooLarge {
                        bytes: line.len(),
                        limit: 1000
                    }
                );
                assert_eq!(m[2]["id"], 2);
                assert!(text.len() < 2500, "the big line was not passed on");
            }
        }
    }

    #[tokio::test]
    async fn a_request_or_notification_over_the_limit_is_only_dropped() {
        let big = "y".repeat(3000);
        let input = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"sampling/createMessage\",\"params\":\"{big}\"}}\n\
             {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":\"{big}\"}}\n\
             {{\"id\":5,\"result\":{{}}}}"
        );
        let m = messages(&through(input.as_bytes(), 100, 64, 64).await);
        assert_eq!(m, vec![json!({"id": 5, "result": {}})]);
    }

    #[tokio::test]
    async fn a_line_that_never_ends_is_dropped_at_the_end_of_input() {
        let input = format!("{{\"id\":3,\"result\":\"{}", "z".repeat(500));
        let text = through(input.as_bytes(), 100, 50, 50).await;
        assert!(messages(&text).is_empty(), "{text}");
        assert!(text.len() <= 101);
    }

    #[test]
    fn the_outline_finds_only_top_level_keys() {
        let id_of = |text: &str| {
            let mut o = Outline::default();
            o.feed(text.as_bytes());
            o.reply_id()
        };
        assert_eq!(id_of(r#"{"id": 12 , "result": 1}"#), Some(json!(12)));
        assert_eq!(
            id_of(r#"{"error": {"id": 3}, "id": "x"}"#),
            Some(json!("x"))
        );
        assert_eq!(
            id_of(r#"{"result": {"id": 3}}"#),
            None,
            "nested ids are not the id"
        );
        assert_eq!(
            id_of(r#"{"result": "\"id\": 3"}"#),
            None,
            "nor ids inside strings"
        );
        assert_eq!(id_of(r#"{"id": 1, "method": "ping"}"#), None, "a request");
        assert_eq!(id_of(r#"{"id": null, "error": {}}"#), None);
        assert_eq!(id_of(r#"{"id": {"a": 1}, "result": 2}"#), None);
        assert_eq!(id_of(r#"{"id": [1], "result": 2}"#), None);
    }
}
