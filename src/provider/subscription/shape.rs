//! A request made the way a subscription's API expects it, after the wire format built it as
//! for an API key: the token as a bearer token (no `x-api-key`), the headers the service asks
//! of its own clients, and the few body changes it requires.
//!
//! * Claude Pro/Max: `Authorization: Bearer`, `anthropic-beta: claude-code-20250219,
//!   oauth-2025-04-20`, `user-agent: claude-cli/…`, `x-app: cli`, and the system prompt opening
//!   with the Claude Code line the service requires of subscription tokens.
//! * ChatGPT (Codex): `POST …/codex/responses` with `Authorization: Bearer`,
//!   `chatgpt-account-id`, `originator: pi`, `OpenAI-Beta: responses=experimental`; the body
//!   with `store: false`, `instructions` always, no `max_output_tokens`.
//! * GitHub Copilot: `Authorization: Bearer`, the editor headers, `X-Initiator` (`user` when
//!   the person spoke last, else `agent`) and `Openai-Intent: conversation-edits`, at the API
//!   the token names.

use serde_json::{Value, json};

use super::refresh::COPILOT_HEADERS;
use super::{Credentials, Kind};
use crate::agent::protocol::stream::ProviderRequest;
use crate::agent::protocol::types::{ContentBlock, Message, UserContent};
use crate::provider::wire::HttpRequest;

/// The Claude Code version the Claude headers name (as the Node.js pi sends).
const CLAUDE_CODE_VERSION: &str = "2.1.75";

/// The line a Claude subscription request's system prompt must open with.
pub(crate) const CLAUDE_CODE_IDENTITY: &str =
    "You are Claude Code, Anthropic's official CLI for Claude.";

/// What Codex uses when pi has no system prompt (it requires `instructions`).
const DEFAULT_INSTRUCTIONS: &str = "You are a helpful assistant.";

/// Headers that carry an API key, which a subscription request must not send.
fn is_key_header(name: &str) -> bool {
    ["x-api-key", "api-key", "authorization"]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
}

fn set(headers: &mut Vec<(String, String)>, name: &str, value: String) {
    headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
    headers.push((name.to_string(), value));
}

/// Make `http` (built by the wire format for `request`) a `kind` subscription request.
pub(crate) fn finish(
    kind: Kind,
    credentials: &Credentials,
    request: &ProviderRequest,
    http: &mut HttpRequest,
) {
    http.headers.retain(|(k, _)| !is_key_header(k));
    let bearer = format!("Bearer {}", credentials.access);
    http.headers.push(("Authorization".into(), bearer));
    match kind {
        Kind::Claude => claude(http),
        Kind::Codex => codex(credentials, http),
        Kind::Copilot => copilot(request, http),
    }
}

fn claude(http: &mut HttpRequest) {
    let mut betas = vec![
        "claude-code-20250219".to_string(),
        "oauth-2025-04-20".to_string(),
    ];
    if let Some((_, v)) = http
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("anthropic-beta"))
    {
        for b in v.split(',').map(str::trim).filter(|b| !b.is_empty()) {
            if !betas.iter().any(|x| x == b) {
                betas.push(b.to_string());
            }
        }
    }
    set(&mut http.headers, "anthropic-beta", betas.join(","));
    set(
        &mut http.headers,
        "user-agent",
        format!("claude-cli/{CLAUDE_CODE_VERSION}"),
    );
    set(&mut http.headers, "x-app", "cli".into());
    if let Some(body) = http.body.as_object_mut() {
        let identity = json!({"type": "text", "text": CLAUDE_CODE_IDENTITY});
        match body.get_mut("system") {
            Some(Value::Array(blocks)) => blocks.insert(0, identity),
            Some(Value::String(s)) => {
                let text = std::mem::take(s);
                body.insert(
                    "system".into(),
                    json!([identity, {"type": "text", "text": text}]),
                );
            }
            _ => {
                body.insert("system".into(), json!([identity]));
            }
        }
    }
}

fn codex(credentials: &Credentials, http: &mut HttpRequest) {
    if let Some(account) = credentials.text("accountId") {
        set(&mut http.headers, "chatgpt-account-id", account.to_string());
    }
    set(&mut http.headers, "originator", "pi".into());
    set(
        &mut http.headers,
        "User-Agent",
        format!("pi ({} {})", std::env::consts::OS, std::env::consts::ARCH),
    );
    set(
        &mut http.headers,
        "OpenAI-Beta",
        "responses=experimental".into(),
    );
    set(&mut http.headers, "accept", "text/event-stream".into());
    if let Some(body) = http.body.as_object_mut() {
        body.insert("store".into(), json!(false));
        body.entry("instructions")
            .or_insert_with(|| json!(DEFAULT_INSTRUCTIONS));
        body.shift_remove("max_output_tokens");
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        if body.contains_key("tools") {
            body.entry("tool_choice").or_insert_with(|| json!("auto"));
            body.insert("parallel_tool_calls".into(), json!(true));
        }
    }
}

fn copilot(request: &ProviderRequest, http: &mut HttpRequest) {
    for (k, v) in COPILOT_HEADERS {
        set(&mut http.headers, k, v.to_string());
    }
    let person_last = matches!(
        request.context.messages.last().map(|m| &**m),
        Some(Message::User(_))
    );
    let initiator = if person_last { "user" } else { "agent" };
    set(&mut http.headers, "X-Initiator", initiator.into());
    set(
        &mut http.headers,
        "Openai-Intent",
        "conversation-edits".into(),
    );
    let image = |c: &ContentBlock| matches!(c, ContentBlock::Image(_));
    let images = request.context.messages.iter().any(|m| match &**m {
        Message::User(u) => matches!(&u.content, UserContent::Blocks(b) if b.iter().any(image)),
        Message::ToolResult(t) => t.content.iter().any(image),
        _ => false,
    });
    if images {
        set(&mut http.headers, "Copilot-Vision-Request", "true".into());
    }
}
