//! The approval gate: the loop's `before_tool_call` hook that applies the mode and the rules,
//! and asks the person when it must.
//!
//! Asking goes through a notifier the host installs ([`Gate::set_asker`]): the gate hands it
//! an [`ApprovalRequest`] and waits for [`Gate::answer`] with the same id, or for the run's
//! abort. Without a notifier (print and RPC mode) there is nobody to ask, and `ask` refuses
//! what no rule allows, saying how to allow it. Requests are asked one at a time, in call
//! order (the loop prepares a batch's calls one after another).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::oneshot;

use super::protected;
use super::rules::{Rules, Verdict, relative_path};
use super::scope::{self, Remember};
use super::{ApprovalMode, ApprovalRequest, Decision, may_change};
use crate::agent::protocol::abort::AbortSignal;
use crate::agent::protocol::hooks::{BeforeToolCall, LoopHooks};
use crate::agent::protocol::types::{AssistantMessage, ToolCall};
use crate::sync::lock;
use crate::tools::ToolContext;
use crate::tools::preview::change_preview;

/// Hands a request to whoever can answer it.
pub(crate) type Asker = Arc<dyn Fn(ApprovalRequest) + Send + Sync>;

/// The longest MCP argument text shown in a request.
const MAX_DETAIL_CHARS: usize = 4000;

/// What "allow for this session" has allowed so far.
#[derive(Default)]
struct Remembered {
    /// Whole tools (every call of them).
    tools: HashSet<String>,
    /// `bash` command prefixes (`git status`, `cargo test`, `python3 x.py`).
    prefixes: HashSet<String>,
    /// `bash` command lines allowed again only as they are (`bash -c '…'`).
    exact: HashSet<String>,
}

pub struct Gate {
    mode: Mutex<ApprovalMode>,
    /// The agent folder, whose files `write` and `edit` change only with a yes
    /// ([`protected`]).
    agent_dir: Option<PathBuf>,
    rules: Rules,
    /// More `allow` rules for the current run only (a custom command's `allowed-tools`).
    run_allow: Mutex<Option<Rules>>,
    ctx: Arc<ToolContext>,
    remembered: Mutex<Remembered>,
    asker: OnceLock<Asker>,
    waiting: Mutex<HashMap<u64, oneshot::Sender<Decision>>>,
    next_id: AtomicU64,
    /// Plan mode: calls that can change things are refused whatever the mode (allow rules
    /// still let some through, as in read-only).
    planning: std::sync::atomic::AtomicBool,
}

impl Gate {
    pub fn new(mode: ApprovalMode, rules: Rules, ctx: Arc<ToolContext>) -> Self {
        Gate {
            mode: Mutex::new(mode),
            agent_dir: None,
            rules,
            run_allow: Mutex::new(None),
            ctx,
            remembered: Mutex::new(Remembered::default()),
            asker: OnceLock::new(),
            waiting: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            planning: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Guard the agent folder's files too (the person's config, keys, trust store).
    pub(crate) fn with_agent_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.agent_dir = dir;
        self
    }

    /// The file a `write` or `edit` call would change, as shown to the person, when it is one
    /// that decides what pi trusts.
    fn guarded_target(&self, tool: &str, args: &Value) -> Option<String> {
        if tool != "write" && tool != "edit" {
            return None;
        }
        let raw = args.get("path").and_then(Value::as_str)?;
        let path = self.ctx.resolve_existing(raw).ok()?;
        protected::is_guarded(&path, self.agent_dir.as_deref())
            .then(|| relative_path(raw, self.ctx.cwd()))
    }

    /// Let `asker` put requests to the person (once; later calls are ignored).
    pub(crate) fn set_asker(&self, asker: Asker) {
        let _ = self.asker.set(asker);
    }

    pub fn mode(&self) -> ApprovalMode {
        *lock(&self.mode)
    }

    /// Allow what `rules` allow until [`Gate::end_run_allowances`] (deny rules, read-only
    /// mode and the files that decide trust still refuse or ask).
    pub(crate) fn allow_for_run(&self, rules: Rules) {
        *lock(&self.run_allow) = Some(rules);
    }

    pub(crate) fn end_run_allowances(&self) {
        *lock(&self.run_allow) = None;
    }

