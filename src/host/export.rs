//! `/export` and `pi --export`: the conversation as a self-contained HTML page (the default)
//! or a markdown document (a name ending in `.md`).

use std::path::Path;

use crate::agent::protocol::types::{AgentMessage, ContentBlock, Message, UserContent};

/// The two forms an export takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Html,
    Markdown,
}

impl Format {
    /// Markdown for `.md`/`.markdown` names, HTML for anything else.
    pub fn for_path(path: &Path) -> Format {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("md" | "markdown") => Format::Markdown,
            _ => Format::Html,
        }
    }
}

/// The name an export gets when none is given: the local date and time.
pub fn default_name(now_ms: i64) -> String {
    format!(
        "pi-session-{}.html",
        crate::session::time::local_file_stamp(now_ms)
    )
}

/// The export of `messages` in `format`.
pub fn render(messages: &[AgentMessage], format: Format, title: &str) -> String {
    match format {
        Format::Html => html(messages, title),
        Format::Markdown => markdown(messages),
    }
}

/// The conversation as markdown: user and assistant turns as sections, tool calls and their
/// results in between.
pub fn markdown(messages: &[AgentMessage]) -> String {
    let mut out = String::from("# pi session\n\n");
    for m in messages {
        match m.as_llm() {
            Some(Message::User(u)) => {
                out.push_str(&format!("## User\n\n{}\n\n", u.content.joined_text()));
            }
            Some(Message::Assistant(a)) => {
                let text = a.text();
                if !text.trim().is_empty() {
                    out.push_str(&format!("## Assistant\n\n{text}\n\n"));
                }
                for call in a.tool_calls() {
                    out.push_str(&format!(
                        "**Tool call** `{}`: `{}`\n\n",
                        call.name, call.arguments
                    ));
                }
            }
            Some(Message::ToolResult(r)) => {
                out.push_str(&format!(
                    "**Result of `{}`{}**\n\n```\n{}\n```\n\n",
                    r.tool_name,
                    if r.is_error { " (error)" } else { "" },
                    r.text()
                ));
            }
            _ => {}
        }
    }
    out
}

/// `&`, `<`, `>` and quotes as entities.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Markdown as HTML. Raw HTML in the text is shown as text, never passed through: a
/// conversation may quote anything, and the page must not run it. Links keep only `http`,
/// `https` and `mailto` targets ([`safe_target`]); any other link (`javascript:`, `data:`,
/// `file:`, relative paths) becomes its text followed by its target as plain text. Images
/// never load (the page fetches nothing): one with a safe target becomes a link to it, any
/// other its alt text and target as plain text.
fn markdown_html(text: &str) -> String {
    use pulldown_cmark::{CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};
    // Per open link or image: whether it was kept as a link (and so needs its closing tag).
    let mut open: Vec<(bool, String)> = Vec::new();
    let mut events: Vec<Event> = Vec::new();
    let parser = Parser::new_ext(text, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH);
    for e in parser {
        match e {
            Event::Html(h) | Event::InlineHtml(h) => events.push(Event::Text(h)),
            Event::Start(Tag::Link {
                dest_url, title, ..
            })
            | Event::Start(Tag::Image {
                dest_url, title, ..
            }) => {
                let kept = safe_target(&dest_url);
                if kept {
                    events.push(Event::Start(Tag::Link {
                        link_type: LinkType::Inline,
                        dest_url: dest_url.clone(),
                        title,
                        id: CowStr::Borrowed(""),
                    }));
                }
                open.push((kept, dest_url.to_string()));
            }
            Event::End(TagEnd::Link | TagEnd::Image) => match open.pop() {
                Some((true, _)) => events.push(Event::End(TagEnd::Link)),
                Some((false, target)) => {
                    events.push(Event::Text(format!(" [link removed: {target}]").into()));
                }
                None => {}
            },
            e => events.push(e),
        }
    }
    let mut out = String::new();
    pulldown_cmark::html::push_html(&mut out, events.into_iter());
    out
}

