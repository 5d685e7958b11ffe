//! One streaming HTTP call: send, classify failures, decode SSE into stream events.
//!
//! The call runs on its own task and hands events over a channel. Cancelling the token or
//! dropping the returned stream ends the task, which drops the response and so closes the
//! connection at once. Failures become an in-band `error` event carrying whatever content had
//! arrived; rate limits, overloads, server errors, connection failures, dropped streams and idle
//! streams are marked transient (with the server's `Retry-After` when it gave one) so the loop
//! can retry them; client errors (400, 401, 403, ...) are not, and show the provider's message.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::catalog::ModelInfo;
use super::emit::MessageStream;
use super::sse::SseParser;
use super::wire::{HttpRequest, WireApi};
use crate::agent::protocol::stream::{EventStream, ProviderError, StreamEvent};
use crate::agent::protocol::types::TransientError;

/// Whether a status is worth retrying.
pub fn is_transient_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 425 | 429) || status >= 500
}

/// `Retry-After` (seconds or an HTTP date) or `retry-after-ms`, in milliseconds.
pub fn retry_after_ms(headers: &reqwest::header::HeaderMap) -> Option<u64> {
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
pub struct HttpSettings {
    pub client: reqwest::Client,
    /// A stream with no bytes for this long is treated as dropped.
    pub idle_timeout: Duration,
}

/// Start one call and return its event stream.
pub fn stream_call(
    settings: &HttpSettings,
    api: Arc<dyn WireApi>,
    model: ModelInfo,
    request: HttpRequest,
    cancel: CancellationToken,
) -> EventStream {
    let (tx, rx) = mpsc::channel::<Result<StreamEvent, ProviderError>>(256);
    let settings = settings.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = cancel.cancelled() => {}
            _ = run_call(&settings, api.as_ref(), &model, request, &tx) => {}
        }
    });
    futures::stream::unfold(
        rx,
        |mut rx| async move { rx.recv().await.map(|ev| (ev, rx)) },
    )
    .boxed()
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
pub fn scrub(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for s in secrets {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), "[redacted]");
        }
    }
    out
}

async fn send_all(
    tx: &mpsc::Sender<Result<StreamEvent, ProviderError>>,
    out: &mut MessageStream,
    secrets: &[String],
) -> bool {
    for mut ev in out.drain() {
        if let StreamEvent::Error { error, .. } = &mut ev
            && let Some(m) = &error.error_message
        {
            error.error_message = Some(scrub(m, secrets));
        }
        if tx.send(Ok(ev)).await.is_err() {
            return false; // nobody listens: stop, which closes the connection
        }
    }
    true
}

fn transient(retry_after_ms: Option<u64>) -> Option<TransientError> {
    Some(TransientError { retry_after_ms })
}

async fn run_call(
    settings: &HttpSettings,
    api: &dyn WireApi,
    model: &ModelInfo,
    request: HttpRequest,
    tx: &mpsc::Sender<Result<StreamEvent, ProviderError>>,
) {
    let mut out = MessageStream::new(model);
    let secrets = secrets_of(&request);
    let body = match serde_json::to_vec(&request.body) {
        Ok(b) => b,
        Err(e) => {
            out.fail(&format!("could not encode the request: {e}"), None, None);
            send_all(tx, &mut out, &secrets).await;
            return;
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
    let response = match builder.body(body).send().await {
        Ok(r) => r,
        Err(e) => {
            let what = if e.is_connect() {
                "could not connect to the provider"
            } else if e.is_timeout() {
                "the request to the provider timed out"
            } else {
                "the request to the provider failed"
            };
            out.fail(&format!("{what}: {}", describe(e)), None, transient(None));
            send_all(tx, &mut out, &secrets).await;
            return;
        }
    };
    let status = response.status().as_u16();
    if !response.status().is_success() {
        let retry_after = retry_after_ms(response.headers());
        let text = tokio::time::timeout(settings.idle_timeout, response.text())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        let message = api.error_message(status, &text);
        let t = is_transient_status(status).then_some(TransientError {
            retry_after_ms: retry_after,
        });
        out.fail(&message, Some(status), t);
        send_all(tx, &mut out, &secrets).await;
        return;
    }

    let mut decoder = api.decoder();
    let mut parser = SseParser::new();
    let mut body = response.bytes_stream();
    let mut events = Vec::new();
    loop {
        let next = tokio::time::timeout(settings.idle_timeout, body.next()).await;
        match next {
            Err(_) => {
                let secs = settings.idle_timeout.as_secs_f64();
                out.fail_broken(
                    &format!("stream read error: no data from the provider for {secs:.1} s"),
                    transient(None),
                );
                break;
            }
            Ok(None) => {
                parser.finish(&mut events);
                for ev in events.drain(..) {
                    if let Err(e) = decoder.event(&ev, &mut out) {
                        out.fail_broken(&e, None);
                        break;
                    }
                }
                decoder.end(&mut out);
                if !out.is_finished() {
                    out.fail_broken(
                        "stream read error: the provider closed the connection before the response was complete",
                        transient(None),
                    );
                }
                break;
            }
            Ok(Some(Err(e))) => {
                out.fail_broken(
                    &format!("stream read error: {}", describe(e)),
                    transient(None),
                );
                break;
            }
            Ok(Some(Ok(chunk))) => {
                parser.feed(&chunk, &mut events);
                for ev in events.drain(..) {
                    if out.is_finished() {
                        break;
                    }
                    if let Err(e) = decoder.event(&ev, &mut out) {
                        out.fail_broken(&e, None);
                    }
                }
            }
        }
        if !send_all(tx, &mut out, &secrets).await || out.is_finished() {
            break;
        }
    }
    send_all(tx, &mut out, &secrets).await;
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
        };
        let secrets = secrets_of(&req);
        let text = scrub(
            "bad key sk-abcdef123 and ant-key-987654 for core-team",
            &secrets,
        );
        assert_eq!(text, "bad key [redacted] and [redacted] for core-team");
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
