//! `edit`: exact text replacements in one file, all or nothing.
//!
//! Flow: read the file, set a UTF-8 byte-order mark aside, note the line ending (CRLF when the
//! first line ends in `\r\n`), then find every `oldText` in the *original* contents:
//!
//! 1. verbatim, after giving `oldText` the file's line ending; it must occur exactly once
//!    (overlapping occurrences count, so `aa` in `aaa` is ambiguous);
//! 2. otherwise in folded form (see [`fuzzy`](super::fuzzy): quotes, dashes, odd spaces,
//!    trailing whitespace, CR), again exactly once, mapped back to the exact original bytes.
//!
//! The matched ranges must not overlap. They are replaced together (each `newText` takes the
//! file's line ending), the mark is put back, and the file is replaced atomically with its
//! permissions kept. Bytes outside the matched ranges never change, so a file with mixed line
//! endings keeps them. The result's `details` hold a numbered diff, a unified patch, and the
//! first changed line, for the UI. Edits to one path are serialised with `write`'s, and refused
//! up front where the sandbox (see [`super::sandbox`]) allows no write.

use std::fmt::Write as _;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::args::Args;
use super::context::{ABORTED_TEXT, ToolContext, run_blocking};
use super::diff::{numbered_diff, unified_patch};
use super::fsutil::describe_io_error;
use super::fuzzy::{Normalized, normalize, normalize_plain};
use super::info::{ToolInfo, tool_info_accessors};
use crate::agent::protocol::tool::{AgentTool, Concurrency, ToolError, ToolInvocation, ToolOutput};

const BOM: &str = "\u{FEFF}";
/// Largest file `edit` takes on (it holds the file and its new version in memory).
pub(crate) const MAX_EDIT_BYTES: u64 = 64 * 1024 * 1024;

const DESCRIPTION: &str = "Change a file by replacing exact text. Each `oldText` in `edits` must \
appear exactly once in the file as it is now (copy it with its indentation and line breaks) and \
the edits must not overlap; all of them are matched against the original file and applied \
together, or none is. Keep each `oldText` as short as it can be while still unique. To create a \
file or rewrite all of it, use `write`.";

pub(crate) struct EditTool {
    ctx: Arc<ToolContext>,
    info: ToolInfo,
}

impl EditTool {
    pub(crate) fn new(ctx: Arc<ToolContext>) -> Self {
        let pair = json!({
            "type": "object",
            "properties": {
                "oldText": {"type": "string", "description": "Exact text to replace; must occur once"},
                "newText": {"type": "string", "description": "Text to put in its place"}
            },
            "required": ["oldText", "newText"]
        });
        EditTool {
            info: ToolInfo::new(
                "edit",
                DESCRIPTION,
                json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "File to edit (relative or absolute)"},
                        "edits": {
                            "type": "array",
                            "items": pair,
                            "description": "Replacements, each matched against the original file"
                        },
                        "oldText": {"type": "string", "description": "Single-edit form: text to replace"},
                        "newText": {"type": "string", "description": "Single-edit form: replacement"}
                    },
                    "required": ["path"]
                }),
            ),
            ctx,
        }
    }
}

#[async_trait]
impl AgentTool for EditTool {
    tool_info_accessors!();

    fn concurrency(&self, _args: &Value) -> Result<Concurrency, String> {
        Ok(Concurrency::Exclusive)
    }

    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let args = Args::new("edit", &call.args)?;
        let raw = args.required_str("path")?.to_string();
        let edits = parse_edits(&args)?;
        let path = self.ctx.resolve_existing(&raw)?;
        let _guard = self.ctx.lock_file(&path, &call.cancel).await?;
        let sandbox = self.ctx.sandbox().clone();
        run_blocking(&call.cancel, move |cancel| {
            sandbox.check_write(&path)?;
            let meta = std::fs::metadata(&path).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => ToolError::new(format!(
                    "File not found: {raw}. Use write to create a new file."
                )),
                _ => ToolError::new(format!("Cannot read {raw}: {}", describe_io_error(&e))),
            })?;
            if !meta.is_file() {
                return Err(ToolError::new(format!(
                    "{raw} is not a regular file; edit only changes files."
                )));
            }
            if meta.len() > MAX_EDIT_BYTES {
                return Err(ToolError::new(format!(
                    "{raw} is too large to edit here ({} bytes). Use bash (sed, a script) for \
                     files over 64 MB.",
                    meta.len()
                )));
            }
            let bytes = sandbox.read(&path).map_err(|e| {
                ToolError::new(format!("Cannot read {raw}: {}", describe_io_error(&e)))
            })?;
            let original = String::from_utf8(bytes).map_err(|_| {
                ToolError::new(format!(
                    "{raw} is not UTF-8 text, so edit cannot change it safely. Use bash instead."
                ))
            })?;
            let applied = apply_edits(&original, &edits, &raw)?;
            if cancel.is_cancelled() {
                return Err(ToolError::new(ABORTED_TEXT));
            }
            sandbox
                .write_atomic(&path, applied.content.as_bytes())
                .map_err(|e| {
                    ToolError::new(format!("Cannot write {raw}: {}", describe_io_error(&e)))
                })?;
            Ok(applied.into_output(&original, &raw))
        })
        .await
    }
}

