//! Signing in, each subscription the way its provider does it:
//!
//! * Claude Pro/Max and ChatGPT (Codex): authorisation code with PKCE. pi listens on the
//!   loopback port registered for the provider's client (53692 and 1455), shows the address to
//!   open, and waits for the browser to come back with the code — or for the person to paste
//!   the address the browser ended on (a browser on another machine cannot reach this one's
//!   loopback). The `state` is checked; the code is traded for tokens.
//! * GitHub Copilot: the device flow. pi shows a code and the address to enter it at, polls
//!   until the person has, then trades the GitHub token for a Copilot token.
//!
//! Both end on a cancel (the token given) or after a timeout, with a message saying which.
//! Nothing here prints a token; the callback's address (which holds the code) is never shown.

use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::pkce::{Pkce, state as new_state};
use super::refresh::{
    ANTHROPIC_CLIENT_ID, Body, CODEX_CLIENT_ID, COPILOT_CLIENT_ID, copilot_token, form_encode,
    post, tokens,
};
use super::{Credentials, Kind, Subscriptions};

/// How long a browser sign-in may take.
pub const BROWSER_TIMEOUT: Duration = Duration::from_secs(300);

const CLAUDE_SCOPES: &str = "org:create_api_key user:profile user:inference \
                             user:sessions:claude_code user:mcp_servers user:file_upload";
const CODEX_SCOPES: &str = "openid profile email offline_access";

/// What the person must be told during a sign-in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    /// Open `url` in a browser (and, if it is on another machine, paste back where it ends).
    OpenUrl { url: String, paste_hint: bool },
    /// Enter `code` at `url`.
    DeviceCode { url: String, code: String },
    /// A step under way.
    Progress(String),
}

/// One sign-in's settings.
pub struct SignIn {
    pub kind: Kind,
    /// GitHub Enterprise domain (Copilot; `None`: github.com).
    pub enterprise_domain: Option<String>,
    /// Lines the person pastes (the address the browser ended on, or just the code).
    pub pasted: Option<mpsc::UnboundedReceiver<String>>,
    pub cancel: CancellationToken,
    /// How long to wait for the person (a device code's own expiry may be shorter).
    pub timeout: Duration,
}

/// A GitHub Enterprise domain from what was typed (`https://ghe.example.com/` →
/// `ghe.example.com`); blank is github.com.
pub fn enterprise_domain(input: &str) -> Result<Option<String>, String> {
    let t = input.trim();
    if t.is_empty() {
        return Ok(None);
    }
    let rest = t.split_once("://").map_or(t, |(_, r)| r);
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let ok = !host.is_empty()
        && host.contains('.')
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == ':');
    if ok {
        Ok(Some(host.to_ascii_lowercase()))
    } else {
        Err(format!("`{t}` is not a domain (like company.ghe.com)"))
    }
}

/// Sign in; the credentials are not yet stored (see [`Subscriptions::store`]).
pub async fn sign_in(
    subs: &Subscriptions,
    mut request: SignIn,
    notify: &(dyn Fn(Notice) + Send + Sync),
) -> Result<Credentials, String> {
    let kind = request.kind;
    let cancel = request.cancel.clone();
    let timeout = request.timeout;
    let work = async {
        match kind {
            Kind::Claude | Kind::Codex => browser(subs, &mut request, notify).await,
            Kind::Copilot => device(subs, &request, notify).await,
        }
    };
    tokio::select! {
        r = work => r.map_err(|e| format!("{} sign-in failed: {e}", kind.label())),
        () = cancel.cancelled() => Err(format!("{} sign-in cancelled.", kind.label())),
        () = tokio::time::sleep(timeout) => Err(format!(
            "{} sign-in timed out after {} s; nothing was stored.",
            kind.label(),
            timeout.as_secs()
        )),
    }
}