/// Whether a link target may stay a live link in the page: an absolute `http:`, `https:` or
/// `mailto:` URL, read the way a browser reads it (tabs and line breaks inside dropped,
/// leading spaces and controls ignored, the scheme in any case).
fn safe_target(url: &str) -> bool {
    let cleaned: String = url
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    let cleaned = cleaned.trim_start_matches(|c: char| c <= ' ' || c.is_control());
    let Some(colon) = cleaned.find(':') else {
        return false;
    };
    let scheme = &cleaned[..colon];
    if scheme.is_empty() || scheme.contains(['/', '?', '#']) {
        return false;
    }
    let scheme = scheme.to_ascii_lowercase();
    matches!(scheme.as_str(), "http" | "https" | "mailto")
        && !cleaned.contains(|c: char| c.is_control() || crate::visible::is_invisible(c))
}

const STYLE: &str = "body{max-width:860px;margin:2em auto;padding:0 1em;font:15px/1.5 system-ui,sans-serif;\
color:#1d1d1f;background:#fff}h1{font-size:1.4em}.turn{margin:1.2em 0;padding:.6em 1em;border-radius:8px}\
.user{background:#eef3fb}.assistant{background:#f7f7f7}.role{font-size:.8em;font-weight:600;\
text-transform:uppercase;color:#666}details{margin:.4em 0}summary{cursor:pointer;font-family:monospace}\
pre{background:#272822;color:#f8f8f2;padding:.7em;border-radius:6px;overflow-x:auto;white-space:pre-wrap}\
code{font-family:ui-monospace,monospace}.error summary{color:#b00020}.thinking{color:#666;font-style:italic}\
.note{color:#666;font-size:.9em}";

