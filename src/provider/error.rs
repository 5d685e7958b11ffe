//! Why a provider call could not start, and why a response stream could not be decoded.
//!
//! Each variant's text is what the person sees (the call ends with it as its error message),
//! so the wording is part of the interface.

use thiserror::Error;

/// Why a configured value (a key, a header) could not be read.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum KeyError {
    #[error("could not run the key command: {0}")]
    CommandFailed(String),
    /// The exit code, or "a signal".
    #[error("the key command exited with {0}")]
    CommandExited(String),
    #[error("the key command printed nothing")]
    EmptyOutput,
    #[error(
        "the key command printed control characters (a key is one line of plain text; \
         check the command's output)"
    )]
    ControlCharacters,
}

/// Why a call was not sent.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum RequestError {
    /// The model or its provider is not in the catalogue (the catalogue's own message).
    #[error("{0}")]
    UnknownModel(String),
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("header `{name}` of `{provider}`: {source}")]
    Header {
        name: String,
        provider: String,
        source: KeyError,
    },
    /// No key for a provider that needs one: how to give it.
    #[error("{0}")]
    MissingKey(String),
    #[error("no base URL for provider `{0}`")]
    NoBaseUrl(String),
    /// The endpoint cannot be built from the settings (what to set, in the message).
    #[error("{0}")]
    BadEndpoint(String),
    #[error("could not set up the HTTP client: {0}")]
    Client(String),
}

/// A whole server-sent event that does not decode: a protocol error that ends the response.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum DecodeError {
    /// Not JSON; `start` is the beginning of the payload.
    #[error("the provider sent a malformed event ({reason}): {start}")]
    NotJson { reason: String, start: String },
    /// A `content_block_*` event (its `kind`) without its block index.
    #[error("the provider sent a malformed event: `{kind}` without a block index")]
    NoBlockIndex { kind: String },
}
