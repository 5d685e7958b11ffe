//! Subscription sign-ins against a local OAuth and API server of our own (127.0.0.1, real
//! HTTP) that speaks each provider's token endpoint and API: stored Node.js pi sign-ins used
//! as they are, expired tokens refreshed (with rotation, a server clock behind ours, a revoked
//! refresh token, another pi having refreshed first or signed out) and written back to
//! `auth.json` byte for byte but for the refreshed fields, and the headers each service needs;
//! signing in (PKCE on a loopback callback, a pasted address, the device flow, cancel,
//! timeout); and the binary: `pi --login`/`--logout`, `--list-models`, RPC
//! `get_available_models` and `pi -p` for someone with nothing but a sign-in.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::Engine;
use pi::agent::protocol::stream::{LlmContext, ProviderRequest, StreamEvent, StreamOptions};
use pi::agent::protocol::types::{Message, UserMessage};
use pi::provider::catalog::Catalog;
use pi::provider::subscription::Subscriptions;
use pi::provider::{EnvLookup, Providers};
use pi::secrets::Secrets;
use serde_json::{Value, json};
use support::server::{Recorded, Reply, TestServer, event};

// ----- the local server -----------------------------------------------------------------------

/// What the server hands out and accepts: the live refresh token of each provider (older ones
/// are rotated out and refused), and how long new access tokens last.
#[derive(Default)]
struct Issuer {
    refresh: HashMap<&'static str, String>,
    issued: usize,
    expires_in: i64,
    revoked: bool,
    /// The PKCE challenge of the sign-in under way (what the browser was sent with).
    challenge: Option<String>,
    /// Device-code polls so far.
    polls: usize,
}

/// The S256 challenge of a verifier, computed here independently of pi.
fn s256(verifier: &str) -> String {
    use sha2::Digest;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(verifier.as_bytes()))
}

fn json_reply(status: u16, v: Value) -> Reply {
    Reply::error(status, &v.to_string())
}

fn form(r: &Recorded) -> HashMap<String, String> {
    r.raw
        .split('&')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.to_string(), v.replace("%2D", "-").replace("%5F", "_")))
        .collect()
}

/// A Codex access token: a JWT whose payload names the ChatGPT account.
fn codex_jwt(n: usize) -> String {
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(
        json!({"https://api.openai.com/auth": {"chatgpt_account_id": "acct-42"}, "n": n})
            .to_string(),
    );
    format!("eyJhbGciOiJub25lIn0.{payload}.sig{n}")
}

