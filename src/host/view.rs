//! What a front end shows of sessions, the session tree, MCP servers, the folder's files and
//! what a subagent spent, named here so that a front end reaches the `session`, `mcp`, `tools`
//! and `subagent` modules only through the host: the data types it is sent in
//! [`HostEvent`](super::HostEvent)s, and the few ways of putting them into words that go with
//! them.

pub use super::without_hook_context;
pub use crate::mcp::manager::{ServerState, ServerStatus, ToolEntry, describe as describe_servers};
pub use crate::session::branch_context::{BRANCH_PREAMBLE, COMPACTION_PREAMBLE};
pub use crate::session::error::another_pi;
pub use crate::session::tree_rows::{TreeFilter, TreeKind, TreeRow, filter_rows};
pub use crate::session::{ListScope, SessionInfo, UnreadableNewest, unique_prefixes};
pub use crate::subagent::usage_of as subagent_usage;
pub use crate::tools::todo::{Item as TodoItem, Status as TodoStatus, list_of as todo_list};
/// The folder walk the tools use (ignore files honoured), for the `@` file picker.
pub use crate::tools::walk::parallel as walk_folder;