/// The authorisation-code flow with PKCE on a loopback callback.
async fn browser(
    subs: &Subscriptions,
    request: &mut SignIn,
    notify: &(dyn Fn(Notice) + Send + Sync),
) -> Result<Credentials, String> {
    let kind = request.kind;
    let endpoints = subs.endpoints();
    let pkce = Pkce::new()?;
    let state = new_state()?;
    let port = endpoints.callback_port(kind);
    let listener = TcpListener::bind((endpoints.callback_host().as_str(), port))
        .await
        .ok();
    let bound = listener
        .as_ref()
        .and_then(|l| l.local_addr().ok())
        .map_or(port, |a| a.port());
    let path = match kind {
        Kind::Claude => "/callback",
        _ => "/auth/callback",
    };
    let redirect_uri = format!("http://localhost:{bound}{path}");
    let mut params: Vec<(&str, String)> = Vec::new();
    if kind == Kind::Claude {
        params.push(("code", "true".into()));
    }
    params.extend([
        ("response_type", "code".to_string()),
        (
            "client_id",
            match kind {
                Kind::Claude => ANTHROPIC_CLIENT_ID,
                _ => CODEX_CLIENT_ID,
            }
            .to_string(),
        ),
        ("redirect_uri", redirect_uri.clone()),
        (
            "scope",
            match kind {
                Kind::Claude => CLAUDE_SCOPES,
                _ => CODEX_SCOPES,
            }
            .to_string(),
        ),
        ("code_challenge", pkce.challenge.clone()),
        ("code_challenge_method", "S256".into()),
        ("state", state.clone()),
    ]);
    if kind == Kind::Codex {
        params.extend([
            ("id_token_add_organizations", "true".to_string()),
            ("codex_cli_simplified_flow", "true".to_string()),
            ("originator", "pi".to_string()),
        ]);
    }
    let url = format!("{}?{}", endpoints.authorize_url(kind), form_encode(&params));
    notify(Notice::OpenUrl {
        url,
        paste_hint: request.pasted.is_some(),
    });
    if listener.is_none() && request.pasted.is_none() {
        return Err(format!(
            "could not listen on 127.0.0.1:{port} for the browser's answer (is another sign-in \
             running?)"
        ));
    }
    let code = wait_for_code(listener, path, &state, request.pasted.as_mut()).await?;
    notify(Notice::Progress("Trading the code for tokens…".into()));
    let client = subs.client()?;
    let token_url = endpoints.token_url(kind);
    let body = match kind {
        Kind::Claude => Body::Json(json!({
            "grant_type": "authorization_code",
            "client_id": ANTHROPIC_CLIENT_ID,
            "code": code,
            "state": state,
            "redirect_uri": redirect_uri,
            "code_verifier": pkce.verifier,
        })),
        _ => Body::Form(vec![
            ("grant_type", "authorization_code".into()),
            ("client_id", CODEX_CLIENT_ID.into()),
            ("code", code),
            ("code_verifier", pkce.verifier.clone()),
            ("redirect_uri", redirect_uri),
        ]),
    };
    let reply = post(&client, &token_url, &[], body).await?;
    let none = Credentials {
        access: String::new(),
        refresh: String::new(),
        expires: 0,
        extra: Map::new(),
    };
    let credentials = tokens(kind, &reply, &none)?;
    if credentials.refresh.is_empty() {
        return Err("the answer holds no refresh token".into());
    }
    Ok(credentials)
}

/// The code, from the browser's visit to the callback or from a pasted line, whichever comes
/// first. A visit with the wrong `state` is turned away and waiting goes on.
async fn wait_for_code(
    listener: Option<TcpListener>,
    path: &str,
    state: &str,
    mut pasted: Option<&mut mpsc::UnboundedReceiver<String>>,
) -> Result<String, String> {
    loop {
        let accept = async {
            match &listener {
                Some(l) => l.accept().await.ok(),
                None => std::future::pending().await,
            }
        };
        let paste = async {
            match pasted.as_deref_mut() {
                Some(rx) => rx.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            conn = accept => {
                let Some((mut sock, _)) = conn else { continue };
                let target = read_request_target(&mut sock).await;
                let (status, page, outcome) = judge_callback(target.as_deref(), path, state);
                let response = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{page}",
                    page.len()
                );
                let _ = sock.write_all(response.as_bytes()).await;
                let _ = sock.shutdown().await;
                match outcome {
                    Some(r) => return r,
                    None => continue,
                }
            }
            line = paste => {
                let Some(line) = line else {
                    // Nothing more will be pasted; the browser may still answer.
                    pasted = None;
                    continue;
                };
                match parse_pasted(&line) {
                    Ok((code, s)) if s.as_deref().is_none_or(|s| s == state) => return Ok(code),
                    Ok(_) => return Err("the pasted address belongs to another sign-in (state mismatch)".into()),
                    Err(e) => return Err(e),
                }
            }
        }
    }
}

