//! Whether a local server's chat template takes native tools, and if not, which in-band
//! dialect suits the model: decided from what the server reports about the template it runs,
//! not from the model's name.
//!
//! - llama.cpp: `/props` → `chat_template_caps.supports_tools` (older servers: whether the
//!   `chat_template` mentions `tools` at all), and the template's text;
//! - Ollama: `/api/show` → `capabilities` (`"tools"` among them or not) and `template`.
//!
//! The template's control tokens name the family the model was trained in, and with it the
//! form it writes calls in when asked in text: ChatML (Qwen, Hermes) and Llama 3 write the
//! `<tool_call>` JSON of `hermes`, Gemma its own form, and so on.

use serde_json::{Value, json};

/// What a server says of the template it runs a model with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Template {
    /// Whether native `tools` reach the model through the template.
    pub takes_tools: bool,
    /// The dialect of the model's family, for when they do not.
    pub dialect: &'static str,
}

/// The dialect a chat template's family writes calls in.
pub(crate) fn family_dialect(template: &str) -> &'static str {
    let has = |s: &str| template.contains(s);
    if has("<|channel|>") {
        "harmony"
    } else if has("<start_of_turn>") || has("<|turn>") {
        "gemma"
    } else if has("[gMASK]") || has("<|observation|>") {
        "glm"
    } else if has("<｜Assistant｜>") || has("<｜tool▁calls▁begin｜>") {
        "deepseek"
    } else if has("<|im_middle|>") {
        "kimi"
    } else if has("]~b]") {
        "minimax"
    } else if has("<function=") {
        "qwen3"
    } else {
        // ChatML (Qwen, Hermes, most fine-tunes), Llama 3 and anything unknown: the JSON in
        // `<tool_call>` tags is the form small models follow best.
        "hermes"
    }
}

/// llama.cpp's `/props`.
pub(crate) fn from_llamacpp_props(props: &Value) -> Option<Template> {
    let template = props.get("chat_template")?.as_str()?;
    let takes_tools = props
        .pointer("/chat_template_caps/supports_tools")
        .and_then(Value::as_bool)
        .unwrap_or_else(|| template.contains("tools"));
    Some(Template {
        takes_tools,
        dialect: family_dialect(template),
    })
}

/// Ollama's `/api/show`.
pub(crate) fn from_ollama_show(show: &Value) -> Option<Template> {
    let caps = show.get("capabilities")?.as_array()?;
    let template = show.get("template").and_then(Value::as_str).unwrap_or("");
    Some(Template {
        takes_tools: caps.iter().any(|c| c.as_str() == Some("tools")),
        dialect: family_dialect(template),
    })
}

/// What the server at `base_url` says of `model`'s template, if it says.
pub(crate) async fn ask_server(
    base_url: &str,
    model: &str,
    headers: &[(String, String)],
) -> Option<Template> {
    use super::window::{ask, client_for, root, with_headers};
    let client = client_for(base_url)?;
    let root = root(base_url);
    let props = with_headers(client.get(format!("{root}/props")), headers);
    let show = with_headers(client.post(format!("{root}/api/show")), headers)
        .json(&json!({ "model": model }));
    let (props, show) = tokio::join!(ask(props), ask(show));
    props
        .as_ref()
        .and_then(from_llamacpp_props)
        .or_else(|| show.as_ref().and_then(from_ollama_show))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_says_whether_its_template_takes_tools() {
        // llama.cpp serving Qwen2.5-Coder with its own template (trimmed).
        let props = json!({
            "chat_template": "{%- if tools %}{{- '<|im_start|>system\\n' }}...<tool_call>...",
            "chat_template_caps": {"supports_tools": true, "supports_tool_calls": true},
        });
        assert_eq!(
            from_llamacpp_props(&props),
            Some(Template {
                takes_tools: true,
                dialect: "hermes"
            })
        );
        // A template without tools: the caps say so.
        let props = json!({
            "chat_template": "{% for m in messages %}<start_of_turn>{{ m.role }}\n{{ m.content }}<end_of_turn>{% endfor %}",
            "chat_template_caps": {"supports_tools": false},
        });
        assert_eq!(
            from_llamacpp_props(&props),
            Some(Template {
                takes_tools: false,
                dialect: "gemma"
            })
        );
        // An older server without caps: read the template.
        let props =
            json!({"chat_template": "{% for m in messages %}<|im_start|>{{ m.role }}{% endfor %}"});
        assert_eq!(
            from_llamacpp_props(&props),
            Some(Template {
                takes_tools: false,
                dialect: "hermes"
            })
        );
        // No template reported: nothing is known.
        assert_eq!(from_llamacpp_props(&json!({"n_ctx": 8192})), None);
        // Ollama, a model without the tools capability.
        let show = json!({
            "template": "[gMASK]<sop>{{ range .Messages }}<|{{ .Role }}|>{{ .Content }}{{ end }}",
            "capabilities": ["completion"],
        });
        assert_eq!(
            from_ollama_show(&show),
            Some(Template {
                takes_tools: false,
                dialect: "glm"
            })
        );
        let show = json!({"template": "<|im_start|>", "capabilities": ["completion", "tools"]});
        assert_eq!(from_ollama_show(&show).map(|t| t.takes_tools), Some(true));
        // An older Ollama without capabilities says nothing.
        assert_eq!(from_ollama_show(&json!({"template": "x"})), None);
    }

    #[test]
    fn each_family_has_its_dialect() {
        for (template, dialect) in [
            ("<|start|>system<|message|>…<|channel|>final", "harmony"),
            ("<｜User｜>{{c}}<｜Assistant｜>", "deepseek"),
            ("<|im_user|>user<|im_middle|>", "kimi"),
            ("]~b]user\n", "minimax"),
            ("<|start_header_id|>user<|end_header_id|>", "hermes"),
            ("anything else", "hermes"),
        ] {
            assert_eq!(family_dialect(template), dialect, "{template}");
        }
        // Every family's dialect is one pi has.
        for d in [
            "harmony", "gemma", "glm", "deepseek", "kimi", "minimax", "qwen3", "hermes",
        ] {
            assert!(super::super::dialect::by_name(d).is_some(), "{d}");
        }
    }
}
