//! Dialect encoders, parsers and the streaming rewriter.

use std::sync::Arc;

use serde_json::{Value, json};

use super::rewriter::UNNAMED_CALL;
use super::scanner::{Piece, Scanner};
use super::stream::Rewriter;
use super::*;
use crate::agent::protocol::stream::{LlmContext, Model, StreamOptions, ToolChoice};
use crate::agent::protocol::types::{StopReason, ToolResultMessage};

fn tools() -> Vec<ToolSpec> {
    let spec = |name: &str, params: Value| ToolSpec {
        name: name.into(),
        description: format!("The {name} tool."),
        parameters: params,
    };
    vec![
        spec(
            "read",
            json!({"type": "object", "properties": {"path": {"type": "string"}, "offset": {"type": "integer"}}}),
        ),
        spec(
            "bash",
            json!({"type": "object", "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}}}),
        ),
        spec(
            "write",
            json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}),
        ),
    ]
}

/// Every dialect read by the tag scanner (`json` is read whole; see its own tests).
fn all() -> Vec<Arc<dyn Dialect>> {
    NAMES
        .iter()
        .map(|n| by_name(n).unwrap())
        .filter(|d| !d.whole_reply())
        .collect()
}

fn model() -> Model {
    Model::new("ollama", "openai-completions", "m")
}

/// Feed `chunks` through a rewriter; return the final message and every event.
fn rewrite(
    dialect: Arc<dyn Dialect>,
    chunks: &[&str],
) -> (
    AssistantMessage,
    Vec<crate::agent::protocol::stream::StreamEvent>,
) {
    use crate::agent::protocol::stream::StreamEvent;
    let mut rw = Rewriter::new(dialect, tools(), &model());
    let mut events = rw.event(StreamEvent::Start {
        partial: Box::new(AssistantMessage::empty("openai-completions", "ollama", "m")),
    });
    events.extend(rw.event(StreamEvent::TextStart { content_index: 0 }));
    for c in chunks {
        events.extend(rw.event(StreamEvent::TextDelta {
            content_index: 0,
            delta: c.to_string(),
        }));
    }
    let mut done = AssistantMessage::empty("openai-completions", "ollama", "m");
    done.content = vec![ContentBlock::text(chunks.concat())];
    events.extend(rw.event(StreamEvent::Done {
        reason: StopReason::Stop,
        message: Box::new(done),
    }));
    let last = events.iter().rev().find_map(|e| match e {
        StreamEvent::Done { message, .. } => Some((**message).clone()),
        _ => None,
    });
    (last.expect("a done event"), events)
}

/// The text deltas of the events, joined.
fn streamed_text(events: &[crate::agent::protocol::stream::StreamEvent]) -> String {
    use crate::agent::protocol::stream::StreamEvent;
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

/// Every way to cut `text` in two, and every character on its own.
fn splits(text: &str) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = text
        .char_indices()
        .map(|(i, _)| vec![text[..i].to_string(), text[i..].to_string()])
        .collect();
    out.push(text.chars().map(|c| c.to_string()).collect());
    out
}

fn calls(m: &AssistantMessage) -> Vec<(String, Value)> {
    m.tool_calls()
        .map(|c| (c.name.clone(), c.arguments.clone()))
        .collect()
}

fn texts(m: &AssistantMessage) -> Vec<String> {
    m.content
        .iter()
        .filter_map(ContentBlock::as_text)
        .map(str::to_string)
        .collect()
}

/// Each call's (start index, end index), in order; every start has exactly one end.
fn call_events(events: &[crate::agent::protocol::stream::StreamEvent]) -> Vec<(usize, usize)> {
    use crate::agent::protocol::stream::StreamEvent;
    let starts: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallStart { content_index, .. } => Some(*content_index),
            _ => None,
        })
        .collect();
    let ends: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallEnd { content_index, .. } => Some(*content_index),
            _ => None,
        })
        .collect();
    assert_eq!(starts.len(), ends.len(), "{events:?}");
    starts.into_iter().zip(ends).collect()
}

#[test]
fn a_call_is_announced_as_soon_as_its_tool_is_named() {
    use crate::agent::protocol::stream::StreamEvent;
    for d in all() {
        let text = d.encode_call(
            "write",
            &json!({"path": "a.txt", "content": "x".repeat(200)}),
        );
        // Cut well inside the arguments: the name is known, the call is not complete.
        let cut = text.find("xxxx").unwrap();
        let mut rw = Rewriter::new(d.clone(), tools(), &model());
        rw.event(StreamEvent::Start {
            partial: Box::new(AssistantMessage::empty("a", "p", "m")),
        });
        let early = rw.event(StreamEvent::TextDelta {
            content_index: 0,
            delta: text[..cut].to_string(),
        });
        assert!(
            matches!(early.as_slice(), [StreamEvent::ToolCallStart { name, .. }] if name == "write"),
            "{}: {early:?}",
            d.name()
        );
        let rest = rw.event(StreamEvent::TextDelta {
            content_index: 0,
            delta: text[cut..].to_string(),
        });
        assert!(
            matches!(rest.as_slice(), [StreamEvent::ToolCallDelta { .. }, StreamEvent::ToolCallEnd { tool_call, .. }] if tool_call.name == "write"),
            "{}: {rest:?}",
            d.name()
        );
    }
    // A call announced but cut off by the end of the reply still ends, as an unreadable call.
    let (m, events) = rewrite(
        by_name("hermes").unwrap(),
        &["<tool_call>{\"name\": \"write\", \"arguments\": {\"content\": \"abc"],
    );
    assert_eq!(call_events(&events).len(), 1);
    assert_eq!(m.tool_calls().count(), 1);
}

#[test]
fn every_dialect_reads_back_what_it_writes_however_the_text_is_cut() {
    let read_args = json!({"path": "src/a{b}.rs", "offset": 3});
    let bash_args =
        json!({"command": "echo '{\"x\": [1, {\"y\": 2}]}' && echo <b>hi</b>", "timeout": 5});
    for d in all() {
        let sample = format!(
            "Let me look.\n{}\nThen {} done.",
            d.encode_call("read", &read_args),
            d.encode_call("bash", &bash_args)
        );
        for chunks in splits(&sample) {
            let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
            let (m, events) = rewrite(d.clone(), &chunks);
            assert_eq!(
                calls(&m),
                vec![
                    ("read".to_string(), read_args.clone()),
                    ("bash".to_string(), bash_args.clone())
                ],
                "{}: {chunks:?}",
                d.name()
            );
            assert_eq!(texts(&m), ["Let me look.", "Then", "done."], "{}", d.name());
            assert_eq!(m.stop_reason, StopReason::ToolUse);
            let shown = streamed_text(&events);
            assert_eq!(shown, "Let me look.Thendone.", "{}: {chunks:?}", d.name());
            assert_eq!(
                call_events(&events),
                [(1, 1), (3, 3)],
                "{}: {chunks:?}",
                d.name()
            );
        }
    }
}

