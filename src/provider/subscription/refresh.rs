//! The token endpoints: trading a refresh token (or a sign-in's code) for new tokens, each
//! provider as it documents it. Anthropic takes JSON, OpenAI a form; both rotate the refresh
//! token. GitHub Copilot has no refresh token: the GitHub token (kept as `refresh`) buys a
//! short-lived Copilot token (`access`). Errors carry the server's `error` and its description,
//! never a token (the caller masks them too).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value, json};

use super::{Credentials, Endpoints, Kind, now_ms};
use crate::provider::wire::{CutShort, query_escape, read_limited};

/// The Claude Code client id (public; the Node.js pi signs in as the same client).
pub(crate) const ANTHROPIC_CLIENT_ID: &str = "9d1c250a-e61b-44d9-88ed-5944d1962f5e";
/// The Codex CLI client id.
pub(crate) const CODEX_CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
/// The VS Code Copilot client id (device sign-in).
pub(crate) const COPILOT_CLIENT_ID: &str = "Iv1.b507a08c87ecfe98";

/// Where the ChatGPT account id sits in a Codex access token (a JWT).
const CODEX_CLAIM: &str = "https://api.openai.com/auth";

/// Headers GitHub's Copilot endpoints expect from an editor.
pub(crate) const COPILOT_HEADERS: [(&str, &str); 4] = [
    ("User-Agent", "GitHubCopilotChat/0.35.0"),
    ("Editor-Version", "vscode/1.107.0"),
    ("Editor-Plugin-Version", "copilot-chat/0.35.0"),
    ("Copilot-Integration-Id", "vscode-chat"),
];

/// Anthropic and Copilot tokens are stored as expiring five minutes early, as the Node.js pi
/// stores them.
const EARLY_MS: i64 = 5 * 60 * 1000;

/// New credentials for `held`.
pub(crate) async fn refresh(
    kind: Kind,
    endpoints: &Endpoints,
    client: &reqwest::Client,
    held: &Credentials,
) -> Result<Credentials, String> {
    match kind {
        Kind::Claude => {
            let body = json!({
                "grant_type": "refresh_token",
                "client_id": ANTHROPIC_CLIENT_ID,
                "refresh_token": held.refresh,
            });
            let reply = post(client, &endpoints.token_url(kind), &[], Body::Json(body)).await?;
            tokens(kind, &reply, held)
        }
        Kind::Codex => {
            let form = vec![
                ("grant_type", "refresh_token".to_string()),
                ("refresh_token", held.refresh.clone()),
                ("client_id", CODEX_CLIENT_ID.to_string()),
            ];
            let reply = post(client, &endpoints.token_url(kind), &[], Body::Form(form)).await?;
            tokens(kind, &reply, held)
        }
        Kind::Copilot => {
            let domain = held.text("enterpriseUrl").map(str::to_string);
            copilot_token(endpoints, client, &held.refresh, domain.as_deref()).await
        }
    }
}

