//! What each wire format implements: build the HTTP request, decode the SSE stream.

use std::time::Duration;

use serde_json::Value;

use super::catalog::ModelInfo;
use super::emit::MessageStream;
use super::error::{DecodeError, RequestError};
use super::sse::SseEvent;
use crate::agent::protocol::stream::ProviderRequest;
use crate::agent::protocol::types::{ContentBlock, ImageContent, ToolResultMessage};

/// A request ready to send.
#[derive(Clone, Debug, PartialEq)]
pub struct HttpRequest {
    pub url: String,
    /// Header name and value (keys go here, never into the URL).
    pub headers: Vec<(String, String)>,
    pub body: Value,
    /// A member of `body` whose array is written from its sources when the request is sent
    /// (`body` holds an empty array there); see [`super::body::LazyMember`].
    pub lazy: Option<super::body::LazyMember>,
}

impl HttpRequest {
    /// The whole body as one JSON value, lazy member included (for looking at it in tests).
    #[cfg(test)]
    pub(crate) fn full_body(&self) -> Value {
        let bytes = match super::body::json_body(self.body.clone(), self.lazy.clone()) {
            Ok(super::body::JsonBody::Whole(bytes)) => bytes,
            Ok(super::body::JsonBody::Pieces(_, pieces)) => pieces
                .flat_map(|p| p.map(|b| b.to_vec()).unwrap_or_default())
                .collect(),
            Err(e) => panic!("the body does not encode: {e}"),
        };
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    }
}

/// One wire protocol (Anthropic Messages, Chat Completions, Responses).
pub trait WireApi: Send + Sync {
    fn build(
        &self,
        model: &ModelInfo,
        request: &ProviderRequest,
        key: Option<&str>,
    ) -> Result<HttpRequest, RequestError>;

    /// A fresh decoder for one response stream.
    fn decoder(&self) -> Box<dyn WireDecoder>;
}

/// Turns SSE events of one response into stream events.
pub trait WireDecoder: Send {
    /// Handle one event. An `Err` is a protocol error that ends the response.
    fn event(&mut self, event: &SseEvent, out: &mut MessageStream) -> Result<(), DecodeError>;

    /// The body ended. Finish the message if the protocol's end was seen; otherwise leave it
    /// unfinished and the caller reports a dropped stream.
    fn end(&mut self, out: &mut MessageStream);
}

/// Said in place of an image for a model that takes none.
pub(crate) const IMAGE_OMITTED: &str = "(image omitted: this model does not accept images)";

/// A tool result for a wire format that sends its images apart from its text: the text, with a
/// note where the images went (after it, or left out for a model without image input), never
/// empty; and the images, for a model that takes them.
pub(crate) fn tool_result_output<'a>(
    model: &ModelInfo,
    result: &'a ToolResultMessage,
) -> (String, Vec<&'a ImageContent>) {
    let images: Vec<&ImageContent> = result
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Image(i) => Some(i),
            _ => None,
        })
        .collect();
    let mut output = result.text();
    if !images.is_empty() {
        if !output.is_empty() {
            output.push('\n');
        }
        output.push_str(if model.images {
            "(image attached below)"
        } else {
            IMAGE_OMITTED
        });
    }
    if output.is_empty() {
        output = "(no output)".to_string();
    }
    let images = if model.images { images } else { Vec::new() };
    (output, images)
}

/// Percent-encode everything but RFC 3986's unreserved characters (a query value, a form
/// field: a stray space or `&` must not change what the URL or the form says).
pub(crate) fn query_escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// How much of an error response's body is read; the rest is never fetched.
pub(crate) const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// How much of a plain-text error body goes into the message.
const ERROR_TEXT_CHARS: usize = 300;

/// Why a body was not read to its end.
pub(crate) enum CutShort {
    /// It grew past the limit.
    TooLong,
    /// The connection broke.
    Broke(reqwest::Error),
}

/// Read `response`'s body onto `out` until it ends, breaks or passes `limit` bytes (by at most
/// one chunk). Each chunk is copied as it comes: keeping the chunks themselves would keep each
/// one's whole read buffer alive.
pub(crate) async fn read_limited(
    response: reqwest::Response,
    limit: usize,
    out: &mut Vec<u8>,
) -> Result<(), CutShort> {
    let mut body = response.bytes_stream();
    while out.len() <= limit {
        match futures::StreamExt::next(&mut body).await {
            Some(Ok(chunk)) => out.extend_from_slice(&chunk),
            Some(Err(e)) => return Err(CutShort::Broke(e)),
            None => return Ok(()),
        }
    }
    Err(CutShort::TooLong)
}

