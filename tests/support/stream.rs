//! Reading a provider's event stream in the wire-format tests: the event kinds, the final
//! message, and the terminal error (checked to hold no trace of the key).

use pi::agent::protocol::stream::StreamEvent;
use pi::agent::protocol::types::AssistantMessage;

/// The `type` of each event, in order.
pub fn kinds(events: &[StreamEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// The finished message of a stream that ended well.
pub fn done(events: &[StreamEvent]) -> &AssistantMessage {
    match events.last() {
        Some(StreamEvent::Done { message, .. }) => message,
        other => panic!("expected done, got {other:?}"),
    }
}

/// The message of a stream that ended in an error; `key` is nowhere in it.
pub fn failure<'a>(events: &'a [StreamEvent], key: &str) -> &'a AssistantMessage {
    match events.last() {
        Some(StreamEvent::Error { error, .. }) => {
            let text = serde_json::to_string(error).unwrap();
            assert!(!text.contains(key), "key leaked into {text}");
            error
        }
        other => panic!("expected error, got {other:?}"),
    }
}

/// An error message's text (empty when there is none).
pub fn error_text(m: &AssistantMessage) -> &str {
    m.error_message.as_deref().unwrap_or("")
}