fn anthropic_sse() -> Reply {
    let ev = |name: &str, v: Value| event(name, &v);
    Reply::sse(vec![
        ev(
            "message_start",
            json!({"type": "message_start", "message": {"id": "m1", "type": "message", "role": "assistant", "content": [], "model": "claude", "stop_reason": null, "usage": {"input_tokens": 3, "output_tokens": 1}}}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hello"}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        ev(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
        ),
        ev("message_stop", json!({"type": "message_stop"})),
    ])
}

fn responses_sse() -> Reply {
    let ev = |name: &str, v: Value| event(name, &v);
    let item = json!({"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "annotations": [], "text": "hello"}]});
    Reply::sse(vec![
        ev(
            "response.created",
            json!({"response": {"id": "r1", "status": "in_progress", "output": []}}),
        ),
        ev(
            "response.output_item.added",
            json!({"output_index": 0, "item": {"id": "msg_1", "type": "message", "status": "in_progress", "content": [], "role": "assistant"}}),
        ),
        ev(
            "response.output_text.delta",
            json!({"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "hello"}),
        ),
        ev(
            "response.output_item.done",
            json!({"output_index": 0, "item": item}),
        ),
        ev(
            "response.completed",
            json!({"response": {"id": "r1", "status": "completed", "output": [item], "usage": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}}}),
        ),
    ])
}

fn completions_sse() -> Reply {
    support::server::text_reply("hello")
}

/// The server: token endpoints for the three providers and their APIs.
async fn server(issuer: Arc<Mutex<Issuer>>) -> TestServer {
    TestServer::responding(Arc::new(move |r: &Recorded| {
        let mut st = issuer.lock().unwrap();
        let path = r.path.split('?').next().unwrap_or("").to_string();
        match (r.method.as_str(), path.as_str()) {
            ("POST", "/v1/oauth/token") if r.body["grant_type"] == "authorization_code" => {
                let b = &r.body;
                let verifier = b["code_verifier"].as_str().unwrap_or("");
                if b["code"] != "claude-code-1"
                    || st.challenge.as_deref() != Some(s256(verifier).as_str())
                    || b["client_id"] != "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
                    || !b["redirect_uri"].as_str().unwrap_or("").starts_with("http://localhost:")
                    || b["state"].as_str().is_none()
                {
                    return json_reply(400, json!({"error": "invalid_grant"}));
                }
                json_reply(
                    200,
                    json!({"access_token": "sk-ant-oat01-signed-in", "refresh_token": "sk-ant-ort01-signed-in", "expires_in": 28800}),
                )
            }
            ("POST", "/oauth/token") if r.raw.contains("grant_type=authorization_code") => {
                let f = form(r);
                let verifier = f.get("code_verifier").cloned().unwrap_or_default();
                if f.get("code").map(String::as_str) != Some("codex-code-1")
                    || st.challenge.as_deref() != Some(s256(&verifier).as_str())
                {
                    return json_reply(400, json!({"error": "invalid_grant"}));
                }
                json_reply(
                    200,
                    json!({"access_token": codex_jwt(7), "refresh_token": "rt-codex-signed-in", "expires_in": 864000}),
                )
            }
            ("POST", "/login/device/code") => json_reply(
                200,
                json!({"device_code": "dev-123", "user_code": "ABCD-1234", "verification_uri": "https://github.example/login/device", "interval": 0, "expires_in": 60}),
            ),
            ("POST", "/login/oauth/access_token") => {
                let f = form(r);
                if f.get("device_code").map(String::as_str) != Some("dev-123") {
                    return json_reply(200, json!({"error": "bad_device_code"}));
                }
                st.polls += 1;
                match st.polls {
                    1 => json_reply(200, json!({"error": "authorization_pending"})),
                    2 => json_reply(200, json!({"error": "slow_down", "interval": 0})),
                    _ => {
                        st.refresh.insert("github-copilot", "ghu_device-token".into());
                        json_reply(200, json!({"access_token": "ghu_device-token", "token_type": "bearer"}))
                    }
                }
            }
            ("POST", "/v1/oauth/token") => {
                let b = &r.body;
                let live = st.refresh.get("anthropic").cloned();
                if st.revoked
                    || b["grant_type"] != "refresh_token"
                    || b["client_id"] != "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
                    || b["refresh_token"].as_str() != live.as_deref()
                {
                    return json_reply(
                        400,
                        json!({"error": "invalid_grant", "error_description": "Refresh token not found or invalid"}),
                    );
                }
                st.issued += 1;
                let n = st.issued;
                let next = format!("sk-ant-ort01-rotated-{n}");
                st.refresh.insert("anthropic", next.clone());
                json_reply(
                    200,
                    json!({"access_token": format!("sk-ant-oat01-fresh-{n}"), "refresh_token": next, "expires_in": st.expires_in, "token_type": "Bearer"}),
                )
            }
            ("POST", "/oauth/token") => {
                let f = form(r);
                let live = st.refresh.get("openai-codex").cloned();
                if f.get("grant_type").map(String::as_str) != Some("refresh_token")
                    || f.get("client_id").map(String::as_str) != Some("app_EMoamEEZ73f0CkXaXp7hrann")
                    || f.get("refresh_token") != live.as_ref()
                    || r.header("content-type") != Some("application/x-www-form-urlencoded")
                {
                    return json_reply(401, json!({"error": {"message": "refresh_token_reused"}}));
                }
                st.issued += 1;
                let n = st.issued;
                let next = format!("rt-codex-rotated-{n}");
                st.refresh.insert("openai-codex", next.clone());
                json_reply(
                    200,
                    json!({"access_token": codex_jwt(n), "refresh_token": next, "expires_in": st.expires_in, "id_token": "x"}),
                )
            }
            ("GET", "/copilot_internal/v2/token") => {
                let live = st.refresh.get("github-copilot").cloned().unwrap_or_default();
                if r.header("authorization") != Some(&format!("Bearer {live}"))
                    || r.header("editor-version").is_none()
                {
                    return json_reply(401, json!({"message": "Bad credentials"}));
                }
                st.issued += 1;
                json_reply(
                    200,
                    json!({"token": format!("tid=copilot-{};exp=1;proxy-ep=proxy.unused.example;sku=free", st.issued), "expires_at": 4_000_000_000i64, "refresh_in": 1500}),
                )
            }
            ("POST", "/v1/messages") => anthropic_sse(),
            ("POST", "/codex/responses") => responses_sse(),
            ("POST", "/responses") => responses_sse(),
            ("POST", "/chat/completions") => completions_sse(),
            _ => json_reply(404, json!({"error": "not here"})),
        }
    }))
    .await
}

// ----- pi's side ----------------------------------------------------------------------------

fn agent_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pi-subs-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn env_for(server: &TestServer) -> EnvLookup {
    let url = server.url.clone();
    Arc::new(move |k: &str| match k {
        "ANTHROPIC_BASE_URL"
        | "PI_OAUTH_ANTHROPIC_TOKEN_URL"
        | "PI_OAUTH_OPENAI_CODEX_TOKEN_URL"
        | "PI_OAUTH_GITHUB_COPILOT_GITHUB_API_URL"
        | "PI_OAUTH_GITHUB_COPILOT_API_URL" => Some(match k {
            "PI_OAUTH_ANTHROPIC_TOKEN_URL" => format!("{url}/v1/oauth/token"),
            "PI_OAUTH_OPENAI_CODEX_TOKEN_URL" => format!("{url}/oauth/token"),
            _ => url.clone(),
        }),
        "PI_OAUTH_OPENAI_CODEX_API_URL" => Some(format!("{url}/codex")),
        "PI_OAUTH_ANTHROPIC_AUTHORIZE_URL" => Some("https://claude.example/oauth/authorize".into()),
        "PI_OAUTH_OPENAI_CODEX_AUTHORIZE_URL" => {
            Some("https://auth.example/oauth/authorize".into())
        }
        "PI_OAUTH_GITHUB_COPILOT_GITHUB_URL" => Some(url.clone()),
        "PI_OAUTH_CALLBACK_PORT" => Some("0".into()),
        _ => None,
    })
}

struct Pi {
    providers: Providers,
    catalog: Catalog,
    secrets: Secrets,
}

fn pi(server: &TestServer, dir: &Path) -> Pi {
    let env = env_for(server);
    let e = env.clone();
    let mut catalog = Catalog::builtin(&move |k| e(k));
    catalog.add_subscription_models("openai-codex");
    catalog.add_subscription_models("github-copilot");
    let secrets = Secrets::default();
    let subs = Subscriptions::load(Some(dir.to_path_buf()), env.clone(), secrets.clone());
    let providers = Providers::new(Arc::new(catalog.clone()), None, env)
        .with_secrets(secrets.clone())
        .with_subscriptions(Arc::new(subs));
    Pi {
        providers,
        catalog,
        secrets,
    }
}

fn request(catalog: &Catalog, provider: &str, id: &str) -> ProviderRequest {
    let model = catalog.find(provider, id).expect("a built-in model");
    ProviderRequest {
        model: model.to_model(),
        context: LlmContext {
            system_prompt: vec!["You are pi.".into()],
            messages: Arc::new(vec![Arc::new(Message::User(UserMessage::new("hi")))]),
            tools: Vec::new(),
        },
        options: StreamOptions {
            max_tokens: Some(1000),
            ..Default::default()
        },
    }
}

/// The answer's text, or the error the call ended with.
async fn ask(pi: &Pi, provider: &str, id: &str) -> Result<String, String> {
    let events = support::collect(&pi.providers, request(&pi.catalog, provider, id)).await;
    match events.last() {
        Some(StreamEvent::Done { message, .. }) => Ok(message.text()),
        Some(StreamEvent::Error { error, .. }) => {
            Err(error.error_message.clone().unwrap_or_default())
        }
        other => panic!("no end: {other:?}"),
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// An `auth.json` as the Node.js pi writes it: `JSON.stringify(data, null, 2)`, no final
/// newline, an API key entry beside the sign-ins.
fn node_auth(entries: Value) -> String {
    let mut all = serde_json::Map::new();
    all.insert(
        "groq".into(),
        json!({"type": "api_key", "key": "gsk-untouched-key"}),
    );
    if let Value::Object(o) = entries {
        all.extend(o);
    }
    serde_json::to_string_pretty(&Value::Object(all)).unwrap()
}

/// An `auth.json` (as [`node_auth`]) holding a Claude sign-in whose token expired long ago,
/// with `refresh` as its refresh token.
fn expired_claude(refresh: &str) -> String {
    node_auth(json!({"anthropic": {
        "type": "oauth", "refresh": refresh, "access": "sk-ant-oat01-old-token",
        "expires": 1_700_000_000_000i64,
    }}))
}

fn read(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("auth.json")).unwrap()
}

fn requests_to(server: &TestServer, path: &str) -> Vec<Recorded> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.path == path)
        .collect()
}

#[cfg(unix)]
fn mode(dir: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(dir.join("auth.json"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

// ----- Claude Pro/Max -----------------------------------------------------------------------

#[tokio::test]
async fn a_stored_claude_sign_in_is_used_as_claude_code_sends_it() {
    let server = server(Arc::default()).await;
    let dir = agent_dir("claude-live");
    let text = node_auth(json!({"anthropic": {
        "type": "oauth", "refresh": "sk-ant-ort01-first", "access": "sk-ant-oat01-live-token",
        "expires": now_ms() + 3_600_000,
    }}));
    std::fs::write(dir.join("auth.json"), &text).unwrap();
    let pi = pi(&server, &dir);
    assert_eq!(
        ask(&pi, "anthropic", "claude-sonnet-4-5").await.unwrap(),
        "hello"
    );

    let sent = &requests_to(&server, "/v1/messages")[0];
    assert_eq!(
        sent.header("authorization"),
        Some("Bearer sk-ant-oat01-live-token")
    );
    assert_eq!(
        sent.header("x-api-key"),
        None,
        "no key header beside the token"
    );
    let beta = sent.header("anthropic-beta").unwrap();
    assert!(
        beta.contains("oauth-2025-04-20") && beta.contains("claude-code-20250219"),
        "{beta}"
    );
    assert!(
        sent.header("user-agent")
            .unwrap()
            .starts_with("claude-cli/")
    );
    assert_eq!(sent.header("x-app"), Some("cli"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    let system = sent.body["system"].as_array().unwrap();
    assert_eq!(
        system[0]["text"],
        "You are Claude Code, Anthropic's official CLI for Claude."
    );
    assert_eq!(system[1]["text"], "You are pi.");
    assert!(
        requests_to(&server, "/v1/oauth/token").is_empty(),
        "nothing refreshed"
    );
    assert_eq!(read(&dir), text, "the file is not rewritten");
}

#[tokio::test]
async fn an_expired_claude_token_is_refreshed_rotated_and_written_back_byte_for_byte() {
    let issuer = Arc::new(Mutex::new(Issuer {
        refresh: [("anthropic", "sk-ant-ort01-first".to_string())].into(),
        // The server's clock is behind: what it issues has already "expired" by ours.
        expires_in: 0,
        ..Default::default()
    }));
    let server = server(issuer.clone()).await;
    let dir = agent_dir("claude-refresh");
    let before = expired_claude("sk-ant-ort01-first");
    std::fs::write(dir.join("auth.json"), &before).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            dir.join("auth.json"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
    }
    let pi = pi(&server, &dir);
    assert_eq!(
        ask(&pi, "anthropic", "claude-sonnet-4-5").await.unwrap(),
        "hello"
    );
    let sent = &requests_to(&server, "/v1/messages")[0];
    assert_eq!(
        sent.header("authorization"),
        Some("Bearer sk-ant-oat01-fresh-1")
    );

    // Written back: the same bytes but for the three refreshed fields.
    let after = read(&dir);
    let v: Value = serde_json::from_str(&after).unwrap();
    let expires = v["anthropic"]["expires"].as_i64().unwrap();
    let expected = before
        .replace("sk-ant-ort01-first", "sk-ant-ort01-rotated-1")
        .replace("sk-ant-oat01-old-token", "sk-ant-oat01-fresh-1")
        .replace("1700000000000", &expires.to_string());
    assert_eq!(after, expected);
    assert!(
        !after.ends_with('\n'),
        "no final newline, as the Node.js pi writes"
    );
    // expires_in 0, stored five minutes early as the Node.js pi stores it.
    assert!((expires - (now_ms() - 300_000)).abs() < 60_000, "{expires}");
    #[cfg(unix)]
    assert_eq!(mode(&dir), 0o600);

    // The next request refreshes again (the token it got was already past its time), with
    // the rotated refresh token: the old one is refused by the server.
    assert_eq!(
        ask(&pi, "anthropic", "claude-sonnet-4-5").await.unwrap(),
        "hello"
    );
    let refreshes = requests_to(&server, "/v1/oauth/token");
    assert_eq!(refreshes.len(), 2);
    assert_eq!(refreshes[1].body["refresh_token"], "sk-ant-ort01-rotated-1");
    assert_eq!(
        refreshes[0].header("content-type"),
        Some("application/json")
    );
    assert!(read(&dir).contains("sk-ant-ort01-rotated-2"));
    assert!(!dir.join("auth.json.lock").exists(), "the lock is let go");
}

#[tokio::test]
async fn a_revoked_refresh_token_says_which_sign_in_and_to_log_in_again() {
    let issuer = Arc::new(Mutex::new(Issuer {
        refresh: [("anthropic", "sk-ant-ort01-revoked-one".to_string())].into(),
        revoked: true,
        ..Default::default()
    }));
    let server = server(issuer).await;
    let dir = agent_dir("claude-revoked");
    let before = expired_claude("sk-ant-ort01-revoked-one");
    std::fs::write(dir.join("auth.json"), &before).unwrap();
    let pi = pi(&server, &dir);
    let e = ask(&pi, "anthropic", "claude-sonnet-4-5")
        .await
        .unwrap_err();
    assert!(
        e.contains("Claude Pro/Max") && e.contains("anthropic"),
        "{e}"
    );
    assert!(e.contains("invalid_grant"), "{e}");
    assert!(
        e.contains("/login") && e.contains("pi --login anthropic"),
        "{e}"
    );
    assert!(
        !e.contains("revoked-one") && !e.contains("old-token"),
        "no token in {e}"
    );
    assert!(
        requests_to(&server, "/v1/messages").is_empty(),
        "nothing sent"
    );
    assert_eq!(read(&dir), before, "the sign-in is kept for another try");
    assert!(!dir.join("auth.json.lock").exists());
}

#[tokio::test]
async fn a_token_another_pi_refreshed_first_is_used_without_refreshing_again() {
    let server = server(Arc::default()).await;
    let dir = agent_dir("claude-other-pi");
    std::fs::write(dir.join("auth.json"), expired_claude("sk-ant-ort01-first")).unwrap();
    let pi = pi(&server, &dir);
    // Another pi refreshes and writes while this one runs.
    let theirs = node_auth(json!({"anthropic": {
        "type": "oauth", "refresh": "sk-ant-ort01-theirs", "access": "sk-ant-oat01-theirs-token",
        "expires": now_ms() + 3_600_000,
    }}));
    std::fs::write(dir.join("auth.json"), &theirs).unwrap();
    assert_eq!(
        ask(&pi, "anthropic", "claude-sonnet-4-5").await.unwrap(),
        "hello"
    );
    let sent = &requests_to(&server, "/v1/messages")[0];
    assert_eq!(
        sent.header("authorization"),
        Some("Bearer sk-ant-oat01-theirs-token")
    );
    assert!(requests_to(&server, "/v1/oauth/token").is_empty());
    assert_eq!(read(&dir), theirs);
}

#[tokio::test]
async fn an_api_key_given_for_the_run_comes_before_the_sign_in() {
    let server = server(Arc::default()).await;
    let dir = agent_dir("claude-key-first");
    std::fs::write(
        dir.join("auth.json"),
        node_auth(json!({"anthropic": {
            "type": "oauth", "refresh": "sk-ant-ort01-first", "access": "sk-ant-oat01-live-token",
            "expires": now_ms() + 3_600_000,
        }})),
    )
    .unwrap();
    let env = env_for(&server);
    let e = env.clone();
    let catalog = Catalog::builtin(&move |k| e(k));
    let subs = Subscriptions::load(Some(dir.clone()), env.clone(), Secrets::default());
    let providers = Providers::new(
        Arc::new(catalog.clone()),
        Some("sk-ant-api-flag".into()),
        env,
    )
    .with_subscriptions(Arc::new(subs));
    let events = support::collect(
        &providers,
        request(&catalog, "anthropic", "claude-sonnet-4-5"),
    )
    .await;
    assert!(matches!(events.last(), Some(StreamEvent::Done { .. })));
    let sent = &requests_to(&server, "/v1/messages")[0];
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-api-flag"));
    assert_eq!(sent.header("authorization"), None);
}

// ----- ChatGPT (Codex) ----------------------------------------------------------------------

#[tokio::test]
async fn codex_refreshes_with_a_form_and_calls_the_codex_backend_with_its_headers() {
    let issuer = Arc::new(Mutex::new(Issuer {
        refresh: [("openai-codex", "rt-codex-first".to_string())].into(),
        expires_in: 864_000,
        ..Default::default()
    }));
    let server = server(issuer).await;
    let dir = agent_dir("codex");
    let before = node_auth(json!({"openai-codex": {
        "type": "oauth", "access": "eyJold.eyJold.old", "refresh": "rt-codex-first",
        "expires": 1_700_000_000_000i64, "accountId": "acct-old",
    }}));
    std::fs::write(dir.join("auth.json"), &before).unwrap();
    let pi = pi(&server, &dir);
    assert_eq!(ask(&pi, "openai-codex", "gpt-5.5").await.unwrap(), "hello");

    let token_call = &requests_to(&server, "/oauth/token")[0];
    assert!(
        token_call.raw.contains("grant_type=refresh_token"),
        "{}",
        token_call.raw
    );
    let sent = &requests_to(&server, "/codex/responses")[0];
    let jwt = codex_jwt(1);
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {jwt}").as_str())
    );
    assert_eq!(sent.header("chatgpt-account-id"), Some("acct-42"));
    assert_eq!(sent.header("originator"), Some("pi"));
    assert_eq!(sent.header("openai-beta"), Some("responses=experimental"));
    assert_eq!(sent.header("accept"), Some("text/event-stream"));
    assert_eq!(sent.body["store"], false);
    assert_eq!(sent.body["instructions"], "You are pi.");
    assert_eq!(sent.body["model"], "gpt-5.5");
    assert!(
        sent.body.get("max_output_tokens").is_none(),
        "Codex refuses it"
    );
    assert_eq!(sent.body["include"], json!(["reasoning.encrypted_content"]));

    let after = read(&dir);
    let v: Value = serde_json::from_str(&after).unwrap();
    let expected = before
        .replace("eyJold.eyJold.old", &jwt)
        .replace("rt-codex-first", "rt-codex-rotated-1")
        .replace("1700000000000", &v["openai-codex"]["expires"].to_string())
        .replace("acct-old", "acct-42");
    assert_eq!(after, expected, "key order and other entries kept");
    // Codex tokens are stored with their true expiry.
    let expires = v["openai-codex"]["expires"].as_i64().unwrap();
    assert!((expires - (now_ms() + 864_000_000)).abs() < 60_000);
}

#[tokio::test]
async fn codex_without_a_sign_in_says_how_to_sign_in() {
    let server = server(Arc::default()).await;
    let dir = agent_dir("codex-none");
    let pi = pi(&server, &dir);
    let e = ask(&pi, "openai-codex", "gpt-5.5").await.unwrap_err();
    assert!(
        e.contains("ChatGPT Plus/Pro (Codex)") && e.contains("/login"),
        "{e}"
    );
    assert!(server.requests().is_empty());
}

// ----- GitHub Copilot -----------------------------------------------------------------------

#[tokio::test]
async fn copilot_trades_the_github_token_and_sends_the_editor_headers() {
    let issuer = Arc::new(Mutex::new(Issuer {
        refresh: [("github-copilot", "ghu_github-token-1".to_string())].into(),
        ..Default::default()
    }));
    let server = server(issuer).await;
    let dir = agent_dir("copilot");
    let before = node_auth(json!({"github-copilot": {
        "type": "oauth", "refresh": "ghu_github-token-1", "access": "tid=old;exp=1",
        "expires": 1_700_000_000_000i64,
    }}));
    std::fs::write(dir.join("auth.json"), &before).unwrap();
    let pi = pi(&server, &dir);
    assert_eq!(
        ask(&pi, "github-copilot", "gpt-4.1").await.unwrap(),
        "hello"
    );
    let token_call = &requests_to(&server, "/copilot_internal/v2/token")[0];
    assert_eq!(
        token_call.header("user-agent"),
        Some("GitHubCopilotChat/0.35.0")
    );
    let sent = &requests_to(&server, "/chat/completions")[0];
    let token = "tid=copilot-1;exp=1;proxy-ep=proxy.unused.example;sku=free";
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {token}").as_str())
    );
    assert_eq!(sent.header("copilot-integration-id"), Some("vscode-chat"));
    assert_eq!(sent.header("editor-version"), Some("vscode/1.107.0"));
    assert_eq!(sent.header("x-initiator"), Some("user"));
    assert_eq!(sent.header("openai-intent"), Some("conversation-edits"));

    // Claude through Copilot speaks Anthropic Messages, with the Copilot token as a bearer.
    assert_eq!(
        ask(&pi, "github-copilot", "claude-sonnet-4.5")
            .await
            .unwrap(),
        "hello"
    );
    let sent = &requests_to(&server, "/v1/messages")[0];
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {token}").as_str())
    );
    assert_eq!(sent.header("x-api-key"), None);
    assert_eq!(sent.body["model"], "claude-sonnet-4.5");
    assert_eq!(
        requests_to(&server, "/copilot_internal/v2/token").len(),
        1,
        "token reused"
    );

    // Only the Copilot token and its time changed; the GitHub token stays.
    let v: Value = serde_json::from_str(&read(&dir)).unwrap();
    let expected = before
        .replace("tid=old;exp=1", token)
        .replace("1700000000000", &v["github-copilot"]["expires"].to_string());
    assert_eq!(read(&dir), expected);
    assert_eq!(
        v["github-copilot"]["expires"],
        4_000_000_000_000i64 - 300_000
    );
}

// ----- safety -------------------------------------------------------------------------------

#[tokio::test]
async fn every_token_learnt_is_masked() {
    let issuer = Arc::new(Mutex::new(Issuer {
        refresh: [("anthropic", "sk-ant-ort01-first-refresh".to_string())].into(),
        expires_in: 3600,
        ..Default::default()
    }));
    let server = server(issuer).await;
    let dir = agent_dir("masked");
    std::fs::write(
        dir.join("auth.json"),
        expired_claude("sk-ant-ort01-first-refresh"),
    )
    .unwrap();
    let pi = pi(&server, &dir);
    let shown = pi
        .secrets
        .mask("a sk-ant-oat01-old-token b sk-ant-ort01-first-refresh");
    assert!(
        !shown.contains("old-token") && !shown.contains("first-refresh"),
        "{shown}"
    );
    ask(&pi, "anthropic", "claude-sonnet-4-5").await.unwrap();
    let shown = pi
        .secrets
        .mask("sk-ant-oat01-fresh-1 and sk-ant-ort01-rotated-1");
    assert!(
        !shown.contains("fresh-1") && !shown.contains("rotated-1"),
        "{shown}"
    );
}

// ----- signing in ---------------------------------------------------------------------------

use pi::provider::subscription::Kind;
use pi::provider::subscription::flows::{Notice, SignIn, sign_in};
use tokio_util::sync::CancellationToken;

fn query(url: &str) -> HashMap<String, String> {
    url.split_once('?')
        .map(|(_, q)| q)
        .unwrap_or("")
        .split('&')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| {
            let v = v
                .replace("%3A", ":")
                .replace("%2F", "/")
                .replace("%20", " ");
            (k.to_string(), v)
        })
        .collect()
}

fn subscriptions(server: &TestServer, dir: &Path) -> Subscriptions {
    Subscriptions::load(Some(dir.to_path_buf()), env_for(server), Secrets::default())
}

fn sign_in_request(kind: Kind) -> SignIn {
    SignIn {
        kind,
        enterprise_domain: None,
        pasted: None,
        cancel: CancellationToken::new(),
        timeout: std::time::Duration::from_secs(20),
    }
}

/// Play the browser: when pi shows the address, "sign in" (tell the server the challenge)
/// and come back to pi's loopback callback, first with a forged state, then properly.
fn browser_for(
    issuer: Arc<Mutex<Issuer>>,
    code: &'static str,
    seen: Arc<Mutex<Vec<Notice>>>,
) -> impl Fn(Notice) + Send + Sync {
    move |n: Notice| {
        seen.lock().unwrap().push(n.clone());
        if let Notice::OpenUrl { url, .. } = n {
            let q = query(&url);
            issuer.lock().unwrap().challenge = q.get("code_challenge").cloned();
            assert_eq!(
                q.get("code_challenge_method").map(String::as_str),
                Some("S256")
            );
            let redirect = q["redirect_uri"].clone();
            let state = q["state"].clone();
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                let forged = client
                    .get(format!("{redirect}?code=evil&state=forged"))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(forged.status().as_u16(), 400);
                let ok = client
                    .get(format!("{redirect}?code={code}&state={state}"))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(ok.status().as_u16(), 200);
            });
        }
    }
}

#[tokio::test]
async fn claude_sign_in_with_pkce_on_a_loopback_port_is_stored_in_the_node_shape() {
    let issuer = Arc::new(Mutex::new(Issuer::default()));
    let server = server(issuer.clone()).await;
    let dir = agent_dir("login-claude");
    std::fs::write(dir.join("auth.json"), node_auth(json!({}))).unwrap();
    let subs = subscriptions(&server, &dir);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let notify = browser_for(issuer.clone(), "claude-code-1", seen.clone());
    let creds = sign_in(&subs, sign_in_request(Kind::Claude), &notify)
        .await
        .unwrap();
    assert_eq!(creds.access, "sk-ant-oat01-signed-in");
    let url = match &seen.lock().unwrap()[0] {
        Notice::OpenUrl { url, .. } => url.clone(),
        other => panic!("{other:?}"),
    };
    assert!(
        url.starts_with("https://claude.example/oauth/authorize?code=true&"),
        "{url}"
    );
    let q = query(&url);
    assert_eq!(q["client_id"], "9d1c250a-e61b-44d9-88ed-5944d1962f5e");
    assert!(q["scope"].contains("user:inference"));
    assert!(q["redirect_uri"].ends_with("/callback"));
    assert_ne!(q["state"], "", "a state of its own");

    subs.store(Kind::Claude, creds).await.unwrap();
    let text = read(&dir);
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["groq"]["key"], "gsk-untouched-key");
    let keys: Vec<&str> = v["anthropic"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["type", "refresh", "access", "expires"],
        "the Node.js pi's order"
    );
    assert_eq!(v["anthropic"]["type"], "oauth");
    assert!(!text.ends_with('\n'));
    #[cfg(unix)]
    assert_eq!(mode(&dir), 0o600);

    // The new sign-in is used at once.
    let pi = pi(&server, &dir);
    assert_eq!(
        ask(&pi, "anthropic", "claude-sonnet-4-5").await.unwrap(),
        "hello"
    );
    let sent = &requests_to(&server, "/v1/messages")[0];
    assert_eq!(
        sent.header("authorization"),
        Some("Bearer sk-ant-oat01-signed-in")
    );

    // Signing out removes that entry only.
    assert!(subs.sign_out(Kind::Claude).await.unwrap());
    let v: Value = serde_json::from_str(&read(&dir)).unwrap();
    assert!(v.get("anthropic").is_none() && v.get("groq").is_some());
    assert!(!subs.is_signed_in(Kind::Claude));
}

#[tokio::test]
async fn codex_sign_in_takes_a_pasted_address_when_the_browser_is_elsewhere() {
    let issuer = Arc::new(Mutex::new(Issuer::default()));
    let server = server(issuer.clone()).await;
    let dir = agent_dir("login-codex");
    let subs = subscriptions(&server, &dir);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut request = sign_in_request(Kind::Codex);
    request.pasted = Some(rx);
    let is2 = issuer.clone();
    let notify = move |n: Notice| {
        if let Notice::OpenUrl { url, paste_hint } = n {
            assert!(paste_hint);
            let q = query(&url);
            assert_eq!(q["client_id"], "app_EMoamEEZ73f0CkXaXp7hrann");
            assert_eq!(q["originator"], "pi");
            assert!(q["redirect_uri"].ends_with("/auth/callback"));
            is2.lock().unwrap().challenge = q.get("code_challenge").cloned();
            // What the browser on another machine ended on, pasted.
            tx.send(format!(
                "{}?code=codex-code-1&state={}",
                q["redirect_uri"], q["state"]
            ))
            .unwrap();
        }
    };
    let creds = sign_in(&subs, request, &notify).await.unwrap();
    assert_eq!(creds.refresh, "rt-codex-signed-in");
    assert_eq!(creds.extra["accountId"], "acct-42");
    subs.store(Kind::Codex, creds).await.unwrap();
    let v: Value = serde_json::from_str(&read(&dir)).unwrap();
    let keys: Vec<&str> = v["openai-codex"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["type", "access", "refresh", "expires", "accountId"]);
}

#[tokio::test]
async fn a_pasted_address_from_another_sign_in_is_refused() {
    let server = server(Arc::default()).await;
    let dir = agent_dir("login-mismatch");
    let subs = subscriptions(&server, &dir);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut request = sign_in_request(Kind::Codex);
    request.pasted = Some(rx);
    tx.send("http://localhost:1455/auth/callback?code=x&state=someone-else".into())
        .unwrap();
    let e = sign_in(&subs, request, &|_| {}).await.unwrap_err();
    assert!(e.contains("state mismatch") && e.contains("ChatGPT"), "{e}");
    assert!(!dir.join("auth.json").exists(), "nothing stored");
}

#[tokio::test]
async fn copilot_signs_in_with_a_device_code_through_pending_and_slow_down() {
    let issuer = Arc::new(Mutex::new(Issuer::default()));
    let server = server(issuer.clone()).await;
    let dir = agent_dir("login-copilot");
    let subs = subscriptions(&server, &dir);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let creds = sign_in(&subs, sign_in_request(Kind::Copilot), &move |n| {
        s2.lock().unwrap().push(n)
    })
    .await
    .unwrap();
    assert_eq!(
        seen.lock().unwrap()[0],
        Notice::DeviceCode {
            url: "https://github.example/login/device".into(),
            code: "ABCD-1234".into()
        }
    );
    assert_eq!(issuer.lock().unwrap().polls, 3);
    assert_eq!(creds.refresh, "ghu_device-token");
    assert!(creds.access.starts_with("tid=copilot-"));
    let polls = requests_to(&server, "/login/oauth/access_token");
    assert!(
        polls[0].raw.contains("client_id=Iv1.b507a08c87ecfe98"),
        "{}",
        polls[0].raw
    );
    assert!(
        polls[0]
            .raw
            .contains("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code")
    );
    subs.store(Kind::Copilot, creds).await.unwrap();
    let v: Value = serde_json::from_str(&read(&dir)).unwrap();
    let keys: Vec<&str> = v["github-copilot"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["type", "refresh", "access", "expires"]);
}

#[tokio::test]
async fn a_sign_in_can_be_cancelled_and_times_out() {
    let server = server(Arc::default()).await;
    let dir = agent_dir("login-cancel");
    let subs = subscriptions(&server, &dir);
    let request = sign_in_request(Kind::Claude);
    let cancel = request.cancel.clone();
    let notify = move |n: Notice| {
        if matches!(n, Notice::OpenUrl { .. }) {
            cancel.cancel();
        }
    };
    let e = sign_in(&subs, request, &notify).await.unwrap_err();
    assert!(e.contains("Claude Pro/Max sign-in cancelled"), "{e}");

    let mut request = sign_in_request(Kind::Codex);
    request.timeout = std::time::Duration::from_millis(50);
    let e = sign_in(&subs, request, &|_| {}).await.unwrap_err();
    assert!(
        e.contains("timed out") && e.contains("nothing was stored"),
        "{e}"
    );
    assert!(!dir.join("auth.json").exists());
}

// ----- the binary: `pi --login`, `--logout`, `--list-models` ------------------------------------

fn pi_bin(server: &TestServer, dir: &Path) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_pi"));
    c.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.join("home"))
        .env("PI_CODING_AGENT_DIR", dir)
        .env("PI_NO_BROWSER", "1")
        .env("OLLAMA_HOST", "127.0.0.1:9")
        .env("PI_OAUTH_CALLBACK_PORT", "0")
        .env("PI_OAUTH_GITHUB_COPILOT_GITHUB_URL", &server.url)
        .env("PI_OAUTH_GITHUB_COPILOT_GITHUB_API_URL", &server.url)
        .env(
            "PI_OAUTH_OPENAI_CODEX_TOKEN_URL",
            format!("{}/oauth/token", server.url),
        )
        .env(
            "PI_OAUTH_OPENAI_CODEX_AUTHORIZE_URL",
            "https://auth.example/oauth/authorize",
        )
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    c
}