/// The conversation as one HTML page with no outside resources.
pub fn html(messages: &[AgentMessage], title: &str) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{t}</title>\
         <style>{STYLE}</style></head><body>\n<h1>{t}</h1>\n",
        t = escape(title)
    );
    for m in messages {
        match m.as_llm() {
            Some(Message::User(u)) => {
                out.push_str("<div class=\"turn user\"><div class=\"role\">User</div>");
                out.push_str(&markdown_html(&u.content.joined_text()));
                if let UserContent::Blocks(blocks) = &u.content {
                    let images = blocks
                        .iter()
                        .filter(|b| matches!(b, ContentBlock::Image(_)))
                        .count();
                    if images > 0 {
                        out.push_str(&format!(
                            "<p class=\"note\">[{images} image{} attached]</p>",
                            if images == 1 { "" } else { "s" }
                        ));
                    }
                }
                out.push_str("</div>\n");
            }
            Some(Message::Assistant(a)) => {
                out.push_str("<div class=\"turn assistant\"><div class=\"role\">Assistant</div>");
                for block in &a.content {
                    match block {
                        ContentBlock::Thinking(t) if !t.thinking.trim().is_empty() => {
                            out.push_str(&format!(
                                "<details class=\"thinking\"><summary>thinking</summary>{}</details>",
                                markdown_html(&t.thinking)
                            ));
                        }
                        ContentBlock::Text(t) => out.push_str(&markdown_html(&t.text)),
                        ContentBlock::ToolCall(c) => out.push_str(&format!(
                            "<p><code>{}</code> <code>{}</code></p>",
                            escape(&c.name),
                            escape(&c.arguments.to_string())
                        )),
                        _ => {}
                    }
                }
                if let Some(e) = a.error_message.as_deref() {
                    out.push_str(&format!("<p class=\"note\">error: {}</p>", escape(e)));
                }
                out.push_str("</div>\n");
            }
            Some(Message::ToolResult(r)) => {
                out.push_str(&format!(
                    "<details class=\"{}\"><summary>result of {}{}</summary><pre>{}</pre></details>\n",
                    if r.is_error { "error" } else { "result" },
                    escape(&r.tool_name),
                    if r.is_error { " (error)" } else { "" },
                    escape(&r.text())
                ));
            }
            _ => {}
        }
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::types::{AssistantMessage, ContentBlock, ToolCall};
    use serde_json::json;

    #[test]
    fn turns_calls_and_results_become_sections() {
        let mut a = AssistantMessage::empty("api", "p", "m");
        a.content.push(ContentBlock::text("Looking."));
        a.content.push(ContentBlock::ToolCall(ToolCall {
            id: "c1".into(),
            name: "ls".into(),
            arguments: json!({"path": "."}),
            intent: None,
            thought_signature: None,
        }));
        let result = crate::agent::protocol::types::ToolResultMessage {
            tool_call_id: "c1".into(),
            tool_name: "ls".into(),
            content: vec![ContentBlock::text("a.rs")],
            details: None,
            is_error: false,
            useless: false,
            timestamp: 0,
        };
        let md = markdown(&[AgentMessage::user("what is here?"), a.into(), result.into()]);
        assert!(md.starts_with("# pi session\n\n## User\n\nwhat is here?"));
        assert!(md.contains("## Assistant\n\nLooking."));
        assert!(md.contains("**Tool call** `ls`: `{\"path\":\".\"}`"));
        assert!(md.contains("**Result of `ls`**\n\n```\na.rs\n```"));
    }

    #[test]
    fn html_pages_render_markdown_and_never_pass_html_through() {
        let mut a = AssistantMessage::empty("api", "p", "m");
        a.content.push(ContentBlock::text(
            "Use **bold** and `code`.\n\n<script>alert(1)</script>",
        ));
        a.content.push(ContentBlock::ToolCall(ToolCall {
            id: "c1".into(),
            name: "bash".into(),
            arguments: json!({"command": "echo '<b>'"}),
            intent: None,
            thought_signature: None,
        }));
        let page = html(
            &[AgentMessage::user("hi <there> & you"), a.into()],
            "Session <1>",
        );
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.contains("<title>Session &lt;1&gt;</title>"));
        assert!(page.contains("hi &lt;there&gt; &amp; you"));
        assert!(page.contains("<strong>bold</strong>"));
        assert!(!page.contains("<script>"), "{page}");
        assert!(!page.contains("<b>"));
        assert_eq!(Format::for_path(Path::new("x.MD")), Format::Markdown);
        assert_eq!(Format::for_path(Path::new("x.html")), Format::Html);
        assert_eq!(Format::for_path(Path::new("x")), Format::Html);
        assert!(default_name(0).starts_with("pi-session-19"));
    }

    #[test]
    fn links_keep_only_web_and_mail_targets() {
        for good in [
            "https://example.com/a?b#c",
            "HTTP://example.com",
            "mailto:a@example.com",
        ] {
            assert!(safe_target(good), "{good}");
        }
        for bad in [
            "javascript:alert(1)",
            "JaVaScRiPt:alert(1)",
            "  javascript:alert(1)",
            "\u{1}javascript:alert(1)",
            "java\tscript:alert(1)",
            "java\nscript:alert(1)",
            "vbscript:msgbox",
            "data:text/html,<script>alert(1)</script>",
            "file:///etc/passwd",
            "src/main.rs",
            "//evil.example/x",
            "#top",
            "",
        ] {
            assert!(!safe_target(bad), "{bad:?}");
        }
        let text = "[ok](https://example.com) [js](javascript:alert(1)) \
             [mixed](JaVaScRiPt:alert(2)) [ent](&#106;avascript:alert(3)) \
             [hex](&#x6A;avascript:alert(4)) [sp]( javascript:alert(5)) <javascript:alert(6)> \
             [d](data:text/html;base64,PHNjcmlwdD4=) ![img](https://example.com/p.png) \
             ![bad](javascript:alert(7)) [ref][r]\n\n[r]: vbscript:msgbox";
        let page = markdown_html(text);
        assert!(
            page.contains("<a href=\"https://example.com\">ok</a>"),
            "{page}"
        );
        assert!(
            page.contains("<a href=\"https://example.com/p.png\">img</a>"),
            "{page}"
        );
        assert!(!page.contains("<img"), "{page}");
        assert_eq!(page.matches("<a ").count(), 2, "{page}");
        assert!(
            page.contains("js [link removed: javascript:alert(1)]"),
            "{page}"
        );
        for n in 1..=7 {
            assert!(
                page.contains(&format!("alert({n})")),
                "shown as text: {page}"
            );
        }
    }
}
