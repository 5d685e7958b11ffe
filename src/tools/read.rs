//! `read`: a file's text (a window of lines) or an image.
//!
//! Text is streamed, never loaded whole: lines before `offset` are skipped by counting
//! newlines, the window is collected up to `limit` lines and the session's line and byte limits
//! ([`ToolLimits`]; 2000 lines and 50 KB unless configured), and the rest of the file is only counted so the notice can say how many lines there are and
//! which `offset` continues. A 100 MB log costs one pass of `memchr` and 50 KB of memory.
//!
//! Before any of that the first bytes are sniffed: PNG, JPEG, GIF and WebP files come back as
//! image blocks (by content, not by extension), and anything with a NUL byte is refused as
//! binary. Folders, pipes, sockets and devices are refused before they are opened, so a FIFO
//! never blocks the tool.
//!
//! Lines come back as stored (a CRLF file keeps its CRs; the loop's coercion removes them from
//! what the model sees); a UTF-8 byte-order mark at the start of the file is left out, since a
//! model copying it into an `edit` would never match.
//!
//! Images are sent as they are; nothing here resizes them. One too large for providers
//! ([`MAX_IMAGE_BYTES`]) is refused with a hint instead.

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use base64::Engine;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::args::Args;
use super::context::{ABORTED_TEXT, ToolContext, run_blocking};
use super::fsutil::{describe_io_error, looks_binary, sniff_image};
use super::info::{ToolInfo, tool_info_accessors};
use super::truncate::{ToolLimits, format_size, limit_size};
use crate::agent::protocol::tool::{AgentTool, ToolError, ToolInvocation, ToolOutput};
use crate::agent::protocol::types::{ContentBlock, ImageContent};

/// How many leading bytes are sniffed for image signatures and NUL bytes.
const SNIFF_BYTES: usize = 8192;
/// Largest image sent (raw bytes). Its base64 form stays within the 5 MB most providers take.
pub(crate) const MAX_IMAGE_BYTES: u64 = 3_750_000;

fn description(limits: &ToolLimits) -> String {
    format!(
        "Read a file from disk. Text comes back as it is in the file, without line numbers, at \
         most {} lines or {} per call; when more remains, a note at the end gives the `offset` \
         to continue from. Use `offset` (first line to show, counting from 1) and `limit` \
         (number of lines) to read part of a large file. PNG, JPEG, GIF and WebP images come \
         back as images. Relative paths are taken from the working directory; `~` is the home \
         folder.",
        limits.max_lines,
        limit_size(limits.max_bytes)
    )
}

pub(crate) struct ReadTool {
    ctx: Arc<ToolContext>,
    info: ToolInfo,
}

impl ReadTool {
    pub(crate) fn new(ctx: Arc<ToolContext>) -> Self {
        ReadTool {
            info: ToolInfo::new(
                "read",
                description(ctx.limits()),
                json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "File to read (relative or absolute)"},
                        "offset": {"type": "integer", "description": "Line to start from, counting from 1"},
                        "limit": {"type": "integer", "description": "Most lines to return"}
                    },
                    "required": ["path"]
                }),
            ),
            ctx,
        }
    }
}

#[async_trait]
impl AgentTool for ReadTool {
    tool_info_accessors!();

    fn interruptible(&self, _args: &Value) -> Result<bool, String> {
        Ok(true)
    }

    async fn execute(&self, call: ToolInvocation) -> Result<ToolOutput, ToolError> {
        let args = Args::new("read", &call.args)?;
        let raw = args.required_str("path")?.to_string();
        let offset = args.opt_count("offset", 0)?.unwrap_or(1).max(1);
        let limit = args.opt_count("limit", 1)?;
        let path = self.ctx.resolve_existing(&raw)?;
        self.ctx.refuse_protected("read", &path)?;
        let limits = *self.ctx.limits();
        run_blocking(&call.cancel, move |cancel| {
            read_path(&path, &raw, offset, limit, &limits, &cancel)
        })
        .await
    }
}

