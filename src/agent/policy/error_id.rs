//! `errorId`: a bit-flag classification stamped on every failed or aborted assistant message,
//! so a host (auto-retry, a status line, telemetry) can tell kinds of failure apart without
//! reading error texts.
//!
//! Flags combine: a rate limit is also transient, a deadline is also an abort. Every failed
//! message gets at least one flag ([`OTHER`] when nothing more specific is known). The values
//! are this project's own; they are stable once written to a session file.

use crate::agent::protocol::abort::{AbortReason, DEADLINE_TEXT, DEFAULT_ABORT_TEXT};
use crate::agent::protocol::types::{AssistantMessage, STOP_REFUSAL, STOP_SENSITIVE, StopReason};

/// Stopped on request (Esc, a host, a gate).
pub const ABORTED: u32 = 1;
/// The run's deadline passed.
pub const DEADLINE: u32 = 1 << 1;
/// Worth retrying as it is (the provider said so, or the kind always is).
pub const TRANSIENT: u32 = 1 << 2;
/// HTTP 429 or a rate-limit message.
pub const RATE_LIMITED: u32 = 1 << 3;
/// The provider is overloaded or unavailable (529, 503).
pub const OVERLOADED: u32 = 1 << 4;
/// Another server-side error (5xx).
pub const SERVER: u32 = 1 << 5;
/// The key was refused (401, 403).
pub const AUTH: u32 = 1 << 6;
/// The request itself was refused (another 4xx).
pub const BAD_REQUEST: u32 = 1 << 7;
/// The conversation is too long for the model.
pub const CONTEXT_OVERFLOW: u32 = 1 << 8;
/// The response stream broke while being read.
pub const STREAM_BROKEN: u32 = 1 << 9;
/// The provider refused to answer (refusal, sensitive content).
pub const REFUSAL: u32 = 1 << 10;
/// Failed, nothing more specific known.
pub const OTHER: u32 = 1 << 11;

/// The flags for a message that ended as an error or was aborted (`None` for any other).
/// `abort` is the run's abort reason, when it was aborted.
pub fn classify(message: &AssistantMessage, abort: Option<&AbortReason>) -> Option<u32> {
    match message.stop_reason {
        StopReason::Aborted => Some(classify_abort(message, abort)),
        StopReason::Error => Some(classify_error(message)),
        _ => None,
    }
}

fn classify_abort(message: &AssistantMessage, abort: Option<&AbortReason>) -> u32 {
    let deadline = matches!(abort, Some(AbortReason::Deadline))
        || message.error_message.as_deref() == Some(DEADLINE_TEXT);
    if deadline {
        return ABORTED | DEADLINE;
    }
    match message.error_message.as_deref() {
        None | Some(DEFAULT_ABORT_TEXT) => ABORTED,
        // A reason given with the abort may say more (e.g. a gate quoting a provider error).
        Some(_) => ABORTED | (classify_error(message) & !OTHER),
    }
}

fn classify_error(message: &AssistantMessage) -> u32 {
    let mut flags = 0;
    let text = message
        .error_message
        .as_deref()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let status = message.error_status;
    if status == Some(429) || text.contains("rate limit") || text.contains("rate_limit") {
        flags |= RATE_LIMITED | TRANSIENT;
    }
    if matches!(status, Some(503 | 529)) || text.contains("overloaded") {
        flags |= OVERLOADED | TRANSIENT;
    }
    if let Some(s) = status
        && (500..600).contains(&s)
        && flags & OVERLOADED == 0
    {
        flags |= SERVER | TRANSIENT;
    }
    if matches!(status, Some(401 | 403))
        || text.contains("invalid api key")
        || text.contains("invalid x-api-key")
        || text.contains("unauthorized")
    {
        flags |= AUTH;
    }
    if is_context_overflow(message) {
        flags |= CONTEXT_OVERFLOW;
    }
    if let Some(s) = status
        && (400..500).contains(&s)
        && flags & (RATE_LIMITED | AUTH | CONTEXT_OVERFLOW) == 0
    {
        flags |= BAD_REQUEST;
    }
    if message.stream_broken {
        flags |= STREAM_BROKEN | TRANSIENT;
    }
    if message.transient.is_some() {
        flags |= TRANSIENT;
    }
    let refused = |k: Option<&str>| matches!(k, Some(STOP_REFUSAL | STOP_SENSITIVE));
    if let Some(d) = &message.stop_details
        && (refused(Some(d.kind.as_str())) || refused(d.category.as_deref()))
    {
        flags |= REFUSAL;
    }
    if flags == 0 { OTHER } else { flags }
}

/// Whether a failed reply says the request was too long for the model (the wordings are
/// in [`super::overflow`]).
pub fn is_context_overflow(message: &AssistantMessage) -> bool {
    let text = message.error_message.as_deref().unwrap_or_default();
    super::overflow::says_overflow(message.error_status, text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::types::StopDetails;

    fn failed(stop: StopReason, text: &str, status: Option<u16>) -> AssistantMessage {
        AssistantMessage {
            stop_reason: stop,
            error_message: Some(text.into()),
            error_status: status,
            ..Default::default()
        }
    }

    #[test]
    fn kinds_of_failure_get_their_flags() {
        let e = |t: &str, s| classify(&failed(StopReason::Error, t, s), None).unwrap();
        assert_eq!(e("slow down", Some(429)), RATE_LIMITED | TRANSIENT);
        assert_eq!(e("Overloaded", Some(529)), OVERLOADED | TRANSIENT);
        assert_eq!(e("boom", Some(500)), SERVER | TRANSIENT);
        assert_eq!(e("invalid x-api-key", Some(401)), AUTH);
        assert_eq!(e("prompt is too long", Some(400)), CONTEXT_OVERFLOW);
        assert_eq!(e("bad field", Some(400)), BAD_REQUEST);
        assert_eq!(e("something odd", None), OTHER);
        let mut broken = failed(StopReason::Error, "connection reset", None);
        broken.stream_broken = true;
        assert_eq!(classify(&broken, None), Some(STREAM_BROKEN | TRANSIENT));
        let mut refused = failed(StopReason::Error, "no", None);
        refused.stop_details = Some(StopDetails {
            kind: STOP_REFUSAL.into(),
            ..Default::default()
        });
        assert_eq!(classify(&refused, None), Some(REFUSAL));

        let a = |t: &str, r: Option<AbortReason>| {
            classify(&failed(StopReason::Aborted, t, None), r.as_ref()).unwrap()
        };
        assert_eq!(a(DEFAULT_ABORT_TEXT, Some(AbortReason::Requested)), ABORTED);
        assert_eq!(
            a(DEADLINE_TEXT, Some(AbortReason::Deadline)),
            ABORTED | DEADLINE
        );
        assert_eq!(a("Esc", None), ABORTED);
        assert_eq!(
            a("the provider is overloaded", None),
            ABORTED | OVERLOADED | TRANSIENT
        );

        let fine = AssistantMessage::default();
        assert_eq!(classify(&fine, None), None);
    }
}