    /// Enter (`true`) or leave plan mode.
    pub(crate) fn set_planning(&self, on: bool) {
        self.planning
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn planning(&self) -> bool {
        self.planning.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(crate) fn set_mode(&self, mode: ApprovalMode) {
        *lock(&self.mode) = mode;
    }

    /// The person's answer to request `id`; false when nothing waits for it (answered already,
    /// or its run was aborted).
    pub(crate) fn answer(&self, id: u64, decision: Decision) -> bool {
        match lock(&self.waiting).remove(&id) {
            Some(tx) => tx.send(decision).is_ok(),
            None => false,
        }
    }

    /// The decision for one call, asking if the mode says so.
    pub(crate) async fn decide(
        &self,
        tool: &str,
        args: &Value,
        signal: &AbortSignal,
    ) -> BeforeToolCall {
        self.decide_hinted(tool, args, signal, None).await
    }

    /// The decision for one call with a hook's word on it: `Allow` skips asking the person
    /// (deny rules, read-only mode and the files that decide trust still refuse or ask), `Ask`
    /// asks even where the mode would not.
    pub(crate) async fn decide_hinted(
        &self,
        tool: &str,
        args: &Value,
        signal: &AbortSignal,
        hint: Option<crate::hooks::Permission>,
    ) -> BeforeToolCall {
        use crate::hooks::Permission;
        let verdict = self.rules.check(tool, args, self.ctx.cwd());
        if let Verdict::Denied(rule) = &verdict {
            return BeforeToolCall::Block(Some(format!(
                "Not run: the approval rule `deny = \"{rule}\"` in pi's config refuses this \
                 {tool} call. Do something else, or ask the person."
            )));
        }
        if self.planning() && may_change(tool) && verdict != Verdict::Allowed {
            return BeforeToolCall::Block(Some(format!(
                "Not run: pi is in plan mode, where only reading tools run ({tool} changes \
                 files or runs commands). Finish the plan with read, grep, find and ls; the \
                 person switches to acting when they accept it."
            )));
        }
        // Files that decide what pi trusts: asked about in every mode, allow rules and
        // "allow for this session" notwithstanding.
        if let Some(file) = self.guarded_target(tool, args) {
            return match self.mode() {
                ApprovalMode::ReadOnly => read_only_refusal(tool),
                ApprovalMode::Auto | ApprovalMode::Ask => {
                    self.ask(tool, args, signal, Some(&file)).await
                }
            };
        }
        if self.mode() != ApprovalMode::ReadOnly && hint == Some(Permission::Ask) {
            return self.ask(tool, args, signal, None).await;
        }
        let run_allows = lock(&self.run_allow)
            .as_ref()
            .is_some_and(|r| r.check(tool, args, self.ctx.cwd()) == Verdict::Allowed);
        if verdict == Verdict::Allowed || !may_change(tool) {
            return BeforeToolCall::Proceed;
        }
        if run_allows && self.mode() != ApprovalMode::ReadOnly {
            return BeforeToolCall::Proceed;
        }
        match self.mode() {
            ApprovalMode::Ask if hint == Some(Permission::Allow) => BeforeToolCall::Proceed,
            ApprovalMode::Auto => BeforeToolCall::Proceed,
            ApprovalMode::ReadOnly => read_only_refusal(tool),
            ApprovalMode::Ask if self.remembers(tool, args) => BeforeToolCall::Proceed,
            ApprovalMode::Ask => self.ask(tool, args, signal, None).await,
        }
    }

    fn remembers(&self, tool: &str, args: &Value) -> bool {
        let r = lock(&self.remembered);
        if r.tools.contains(tool) {
            return true;
        }
        if tool != "bash" {
            return false;
        }
        bash_command(args).is_some_and(|c| scope::covered(c, &r.exact, &r.prefixes))
    }

    fn remember(&self, tool: &str, args: &Value) {
        let mut r = lock(&self.remembered);
        if tool == "bash" {
            match scope::of_command(bash_command(args).unwrap_or("")) {
                Remember::Prefixes(p) => r.prefixes.extend(p),
                Remember::Exact(line) => {
                    r.exact.insert(line);
                }
            }
        } else {
            r.tools.insert(tool.to_string());
        }
    }

    /// Put the call to the person; `guarded` names a file that decides what pi trusts (then
    /// the answer covers this call only).
    async fn ask(
        &self,
        tool: &str,
        args: &Value,
        signal: &AbortSignal,
        guarded: Option<&str>,
    ) -> BeforeToolCall {
        let asker = self.asker.get().cloned();
        if let (None, Some(file)) = (&asker, guarded) {
            return BeforeToolCall::Block(Some(format!(
                "Not run: {file} decides what pi trusts in a folder (commands it may run, where \
                 it sends keys), so {tool} may create or change it only when the person says \
                 yes, and nobody can answer here (print or RPC mode). Tell the person what you \
                 would change and let them make the change."
            )));
        }
        let Some(asker) = asker else {
            return BeforeToolCall::Block(Some(format!(
                "Not run: pi is in `ask` approval mode and runs without a person to ask (print \
                 or RPC mode), so this {tool} call was refused. An `[approval] allow` rule in \
                 config, or `--approval auto`, lets such calls run."
            )));
        };
        let mut request = self.request(tool, args).await;
        if guarded.is_some() {
            request.session_scope =
                "this call only (the file decides what pi trusts, so each change is asked)".into();
        }
        let id = request.id;
        let (tx, rx) = oneshot::channel();
        lock(&self.waiting).insert(id, tx);
        asker(request);
        let decision = tokio::select! {
            d = rx => d.ok(),
            _ = signal.cancelled() => None,
        };
        lock(&self.waiting).remove(&id);
        match decision {
            Some(Decision::Once) => BeforeToolCall::Proceed,
            Some(Decision::Session) => {
                if guarded.is_none() {
                    self.remember(tool, args);
                }
                BeforeToolCall::Proceed
            }
            Some(Decision::Refuse(reason)) => {
                let mut text =
                    format!("The person did not allow this {tool} call; it was not run.");
                if let Some(r) = reason
                    .map(|r| r.trim().to_string())
                    .filter(|r| !r.is_empty())
                {
                    text.push_str(&format!(" Their reason: {r}"));
                }
                BeforeToolCall::Block(Some(text))
            }
            None => BeforeToolCall::Block(Some(format!(
                "Not run: the {tool} call was still waiting for approval when the run stopped."
            ))),
        }
    }

    async fn request(&self, tool: &str, args: &Value) -> ApprovalRequest {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let cwd = self.ctx.cwd();
        let (subject, session_scope) = if tool == "bash" {
            let c = scope::trimmed(bash_command(args).unwrap_or("")).to_string();
            let scope = scope::of_command(&c).describe();
            (c, scope)
        } else if let Some(p) = args.get("path").and_then(Value::as_str) {
            (relative_path(p, cwd), format!("every {tool} call"))
        } else {
            (tool.to_string(), format!("every {tool} call"))
        };
        let detail = match tool {
            "edit" | "write" => {
                let ctx = self.ctx.clone();
                let (t, a) = (tool.to_string(), args.clone());
                tokio::task::spawn_blocking(move || change_preview(&ctx, &t, &a))
                    .await
                    .ok()
                    .flatten()
            }
            "bash" => None,
            _ => serde_json::to_string_pretty(args)
                .ok()
                .map(|t| cut(&t, MAX_DETAIL_CHARS)),
        };
        ApprovalRequest {
            id,
            tool: tool.to_string(),
            subject,
            detail,
            session_scope,
        }
    }
}

fn read_only_refusal(tool: &str) -> BeforeToolCall {
    BeforeToolCall::Block(Some(format!(
        "Not run: pi is in read-only mode, where tools that can change files or run commands \
         ({tool} among them) are refused. Use read, grep, find and ls, or ask the person to \
         change the mode."
    )))
}

fn bash_command(args: &Value) -> Option<&str> {
    args.get("command").and_then(Value::as_str)
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The gate as the loop's hooks (only `before_tool_call`; everything else is neutral).
pub struct GateHooks(pub Arc<Gate>);

#[async_trait]
impl LoopHooks for GateHooks {
    async fn before_tool_call(
        &self,
        _assistant: &AssistantMessage,
        call: &ToolCall,
        args: &mut Value,
        signal: &AbortSignal,
    ) -> Result<BeforeToolCall, String> {
        Ok(self.0.decide(&call.name, args, signal).await)
    }
}

/// Where a session's files live, for tests of the gate.
#[cfg(test)]
fn temp_ctx() -> (tempfile::TempDir, Arc<ToolContext>) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let ctx = Arc::new(ToolContext::new(dir.path()));
    (dir, ctx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn blocked(d: &BeforeToolCall) -> &str {
        match d {
            BeforeToolCall::Block(Some(t)) => t,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    fn gate(mode: ApprovalMode, allow: &[&str], deny: &[&str]) -> (tempfile::TempDir, Arc<Gate>) {
        let (dir, ctx) = temp_ctx();
        let s = |l: &[&str]| l.iter().map(ToString::to_string).collect::<Vec<_>>();
        let (rules, _) = Rules::new(&s(allow), &s(deny));
        (dir, Arc::new(Gate::new(mode, rules, ctx)))
    }

    #[tokio::test]
    async fn plan_mode_refuses_changes_in_any_mode_but_lets_reading_and_allowed_calls_run() {
        let signal = AbortSignal::new();
        let (_d, g) = gate(ApprovalMode::Auto, &["bash:git log*"], &[]);
        g.set_planning(true);
        let why = g
            .decide("write", &json!({"path": "a", "content": "x"}), &signal)
            .await;
        assert!(blocked(&why).contains("plan mode"), "{why:?}");
        assert!(
            blocked(&g.decide("bash", &json!({"command": "make"}), &signal).await)
                .contains("plan mode")
        );
        for (tool, args) in [
            ("read", json!({"path": "a"})),
            ("grep", json!({"pattern": "x"})),
            ("task", json!({"prompt": "look"})),
            ("bash", json!({"command": "git log -3"})),
        ] {
            assert_eq!(
                g.decide(tool, &args, &signal).await,
                BeforeToolCall::Proceed,
                "{tool}"
            );
        }
        g.set_planning(false);
        assert_eq!(
            g.decide("bash", &json!({"command": "make"}), &signal).await,
            BeforeToolCall::Proceed
        );
    }

    #[tokio::test]
    async fn modes_without_a_person_to_ask() {
        let signal = AbortSignal::new();
        let ls = json!({"command": "ls"});
        let (_d, g) = gate(ApprovalMode::Auto, &[], &["bash:rm *"]);
        assert_eq!(
            g.decide("bash", &ls, &signal).await,
            BeforeToolCall::Proceed
        );
        let rm = g.decide("bash", &json!({"command": "rm x"}), &signal).await;
        assert!(blocked(&rm).contains("bash:rm *"));
        g.set_mode(ApprovalMode::ReadOnly);
        assert!(blocked(&g.decide("bash", &ls, &signal).await).contains("read-only"));
        assert_eq!(
            g.decide("read", &json!({"path": "a"}), &signal).await,
            BeforeToolCall::Proceed
        );
        g.set_mode(ApprovalMode::Ask);
        let why = g.decide("edit", &json!({"path": "a"}), &signal).await;
        assert!(blocked(&why).contains("without a person to ask"), "{why:?}");
        assert!(blocked(&g.decide("mcp__x__y", &json!({}), &signal).await).contains("mcp__x__y"));
        let (_d, g) = gate(ApprovalMode::ReadOnly, &["bash:git status*"], &[]);
        assert_eq!(
            g.decide("bash", &json!({"command": "git status"}), &signal)
                .await,
            BeforeToolCall::Proceed,
            "an allow rule lets a call through even in read-only"
        );
    }

    /// A person who answers every request with `answer`, keeping what they were shown.
    fn person(g: &Arc<Gate>, answer: Decision) -> Arc<Mutex<Vec<ApprovalRequest>>> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (g2, seen2) = (Arc::downgrade(g), seen.clone());
        g.set_asker(Arc::new(move |r: ApprovalRequest| {
            lock(&seen2).push(r.clone());
            if let Some(g) = g2.upgrade() {
                let answer = answer.clone();
                tokio::spawn(async move {
                    g.answer(r.id, answer);
                });
            }
        }));
        seen
    }

    #[tokio::test]
    async fn asking_once_for_the_session_and_refusing_with_a_reason() {
        let signal = AbortSignal::new();
        let (_d, g) = gate(ApprovalMode::Ask, &[], &[]);
        let seen = person(&g, Decision::Session);
        let st = json!({"command": "git status -s"});
        assert_eq!(
            g.decide("bash", &st, &signal).await,
            BeforeToolCall::Proceed
        );
        assert_eq!(
            g.decide("bash", &json!({"command": "git status"}), &signal)
                .await,
            BeforeToolCall::Proceed
        );
        assert_eq!(lock(&seen).len(), 1, "the prefix was remembered");
        assert!(lock(&seen)[0].session_scope.contains("`git status`"));
        let (_d, g) = gate(ApprovalMode::Ask, &[], &[]);
        let seen = person(&g, Decision::Refuse(Some("use the test script".into())));
        std::fs::write(g.ctx.cwd().join("a.txt"), "old\n").unwrap();
        let d = g
            .decide(
                "edit",
                &json!({"path": "a.txt", "oldText": "old", "newText": "new"}),
                &signal,
            )
            .await;
        assert!(blocked(&d).contains("use the test script"), "{d:?}");
        let shown = lock(&seen)[0].clone();
        assert_eq!(shown.subject, "a.txt");
        assert!(shown.detail.unwrap().contains("+new"));
    }

    #[tokio::test]
    async fn trust_files_are_asked_about_in_every_mode_and_refused_without_a_person() {
        let signal = AbortSignal::new();
        let write = json!({"path": "sub/../.pi/config.toml", "content": "x"});
        let (_d, g) = gate(ApprovalMode::Auto, &["write", "edit"], &[]);
        let why = g.decide("write", &write, &signal).await;
        assert!(
            blocked(&why).contains(".pi/config.toml decides what pi trusts"),
            "{why:?}"
        );
        let edit = json!({"path": ".MCP.json", "oldText": "a", "newText": "b"});
        assert!(blocked(&g.decide("edit", &edit, &signal).await).contains("nobody can answer"));
        assert_eq!(
            g.decide(
                "write",
                &json!({"path": "src/a.rs", "content": ""}),
                &signal
            )
            .await,
            BeforeToolCall::Proceed
        );
        // With a person, auto asks; "for the session" still covers this call only.
        let seen = person(&g, Decision::Session);
        assert_eq!(
            g.decide("write", &write, &signal).await,
            BeforeToolCall::Proceed
        );
        assert_eq!(
            g.decide("write", &write, &signal).await,
            BeforeToolCall::Proceed
        );
        let seen = lock(&seen).clone();
        assert_eq!(seen.len(), 2, "asked each time");
        assert_eq!(seen[0].subject, ".pi/config.toml");
        assert!(seen[0].session_scope.contains("this call only"));
        // Read-only refuses as for any change.
        let (_d, g) = gate(ApprovalMode::ReadOnly, &["write"], &[]);
        assert!(blocked(&g.decide("write", &write, &signal).await).contains("read-only"));
        // The agent folder's files are guarded too.
        let (d, g) = gate(ApprovalMode::Auto, &[], &[]);
        let agent = d.path().join("agent");
        let g = Arc::new(
            Gate::new(ApprovalMode::Auto, Rules::new(&[], &[]).0, g.ctx.clone())
                .with_agent_dir(Some(agent.clone())),
        );
        let path = agent.join("config.toml").display().to_string();
        let why = g
            .decide("write", &json!({"path": path, "content": ""}), &signal)
            .await;
        assert!(blocked(&why).contains("decides what pi trusts"), "{why:?}");
    }

    #[tokio::test]
    async fn an_abort_while_asking_refuses_the_call() {
        let (_d, g) = gate(ApprovalMode::Ask, &[], &[]);
        let asked = Arc::new(tokio::sync::Notify::new());
        let a2 = asked.clone();
        g.set_asker(Arc::new(move |_| a2.notify_one()));
        let signal = AbortSignal::new();
        let (g2, s2) = (g.clone(), signal.clone());
        let run =
            tokio::spawn(async move { g2.decide("bash", &json!({"command": "make"}), &s2).await });
        asked.notified().await;
        signal.abort(crate::agent::protocol::abort::AbortReason::Requested);
        let d = run.await.unwrap();
        assert!(blocked(&d).contains("waiting for approval"));
        assert!(!g.answer(1, Decision::Once), "nothing waits any more");
    }
}
