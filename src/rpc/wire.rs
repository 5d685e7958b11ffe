//! The Node.js pi's RPC commands as they arrive on stdin, deserialised by serde: one variant
//! per command `type`, its fields under the names the Node pi's RPC document gives them
//! (`streamingBehavior`, `modelId`, `customInstructions`, ...). [`super::commands`] turns each
//! into the host's operations.

use serde::Deserialize;

use crate::agent::protocol::command::{QueueMode, WhenBusy};
use crate::agent::protocol::types::ImageContent;

/// What a prompt sent during a run asks for (`streamingBehavior`).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
pub enum StreamingBehavior {
    #[serde(rename = "steer")]
    Steer,
    #[serde(rename = "followUp")]
    FollowUp,
}

impl StreamingBehavior {
    pub fn when_busy(behavior: Option<StreamingBehavior>) -> WhenBusy {
        match behavior {
            None => WhenBusy::Refuse,
            Some(StreamingBehavior::Steer) => WhenBusy::Steer,
            Some(StreamingBehavior::FollowUp) => WhenBusy::FollowUp,
        }
    }
}

/// One command line. Fields a command does not use are ignored, as the Node pi ignores them.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RpcCommand {
    Prompt {
        message: String,
        #[serde(default)]
        images: Option<Vec<ImageContent>>,
        #[serde(default, rename = "streamingBehavior")]
        streaming_behavior: Option<StreamingBehavior>,
    },
    Steer {
        message: String,
        #[serde(default)]
        images: Option<Vec<ImageContent>>,
    },
    FollowUp {
        message: String,
        #[serde(default)]
        images: Option<Vec<ImageContent>>,
    },
    Abort,
    NewSession,
    GetState,
    GetMessages,
    GetLastAssistantText,
    SetModel {
        #[serde(default)]
        provider: String,
        #[serde(default, rename = "modelId")]
        model_id: String,
    },
    GetAvailableModels,
    SetThinkingLevel {
        level: String,
    },
    CycleThinkingLevel,
    SetSteeringMode {
        mode: QueueMode,
    },
    SetFollowUpMode {
        mode: QueueMode,
    },
    Compact {
        #[serde(default, rename = "customInstructions")]
        custom_instructions: Option<String>,
    },
    SetAutoCompaction {
        enabled: bool,
    },
    SetAutoRetry {
        enabled: bool,
    },
    AbortRetry,
    Bash {
        command: String,
    },
    AbortBash,
    GetSessionStats,
    ExportHtml {
        #[serde(default, rename = "outputPath")]
        output_path: Option<String>,
    },
    SwitchSession {
        #[serde(rename = "sessionPath")]
        session_path: String,
    },
    Fork {
        #[serde(rename = "entryId")]
        entry_id: String,
    },
    Clone,
    GetForkMessages,
    /// pi's own: plan mode on or off (only reading tools run; the model answers with a plan).
    SetPlanMode {
        enabled: bool,
    },
    /// pi's own: go back before an entry, putting back the files the agent changed since
    /// (`mode`: both, conversation, code); `dryRun` only says what would change.
    Rewind {
        #[serde(rename = "entryId")]
        entry_id: String,
        #[serde(default)]
        mode: crate::host::rewind::RewindMode,
        #[serde(default)]
        force: bool,
        #[serde(default, rename = "dryRun")]
        dry_run: bool,
    },
    SetSessionName {
        name: String,
    },
    CycleModel,
    GetCommands,
    /// pi's own: hold the agent back at its next step (no Node.js counterpart).
    Pause,
    Resume,
    /// The Node pi's answer to an extension's dialog: this pi has no extensions.
    ExtensionUiResponse,
    /// Any other `type`.
    #[serde(other)]
    Unknown,
}

/// Read one command; `Err` with the response's text when it is not a command this pi reads.
pub fn parse(kind: &str, line: serde_json::Value) -> Result<RpcCommand, String> {
    match serde_json::from_value::<RpcCommand>(line) {
        Ok(RpcCommand::Unknown) => Err(format!("Unknown command: {kind}")),
        Ok(RpcCommand::ExtensionUiResponse) => Err(format!(
            "`{kind}` is not supported: this pi has no extensions"
        )),
        Ok(command) => Ok(command),
        Err(e) => Err(format!("Invalid `{kind}` command: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_node_pis_names_are_read() {
        let c = parse(
            "prompt",
            json!({"type": "prompt", "message": "hi", "streamingBehavior": "followUp",
                   "id": "1"}),
        )
        .expect("a prompt");
        assert!(matches!(
            c,
            RpcCommand::Prompt {
                streaming_behavior: Some(StreamingBehavior::FollowUp),
                ..
            }
        ));
        let c = parse(
            "set_model",
            json!({"type": "set_model", "provider": "p", "modelId": "m"}),
        )
        .expect("set_model");
        assert!(matches!(c, RpcCommand::SetModel { model_id, .. } if model_id == "m"));
        let c = parse(
            "set_follow_up_mode",
            json!({"type": "set_follow_up_mode", "mode": "one-at-a-time"}),
        )
        .expect("a mode");
        assert!(matches!(
            c,
            RpcCommand::SetFollowUpMode {
                mode: QueueMode::OneAtATime
            }
        ));
        let c = parse(
            "compact",
            json!({"type": "compact", "customInstructions": "the parser"}),
        )
        .expect("compact");
        assert!(
            matches!(c, RpcCommand::Compact { custom_instructions: Some(f) } if f == "the parser")
        );
    }

    #[test]
    fn unknown_and_garbled_commands_say_what_is_wrong() {
        let e = parse("teleport", json!({"type": "teleport"})).unwrap_err();
        assert_eq!(e, "Unknown command: teleport");
        let e = parse(
            "extension_ui_response",
            json!({"type": "extension_ui_response", "value": "x"}),
        )
        .unwrap_err();
        assert!(e.contains("not supported"), "{e}");
        let e = parse(
            "set_auto_retry",
            json!({"type": "set_auto_retry", "enabled": "yes"}),
        )
        .unwrap_err();
        assert!(e.starts_with("Invalid `set_auto_retry` command"), "{e}");
        let e = parse("steer", json!({"type": "steer"})).unwrap_err();
        assert!(e.contains("message"), "{e}");
        let e = parse(
            "set_steering_mode",
            json!({"type": "set_steering_mode", "mode": "some"}),
        )
        .unwrap_err();
        assert!(e.contains("one-at-a-time"), "{e}");
    }
}
