//! The composition root: flags and configuration in, a running core out.
//!
//! [`start`] is the one place that builds everything a front end needs: it loads
//! `config.toml` and the model catalogue, chooses the model ([`select`]), builds the tool set
//! and the system prompt, opens (or starts) the session, and hands all of it to the host task
//! (`crate::host`), which owns the agent and the session recorder from then on. Print mode, the
//! interactive UI and any other front end call it the same way and then talk to the host only
//! through the returned [`host::Client`](crate::host::Client).
//!
//! Environment reads happen here, once, and reach the agent as settings (`PI_NO_INTENT`,
//! `PI_CODING_AGENT_DIR`, `PI_CODING_AGENT_SESSION_DIR`, keys).

pub mod approval_gate;
pub mod patterns;
pub mod select;
pub mod trust;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::agent::engine::config::RetryPolicy;
use crate::agent::engine::facade::{Agent, AgentSettings};
use crate::agent::protocol::thinking::ThinkingLevel;
use crate::agent::protocol::tool::AgentTool;
use crate::agent::protocol::types::AgentMessage;
use crate::config::{self, Config, instructions};
use crate::host::{self, HostParts};
use crate::provider::catalog::{Catalog, ModelInfo};
use crate::provider::dialect::{DialectProvider, DialectSettings};
use crate::provider::{EnvLookup, Providers, keys};
use crate::secrets::Secrets;
use crate::session::{self, SessionError, SessionPaths, StartFrom};
use crate::tools::context::ToolContext;
use crate::tools::env::EnvPolicy;
use crate::tools::guard::{Guarded, guard_all};
use crate::tools::sandbox::{Sandbox, SandboxMode};

/// Environment variable that, set to `1`, keeps the intent argument out of tool schemas.
pub const NO_INTENT_ENV: &str = "PI_NO_INTENT";
/// Names the in-band tool-calling dialect (below `--dialect`, over config).
pub const DIALECT_ENV: &str = "PI_DIALECT";

/// Which session a run works in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum SessionChoice {
    /// A new session (written from its first message on).
    #[default]
    New,
    /// The newest session of this folder, else a new one (`-c`).
    Continue,
    /// A session by path or id prefix (`--session`).
    Open(String),
    /// A copy of a session (`--fork`).
    Fork(String),
    /// A session file chosen in a picker.
    File(PathBuf),
    /// Nothing is saved (`--no-session`).
    NotSaved,
}

/// What the flags say; everything else comes from config and the environment.
#[derive(Clone)]
pub struct Options {
    pub model: select::ModelFlags,
    pub api_key: Option<String>,
    /// Replaces the system prompt (text, or a path to a file).
    pub system_prompt: Option<String>,
    /// Added to the system prompt (text, or a path to a file).
    /// Texts (or files) added to the system prompt, in order.
    pub append_system_prompt: Vec<String>,
    pub session: SessionChoice,
    pub session_dir: Option<PathBuf>,
    /// `--tools a,b,c`; `None` for the default set.
    pub tools: Option<String>,
    pub no_tools: bool,
    pub no_context_files: bool,
    /// `--prompt-template` files or folders.
    pub prompt_templates: Vec<PathBuf>,
    /// `--no-prompt-templates`: only those of `--prompt-template`.
    pub no_prompt_templates: bool,
    /// `--theme` values: theme files or folders to load, or a theme's name; the last one is the
    /// theme this run uses.
    pub themes: Vec<String>,
    /// `--no-themes`: only the `--theme` files.
    pub no_themes: bool,
    /// `--skill` files or folders (loaded even with `--no-skills`).
    pub skills: Vec<PathBuf>,
    /// `--no-skills`: only those of `--skill`.
    pub no_skills: bool,
    /// `--plan`: start in plan mode.
    pub plan: bool,
    /// `--no-builtin-tools`: no built-in tools, MCP tools still offered.
    pub no_builtin_tools: bool,
    /// `--extension` paths: named in a notice, never loaded.
    pub extensions: Vec<String>,
    /// `--sandbox`: over `sandbox` in config.
    pub sandbox: Option<SandboxMode>,
    /// The front end shows replies and tool output as they stream (`message_update`,
    /// `tool_execution_update`); without it those events are never sent to it.
    pub live_updates: bool,
    /// Open the chosen session without writing to it (`--read-only`; for a session another pi
    /// is writing). Nothing of this run is saved in it.
    pub read_only: bool,
    /// `--models`: the patterns Ctrl+P cycles through (over `enabled_models` in config).
    pub scoped_models: Option<Vec<String>>,
    /// `--verbose`: front ends say more about how they started.
    pub verbose: bool,
    /// `--approval`: auto, ask or read-only (over config).
    pub approval: Option<String>,
    /// `--dialect`: the in-band tool-calling dialect (over `PI_DIALECT` and config).
    pub dialect: Option<String>,
    /// The front end can put approval requests to a person (the interactive view); without
    /// one, `ask` refuses what no rule allows.
    pub asks_person: bool,
    /// The front end draws the conversation a session opens with, so [`StartInfo::messages`]
    /// gets a copy of it. Without it that list stays empty: the agent holds the only copy, and
    /// a long session is not copied (and freed) for nothing.
    pub shows_history: bool,
    /// The process ends when the host does (the real binary; not a test starting many): the
    /// host then leaves the conversation for the kernel to take back whole, instead of
    /// freeing a long history allocation by allocation on the way out.
    pub ends_process: bool,
    /// `--trust-project`: the project's settings that act for someone else apply to this run
    /// without the folder being trusted ([`trust`]).
    pub trust_project: bool,
    /// The hash of the held settings the person has just trusted (the interactive question);
    /// they apply if the files still say exactly that.
    pub trusted_hash: Option<String>,
    pub env: EnvLookup,
    pub cwd: PathBuf,
}

