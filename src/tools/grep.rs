//! `grep`: search file contents in-process with ripgrep's crates.
//!
//! [`search`] is the engine (also used by the benchmark): the shared parallel walk
//! ([`walk`](super::walk)), one `grep-searcher` per thread with a `grep-regex` matcher, each file
//! collected whole by a small sink, then all files sorted by path. Files with a NUL byte are
//! skipped as binary (matches found before the NUL are dropped too). The search stops once it
//! has one match more than the limit, which is how it knows more exist; when that happens the
//! set of files searched depends on thread timing, so only the notice is certain, not which
//! matches were kept. Below the limit results are complete and deterministic.
//!
//! The tool formats `path:line: text` for matches and `path-line- text` for context lines,
//! paths relative to the working directory, lines cut at the session's
//! [`ToolLimits::grep_max_line_chars`] (500 unless configured), the whole output capped at its
//! byte limit (50 KB unless configured).

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;
use ignore::overrides::OverrideBuilder;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::args::Args;
use super::context::{ProtectedFiles, ToolContext, run_blocking};
use super::info::{ToolInfo, tool_info_accessors};
use super::truncate::{ToolLimits, append_notices, limit_size, truncate_head, truncate_line};
use super::walk;
use crate::agent::protocol::tool::{AgentTool, ToolError, ToolInvocation, ToolOutput};

fn description(limits: &ToolLimits) -> String {
    format!(
        "Search file contents for a regular expression (or exact text). Searches the working \
         directory or `path` (a folder or a file), including hidden files, skipping binary \
         files and what .gitignore excludes. Prints `path:line: text` for each matching line \
         and `path-line- text` for `context` lines; at most `limit` matches (default {}), long \
         lines cut at {} characters.",
        limits.grep_limit, limits.grep_max_line_chars
    )
}

/// What to look for and how.
#[derive(Clone, Debug)]
pub struct GrepOptions {
    pub pattern: String,
    pub ignore_case: bool,
    pub literal: bool,
    /// Lines of context before and after each match.
    pub context: usize,
    /// A glob restricting the files searched (ripgrep `-g` syntax).
    pub glob: Option<String>,
    /// Most matches kept; the search stops once it finds one more.
    pub limit: usize,
}

/// One reported line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HitLine {
    pub number: u64,
    pub is_match: bool,
    pub text: String,
}

/// The lines reported from one file, in file order.
#[derive(Clone, Debug)]
pub struct FileHits {
    pub path: PathBuf,
    pub lines: Vec<HitLine>,
}

/// Everything a search found.
#[derive(Clone, Debug, Default)]
pub struct SearchResult {
    /// Files with matches, sorted by path.
    pub files: Vec<FileHits>,
    /// Matching lines found (may exceed the limit by one when the limit was reached).
    pub matches: usize,
    pub limit_reached: bool,
    /// Files or folders that could not be read.
    pub errors: usize,
}

/// Build the matcher for `opts`, with a message for the model when the pattern is bad.
pub(crate) fn matcher(opts: &GrepOptions) -> Result<RegexMatcher, ToolError> {
    RegexMatcherBuilder::new()
        .case_insensitive(opts.ignore_case)
        .fixed_strings(opts.literal)
        .line_terminator(Some(b'\n'))
        .build(&opts.pattern)
        .map_err(|e| {
            ToolError::new(format!(
                "The pattern is not a valid regular expression: {e}\nSet `literal: true` to \
                 search for the text exactly as written."
            ))
        })
}

/// Search `root` (a folder or a file).
pub fn search(
    root: &Path,
    opts: &GrepOptions,
    cancel: &CancellationToken,
) -> Result<SearchResult, ToolError> {
    search_skipping(root, opts, cancel, None)
}

