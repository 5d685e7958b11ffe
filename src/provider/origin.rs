//! Who an error is about: the provider and the URL a request went to, with credentials masked,
//! so "not found (HTTP 404)" or "could not connect" says which endpoint to look at.
//!
//! Keys normally travel in headers, but a base URL may carry one (`?key=…` for Gemini, a
//! `user:password@` part, a signed URL's `sig=`): [`masked_url`] replaces every query value
//! whose name looks like a credential, and any password, with `***` before the URL is shown.

use reqwest::Url;

/// Stands in for a credential in a URL that is shown.
const MASK: &str = "***";

/// True for a query parameter name that may carry a credential.
fn secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "key", "token", "secret", "sig", "auth", "password", "pass", "code",
    ]
    .iter()
    .any(|part| name.contains(part))
}

/// `url` as it may be shown: credentials in the query and the password masked. Text that is
/// not a URL with a host keeps only what comes before any `?`, and after any `@`.
pub(crate) fn masked_url(url: &str) -> String {
    let Some(mut parsed) = Url::parse(url).ok().filter(Url::has_host) else {
        let before_query = url.split('?').next().unwrap_or_default();
        return match before_query.rsplit_once('@') {
            Some((_, host)) => format!("{MASK}@{host}"),
            None => before_query.to_string(),
        };
    };
    if parsed.password().is_some() {
        let _ = parsed.set_password(Some(MASK));
    }
    if parsed.query().is_some() {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(k, v)| {
                let v = if secret_name(&k) {
                    MASK.to_string()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
        // The encoder writes `***` as `%2A%2A%2A`; shown plainly it reads as masked.
        let shown = parsed.to_string().replace("%2A%2A%2A", MASK);
        return shown;
    }
    parsed.to_string()
}

/// `provider (url)`, the prefix of a connection or HTTP error.
pub(crate) fn origin(provider: &str, url: &str) -> String {
    let provider = if provider.trim().is_empty() {
        "the provider"
    } else {
        provider
    };
    format!("{provider} ({})", masked_url(url))
}

/// The standard reason for a status in lower case (`not found` for 404), if it has one.
pub(crate) fn status_reason(status: u16) -> Option<String> {
    reqwest::StatusCode::from_u16(status)
        .ok()?
        .canonical_reason()
        .map(str::to_ascii_lowercase)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_in_the_query_and_passwords_are_masked() {
        assert_eq!(
            masked_url(
                "https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent?alt=sse&key=AIzaSECRET"
            ),
            "https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent?alt=sse&key=***"
        );
        assert_eq!(
            masked_url(
                "https://me:hunter2@proxy.example/v1/chat?api-version=1&sig=abc&access_token=t"
            ),
            "https://me:***@proxy.example/v1/chat?api-version=1&sig=***&access_token=***"
        );
        assert_eq!(
            masked_url("http://127.0.0.1:9/v1/chat/completions"),
            "http://127.0.0.1:9/v1/chat/completions"
        );
        assert_eq!(masked_url("not a url?key=x"), "not a url");
        assert_eq!(masked_url("user:pw@host/x?key=1"), "***@host/x");
    }

    #[test]
    fn origins_and_reasons() {
        assert_eq!(
            origin("openai", "http://127.0.0.1:9/v1/chat/completions?key=k"),
            "openai (http://127.0.0.1:9/v1/chat/completions?key=***)"
        );
        assert_eq!(origin(" ", "http://h/"), "the provider (http://h/)");
        assert_eq!(status_reason(404).as_deref(), Some("not found"));
        assert_eq!(status_reason(529), None);
    }
}