/// The request target (`/callback?code=…`) of one HTTP request.
async fn read_request_target(sock: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
        let n = tokio::time::timeout(Duration::from_secs(10), sock.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&buf);
    let line = text.lines().next()?;
    let mut parts = line.split_whitespace();
    (parts.next()? == "GET").then_some(())?;
    parts.next().map(str::to_string)
}

/// What to answer a visit to the callback, and whether it ends the wait (with a code or an
/// error from the provider).
fn judge_callback(
    target: Option<&str>,
    path: &str,
    state: &str,
) -> (&'static str, String, Option<Result<String, String>>) {
    let page = |msg: &str| {
        format!(
            "<!doctype html><html><body style=\"font-family:sans-serif\"><p>{msg}</p></body></html>"
        )
    };
    let Some(target) = target else {
        return ("400 Bad Request", page("Not a sign-in answer."), None);
    };
    let (p, query) = target.split_once('?').unwrap_or((target, ""));
    if p != path {
        return ("404 Not Found", page("Not found."), None);
    }
    let params = parse_query(query);
    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    if let Some(e) = get("error") {
        let shown: String = e.chars().filter(char::is_ascii_graphic).take(80).collect();
        return (
            "400 Bad Request",
            page("Sign-in did not complete. You can close this window."),
            Some(Err(format!("the provider said `{shown}`"))),
        );
    }
    if get("state").as_deref() != Some(state) {
        return (
            "400 Bad Request",
            page("This answer belongs to another sign-in."),
            None,
        );
    }
    match get("code").filter(|c| !c.is_empty()) {
        Some(code) => (
            "200 OK",
            page("Signed in to pi. You can close this window."),
            Some(Ok(code)),
        ),
        None => ("400 Bad Request", page("The answer holds no code."), None),
    }
}

/// `a=1&b=x%20y` as pairs, decoded.
fn parse_query(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16);
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let pair = (bytes[i] == b'%')
            .then(|| Some((hex(*bytes.get(i + 1)?)?, hex(*bytes.get(i + 2)?)?)))
            .flatten();
        match (bytes[i], pair) {
            (_, Some((hi, lo))) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b'+', None) => {
                out.push(b' ');
                i += 1;
            }
            (b, None) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A pasted line: the whole address the browser ended on, its query, `code#state`, or the
/// bare code.
fn parse_pasted(line: &str) -> Result<(String, Option<String>), String> {
    let v = line.trim();
    if v.is_empty() {
        return Err("nothing was pasted".into());
    }
    let query = if let Some((_, q)) = v.split_once('?') {
        Some(q.split('#').next().unwrap_or(""))
    } else if v.contains("code=") {
        Some(v)
    } else {
        None
    };
    if let Some(q) = query {
        let params = parse_query(q);
        let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        return match get("code").filter(|c| !c.is_empty()) {
            Some(code) => Ok((code, get("state"))),
            None => Err("the pasted address holds no code".into()),
        };
    }
    if let Some((code, state)) = v.split_once('#') {
        return Ok((code.to_string(), Some(state.to_string())));
    }
    Ok((v.to_string(), None))
}

