//! `web_fetch`: a web page as readable text. HTML becomes Markdown (scripts, styles and other
//! page furniture dropped); text and JSON come as they are; anything else is refused. The
//! result is cut to the tools' size limits with the usual notice.
//!
//! The fetching itself (HTTP, redirects, time and size limits) is a [`Fetcher`] the
//! composition root supplies: this module sees bytes and headers, never a connection.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::args::Args;
use super::info::{ToolInfo, tool_info_accessors};
use super::truncate::{ToolLimits, append_notices, format_size, limit_size, truncate_head};
use crate::agent::protocol::tool::{AgentTool, ToolError, ToolInvocation, ToolOutput};

/// What came back for a URL.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fetched {
    /// Where the page was found, after redirects.
    pub url: String,
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
    /// The body was longer than the fetcher reads; this is its start.
    pub cut: bool,
}

/// Gets a URL.
#[async_trait]
pub trait Fetcher: Send + Sync {
    async fn fetch(&self, url: &str) -> Result<Fetched, String>;
}

pub struct WebFetchTool {
    fetcher: Arc<dyn Fetcher>,
    limits: ToolLimits,
    info: ToolInfo,
}

impl WebFetchTool {
    pub fn new(fetcher: Arc<dyn Fetcher>, limits: ToolLimits) -> Self {
        WebFetchTool {
            info: ToolInfo::new(
                "web_fetch",
                "Fetch a web page (http or https) and read it as Markdown: documentation, an \
                 issue, an API reference. Text and JSON come back as they are. Long pages are \
                 cut to the tools' limits.",
                json!({
                    "type": "object",
                    "properties": {
                        "url": {"type": "string", "description": "The page's address, http:// or https://"}
                    },
                    "required": ["url"]
                }),
            ),
            fetcher,
            limits,
        }
    }
}

/// HTML as Markdown, without what a reader never sees.
fn html_to_markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "svg", "iframe", "head", "nav", "footer", "form",
            "template", "canvas",
        ])
        .build();
    match converter.convert(html) {
        Ok(md) => md,
        // The converter failing is no reason to give nothing: the text without its tags.
        Err(_) => html.to_string(),
    }
}

/// The page's `<title>`, when it has one.
fn title_of(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let start = lower.find("<title")?;
    let open_end = start + lower[start..].find('>')? + 1;
    let end = open_end + lower[open_end..].find("</title>")?;
    let t = html[open_end..end].trim();
    (!t.is_empty()).then(|| t.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Whether a content type is text pi can show.
fn readable(content_type: &str) -> bool {
    let ct = content_type.to_ascii_lowercase();
    ct.is_empty()
        || ct.starts_with("text/")
        || ct.contains("json")
        || ct.contains("xml")
        || ct.contains("javascript")
        || ct.contains("yaml")
        || ct.contains("toml")
}

#[async_trait]
impl AgentTool for WebFetchTool {
    tool_info_accessors!();

    fn interruptible(&self, _args: &Value) -> Result<bool, String> {
        Ok(true)
    }

    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let args = Args::new("web_fetch", &call.args)?;
        let url = args.required_str("url")?.trim().to_string();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(ToolError::new(format!(
                "`{url}` is not an http:// or https:// address"
            )));
        }
        let fetched = tokio::select! {
            r = self.fetcher.fetch(&url) => r.map_err(|e| ToolError::new(format!("Cannot fetch {url}: {e}")))?,
            () = call.cancel.cancelled() => return Err(ToolError::new("Stopped before the page arrived")),
        };
        if !(200..300).contains(&fetched.status) {
            let text = String::from_utf8_lossy(&fetched.body);
            let hint: String = text.chars().take(300).collect();
            return Err(ToolError::new(format!(
                "{} answered {}{}",
                fetched.url,
                fetched.status,
                if hint.trim().is_empty() {
                    String::new()
                } else {
                    format!(": {}", hint.trim())
                }
            )));
        }
        if !readable(&fetched.content_type) {
            return Err(ToolError::new(format!(
                "{} is {} ({}), not text this tool can read",
                fetched.url,
                fetched.content_type,
                format_size(fetched.body.len() as u64)
            )));
        }
        let raw = String::from_utf8_lossy(&fetched.body);
        let html = fetched.content_type.to_ascii_lowercase().contains("html")
            || (fetched.content_type.is_empty() && raw.trim_start().starts_with('<'));
        let (title, body) = if html {
            (title_of(&raw), html_to_markdown(&raw))
        } else {
            (None, raw.into_owned())
        };
        let cut = truncate_head(body.trim(), self.limits.max_lines, self.limits.max_bytes);
        let mut text = String::new();
        if let Some(t) = &title {
            text.push_str(&format!("# {t}\n\n"));
        }
        if fetched.url != url {
            text.push_str(&format!("(from {})\n\n", fetched.url));
        }
        text.push_str(&cut.content);
        let mut notes = Vec::new();
        if fetched.cut {
            notes.push(format!(
                "The page was longer than pi reads ({}); this is its start.",
                format_size(fetched.body.len() as u64)
            ));
        }
        if cut.truncated() {
            notes.push(format!(
                "Cut at {} ({} of {} lines shown).",
                limit_size(self.limits.max_bytes),
                cut.output_lines,
                cut.total_lines
            ));
        }
        append_notices(&mut text, &notes);
        Ok(ToolOutput::text(text).with_details(json!({
            "url": fetched.url,
            "status": fetched.status,
            "contentType": fetched.content_type,
            "bytes": fetched.body.len(),
            "truncation": cut.to_details(),
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_reads_as_markdown_without_scripts_and_styles() {
        let html = "<html><head><title> The  Guide </title><style>p{color:red}</style></head>\
                    <body><nav>menu</nav><h1>Install</h1><p>Run <code>cargo add x</code>.</p>\
                    <script>alert(1)</script></body></html>";
        let md = html_to_markdown(html);
        assert!(md.contains("# Install"), "{md}");
        assert!(md.contains("`cargo add x`"), "{md}");
        assert!(
            !md.contains("alert") && !md.contains("color:red") && !md.contains("menu"),
            "{md}"
        );
        assert_eq!(title_of(html).as_deref(), Some("The Guide"));
        assert!(readable("text/html; charset=utf-8"));
        assert!(readable("application/json"));
        assert!(!readable("image/png"));
    }
}
