//! The entry tree of a session laid out as rows for display (`/tree`), and the filters over
//! those rows.
//!
//! [`tree_rows`] walks the tree depth first, children in file order, and gives one
//! [`TreeRow`] per entry: a one-line description, the entry's current label, whether it is on
//! the branch that ends at the given leaf, and a guide (`prefix`) to draw in front of it. A
//! chain of single children stays at one indent; where an entry has several children, each
//! child's subtree moves one level in, behind a `├─ ` (or, for the last child, `└─ `)
//! connector, and the levels of earlier branch points carry a `│  ` while their own subtree
//! has more children to come:
//!
//! ```text
//! user: plan it
//! assistant: two ways
//! ├─ user: try A
//! │  assistant: A works
//! └─ user: try B
//!    assistant: B works
//! ```
//!
//! Every level is three columns wide; the guide characters (`│`, `├`, `└`, `─`) are each one
//! column wide in any terminal. Damaged trees still give one row per entry: an entry whose
//! parent is missing is drawn as a root, and entries caught in a parent cycle are drawn from
//! the first of them in file order. Nothing recurses (a 20,000-entry chain is fine) and a
//! branch point deeper than [`MAX_GUIDE_LEVELS`] keeps only the innermost levels of its
//! guide, so a pathological tree cannot make every row huge.
//!
//! [`filter_rows`] picks the rows a filter mode and a search text keep, as the Node.js `pi`'s
//! `/tree` does with Ctrl+O and typing.

use std::rc::Rc;

use serde_json::Value;

use super::entry::{EntryKind, SessionEntry};
use super::load::Session;
use crate::agent::protocol::types::{
    AgentMessage, AssistantMessage, ContentBlock, CustomMessage, Message, StopReason, UserContent,
};

/// The most characters a row's text keeps (then it ends in `…`).
pub(crate) const MAX_TEXT_CHARS: usize = 200;

/// The most levels a row's guide draws; deeper rows keep the innermost ones.
pub(crate) const MAX_GUIDE_LEVELS: usize = 32;

/// What a row shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TreeKind {
    /// A message a person wrote.
    User,
    Assistant,
    ToolResult,
    /// A `compaction` entry (or a Node.js `compactionSummary` message).
    Compaction,
    /// A `branch_summary` entry (or a Node.js `branchSummary` message).
    BranchSummary,
    ModelChange,
    ThinkingChange,
    /// A `label` entry (the labels themselves are shown on their targets' rows).
    Label,
    /// A `session_info` entry (a name).
    SessionInfo,
    /// A `custom` entry: extension state, never shown to a model.
    Custom,
    /// A `custom_message` entry (or a Node.js `custom` message).
    CustomMessage,
    /// Anything else: `!command` runs, developer messages, entry types this version does not
    /// know.
    Other,
}

/// One entry of the tree, ready to draw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeRow {
    pub id: String,
    /// The parent as drawn: `None` for a root, including an entry whose parent is missing.
    pub parent_id: Option<String>,
    /// The guide drawn before the text, e.g. `│  ├─ ` (three columns per level).
    pub prefix: String,
    /// Levels of indentation (`prefix` has three columns per level, up to
    /// [`MAX_GUIDE_LEVELS`] + 1 of them).
    pub depth: usize,
    pub kind: TreeKind,
    /// One line describing the entry: no control characters, at most [`MAX_TEXT_CHARS`]
    /// characters (plus `…` when cut).
    pub text: String,
    /// The entry's current label (the latest `label` entry naming it, unless that cleared it).
    pub label: Option<String>,
    /// On the branch from the root to the leaf.
    pub on_path: bool,
    /// The leaf itself.
    pub is_leaf: bool,
}

/// Which rows the tree view shows; [`TreeFilter::next`] cycles through them in order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TreeFilter {
    /// Everything but bookkeeping: labels, names, model and thinking changes, `custom` entries.
    #[default]
    Default,
    /// [`TreeFilter::Default`] without tool results.
    NoTools,
    /// Only messages a person wrote.
    UserOnly,
    /// Only rows with a label.
    LabeledOnly,
    All,
}