/// GitHub's device flow, then the Copilot token.
async fn device(
    subs: &Subscriptions,
    request: &SignIn,
    notify: &(dyn Fn(Notice) + Send + Sync),
) -> Result<Credentials, String> {
    let endpoints = subs.endpoints();
    let domain = request.enterprise_domain.as_deref();
    let github = endpoints.github_url(domain);
    let client = subs.client()?;
    let ua = [("User-Agent", "GitHubCopilotChat/0.35.0")];
    let started = post(
        &client,
        &format!("{github}/login/device/code"),
        &ua,
        Body::Form(vec![
            ("client_id", COPILOT_CLIENT_ID.into()),
            ("scope", "read:user".into()),
        ]),
    )
    .await?;
    let text = |k: &str| started.get(k).and_then(Value::as_str).map(str::to_string);
    let (Some(device_code), Some(user_code), Some(url)) = (
        text("device_code"),
        text("user_code"),
        text("verification_uri"),
    ) else {
        return Err("GitHub's answer holds no device code".into());
    };
    let mut interval = started.get("interval").and_then(Value::as_u64).unwrap_or(5);
    let expires_in = started
        .get("expires_in")
        .and_then(Value::as_u64)
        .unwrap_or(900);
    notify(Notice::DeviceCode {
        url,
        code: user_code,
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(expires_in);
    let mut slowed = false;
    let github_token = loop {
        tokio::time::sleep(Duration::from_secs(interval)).await;
        if tokio::time::Instant::now() >= deadline {
            return Err(if slowed {
                "the code expired after GitHub asked pi to slow down (often a clock out of step \
                 in a VM or WSL; sync the clock and try again)"
                    .into()
            } else {
                "the code expired before it was entered".into()
            });
        }
        let answer = post(
            &client,
            &format!("{github}/login/oauth/access_token"),
            &ua,
            Body::Form(vec![
                ("client_id", COPILOT_CLIENT_ID.into()),
                ("device_code", device_code.clone()),
                (
                    "grant_type",
                    "urn:ietf:params:oauth:grant-type:device_code".into(),
                ),
            ]),
        )
        .await?;
        if let Some(t) = answer
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
        {
            break t.to_string();
        }
        match answer.get("error").and_then(Value::as_str) {
            Some("authorization_pending") => {}
            Some("slow_down") => {
                slowed = true;
                interval = answer
                    .get("interval")
                    .and_then(Value::as_u64)
                    .unwrap_or(interval + 5);
            }
            Some(e) => {
                let shown: String = e.chars().filter(char::is_ascii_graphic).take(80).collect();
                return Err(format!("GitHub said `{shown}`"));
            }
            None => return Err("GitHub's answer holds neither a token nor an error".into()),
        }
    };
    notify(Notice::Progress("Getting a Copilot token…".into()));
    copilot_token(endpoints, &client, &github_token, domain).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pasted_answers_in_every_form() {
        assert_eq!(
            parse_pasted("http://localhost:1455/auth/callback?code=abc&state=xyz").unwrap(),
            ("abc".into(), Some("xyz".into()))
        );
        assert_eq!(
            parse_pasted("code=a%2Fb&state=s").unwrap(),
            ("a/b".into(), Some("s".into()))
        );
        assert_eq!(
            parse_pasted(" abc#xyz \n").unwrap(),
            ("abc".into(), Some("xyz".into()))
        );
        assert_eq!(parse_pasted("abc").unwrap(), ("abc".into(), None));
        assert!(parse_pasted("   ").is_err());
        assert!(parse_pasted("http://x/cb?state=s").is_err());
    }

    #[test]
    fn callbacks_are_judged_by_path_state_and_code() {
        let (s, _, r) = judge_callback(Some("/callback?code=c1&state=st"), "/callback", "st");
        assert_eq!((s, r), ("200 OK", Some(Ok("c1".to_string()))));
        let (s, _, r) = judge_callback(Some("/callback?code=c1&state=forged"), "/callback", "st");
        assert_eq!((s, r), ("400 Bad Request", None));
        let (s, _, r) = judge_callback(Some("/favicon.ico"), "/callback", "st");
        assert_eq!((s, r), ("404 Not Found", None));
        let (_, _, r) = judge_callback(Some("/callback?error=access_denied"), "/callback", "st");
        assert!(r.unwrap().unwrap_err().contains("access_denied"));
    }

    #[test]
    fn enterprise_domains_are_hosts() {
        assert_eq!(enterprise_domain("").unwrap(), None);
        assert_eq!(
            enterprise_domain("https://GHE.example.com/login")
                .unwrap()
                .as_deref(),
            Some("ghe.example.com")
        );
        assert!(enterprise_domain("not a domain").is_err());
        assert_eq!(percent_decode("a%20b+c%zz%4"), "a b c%zz%4");
    }
}