/// One requested replacement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Edit {
    pub old_text: String,
    pub new_text: String,
}

/// The edits of a call: `edits` (an array, or that array as a JSON string), then the single
/// `oldText`/`newText` pair if given.
pub(crate) fn parse_edits(args: &Args<'_>) -> Result<Vec<Edit>, ToolError> {
    let mut edits = Vec::new();
    if let Some(value) = args.get("edits") {
        let parsed;
        let list = match value {
            Value::Array(list) => list,
            Value::String(s) => {
                parsed = serde_json::from_str::<Value>(s).map_err(|e| {
                    ToolError::new(format!("edit: `edits` is a string that is not JSON: {e}"))
                })?;
                parsed.as_array().ok_or_else(|| {
                    ToolError::new("edit: `edits` must be an array of {oldText, newText}.")
                })?
            }
            _ => {
                return Err(ToolError::new(
                    "edit: `edits` must be an array of {oldText, newText}.",
                ));
            }
        };
        for (i, item) in list.iter().enumerate() {
            let field = |key: &str| -> Result<String, ToolError> {
                item.get(key)
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .ok_or_else(|| {
                        ToolError::new(format!("edit: edits[{i}] needs a string `{key}`."))
                    })
            };
            edits.push(Edit {
                old_text: field("oldText")?,
                new_text: field("newText")?,
            });
        }
    }
    match (args.opt_str("oldText")?, args.opt_str("newText")?) {
        (Some(old), Some(new)) => edits.push(Edit {
            old_text: old.to_string(),
            new_text: new.to_string(),
        }),
        (None, None) => {}
        _ => {
            return Err(ToolError::new(
                "edit: `oldText` and `newText` go together; give both or use `edits`.",
            ));
        }
    }
    if edits.is_empty() {
        return Err(ToolError::new(
            "edit: nothing to do. Give `edits`: [{\"oldText\": ..., \"newText\": ...}].",
        ));
    }
    Ok(edits)
}

/// The outcome of applying edits to a file's text.
#[derive(Debug)]
pub(crate) struct Applied {
    /// The full new file contents (mark and line endings included).
    pub content: String,
    pub count: usize,
    /// Indexes of the edits that needed the forgiving match.
    pub fuzzy: Vec<usize>,
}

impl Applied {
    fn into_output(self, original: &str, raw: &str) -> ToolOutput {
        let old_lf = strip_bom(original).replace("\r\n", "\n");
        let new_lf = strip_bom(&self.content).replace("\r\n", "\n");
        let diff = numbered_diff(&old_lf, &new_lf);
        let mut text = format!(
            "Applied {} edit{} to {raw}.",
            self.count,
            if self.count == 1 { "" } else { "s" }
        );
        if !self.fuzzy.is_empty() {
            let list: Vec<String> = self.fuzzy.iter().map(|i| format!("edits[{i}]")).collect();
            let _ = write!(
                text,
                " {} matched only after ignoring differences in quotes, dashes or whitespace; \
                 the rest of the file is unchanged.",
                list.join(", ")
            );
        }
        ToolOutput::text(text).with_details(json!({
            "diff": diff.text,
            "patch": unified_patch(&old_lf, &new_lf, raw),
            "firstChangedLine": diff.first_changed_line,
            "fuzzyEdits": self.fuzzy,
        }))
    }
}