async fn models_listed(server: &TestServer, dir: &Path, search: &str) -> String {
    let out = pi_bin(server, dir)
        .args(["--list-models", search])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn pi_login_signs_in_to_copilot_without_the_tui_and_logout_signs_out() {
    use tokio::io::AsyncWriteExt;
    let issuer = Arc::new(Mutex::new(Issuer::default()));
    let server = server(issuer).await;
    let dir = agent_dir("bin-copilot");
    assert!(
        !models_listed(&server, &dir, "gpt-4.1")
            .await
            .contains("github-copilot/"),
        "no Copilot models before signing in"
    );
    let mut child = pi_bin(&server, &dir)
        .args(["--login", "copilot"])
        .spawn()
        .unwrap();
    // Enter: github.com.
    child.stdin.take().unwrap().write_all(b"\n").await.unwrap();
    let out = child.wait_with_output().await.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("https://github.example/login/device") && err.contains("ABCD-1234"),
        "{err}"
    );
    assert!(err.contains("Signed in to GitHub Copilot"), "{err}");
    assert!(
        !err.contains("ghu_device-token") && !err.contains("tid=copilot"),
        "{err}"
    );
    let v: Value = serde_json::from_str(&read(&dir)).unwrap();
    assert_eq!(v["github-copilot"]["refresh"], "ghu_device-token");
    #[cfg(unix)]
    assert_eq!(mode(&dir), 0o600);

    let listed = models_listed(&server, &dir, "gpt-4.1").await;
    assert!(listed.contains("github-copilot/gpt-4.1"), "{listed}");

    let out = pi_bin(&server, &dir)
        .args(["--logout", "github-copilot"])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Signed out of GitHub Copilot"));
    let v: Value = serde_json::from_str(&read(&dir)).unwrap();
    assert!(v.get("github-copilot").is_none());
    assert!(
        !models_listed(&server, &dir, "gpt-4.1")
            .await
            .contains("github-copilot/")
    );
}