impl TreeFilter {
    const ORDER: [TreeFilter; 5] = [
        TreeFilter::Default,
        TreeFilter::NoTools,
        TreeFilter::UserOnly,
        TreeFilter::LabeledOnly,
        TreeFilter::All,
    ];

    fn position(self) -> usize {
        Self::ORDER.iter().position(|f| *f == self).unwrap_or(0)
    }

    /// The next mode (after [`TreeFilter::All`] comes [`TreeFilter::Default`]).
    pub(crate) fn next(self) -> Self {
        Self::ORDER[(self.position() + 1) % Self::ORDER.len()]
    }

    /// The mode before this one.
    #[cfg(test)]
    pub(crate) fn previous(self) -> Self {
        Self::ORDER[(self.position() + Self::ORDER.len() - 1) % Self::ORDER.len()]
    }

    /// The mode's name as the Node.js `pi`'s `treeFilterMode` setting spells it.
    #[cfg(test)]
    pub(crate) fn name(self) -> &'static str {
        match self {
            TreeFilter::Default => "default",
            TreeFilter::NoTools => "no-tools",
            TreeFilter::UserOnly => "user-only",
            TreeFilter::LabeledOnly => "labeled-only",
            TreeFilter::All => "all",
        }
    }

    /// The mode with this [`TreeFilter::name`].
    #[cfg(test)]
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        Self::ORDER.into_iter().find(|f| f.name() == name)
    }

    /// True when this mode shows `row`.
    pub(crate) fn keeps(self, row: &TreeRow) -> bool {
        let bookkeeping = matches!(
            row.kind,
            TreeKind::Label
                | TreeKind::SessionInfo
                | TreeKind::ModelChange
                | TreeKind::ThinkingChange
                | TreeKind::Custom
        );
        match self {
            TreeFilter::Default => !bookkeeping,
            TreeFilter::NoTools => !bookkeeping && row.kind != TreeKind::ToolResult,
            TreeFilter::UserOnly => row.kind == TreeKind::User,
            TreeFilter::LabeledOnly => row.label.is_some(),
            TreeFilter::All => true,
        }
    }
}

/// The indices of the rows that `mode` shows and whose text or label contains every
/// whitespace-separated word of `query` (ignoring case; an empty query keeps all).
pub fn filter_rows(rows: &[TreeRow], mode: TreeFilter, query: &str) -> Vec<usize> {
    let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
    rows.iter()
        .enumerate()
        .filter(|(_, row)| mode.keeps(row) && has_words(row, &words))
        .map(|(i, _)| i)
        .collect()
}

fn has_words(row: &TreeRow, words: &[String]) -> bool {
    if words.is_empty() {
        return true;
    }
    let text = row.text.to_lowercase();
    let label = row.label.as_deref().map(str::to_lowercase);
    words
        .iter()
        .all(|w| text.contains(w.as_str()) || label.as_deref().is_some_and(|l| l.contains(w)))
}

/// How a row hangs under its parent.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Connector {
    /// Under a parent with one child (or a root): no connector.
    None,
    /// A child with later siblings: `├─ `.
    Tee,
    /// The last child: `└─ `.
    Elbow,
}

/// A row waiting to be drawn.
struct Pending {
    index: usize,
    parent: Option<usize>,
    depth: usize,
    /// One cell per level before the connector: `true` draws `│  `, `false` blank.
    guides: Rc<[bool]>,
    connector: Connector,
}

/// The entries' children, in file order, stored end to end.
struct Children {
    /// Where each entry's children start in `list` (one more than there are entries).
    start: Vec<usize>,
    list: Vec<usize>,
}

