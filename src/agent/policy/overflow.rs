//! Which failed replies mean "the request was longer than the model's window", so the loop
//! compacts and asks again. Servers word this differently; the table below holds one row per
//! wording we have seen, each naming the server it came from, and a test holds a recorded
//! body for each. A status of 413 (request too large) counts on its own.

/// A wording of a context overflow (matched in lowercase) and the server that writes it.
struct Wording {
    server: &'static str,
    needle: &'static str,
}

const WORDINGS: &[Wording] = &[
    Wording {
        server: "Anthropic",
        needle: "prompt is too long",
    },
    Wording {
        server: "Anthropic",
        needle: "request_too_large",
    },
    Wording {
        server: "OpenAI, Groq, OpenRouter",
        needle: "context_length_exceeded",
    },
    Wording {
        server: "OpenAI, vLLM, OpenRouter, Mistral",
        needle: "maximum context length",
    },
    Wording {
        server: "OpenAI Responses",
        needle: "exceeds the context window",
    },
    Wording {
        server: "llama.cpp",
        needle: "exceeds the available context size",
    },
    Wording {
        server: "llama.cpp",
        needle: "exceed_context_size",
    },
    Wording {
        server: "llama.cpp",
        needle: "input is too large to process",
    },
    Wording {
        server: "Ollama",
        needle: "exceeded max context length",
    },
    Wording {
        server: "Ollama",
        needle: "prompt too long",
    },
    Wording {
        server: "LM Studio",
        needle: "context length of only",
    },
    Wording {
        server: "LM Studio",
        needle: "context overflow",
    },
    Wording {
        server: "Gemini",
        needle: "exceeds the maximum number of tokens",
    },
    Wording {
        server: "Groq",
        needle: "reduce the length of the messages",
    },
    Wording {
        server: "xAI, Cerebras",
        needle: "maximum prompt length",
    },
    Wording {
        server: "Bedrock",
        needle: "input is too long",
    },
    Wording {
        server: "any",
        needle: "too many tokens",
    },
    Wording {
        server: "any",
        needle: "exceeds the context",
    },
    Wording {
        server: "any",
        needle: "request too large",
    },
    Wording {
        server: "any",
        needle: "context window",
    },
];

/// Whether an error with this HTTP status and text says the request did not fit the window.
pub fn says_overflow(status: Option<u16>, text: &str) -> bool {
    status == Some(413) || which_server(text).is_some()
}

/// The server whose wording `text` matches, if any (for tests and diagnostics).
pub fn which_server(text: &str) -> Option<&'static str> {
    let text = text.to_ascii_lowercase();
    WORDINGS
        .iter()
        .find(|w| text.contains(w.needle))
        .map(|w| w.server)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts the providers' error reader makes of each server's recorded overflow body
    /// (message, then the kept code or status, then the HTTP status).
    #[test]
    fn each_servers_overflow_answer_is_recognised() {
        let recorded = [
            (
                "llama.cpp",
                "request (9733 tokens) exceeds the available context size (8192 tokens), try increasing it (HTTP 400)",
            ),
            (
                "llama.cpp",
                "the request exceeds the available context size. try increasing the context size or enable context shift (HTTP 400)",
            ),
            (
                "llama.cpp",
                "input is too large to process. increase the physical batch size (HTTP 500)",
            ),
            (
                "Ollama",
                "prompt too long; exceeded max context length by 1541 tokens (HTTP 400)",
            ),
            (
                "vLLM",
                "This model's maximum context length is 8192 tokens. However, you requested 9733 tokens (9221 in the messages, 512 in the completion). Please reduce the length of the messages or completion. (HTTP 400)",
            ),
            (
                "LM Studio",
                "Trying to keep the first 9733 tokens when context the overflows. However, the model is loaded with context length of only 8192 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input (HTTP 400)",
            ),
            (
                "OpenRouter",
                "This endpoint's maximum context length is 8192 tokens. However, you requested about 9733 tokens (9221 of text input, 512 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically. (HTTP 400)",
            ),
            (
                "Groq",
                "Please reduce the length of the messages or completion. (context_length_exceeded, HTTP 400)",
            ),
            (
                "Mistral",
                "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length (HTTP 400)",
            ),
            (
                "Gemini",
                "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576). (INVALID_ARGUMENT, HTTP 400)",
            ),
            (
                "OpenAI",
                "This model's maximum context length is 128000 tokens. However, your messages resulted in 130211 tokens. Please reduce the length of the messages. (context_length_exceeded, HTTP 400)",
            ),
            (
                "OpenAI Responses",
                "Your input exceeds the context window of this model. Please adjust your input and try again. (context_length_exceeded, HTTP 400)",
            ),
            (
                "Anthropic",
                "prompt is too long: 210456 tokens > 200000 maximum (HTTP 400)",
            ),
        ];
        for (server, text) in recorded {
            assert!(says_overflow(Some(400), text), "{server}: {text}");
            assert!(which_server(text).is_some(), "{server}");
        }
    }

    #[test]
    fn unrelated_errors_are_not_overflows() {
        for text in [
            "Rate limit reached for gpt-5 on tokens per min (HTTP 429)",
            "invalid x-api-key (HTTP 401)",
            "Invalid value: 'xhigh' for reasoning.effort (HTTP 400)",
            "model 'qwen3:8b' not found (HTTP 404)",
            "max_tokens: must be at most 8192 (HTTP 400)",
        ] {
            assert!(!says_overflow(Some(400), text), "{text}");
        }
        assert!(says_overflow(Some(413), "Payload Too Large"));
    }
}
