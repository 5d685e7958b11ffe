//! The HTTP side of the `web_fetch` tool: one GET, at most [`MAX_REDIRECTS`] redirects, a
//! connect and a whole-request time limit, the body read up to [`MAX_BODY`] bytes. No cookies,
//! no credentials, no provider key ever goes with it; a proxy set in the environment is used
//! as for any other request.

use std::time::Duration;

use async_trait::async_trait;

use crate::tools::web_fetch::{Fetched, Fetcher};

/// Redirects followed before the fetch fails (a loop ends here).
pub const MAX_REDIRECTS: usize = 5;
/// The most of a body read (the rest is left unread).
pub const MAX_BODY: usize = 5 * 1024 * 1024;
const CONNECT: Duration = Duration::from_secs(10);
const WHOLE: Duration = Duration::from_secs(30);

/// Fetches pages over HTTP(S).
pub struct HttpFetcher {
    client: reqwest::Client,
    whole: Duration,
}

impl HttpFetcher {
    pub fn new() -> Result<Self, String> {
        Self::with_limit(WHOLE)
    }

    /// With another time limit for the whole request (tests).
    pub fn with_limit(whole: Duration) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT)
            .redirect(reqwest::redirect::Policy::limited(MAX_REDIRECTS))
            .user_agent(concat!("pi/", env!("CARGO_PKG_VERSION"), " (web_fetch)"))
            .build()
            .map_err(|e| format!("cannot set up HTTP: {e}"))?;
        Ok(HttpFetcher { client, whole })
    }
}

#[async_trait]
impl Fetcher for HttpFetcher {
    async fn fetch(&self, url: &str) -> Result<Fetched, String> {
        let get = async {
            let mut resp = self
                .client
                .get(url)
                .header(
                    "accept",
                    "text/html, text/markdown, text/plain, application/json;q=0.9, */*;q=0.5",
                )
                .send()
                .await
                .map_err(|e| describe(&e))?;
            let status = resp.status().as_u16();
            let final_url = resp.url().to_string();
            let content_type = resp
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            let mut body = Vec::new();
            let mut cut = false;
            while let Some(chunk) = resp.chunk().await.map_err(|e| describe(&e))? {
                let room = MAX_BODY - body.len();
                if chunk.len() > room {
                    body.extend_from_slice(&chunk[..room]);
                    cut = true;
                    break;
                }
                body.extend_from_slice(&chunk);
            }
            Ok(Fetched {
                url: final_url,
                status,
                content_type,
                body,
                cut,
            })
        };
        match tokio::time::timeout(self.whole, get).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "no whole answer within {} s",
                self.whole.as_secs_f64()
            )),
        }
    }
}

/// A request error in a few words.
fn describe(e: &reqwest::Error) -> String {
    if e.is_redirect() {
        return format!("more than {MAX_REDIRECTS} redirects (a redirect loop?)");
    }
    if e.is_connect() {
        return format!("could not connect ({e})");
    }
    if e.is_timeout() {
        return "it timed out".into();
    }
    e.to_string()
}