fn open_error(raw: &str, e: &io::Error) -> ToolError {
    match e.kind() {
        io::ErrorKind::NotFound => ToolError::new(format!("File not found: {raw}")),
        io::ErrorKind::PermissionDenied => {
            ToolError::new(format!("Permission denied: {raw} cannot be read."))
        }
        _ => ToolError::new(format!("Cannot read {raw}: {}", describe_io_error(e))),
    }
}

fn read_path(
    path: &Path,
    raw: &str,
    offset: u64,
    limit: Option<u64>,
    limits: &ToolLimits,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let meta = fs::metadata(path).map_err(|e| open_error(raw, &e))?;
    if meta.is_dir() {
        return Err(ToolError::new(format!(
            "{raw} is a folder, not a file. Use ls to list it or find to search it."
        )));
    }
    if !meta.is_file() {
        return Err(ToolError::new(format!(
            "{raw} is not a regular file (it is a device, socket or pipe); read only opens \
             regular files."
        )));
    }
    let mut file = File::open(path).map_err(|e| open_error(raw, &e))?;
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    (&mut file)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| open_error(raw, &e))?;

    if let Some(mime) = sniff_image(&head) {
        return read_image(file, head, meta.len(), raw, mime);
    }
    if looks_binary(&head) {
        return Err(ToolError::new(format!(
            "{raw} is a binary file ({}); read only returns text. Inspect it with bash \
             (for example `file` or `xxd | head`).",
            format_size(meta.len())
        )));
    }
    let reader = BufReader::with_capacity(64 * 1024, io::Cursor::new(head).chain(file));
    read_text(reader, raw, offset, limit, limits, cancel)
}

fn read_image(
    mut file: File,
    mut data: Vec<u8>,
    size: u64,
    raw: &str,
    mime: &str,
) -> Result<ToolOutput, ToolError> {
    if size > MAX_IMAGE_BYTES {
        return Err(ToolError::new(format!(
            "{raw} is a {mime} image of {}, more than the {} that can be sent. Make a smaller \
             copy first (for example `convert {raw} -resize 50% small.png`) and read that.",
            format_size(size),
            format_size(MAX_IMAGE_BYTES)
        )));
    }
    file.read_to_end(&mut data)
        .map_err(|e| open_error(raw, &e))?;
    let encoded = base64::engine::general_purpose::STANDARD.encode(&data);
    Ok(ToolOutput {
        content: vec![
            ContentBlock::text(format!(
                "Image {raw} ({mime}, {}).",
                format_size(data.len() as u64)
            )),
            ContentBlock::Image(ImageContent {
                data: encoded,
                mime_type: mime.to_string(),
                detail: None,
            }),
        ],
        details: json!({"mimeType": mime, "bytes": data.len()}),
        is_error: false,
        useless: false,
    })
}

/// Walks a reader line by line, counting newlines, keeping only what it is asked to keep.
struct LineScanner<R> {
    reader: R,
    newlines: u64,
    last_byte: Option<u8>,
}

impl<R: BufRead> LineScanner<R> {
    fn new(reader: R) -> Self {
        LineScanner {
            reader,
            newlines: 0,
            last_byte: None,
        }
    }

    /// Lines seen so far, counting a final line without a newline.
    fn lines_seen(&self) -> u64 {
        match self.last_byte {
            None | Some(b'\n') => self.newlines,
            Some(_) => self.newlines + 1,
        }
    }