impl Children {
    fn new(parents: &[Option<usize>]) -> Self {
        let mut start = vec![0usize; parents.len() + 1];
        for p in parents.iter().flatten() {
            start[p + 1] += 1;
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        let mut next = start.clone();
        let mut list = vec![0usize; start[parents.len()]];
        for (child, parent) in parents.iter().enumerate() {
            if let Some(p) = parent {
                list[next[*p]] = child;
                next[*p] += 1;
            }
        }
        Children { start, list }
    }

    fn of(&self, i: usize) -> &[usize] {
        &self.list[self.start[i]..self.start[i + 1]]
    }
}

/// The session's entries as display rows, depth first (see the module notes). `leaf` marks
/// the branch that rows say they are on (`None`, or an id not in the session: no branch).
pub fn tree_rows(session: &Session, leaf: Option<&str>) -> Vec<TreeRow> {
    let entries = &session.entries;
    let n = entries.len();
    let parents: Vec<Option<usize>> = (0..n).map(|i| session.parent_index(i)).collect();
    let children = Children::new(&parents);
    let path = session.path_indices(leaf);
    let mut on_path = vec![false; n];
    for &i in &path {
        on_path[i] = true;
    }
    let leaf_index = path.last().copied();
    let labels = session.labels();

    let mut rows = Vec::with_capacity(n);
    let mut drawn = vec![false; n];
    let mut stack: Vec<Pending> = Vec::new();
    let no_guides: Rc<[bool]> = Rc::from(Vec::new());
    // Roots in file order, then whatever a parent cycle kept out of reach.
    for start in (0..n).filter(|&i| parents[i].is_none()).chain(0..n) {
        if drawn[start] {
            continue;
        }
        stack.push(Pending {
            index: start,
            parent: None,
            depth: 0,
            guides: no_guides.clone(),
            connector: Connector::None,
        });
        while let Some(p) = stack.pop() {
            if drawn[p.index] {
                continue;
            }
            drawn[p.index] = true;
            let entry = &entries[p.index];
            let (kind, text) = describe(entry);
            rows.push(TreeRow {
                id: entry.id.clone(),
                parent_id: p.parent.map(|i| entries[i].id.clone()),
                prefix: prefix(&p.guides, p.connector),
                depth: p.depth,
                kind,
                text,
                label: labels.get(entry.id.as_str()).map(ToString::to_string),
                on_path: on_path[p.index],
                is_leaf: leaf_index == Some(p.index),
            });
            // Children not drawn yet (all of them, unless a cycle leads back).
            let kids = children.of(p.index);
            let count = kids.iter().filter(|&&c| !drawn[c]).count();
            if count == 0 {
                continue;
            }
            let guides = match p.connector {
                Connector::None => p.guides.clone(),
                Connector::Tee => deeper(&p.guides, true),
                Connector::Elbow => deeper(&p.guides, false),
            };
            if count == 1 {
                if let Some(&only) = kids.iter().find(|&&c| !drawn[c]) {
                    stack.push(Pending {
                        index: only,
                        parent: Some(p.index),
                        depth: p.depth,
                        guides,
                        connector: Connector::None,
                    });
                }
                continue;
            }
            // Pushed last to first, so the first child is drawn first.
            let mut last = true;
            for &c in kids.iter().rev().filter(|&&c| !drawn[c]) {
                stack.push(Pending {
                    index: c,
                    parent: Some(p.index),
                    depth: p.depth + 1,
                    guides: guides.clone(),
                    connector: if last {
                        Connector::Elbow
                    } else {
                        Connector::Tee
                    },
                });
                last = false;
            }
        }
    }
    rows
}

/// `guides` with one more level (`bar`: the branch above goes on), keeping at most
/// [`MAX_GUIDE_LEVELS`].
fn deeper(guides: &[bool], bar: bool) -> Rc<[bool]> {
    let skip = (guides.len() + 1).saturating_sub(MAX_GUIDE_LEVELS);
    guides[skip..]
        .iter()
        .copied()
        .chain(std::iter::once(bar))
        .collect()
}

fn prefix(guides: &[bool], connector: Connector) -> String {
    let mut out = String::with_capacity((guides.len() + 1) * 5);
    for &bar in guides {
        out.push_str(if bar { "│  " } else { "   " });
    }
    match connector {
        Connector::None => {}
        Connector::Tee => out.push_str("├─ "),
        Connector::Elbow => out.push_str("└─ "),
    }
    out
}

/// `line` fit for one row: control characters as spaces, trimmed, at most
/// [`MAX_TEXT_CHARS`] characters (then `…`).
fn one_line(line: &str) -> String {
    let mut out = String::new();
    let mut kept = 0;
    for c in line.chars() {
        let c = if c.is_control() { ' ' } else { c };
        if out.is_empty() && c.is_whitespace() {
            continue;
        }
        if kept == MAX_TEXT_CHARS {
            out.truncate(out.trim_end().len());
            out.push('…');
            return out;
        }
        out.push(c);
        kept += 1;
    }
    out.truncate(out.trim_end().len());
    out
}

/// The first line of `texts` (taken in order) that is not blank, fit for one row; empty when
/// there is none.
fn first_line<'a>(texts: impl IntoIterator<Item = &'a str>) -> String {
    texts
        .into_iter()
        .flat_map(str::lines)
        .map(one_line)
        .find(|l| !l.is_empty())
        .unwrap_or_default()
}

