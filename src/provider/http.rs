//! One streaming HTTP call: send, classify failures, decode SSE into stream events.
//!
//! The returned stream drives the call itself (no task in between): polling it sends the
//! request and reads the body. Cancelling the token or dropping the stream drops the response,
//! which closes the connection at once. Failures become an in-band `error` event carrying whatever content had
//! arrived; rate limits, overloads, server errors, connection failures, dropped streams and idle
//! streams are marked transient (with the server's `Retry-After` when it gave one) so the loop
//! can retry them; client errors (400, 401, 403, ...) are not, and show the provider's message.
//! A failure to connect, a refusal and an answer that is not a stream start with the provider
//! and the URL (`openai (http://…/v1/chat/completions): not found (HTTP 404)`), credentials
//! masked ([`super::origin`]).
//!
//! A stream ends in one of three ways besides its proper end. The connection breaks (a read
//! error, or a clean close in the middle of an event: the event's start cannot be decoded, but
//! that is the cut's doing, not a malformed event): a dropped stream. No complete event (nor a
//! keep-alive comment) arrives for the idle timeout, however many bytes trickle in meanwhile:
//! an idle stream. A whole event that does not decode: a protocol error, final.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::body::JsonBody;
use super::catalog::ModelInfo;
use super::emit::MessageStream;
use super::sse::SseParser;
use super::wire::{
    ERROR_BODY_LIMIT, HttpRequest, WireApi, WireDecoder, error_message, read_body_head,
};
use crate::agent::protocol::stream::{EventStream, ProviderError, StreamEvent};
use crate::agent::protocol::types::TransientError;
use crate::sync::lock;

/// Whether a status is worth retrying.
pub(crate) fn is_transient_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 425 | 429) || status >= 500
}

/// `Retry-After` (seconds or an HTTP date) or `retry-after-ms`, in milliseconds.
pub(crate) fn retry_after_ms(headers: &reqwest::header::HeaderMap) -> Option<u64> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
    {
        return Some(ms.max(0.0) as u64);
    }
    let v = headers.get("retry-after")?.to_str().ok()?.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return Some((secs.max(0.0) * 1000.0) as u64);
    }
    let when = httpdate_to_unix(v)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_secs();
    Some(when.saturating_sub(now) * 1000)
}

/// Parse an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) to Unix seconds.
fn httpdate_to_unix(s: &str) -> Option<u64> {
    let parts: Vec<&str> = s.split_whitespace().collect();
    if parts.len() != 6 {
        return None;
    }
    let day: u64 = parts[1].parse().ok()?;
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = months.iter().position(|m| *m == parts[2])? as u64 + 1;
    let year: u64 = parts[3].parse().ok()?;
    let hms: Vec<u64> = parts[4].split(':').filter_map(|x| x.parse().ok()).collect();
    if hms.len() != 3 {
        return None;
    }
    // Days from civil date (Howard Hinnant's algorithm).
    let (y, m) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hms[0] * 3600 + hms[1] * 60 + hms[2])
}

/// Settings shared by every call.
#[derive(Clone)]
pub(crate) struct HttpSettings {
    pub client: reqwest::Client,
    /// A stream with no complete event (nor keep-alive comment) for this long is treated as
    /// dropped.
    pub idle_timeout: Duration,
    /// A server that sends no response headers for this long after the request is treated as
    /// not answering.
    pub response_timeout: Duration,
}

/// Start one call and return its event stream.
///
/// The stream drives the call itself (no task, no channel): whoever polls it sends the
/// request, reads the body and decodes it, so each network chunk reaches the loop without a
/// hop. Dropping the stream (or cancelling the token) drops the response, which closes the
/// connection at once.
pub(crate) fn stream_call(
    settings: &HttpSettings,
    api: Arc<dyn WireApi>,
    model: ModelInfo,
    request: HttpRequest,
    cancel: CancellationToken,
) -> EventStream {
    Box::pin(Call::start(settings, api, &model, request, cancel))
}

type Pending<T> = Pin<Box<dyn Future<Output = T> + Send>>;
type Body = Pin<Box<dyn Stream<Item = Result<Bytes, reqwest::Error>> + Send>>;

/// Where a call stands.
enum Phase {
    /// Waiting for the response headers.
    Sending(Pending<Result<reqwest::Response, reqwest::Error>>),
    /// The server refused (`status`); reading its error body.
    Refused {
        status: u16,
        retry_after: Option<u64>,
        body: Pending<String>,
    },
    /// Reading and decoding the event stream.
    Reading(Body),
    /// A 200 whose body is plainly not an event stream (`content_type`); reading the start of
    /// it to say what arrived.
    NotAStream {
        content_type: String,
        body: Pending<String>,
    },
    Finished,
}