#[tokio::test]
async fn pi_login_prints_the_address_and_takes_the_browsers_answer() {
    use tokio::io::AsyncBufReadExt;
    let issuer = Arc::new(Mutex::new(Issuer::default()));
    let server = server(issuer.clone()).await;
    let dir = agent_dir("bin-codex");
    let mut child = pi_bin(&server, &dir)
        .args(["--login", "openai-codex"])
        .spawn()
        .unwrap();
    let _stdin = child.stdin.take();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    let url = loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("pi printed the address");
        seen.push_str(&line);
        seen.push('\n');
        if let Some(u) = line
            .trim()
            .strip_prefix("https://auth.example/oauth/authorize?")
        {
            break format!("https://auth.example/oauth/authorize?{u}");
        }
    };
    assert!(
        seen.contains("Open this address in a browser"),
        "no browser here: {seen}"
    );
    let q = query(&url);
    issuer.lock().unwrap().challenge = q.get("code_challenge").cloned();
    let answer = reqwest::get(format!(
        "{}?code=codex-code-1&state={}",
        q["redirect_uri"], q["state"]
    ))
    .await
    .unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    while let Some(line) = lines.next_line().await.unwrap() {
        seen.push_str(&line);
        seen.push('\n');
    }
    let status = child.wait().await.unwrap();
    assert!(status.success(), "{seen}");
    assert!(
        seen.contains("Signed in to ChatGPT Plus/Pro (Codex)"),
        "{seen}"
    );
    assert!(
        !seen.contains("codex-code-1") && !seen.contains("rt-codex"),
        "{seen}"
    );
    let v: Value = serde_json::from_str(&read(&dir)).unwrap();
    assert_eq!(v["openai-codex"]["accountId"], "acct-42");
    assert!(
        models_listed(&server, &dir, "codex")
            .await
            .contains("openai-codex/gpt-5.3-codex")
    );
}