fn strip_bom(s: &str) -> &str {
    s.strip_prefix(BOM).unwrap_or(s)
}

/// True when the file's first line ends in CRLF.
fn uses_crlf(text: &str) -> bool {
    match text.find('\n') {
        Some(i) => i > 0 && text.as_bytes().get(i - 1) == Some(&b'\r'),
        None => false,
    }
}

/// `text` with every line break written as the file writes them.
fn with_line_ending(text: &str, crlf: bool) -> String {
    let lf = text.replace("\r\n", "\n");
    if crlf { lf.replace('\n', "\r\n") } else { lf }
}

/// Where `needle` occurs in `hay`: its only position, or how many times it occurs (2 means
/// "two or more"; overlapping occurrences count).
enum Found {
    Once(usize),
    Missing,
    Many(usize),
}

fn find_unique(hay: &str, needle: &str) -> Found {
    let Some(first) = hay.find(needle) else {
        return Found::Missing;
    };
    let step = hay
        .get(first..)
        .and_then(|s| s.chars().next())
        .map_or(1, char::len_utf8);
    let mut count = 1;
    let mut from = first + step;
    while let Some(rest) = hay.get(from..)
        && let Some(at) = rest.find(needle)
    {
        count += 1;
        let step = rest
            .get(at..)
            .and_then(|s| s.chars().next())
            .map_or(1, char::len_utf8);
        from += at + step;
    }
    if count == 1 {
        Found::Once(first)
    } else {
        Found::Many(count)
    }
}

/// Apply `edits` to a file's full text (`raw` names it in messages).
pub(crate) fn apply_edits(original: &str, edits: &[Edit], raw: &str) -> Result<Applied, ToolError> {
    let has_bom = original.starts_with(BOM);
    let body = strip_bom(original);
    let crlf = uses_crlf(body);
    let mut folded: Option<Normalized> = None;
    let mut ranges: Vec<(Range<usize>, usize)> = Vec::with_capacity(edits.len());
    let mut fuzzy = Vec::new();

    for (i, edit) in edits.iter().enumerate() {
        let label = if edits.len() == 1 {
            "oldText".to_string()
        } else {
            format!("edits[{i}].oldText")
        };
        if edit.old_text.is_empty() {
            return Err(ToolError::new(format!(
                "{label} is empty. Give the exact text to replace, with enough context to be \
                 unique."
            )));
        }
        let needle = with_line_ending(&edit.old_text, crlf);
        let range = match find_unique(body, &needle) {
            Found::Once(at) => at..at + needle.len(),
            Found::Many(n) => return Err(ambiguous(&label, raw, n, "")),
            Found::Missing => {
                let folded = folded.get_or_insert_with(|| normalize(body));
                let folded_needle = normalize_plain(&edit.old_text);
                let found = if folded_needle.is_empty() {
                    Found::Missing
                } else {
                    find_unique(&folded.text, &folded_needle)
                };
                match found {
                    Found::Once(at) => {
                        fuzzy.push(i);
                        folded
                            .source_range(body, at..at + folded_needle.len())
                            .ok_or_else(|| not_found(&label, raw))?
                    }
                    Found::Many(n) => {
                        return Err(ambiguous(
                            &label,
                            raw,
                            n,
                            " (ignoring differences in quotes, dashes and whitespace)",
                        ));
                    }
                    Found::Missing => return Err(not_found(&label, raw)),
                }
            }
        };
        ranges.push((range, i));
    }

    ranges.sort_by_key(|(r, _)| r.start);
    for pair in ranges.windows(2) {
        if let [(a, ia), (b, ib)] = pair
            && a.end > b.start
        {
            let (first, second) = ((*ia).min(*ib), (*ia).max(*ib));
            return Err(ToolError::new(format!(
                "edits[{first}] and edits[{second}] overlap in {raw}. Merge them into one edit, \
                 or make each oldText cover a separate part of the file."
            )));
        }
    }

    let mut content = String::with_capacity(original.len() + 64);
    if has_bom {
        content.push_str(BOM);
    }
    let mut at = 0;
    for (range, i) in &ranges {
        content.push_str(body.get(at..range.start).unwrap_or_default());
        content.push_str(&with_line_ending(&edits[*i].new_text, crlf));
        at = range.end;
    }
    content.push_str(body.get(at..).unwrap_or_default());

    if content == original {
        return Err(ToolError::new(format!(
            "No change: the edits leave {raw} exactly as it is (each newText equals the text it \
             replaces). Nothing was written."
        )));
    }
    Ok(Applied {
        content,
        count: edits.len(),
        fuzzy,
    })
}

