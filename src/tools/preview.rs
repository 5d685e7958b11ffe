//! What a change-making call would do, shown before it runs (for approval): the unified diff
//! an `edit` or `write` would apply to the file as it is now. Nothing is written; a call that
//! would fail says why instead, in the words the tool itself would use.

use serde_json::Value;

use super::args::Args;
use super::context::ToolContext;
use super::diff::unified_patch;
use super::edit::{apply_edits, parse_edits};

/// The largest file a preview reads (the tools themselves go further; a diff of more is not
/// something a person reads before saying yes).
const MAX_PREVIEW_BYTES: u64 = 4 * 1024 * 1024;

/// The diff `tool` (`edit` or `write`) would apply with `args`; `None` for other tools.
/// Blocking: it reads the file.
pub(crate) fn change_preview(ctx: &ToolContext, tool: &str, args: &Value) -> Option<String> {
    let result = match tool {
        "edit" => edit_preview(ctx, args),
        "write" => write_preview(ctx, args),
        _ => return None,
    };
    Some(result.unwrap_or_else(|why| format!("(no preview: {why})")))
}

fn current_text(path: &std::path::Path, raw: &str) -> Result<Option<String>, String> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {raw}: {e}")),
        Ok(m) if !m.is_file() => Err(format!("{raw} is not a regular file")),
        Ok(m) if m.len() > MAX_PREVIEW_BYTES => Err(format!("{raw} is {} bytes", m.len())),
        Ok(_) => {
            let bytes = std::fs::read(path).map_err(|e| format!("cannot read {raw}: {e}"))?;
            String::from_utf8(bytes)
                .map(Some)
                .map_err(|_| format!("{raw} is not UTF-8 text"))
        }
    }
}

fn edit_preview(ctx: &ToolContext, args: &Value) -> Result<String, String> {
    let a = Args::new("edit", args).map_err(|e| e.to_string())?;
    let raw = a.required_str("path").map_err(|e| e.to_string())?;
    let edits = parse_edits(&a).map_err(|e| e.to_string())?;
    let path = ctx.resolve_existing(raw).map_err(|e| e.to_string())?;
    let original = current_text(&path, raw)?.ok_or_else(|| format!("{raw} does not exist"))?;
    let applied = apply_edits(&original, &edits, raw).map_err(|e| e.to_string())?;
    Ok(unified_patch(&original, &applied.content, raw))
}

fn write_preview(ctx: &ToolContext, args: &Value) -> Result<String, String> {
    let a = Args::new("write", args).map_err(|e| e.to_string())?;
    let raw = a.required_str("path").map_err(|e| e.to_string())?;
    let content = a.required_str("content").map_err(|e| e.to_string())?;
    let path = ctx.resolve(raw).map_err(|e| e.to_string())?;
    let old = current_text(&path, raw)?.unwrap_or_default();
    Ok(unified_patch(&old, content, raw))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn previews_an_edit_and_a_write_without_changing_anything() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let ctx = ToolContext::new(dir.path());
        let diff = change_preview(
            &ctx,
            "edit",
            &json!({"path": "a.txt", "oldText": "two", "newText": "2"}),
        )
        .unwrap();
        assert!(diff.contains("-two") && diff.contains("+2"), "{diff}");
        let diff = change_preview(
            &ctx,
            "write",
            &json!({"path": "new.txt", "content": "fresh\n"}),
        )
        .unwrap();
        assert!(diff.contains("+fresh"), "{diff}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "one\ntwo\nthree\n"
        );
        assert!(!dir.path().join("new.txt").exists());
        let why = change_preview(
            &ctx,
            "edit",
            &json!({"path": "a.txt", "oldText": "nowhere", "newText": "x"}),
        )
        .unwrap();
        assert!(why.starts_with("(no preview:"), "{why}");
        assert!(change_preview(&ctx, "bash", &json!({"command": "ls"})).is_none());
    }
}
