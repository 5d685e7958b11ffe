//! What each wire format implements: build the HTTP request, decode the SSE stream.

use serde_json::Value;

use super::catalog::ModelInfo;
use super::emit::MessageStream;
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
}

/// One wire protocol (Anthropic Messages, Chat Completions, Responses).
pub trait WireApi: Send + Sync {
    fn build(
        &self,
        model: &ModelInfo,
        request: &ProviderRequest,
        key: Option<&str>,
    ) -> Result<HttpRequest, String>;

    /// A fresh decoder for one response stream.
    fn decoder(&self) -> Box<dyn WireDecoder>;

    /// The provider's own message from an error response body.
    fn error_message(&self, status: u16, body: &str) -> String {
        default_error_message(status, body)
    }
}

/// Turns SSE events of one response into stream events.
pub trait WireDecoder: Send {
    /// Handle one event. An `Err` is a protocol error that ends the response.
    fn event(&mut self, event: &SseEvent, out: &mut MessageStream) -> Result<(), String>;

    /// The body ended. Finish the message if the protocol's end was seen; otherwise leave it
    /// unfinished and the caller reports a dropped stream.
    fn end(&mut self, out: &mut MessageStream);
}

/// Said in place of an image for a model that takes none.
pub const IMAGE_OMITTED: &str = "(image omitted: this model does not accept images)";

/// A tool result for a wire format that sends its images apart from its text: the text, with a
/// note where the images went (after it, or left out for a model without image input), never
/// empty; and the images, for a model that takes them.
pub fn tool_result_output<'a>(
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

/// `error.message` (or `message`) from a JSON body, else the start of a text body; for an
/// empty body or an HTML page, the status's reason (`not found (HTTP 404)`).
pub fn default_error_message(status: u16, body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let found = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let text = found.unwrap_or_else(|| {
        let t = body.trim();
        let lower: String = t.chars().take(20).collect::<String>().to_ascii_lowercase();
        let html = lower.starts_with("<!doctype html") || lower.starts_with("<html");
        if t.is_empty() || html {
            super::origin::status_reason(status).unwrap_or_else(|| "no details given".into())
        } else {
            t.chars().take(300).collect()
        }
    });
    format!("{text} (HTTP {status})")
}

/// Parse an SSE data payload as JSON, with a clear message when it is not.
pub fn parse_json(event: &SseEvent) -> Result<Value, String> {
    serde_json::from_str(&event.data).map_err(|e| {
        let cut: String = event.data.chars().take(120).collect();
        format!("the provider sent a malformed event ({e}): {cut}")
    })
}

/// A request's headers, by one rule for every wire format: the key's header (`auth`) unless
/// the configured headers already authenticate (they carry `authorization` or the key's own
/// header), then the format's fixed headers, then the configured ones; a header named again
/// (in any case) replaces the earlier one.
pub fn merge_headers(
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
            default_error_message(
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}"#
            ),
            "prompt is too long (HTTP 400)"
        );
        assert_eq!(
            default_error_message(502, "<html>bad gateway</html>"),
            "bad gateway (HTTP 502)"
        );
        assert_eq!(
            default_error_message(
                404,
                "<!DOCTYPE HTML>\n<html><head><title>Error response</title></head></html>"
            ),
            "not found (HTTP 404)"
        );
        assert_eq!(
            default_error_message(500, ""),
            "internal server error (HTTP 500)"
        );
        assert_eq!(
            default_error_message(599, " "),
            "no details given (HTTP 599)"
        );
        assert_eq!(
            default_error_message(404, "File Not Found"),
            "File Not Found (HTTP 404)"
        );
    }
}