#[tokio::test]
async fn pi_login_of_a_provider_without_a_subscription_says_which_have_one() {
    let server = server(Arc::default()).await;
    let dir = agent_dir("bin-groq");
    let out = pi_bin(&server, &dir)
        .args(["--login", "groq"])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("openai-codex") && err.contains("github-copilot"),
        "{err}"
    );
}

/// Every file under `dir` but `auth.json`, as text.
fn files_but_auth(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n != "auth.json") {
                out.push((
                    p.clone(),
                    String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned(),
                ));
            }
        }
    }
    out
}

#[tokio::test]
async fn a_subscription_only_user_can_run_pi_and_the_token_stays_out_of_the_session() {
    let server = server(Arc::default()).await;
    let dir = agent_dir("bin-print");
    let token = codex_jwt(99);
    // Only the sign-in: no API key anywhere.
    let only = json!({"openai-codex": {
        "type": "oauth", "access": token, "refresh": "rt-codex-never-shown",
        "expires": now_ms() + 3_600_000, "accountId": "acct-42",
    }});
    std::fs::write(
        dir.join("auth.json"),
        serde_json::to_string_pretty(&only).unwrap(),
    )
    .unwrap();
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let out = pi_bin(&server, &dir)
        .env(
            "PI_OAUTH_OPENAI_CODEX_API_URL",
            format!("{}/codex", server.url),
        )
        .current_dir(&work)
        .args(["-p", "say hello"])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hello");
    let sent = &requests_to(&server, "/codex/responses")[0];
    assert_eq!(
        sent.body["model"], "gpt-5.5",
        "the subscription's default model"
    );
    assert_eq!(sent.header("chatgpt-account-id"), Some("acct-42"));
    let files = files_but_auth(&dir);
    assert!(
        files
            .iter()
            .any(|(p, _)| p.extension().is_some_and(|e| e == "jsonl")),
        "a session was saved"
    );
    for (p, text) in files {
        assert!(
            !text.contains(&token) && !text.contains("rt-codex-never-shown"),
            "{}",
            p.display()
        );
    }
}