/// [`search`], never looking into pi's own key files.
pub(crate) fn search_skipping(
    root: &Path,
    opts: &GrepOptions,
    cancel: &CancellationToken,
    skip: Option<Arc<ProtectedFiles>>,
) -> Result<SearchResult, ToolError> {
    let matcher = matcher(opts)?;
    let overrides = match &opts.glob {
        Some(g) => {
            let base = if root.is_dir() {
                root
            } else {
                root.parent().unwrap_or(root)
            };
            let mut ob = OverrideBuilder::new(base);
            ob.add(g)
                .map_err(|e| ToolError::new(format!("The glob `{g}` is not valid: {e}")))?;
            Some(
                ob.build()
                    .map_err(|e| ToolError::new(format!("The glob `{g}` is not valid: {e}")))?,
            )
        }
        None => None,
    };
    let mut searcher_builder = SearcherBuilder::new();
    searcher_builder
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .before_context(opts.context)
        .after_context(opts.context);

    let found = Mutex::new(Vec::<FileHits>::new());
    let counter = AtomicUsize::new(0);
    let errors = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let limit = opts.limit;

    walk::parallel_skipping(root, overrides, skip).run(|| {
        let matcher = matcher.clone();
        let mut searcher = searcher_builder.build();
        let (found, counter, errors, stop) = (&found, &counter, &errors, &stop);
        Box::new(move |entry| {
            if stop.load(Ordering::Relaxed) || cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let entry = match entry {
                Ok(e) => e,
                Err(_) => {
                    errors.fetch_add(1, Ordering::Relaxed);
                    return WalkState::Continue;
                }
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let mut sink = Collect {
                lines: Vec::new(),
                matched: 0,
                binary: false,
                counter,
                limit,
                stop,
                cancel,
            };
            if searcher
                .search_path(&matcher, entry.path(), &mut sink)
                .is_err()
            {
                errors.fetch_add(1, Ordering::Relaxed);
            }
            if sink.binary {
                counter.fetch_sub(sink.matched, Ordering::Relaxed);
            } else if sink.matched > 0 {
                let hits = FileHits {
                    path: entry.into_path(),
                    lines: sink.lines,
                };
                crate::sync::lock(found).push(hits);
            }
            if stop.load(Ordering::Relaxed) {
                WalkState::Quit
            } else {
                WalkState::Continue
            }
        })
    });
    if cancel.is_cancelled() {
        return Err(ToolError::new(super::context::ABORTED_TEXT));
    }
    let mut files = crate::sync::into_inner(found);
    files.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    let matches = counter.into_inner();
    Ok(SearchResult {
        files,
        matches,
        limit_reached: matches > limit,
        errors: errors.into_inner(),
    })
}

/// Collects one file's lines.
struct Collect<'a> {
    lines: Vec<HitLine>,
    matched: usize,
    binary: bool,
    counter: &'a AtomicUsize,
    limit: usize,
    stop: &'a AtomicBool,
    cancel: &'a CancellationToken,
}

