//! DeepSeek (V3, R1, V3.1): calls between `<｜tool▁calls▁begin｜>` and `<｜tool▁calls▁end｜>`,
//! each `<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME` followed by its arguments in a
//! ```json fence and `<｜tool▁call▁end｜>`. V3.1's shorter `NAME<｜tool▁sep｜>{…}` is read too,
//! and so is a lone call without the outer tags. Results are written as
//! `<｜tool▁output▁begin｜>…<｜tool▁output▁end｜>`. Tags inside the JSON arguments' strings are
//! part of them.

use serde_json::Value;

use super::{Block, Dialect, Parsed, json_arguments, section_calls, strip_fence};
use crate::agent::protocol::stream::ToolSpec;

pub(crate) struct DeepSeek;

const CALLS_BEGIN: &str = "<｜tool▁calls▁begin｜>";
const CALLS_END: &str = "<｜tool▁calls▁end｜>";
const CALL_BEGIN: &str = "<｜tool▁call▁begin｜>";
const CALL_END: &str = "<｜tool▁call▁end｜>";
const SEP: &str = "<｜tool▁sep｜>";

const BLOCKS: &[Block] = &[
    Block {
        open: CALLS_BEGIN,
        close: CALLS_END,
    },
    Block {
        open: CALL_BEGIN,
        close: CALL_END,
    },
];

impl Dialect for DeepSeek {
    fn name(&self) -> &'static str {
        "deepseek"
    }

    fn instructions(&self) -> String {
        format!(
            "To call tools, write them between {CALLS_BEGIN} and {CALLS_END}; each call is \
             {CALL_BEGIN}function{SEP}NAME, a new line, the arguments as a JSON object in a \
             ```json fence, then {CALL_END}:\n{}",
            self.encode_call("read", &serde_json::json!({"path": "src/main.rs"}))
        )
    }

    fn encode_call(&self, name: &str, arguments: &Value) -> String {
        format!(
            "{CALLS_BEGIN}{CALL_BEGIN}function{SEP}{name}\n```json\n{arguments}\n```{CALL_END}{CALLS_END}"
        )
    }

    fn encode_result(&self, _name: &str, output: &str, is_error: bool) -> String {
        let output = if is_error {
            format!("Error: {output}")
        } else {
            output.to_string()
        };
        format!(
            "<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>{output}<｜tool▁output▁end｜><｜tool▁outputs▁end｜>"
        )
    }

    fn blocks(&self) -> &'static [Block] {
        BLOCKS
    }

    fn result_markers(&self) -> &'static [&'static str] {
        &["<｜tool▁outputs▁begin｜>", "<｜tool▁output▁begin｜>"]
    }

    fn dropped(&self) -> &'static [&'static str] {
        &["<｜end▁of▁sentence｜>"]
    }

    fn peek_name(&self, _block: &Block, partial: &str) -> Option<String> {
        let piece = match partial.find(CALL_BEGIN) {
            Some(at) => &partial[at + CALL_BEGIN.len()..],
            None => partial,
        };
        let (before, after) = piece.split_once(SEP)?;
        let before = before.trim();
        let name = if before.is_empty() || before == "function" {
            after[..after.find(['\n', '`', '{'])?].trim()
        } else {
            before
        };
        (!name.is_empty()).then(|| name.to_string())
    }

    fn parse(&self, block: &Block, body: &str, _tools: &[ToolSpec]) -> Vec<Parsed> {
        if block.open == CALL_BEGIN {
            return vec![one_call(body)];
        }
        section_calls(body, &BLOCKS[1], "the tool calls", one_call)
    }
}

/// `function<｜tool▁sep｜>NAME\n```json{…}```` or `NAME<｜tool▁sep｜>{…}`.
fn one_call(piece: &str) -> Parsed {
    let Some((before, after)) = piece.split_once(SEP) else {
        return Parsed::Bad {
            name: String::new(),
            error: format!("the tool call has no {SEP}"),
            raw: piece.to_string(),
        };
    };
    let before = before.trim();
    let (name, args) = if before.is_empty() || before == "function" {
        let end = after.find(['\n', '`', '{']).unwrap_or(after.len());
        (after[..end].trim(), &after[end..])
    } else {
        (before, after)
    };
    json_arguments(name, strip_fence(args))
}