/// How much of a body that is not an event stream is kept to describe it.
const BODY_HEAD: usize = 512;

/// One streaming call, as a stream of events.
struct Call {
    /// Shared with a watcher that drops the request or body (closing the connection) the
    /// moment the token is cancelled, even if nobody polls the stream then.
    phase: Arc<std::sync::Mutex<Phase>>,
    /// Dropped with the stream, which lets the watcher go.
    _watch: tokio::sync::oneshot::Sender<()>,
    out: MessageStream,
    decoder: Box<dyn WireDecoder>,
    parser: SseParser,
    /// Decoded events not yet handed out.
    ready: VecDeque<StreamEvent>,
    secrets: Vec<String>,
    /// `provider (url)`, put before connection and HTTP errors ([`super::origin`]).
    origin: String,
    idle_timeout: Duration,
    response_timeout: Duration,
    /// Fires when no headers came within `response_timeout`, then when no event completed for
    /// `idle_timeout` (reset by every complete event or comment, not by bytes alone).
    idle: Pin<Box<tokio::time::Sleep>>,
    cancelled: Pin<Box<WaitForCancellationFutureOwned>>,
    coalescer: Coalescer,
    /// The first bytes of the body, to describe a body that holds no event.
    head: Vec<u8>,
    /// At least one server-sent event arrived.
    saw_event: bool,
}

/// Chunks closer together than this are gathered into one wake-up (see [`Coalescer`]).
const COALESCE: Duration = Duration::from_millis(3);

/// What to do when the body has nothing ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pause {
    /// Wait for the network as usual.
    No,
    /// Let the connection hand over what it already buffered, then look again.
    Yield,
    /// Rest the thread this long, then wait for the network (what arrived meanwhile is read in
    /// one wake-up).
    Rest(Duration),
}

/// Gathers a fast stream's chunks into fewer wake-ups.
///
/// A stream of thousands of small events a second otherwise wakes the process (and switches
/// context) for every one. While chunks arrive less than [`COALESCE`] apart, the first time the
/// body has nothing ready after a chunk the stream yields (the connection may have more
/// buffered); the second time, it rests out the rest of the window. A stream paced as real
/// providers send (a chunk every several milliseconds) never rests, and throughput is never
/// capped: resting happens only when nothing is ready.
#[derive(Debug, Default)]
struct Coalescer {
    last: Option<std::time::Instant>,
    /// The time between the last two chunks.
    gap: Option<Duration>,
    yielded: bool,
    rested: bool,
}

impl Coalescer {
    fn chunk(&mut self, now: std::time::Instant) {
        self.gap = self.last.map(|t| now.saturating_duration_since(t));
        self.last = Some(now);
        self.yielded = false;
        self.rested = false;
    }

    fn idle(&mut self, now: std::time::Instant) -> Pause {
        let (Some(last), Some(gap)) = (self.last, self.gap) else {
            return Pause::No;
        };
        if gap >= COALESCE || self.rested {
            return Pause::No;
        }
        if !self.yielded {
            self.yielded = true;
            return Pause::Yield;
        }
        self.rested = true;
        let since = now.saturating_duration_since(last);
        if since < COALESCE {
            Pause::Rest(COALESCE - since)
        } else {
            Pause::No
        }
    }
}