fn line_text(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    String::from_utf8_lossy(bytes).into_owned()
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.matched += 1;
        self.lines.push(HitLine {
            number: m.line_number().unwrap_or(0),
            is_match: true,
            text: line_text(m.bytes()),
        });
        let seen = self.counter.fetch_add(1, Ordering::Relaxed) + 1;
        if seen > self.limit {
            self.stop.store(true, Ordering::Relaxed);
            return Ok(false);
        }
        Ok(!self.cancel.is_cancelled())
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, io::Error> {
        self.lines.push(HitLine {
            number: c.line_number().unwrap_or(0),
            is_match: false,
            text: line_text(c.bytes()),
        });
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// Formatted output: at most `limit` matches (with their context), and whether any line was
/// cut to `max_line_chars`.
pub fn format_hits(
    result: &SearchResult,
    limit: usize,
    max_line_chars: usize,
    display: impl Fn(&Path) -> String,
) -> (String, bool) {
    let mut out = String::new();
    let mut shown = 0usize;
    let mut cut = false;
    'files: for file in &result.files {
        let name = display(&file.path);
        for line in &file.lines {
            if line.is_match {
                if shown == limit {
                    break 'files;
                }
                shown += 1;
            }
            let text = truncate_line(&line.text, max_line_chars);
            cut |= text.len() != line.text.len();
            let sep = if line.is_match { ':' } else { '-' };
            let _ = writeln!(out, "{name}{sep}{}{sep} {text}", line.number);
        }
    }
    out.pop();
    (out, cut)
}

pub struct GrepTool {
    ctx: Arc<ToolContext>,
    info: ToolInfo,
}

impl GrepTool {
    pub fn new(ctx: Arc<ToolContext>) -> Self {
        let default_limit = ctx.limits().grep_limit;
        GrepTool {
            info: ToolInfo::new(
                "grep",
                description(ctx.limits()),
                json!({
                    "type": "object",
                    "properties": {
                        "pattern": {"type": "string", "description": "Regular expression (or exact text with literal: true)"},
                        "path": {"type": "string", "description": "Folder or file to search (default: the working directory)"},
                        "glob": {"type": "string", "description": "Only search files matching this glob, e.g. *.rs or src/**/*.ts"},
                        "ignoreCase": {"type": "boolean", "description": "Match without regard to case (default false)"},
                        "literal": {"type": "boolean", "description": "Treat the pattern as exact text, not a regex (default false)"},
                        "context": {"type": "integer", "description": "Lines to show before and after each match (default 0)"},
                        "limit": {"type": "integer", "description": format!("Most matches to return (default {default_limit})")}
                    },
                    "required": ["pattern"]
                }),
            ),
            ctx,
        }
    }
}

#[async_trait]
impl AgentTool for GrepTool {
    tool_info_accessors!();

    fn interruptible(&self, _args: &Value) -> Result<bool, String> {
        Ok(true)
    }

    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let args = Args::new("grep", &call.args)?;
        let pattern = args.required_str("pattern")?;
        if pattern.is_empty() {
            return Err(ToolError::new("grep: the pattern is empty."));
        }
        let raw_path = args.opt_str("path")?.unwrap_or(".").to_string();
        let opts = GrepOptions {
            pattern: pattern.to_string(),
            ignore_case: args.opt_bool("ignoreCase")?.unwrap_or(false),
            literal: args.opt_bool("literal")?.unwrap_or(false),
            context: args.opt_count("context", 0)?.unwrap_or(0).min(1000) as usize,
            glob: args
                .opt_str("glob")?
                .filter(|g| !g.is_empty())
                .map(str::to_string),
            limit: args.limit("limit", self.ctx.limits().grep_limit)?,
        };
        let root = self.ctx.resolve_existing(&raw_path)?;
        self.ctx.refuse_protected("grep", &root)?;
        let ctx = self.ctx.clone();
        run_blocking(&call.cancel, move |cancel| {
            if std::fs::metadata(&root).is_err() {
                return Err(ToolError::new(format!("Path not found: {raw_path}")));
            }
            let skip = Some(ctx.protected().clone()).filter(|p| !p.is_empty());
            let result = search_skipping(&root, &opts, &cancel, skip)?;
            Ok(render(&ctx, &result, &opts))
        })
        .await
    }
}

fn render(ctx: &ToolContext, result: &SearchResult, opts: &GrepOptions) -> ToolOutput {
    if result.files.is_empty() {
        let mut text = "No matches found.".to_string();
        if result.errors > 0 {
            text.push_str(&format!(
                " ({} files or folders could not be read.)",
                result.errors
            ));
        }
        return ToolOutput::text(text).with_details(json!({"matches": 0, "errors": result.errors}));
    }
    let limits = ctx.limits();
    let (body, lines_cut) = format_hits(result, opts.limit, limits.grep_max_line_chars, |p| {
        ctx.display(p)
    });
    let cut = truncate_head(&body, usize::MAX, limits.max_bytes);
    let mut text = cut.content.clone();
    let mut notes = Vec::new();
    if result.limit_reached {
        notes.push(format!(
            "Stopped at {} matches. Pass limit={} for more, or narrow the pattern or path.",
            opts.limit,
            opts.limit.saturating_mul(2)
        ));
    }
    if cut.truncated() {
        notes.push(format!(
            "Output cut at {}. Narrow the pattern, the path or the glob.",
            limit_size(limits.max_bytes)
        ));
    }
    if lines_cut {
        notes.push(format!(
            "Lines longer than {} characters were cut; read the file to see them whole.",
            limits.grep_max_line_chars
        ));
    }
    if result.errors > 0 {
        notes.push(format!(
            "{} files or folders could not be read.",
            result.errors
        ));
    }
    append_notices(&mut text, &notes);
    ToolOutput::text(text).with_details(json!({
        "matches": result.matches.min(opts.limit),
        "files": result.files.len(),
        "limitReached": result.limit_reached,
        "linesCut": lines_cut,
        "outputTruncated": cut.truncated(),
        "errors": result.errors,
    }))
}