#[test]
fn calls_come_out_as_tool_call_events_in_content_order() {
    use crate::agent::protocol::stream::StreamEvent;
    let d = by_name("hermes").unwrap();
    let text = "Hi <tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"x\"}}</tool_call>";
    let (m, events) = rewrite(d, &[text]);
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            StreamEvent::Start { .. } => "start",
            StreamEvent::TextStart { .. } => "text_start",
            StreamEvent::TextDelta { .. } => "text_delta",
            StreamEvent::TextEnd { .. } => "text_end",
            StreamEvent::ToolCallStart { .. } => "toolcall_start",
            StreamEvent::ToolCallDelta { .. } => "toolcall_delta",
            StreamEvent::ToolCallEnd { .. } => "toolcall_end",
            StreamEvent::Done { .. } => "done",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "start",
            "text_start",
            "text_delta",
            "text_end",
            "toolcall_start",
            "toolcall_delta",
            "toolcall_end",
            "done"
        ]
    );
    let StreamEvent::ToolCallEnd {
        content_index,
        tool_call,
    } = &events[6]
    else {
        panic!()
    };
    assert_eq!(*content_index, 1);
    assert_eq!(tool_call.arguments, json!({"path": "x"}));
    assert_eq!(m.content.len(), 2);
}

#[test]
fn tags_inside_json_strings_do_not_end_the_call() {
    let d = by_name("hermes").unwrap();
    let args = json!({"path": "t.md", "content": "a </tool_call> b <tool_response> c ``` d"});
    let text = format!("{} ok", d.encode_call("write", &args));
    for chunks in splits(&text) {
        let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
        let (m, _) = rewrite(d.clone(), &chunks);
        assert_eq!(calls(&m), vec![("write".to_string(), args.clone())]);
        assert_eq!(texts(&m), ["ok"]);
    }
}

/// Every code block a reply could hold one of `d`'s calls (or a bare JSON call) in.
fn fenced_examples(d: &Arc<dyn Dialect>) -> Vec<String> {
    let own = d.encode_call("bash", &json!({"command": "touch PWNED"}));
    let bare = json!({"name": "bash", "arguments": {"command": "touch PWNED"}}).to_string();
    let mut out = Vec::new();
    for call in [&own, &bare] {
        for (open, close) in [
            ("```json", "```"),
            ("```", "```"),
            ("```xml", "```"),
            ("~~~", "~~~"),
            ("````text", "`````"),
            ("   ```", "   ```"),
            ("\t~~~~ example", "\t~~~~"),
        ] {
            out.push(format!(
                "Example (do not run):\n{open}\n{call}\n{close}\nThat is all."
            ));
        }
        // A fence never closed keeps the rest of the reply text.
        out.push(format!("Like this:\n```\n{call}\n"));
        // A closing fence of the other character, or a shorter one, does not close.
        out.push(format!("~~~\n```\n{call}\n"));
        out.push(format!("````\n```\n{call}\n````"));
    }
    out
}

#[test]
fn calls_inside_code_blocks_are_text_in_every_dialect() {
    for d in all() {
        for example in fenced_examples(&d) {
            for chunks in splits(&example) {
                let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
                let (m, events) = rewrite(d.clone(), &chunks);
                assert!(calls(&m).is_empty(), "{}: {example:?} {chunks:?}", d.name());
                assert_eq!(texts(&m).concat().trim(), example.trim(), "{}", d.name());
                assert_eq!(streamed_text(&events).trim(), example.trim());
            }
        }
    }
}

#[test]
fn a_call_after_a_closed_code_block_still_runs() {
    for d in all() {
        let call = d.encode_call("read", &json!({"path": "notes.txt"}));
        // Gemini's call is a fence itself: shown in a code block, the block's fence must be
        // the longer one (as Markdown wants).
        let fence = if d.name() == "gemini" { "````" } else { "```" };
        let text = format!("Look:\n{fence}\n{call}\n{fence}\nNow for real:\n{call}");
        for chunks in splits(&text) {
            let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
            let (m, _) = rewrite(d.clone(), &chunks);
            assert_eq!(
                calls(&m),
                vec![("read".to_string(), json!({"path": "notes.txt"}))],
                "{}: {chunks:?}",
                d.name()
            );
        }
    }
    // Backticks inside a line open nothing.
    let d = by_name("hermes").unwrap();
    let call = d.encode_call("read", &json!({"path": "a"}));
    let (m, _) = rewrite(d.clone(), &[&format!("Use ``` fences ```. {call}")]);
    assert_eq!(calls(&m).len(), 1);
}

#[test]
fn a_bare_json_call_in_prose_is_text() {
    let bare = json!({"name": "bash", "arguments": {"command": "touch PWNED"}}).to_string();
    for d in all() {
        let (m, _) = rewrite(d.clone(), &[&format!("Sure. {bare}")]);
        assert!(calls(&m).is_empty(), "{}", d.name());
    }
}

#[test]
fn a_partial_tag_never_reaches_the_text() {
    let d = by_name("hermes").unwrap();
    let (m, events) = rewrite(
        d.clone(),
        &[
            "Hi <tool",
            "_ca",
            "ll>{\"name\": \"read\", \"arguments\": {}}</tool_",
            "call>",
        ],
    );
    assert_eq!(streamed_text(&events), "Hi");
    assert_eq!(calls(&m).len(), 1);
    // Text that only looks like the start of a tag is let out at the end.
    let (m, events) = rewrite(d, &["a <tool", "_c"]);
    assert_eq!(streamed_text(&events), "a <tool_c");
    assert!(calls(&m).is_empty());
}