fn not_found(label: &str, raw: &str) -> ToolError {
    ToolError::new(format!(
        "{label} was not found in {raw}. It has to match the file exactly, including \
         indentation, whitespace and line breaks; read the file again and copy the text from it."
    ))
}

fn ambiguous(label: &str, raw: &str, n: usize, how: &str) -> ToolError {
    ToolError::new(format!(
        "{label} occurs {n} times in {raw}{how}. It must match exactly once: include more of \
         the surrounding lines to make it unique."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(old: &str, new: &str) -> Edit {
        Edit {
            old_text: old.into(),
            new_text: new.into(),
        }
    }

    #[test]
    fn single_and_multiple_edits() {
        let a = apply_edits("one\ntwo\nthree\n", &[e("two", "2")], "f").unwrap();
        assert_eq!(a.content, "one\n2\nthree\n");
        let a = apply_edits("one\ntwo\nthree\n", &[e("three", "3"), e("one", "1")], "f").unwrap();
        assert_eq!(a.content, "1\ntwo\n3\n");
        assert_eq!(a.count, 2);
    }

    #[test]
    fn edits_match_the_original_not_each_other() {
        // The second edit's oldText only exists before the first is applied.
        let a = apply_edits("a b c", &[e("a", "c"), e("c", "a")], "f").unwrap();
        assert_eq!(a.content, "c b a");
    }

    #[test]
    fn errors_name_the_problem() {
        let err = apply_edits("abc", &[e("x", "y")], "f").unwrap_err().0;
        assert!(err.contains("oldText was not found in f"), "{err}");
        let err = apply_edits("ab ab", &[e("ab", "y")], "f").unwrap_err().0;
        assert!(err.contains("occurs 2 times"), "{err}");
        let err = apply_edits("aaa", &[e("aa", "b")], "f").unwrap_err().0;
        assert!(
            err.contains("occurs 2 times"),
            "overlapping occurrences: {err}"
        );
        let err = apply_edits("abcdef", &[e("abc", "x"), e("cde", "y")], "f")
            .unwrap_err()
            .0;
        assert!(err.contains("edits[0] and edits[1] overlap"), "{err}");
        let err = apply_edits("abc", &[e("b", "b")], "f").unwrap_err().0;
        assert!(err.contains("No change"), "{err}");
        let err = apply_edits("abc", &[e("", "b")], "f").unwrap_err().0;
        assert!(err.contains("empty"), "{err}");
    }

    #[test]
    fn crlf_and_bom_survive() {
        let original = "\u{FEFF}one\r\ntwo\r\nthree\r\n";
        let a = apply_edits(original, &[e("one\ntwo", "uno\ndos")], "f").unwrap();
        assert_eq!(a.content, "\u{FEFF}uno\r\ndos\r\nthree\r\n");
        assert!(a.fuzzy.is_empty());
    }

    #[test]
    fn mixed_line_endings_outside_the_match_are_kept() {
        let original = "a\r\nb\nc\r\n";
        let a = apply_edits(original, &[e("c", "C")], "f").unwrap();
        assert_eq!(a.content, "a\r\nb\nC\r\n");
    }

    #[test]
    fn fuzzy_match_replaces_only_the_matched_bytes() {
        let original = "x = \u{201C}hi\u{201D};   \ny = \u{2018}keep\u{2019};\n";
        let a = apply_edits(original, &[e("x = \"hi\";", "x = \"bye\";")], "f").unwrap();
        assert_eq!(a.fuzzy, vec![0]);
        assert_eq!(a.content, "x = \"bye\";   \ny = \u{2018}keep\u{2019};\n");
    }

    #[test]
    fn fuzzy_ambiguity_is_reported() {
        let err = apply_edits("a\u{2013}b\na-b \n", &[e("a\u{2014}b", "c")], "f")
            .unwrap_err()
            .0;
        assert!(
            err.contains("occurs 2 times") && err.contains("ignoring"),
            "{err}"
        );
    }
}
