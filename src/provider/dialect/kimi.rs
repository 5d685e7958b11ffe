//! Kimi K2: calls between `<|tool_calls_section_begin|>` and `<|tool_calls_section_end|>`,
//! each `<|tool_call_begin|>functions.NAME:INDEX<|tool_call_argument_begin|>{…}<|tool_call_end|>`
//! with the arguments as a JSON object. A lone call without the section tags is read too.
//! Results are written the way Kimi's template shows them, `## Return of functions.NAME`
//! followed by the output. Tags inside the JSON arguments' strings are part of them.

use serde_json::Value;

use super::{Block, Dialect, Parsed, json_arguments, section_calls};
use crate::agent::protocol::stream::ToolSpec;

pub(crate) struct Kimi;

const SECTION_BEGIN: &str = "<|tool_calls_section_begin|>";
const SECTION_END: &str = "<|tool_calls_section_end|>";
const CALL_BEGIN: &str = "<|tool_call_begin|>";
const CALL_END: &str = "<|tool_call_end|>";
const ARGS: &str = "<|tool_call_argument_begin|>";
const RETURN: &str = "## Return of functions.";

const BLOCKS: &[Block] = &[
    Block {
        open: SECTION_BEGIN,
        close: SECTION_END,
    },
    Block {
        open: CALL_BEGIN,
        close: CALL_END,
    },
];

impl Dialect for Kimi {
    fn name(&self) -> &'static str {
        "kimi"
    }

    fn instructions(&self) -> String {
        format!(
            "To call tools, write them between {SECTION_BEGIN} and {SECTION_END}; each call is \
             {CALL_BEGIN}, then functions.NAME:N (N counts the calls of the reply from 0), then \
             {ARGS}, the arguments as a JSON object, and {CALL_END}:\n{}\nResults come back \
             as \"{RETURN}NAME\" followed by the output.",
            self.encode_call("read", &serde_json::json!({"path": "src/main.rs"}))
        )
    }

    fn encode_call(&self, name: &str, arguments: &Value) -> String {
        format!(
            "{SECTION_BEGIN}{CALL_BEGIN}functions.{name}:0{ARGS}{arguments}{CALL_END}{SECTION_END}"
        )
    }

    fn encode_result(&self, name: &str, output: &str, is_error: bool) -> String {
        let output = if is_error {
            format!("Error: {output}")
        } else {
            output.to_string()
        };
        format!("{RETURN}{name}\n{output}")
    }

    fn blocks(&self) -> &'static [Block] {
        BLOCKS
    }

    fn result_markers(&self) -> &'static [&'static str] {
        &["<|im_system|>", RETURN]
    }

    fn dropped(&self) -> &'static [&'static str] {
        &["<|im_end|>"]
    }

    fn peek_name(&self, _block: &Block, partial: &str) -> Option<String> {
        let piece = match partial.find(CALL_BEGIN) {
            Some(at) => &partial[at + CALL_BEGIN.len()..],
            None => partial,
        };
        let (head, _) = piece.split_once(ARGS)?;
        let name = call_name(head);
        (!name.is_empty()).then_some(name)
    }

    fn parse(&self, block: &Block, body: &str, _tools: &[ToolSpec]) -> Vec<Parsed> {
        if block.open == CALL_BEGIN {
            return vec![one_call(body)];
        }
        section_calls(body, &BLOCKS[1], "the tool calls section", one_call)
    }
}

/// `functions.read:0` → `read`.
fn call_name(head: &str) -> String {
    let t = head.trim();
    let t = t.strip_prefix("functions.").unwrap_or(t);
    let t = t.rsplit_once(':').map_or(t, |(name, index)| {
        if index.chars().all(|c| c.is_ascii_digit()) {
            name
        } else {
            t
        }
    });
    t.trim().to_string()
}

/// `functions.NAME:N<|tool_call_argument_begin|>{…}`.
fn one_call(piece: &str) -> Parsed {
    let Some((head, args)) = piece.split_once(ARGS) else {
        return Parsed::Bad {
            name: call_name(piece.split('{').next().unwrap_or_default()),
            error: format!("the tool call has no {ARGS}"),
            raw: piece.to_string(),
        };
    };
    let name = call_name(head);
    json_arguments(&name, args.trim())
}