#[test]
fn several_calls_in_one_block_and_across_blocks() {
    let d = by_name("deepseek").unwrap();
    let text = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read\n```json\n{\"path\": \"a\"}\n```<｜tool▁call▁end｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>bash\n```json\n{\"command\": \"ls\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    for chunks in splits(text) {
        let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
        let (m, _) = rewrite(d.clone(), &chunks);
        assert_eq!(
            calls(&m),
            vec![
                ("read".to_string(), json!({"path": "a"})),
                ("bash".to_string(), json!({"command": "ls"}))
            ]
        );
    }
    // V3.1's short form, without the outer tags.
    let short = "<｜tool▁call▁begin｜>read<｜tool▁sep｜>{\"path\": \"b\"}<｜tool▁call▁end｜>";
    let (m, _) = rewrite(d, &[short]);
    assert_eq!(calls(&m), vec![("read".to_string(), json!({"path": "b"}))]);
    // Two JSON objects in one hermes block.
    let h = by_name("hermes").unwrap();
    let two = "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n{\"name\": \"read\", \"arguments\": {\"path\": \"b\"}}\n</tool_call>";
    let (m, _) = rewrite(h, &[two]);
    assert_eq!(calls(&m).len(), 2);
}

#[test]
fn the_tool_call_family_reads_each_others_bodies() {
    let qwen3 = "<tool_call>\n<function=read>\n<parameter=path>\nsrc/x.rs\n</parameter>\n<parameter=offset>\n10\n</parameter>\n</function>\n</tool_call>";
    let glm = "<tool_call>read\n<arg_key>path</arg_key>\n<arg_value>src/x.rs</arg_value>\n<arg_key>offset</arg_key>\n<arg_value>10</arg_value>\n</tool_call>";
    let hermes = "<tool_call>{\"name\": \"read\", \"arguments\": \"{\\\"path\\\": \\\"src/x.rs\\\", \\\"offset\\\": 10}\"}</tool_call>";
    for name in ["hermes", "qwen3", "glm"] {
        for text in [qwen3, glm, hermes] {
            let (m, _) = rewrite(by_name(name).unwrap(), &[text]);
            assert_eq!(
                calls(&m),
                vec![(
                    "read".to_string(),
                    json!({"path": "src/x.rs", "offset": 10})
                )],
                "{name}: {text}"
            );
        }
    }
    // A string parameter that looks like a number stays a string.
    let q = "<tool_call><function=bash><parameter=command>42</parameter></function></tool_call>";
    let (m, _) = rewrite(by_name("qwen3").unwrap(), &[q]);
    assert_eq!(calls(&m)[0].1, json!({"command": "42"}));
}

#[test]
fn harmony_calls_with_the_recipient_before_or_after_the_channel() {
    let d = by_name("harmony").unwrap();
    let a = "<|channel|>analysis<|message|>Need to read.<|end|><|start|>assistant<|channel|>commentary to=functions.read <|constrain|>json<|message|>{\"path\": \"a\"}<|call|>";
    let b = "<|start|>assistant to=functions.read<|channel|>commentary json<|message|>{\"path\": \"a\"}<|call|>";
    for text in [a, b] {
        for chunks in splits(text) {
            let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
            let (m, events) = rewrite(d.clone(), &chunks);
            assert_eq!(calls(&m), vec![("read".to_string(), json!({"path": "a"}))]);
            assert!(!streamed_text(&events).contains("<|"), "{chunks:?}");
        }
    }
}

#[test]
fn malformed_calls_become_calls_whose_arguments_carry_the_parse_error() {
    use crate::agent::protocol::types::PARSE_ERROR_KEY;
    let cases: &[(&str, &str, &str)] = &[
        (
            "hermes",
            "<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": }}</tool_call>",
            "read",
        ),
        (
            "hermes",
            "<tool_call>{\"arguments\": {}}</tool_call>",
            UNNAMED,
        ),
        (
            "deepseek",
            "<｜tool▁call▁begin｜>function<｜tool▁sep｜>read\n```json\n{oops}\n```<｜tool▁call▁end｜>",
            "read",
        ),
        (
            "harmony",
            "<|channel|>commentary to=functions.bash <|constrain|>json<|message|>{\"command\": <|call|>",
            "bash",
        ),
        (
            "xml",
            "<function_call>\n<arg name=\"path\">a</arg>\n</function_call>",
            UNNAMED,
        ),
        (
            "glm",
            "<tool_call>read\n<arg_key>path</arg_key>\n</tool_call>",
            "read",
        ),
    ];
    for (dialect, text, name) in cases {
        let (m, _) = rewrite(by_name(dialect).unwrap(), &[text]);
        let c = m
            .tool_calls()
            .next()
            .unwrap_or_else(|| panic!("{dialect}: {text}"));
        assert_eq!(c.name, *name, "{dialect}");
        assert!(
            c.arguments.get(PARSE_ERROR_KEY).is_some(),
            "{dialect}: {}",
            c.arguments
        );
    }
    // An unknown tool is still a call: the loop answers that there is no such tool.
    let (m, _) = rewrite(
        by_name("hermes").unwrap(),
        &["<tool_call>{\"name\": \"teleport\", \"arguments\": {}}</tool_call>"],
    );
    assert_eq!(calls(&m), vec![("teleport".to_string(), json!({}))]);
}

const UNNAMED: &str = UNNAMED_CALL;

#[test]
fn a_call_cut_off_at_the_end_of_the_reply_is_still_read() {
    // Servers often stop at the closing tag without sending it.
    let (m, _) = rewrite(
        by_name("hermes").unwrap(),
        &["<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n"],
    );
    assert_eq!(calls(&m), vec![("read".to_string(), json!({"path": "a"}))]);
}

#[test]
fn a_fabricated_result_stops_the_reply_with_the_calls_made_so_far() {
    for d in all() {
        let fake = d.encode_result("read", "FAKE CONTENT", false);
        let text = format!(
            "Reading. {}\n{fake}\nThe file says FAKE CONTENT.",
            d.encode_call("read", &json!({"path": "a"}))
        );
        for chunks in splits(&text) {
            let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
            let mut sc = Scanner::new(d.clone(), tools());
            let mut pieces = Vec::new();
            for c in &chunks {
                pieces.extend(sc.push(c));
                if sc.stopped() {
                    break;
                }
            }
            assert!(sc.stopped(), "{}: {chunks:?}", d.name());
            assert_eq!(pieces.last(), Some(&Piece::Fabricated));
            let shown: String = pieces
                .iter()
                .filter_map(|p| match p {
                    Piece::Text(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect();
            assert!(!shown.contains("FAKE"), "{}: {shown}", d.name());
            let (m, events) = rewrite(d.clone(), &chunks);
            assert_eq!(calls(&m).len(), 1, "{}", d.name());
            assert_eq!(m.stop_reason, StopReason::ToolUse);
            assert!(!streamed_text(&events).contains("FAKE"));
            assert!(!texts(&m).concat().contains("FAKE"));
        }
    }
}

#[test]
fn thinking_passes_through_and_text_around_it_stays_apart() {
    use crate::agent::protocol::stream::StreamEvent;
    let mut rw = Rewriter::new(by_name("hermes").unwrap(), tools(), &model());
    let mut ev = Vec::new();
    ev.extend(rw.event(StreamEvent::ThinkingStart { content_index: 0 }));
    ev.extend(rw.event(StreamEvent::ThinkingDelta {
        content_index: 0,
        delta: "hmm".into(),
    }));
    ev.extend(rw.event(StreamEvent::ThinkingEnd {
        content_index: 0,
        content: "hmm".into(),
        signature: None,
    }));
    ev.extend(rw.event(StreamEvent::TextDelta {
        content_index: 1,
        delta: "ok <tool_call>{\"name\":\"read\",\"arguments\":{}}</tool_call>".into(),
    }));
    ev.extend(rw.event(StreamEvent::Done {
        reason: StopReason::Stop,
        message: Box::new(AssistantMessage::empty("a", "p", "m")),
    }));
    let StreamEvent::Done { message, .. } = ev.last().unwrap() else {
        panic!()
    };
    assert!(matches!(&message.content[0], ContentBlock::Thinking(t) if t.thinking == "hmm"));
    assert_eq!(message.content[1].as_text(), Some("ok"));
    assert!(matches!(&message.content[2], ContentBlock::ToolCall(c) if c.name == "read"));
}

fn history() -> Vec<Arc<Message>> {
    let mut a = AssistantMessage::empty("openai-completions", "ollama", "m");
    a.content = vec![
        ContentBlock::text("Looking."),
        ContentBlock::ToolCall(ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: json!({"path": "notes.txt"}),
            intent: None,
            thought_signature: None,
        }),
    ];
    a.stop_reason = StopReason::ToolUse;
    let r = ToolResultMessage {
        tool_call_id: "c1".into(),
        tool_name: "read".into(),
        content: vec![ContentBlock::text("the answer is 42")],
        details: None,
        is_error: false,
        useless: false,
        timestamp: 1,
    };
    vec![
        Arc::new(Message::User(UserMessage::new("what is in notes.txt?"))),
        Arc::new(Message::Assistant(a)),
        Arc::new(Message::ToolResult(r)),
    ]
}

#[test]
fn requests_carry_the_catalogue_and_history_as_text() {
    let req = ProviderRequest {
        model: model(),
        context: LlmContext {
            system_prompt: vec!["You are pi.".into()],
            messages: Arc::new(history()),
            tools: tools(),
        },
        options: StreamOptions {
            tool_choice: Some(ToolChoice::Auto),
            ..Default::default()
        },
    };
    for d in all() {
        let out = encode_request(&*d, &req);
        assert!(out.context.tools.is_empty());
        assert_eq!(out.options.tool_choice, None);
        assert_eq!(out.context.system_prompt.len(), 2);
        let catalog = &out.context.system_prompt[1];
        for t in [
            "## read",
            "## bash",
            "## write",
            "\"offset\"",
            "The bash tool.",
        ] {
            assert!(catalog.contains(t), "{}: {t}", d.name());
        }
        let msgs = &out.context.messages;
        assert_eq!(msgs.len(), 3);
        let Message::Assistant(a) = &*msgs[1] else {
            panic!()
        };
        assert!(!a.has_tool_calls());
        let text = a.text();
        assert!(text.starts_with("Looking.\n"));
        assert!(text.contains(&d.encode_call("read", &json!({"path": "notes.txt"}))));
        let Message::User(u) = &*msgs[2] else {
            panic!("{}: results go back as a user message", d.name())
        };
        assert_eq!(
            u.content.joined_text(),
            d.encode_result("read", "the answer is 42", false)
        );
        // What was written back parses back to the same call.
        let (m, _) = rewrite(d.clone(), &[&text]);
        assert_eq!(
            calls(&m),
            vec![("read".to_string(), json!({"path": "notes.txt"}))]
        );
    }
    let hermes = encode_request(&hermes::HERMES, &req);
    let Message::User(u) = &*hermes.context.messages[2] else {
        panic!()
    };
    assert_eq!(
        u.content.joined_text(),
        "<tool_response>\nthe answer is 42\n</tool_response>"
    );
}

#[test]
fn settings_follow_flag_then_env_then_model_then_global() {
    let per = vec![("lab".to_string(), "m1".to_string(), "qwen3".to_string())];
    let s = DialectSettings::from_sources(None, None, Some("glm"), &per).unwrap();
    assert_eq!(s.per_model["lab/m1"], Setting::On("qwen3".into()));
    assert_eq!(s.global, Some(Setting::On("glm".into())));
    let s = DialectSettings::from_sources(None, Some("off"), Some("glm"), &per).unwrap();
    assert_eq!(s.forced, Some(Setting::Off));
    let s = DialectSettings::from_sources(Some("xml"), Some("none"), None, &[]).unwrap();
    assert_eq!(s.forced, Some(Setting::On("xml".into())));
    assert_eq!(parse_setting("1"), Ok(Setting::On("glm".into())));
    let e = DialectSettings::from_sources(Some("klingon"), None, None, &[]).unwrap_err();
    assert!(e.contains("--dialect") && e.contains("hermes"), "{e}");
    let e = DialectSettings::from_sources(
        None,
        None,
        None,
        &[("lab".into(), "m1".into(), "nope".into())],
    )
    .unwrap_err();
    assert!(e.contains("providers.lab"), "{e}");
}

#[test]
fn tool_refusals_are_told_apart_from_other_errors() {
    let err = |status: u16, msg: &str| {
        let mut m = AssistantMessage::empty("a", "p", "m");
        m.error_status = Some(status);
        m.error_message = Some(msg.into());
        m
    };
    use super::stream::refuses_tools;
    assert!(refuses_tools(&err(
        400,
        "registry.ollama.ai/library/gemma:2b does not support tools (HTTP 400)"
    )));
    assert!(refuses_tools(&err(
        500,
        "tools param requires --jinja flag (HTTP 500)"
    )));
    assert!(refuses_tools(&err(
        400,
        "this model does not support function calling"
    )));
    assert!(!refuses_tools(&err(400, "prompt is too long")));
    assert!(!refuses_tools(&err(
        429,
        "tools are not supported right now"
    )));
    assert!(!refuses_tools(&err(
        400,
        "tool_call_id c1 has no matching call"
    )));
}

#[test]
fn local_urls() {
    assert!(is_local_url("http://127.0.0.1:11434/v1"));
    assert!(is_local_url("http://localhost:8080"));
    assert!(is_local_url("http://[::1]:8080/v1"));
    assert!(!is_local_url("https://api.openai.com/v1"));
}

/// A provider that sends fixed events and keeps the token it was given.
struct Fixed {
    events: Vec<crate::agent::protocol::stream::StreamEvent>,
    token: std::sync::Mutex<Option<tokio_util::sync::CancellationToken>>,
    requests: std::sync::Mutex<Vec<ProviderRequest>>,
    /// Whether the reply never ends by itself after its events.
    endless: bool,
}

impl crate::agent::protocol::stream::Provider for Fixed {
    fn stream(
        &self,
        request: ProviderRequest,
        cancel: tokio_util::sync::CancellationToken,
    ) -> crate::agent::protocol::stream::EventStream {
        use futures::StreamExt;
        *self.token.lock().unwrap() = Some(cancel);
        self.requests.lock().unwrap().push(request);
        let events: Vec<_> = self.events.iter().cloned().map(Ok).collect();
        if !self.endless {
            return futures::stream::iter(events).boxed();
        }
        // Never ends by itself: only a stop from the wrapper ends this reply.
        futures::stream::iter(events)
            .chain(futures::stream::pending())
            .boxed()
    }
}

#[tokio::test]
async fn a_fabricated_result_cancels_the_request_but_not_the_run() {
    use crate::agent::protocol::stream::{Provider, StreamEvent};
    use futures::StreamExt;
    let text = "<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}</tool_call><tool_response>made up";
    let inner = Arc::new(Fixed {
        events: vec![
            StreamEvent::Start {
                partial: Box::new(AssistantMessage::empty("a", "ollama", "m")),
            },
            StreamEvent::TextDelta {
                content_index: 0,
                delta: text.into(),
            },
        ],
        token: Default::default(),
        requests: Default::default(),
        endless: true,
    });
    let provider = DialectProvider::new(
        inner.clone(),
        Arc::new(crate::provider::catalog::Catalog::default()),
        DialectSettings {
            forced: Some(Setting::On("hermes".into())),
            ..Default::default()
        },
    );
    let run = tokio_util::sync::CancellationToken::new();
    let req = ProviderRequest {
        model: model(),
        context: LlmContext {
            system_prompt: vec![],
            messages: Arc::new(history()),
            tools: tools(),
        },
        options: StreamOptions::default(),
    };
    let events: Vec<_> = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        provider.stream(req, run.clone()).collect::<Vec<_>>(),
    )
    .await
    .expect("the wrapper ends the reply itself");
    let last = events.last().unwrap().as_ref().unwrap();
    let StreamEvent::Done { message, reason } = last else {
        panic!("{last:?}")
    };
    assert_eq!(*reason, StopReason::ToolUse);
    assert_eq!(
        calls(message),
        vec![("read".to_string(), json!({"path": "a"}))]
    );
    assert!(inner.token.lock().unwrap().as_ref().unwrap().is_cancelled());
    assert!(!run.is_cancelled(), "the run goes on");
    let sent = &inner.requests.lock().unwrap()[0];
    assert!(sent.context.tools.is_empty());
    assert_eq!(provider.dialect_for(&model()), Some("hermes"));
}

/// Every tag any dialect uses to open or close a call or a value, or to start a result.
fn every_tag() -> Vec<&'static str> {
    let mut tags: Vec<&'static str> = vec![
        "</parameter>",
        "</function>",
        "</arg>",
        "</arg_value>",
        "</invoke>",
        "<|\"|>",
        "```",
    ];
    for name in NAMES {
        let d = by_name(name).unwrap();
        for b in d.blocks() {
            tags.extend([b.open, b.close]);
        }
        tags.extend(d.result_markers());
    }
    tags
}