impl Options {
    /// Defaults for the given folder and environment.
    pub fn new(cwd: PathBuf, env: EnvLookup) -> Self {
        Options {
            model: select::ModelFlags::default(),
            api_key: None,
            system_prompt: None,
            append_system_prompt: Vec::new(),
            session: SessionChoice::New,
            session_dir: None,
            tools: None,
            no_tools: false,
            no_context_files: false,
            prompt_templates: Vec::new(),
            no_prompt_templates: false,
            skills: Vec::new(),
            no_skills: false,
            plan: false,
            themes: Vec::new(),
            no_themes: false,
            no_builtin_tools: false,
            extensions: Vec::new(),
            sandbox: None,
            live_updates: true,
            read_only: false,
            scoped_models: None,
            verbose: false,
            approval: None,
            dialect: None,
            asks_person: false,
            shows_history: false,
            ends_process: false,
            trust_project: false,
            trusted_hash: None,
            env,
            cwd,
        }
    }

    fn agent_dir(&self) -> Option<PathBuf> {
        let env = self.env.clone();
        config::agent_dir(&move |k| env(k))
    }
}

/// What a front end learns at start.
pub struct StartInfo {
    pub config: Config,
    pub model: ModelInfo,
    pub thinking: ThinkingLevel,
    /// Every model the catalogue knows (for a model picker).
    pub models: Vec<ModelInfo>,
    /// The catalogue itself, for naming a model by id ([`select::model_by_id`]).
    pub catalog: Arc<Catalog>,
    /// The models Ctrl+P cycles through (`--models`, else `enabled_models`), each with the
    /// thinking level its pattern names; empty when neither is set.
    pub scoped_models: Vec<(ModelInfo, Option<ThinkingLevel>)>,
    /// Providers with no key configured (and needing one), for marking them in pickers.
    pub providers_without_key: Vec<String>,
    /// Providers whose subscription is signed in to (`auth.json`).
    pub signed_in: Vec<String>,
    /// Providers that take an API key (for `/login`), in catalogue order, each with the
    /// environment variable it reads its key from.
    pub key_providers: Vec<(String, Option<String>)>,
    /// No key and no local server were found: what to tell the person (the model is a
    /// stand-in). Only with [`select::ModelFlags::allow_missing`].
    pub no_model: Option<String>,
    pub session_id: String,
    pub session_name: Option<String>,
    /// The file the session is saved in (it may not exist before the first message).
    pub session_file: Option<PathBuf>,
    /// How tool calls that can change things are approved at the start.
    pub approval: crate::approval::ApprovalMode,
    /// Plan mode is on from the start (`--plan`).
    pub plan: bool,
    /// Sessions are written (not `--no-session`, and a home folder exists).
    pub saving: bool,
    /// The conversation the session opened with (empty for a new one, and when the front end
    /// does not show it: [`Options::shows_history`]).
    pub messages: Vec<AgentMessage>,
    /// The sandbox in a few words (`sandbox workspace-write (Landlock ABI 7)`); `None` when
    /// off.
    pub sandbox: Option<String>,
    /// Things to show the person (config warnings, session damage, model notes).
    pub warnings: Vec<String>,
    /// The prompt templates `/name` expands (offered by the editor's completion).
    pub templates: Arc<Vec<crate::config::prompt_templates::PromptTemplate>>,
    /// The skills found; `/skill:name` sends one (unless `enable_skill_commands` is off).
    pub skills: Arc<Vec<crate::config::skills::Skill>>,
    /// Whether skills are also `/skill:name` commands.
    pub skill_commands: bool,
    /// The theme files found (`/theme` offers them with `dark` and `light`).
    pub themes: Vec<crate::config::theme_files::ThemeFile>,
    /// The theme to start with: the last `--theme`, else config's `theme` (`None`: dark).
    pub theme: Option<String>,
    pub cwd: PathBuf,
}

/// Why the core did not start.
#[derive(Debug)]
pub struct StartError {
    pub message: String,
    /// The session asked for is being written by another pi; a front end can offer to fork
    /// it or open it read-only instead.
    pub locked: Option<LockedSession>,
    /// `-c` found a newest session file without a valid header; a front end can offer the
    /// next newest session, a repaired copy or a new session.
    pub unreadable_newest: Option<session::UnreadableNewest>,
}

/// A session another running pi writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockedSession {
    pub path: PathBuf,
    pub pid: u32,
}

