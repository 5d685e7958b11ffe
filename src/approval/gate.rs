//! The approval gate: the loop's `before_tool_call` hook that applies the mode and the rules,
//! and asks the person when it must.
//!
//! Asking goes through a notifier the host installs ([`Gate::set_asker`]): the gate hands it
//! an [`ApprovalRequest`] and waits for [`Gate::answer`] with the same id, or for the run's
//! abort. Without a notifier (print and RPC mode) there is nobody to ask, and `ask` refuses
//! what no rule allows, saying how to allow it. Requests are asked one at a time, in call
//! order (the loop prepares a batch's calls one after another).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::oneshot;

use super::rules::{Rules, Verdict, relative_path};
use super::scope::{self, Remember};
use super::{ApprovalMode, ApprovalRequest, Decision, may_change};
use crate::agent::protocol::abort::AbortSignal;
use crate::agent::protocol::hooks::{BeforeToolCall, LoopHooks};
use crate::agent::protocol::types::{AssistantMessage, ToolCall};
use crate::tools::ToolContext;
use crate::tools::preview::change_preview;

/// Hands a request to whoever can answer it.
pub type Asker = Arc<dyn Fn(ApprovalRequest) + Send + Sync>;

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
    rules: Rules,
    ctx: Arc<ToolContext>,
    remembered: Mutex<Remembered>,
    asker: OnceLock<Asker>,
    waiting: Mutex<HashMap<u64, oneshot::Sender<Decision>>>,
    next_id: AtomicU64,
}

impl Gate {
    pub fn new(mode: ApprovalMode, rules: Rules, ctx: Arc<ToolContext>) -> Self {
        Gate {
            mode: Mutex::new(mode),
            rules,
            ctx,
            remembered: Mutex::new(Remembered::default()),
            asker: OnceLock::new(),
            waiting: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
        }
    }

    /// Let `asker` put requests to the person (once; later calls are ignored).
    pub fn set_asker(&self, asker: Asker) {
        let _ = self.asker.set(asker);
    }

    pub fn mode(&self) -> ApprovalMode {
        *lock(&self.mode)
    }

    pub fn set_mode(&self, mode: ApprovalMode) {
        *lock(&self.mode) = mode;
    }

    /// The person's answer to request `id`; false when nothing waits for it (answered already,
    /// or its run was aborted).
    pub fn answer(&self, id: u64, decision: Decision) -> bool {
        match lock(&self.waiting).remove(&id) {
            Some(tx) => tx.send(decision).is_ok(),
            None => false,
        }
    }

    /// The decision for one call, asking if the mode says so.
    pub async fn decide(&self, tool: &str, args: &Value, signal: &AbortSignal) -> BeforeToolCall {
        match self.rules.check(tool, args, self.ctx.cwd()) {
            Verdict::Denied(rule) => {
                return BeforeToolCall::Block(Some(format!(
                    "Not run: the approval rule `deny = \"{rule}\"` in pi's config refuses this \
                     {tool} call. Do something else, or ask the person."
                )));
            }
            Verdict::Allowed => return BeforeToolCall::Proceed,
            Verdict::Unmatched => {}
        }
        if !may_change(tool) {
            return BeforeToolCall::Proceed;
        }
        match self.mode() {
            ApprovalMode::Auto => BeforeToolCall::Proceed,
            ApprovalMode::ReadOnly => BeforeToolCall::Block(Some(format!(
                "Not run: pi is in read-only mode, where tools that can change files or run \
                 commands ({tool} among them) are refused. Use read, grep, find and ls, or ask \
                 the person to change the mode."
            ))),
            ApprovalMode::Ask if self.remembers(tool, args) => BeforeToolCall::Proceed,
            ApprovalMode::Ask => self.ask(tool, args, signal).await,
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

    async fn ask(&self, tool: &str, args: &Value, signal: &AbortSignal) -> BeforeToolCall {
        let Some(asker) = self.asker.get().cloned() else {
            return BeforeToolCall::Block(Some(format!(
                "Not run: pi is in `ask` approval mode and runs without a person to ask (print \
                 or RPC mode), so this {tool} call was refused. An `[approval] allow` rule in \
                 config, or `--approval auto`, lets such calls run."
            )));
        };
        let request = self.request(tool, args).await;
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
                self.remember(tool, args);
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

fn bash_command(args: &Value) -> Option<&str> {
    args.get("command").and_then(Value::as_str)
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
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
        let s = |l: &[&str]| l.iter().map(|r| r.to_string()).collect::<Vec<_>>();
        let (rules, _) = Rules::new(&s(allow), &s(deny));
        (dir, Arc::new(Gate::new(mode, rules, ctx)))
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