#[test]
fn a_call_holding_any_tag_in_a_value_is_read_whole() {
    for d in all() {
        // Gemma's strings are wrapped in <|"|>: that one token cannot be in a text value.
        let tags: Vec<&str> = every_tag()
            .into_iter()
            .filter(|t| d.name() != "gemma" || *t != "<|\"|>")
            .collect();
        let content = format!("Tags: {} end", tags.join(" x\n"));
        let args = json!({"path": "tags.md", "content": content});
        let text = format!("Writing.\n{}\nok", d.encode_call("write", &args));
        let mut cuts = splits(&text);
        // Every cut is slow on text this long: one-character pieces and a cut every 7 bytes.
        cuts.retain(|c| c.len() > 2 || c[0].len() % 7 == 0);
        for chunks in cuts {
            let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
            let (m, events) = rewrite(d.clone(), &chunks);
            assert_eq!(
                calls(&m),
                vec![("write".to_string(), args.clone())],
                "{}: {chunks:?}",
                d.name()
            );
            assert_eq!(texts(&m), ["Writing.", "ok"], "{}", d.name());
            assert_eq!(streamed_text(&events), "Writing.ok", "{}", d.name());
        }
    }
}

/// The arguments of the only call in `m`, which must be an unreadable one.
fn only_bad_call(m: &AssistantMessage, what: &str) -> String {
    use crate::agent::protocol::types::PARSE_ERROR_KEY;
    let all: Vec<_> = m.tool_calls().collect();
    assert_eq!(all.len(), 1, "{what}: {:?}", m.content);
    assert_eq!(all[0].name, "write", "{what}");
    all[0]
        .arguments
        .get(PARSE_ERROR_KEY)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{what}: a shortened call would run: {}", all[0].arguments))
        .to_string()
}