    /// Consume until `n` more newlines have passed (or the end).
    fn skip_lines(&mut self, mut n: u64, cancel: &CancellationToken) -> io::Result<()> {
        while n > 0 {
            check(cancel)?;
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                return Ok(());
            }
            let mut used = buf.len();
            for pos in memchr::memchr_iter(b'\n', buf) {
                n -= 1;
                self.newlines += 1;
                if n == 0 {
                    used = pos + 1;
                    break;
                }
            }
            self.last_byte = buf.get(used - 1).copied();
            self.reader.consume(used);
        }
        Ok(())
    }

    /// Count everything left.
    fn count_rest(&mut self, cancel: &CancellationToken) -> io::Result<()> {
        loop {
            check(cancel)?;
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                return Ok(());
            }
            self.newlines += memchr::memchr_iter(b'\n', buf).count() as u64;
            self.last_byte = buf.last().copied();
            let used = buf.len();
            self.reader.consume(used);
        }
    }

    /// The next line without its newline: at most `cap` bytes go into `out`; returns the
    /// line's full length, or `None` at the end of the input.
    fn next_line(
        &mut self,
        cap: usize,
        out: &mut Vec<u8>,
        cancel: &CancellationToken,
    ) -> io::Result<Option<u64>> {
        let mut len = 0u64;
        let mut any = false;
        loop {
            check(cancel)?;
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                return Ok(any.then_some(len));
            }
            any = true;
            let (piece, used, done) = match memchr::memchr(b'\n', buf) {
                Some(pos) => (&buf[..pos], pos + 1, true),
                None => (buf, buf.len(), false),
            };
            let room = cap.saturating_sub(out.len());
            out.extend_from_slice(&piece[..piece.len().min(room)]);
            len += piece.len() as u64;
            self.last_byte = buf.get(used - 1).copied();
            if done {
                self.newlines += 1;
            }
            self.reader.consume(used);
            if done {
                return Ok(Some(len));
            }
        }
    }
}

fn check(cancel: &CancellationToken) -> io::Result<()> {
    if cancel.is_cancelled() {
        Err(io::Error::other(ABORTED_TEXT))
    } else {
        Ok(())
    }
}