/// The start of a response's body: what arrived before it ended, broke, passed `limit` bytes
/// (by at most one chunk) or took longer than `wait`; and whether that was the whole body.
async fn read_capped(response: reqwest::Response, limit: usize, wait: Duration) -> (Vec<u8>, bool) {
    let mut head = Vec::new();
    let whole = tokio::time::timeout(wait, read_limited(response, limit, &mut head))
        .await
        .is_ok_and(|read| read.is_ok());
    (head, whole)
}

/// The first `limit` bytes of a response's body (as text, invalid UTF-8 replaced): whatever
/// arrived before the body ended, broke, reached the limit or took longer than `wait`.
pub(crate) async fn read_body_head(
    response: reqwest::Response,
    limit: usize,
    wait: Duration,
) -> String {
    // Reading stops once `limit` bytes are in (not one chunk past it).
    let (mut head, _) = read_capped(response, limit.saturating_sub(1), wait).await;
    head.truncate(limit);
    String::from_utf8_lossy(&head).into_owned()
}

/// The largest short JSON answer read. A hosted model list (OpenRouter's names hundreds of
/// models, with descriptions) stays well under it.
const ANSWER_LIMIT: usize = 8 << 20;

/// Send `request` and read its short JSON answer (at most [`ANSWER_LIMIT`] bytes), each step
/// within `wait`; `None` on any failure (a probe of a server that may not be there).
pub(crate) async fn ask_json(request: reqwest::RequestBuilder, wait: Duration) -> Option<Value> {
    let response = tokio::time::timeout(wait, request.send())
        .await
        .ok()?
        .ok()?;
    read_small_json(response, ANSWER_LIMIT, wait).await
}

/// A short JSON answer (a model list, a server's settings) read whole, or `None` when the
/// server refuses, the body is not JSON, grows past `limit` bytes or takes longer than `wait`:
/// a server that streams something else at the address (an event stream, a page without end)
/// costs about `limit` bytes, and only for `wait`.
pub(crate) async fn read_small_json(
    response: reqwest::Response,
    limit: usize,
    wait: Duration,
) -> Option<Value> {
    if !response.status().is_success() {
        return None;
    }
    let (body, whole) = read_capped(response, limit, wait).await;
    if !whole || body.len() > limit {
        return None;
    }
    serde_json::from_slice(&body).ok()
}

/// The message for an error response, the same for every provider, ending with the status
/// (`prompt is too long (HTTP 400)`). From a JSON body (or the first item of a JSON array, as
/// Google sometimes sends): `error.message`, else `message`, else `error` when it is a string;
/// with Google's `error.status` beside the code (`... (RESOURCE_EXHAUSTED, HTTP 429)`); with no
/// message, the status or Anthropic's `error.type` alone. Otherwise the start of a text body;
/// for an empty body or an HTML page, the status's reason (`not found (HTTP 404)`).
pub(crate) fn error_message(status: u16, body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let root = parsed.as_ref().and_then(|v| match v {
        Value::Array(items) => items.first(),
        other => Some(other),
    });
    fn text(v: Option<&Value>) -> Option<&str> {
        v.and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }
    let error = root.and_then(|v| v.get("error"));
    let message = text(error.and_then(|e| e.get("message")))
        .or_else(|| text(root.and_then(|v| v.get("message"))))
        .or_else(|| text(error));
    // A code that says the request was too long is kept: some servers (Groq) say so only there.
    let too_long = text(error.and_then(|e| e.get("code"))).filter(|c| {
        let c = c.to_ascii_lowercase();
        (c.contains("context") || c.contains("too_long") || c.contains("too_large"))
            && !message.is_some_and(|m| m.contains(c.as_str()))
    });
    let label = text(error.and_then(|e| e.get("status"))).or(too_long);
    let kind = text(error.and_then(|e| e.get("type")));
    match (message, label, kind) {
        (Some(m), Some(s), _) => format!("{m} ({s}, HTTP {status})"),
        (Some(m), None, _) => format!("{m} (HTTP {status})"),
        (None, Some(s), _) | (None, None, Some(s)) => format!("{s} (HTTP {status})"),
        (None, None, None) => format!("{} (HTTP {status})", plain_error_text(status, body)),
    }
}

/// A body with no message to pick: its start, or the status's reason when it holds nothing
/// worth showing (empty, or an HTML page).
fn plain_error_text(status: u16, body: &str) -> String {
    let t = body.trim();
    let lower: String = t.chars().take(20).collect::<String>().to_ascii_lowercase();
    let html = lower.starts_with("<!doctype html") || lower.starts_with("<html");
    if t.is_empty() || html {
        super::origin::status_reason(status).unwrap_or_else(|| "no details given".into())
    } else {
        t.chars().take(ERROR_TEXT_CHARS).collect()
    }
}

