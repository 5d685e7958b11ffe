//! One user message from a prompt and what is attached to it, and the way back for showing it.
//!
//! The message's blocks, in order: each text file as `<file name="path">` + its text +
//! `</file>`; each image as an empty `<file name="path"></file>` followed by the image itself;
//! then the prompt. With nothing attached the message is the prompt alone, as before. For the
//! screen, [`shown_text`] turns the file blocks back into chips (`[file: path]`,
//! `[image: path]`), also for a message the Node.js `pi` wrote, whose files lead its text.

use std::sync::Arc;

use super::load::Attachment;
use crate::agent::protocol::types::{
    AgentMessage, ContentBlock, Message, UserContent, UserMessage,
};

const OPEN: &str = "<file name=\"";
const CLOSE: &str = "</file>";

/// A prompt made into a message.
#[derive(Clone, Debug)]
pub(crate) struct Built {
    pub message: AgentMessage,
    /// Images that were not sent because the model takes no images (their names).
    pub left_out: Vec<String>,
}

fn escape(name: &str) -> String {
    name.replace('&', "&amp;").replace('"', "&quot;")
}

fn unescape(name: &str) -> String {
    name.replace("&quot;", "\"").replace("&amp;", "&")
}

/// The message for `text` with `attachments` (`images`: the model takes images; if not, they
/// are left out and named in [`Built::left_out`]).
pub(crate) fn build(text: &str, attachments: Vec<Attachment>, images: bool) -> Built {
    let mut left_out = Vec::new();
    let mut blocks = Vec::new();
    for a in attachments {
        match a {
            Attachment::Text { name, text } => {
                let end = if text.ends_with('\n') { "" } else { "\n" };
                blocks.push(ContentBlock::text(format!(
                    "{OPEN}{}\">\n{text}{end}{CLOSE}",
                    escape(&name)
                )));
            }
            Attachment::Image { name, .. } if !images => left_out.push(name),
            Attachment::Image { name, image } => {
                blocks.push(ContentBlock::text(format!(
                    "{OPEN}{}\">{CLOSE}",
                    escape(&name)
                )));
                blocks.push(ContentBlock::Image(image));
            }
        }
    }
    let content = if blocks.is_empty() {
        UserContent::Text(text.to_string())
    } else {
        if !text.trim().is_empty() {
            blocks.push(ContentBlock::text(text));
        }
        UserContent::Blocks(blocks)
    };
    let mut message = UserMessage::new("");
    message.content = content;
    Built {
        message: AgentMessage::Llm(Arc::new(Message::User(message))),
        left_out,
    }
}

/// The `<file>` blocks that lead `text`: (name, whether its body is empty), and the rest.
fn split_files(text: &str) -> (Vec<(String, bool)>, &str) {
    let mut files = Vec::new();
    let mut rest = text;
    loop {
        let candidate = rest.trim_start_matches(['\n', '\r']);
        let Some(after) = candidate.strip_prefix(OPEN) else {
            break;
        };
        let Some((name, body_on)) = after.split_once("\">") else {
            break;
        };
        let Some((body, after_close)) = body_on.split_once(CLOSE) else {
            break;
        };
        if name.contains('\n') {
            break;
        }
        files.push((unescape(name), body.is_empty()));
        rest = after_close;
    }
    if files.is_empty() {
        (files, text)
    } else {
        (files, rest.trim_start_matches(['\n', '\r']))
    }
}

/// The parts of a user message: chips for its files and images, and the text typed.
fn parts(content: &UserContent) -> (Vec<String>, Vec<String>) {
    let texts: Vec<&str> = match content {
        UserContent::Text(t) => vec![t.as_str()],
        UserContent::Blocks(blocks) => blocks.iter().filter_map(ContentBlock::as_text).collect(),
    };
    let mut chips = Vec::new();
    let mut typed = Vec::new();
    for t in texts {
        let (files, rest) = split_files(t);
        for (name, empty) in files {
            chips.push(match empty {
                true => format!("[image: {}]", super::base_name(&name)),
                false => format!("[file: {name}]"),
            });
        }
        if !rest.is_empty() {
            typed.push(rest.to_string());
        }
    }
    (chips, typed)
}

/// A user message as the screen shows it: a line of chips for what was attached, then the
/// text typed.
pub(crate) fn shown_text(content: &UserContent) -> String {
    let (chips, typed) = parts(content);
    let typed = typed.join("\n");
    match (chips.is_empty(), typed.is_empty()) {
        (true, _) => typed,
        (false, true) => chips.join(" "),
        (false, false) => format!("{}\n{typed}", chips.join(" ")),
    }
}

/// Only the text typed, without what was attached (for putting a message back in an editor).
pub(crate) fn typed_text(content: &UserContent) -> String {
    parts(content).1.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::protocol::types::ImageContent;

    fn image(name: &str) -> Attachment {
        Attachment::Image {
            name: name.into(),
            image: ImageContent {
                data: "AAAA".into(),
                mime_type: "image/png".into(),
                detail: None,
            },
        }
    }

    fn content(b: &Built) -> UserContent {
        match b.message.as_llm() {
            Some(Message::User(u)) => u.content.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn files_lead_the_prompt_and_come_back_as_chips() {
        let built = build(
            "explain",
            vec![
                Attachment::Text {
                    name: "src/main.rs".into(),
                    text: "fn main() {}\n".into(),
                },
                image("shot \"1\".png"),
            ],
            true,
        );
        assert!(built.left_out.is_empty());
        let c = content(&built);
        let UserContent::Blocks(blocks) = &c else {
            panic!("{c:?}");
        };
        assert_eq!(
            blocks[0].as_text(),
            Some("<file name=\"src/main.rs\">\nfn main() {}\n</file>")
        );
        assert_eq!(
            blocks[1].as_text(),
            Some("<file name=\"shot &quot;1&quot;.png\"></file>")
        );
        assert!(matches!(blocks[2], ContentBlock::Image(_)));
        assert_eq!(blocks[3].as_text(), Some("explain"));
        assert_eq!(
            shown_text(&c),
            "[file: src/main.rs] [image: shot \"1\".png]\nexplain"
        );
        assert_eq!(typed_text(&c), "explain");
    }

    #[test]
    fn a_model_without_images_gets_the_text_and_the_caller_the_names() {
        let built = build("what is this?", vec![image("shot.png")], false);
        assert_eq!(built.left_out, ["shot.png"]);
        assert_eq!(content(&built), UserContent::Text("what is this?".into()));
    }

    #[test]
    fn node_style_text_with_leading_files_is_shown_with_chips() {
        let node = UserContent::Text(
            "<file name=\"/abs/a.md\">\n# A\n</file>\n<file name=\"/abs/b.png\"></file>\nAnswer this"
                .into(),
        );
        assert_eq!(
            shown_text(&node),
            "[file: /abs/a.md] [image: b.png]\nAnswer this"
        );
        let plain = UserContent::Text("<file name=\"x\"> unclosed".into());
        assert_eq!(shown_text(&plain), "<file name=\"x\"> unclosed");
    }
}
