//! The provider's own web search (`web_search = true`): what the server searched for and the
//! pages it found and cited, added to the end of the answer as a short list of sources, so it
//! is shown (terminal, print and JSON modes), saved, and seen by the model on later turns.
//!
//! Only Anthropic's Messages API (the `web_search_20250305` server tool) and OpenAI's Responses
//! API (the `web_search` tool) offer one; [`super::has_web_search`] says which.

use super::emit::MessageStream;

/// How many of the pages found are listed when none was cited.
const LISTED_UNCITED: usize = 5;

/// The block key the sources are written under (never one of the wire's own).
const SOURCES_KEY: &str = "web-search-sources";

/// What one answer's searches found.
#[derive(Debug, Default)]
pub(crate) struct Found {
    queries: Vec<String>,
    results: Vec<(String, String)>,
    cited: Vec<(String, String)>,
}

fn push_page(list: &mut Vec<(String, String)>, title: &str, url: &str) {
    let url = url.trim();
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return;
    }
    if list.iter().any(|(_, u)| u == url) {
        return;
    }
    let title = title.trim();
    let title = if title.is_empty() { url } else { title };
    // Brackets would end the markdown link early.
    let title: String = title
        .chars()
        .map(|c| match c {
            '[' => '(',
            ']' => ')',
            '\n' | '\r' => ' ',
            c => c,
        })
        .collect();
    list.push((title, url.replace(' ', "%20").replace(')', "%29")));
}

impl Found {
    pub(crate) fn searched(&mut self, query: &str) {
        let q = query.trim();
        if !q.is_empty() && !self.queries.iter().any(|x| x == q) {
            self.queries.push(q.to_string());
        }
    }

    pub(crate) fn result(&mut self, title: &str, url: &str) {
        push_page(&mut self.results, title, url);
    }

    pub(crate) fn cited(&mut self, title: &str, url: &str) {
        push_page(&mut self.cited, title, url);
    }

    /// The searches and sources as text (`None`: there was no search).
    pub(crate) fn text(&self) -> Option<String> {
        if self.queries.is_empty() && self.cited.is_empty() && self.results.is_empty() {
            return None;
        }
        let mut out = String::from("\n\n---\n");
        if !self.queries.is_empty() {
            let qs: Vec<String> = self.queries.iter().map(|q| format!("“{q}”")).collect();
            out.push_str(&format!("Searched the web for {}.\n", qs.join(", ")));
        }
        let (heading, pages): (&str, Vec<&(String, String)>) = if self.cited.is_empty() {
            (
                "Pages found",
                self.results.iter().take(LISTED_UNCITED).collect(),
            )
        } else {
            ("Sources", self.cited.iter().collect())
        };
        if !pages.is_empty() {
            out.push_str(&format!("{heading}:\n"));
            for (i, (title, url)) in pages.iter().enumerate() {
                out.push_str(&format!("{}. [{title}]({url})\n", i + 1));
            }
        }
        Some(out)
    }

    /// Add the searches and sources to the end of the answer, once.
    pub(crate) fn emit(&mut self, out: &mut MessageStream) {
        if let Some(text) = self.text() {
            out.text_delta(SOURCES_KEY, &text);
            out.close(SOURCES_KEY);
        }
        *self = Found::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cited_pages_are_listed_once_and_found_ones_only_without_citations() {
        let mut f = Found::default();
        assert_eq!(f.text(), None);
        f.searched("rust 2024 edition");
        f.result("Rust Blog", "https://blog.rust-lang.org/");
        f.result("Not a web page", "javascript:alert(1)");
        let t = f.text().unwrap();
        assert!(
            t.contains("Searched the web for “rust 2024 edition”."),
            "{t}"
        );
        assert!(
            t.contains("Pages found:\n1. [Rust Blog](https://blog.rust-lang.org/)"),
            "{t}"
        );
        assert!(!t.contains("javascript"), "{t}");
        f.cited(
            "The [Edition] Guide",
            "https://doc.rust-lang.org/edition-guide/",
        );
        f.cited("again", "https://doc.rust-lang.org/edition-guide/");
        let t = f.text().unwrap();
        assert!(
            t.contains(
                "Sources:\n1. [The (Edition) Guide](https://doc.rust-lang.org/edition-guide/)\n"
            ) && !t.contains("Rust Blog")
                && !t.contains("again"),
            "{t}"
        );
    }
}