impl From<String> for StartError {
    fn from(message: String) -> Self {
        StartError {
            message,
            locked: None,
            unreadable_newest: None,
        }
    }
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A running core and what a front end needs to show it.
pub struct Started {
    pub client: host::Client,
    pub info: StartInfo,
}

/// Load `config.toml` (agent folder, then project) over the Node.js pi's `settings.json`, and
/// the catalogue with the providers of both, the Node.js pi's `models.json` and its
/// `auth.json` keys. The project's settings that act for someone else are in only when
/// [`trust::decide`] says so (`trust_project` is the flag); otherwise the first warning says
/// what was left out.
pub fn load_config(
    agent_dir: Option<&Path>,
    cwd: &Path,
    env: &EnvLookup,
    trust_project: bool,
    trusted_hash: Option<&str>,
) -> Result<(Config, Catalog, Vec<String>), String> {
    let mut loaded = config::load(agent_dir, cwd).map_err(|e| e.to_string())?;
    let (apply, notice) = trust::decide(&loaded.held, agent_dir, trust_project, trusted_hash);
    if apply {
        loaded.apply_held().map_err(|e| e.to_string())?;
    }
    loaded.warnings.splice(0..0, notice);
    let e = env.clone();
    let mut catalog = Catalog::builtin(&move |k| e(k));
    // The Node.js pi's models first, so config.toml's providers win where both name one; its
    // auth.json keys last, once every provider they may belong to is known.
    let models = config::node::models::load(agent_dir)?;
    loaded.warnings.extend(models.apply_to(&mut catalog)?);
    loaded.config.apply_to(&mut catalog)?;
    let auth = config::node::auth::load(agent_dir)?;
    auth.apply_to(&mut catalog);
    auth.apply_sign_ins(&mut catalog);
    if let Some(project) = loaded.project_approval.take() {
        let global = loaded.config.approval.take();
        loaded.config.approval = Some(approval_gate::with_project(
            global,
            project,
            &mut loaded.warnings,
        ));
    }
    Ok((loaded.config, catalog, loaded.warnings))
}

/// Every value pi knows to be secret at start: keys withheld from the tools' environment,
/// `--api-key`, keys written in config files and `auth.json`, and the tokens MCP servers are
/// given. Keys that come from a `!command` join when they are resolved, `/login` keys when
/// they are stored.
pub fn known_secrets(
    options: &Options,
    policy: &EnvPolicy,
    catalog: &Catalog,
    servers: &[crate::mcp::ServerConfig],
) -> Secrets {
    let secrets = Secrets::new(policy.withheld_values(std::env::vars_os()));
    secrets.extend(options.api_key.iter());
    secrets.extend(keys::literal_keys(catalog.providers()));
    for server in servers {
        match &server.transport {
            crate::mcp::config::Transport::Stdio { env, .. } => secrets.extend(
                env.iter()
                    .filter(|(k, _)| !policy.allows(std::ffi::OsStr::new(k)))
                    .map(|(_, v)| v),
            ),
            crate::mcp::config::Transport::Http {
                bearer_token_env_var,
                headers,
                ..
            } => {
                if let Some(token) = bearer_token_env_var
                    .as_deref()
                    .and_then(|v| (options.env)(v))
                {
                    secrets.add(&token);
                }
                secrets.extend(
                    headers
                        .iter()
                        .filter(|(k, _)| crate::secrets::is_credential_header(k))
                        .map(|(_, v)| v.strip_prefix("Bearer ").unwrap_or(v)),
                );
            }
        }
    }
    secrets
}

/// pi's own files that hold keys, which the read, grep and find tools refuse: `auth.json`
/// always (it exists to hold keys, and may be created later by `/login`), and each config
/// file in which a known secret is written out.
pub fn protected_files(agent_dir: Option<&Path>, cwd: &Path, secrets: &Secrets) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(d) = agent_dir {
        out.push(config::node::auth::path(d));
    }
    for file in config_sources(agent_dir, cwd) {
        if out.contains(&file) {
            continue;
        }
        let holds_key = std::fs::read_to_string(&file).is_ok_and(|t| secrets.found_in(&t));
        if holds_key {
            out.push(file);
        }
    }
    out
}

/// The configuration files present for this folder, in the order they are read (the Node.js
/// pi's, then config.toml's; global before project).
pub fn config_sources(agent_dir: Option<&Path>, cwd: &Path) -> Vec<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(d) = agent_dir {
        for name in ["settings.json", "models.json", "auth.json"] {
            candidates.push(d.join(name));
        }
    }
    candidates.push(cwd.join(".pi").join("settings.json"));
    if let Some(d) = agent_dir {
        candidates.push(d.join("config.toml"));
    }
    candidates.push(cwd.join(".pi").join("config.toml"));
    candidates.into_iter().filter(|p| p.is_file()).collect()
}

/// Why the session could not be opened, with the choices a front end can offer.
fn open_failed(e: SessionError) -> StartError {
    match e {
        SessionError::Locked { path, pid } => {
            let id = session::list::header_id(&path).unwrap_or_else(|| path.display().to_string());
            StartError {
                message: format!(
                    "session {id} is open in {}. Continue it in a \
                     copy with `pi --fork {id}`, or look at it without saving anything with \
                     `pi --session {id} --read-only`",
                    session::error::another_pi(pid)
                ),
                locked: Some(LockedSession { path, pid }),
                unreadable_newest: None,
            }
        }
        SessionError::UnreadableNewest(found) => StartError {
            message: found.to_string(),
            locked: None,
            unreadable_newest: Some(*found),
        },
        e => e.to_string().into(),
    }
}

/// The checkpoint tracker (`None`: nothing is saved, the session is read-only, or
/// `checkpoints.enabled = false`) and where its notices arrive. It starts saving the folder's
/// files at the first tool call of a run (see [`crate::checkpoint::tool`]).
fn checkpoints(
    options: &Options,
    config: &Config,
    paths: Option<&SessionPaths>,
) -> (
    Option<Arc<crate::checkpoint::Tracker>>,
    Option<tokio::sync::mpsc::UnboundedReceiver<String>>,
) {
    let Some(paths) = paths else {
        return (None, None);
    };
    if options.read_only || config.checkpoints.enabled == Some(false) {
        return (None, None);
    }
    let Some(folder) = options
        .agent_dir()
        .and_then(|agent| crate::checkpoint::folder_for(&paths.dir, &agent))
    else {
        return (None, None);
    };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let tracker = Arc::new(
        crate::checkpoint::Tracker::new(
            &options.cwd,
            &folder,
            config.checkpoints.limits(),
            Box::new(move |n| {
                let _ = tx.send(n);
            }),
        )
        .skipping(
            [Some(paths.dir.clone()), options.agent_dir()]
                .into_iter()
                .flatten(),
        ),
    );
    (Some(tracker), Some(rx))
}