impl Call {
    fn start(
        settings: &HttpSettings,
        api: Arc<dyn WireApi>,
        model: &ModelInfo,
        request: HttpRequest,
        cancel: CancellationToken,
    ) -> Self {
        let phase = Arc::new(std::sync::Mutex::new(Phase::Finished));
        let (watch, stream_dropped) = tokio::sync::oneshot::channel::<()>();
        let slot = phase.clone();
        let token = cancel.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = token.cancelled() => *lock(&slot) = Phase::Finished,
                _ = stream_dropped => {}
            }
        });
        let mut call = Call {
            phase,
            _watch: watch,
            decoder: api.decoder(),
            out: MessageStream::new(model),
            parser: SseParser::new(),
            ready: VecDeque::new(),
            secrets: secrets_of(&request),
            origin: super::origin::origin(&model.provider, &request.url),
            idle_timeout: settings.idle_timeout,
            response_timeout: settings.response_timeout,
            idle: Box::pin(tokio::time::sleep(settings.response_timeout)),
            cancelled: Box::pin(cancel.cancelled_owned()),
            coalescer: Coalescer::default(),
            head: Vec::new(),
            saw_event: false,
        };
        // A long history is written as the connection takes it, never held as text whole.
        let body = match super::body::json_body(request.body, request.lazy) {
            Ok(body) => body,
            Err(e) => {
                call.out
                    .fail(&format!("could not encode the request: {e}"), None, None);
                call.take_events();
                return call;
            }
        };
        let mut builder = settings
            .client
            .post(&request.url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream");
        for (k, v) in &request.headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        let builder = match body {
            JsonBody::Whole(bytes) => builder.body(bytes),
            JsonBody::Pieces(length, pieces) => builder
                .header("content-length", length)
                .body(reqwest::Body::wrap_stream(futures::stream::iter(pieces))),
        };
        *lock(&call.phase) = Phase::Sending(Box::pin(builder.send()));
        call
    }

    /// Move what the message stream emitted to the ready queue, credentials scrubbed.
    fn take_events(&mut self) {
        for mut ev in self.out.drain() {
            if let StreamEvent::Error { error, .. } = &mut ev
                && let Some(m) = &error.error_message
            {
                error.error_message = Some(scrub(m, &self.secrets));
            }
            self.ready.push_back(ev);
        }
    }

    /// Called when the body has nothing ready: see [`Coalescer`]. `true` when the stream
    /// yields (the caller returns `Pending` and is polled again at once).
    fn coalesce(&mut self, cx: &mut Context<'_>) -> bool {
        match self.coalescer.idle(std::time::Instant::now()) {
            Pause::Yield => {
                cx.waker().wake_by_ref();
                true
            }
            Pause::Rest(d) => {
                std::thread::sleep(d);
                false
            }
            Pause::No => false,
        }
    }

    fn reset_idle(&mut self) {
        let at = tokio::time::Instant::now() + self.idle_timeout;
        self.idle.as_mut().reset(at);
    }

    /// The server answered with headers; returns what comes next.
    fn answered(&mut self, response: reqwest::Response) -> Phase {
        let status = response.status().as_u16();
        if !response.status().is_success() {
            let retry_after = retry_after_ms(response.headers());
            let body = Box::pin(read_body_head(
                response,
                ERROR_BODY_LIMIT,
                self.idle_timeout,
            ));
            Phase::Refused {
                status,
                retry_after,
                body,
            }
        } else {
            self.reset_idle();
            let content_type = response
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_ascii_lowercase();
            // Servers label event streams in various ways (or not at all); only a label that
            // says it is something else is trusted. The rest is judged by what arrives.
            let not_a_stream = [
                "text/html",
                "application/json",
                "application/xml",
                "text/xml",
            ]
            .iter()
            .any(|t| content_type.starts_with(t));
            if not_a_stream {
                let body = Box::pin(read_body_head(response, BODY_HEAD, self.idle_timeout));
                return Phase::NotAStream { content_type, body };
            }
            Phase::Reading(Box::pin(response.bytes_stream()))
        }
    }

    /// Decode one chunk of the body.
    fn chunk(&mut self, chunk: &[u8]) {
        if self.head.len() < BODY_HEAD {
            let take = (BODY_HEAD - self.head.len()).min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
        }
        let (decoder, out, saw_event) = (&mut self.decoder, &mut self.out, &mut self.saw_event);
        self.parser.feed_with(chunk, |ev| {
            *saw_event = true;
            if out.is_finished() {
                return;
            }
            if let Err(e) = decoder.event(ev, out) {
                out.fail_broken(&e.to_string(), None);
            }
        });
    }

    /// The body ended.
    fn ended(&mut self) {
        let (decoder, out, saw_event) = (&mut self.decoder, &mut self.out, &mut self.saw_event);
        // An event dispatched now lacked its blank line: the body stopped inside it. Some
        // servers end that way after a whole last line (`data: [DONE]`), so it is decoded; one
        // that does not decode was cut short, which is a dropped stream.
        self.parser.finish_with(|ev| {
            *saw_event = true;
            if out.is_finished() {
                return;
            }
            if decoder.event(ev, out).is_err() {
                out.fail_broken(
                    "stream read error: the provider closed the connection in the middle of an event",
                    transient(None),
                );
            }
        });
        if !self.saw_event && !self.out.is_finished() {
            // Not a dropped stream: the server sent a whole answer that is not one. Retrying
            // would get the same.
            let what = describe_body("", &String::from_utf8_lossy(&self.head));
            self.out.fail(
                &format!(
                    "{}: answered 200 with {what} instead of an event stream",
                    self.origin
                ),
                Some(200),
                None,
            );
            return;
        }
        self.decoder.end(&mut self.out);
        if !self.out.is_finished() {
            self.out.fail_broken(
                "stream read error: the provider closed the connection before the response was complete",
                transient(None),
            );
        }
    }

    /// Make progress; `Pending` when waiting on the network.
    fn advance(&mut self, phase: &mut Phase, cx: &mut Context<'_>) -> Poll<()> {
        match phase {
            Phase::Finished => Poll::Ready(()),
            Phase::Sending(send) => match send.as_mut().poll(cx) {
                Poll::Pending => {
                    // A server that takes the connection but never answers.
                    ready!(self.idle.as_mut().poll(cx));
                    let secs = self.response_timeout.as_secs_f64();
                    self.out.fail(
                        &format!(
                            "{}: no response within {secs:.1} s \
                             (response_timeout_secs in the config)",
                            self.origin
                        ),
                        None,
                        transient(None),
                    );
                    *phase = Phase::Finished;
                    Poll::Ready(())
                }
                Poll::Ready(Ok(response)) => {
                    *phase = self.answered(response);
                    Poll::Ready(())
                }
                Poll::Ready(Err(e)) => {
                    let what = if e.is_connect() {
                        "could not connect"
                    } else if e.is_timeout() {
                        "the request timed out"
                    } else {
                        "the request failed"
                    };
                    let message = format!("{}: {what}: {}", self.origin, describe(e));
                    self.out.fail(&message, None, transient(None));
                    *phase = Phase::Finished;
                    Poll::Ready(())
                }
            },
            Phase::Refused {
                status,
                retry_after,
                body,
            } => {
                let text = ready!(body.as_mut().poll(cx));
                let (status, retry_after) = (*status, *retry_after);
                let message = format!("{}: {}", self.origin, error_message(status, &text));
                let t = is_transient_status(status).then_some(TransientError {
                    retry_after_ms: retry_after,
                });
                self.out.fail(&message, Some(status), t);
                *phase = Phase::Finished;
                Poll::Ready(())
            }
            Phase::NotAStream { content_type, body } => {
                let text = ready!(body.as_mut().poll(cx));
                let what = describe_body(content_type, &text);
                self.out.fail(
                    &format!(
                        "{}: answered 200 with {what} instead of an event stream",
                        self.origin
                    ),
                    Some(200),
                    None,
                );
                *phase = Phase::Finished;
                Poll::Ready(())
            }
            Phase::Reading(body) => match body.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    let before = self.parser.progress();
                    self.chunk(&chunk);
                    if self.parser.progress() != before {
                        self.reset_idle();
                    }
                    self.coalescer.chunk(std::time::Instant::now());
                    Poll::Ready(())
                }
                Poll::Ready(Some(Err(e))) => {
                    self.out.fail_broken(
                        &format!("stream read error: {}", describe(e)),
                        transient(None),
                    );
                    *phase = Phase::Finished;
                    Poll::Ready(())
                }
                Poll::Ready(None) => {
                    self.ended();
                    *phase = Phase::Finished;
                    Poll::Ready(())
                }
                Poll::Pending => {
                    if self.coalesce(cx) {
                        return Poll::Pending;
                    }
                    ready!(self.idle.as_mut().poll(cx));
                    let secs = self.idle_timeout.as_secs_f64();
                    self.out.fail_broken(
                        &format!(
                            "stream read error: no complete event from the provider in {secs:.1} s \
                             (idle_timeout_secs in the config)"
                        ),
                        transient(None),
                    );
                    *phase = Phase::Finished;
                    Poll::Ready(())
                }
            },
        }
    }
}