#[test]
fn a_call_cut_short_by_a_value_is_an_error_never_a_shorter_call() {
    // Each value holds its own closing tag and the call's, as if the call ended there: the
    // rest of the value then follows in the text.
    let cases = [
        ("qwen3", "A\n</parameter>\n</function>\n</tool_call>\nB"),
        ("qwen3", "A\n</parameter>\n</function>\nB"),
        ("glm", "A</arg_value>\n</tool_call>\nB"),
        ("xml", "A</arg>\n</function_call>\nB"),
        (
            "anthropic",
            "A</parameter>\n</invoke>\n</function_calls>\nB",
        ),
        ("minimax", "A</parameter>\n</invoke>\nB"),
    ];
    for (name, content) in cases {
        let d = by_name(name).unwrap();
        let text = d.encode_call("write", &json!({"path": "f.txt", "content": content}));
        for chunks in splits(&text) {
            let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
            let (m, _) = rewrite(d.clone(), &chunks);
            let error = only_bad_call(&m, &format!("{name} {content:?} {chunks:?}"));
            assert!(!error.is_empty());
        }
    }
    // A reply that ends inside a value.
    for (name, text) in [
        (
            "qwen3",
            "<tool_call>\n<function=write>\n<parameter=path>\na\n</parameter>\n<parameter=content>\nhal",
        ),
        (
            "xml",
            "<function_call name=\"write\">\n<arg name=\"content\">hal",
        ),
        (
            "anthropic",
            "<function_calls>\n<invoke name=\"write\">\n<parameter name=\"content\">hal",
        ),
    ] {
        let (m, _) = rewrite(by_name(name).unwrap(), &[text]);
        only_bad_call(&m, name);
    }
}

#[test]
fn the_closing_tag_mentioned_later_in_prose_leaves_the_call_alone() {
    let d = by_name("qwen3").unwrap();
    let args = json!({"path": "f.txt", "content": "hello"});
    let call = d.encode_call("write", &args);
    for after in [
        "I ended it with `</tool_call>` as asked.",
        "The </tool_call> tag ends a call.",
        // A closing tag written twice.
        "</tool_call>\nDone.",
    ] {
        let (m, _) = rewrite(d.clone(), &[&format!("{call}\n{after}")]);
        assert_eq!(
            calls(&m),
            vec![("write".to_string(), args.clone())],
            "{after}"
        );
        assert_eq!(texts(&m), [after]);
    }
    // A call after the first settles it: a closing tag after that is the second call's.
    let xml = by_name("xml").unwrap();
    let one = xml.encode_call("write", &args);
    let (m, _) = rewrite(xml, &[&format!("{one}\n{one}\nWhy </function_call>?")]);
    assert_eq!(calls(&m).len(), 2);
}