/// Where this folder's sessions live (`None` when nothing is saved).
pub fn session_paths(options: &Options, config: &Config) -> Option<SessionPaths> {
    if options.session == SessionChoice::NotSaved {
        return None;
    }
    let env = options.env.clone();
    SessionPaths::resolve(
        options.agent_dir().as_deref(),
        &options.cwd,
        options.session_dir.as_deref(),
        config.session_dir.as_deref(),
        &move |k| env(k),
    )
}

/// Text from a flag value: the file's contents if it names a readable file, else the text.
pub fn text_or_file(value: &str) -> String {
    let path = PathBuf::from(value);
    if value.len() < 4096
        && path.is_file()
        && let Ok(text) = std::fs::read_to_string(&path)
    {
        return text;
    }
    value.to_string()
}

/// The system prompt: template or replacement, appended text, context files, date, folder.
fn system_prompt(
    options: &Options,
    tools: &[Arc<dyn AgentTool>],
    skills: &[crate::config::skills::Skill],
) -> Vec<String> {
    let agent_dir = options.agent_dir();
    let cwd = &options.cwd;
    let replacement = options
        .system_prompt
        .as_deref()
        .map(text_or_file)
        .or_else(|| instructions::system_file(agent_dir.as_deref(), cwd, "SYSTEM.md"));
    let append = if options.append_system_prompt.is_empty() {
        instructions::system_file(agent_dir.as_deref(), cwd, "APPEND_SYSTEM.md")
    } else {
        Some(
            options
                .append_system_prompt
                .iter()
                .map(|v| text_or_file(v))
                .collect::<Vec<_>>()
                .join("\n\n"),
        )
    };
    let context_files = if options.no_context_files {
        Vec::new()
    } else {
        instructions::discover(agent_dir.as_deref(), cwd)
    };
    let tools: Vec<(String, String)> = tools
        .iter()
        .map(|t| {
            (
                t.name().to_string(),
                instructions::tool_line(t.description()),
            )
        })
        .collect();
    // The model opens a skill's file itself: without read it could not.
    let skills_section = if tools.iter().any(|(name, _)| name == "read") {
        crate::config::skills::prompt_section(skills)
    } else {
        String::new()
    };
    vec![instructions::build(&instructions::PromptParts {
        replacement,
        append,
        tools,
        context_files,
        skills: skills_section,
        date: instructions::today(),
        cwd: cwd.display().to_string(),
    })]
}

fn retry_policy(config: &Config) -> RetryPolicy {
    let d = RetryPolicy::default();
    RetryPolicy {
        max_retries: config.retry.max_retries.unwrap_or(d.max_retries),
        base_delay: config
            .retry
            .base_delay_ms
            .map_or(d.base_delay, Duration::from_millis),
        max_delay: config
            .retry
            .max_delay_ms
            .map_or(d.max_delay, Duration::from_millis),
    }
}

/// The sandbox the flags and config ask for (the flag wins; off by default).
fn sandbox(options: &Options, config: &Config) -> Sandbox {
    let mode = options.sandbox.or(config.sandbox).unwrap_or_default();
    if mode == SandboxMode::Off {
        return Sandbox::off();
    }
    Sandbox::new(
        mode,
        config.sandbox_fallback.unwrap_or_default(),
        &options.cwd,
    )
}

/// The tools `--tools` / `--no-tools` choose (default: read, bash, edit, write), running with
/// `env` inside `sandbox`.
fn active_tools(
    options: &Options,
    config: &Config,
    env: Vec<(OsString, OsString)>,
    sandbox: Sandbox,
    protected: Vec<PathBuf>,
) -> Result<Vec<Arc<dyn AgentTool>>, String> {
    let names: Vec<String> = if options.no_tools || options.no_builtin_tools {
        Vec::new()
    } else {
        match &options.tools {
            // `task` (subagents) and `web_fetch` are built apart (`task_tool`, `web_tool`).
            Some(list) => {
                crate::tools::parse_tool_list(&without_composed(list)).map_err(|e| e.to_string())?
            }
            None => crate::tools::DEFAULT_TOOLS
                .iter()
                .map(ToString::to_string)
                .collect(),
        }
    };
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let ctx = ToolContext::new(options.cwd.clone())
        .with_limits(config.tools.limits())
        .with_env(env)
        .with_sandbox(sandbox)
        .with_protected(protected);
    crate::tools::build_with(&refs, Arc::new(ctx)).map_err(|e| e.to_string())
}