/// A request body.
pub(crate) enum Body {
    Json(Value),
    Form(Vec<(&'static str, String)>),
}

/// POST to a token endpoint (with `headers` besides the usual) and read its JSON answer; a
/// refusal says what the server said.
pub(crate) async fn post(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&str, &str)],
    body: Body,
) -> Result<Map<String, Value>, String> {
    let mut request = client.post(url).header("Accept", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = match body {
        Body::Json(v) => request.json(&v),
        Body::Form(f) => request
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(form_encode(&f)),
    };
    let response = request
        .send()
        .await
        .map_err(|e| format!("could not reach {}: {}", host_of(url), e.without_url()))?;
    read_json(response, url).await
}

/// The most a token endpoint's answer is read to: a wrong or hostile address streaming without
/// end must not grow pi's memory.
const ANSWER_LIMIT: usize = 256 << 10;

/// The JSON object a token endpoint answered, or what its refusal said.
pub(crate) async fn read_json(
    response: reqwest::Response,
    url: &str,
) -> Result<Map<String, Value>, String> {
    let status = response.status();
    let mut body = Vec::new();
    match read_limited(response, ANSWER_LIMIT, &mut body).await {
        Ok(()) => {}
        Err(CutShort::Broke(e)) => {
            return Err(format!(
                "{} broke off its answer: {}",
                host_of(url),
                e.without_url()
            ));
        }
        Err(CutShort::TooLong) => {
            return Err(format!(
                "{} answered with more than {} KB; a token answer is a few hundred bytes",
                host_of(url),
                ANSWER_LIMIT >> 10
            ));
        }
    }
    let value: Option<Map<String, Value>> = serde_json::from_slice(&body).ok();
    if !status.is_success() {
        return Err(refusal(status.as_u16(), value.as_ref()));
    }
    value.ok_or_else(|| format!("{} did not answer with JSON", host_of(url)))
}

/// "the server refused (HTTP 400: invalid_grant, Refresh token revoked)".
fn refusal(status: u16, body: Option<&Map<String, Value>>) -> String {
    let field = |k: &str| {
        body.and_then(|b| b.get(k))
            .and_then(|v| match v {
                Value::String(s) => Some(s.clone()),
                Value::Object(o) => o.get("message").and_then(Value::as_str).map(str::to_string),
                _ => None,
            })
            .map(|s| s.chars().take(200).collect::<String>())
    };
    let said: Vec<String> = [field("error"), field("error_description")]
        .into_iter()
        .flatten()
        .collect();
    if said.is_empty() {
        format!("the server refused (HTTP {status})")
    } else {
        format!("the server refused (HTTP {status}: {})", said.join(", "))
    }
}

/// `scheme://host[:port]` of a URL (never its path or query, which may hold a code).
pub(crate) fn host_of(url: &str) -> String {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let end = url[after_scheme..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| after_scheme + i);
    url[..end].to_string()
}

pub(crate) fn form_encode(pairs: &[(&str, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", query_escape(k), query_escape(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Credentials from a token answer (`access_token`, `refresh_token`, `expires_in`); a server
/// that sends no new refresh token leaves the old one in use.
pub(crate) fn tokens(
    kind: Kind,
    reply: &Map<String, Value>,
    held: &Credentials,
) -> Result<Credentials, String> {
    let access = reply
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or("the answer holds no access token")?
        .to_string();
    let refresh = reply
        .get("refresh_token")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map_or_else(|| held.refresh.clone(), str::to_string);
    let expires_in = reply
        .get("expires_in")
        .and_then(Value::as_f64)
        .ok_or("the answer does not say when the token expires")?;
    let early = if kind == Kind::Claude { EARLY_MS } else { 0 };
    let mut extra = held.extra.clone();
    if kind == Kind::Codex {
        let account = codex_account(&access)
            .ok_or("the access token names no ChatGPT account (chatgpt_account_id)")?;
        extra.insert("accountId".into(), Value::from(account));
    }
    Ok(Credentials {
        access,
        refresh,
        expires: now_ms() + (expires_in * 1000.0) as i64 - early,
        extra,
    })
}

/// The ChatGPT account id inside a Codex access token (a JWT's payload).
pub(crate) fn codex_account(access: &str) -> Option<String> {
    let payload = access.split('.').nth(1)?;
    let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims
        .get(CODEX_CLAIM)?
        .get("chatgpt_account_id")?
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Trade a GitHub token for a Copilot token.
pub(crate) async fn copilot_token(
    endpoints: &Endpoints,
    client: &reqwest::Client,
    github_token: &str,
    domain: Option<&str>,
) -> Result<Credentials, String> {
    let url = format!(
        "{}/copilot_internal/v2/token",
        endpoints.github_api_url(domain)
    );
    let mut request = client
        .get(&url)
        .header("Accept", "application/json")
        .header("Authorization", format!("Bearer {github_token}"));
    for (k, v) in COPILOT_HEADERS {
        request = request.header(k, v);
    }
    let response = request
        .send()
        .await
        .map_err(|e| format!("could not reach {}: {}", host_of(&url), e.without_url()))?;
    let reply = read_json(response, &url).await?;
    let token = reply
        .get("token")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or("the answer holds no Copilot token")?;
    let expires_at = reply
        .get("expires_at")
        .and_then(Value::as_f64)
        .ok_or("the answer does not say when the Copilot token expires")?;
    let mut extra = Map::new();
    if let Some(d) = domain {
        extra.insert("enterpriseUrl".into(), Value::from(d));
    }
    Ok(Credentials {
        access: token.to_string(),
        refresh: github_token.to_string(),
        expires: (expires_at * 1000.0) as i64 - EARLY_MS,
        extra,
    })
}

/// The Copilot API a token is for: its `proxy-ep=proxy.X` names `https://api.X`.
pub(crate) fn copilot_base_url(token: &str, domain: Option<&str>) -> String {
    let from_token = token
        .split(';')
        .find_map(|part| part.trim().strip_prefix("proxy-ep="))
        .filter(|h| {
            !h.is_empty()
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-:".contains(c))
        })
        .map(|h| {
            format!(
                "https://{}",
                h.strip_prefix("proxy.")
                    .map_or_else(|| h.to_string(), |r| format!("api.{r}"))
            )
        });
    from_token.unwrap_or_else(|| match domain {
        Some(d) => format!("https://copilot-api.{d}"),
        None => "https://api.individual.githubcopilot.com".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Serve one HTTP answer with `body` on 127.0.0.1; the URL to ask.
    async fn answer_once(body: Vec<u8>) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/token", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 4096];
            let _ = socket.read(&mut request).await;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(&body).await;
        });
        url
    }

    #[tokio::test]
    async fn a_token_answer_is_read_up_to_a_limit() {
        let client = reqwest::Client::new();
        let url = answer_once(br#"{"access_token":"a"}"#.to_vec()).await;
        let reply = read_json(client.get(&url).send().await.unwrap(), &url).await;
        assert_eq!(reply.unwrap().get("access_token"), Some(&json!("a")));

        let mut huge = br#"{"access_token":""#.to_vec();
        huge.resize(ANSWER_LIMIT + 10, b'x');
        huge.extend_from_slice(br#""}"#);
        let url = answer_once(huge).await;
        let err = read_json(client.get(&url).send().await.unwrap(), &url)
            .await
            .unwrap_err();
        assert!(err.contains("answered with more than 256 KB"), "{err}");
    }

    #[test]
    fn codex_tokens_name_their_account() {
        let payload = URL_SAFE_NO_PAD
            .encode(br#"{"https://api.openai.com/auth":{"chatgpt_account_id":"acc-1"}}"#);
        assert_eq!(
            codex_account(&format!("h.{payload}.s")).as_deref(),
            Some("acc-1")
        );
        assert_eq!(codex_account("not-a-jwt"), None);
    }

    #[test]
    fn copilot_tokens_name_their_api() {
        assert_eq!(
            copilot_base_url(
                "tid=1;exp=2;proxy-ep=proxy.individual.githubcopilot.com;x=y",
                None
            ),
            "https://api.individual.githubcopilot.com"
        );
        assert_eq!(
            copilot_base_url("tid=1", Some("ghe.example.com")),
            "https://copilot-api.ghe.example.com"
        );
        assert_eq!(
            copilot_base_url("proxy-ep=evil.com/path?x", None),
            "https://api.individual.githubcopilot.com",
            "a proxy-ep that is not a host is not followed"
        );
    }

    #[test]
    fn refusals_say_what_the_server_said_and_urls_lose_their_query() {
        let body: Map<String, Value> =
            serde_json::from_str(r#"{"error":"invalid_grant","error_description":"revoked"}"#)
                .unwrap();
        assert_eq!(
            refusal(400, Some(&body)),
            "the server refused (HTTP 400: invalid_grant, revoked)"
        );
        assert_eq!(refusal(500, None), "the server refused (HTTP 500)");
        assert_eq!(
            host_of("https://auth.example.com/oauth/token?code=secret"),
            "https://auth.example.com"
        );
        assert_eq!(
            form_encode(&[("a b", "c&d=é".into())]),
            "a%20b=c%26d%3D%C3%A9"
        );
    }
}
