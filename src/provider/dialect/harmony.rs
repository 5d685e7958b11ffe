//! gpt-oss's Harmony format, for a server that passes the raw tokens through:
//! `<|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>`
//! (the recipient may also come before the channel). Results are written as
//! `<|start|>functions.NAME to=assistant<|channel|>commentary<|message|>…<|end|>`. Other
//! control tokens are removed from the text.

use serde_json::Value;

use super::{Block, Dialect, Parsed, json_arguments, strip_fence};
use crate::agent::protocol::stream::ToolSpec;

pub(crate) struct Harmony;

const BLOCKS: &[Block] = &[
    Block {
        open: "<|channel|>commentary to=",
        close: "<|call|>",
    },
    Block {
        open: " to=functions.",
        close: "<|call|>",
    },
];

impl Dialect for Harmony {
    fn name(&self) -> &'static str {
        "harmony"
    }

    fn instructions(&self) -> String {
        format!(
            "To call a tool, send a message on the commentary channel to functions.NAME with \
             the arguments as a JSON object, and end it with <|call|>:\n{}",
            self.encode_call("read", &serde_json::json!({"path": "src/main.rs"}))
        )
    }

    fn encode_call(&self, name: &str, arguments: &Value) -> String {
        format!(
            "<|start|>assistant<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{arguments}<|call|>"
        )
    }

    fn encode_result(&self, name: &str, output: &str, is_error: bool) -> String {
        let output = if is_error {
            format!("Error: {output}")
        } else {
            output.to_string()
        };
        format!(
            "<|start|>functions.{name} to=assistant<|channel|>commentary<|message|>{output}<|end|>"
        )
    }

    fn blocks(&self) -> &'static [Block] {
        BLOCKS
    }

    fn result_markers(&self) -> &'static [&'static str] {
        &["<|start|>functions.", " to=assistant<|channel|>"]
    }

    fn dropped(&self) -> &'static [&'static str] {
        &[
            "<|start|>assistant",
            "<|channel|>final<|message|>",
            "<|channel|>analysis<|message|>",
            "<|channel|>commentary<|message|>",
            "<|end|>",
            "<|return|>",
        ]
    }

    fn peek_name(&self, _block: &Block, partial: &str) -> Option<String> {
        let t = partial.trim_start();
        let t = t.strip_prefix("functions.").unwrap_or(t);
        let end = t.find(|c: char| c.is_whitespace() || c == '<')?;
        (end > 0).then(|| t[..end].to_string())
    }

    fn parse(&self, _block: &Block, body: &str, _tools: &[ToolSpec]) -> Vec<Parsed> {
        // `functions.NAME <|constrain|>json<|message|>{…}` or `NAME<|channel|>… <|message|>{…}`.
        let t = body.trim_start();
        let t = t.strip_prefix("functions.").unwrap_or(t);
        let end = t
            .find(|c: char| c.is_whitespace() || c == '<')
            .unwrap_or(t.len());
        let name = t[..end].to_string();
        let Some(at) = t.find("<|message|>") else {
            return vec![Parsed::Bad {
                name,
                error: "the call has no <|message|> with its arguments".into(),
                raw: body.to_string(),
            }];
        };
        let args = strip_fence(&t[at + "<|message|>".len()..]);
        vec![json_arguments(&name, args)]
    }
}