/// A `--tools` list without the tools the composition root builds itself (`task`,
/// `web_fetch`): the rest are the built-in set's.
fn without_composed(list: &str) -> String {
    list.split(',')
        .filter(|n| !matches!(n.trim(), "task" | "web_fetch"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Whether `--tools` names `tool`.
fn names_tool(options: &Options, tool: &str) -> bool {
    options
        .tools
        .as_deref()
        .is_some_and(|l| l.split(',').any(|n| n.trim() == tool))
}

/// The web_fetch tool, when `--tools` names it.
fn web_tool(options: &Options, config: &Config) -> Result<Option<Arc<dyn AgentTool>>, String> {
    if !names_tool(options, "web_fetch") || options.no_tools || options.no_builtin_tools {
        return Ok(None);
    }
    let fetcher = crate::provider::web::HttpFetcher::new()?;
    Ok(Some(Arc::new(crate::tools::web_fetch::WebFetchTool::new(
        Arc::new(fetcher),
        config.tools.limits(),
    ))))
}

/// The subagent tool, when it is wanted: named in `--tools`, or (without `--tools`) whenever
/// agent definitions exist beside the built-in one. `--no-tools` and `-nbt` leave it out.
fn task_tool(
    options: &Options,
    agent_dir: Option<&Path>,
    parts: impl FnOnce(
        Arc<Vec<crate::subagent::definitions::Definition>>,
    ) -> crate::subagent::tool::TaskParts,
    warnings: &mut Vec<String>,
) -> Option<Arc<crate::subagent::tool::TaskTool>> {
    use crate::subagent::definitions::{Places, discover};
    if options.no_tools || options.no_builtin_tools {
        return None;
    }
    let (definitions, problems) = discover(&Places {
        agent_dir: agent_dir.map(Path::to_path_buf),
        home: crate::paths::home(),
        cwd: options.cwd.clone(),
    });
    let wanted = match &options.tools {
        Some(_) => names_tool(options, "task"),
        None => definitions.len() > 1,
    };
    if !wanted {
        return None;
    }
    warnings.extend(problems);
    Some(Arc::new(crate::subagent::tool::TaskTool::new(parts(
        Arc::new(definitions),
    ))))
}

/// Start the MCP servers in the background (none with `--no-tools`). As each becomes ready
/// (or stops), the agent's tool set becomes the built-in tools plus every MCP tool offered;
/// the loop reads it before each model call. With checkpoints on, what an MCP tool changes in
/// the working folder is recorded like a `bash` call's, unless its server marks it read-only.
#[allow(clippy::too_many_arguments)]
fn start_mcp(
    options: &Options,
    agent: &Agent,
    base: Vec<Arc<dyn AgentTool>>,
    servers: Vec<crate::mcp::ServerConfig>,
    vars: Vec<(OsString, OsString)>,
    limits: crate::tools::ToolLimits,
    secrets: Secrets,
    checkpoints: Option<Arc<crate::checkpoint::tracker::Tracker>>,
) -> Option<crate::mcp::McpManager> {
    if options.no_tools || servers.is_empty() {
        return None;
    }
    let agent = agent.clone();
    let on_tools: crate::mcp::manager::ToolsChanged = Arc::new(move |extra| {
        let recorded = extra.into_iter().map(|t| {
            let read_only = t.read_only();
            let tool = Guarded::wrap(t, secrets.clone());
            match &checkpoints {
                Some(c) if !read_only => crate::checkpoint::tool::wrap_scanned(tool, c),
                _ => tool,
            }
        });
        let all = base.iter().cloned().chain(recorded);
        let set = Arc::new(crate::agent::protocol::tool::ToolSet::new(all));
        agent.update_settings(|s| s.tools = set);
    });
    let env = options.env.clone();
    Some(crate::mcp::McpManager::start(
        servers,
        crate::mcp::manager::Environment {
            vars,
            lookup: Arc::new(move |k| env(k)),
            cwd: options.cwd.clone(),
            limits,
        },
        Some(on_tools),
    ))
}

/// Whether the intent argument is offered: on in config, and not switched off by the
/// environment.
fn intent_tracing(config: &Config, env: &EnvLookup) -> bool {
    config.intent_tracing.unwrap_or(false) && env(NO_INTENT_ENV).is_none_or(|v| v.trim() != "1")
}

/// Where to look for prompt templates or skills: `flags` and `settings` (their paths taken
/// from the working folder, `~` allowed) and, unless `no_discovery`, the usual folders.
fn places(
    options: &Options,
    agent_dir: Option<&Path>,
    flags: &[PathBuf],
    settings: Option<&Vec<String>>,
    no_discovery: bool,
) -> crate::config::found::Places {
    let resolve = |p: &str| crate::attach::resolve(&options.cwd, p);
    crate::config::found::Places {
        agent_dir: agent_dir.map(Path::to_path_buf),
        home: crate::paths::home(),
        cwd: options.cwd.clone(),
        flags: flags
            .iter()
            .map(|p| resolve(&p.to_string_lossy()))
            .collect(),
        settings: settings.into_iter().flatten().map(|p| resolve(p)).collect(),
        no_discovery,
    }
}

/// The prompt templates of the flags, the project, the user, settings' `prompts` and Claude's
/// command folders; a file that cannot be read is a warning.
fn prompt_templates(
    options: &Options,
    config: &Config,
    agent_dir: Option<&Path>,
    warnings: &mut Vec<String>,
) -> Arc<Vec<crate::config::prompt_templates::PromptTemplate>> {
    let (found, problems) = crate::config::prompt_templates::discover(&places(
        options,
        agent_dir,
        &options.prompt_templates,
        config.prompts.as_ref(),
        options.no_prompt_templates,
    ));
    warnings.extend(problems);
    Arc::new(found)
}

/// The skills of `--skill`, the project, the user, settings' `skills` and Claude's skill
/// folders; each problem met is a warning.
fn skills(
    options: &Options,
    config: &Config,
    agent_dir: Option<&Path>,
    warnings: &mut Vec<String>,
) -> Arc<Vec<crate::config::skills::Skill>> {
    let (found, problems) = crate::config::skills::discover(&places(
        options,
        agent_dir,
        &options.skills,
        config.skills.as_ref(),
        options.no_skills,
    ));
    warnings.extend(problems);
    Arc::new(found)
}

/// The theme files of `--theme`, the project, the user and settings' `themes`, and the theme
/// to start with (the last `--theme`, a file's or a name, else config's `theme`).
fn themes(
    options: &Options,
    config: &Config,
    agent_dir: Option<&Path>,
    warnings: &mut Vec<String>,
) -> (Vec<crate::config::theme_files::ThemeFile>, Option<String>) {
    use crate::config::theme_files::{Places, discover};
    let resolve = |p: &str| crate::attach::resolve(&options.cwd, p);
    // A value naming something on disk (or a .json file) is a file to load; else a name.
    let is_path = |v: &str| v.ends_with(".json") || v.contains('/') || resolve(v).exists();
    let places = Places {
        agent_dir: agent_dir.map(Path::to_path_buf),
        cwd: options.cwd.clone(),
        flags: options
            .themes
            .iter()
            .filter(|v| is_path(v))
            .map(|v| resolve(v))
            .collect(),
        settings: config.themes.iter().flatten().map(|p| resolve(p)).collect(),
        no_discovery: options.no_themes,
    };
    let (found, problems) = discover(&places);
    warnings.extend(problems);
    let chosen = match options.themes.last() {
        Some(v) if is_path(v) => {
            let path = resolve(v);
            found
                .iter()
                .find(|t| t.path == path)
                .map(|t| t.name.clone())
                .or_else(|| config.theme.clone())
        }
        Some(name) => Some(name.clone()),
        None => config.theme.clone(),
    };
    (found, chosen)
}

/// Build everything and start the host.
#[allow(
    clippy::too_many_lines,
    reason = "the start-up sequence in order; its steps move out as the facade and protocol rework land"
)]
pub async fn start(options: Options) -> Result<Started, StartError> {
    let agent_dir = options.agent_dir();
    let (config, mut catalog, mut warnings) = load_config(
        agent_dir.as_deref(),
        &options.cwd,
        &options.env,
        options.trust_project,
        options.trusted_hash.as_deref(),
    )?;
    // What the tools' commands may see of the environment, and the secrets withheld from them
    // (masked in the session file should one ever appear in a message).
    let policy = EnvPolicy::new(
        &config.tools.env.exclude,
        &config.tools.env.include,
        keys::key_variables(catalog.providers()),
    )
    .map_err(|e| e.to_string())?;
    let vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let (mcp_servers, mcp_warnings) = crate::mcp::config::parse(&config.mcp_servers);
    warnings.extend(mcp_warnings);
    let secrets = known_secrets(&options, &policy, &catalog, &mcp_servers);
    let protected = protected_files(agent_dir.as_deref(), &options.cwd, &secrets);
    // Bad flags first: no point probing for a model to then refuse the tool list.
    let tool_env = policy.filter(vars);
    // `!command` in the editor runs through its own bash tool (whatever `--tools` says), and
    // outside the sandbox: the person's own commands are theirs to run.
    let shell = crate::tools::build_with(
        &["bash"],
        Arc::new(
            ToolContext::new(options.cwd.clone())
                .with_limits(config.tools.limits())
                .with_env(tool_env.clone())
                .with_process_namespace(false),
        ),
    )
    .map_err(|e| e.to_string())?
    .into_iter()
    .next()
    .map(|t| Guarded::wrap(t, secrets.clone()));
    let sandbox = sandbox(&options, &config);
    warnings.extend(sandbox.startup_warning());
    let sandbox_line = sandbox.describe();
    let mcp_env = tool_env.clone();
    let (hooks, hook_warnings) = crate::hooks::Hooks::from_config(
        &config.hooks,
        crate::hooks::RunContext {
            cwd: options.cwd.clone(),
            env: tool_env.clone(),
        },
    );
    warnings.extend(hook_warnings);
    let hooks = (!hooks.is_empty()).then(|| Arc::new(hooks));
    let mut built = active_tools(&options, &config, tool_env, sandbox, protected)?;
    built.extend(web_tool(&options, &config)?);
    let mut tools = guard_all(built, &secrets);
    let paths = session_paths(&options, &config);
    if paths.is_none() && options.session != SessionChoice::NotSaved {
        warnings.push("no home folder, so this session is not saved".into());
    }
    let (checkpoints, checkpoint_notices) = checkpoints(&options, &config, paths.as_ref());
    if let Some(t) = &checkpoints {
        tools = crate::checkpoint::tool::wrap_all(tools, t);
    }
    let opened = match &paths {
        Some(paths) => {
            let from = match &options.session {
                SessionChoice::New | SessionChoice::NotSaved => StartFrom::New,
                SessionChoice::Continue => StartFrom::Continue,
                SessionChoice::Open(q) => StartFrom::Session(q),
                SessionChoice::Fork(q) => StartFrom::Fork(q),
                SessionChoice::File(p) => StartFrom::File(p),
            };
            let opened = if options.read_only {
                session::open_session(paths, &options.cwd, from)
            } else {
                // Locked before it is read (`Locked` when another pi writes it).
                session::open_session_to_write(paths, &options.cwd, from)
            };
            let opened = opened.map_err(open_failed)?;
            if !options.read_only {
                // Refuse now rather than lose the conversation later.
                opened.recorder.check_writable().map_err(|e| {
                    format!(
                        "{e}\nsessions cannot be saved there: choose another folder with \
                         --session-dir (or session_dir in the config), or run with --no-session"
                    )
                })?;
            }
            warnings.extend(opened.warnings.iter().map(ToString::to_string));
            Some(opened)
        }
        None => None,
    };

    // The models Ctrl+P cycles through; `--models` without `--model` also starts on the first.
    let patterns = options
        .scoped_models
        .clone()
        .or_else(|| config.enabled_models.clone())
        .unwrap_or_default();
    let (scoped_models, scope_warnings) = patterns::scope(&patterns, &catalog);
    warnings.extend(scope_warnings);
    // A resumed session keeps its model and level unless the flags name others.
    let mut flags = options.model.clone();
    if let Some(o) = opened.as_ref().filter(|o| o.resumed) {
        if flags.model.is_none()
            && let Some(m) = &o.context.model
        {
            flags.model = Some(format!("{}/{}", m.provider, m.model_id));
            flags.provider = None;
        }
        if flags.thinking.is_none()
            && let Some(t) = o.context.thinking_level
        {
            flags.thinking = Some(t.as_str().to_string());
        }
    }
    if options.scoped_models.is_some()
        && flags.model.is_none()
        && let Some((first, level)) = scoped_models.first()
    {
        flags.model = Some(format!("{}/{}", first.provider, first.id));
        flags.provider = None;
        if flags.thinking.is_none() {
            flags.thinking = level.map(|l| l.as_str().to_string());
        }
    }
    let selection = select::select(&flags, &config, &mut catalog, &options.env).await?;
    warnings.extend(selection.warnings.iter().cloned());

    let signed_in: Vec<String> = catalog
        .providers()
        .iter()
        .filter(|p| p.signed_in)
        .map(|p| p.id.clone())
        .collect();
    let providers_without_key: Vec<String> = catalog
        .providers()
        .iter()
        .filter(|p| !keys::has_key(p, options.api_key.as_deref(), &|k| (options.env)(k)))
        .map(|p| p.id.clone())
        .collect();
    let key_providers: Vec<(String, Option<String>)> = catalog
        .providers()
        .iter()
        .filter(|p| !p.keyless)
        .filter(|p| {
            crate::provider::subscription::Kind::from_provider(&p.id)
                .is_none_or(|k| !k.subscription_only())
        })
        .map(|p| (p.id.clone(), p.key_env.clone()))
        .collect();
    let catalog = Arc::new(catalog);
    let session_slot = Arc::new(crate::subagent::SessionSlot::default());
    let task = task_tool(
        &options,
        agent_dir.as_deref(),
        |definitions| crate::subagent::tool::TaskParts {
            definitions,
            catalog: catalog.clone(),
            session: session_slot.clone(),
            hooks: hooks.clone(),
            secrets: secrets.clone(),
            cwd: options.cwd.clone(),
        },
        &mut warnings,
    );
    if let Some(t) = &task {
        let t: Arc<dyn AgentTool> = t.clone();
        tools.extend(match &checkpoints {
            Some(c) => crate::checkpoint::tool::wrap_all(vec![t], c),
            None => vec![t],
        });
    }
    let mut providers = Providers::new(
        catalog.clone(),
        options.api_key.clone(),
        options.env.clone(),
    )
    .with_secrets(secrets.clone())
    .with_subscriptions(Arc::new(
        crate::provider::subscription::Subscriptions::load(
            agent_dir.clone(),
            options.env.clone(),
            secrets.clone(),
        ),
    ));
    if let Some(secs) = config.idle_timeout_secs {
        providers = providers.with_idle_timeout(Duration::from_secs(secs.max(1)));
    }
    if config.web_search == Some(true) {
        providers = providers.with_web_search(true);
        if !crate::provider::has_web_search(selection.model.api) {
            warnings.push(host::web_search_unavailable(&selection.model));
        }
    }
    if let Some(secs) = config.response_timeout_secs {
        providers = providers.with_response_timeout(Duration::from_secs(secs.max(1)));
    }
    let gate = approval_gate::gate(
        options.approval.as_deref(),
        &config,
        Arc::new(ToolContext::new(options.cwd.clone())),
        agent_dir.clone(),
        &mut warnings,
    )?;
    let skills = skills(&options, &config, agent_dir.as_deref(), &mut warnings);
    let skill_commands = config.enable_skill_commands != Some(false);
    let system_prompt = system_prompt(&options, &tools, &skills);
    let providers = Arc::new(providers);
    let mut dialect_settings = DialectSettings::from_sources(
        options.dialect.as_deref(),
        (options.env)(DIALECT_ENV).as_deref(),
        config.dialect.as_deref(),
        &config.model_dialects(),
    )?;
    dialect_settings.drain_fabricated = config.abort_on_fabricated_tool_result == Some(false);
    let dialects = DialectProvider::new(providers.clone(), catalog.clone(), dialect_settings);
    // One stream of notices for the front end: the dialects' and the hooks'.
    let (notice_tx, notices) = tokio::sync::mpsc::unbounded_channel();
    let mut dialect_notices = dialects.notices();
    let forward = notice_tx.clone();
    tokio::spawn(async move {
        while let Some(n) = dialect_notices.recv().await {
            if forward.send(n).is_err() {
                break;
            }
        }
    });
    if let Some(mut from_checkpoints) = checkpoint_notices {
        let forward = notice_tx.clone();
        tokio::spawn(async move {
            while let Some(n) = from_checkpoints.recv().await {
                if forward.send(n).is_err() {
                    break;
                }
            }
        });
    }
    if let Some(h) = &hooks {
        h.set_notices(notice_tx);
        h.set_permission_mode(gate.mode());
    }
    let base_tools = tools.clone();
    let mut settings =
        AgentSettings::new(Arc::new(dialects), selection.model.to_model()).with_tools(tools);
    settings.thinking = selection.thinking;
    settings.system_prompt = system_prompt;
    settings.retry = retry_policy(&config);
    if let Some(n) = config.max_repeated_tool_turns {
        settings.max_repeated_tool_turns = (n > 0).then_some(n);
    }
    settings.compaction = Some(config.compaction.settings());
    settings.steering_mode = config::queue_mode(config.steering_mode.as_deref(), "steering_mode")?;
    settings.follow_up_mode =
        config::queue_mode(config.follow_up_mode.as_deref(), "follow_up_mode")?;
    settings.intent_tracing = intent_tracing(&config, &options.env);
    // Every provider caches by prefix: keep what was sent byte-identical turn to turn.
    settings.append_only = true;
    settings.hooks = match &hooks {
        Some(h) => Arc::new(crate::hooks::gate::HookedGate::new(gate.clone(), h.clone())),
        None => Arc::new(crate::approval::gate::GateHooks(gate.clone())),
    };
    let agent = Agent::new(settings);
    if let Some(t) = &task {
        t.attach(&agent);
    }
    let mcp = start_mcp(
        &options,
        &agent,
        base_tools,
        mcp_servers,
        mcp_env,
        config.tools.limits(),
        secrets.clone(),
        checkpoints.clone(),
    );

    let mut messages = Vec::new();
    let mut session_name = None;
    let mut recorder = None;
    let mut session_id = session::ids::uuid_v7();
    if let Some(mut opened) = opened {
        if opened.resumed {
            session_name = session::session_info(opened.recorder.path()).and_then(|i| i.name);
        }
        let opened_with = std::mem::take(&mut opened.context.messages);
        if options.shows_history {
            messages = opened_with.clone();
        }
        if !opened_with.is_empty() {
            agent
                .replace_messages(opened_with)
                .map_err(|e| e.to_string())?;
        }
        session_id = opened.recorder.session_id().to_string();
        if options.read_only {
            opened.recorder.abandon();
            warnings.push(
                "read-only: this session is shown as it was; nothing from this run is saved".into(),
            );
        } else {
            opened
                .recorder
                .set_model(&selection.model.provider, &selection.model.id);
            opened.recorder.set_thinking_level(selection.thinking);
            recorder = Some(opened.recorder);
        }
    }
    let saving = recorder.is_some();
    let session_file = recorder.as_ref().map(|r| r.path().to_path_buf());
    let templates = prompt_templates(&options, &config, agent_dir.as_deref(), &mut warnings);
    let (themes, theme) = themes(&options, &config, agent_dir.as_deref(), &mut warnings);
    if !options.extensions.is_empty() {
        warnings.push(format!(
            "--extension: {}",
            crate::config::node::settings::extensions_notice(&options.extensions)
        ));
    }
    let client = host::spawn(HostParts {
        agent,
        recorder,
        paths,
        cwd: options.cwd.clone(),
        catalog: catalog.clone(),
        model: selection.model.clone(),
        thinking: selection.thinking,
        session_id: session_id.clone(),
        session_name: session_name.clone(),
        live_updates: options.live_updates,
        secrets,
        shell,
        mcp,
        login: Some(host::login::LoginParts {
            providers,
            agent_dir: agent_dir.clone(),
            env: options.env.clone(),
        }),
        approval: gate.clone(),
        asks_person: options.asks_person,
        notices: Some(notices),
        hooks,
        session_slot: Some(session_slot),
        ends_process: options.ends_process,
        checkpoints,
        plan: options.plan,
        web_search: config.web_search == Some(true),
        remember_in: agent_dir.as_ref().map(|d| d.join("settings.json")),
        templates: templates.clone(),
        skills: if skill_commands {
            skills.clone()
        } else {
            Arc::default()
        },
    });
    Ok(Started {
        client,
        info: StartInfo {
            config,
            model: selection.model,
            thinking: selection.thinking,
            models: catalog.models().to_vec(),
            catalog: catalog.clone(),
            scoped_models,
            providers_without_key,
            signed_in,
            key_providers,
            no_model: selection.missing.then(|| select::NO_MODEL_HELP.to_string()),
            session_id,
            session_name,
            session_file,
            approval: gate.mode(),
            plan: options.plan,
            saving,
            messages,
            sandbox: sandbox_line,
            warnings,
            templates,
            skills,
            skill_commands,
            themes,
            theme,
            cwd: options.cwd,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> EnvLookup {
        Arc::new(move |k| {
            pairs
                .iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn the_sandbox_flag_wins_over_config_and_off_is_the_default() {
        let mut options = Options::new(PathBuf::from("/"), env(&[]));
        let mut config = Config::default();
        assert_eq!(sandbox(&options, &config).mode(), SandboxMode::Off);
        config.sandbox = Some(SandboxMode::ReadOnly);
        assert_eq!(sandbox(&options, &config).mode(), SandboxMode::ReadOnly);
        options.sandbox = Some(SandboxMode::WorkspaceWrite);
        assert_eq!(
            sandbox(&options, &config).mode(),
            SandboxMode::WorkspaceWrite
        );
        options.sandbox = Some(SandboxMode::Off);
        assert_eq!(sandbox(&options, &config).mode(), SandboxMode::Off);
        config.sandbox_fallback = Some(crate::tools::sandbox::Fallback::Warn);
        options.sandbox = None;
        assert_eq!(
            sandbox(&options, &config).fallback(),
            crate::tools::sandbox::Fallback::Warn
        );
    }

    #[test]
    fn pi_no_intent_switches_the_intent_argument_off() {
        let mut config = Config::default();
        assert!(!intent_tracing(&config, &env(&[])), "off unless configured");
        config.intent_tracing = Some(true);
        assert!(intent_tracing(&config, &env(&[])));
        assert!(intent_tracing(&config, &env(&[(NO_INTENT_ENV, "0")])));
        assert!(!intent_tracing(&config, &env(&[(NO_INTENT_ENV, "1")])));
        assert!(!intent_tracing(&config, &env(&[(NO_INTENT_ENV, " 1 ")])));
    }
}