fn content_line(content: &UserContent) -> String {
    let line = match content {
        UserContent::Text(s) => first_line([s.as_str()]),
        UserContent::Blocks(blocks) => first_line(blocks.iter().filter_map(ContentBlock::as_text)),
    };
    if !line.is_empty() {
        return line;
    }
    let has_image = matches!(content, UserContent::Blocks(b)
        if b.iter().any(|b| matches!(b, ContentBlock::Image(_))));
    if has_image { "(image)" } else { "(empty)" }.to_string()
}

fn assistant_line(a: &AssistantMessage) -> String {
    let text = first_line(a.content.iter().filter_map(ContentBlock::as_text));
    if !text.is_empty() {
        return text;
    }
    if a.has_tool_calls() {
        let names: Vec<&str> = a.tool_calls().map(|c| c.name.as_str()).collect();
        return one_line(&format!("(tool calls: {})", names.join(", ")));
    }
    if let Some(error) = a.error_message.as_deref().map(|e| first_line([e]))
        && !error.is_empty()
    {
        return error;
    }
    let thinking = a.content.iter().any(|b| {
        matches!(
            b,
            ContentBlock::Thinking(_) | ContentBlock::RedactedThinking(_)
        )
    });
    match a.stop_reason {
        StopReason::Error => "(error)",
        StopReason::Aborted => "(aborted)",
        _ if thinking => "(thinking)",
        _ => "(no content)",
    }
    .to_string()
}

/// `text` or, when it is empty, `fallback`.
fn nonempty_or(text: String, fallback: &str) -> String {
    if text.is_empty() {
        fallback.to_string()
    } else {
        text
    }
}

/// Messages of the Node.js `pi`'s extra roles.
fn custom_message(c: &CustomMessage) -> (TreeKind, String) {
    let field = |key: &str| c.fields.get(key).and_then(Value::as_str).unwrap_or("");
    match c.role.as_str() {
        "bashExecution" => (
            TreeKind::Other,
            one_line(&format!("bash: {}", first_line([field("command")]))),
        ),
        "custom" => {
            let text = match c.fields.get("content") {
                Some(Value::String(s)) => first_line([s.as_str()]),
                Some(Value::Array(blocks)) => first_line(
                    blocks
                        .iter()
                        .filter_map(|b| b.get("text").and_then(Value::as_str)),
                ),
                _ => String::new(),
            };
            (TreeKind::CustomMessage, nonempty_or(text, "(empty)"))
        }
        "branchSummary" => (
            TreeKind::BranchSummary,
            nonempty_or(first_line([field("summary")]), "(no summary)"),
        ),
        "compactionSummary" => {
            let tokens = c
                .fields
                .get("tokensBefore")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            (
                TreeKind::Compaction,
                format!("[compaction: {tokens} tokens]"),
            )
        }
        role => (TreeKind::Other, one_line(role)),
    }
}

fn message(m: &AgentMessage) -> (TreeKind, String) {
    match m {
        AgentMessage::Llm(m) => match &**m {
            Message::User(u) => (TreeKind::User, content_line(&u.content)),
            Message::Assistant(a) => (TreeKind::Assistant, assistant_line(a)),
            Message::ToolResult(r) => {
                let line = first_line(r.content.iter().filter_map(ContentBlock::as_text));
                let text = if line.is_empty() {
                    one_line(&r.tool_name)
                } else {
                    one_line(&format!("{}: {line}", r.tool_name))
                };
                (TreeKind::ToolResult, text)
            }
            Message::Developer(d) => (
                TreeKind::Other,
                one_line(&format!("developer: {}", content_line(&d.content))),
            ),
        },
        AgentMessage::Custom(c) => custom_message(c),
    }
}