impl Stream for Call {
    type Item = Result<StreamEvent, ProviderError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let slot = this.phase.clone();
        let mut phase = lock(&slot);
        loop {
            if let Some(ev) = this.ready.pop_front() {
                return Poll::Ready(Some(Ok(ev)));
            }
            if matches!(*phase, Phase::Finished) || this.out.is_finished() {
                // Nothing more will come: let the connection go now.
                *phase = Phase::Finished;
                return Poll::Ready(None);
            }
            if this.cancelled.as_mut().poll(cx).is_ready() {
                *phase = Phase::Finished;
                return Poll::Ready(None);
            }
            ready!(this.advance(&mut phase, cx));
            this.take_events();
        }
    }
}

/// Header values that are credentials, to be blanked out of any error text.
fn secrets_of(request: &HttpRequest) -> Vec<String> {
    request
        .headers
        .iter()
        .filter(|(k, _)| {
            let k = k.to_ascii_lowercase();
            k == "authorization" || k.contains("api-key") || k.contains("token")
        })
        .map(|(_, v)| v.strip_prefix("Bearer ").unwrap_or(v).trim().to_string())
        .filter(|v| v.len() >= 6)
        .collect()
}

/// Replace every credential in `text` (a server may echo the key back in its error body).
pub(crate) fn scrub(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for s in secrets {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), "[redacted]");
        }
    }
    out
}