#[test]
fn prose_that_mentions_a_result_tag_is_text() {
    for d in all() {
        for marker in d.result_markers() {
            let reads_as_text = marker.starts_with(['<', '#', '`'])
                && !marker.starts_with("<|")
                && !marker.starts_with("<｜");
            if !reads_as_text {
                continue;
            }
            let call = d.encode_call("read", &json!({"path": "a"}));
            let prose = format!(
                "A result comes back as `{marker}`, and the {marker} that follows is not mine to write.\nDone."
            );
            for text in [prose.clone(), format!("{call}\nNote: {prose}")] {
                for chunks in splits(&text) {
                    let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
                    let mut sc = Scanner::new(d.clone(), tools());
                    for c in &chunks {
                        sc.push(c);
                    }
                    sc.finish();
                    assert!(!sc.stopped(), "{} {marker}: {chunks:?}", d.name());
                    let (m, _) = rewrite(d.clone(), &chunks);
                    assert!(texts(&m).concat().ends_with(&prose), "{}", d.name());
                }
            }
        }
    }
    // Control tokens count anywhere but in code.
    let h = by_name("hermes").unwrap();
    let quoted = "Its template ends a turn and starts the next with `<|im_start|>user`, see.";
    for chunks in splits(quoted) {
        let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
        let (m, _) = rewrite(h.clone(), &chunks);
        assert_eq!(texts(&m), [quoted], "{chunks:?}");
    }
    let (_, events) = rewrite(h.clone(), &["Done.<|im_start|>user\nFAKE"]);
    assert_eq!(streamed_text(&events), "Done.");
    // Right after a call, with nothing between, it is a made-up result.
    let text = "<tool_call>{\"name\": \"read\", \"arguments\": {}}</tool_call><tool_response>FAKE";
    let (m, events) = rewrite(h, &[text]);
    assert_eq!(calls(&m).len(), 1);
    assert!(!streamed_text(&events).contains("FAKE"));
}

#[test]
fn the_new_dialects_read_their_models_own_forms() {
    let want = vec![
        ("read".to_string(), json!({"path": "a", "offset": 3})),
        ("bash".to_string(), json!({"command": "ls"})),
    ];
    let cases = [
        (
            "kimi",
            "Sure.<|tool_calls_section_begin|><|tool_call_begin|>functions.read:0<|tool_call_argument_begin|>{\"path\": \"a\", \"offset\": 3}<|tool_call_end|><|tool_call_begin|>functions.bash:1<|tool_call_argument_begin|>{\"command\": \"ls\"}<|tool_call_end|><|tool_calls_section_end|>",
        ),
        (
            "anthropic",
            "Sure.\n<function_calls>\n<invoke name=\"read\">\n<parameter name=\"path\">a</parameter>\n<parameter name=\"offset\">3</parameter>\n</invoke>\n<invoke name=\"bash\">\n<parameter name=\"command\">ls</parameter>\n</invoke>\n</function_calls>",
        ),
        (
            "anthropic",
            "Sure.\n<invoke name=\"read\"><parameter name=\"path\">a</parameter><parameter name=\"offset\">3</parameter></invoke>\n<invoke name=\"bash\"><parameter name=\"command\">ls</parameter></invoke>",
        ),
        (
            "minimax",
            "Sure.\n<minimax:tool_call>\n<invoke name=\"read\">\n<parameter name=\"path\">a</parameter>\n<parameter name=\"offset\">3</parameter>\n</invoke>\n<invoke name=\"bash\">\n<parameter name=\"command\">ls</parameter>\n</invoke>\n</minimax:tool_call>",
        ),
        (
            "gemini",
            "Sure.\n```tool_code\n[default_api.read(path='a', offset=3), default_api.bash(command=\"ls\")]\n```",
        ),
        (
            "gemini",
            "Sure.\n```tool_code\nprint(default_api.read(path=\"a\", offset=3))\nprint(default_api.bash(command='ls'))\n```",
        ),
        (
            "gemma",
            "Sure.<|tool_call>call:read{path:<|\"|>a<|\"|>,offset:3}<tool_call|><|tool_call>call:bash{command:<|\"|>ls<|\"|>}<tool_call|>",
        ),
    ];
    for (name, text) in cases {
        let d = by_name(name).unwrap();
        for chunks in splits(text) {
            let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
            let (m, _) = rewrite(d.clone(), &chunks);
            assert_eq!(calls(&m), want, "{name}: {chunks:?}");
            assert_eq!(texts(&m), ["Sure."], "{name}");
        }
    }
    // A tool_code fence inside a line is text, not a call.
    let (m, _) = rewrite(
        by_name("gemini").unwrap(),
        &["Write ```tool_code\nprint(default_api.bash(command=\"ls\"))\n``` to call."],
    );
    assert!(calls(&m).is_empty());
    for name in ["kimi", "anthropic", "gemini", "gemma", "minimax"] {
        assert_eq!(parse_setting(name), Ok(Setting::On(name.into())));
    }
}

#[test]
fn roles_alternate_in_requests_rebuilt_for_a_dialect() {
    let mut messages = history();
    let mut steer = UserMessage::new("also check todo.txt");
    steer.steering = true;
    messages.push(Arc::new(Message::User(steer)));
    let mut picture = UserMessage::new("");
    picture.content = UserContent::Blocks(vec![
        ContentBlock::text("and this"),
        ContentBlock::Image(crate::agent::protocol::types::ImageContent {
            data: "aGk=".into(),
            mime_type: "image/png".into(),
            detail: None,
        }),
    ]);
    messages.push(Arc::new(Message::User(picture)));
    let req = ProviderRequest {
        model: model(),
        context: LlmContext {
            system_prompt: vec!["You are pi.".into()],
            messages: Arc::new(messages),
            tools: tools(),
        },
        options: StreamOptions::default(),
    };
    for d in all() {
        let out = encode_request(&*d, &req);
        let roles: Vec<&str> = out.context.messages.iter().map(|m| m.role()).collect();
        assert_eq!(roles, ["user", "assistant", "user"], "{}", d.name());
        let Message::User(last) = &*out.context.messages[2] else {
            panic!()
        };
        let UserContent::Blocks(blocks) = &last.content else {
            panic!("{:?}", last.content)
        };
        let text = last.content.joined_text();
        let result = d.encode_result("read", "the answer is 42", false);
        assert!(
            text.starts_with(&format!("{result}\n\nalso check todo.txt")),
            "{text}"
        );
        assert!(text.ends_with("and this"));
        assert!(matches!(blocks.last(), Some(ContentBlock::Image(_))));
    }
}

