//! What a tool shows the model, in one place: its name, its description and the JSON schema
//! of its arguments. [`tool_info_accessors!`] writes the three `AgentTool` methods that read
//! them, so each tool states them once, where it is built.

use std::borrow::Cow;

use serde_json::Value;

/// A tool's name, description and argument schema.
pub(crate) struct ToolInfo {
    name: &'static str,
    description: Cow<'static, str>,
    schema: Value,
}

impl ToolInfo {
    pub(crate) fn new(
        name: &'static str,
        description: impl Into<Cow<'static, str>>,
        schema: Value,
    ) -> Self {
        ToolInfo {
            name,
            description: description.into(),
            schema,
        }
    }

    pub(crate) fn name(&self) -> &str {
        self.name
    }

    pub(crate) fn description(&self) -> &str {
        &self.description
    }

    pub(crate) fn schema(&self) -> &Value {
        &self.schema
    }
}

/// `name`, `description` and `parameters` of an `AgentTool` whose struct keeps its
/// [`ToolInfo`] in a field named `info`.
macro_rules! tool_info_accessors {
    () => {
        fn name(&self) -> &str {
            self.info.name()
        }

        fn description(&self) -> &str {
            self.info.description()
        }

        fn parameters(&self) -> &serde_json::Value {
            self.info.schema()
        }
    };
}

pub(crate) use tool_info_accessors;