/// A short description of a body that is not an event stream: its kind and title or first
/// words, e.g. `an HTML page ("502 Bad Gateway")` or `an empty body`.
fn describe_body(content_type: &str, text: &str) -> String {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return "an empty body".into();
    }
    let lower = trimmed.to_ascii_lowercase();
    let html = content_type.starts_with("text/html")
        || lower.starts_with("<!doctype html")
        || lower.starts_with("<html");
    let kind = if html {
        "an HTML page".to_string()
    } else if content_type.starts_with("application/json") || trimmed.starts_with('{') {
        "a JSON document".to_string()
    } else if content_type.is_empty() {
        "a body".to_string()
    } else {
        let mime = content_type.split(';').next().unwrap_or_default().trim();
        format!("a `{mime}` body")
    };
    let title = if html {
        lower.find("<title>").and_then(|at| {
            let start = at + "<title>".len();
            let end = start + lower[start..].find("</title>")?;
            trimmed.get(start..end)
        })
    } else {
        None
    };
    let gist: String = title
        .unwrap_or(trimmed)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(160)
        .collect();
    format!("{kind} (\"{gist}\")")
}

fn transient(retry_after_ms: Option<u64>) -> Option<TransientError> {
    Some(TransientError { retry_after_ms })
}

/// An error's message with its causes, without the URL's query (never holds keys anyway).
fn describe(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    #[test]
    fn retry_after_forms() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after_ms(&h), Some(2000));
        h.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after_ms(&h), Some(150));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            HeaderValue::from_static("Sun, 06 Nov 1994 08:49:37 GMT"),
        );
        assert_eq!(retry_after_ms(&h), Some(0), "a date in the past means now");
        assert_eq!(
            httpdate_to_unix("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(retry_after_ms(&HeaderMap::new()), None);
    }

    #[test]
    fn credentials_are_scrubbed_from_error_text() {
        let req = HttpRequest {
            url: "http://x".into(),
            headers: vec![
                ("authorization".into(), "Bearer sk-abcdef123".into()),
                ("x-api-key".into(), "ant-key-987654".into()),
                ("x-team".into(), "core-team".into()),
            ],
            body: serde_json::Value::Null,
            lazy: None,
        };
        let secrets = secrets_of(&req);
        let text = scrub(
            "bad key sk-abcdef123 and ant-key-987654 for core-team",
            &secrets,
        );
        assert_eq!(text, "bad key [redacted] and [redacted] for core-team");
    }

    #[test]
    fn only_a_fast_stream_rests_and_only_once_per_gap() {
        use std::time::Instant;
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut c = Coalescer::default();
        assert_eq!(c.idle(t0), Pause::No, "nothing before the first chunk");
        c.chunk(ms(0));
        assert_eq!(
            c.idle(ms(0)),
            Pause::No,
            "one chunk says nothing of the pace"
        );
        // Chunks 1 ms apart: yield first, then rest out the window, then wait as usual.
        c.chunk(ms(1));
        assert_eq!(c.idle(ms(1)), Pause::Yield);
        assert_eq!(c.idle(ms(1)), Pause::Rest(COALESCE));
        assert_eq!(c.idle(ms(2)), Pause::No);
        // Data handed over after the yield starts a new gap.
        c.chunk(ms(2));
        assert_eq!(c.idle(ms(2)), Pause::Yield);
        assert_eq!(
            c.idle(ms(3)),
            Pause::Rest(COALESCE - Duration::from_millis(1))
        );
        // A chunk that came late (a slow stream) never rests.
        c.chunk(ms(20));
        assert_eq!(c.idle(ms(20)), Pause::No);
        assert_eq!(c.idle(ms(21)), Pause::No);
    }

    #[test]
    fn transient_statuses() {
        for s in [429, 500, 502, 503, 529, 408] {
            assert!(is_transient_status(s), "{s}");
        }
        for s in [400, 401, 403, 404, 413, 422] {
            assert!(!is_transient_status(s), "{s}");
        }
    }
}