fn read_text<R: BufRead>(
    reader: R,
    raw: &str,
    offset: u64,
    limit: Option<u64>,
    limits: &ToolLimits,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let max_bytes = limits.max_bytes;
    let io_err = |e: io::Error| ToolError::new(format!("Cannot read {raw}: {e}"));
    let mut scan = LineScanner::new(reader);
    scan.skip_lines(offset - 1, cancel).map_err(io_err)?;

    let cap_lines = limits.max_lines as u64;
    let max_lines = limit.map_or(cap_lines, |l| l.min(cap_lines));
    let mut out: Vec<u8> = Vec::new();
    let mut shown = 0u64;
    let mut cut_by_bytes = false;
    let mut oversized_first: Option<u64> = None;
    let mut line = Vec::new();
    while shown < max_lines {
        line.clear();
        let Some(len) = scan
            .next_line(max_bytes.saturating_add(1), &mut line, cancel)
            .map_err(io_err)?
        else {
            break;
        };
        let sep = u64::from(shown > 0);
        if out.len() as u64 + sep + len > max_bytes as u64 {
            cut_by_bytes = true;
            if shown == 0 {
                oversized_first = Some(len);
            }
            break;
        }
        if shown > 0 {
            out.push(b'\n');
        }
        out.extend_from_slice(&line);
        shown += 1;
    }
    scan.count_rest(cancel).map_err(io_err)?;
    let total = scan.lines_seen();

    if offset > 1 && offset > total {
        return Err(ToolError::new(format!(
            "Offset {offset} is past the end of {raw}, which has {total} line{}.",
            if total == 1 { "" } else { "s" }
        )));
    }
    if total == 0 {
        return Ok(ToolOutput::text(format!("({raw} is empty.)")));
    }

    let end = offset + shown - 1;
    let mut details = json!({"startLine": offset, "endLine": end, "totalLines": total});
    if let Some(len) = oversized_first {
        let text = format!(
            "[Line {offset} of {raw} is {} on its own, more than the {} a read returns. Show \
             part of it with bash: sed -n '{offset}p' {raw} | head -c {max_bytes}]",
            format_size(len),
            limit_size(max_bytes)
        );
        details["truncatedBy"] = json!("bytes");
        return Ok(ToolOutput::text(text).with_details(details));
    }

    // A byte-order mark is invisible; if the model copied it into an edit it would not match.
    let body = if offset == 1 {
        out.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&out)
    } else {
        &out
    };
    let mut text = String::from_utf8_lossy(body).into_owned();
    let remaining = total - end;
    let capped_by_tool = cut_by_bytes || (shown == cap_lines && limit.is_none_or(|l| l > shown));
    if remaining > 0 && capped_by_tool {
        let why = if cut_by_bytes {
            format!(" ({} limit)", limit_size(max_bytes))
        } else {
            String::new()
        };
        text.push_str(&format!(
            "\n\n[Lines {offset}-{end} of {total} shown{why}. Continue with offset={}.]",
            end + 1
        ));
        details["truncatedBy"] = json!(if cut_by_bytes { "bytes" } else { "lines" });
    } else if remaining > 0 {
        text.push_str(&format!(
            "\n\n[{remaining} more line{} in the file. Continue with offset={}.]",
            if remaining == 1 { "" } else { "s" },
            end + 1
        ));
    }
    Ok(ToolOutput::text(text).with_details(details))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, offset: u64, limit: Option<u64>) -> Result<String, ToolError> {
        let reader = BufReader::with_capacity(7, text.as_bytes());
        read_text(
            reader,
            "f.txt",
            offset,
            limit,
            &ToolLimits::default(),
            &CancellationToken::new(),
        )
        .map(|o| {
            o.content
                .iter()
                .filter_map(ContentBlock::as_text)
                .collect::<String>()
        })
    }

    #[test]
    fn whole_small_file() {
        assert_eq!(read("a\nb\nc\n", 1, None).unwrap(), "a\nb\nc");
        assert_eq!(read("a\nb", 1, None).unwrap(), "a\nb");
    }

    #[test]
    fn window_with_limit_names_the_next_offset() {
        let text = read("1\n2\n3\n4\n5\n", 2, Some(2)).unwrap();
        assert_eq!(
            text,
            "2\n3\n\n[2 more lines in the file. Continue with offset=4.]"
        );
    }

    #[test]
    fn offset_past_the_end_is_an_error() {
        let e = read("1\n2\n", 3, None).unwrap_err();
        assert!(
            e.0.contains("past the end") && e.0.contains("2 lines"),
            "{e}"
        );
        assert!(read("1\n2\n", 2, None).is_ok());
    }

    #[test]
    fn line_cap_notice() {
        let body: String = (1..=2500).map(|i| format!("{i}\n")).collect();
        let text = read(&body, 1, None).unwrap();
        assert!(text.ends_with("[Lines 1-2000 of 2500 shown. Continue with offset=2001.]"));
        let text = read(&body, 2001, None).unwrap();
        assert!(text.starts_with("2001\n") && text.ends_with("2500"));
    }

    #[test]
    fn byte_cap_notice() {
        let line = "x".repeat(1000);
        let body: String = (0..100).map(|_| format!("{line}\n")).collect();
        let text = read(&body, 1, None).unwrap();
        assert!(
            text.ends_with("[Lines 1-51 of 100 shown (50 KB limit). Continue with offset=52.]"),
            "{}",
            &text[text.len() - 100..]
        );
    }

    #[test]
    fn oversized_first_line_gives_a_sed_hint() {
        let body = format!(
            "short\n{}\nafter\n",
            "y".repeat(super::super::truncate::MAX_BYTES + 10)
        );
        let text = read(&body, 2, None).unwrap();
        assert!(text.contains("sed -n '2p' f.txt | head -c"), "{text}");
    }

    #[test]
    fn empty_file_says_so() {
        assert_eq!(read("", 1, None).unwrap(), "(f.txt is empty.)");
        assert!(read("", 2, None).is_err());
    }
}