#[test]
fn text_end_signatures_stay_on_the_text() {
    use crate::agent::protocol::stream::StreamEvent;
    let run = |deltas: &[&str]| {
        let mut rw = Rewriter::new(by_name("hermes").unwrap(), tools(), &model());
        let mut ev = rw.event(StreamEvent::Start {
            partial: Box::new(AssistantMessage::empty("a", "p", "m")),
        });
        ev.extend(rw.event(StreamEvent::TextStart { content_index: 0 }));
        for d in deltas {
            ev.extend(rw.event(StreamEvent::TextDelta {
                content_index: 0,
                delta: d.to_string(),
            }));
        }
        ev.extend(rw.event(StreamEvent::TextEnd {
            content_index: 0,
            content: deltas.concat(),
            signature: Some("sig-1".into()),
        }));
        ev.extend(rw.event(StreamEvent::Done {
            reason: StopReason::Stop,
            message: Box::new(AssistantMessage::empty("a", "p", "m")),
        }));
        ev
    };
    let signed = |ev: &[StreamEvent]| {
        let StreamEvent::Done { message, .. } = ev.last().unwrap() else {
            panic!()
        };
        let ends: Vec<Option<String>> = ev
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextEnd { signature, .. } => Some(signature.clone()),
                _ => None,
            })
            .collect();
        let blocks: Vec<(String, Option<String>)> = message
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some((t.text.clone(), t.text_signature.clone())),
                _ => None,
            })
            .collect();
        (blocks, ends)
    };
    // Text still open when the block ends: its end carries the signature.
    let (blocks, ends) = signed(&run(&["Hello ", "there"]));
    assert_eq!(
        blocks,
        [("Hello there".to_string(), Some("sig-1".to_string()))]
    );
    assert_eq!(ends, [Some("sig-1".to_string())]);
    // Text around a call: the last text made from the block carries it.
    let (blocks, _) = signed(&run(&[
        "Before ",
        "<tool_call>{\"name\": \"read\", \"arguments\": {}}</tool_call>",
        " after",
    ]));
    assert_eq!(
        blocks,
        [
            ("Before".to_string(), None),
            ("after".to_string(), Some("sig-1".to_string()))
        ]
    );
}

#[tokio::test]
async fn in_drain_mode_a_made_up_result_is_read_to_the_end_and_dropped() {
    use crate::agent::protocol::stream::{Provider, StreamEvent};
    use futures::StreamExt;
    let mut done = AssistantMessage::empty("a", "ollama", "m");
    done.usage.output = 77;
    let inner = Arc::new(Fixed {
        events: vec![
            StreamEvent::Start {
                partial: Box::new(AssistantMessage::empty("a", "ollama", "m")),
            },
            StreamEvent::TextDelta {
                content_index: 0,
                delta: "<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}</tool_call>\n<tool_response>FAKE".into(),
            },
            StreamEvent::TextDelta {
                content_index: 0,
                delta: " MORE FAKE</tool_response>".into(),
            },
            StreamEvent::ThinkingStart { content_index: 1 },
            StreamEvent::Done {
                reason: StopReason::Stop,
                message: Box::new(done),
            },
        ],
        token: Default::default(),
        requests: Default::default(),
        endless: false,
    });
    let provider = DialectProvider::new(
        inner.clone(),
        Arc::new(crate::provider::catalog::Catalog::default()),
        DialectSettings {
            forced: Some(Setting::On("hermes".into())),
            drain_fabricated: true,
            ..Default::default()
        },
    );
    let req = ProviderRequest {
        model: model(),
        context: LlmContext {
            system_prompt: vec![],
            messages: Arc::new(history()),
            tools: tools(),
        },
        options: StreamOptions::default(),
    };
    let events: Vec<_> = provider
        .stream(req, tokio_util::sync::CancellationToken::new())
        .collect()
        .await;
    let events: Vec<StreamEvent> = events.into_iter().map(Result::unwrap).collect();
    let StreamEvent::Done { message, reason } = events.last().unwrap() else {
        panic!("{events:?}")
    };
    assert_eq!(*reason, StopReason::ToolUse);
    assert_eq!(
        calls(message),
        vec![("read".to_string(), json!({"path": "a"}))]
    );
    assert_eq!(message.usage.output, 77, "the reply was read to its end");
    assert_eq!(message.content.len(), 1, "{:?}", message.content);
    assert!(!streamed_text(&events).contains("FAKE"));
    assert!(
        !inner.token.lock().unwrap().as_ref().unwrap().is_cancelled(),
        "the request was not stopped"
    );
}

#[test]
fn no_text_makes_a_dialect_panic_or_lose_a_call_end() {
    // Replies assembled at random from every tag and the characters the readers care about,
    // cut at random: whatever comes out, nothing panics and every call that starts ends.
    let mut pieces: Vec<&str> = every_tag();
    pieces.extend([
        "é",
        "日本",
        "\n",
        " ",
        "`",
        "```",
        "~~~",
        "\"",
        "'",
        "\\",
        "{",
        "}",
        "(",
        ")",
        "[",
        "]",
        "=",
        ":",
        ",",
        "x",
        "read",
        "write",
        "<parameter=path>",
        "<arg name=\"path\">",
        "<invoke name=\"read\">",
        "<parameter name=\"path\">",
        "<arg_key>path</arg_key>",
        "<arg_value>",
        "<function=read>",
        "functions.read:0",
        "call:read{",
        "default_api.read(",
        "print(",
        "{\"name\": \"read\", \"arguments\": {",
        "<|tool_call_argument_begin|>",
        "<｜tool▁sep｜>",
        "<|message|>",
        "<|\"|>",
    ]);
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    for d in all() {
        for _ in 0..150 {
            let len = 1 + next(40);
            let text: String = (0..len).map(|_| pieces[next(pieces.len())]).collect();
            let mut chunks = Vec::new();
            let mut rest = text.as_str();
            while !rest.is_empty() {
                let mut cut = 1 + next(12).min(rest.len() - 1);
                while !rest.is_char_boundary(cut) {
                    cut += 1;
                }
                let (a, b) = rest.split_at(cut);
                chunks.push(a);
                rest = b;
            }
            let (_, events) = rewrite(d.clone(), &chunks);
            call_events(&events);
        }
    }
}

/// A provider that answers natively offered tools with `native` text, and a request in a
/// dialect (no tools offered) with `in_dialect` text.
struct TwoWays {
    native: &'static str,
    in_dialect: &'static str,
    requests: std::sync::Mutex<Vec<ProviderRequest>>,
}

