//! Sessions on disk: every message kept as it happens, any session reopened later.
//!
//! Session files use the JSONL v3 format of the Node.js `pi`, in the same places, so either
//! program can open the other's sessions (see `spec/product-surface.md` §3):
//!
//! ```text
//! <agent dir>/sessions/--<cwd>--/<timestamp>_<uuidv7>.jsonl
//! {"type":"session","version":3,"id":"…","timestamp":"…","cwd":"/work/app"}
//! {"type":"model_change","id":"a1b2c3d4","parentId":null,"timestamp":"…","provider":"anthropic","modelId":"…"}
//! {"type":"message","id":"b2c3d4e5","parentId":"a1b2c3d4","timestamp":"…","message":{"role":"user",…}}
//! ```
//!
//! The flow through the module:
//!
//! * writing — [`SessionRecorder`] turns agent events into entries and appends them
//!   ([`recorder`]); [`RecorderTask`] runs it beside an `Agent` ([`task`]);
//! * reading — [`Session::load`] reads a file into entries, never failing on damage
//!   ([`load`]); [`Session::context`] / [`Session::into_context`] build what an agent resumes
//!   with ([`branch_context`]);
//! * finding — [`list_sessions`], [`newest_session`], [`find_session`] read only headers and
//!   bounded heads and tails ([`list`]); [`fork()`] copies a session and [`branch_to_new`] one
//!   branch of it ([`fork`]); [`manage`] renames and deletes sessions not open here;
//! * showing — [`tree_rows`] lays the entry tree out for `/tree` and [`filter_rows`] filters
//!   it ([`tree_rows`](mod@tree_rows));
//! * starting a run — [`open_session`] turns `--continue`, `--session`, `--fork` and a
//!   picked file into a recorder and a context ([`open`]);
//! * the format itself — [`entry`] (lines), [`layout`] (names), [`ids`], [`time`];
//! * typing ids — [`short_id`]: the start of an id a list shows and what typed text matches.
//!
//! It knows nothing of the terminal or of providers; the CLI decides which session to open.

pub mod branch_context;
pub mod entry;
pub(crate) mod error;
mod fast_message;
pub mod fork;
pub mod ids;
pub mod layout;
pub mod list;
pub(crate) mod load;
pub mod lock;
pub mod manage;
pub(crate) mod open;
pub(crate) mod recorder;
mod salvage;
pub(crate) mod short_id;
pub(crate) mod task;
pub mod time;
pub mod tree_rows;

pub use branch_context::{
    MessageOrigin, ModelRef, STARTED_TOOL_TEXT, SessionContext, UNFINISHED_TOOL_TEXT,
};
pub use entry::{
    BranchSummary, CURRENT_VERSION, Compaction, CustomMessageEntry, EntryKind, SessionEntry,
    SessionHeader,
};
pub use error::{Candidate, LoadWarning, SessionError};
pub use fork::{Forked, branch_to_new, fork};
pub use layout::{SessionPaths, encode_cwd};
pub use list::{
    FoundSession, ListScope, Newest, SessionInfo, SessionList, UnreadableNewest, count_messages,
    find_session, list_sessions, newest_candidate, newest_session, session_info,
};
pub use load::Session;
pub use open::{OpenedSession, StartFrom, open_session, open_session_to_write, resume_hint};
pub use recorder::SessionRecorder;
pub use short_id::unique_prefixes;
pub use task::RecorderTask;
pub use tree_rows::{TreeFilter, TreeKind, TreeRow, filter_rows, tree_rows};