/// Parse an SSE data payload as JSON, with a clear message when it is not.
pub(crate) fn parse_json(event: &SseEvent) -> Result<Value, DecodeError> {
    serde_json::from_str(&event.data).map_err(|e| DecodeError::NotJson {
        reason: e.to_string(),
        start: event.data.chars().take(120).collect(),
    })
}

/// A request's headers, by one rule for every wire format: the key's header (`auth`) unless
/// the configured headers already authenticate (they carry `authorization` or the key's own
/// header), then the format's fixed headers, then the configured ones; a header named again
/// (in any case) replaces the earlier one.
pub(crate) fn merge_headers(
    auth: Option<(&str, String)>,
    fixed: &[(&str, &str)],
    configured: &[(String, String)],
) -> Vec<(String, String)> {
    let configures = |name: &str| configured.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    let mut out: Vec<(String, String)> = Vec::new();
    if let Some((name, value)) = auth
        && !configures("authorization")
        && !configures(name)
    {
        out.push((name.to_string(), value));
    }
    let fixed = fixed.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    for (name, value) in fixed.chain(configured.iter().cloned()) {
        out.retain(|(k, _)| !k.eq_ignore_ascii_case(&name));
        out.push((name, value));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_headers_override_and_may_authenticate() {
        let h = |k: &str, v: &str| (k.to_string(), v.to_string());
        let key = || Some(("x-api-key", "k".to_string()));
        let fixed = [("anthropic-version", "1")];
        assert_eq!(
            merge_headers(key(), &fixed, &[h("X-Extra", "e")]),
            vec![
                h("x-api-key", "k"),
                h("anthropic-version", "1"),
                h("X-Extra", "e")
            ]
        );
        assert_eq!(
            merge_headers(key(), &fixed, &[h("Anthropic-Version", "2")]),
            vec![h("x-api-key", "k"), h("Anthropic-Version", "2")]
        );
        for auth in ["Authorization", "X-API-KEY"] {
            assert_eq!(
                merge_headers(key(), &[], &[h(auth, "mine")]),
                vec![h(auth, "mine")]
            );
        }
        assert_eq!(
            merge_headers(None, &[], &[h("a", "1"), h("A", "2")]),
            vec![h("A", "2")]
        );
    }

    #[test]
    fn error_messages_prefer_the_providers_text() {
        assert_eq!(
            error_message(
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}"#
            ),
            "prompt is too long (HTTP 400)"
        );
        assert_eq!(
            error_message(
                422,
                r#"{"object":"error","message":" bad field ","code":422}"#
            ),
            "bad field (HTTP 422)",
            "a top-level message (vLLM, llama.cpp)"
        );
        assert_eq!(
            error_message(404, r#"{"error":"model 'x' not found"}"#),
            "model 'x' not found (HTTP 404)",
            "an error that is a string (Ollama)"
        );
        assert_eq!(
            error_message(502, "<html>bad gateway</html>"),
            "bad gateway (HTTP 502)"
        );
        assert_eq!(
            error_message(
                404,
                "<!DOCTYPE HTML>\n<html><head><title>Error response</title></head></html>"
            ),
            "not found (HTTP 404)"
        );
        assert_eq!(error_message(500, ""), "internal server error (HTTP 500)");
        assert_eq!(error_message(599, " "), "no details given (HTTP 599)");
        assert_eq!(
            error_message(404, "File Not Found"),
            "File Not Found (HTTP 404)"
        );
        assert_eq!(
            error_message(400, r#"{"error":{"message":""}}"#),
            r#"{"error":{"message":""}} (HTTP 400)"#,
            "an empty message is no message"
        );
    }

    #[test]
    fn anthropic_error_bodies() {
        assert_eq!(
            error_message(
                529,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded (HTTP 529)"
        );
        assert_eq!(
            error_message(500, r#"{"type":"error","error":{"type":"api_error"}}"#),
            "api_error (HTTP 500)"
        );
    }

    #[test]
    fn a_code_saying_the_request_was_too_long_is_kept() {
        // Groq says it only in the code; other codes stay out of the text.
        assert_eq!(
            error_message(
                400,
                r#"{"error":{"message":"Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#
            ),
            "Please reduce the length of the messages or completion. (context_length_exceeded, HTTP 400)"
        );
        assert_eq!(
            error_message(
                401,
                r#"{"error":{"message":"Incorrect API key provided.","code":"invalid_api_key"}}"#
            ),
            "Incorrect API key provided. (HTTP 401)"
        );
    }

    #[test]
    fn google_error_bodies() {
        assert_eq!(
            error_message(
                400,
                r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}"#
            ),
            "API key not valid. Please pass a valid API key. (INVALID_ARGUMENT, HTTP 400)"
        );
        assert_eq!(
            error_message(
                429,
                r#"[{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}]"#
            ),
            "Resource has been exhausted (RESOURCE_EXHAUSTED, HTTP 429)"
        );
        assert_eq!(
            error_message(503, r#"{"error":{"code":503,"status":"UNAVAILABLE"}}"#),
            "UNAVAILABLE (HTTP 503)"
        );
    }

    #[test]
    fn a_long_text_body_is_cut_in_the_message() {
        let body = "x".repeat(10_000);
        let m = error_message(500, &body);
        assert_eq!(m, format!("{} (HTTP 500)", "x".repeat(ERROR_TEXT_CHARS)));
    }

    fn response(body: Vec<u8>) -> reqwest::Response {
        reqwest::Response::from(http::Response::new(body))
    }

    #[tokio::test]
    async fn an_error_body_is_read_only_up_to_the_limit() {
        let wait = Duration::from_secs(5);
        let huge = "é".repeat(ERROR_BODY_LIMIT);
        let head = read_body_head(response(huge.into_bytes()), ERROR_BODY_LIMIT, wait).await;
        assert!(head.len() <= ERROR_BODY_LIMIT + 3, "{}", head.len());
        assert!(head.starts_with("éé"));
        let short = read_body_head(response(b"short".to_vec()), 16, wait).await;
        assert_eq!(short, "short");
        let cut = read_body_head(response(b"0123456789".to_vec()), 4, wait).await;
        assert_eq!(cut, "0123");
    }

    #[tokio::test]
    async fn a_short_json_answer_is_read_and_anything_else_is_not() {
        let wait = Duration::from_secs(5);
        let ok = read_small_json(response(br#"{"n_ctx":8192}"#.to_vec()), 1024, wait).await;
        assert_eq!(ok, Some(serde_json::json!({"n_ctx": 8192})));
        let big = read_small_json(response(vec![b' '; 2048]), 1024, wait).await;
        assert_eq!(big, None);
        let text = read_small_json(response(b"<html>".to_vec()), 1024, wait).await;
        assert_eq!(text, None);
        let mut refused = http::Response::new(br#"{"a":1}"#.to_vec());
        *refused.status_mut() = http::StatusCode::NOT_FOUND;
        let refused = read_small_json(reqwest::Response::from(refused), 1024, wait).await;
        assert_eq!(refused, None);
    }

    #[tokio::test]
    async fn an_answer_that_streams_without_end_is_dropped_at_the_limit_or_the_wait() {
        let endless = futures::stream::repeat_with(|| {
            Ok::<_, std::io::Error>(bytes::Bytes::from_static(b"data: {}\n\n"))
        });
        let body = reqwest::Body::wrap_stream(endless);
        let read = read_small_json(
            reqwest::Response::from(http::Response::new(body)),
            64 * 1024,
            Duration::from_secs(30),
        );
        let answer = tokio::time::timeout(Duration::from_secs(20), read).await;
        assert_eq!(
            answer.ok(),
            Some(None),
            "stopped at the limit, long before the wait"
        );

        let stalled = futures::StreamExt::chain(
            futures::stream::once(async {
                Ok::<_, std::io::Error>(bytes::Bytes::from_static(b"{"))
            }),
            futures::stream::pending(),
        );
        let body = reqwest::Body::wrap_stream(stalled);
        let read = read_small_json(
            reqwest::Response::from(http::Response::new(body)),
            1024,
            Duration::from_millis(50),
        );
        assert_eq!(read.await, None);
    }

    #[tokio::test]
    async fn a_huge_json_error_body_still_gives_a_message() {
        let wait = Duration::from_secs(5);
        let mut body = br#"{"error":{"message":"too big","pad":""#.to_vec();
        body.extend(std::iter::repeat_n(b'a', 1 << 20));
        body.extend_from_slice(br#""}}"#);
        let head = read_body_head(response(body), ERROR_BODY_LIMIT, wait).await;
        let m = error_message(413, &head);
        assert!(m.starts_with(r#"{"error":{"message":"too big""#), "{m}");
        assert!(m.ends_with("(HTTP 413)"), "{m}");
        assert!(m.len() < 400, "{}", m.len());
    }
}