impl crate::agent::protocol::stream::Provider for TwoWays {
    fn stream(
        &self,
        request: ProviderRequest,
        _cancel: tokio_util::sync::CancellationToken,
    ) -> crate::agent::protocol::stream::EventStream {
        use crate::agent::protocol::stream::StreamEvent;
        use futures::StreamExt;
        let text = if request.context.tools.is_empty() {
            self.in_dialect
        } else {
            self.native
        };
        self.requests.lock().unwrap().push(request);
        let mut done = AssistantMessage::empty("openai-completions", "ollama", "m");
        done.content.push(ContentBlock::text(text));
        let events = vec![
            StreamEvent::Start {
                partial: Box::new(AssistantMessage::empty("openai-completions", "ollama", "m")),
            },
            StreamEvent::TextStart { content_index: 0 },
            StreamEvent::TextDelta {
                content_index: 0,
                delta: text.into(),
            },
            StreamEvent::TextEnd {
                content_index: 0,
                content: text.into(),
                signature: None,
            },
            StreamEvent::Done {
                reason: StopReason::Stop,
                message: Box::new(done),
            },
        ];
        futures::stream::iter(events.into_iter().map(Ok)).boxed()
    }
}

/// A dialect provider over `inner` with `global` as the only setting and no catalogue.
fn over(inner: Arc<TwoWays>, global: Option<Setting>) -> DialectProvider {
    DialectProvider::new(
        inner,
        Arc::new(crate::provider::catalog::Catalog::default()),
        DialectSettings {
            global,
            ..Default::default()
        },
    )
}

fn native_request() -> ProviderRequest {
    ProviderRequest {
        model: model(),
        context: LlmContext {
            system_prompt: vec![],
            messages: Arc::new(history()),
            tools: tools(),
        },
        options: StreamOptions::default(),
    }
}

#[tokio::test]
async fn auto_switches_a_model_that_writes_calls_as_text_and_asks_again() {
    use crate::agent::protocol::stream::{Provider, StreamEvent};
    use futures::StreamExt;
    let inner = Arc::new(TwoWays {
        native: r#"{"name": "read", "arguments": {"path": "a.txt"}}"#,
        in_dialect: "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n```",
        requests: Default::default(),
    });
    let provider = over(inner.clone(), Some(Setting::Auto));
    let mut notices = provider.notices();
    assert_eq!(provider.dialect_for(&model()), None, "native until shown");
    let events: Vec<StreamEvent> = provider
        .stream(native_request(), tokio_util::sync::CancellationToken::new())
        .map(Result::unwrap)
        .collect()
        .await;
    // The text call streamed, then the same message started again and ended with a call.
    let starts = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Start { .. }))
        .count();
    assert_eq!(starts, 2, "{events:?}");
    let dones: Vec<&AssistantMessage> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Done { message, .. } => Some(&**message),
            _ => None,
        })
        .collect();
    assert_eq!(dones.len(), 1, "the text call's end is not passed on");
    assert_eq!(
        calls(dones[0]),
        vec![("read".to_string(), json!({"path": "a.txt"}))]
    );
    {
        let sent = inner.requests.lock().unwrap();
        assert_eq!(sent.len(), 2);
        assert!(!sent[0].context.tools.is_empty(), "asked natively first");
        assert!(sent[1].context.tools.is_empty(), "then in the dialect");
    }
    assert_eq!(
        provider.dialect_for(&model()),
        Some("json"),
        "for the session"
    );
    let notice = notices.try_recv().unwrap();
    assert!(
        notice.contains("switching it to the json dialect"),
        "{notice}"
    );
    // The next request goes straight to the dialect.
    let _: Vec<_> = provider
        .stream(native_request(), tokio_util::sync::CancellationToken::new())
        .collect()
        .await;
    let sent = inner.requests.lock().unwrap();
    assert_eq!(sent.len(), 3);
    assert!(sent[2].context.tools.is_empty());
}

#[tokio::test]
async fn auto_moves_on_when_the_dialect_it_chose_gets_another_form_back() {
    use crate::agent::protocol::stream::Provider;
    use futures::StreamExt;
    // Natively the model ends with a <tool_call> block (hermes); asked in hermes, it answers
    // with a fenced JSON call (json): the next request switches again, and json reads it.
    let inner = Arc::new(TwoWays {
        native: "Reading.\n<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>",
        in_dialect: "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n```",
        requests: Default::default(),
    });
    let provider = over(inner.clone(), Some(Setting::Auto));
    let ask = || async {
        let events: Vec<_> = provider
            .stream(native_request(), tokio_util::sync::CancellationToken::new())
            .collect()
            .await;
        match events.last() {
            Some(Ok(crate::agent::protocol::stream::StreamEvent::Done { message, .. })) => {
                calls(message).len()
            }
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(ask().await, 0, "hermes does not read a fenced block");
    assert_eq!(provider.dialect_for(&model()), Some("hermes"));
    assert_eq!(ask().await, 1, "switched to json and asked again");
    assert_eq!(provider.dialect_for(&model()), Some("json"));
    assert_eq!(ask().await, 1);
    assert_eq!(inner.requests.lock().unwrap().len(), 5);
}

#[tokio::test]
async fn auto_leaves_prose_and_other_settings_leave_text_calls_alone() {
    use crate::agent::protocol::stream::{Provider, StreamEvent};
    use futures::StreamExt;
    let call = r#"{"name": "read", "arguments": {"path": "a.txt"}}"#;
    for (setting, native, switched) in [
        // Prose that mentions a call is an answer, even with auto.
        (
            Some(Setting::Auto),
            "Example:\n```json\n{\"name\": \"read\", \"arguments\": {}}\n```\nThat is all.",
            false,
        ),
        // Without auto, a text call is only reported.
        (None, call, false),
        (Some(Setting::Off), call, false),
        (Some(Setting::Auto), call, true),
    ] {
        let inner = Arc::new(TwoWays {
            native,
            in_dialect: "done",
            requests: Default::default(),
        });
        let provider = over(inner.clone(), setting.clone());
        let events: Vec<StreamEvent> = provider
            .stream(native_request(), tokio_util::sync::CancellationToken::new())
            .map(Result::unwrap)
            .collect()
            .await;
        let asked = inner.requests.lock().unwrap().len();
        assert_eq!(asked, if switched { 2 } else { 1 }, "{setting:?} {native}");
        let StreamEvent::Done { message, .. } = events.last().unwrap() else {
            panic!("{events:?}")
        };
        let expected = if switched { "done" } else { native };
        assert_eq!(message.text(), expected, "{setting:?}");
    }
}

#[test]
fn auto_is_a_setting() {
    assert_eq!(parse_setting("auto"), Ok(Setting::Auto));
    assert_eq!(parse_setting(" AUTO "), Ok(Setting::Auto));
    let s = DialectSettings::from_sources(
        None,
        None,
        None,
        &[("llamacpp".into(), "local".into(), "auto".into())],
    )
    .unwrap();
    assert_eq!(s.per_model["llamacpp/local"], Setting::Auto);
}