/// The kind and one-line text of an entry.
fn describe(entry: &SessionEntry) -> (TreeKind, String) {
    match &entry.kind {
        EntryKind::Message(m) => message(m),
        EntryKind::ModelChange { provider, model_id } => (
            TreeKind::ModelChange,
            one_line(&format!("{provider}/{model_id}")),
        ),
        EntryKind::ThinkingLevelChange { thinking_level } => {
            (TreeKind::ThinkingChange, one_line(thinking_level))
        }
        EntryKind::Compaction(c) => (
            TreeKind::Compaction,
            format!("[compaction: {} tokens]", c.tokens_before),
        ),
        EntryKind::BranchSummary(b) => (
            TreeKind::BranchSummary,
            nonempty_or(first_line([b.summary.as_str()]), "(no summary)"),
        ),
        EntryKind::Custom { custom_type, .. } => (TreeKind::Custom, one_line(custom_type)),
        EntryKind::CustomMessage(c) => (TreeKind::CustomMessage, content_line(&c.content)),
        EntryKind::Label { label, .. } => (
            TreeKind::Label,
            nonempty_or(first_line([label.as_deref().unwrap_or("")]), "(cleared)"),
        ),
        EntryKind::SessionInfo { name } => (
            TreeKind::SessionInfo,
            nonempty_or(first_line([name.as_deref().unwrap_or("")]), "(cleared)"),
        ),
        EntryKind::Unknown { entry_type, .. } => (TreeKind::Other, one_line(entry_type)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"type":"session","version":3,"id":"019a0000-0000-7000-8000-000000000000","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#;

    /// A line for an entry: `u`/`a` user or assistant text, `r` a tool result, `l:<target>` a
    /// label, `n` a name, `m` a model change.
    fn line(id: &str, parent: Option<&str>, what: &str) -> String {
        let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
        let head =
            format!(r#""id":"{id}","parentId":{parent},"timestamp":"2026-01-01T00:00:01.000Z""#);
        let (kind, rest) = what.split_once(' ').unwrap_or((what, ""));
        let text = serde_json::to_string(rest).unwrap();
        match kind {
            "u" => format!(
                r#"{{"type":"message",{head},"message":{{"role":"user","content":{text},"timestamp":1}}}}"#
            ),
            "a" => format!(
                r#"{{"type":"message",{head},"message":{{"role":"assistant","content":[{{"type":"text","text":{text}}}],"api":"x","provider":"p","model":"m","usage":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}},"stopReason":"stop","timestamp":2}}}}"#
            ),
            "r" => format!(
                r#"{{"type":"message",{head},"message":{{"role":"toolResult","toolCallId":"c","toolName":"read","content":[{{"type":"text","text":{text}}}],"isError":false,"timestamp":3}}}}"#
            ),
            "m" => format!(r#"{{"type":"model_change",{head},"provider":"p","modelId":{text}}}"#),
            "n" => format!(r#"{{"type":"session_info",{head},"name":{text}}}"#),
            _ => {
                let target = kind.strip_prefix("l:").unwrap();
                format!(r#"{{"type":"label",{head},"targetId":"{target}","label":{text}}}"#)
            }
        }
    }

    fn session(lines: &[String]) -> Session {
        let text = format!("{HEADER}\n{}\n", lines.join("\n"));
        Session::read(text.as_bytes(), None).unwrap()
    }

    fn drawing(rows: &[TreeRow]) -> Vec<String> {
        rows.iter()
            .map(|r| format!("{}{}", r.prefix, r.text))
            .collect()
    }

    /// Two branch points, one inside the other's first branch.
    fn branched() -> Session {
        session(&[
            line("u1", None, "u plan it"),
            line("a1", Some("u1"), "a two ways"),
            line("u2", Some("a1"), "u try A"),
            line("a2", Some("u2"), "a A works"),
            line("u3", Some("a2"), "u A1"),
            line("u4", Some("a2"), "u A2"),
            line("a4", Some("u4"), "a A2 done"),
            line("u5", Some("a1"), "u try B"),
            line("a5", Some("u5"), "a B works"),
            line("l1", Some("a5"), "l:u2 first try"),
        ])
    }

    #[test]
    fn a_branched_tree_draws_like_the_node_tree() {
        let s = branched();
        let rows = tree_rows(&s, Some("a4"));
        assert_eq!(
            drawing(&rows),
            [
                "plan it",
                "two ways",
                "├─ try A",
                "│  A works",
                "│  ├─ A1",
                "│  └─ A2",
                "│     A2 done",
                "└─ try B",
                "   B works",
                "   first try",
            ]
        );
        let depths: Vec<usize> = rows.iter().map(|r| r.depth).collect();
        assert_eq!(depths, [0, 0, 1, 1, 2, 2, 2, 1, 1, 1]);
        let on_path: Vec<&str> = rows
            .iter()
            .filter(|r| r.on_path)
            .map(|r| r.id.as_str())
            .collect();
        assert_eq!(on_path, ["u1", "a1", "u2", "a2", "u4", "a4"]);
        let leaves: Vec<&str> = rows
            .iter()
            .filter(|r| r.is_leaf)
            .map(|r| r.id.as_str())
            .collect();
        assert_eq!(leaves, ["a4"]);
        assert_eq!(rows[2].label.as_deref(), Some("first try"));
        assert_eq!(rows[9].kind, TreeKind::Label);
        assert_eq!(rows[4].parent_id.as_deref(), Some("a2"));
        assert_eq!(rows[0].parent_id, None);
        // No leaf: nothing is on a branch.
        assert!(tree_rows(&s, None).iter().all(|r| !r.on_path && !r.is_leaf));
    }

    #[test]
    fn texts_are_single_short_lines() {
        let long = "x".repeat(500);
        let s = session(&[
            line("u1", None, "u \n\n  first\tline \u{1b}[31m\nsecond"),
            line("r1", Some("u1"), "r \nfile body\nmore"),
            line("u2", Some("r1"), &format!("u {long}")),
            line("m1", Some("u2"), "m model-x"),
            line("n1", Some("m1"), "n "),
        ]);
        let rows = tree_rows(&s, None);
        assert_eq!(rows[0].text, "first line  [31m");
        assert_eq!(rows[1].text, "read: file body");
        assert_eq!(rows[2].text.chars().count(), MAX_TEXT_CHARS + 1);
        assert!(rows[2].text.ends_with('…'));
        assert_eq!(rows[3].text, "p/model-x");
        assert_eq!(rows[4].text, "(cleared)");
        for row in &rows {
            assert!(!row.text.chars().any(char::is_control), "{:?}", row.text);
        }
    }

    #[test]
    fn damaged_trees_still_give_every_entry_once() {
        let s = session(&[
            line("u1", None, "u start"),
            line("a1", Some("gone"), "a orphan"),
            line("c1", Some("c2"), "u loop one"),
            line("c2", Some("c1"), "u loop two"),
            line("s1", Some("s1"), "u names itself"),
            line("a2", Some("u1"), "a answer"),
        ]);
        // The loader re-attached each broken link to the entry before it in the file (and said
        // so): every entry is drawn once, in a tree.
        assert_eq!(s.warnings.len(), 3, "{:?}", s.warnings);
        let rows = tree_rows(&s, Some("c2"));
        let parent = |id: &str| {
            rows.iter()
                .find(|r| r.id == id)
                .and_then(|r| r.parent_id.clone())
        };
        assert_eq!(parent("a1").as_deref(), Some("u1"), "a missing parent");
        assert_eq!(
            parent("c1").as_deref(),
            Some("a1"),
            "a loop, cut at its first entry"
        );
        assert_eq!(parent("c2").as_deref(), Some("c1"));
        assert_eq!(
            parent("s1").as_deref(),
            Some("c2"),
            "an entry naming itself"
        );
        assert_eq!(parent("a2").as_deref(), Some("u1"));
        assert_eq!(rows.len(), 6);
        let mut texts: Vec<String> = rows.iter().map(|r| r.text.clone()).collect();
        texts.sort();
        assert_eq!(
            texts,
            [
                "answer",
                "loop one",
                "loop two",
                "names itself",
                "orphan",
                "start"
            ]
        );
        assert!(rows.iter().any(|r| r.id == "c2" && r.is_leaf));
    }

    #[test]
    fn long_chains_and_deep_branching_are_handled_without_recursion() {
        // A chain of 20,000 entries stays flat.
        let mut lines = vec![line("00000000", None, "u first")];
        for i in 1..20_000u32 {
            let kind = if i % 2 == 0 { "u next" } else { "a reply" };
            let parent = format!("{:08x}", i - 1);
            lines.push(line(&format!("{i:08x}"), Some(parent.as_str()), kind));
        }
        let s = session(&lines);
        let started = std::time::Instant::now();
        let rows = tree_rows(&s, s.leaf_id());
        // A few milliseconds in a release build; this bound (for an unoptimized build on a
        // busy machine) only catches work that grows with the square of the entries.
        let took = started.elapsed();
        assert!(took < std::time::Duration::from_secs(1), "{took:?}");
        assert_eq!(rows.len(), 20_000);
        assert!(rows.iter().all(|r| r.prefix.is_empty() && r.on_path));

        // Every entry branches: a short dead end beside the way on.
        let mut lines = vec![line("00000000", None, "u first")];
        for i in 1..4_000u32 {
            let parent = format!("{:08x}", (i - 1) / 2 * 2);
            lines.push(line(&format!("{i:08x}"), Some(parent.as_str()), "u step"));
        }
        let s = session(&lines);
        let rows = tree_rows(&s, None);
        assert_eq!(rows.len(), 4_000);
        let deepest = rows.iter().map(|r| r.depth).max().unwrap();
        assert!(deepest > MAX_GUIDE_LEVELS * 2, "{deepest}");
        assert!(
            rows.iter()
                .all(|r| r.prefix.chars().count() <= (MAX_GUIDE_LEVELS + 1) * 3)
        );
    }

    #[test]
    fn filters_cycle_and_pick_rows() {
        let mut f = TreeFilter::default();
        let mut seen = Vec::new();
        for _ in 0..5 {
            seen.push(f.name());
            assert_eq!(f.next().previous(), f);
            assert_eq!(TreeFilter::from_name(f.name()), Some(f));
            f = f.next();
        }
        assert_eq!(f, TreeFilter::Default);
        assert_eq!(
            seen,
            ["default", "no-tools", "user-only", "labeled-only", "all"]
        );

        let s = session(&[
            line("m1", None, "m model-x"),
            line("u1", Some("m1"), "u Read the README"),
            line("r1", Some("u1"), "r # Readme"),
            line("a1", Some("r1"), "a It is short"),
            line("n1", Some("a1"), "n named"),
            line("l1", Some("n1"), "l:a1 Summary Point"),
        ]);
        let rows = tree_rows(&s, None);
        let ids = |picked: Vec<usize>| -> Vec<&str> {
            picked.into_iter().map(|i| rows[i].id.as_str()).collect()
        };
        assert_eq!(
            ids(filter_rows(&rows, TreeFilter::Default, "")),
            ["u1", "r1", "a1"]
        );
        assert_eq!(
            ids(filter_rows(&rows, TreeFilter::NoTools, "")),
            ["u1", "a1"]
        );
        assert_eq!(ids(filter_rows(&rows, TreeFilter::UserOnly, "")), ["u1"]);
        assert_eq!(ids(filter_rows(&rows, TreeFilter::LabeledOnly, "")), ["a1"]);
        assert_eq!(filter_rows(&rows, TreeFilter::All, "").len(), 6);
        // Every word, in the text or the label, any case.
        assert_eq!(
            ids(filter_rows(&rows, TreeFilter::All, "  readme  READ ")),
            ["u1", "r1"]
        );
        assert_eq!(
            ids(filter_rows(&rows, TreeFilter::Default, "short point")),
            ["a1"]
        );
        assert!(filter_rows(&rows, TreeFilter::Default, "readme nothing").is_empty());
    }
}