/// The ids RPC `get_available_models` answers with, for the sign-ins in `auth`.
async fn rpc_models(server: &TestServer, tag: &str, auth: &Value) -> Vec<String> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let dir = agent_dir(tag);
    std::fs::write(
        dir.join("auth.json"),
        serde_json::to_string_pretty(auth).unwrap(),
    )
    .unwrap();
    let mut child = pi_bin(server, &dir)
        .args(["--mode", "rpc", "--no-session"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"id\":\"m\",\"type\":\"get_available_models\"}\n")
        .await
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        let line = tokio::time::timeout(std::time::Duration::from_secs(10), lines.next_line())
            .await
            .expect("an answer in time")
            .unwrap()
            .expect("pi answered");
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["type"] == "response" && v["id"] == "m" {
            return v["data"]["models"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    format!(
                        "{}/{}",
                        m["provider"].as_str().unwrap(),
                        m["id"].as_str().unwrap()
                    )
                })
                .collect();
        }
    }
}

#[tokio::test]
async fn rpc_offers_a_subscriptions_models_only_when_signed_in() {
    let server = server(Arc::default()).await;
    let key_only = json!({"groq": {"type": "api_key", "key": "gsk-a-key-for-the-start"}});
    let models = rpc_models(&server, "rpc-none", &key_only).await;
    assert!(models.iter().any(|m| m.starts_with("groq/")), "{models:?}");
    assert!(
        !models.iter().any(|m| m.starts_with("openai-codex/")),
        "{models:?}"
    );
    let signed_in = json!({"openai-codex": {
        "type": "oauth", "access": codex_jwt(1), "refresh": "rt-x",
        "expires": now_ms() + 3_600_000, "accountId": "acct-42",
    }});
    let models = rpc_models(&server, "rpc-codex", &signed_in).await;
    assert!(
        models.iter().any(|m| m == "openai-codex/gpt-5.5"),
        "{models:?}"
    );
    assert!(
        !models.iter().any(|m| m.starts_with("github-copilot/")),
        "{models:?}"
    );
}

#[tokio::test]
async fn a_sign_in_removed_by_another_pi_is_not_brought_back_by_a_refresh() {
    let issuer = Arc::new(Mutex::new(Issuer {
        refresh: [("anthropic", "sk-ant-ort01-first".to_string())].into(),
        expires_in: 3600,
        ..Default::default()
    }));
    let server = server(issuer).await;
    let dir = agent_dir("claude-signed-out");
    std::fs::write(dir.join("auth.json"), expired_claude("sk-ant-ort01-first")).unwrap();
    let pi = pi(&server, &dir);
    // Another pi signs out meanwhile.
    let after_logout = node_auth(json!({}));
    std::fs::write(dir.join("auth.json"), &after_logout).unwrap();
    let e = ask(&pi, "anthropic", "claude-sonnet-4-5")
        .await
        .unwrap_err();
    assert!(
        e.contains("no longer in auth.json") && e.contains("/login"),
        "{e}"
    );
    assert!(requests_to(&server, "/v1/oauth/token").is_empty());
    assert_eq!(read(&dir), after_logout);
}
