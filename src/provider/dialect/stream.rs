//! [`DialectProvider`], the [`Provider`] the loop talks to: it wraps the real one and decides
//! per model which dialect (if any) a request uses — asked for by flag, environment or
//! config, or learned when a local server refuses native tools — and wraps the reply in the
//! [`Rewriter`] so calls written as text come out as tool calls.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub(crate) use super::rewriter::{Rewriter, rewrite_stream};
use super::{Dialect, by_name, encode_request, is_local_url};
use crate::agent::protocol::stream::{
    EventStream, Model, Provider, ProviderRequest, StreamEvent, ToolSpec,
};
use crate::agent::protocol::types::AssistantMessage;
use crate::provider::catalog::Catalog;

/// `none`/`off`, or a dialect by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Setting {
    Off,
    On(String),
}

/// Where dialects are asked for: the flag, `PI_DIALECT`, each model's `dialect` and the
/// global `dialect` key, in that order of precedence.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct DialectSettings {
    /// `--dialect`, else `PI_DIALECT`.
    pub forced: Option<Setting>,
    /// `provider/id` → the model's `dialect` key.
    pub per_model: HashMap<String, Setting>,
    pub global: Option<Setting>,
    /// When the model starts writing a tool result itself, read the request to its end and
    /// drop the rest of the reply instead of stopping the request there (config
    /// `abort_on_fabricated_tool_result = false`).
    pub drain_fabricated: bool,
}

impl DialectSettings {
    /// Read every source; an unknown dialect name is an error naming where it was written.
    pub(crate) fn from_sources(
        flag: Option<&str>,
        env: Option<&str>,
        global: Option<&str>,
        per_model: &[(String, String, String)],
    ) -> Result<Self, String> {
        let read =
            |v: &str, place: &str| super::parse_setting(v).map_err(|e| format!("{place}: {e}"));
        let forced = match (flag, env) {
            (Some(f), _) => Some(read(f, "--dialect")?),
            (None, Some(e)) => Some(read(e, "PI_DIALECT")?),
            (None, None) => None,
        };
        let global = global.map(|g| read(g, "config dialect")).transpose()?;
        let mut models = HashMap::new();
        for (provider, id, value) in per_model {
            let place = format!("config providers.{provider}.models `{id}` dialect");
            models.insert(format!("{provider}/{id}"), read(value, &place)?);
        }
        Ok(DialectSettings {
            forced,
            per_model: models,
            global,
            drain_fabricated: false,
        })
    }

    fn setting_for(&self, model: &Model) -> Option<&Setting> {
        self.forced
            .as_ref()
            .or_else(|| self.per_model.get(&model_key(model)))
            .or(self.global.as_ref())
    }
}

fn model_key(model: &Model) -> String {
    format!("{}/{}", model.provider, model.id)
}

struct Shared {
    inner: Arc<dyn Provider>,
    catalog: Arc<Catalog>,
    settings: DialectSettings,
    /// Models that refused native tools in this process, and the dialect they use since.
    learned: Mutex<HashMap<String, Arc<dyn Dialect>>>,
    notices: Mutex<Option<mpsc::UnboundedSender<String>>>,
    /// Models already told they write their calls as text (said once per model).
    told_in_band: Mutex<std::collections::HashSet<String>>,
}

/// The loop's provider: the real one, with a dialect where one is asked for or learned.
pub(crate) struct DialectProvider {
    shared: Arc<Shared>,
}

enum Choice {
    Use(Arc<dyn Dialect>),
    Native { auto: bool },
}

impl DialectProvider {
    pub(crate) fn new(
        inner: Arc<dyn Provider>,
        catalog: Arc<Catalog>,
        settings: DialectSettings,
    ) -> Self {
        DialectProvider {
            shared: Arc::new(Shared {
                inner,
                catalog,
                settings,
                learned: Mutex::new(HashMap::new()),
                notices: Mutex::new(None),
                told_in_band: Mutex::default(),
            }),
        }
    }

    /// Where notices go (the switch to a dialect when a model refuses tools). Each call
    /// replaces the previous receiver.
    pub(crate) fn notices(&self) -> mpsc::UnboundedReceiver<String> {
        let (tx, rx) = mpsc::unbounded_channel();
        *crate::sync::lock(&self.shared.notices) = Some(tx);
        rx
    }

    /// The dialect a model's requests use now (`None`: native tools).
    #[cfg(test)]
    pub(crate) fn dialect_for(&self, model: &Model) -> Option<&'static str> {
        match self.shared.choose(model) {
            Choice::Use(d) => Some(d.name()),
            Choice::Native { .. } => None,
        }
    }
}

impl Shared {
    fn choose(&self, model: &Model) -> Choice {
        match self.settings.setting_for(model) {
            Some(Setting::On(name)) => match by_name(name) {
                Some(d) => Choice::Use(d),
                None => Choice::Native { auto: false },
            },
            Some(Setting::Off) => Choice::Native { auto: false },
            None => {
                let learned = crate::sync::lock(&self.learned);
                if let Some(d) = learned.get(&model_key(model)) {
                    return Choice::Use(d.clone());
                }
                Choice::Native {
                    auto: self.is_local(model),
                }
            }
        }
    }

    fn is_local(&self, model: &Model) -> bool {
        self.catalog
            .resolve(&model.provider, &model.id)
            .is_ok_and(|(m, _)| is_local_url(&m.base_url))
    }

    fn notice(&self, text: String) {
        let tx = crate::sync::lock(&self.notices);
        if let Some(tx) = tx.as_ref() {
            let _ = tx.send(text);
        }
    }

    fn dialect_stream(
        &self,
        dialect: Arc<dyn Dialect>,
        request: ProviderRequest,
        cancel: CancellationToken,
    ) -> EventStream {
        let tools = request.context.tools.clone();
        let encoded = encode_request(&*dialect, &request);
        let child = cancel.child_token();
        let inner = self.inner.stream(encoded, child.clone());
        if tools.is_empty() {
            // Nothing to call: the text is left as it is.
            return inner;
        }
        let rewriter =
            Rewriter::new(dialect, tools, &request.model).draining(self.settings.drain_fabricated);
        rewrite_stream(rewriter, inner, child)
    }
}

/// Whether an error reply says the model or server does not take native tools.
pub(crate) fn refuses_tools(error: &AssistantMessage) -> bool {
    if !matches!(error.error_status, Some(400 | 404 | 422 | 500 | 501)) {
        return false;
    }
    let m = error
        .error_message
        .as_deref()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let about_tools = m.contains("tool") || m.contains("function call");
    let refusal = [
        "support",
        "not allowed",
        "unknown",
        "unrecognized",
        "not enabled",
        "requires",
        "jinja",
    ]
    .iter()
    .any(|w| m.contains(w));
    about_tools && refusal
}

impl Shared {
    /// Native tools were offered: if the reply comes back as a tool call written as text
    /// (nothing runs), say once for this model which dialect reads that form.
    fn watch_in_band(
        self: &Arc<Self>,
        tools: Vec<ToolSpec>,
        model: Model,
        stream: EventStream,
    ) -> EventStream {
        if tools.is_empty() {
            return stream;
        }
        let shared = self.clone();
        stream
            .inspect(move |event| {
                let Ok(StreamEvent::Done { message, .. }) = event else {
                    return;
                };
                if message.has_tool_calls() {
                    return;
                }
                let Some(dialect) = super::in_band::shape_of(&message.text(), &tools) else {
                    return;
                };
                if !crate::sync::lock(&shared.told_in_band).insert(model_key(&model)) {
                    return;
                }
                shared.notice(format!(
                    "{} wrote its tool call as text, so nothing ran. That is the {dialect} \
                     dialect's form: run with --dialect {dialect}, or set dialect = \"{dialect}\" \
                     for this model in config.toml",
                    model.id
                ));
            })
            .boxed()
    }
}

impl Provider for DialectProvider {
    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> EventStream {
        let shared = self.shared.clone();
        match shared.choose(&request.model) {
            Choice::Use(d) => shared.dialect_stream(d, request, cancel),
            Choice::Native { auto: true } if !request.context.tools.is_empty() => {
                let first = shared.inner.stream(request.clone(), cancel.clone());
                let fut = async move {
                    let mut first = first;
                    let mut head = Vec::new();
                    loop {
                        match first.next().await {
                            Some(Ok(StreamEvent::Start { partial })) => {
                                head.push(Ok(StreamEvent::Start { partial }))
                            }
                            Some(Ok(StreamEvent::Error { error, .. }))
                                if !cancel.is_cancelled() && refuses_tools(&error) =>
                            {
                                let hermes: Arc<dyn Dialect> = Arc::new(super::hermes::HERMES);
                                crate::sync::lock(&shared.learned)
                                    .insert(model_key(&request.model), hermes.clone());
                                shared.notice(format!(
                                    "{} refused native tools; using the hermes dialect",
                                    request.model.id
                                ));
                                drop(first);
                                return shared.dialect_stream(hermes, request, cancel);
                            }
                            Some(other) => {
                                head.push(other);
                                break;
                            }
                            None => break,
                        }
                    }
                    let native = futures::stream::iter(head).chain(first).boxed();
                    shared.watch_in_band(request.context.tools, request.model, native)
                };
                futures::stream::once(fut).flatten().boxed()
            }
            Choice::Native { .. } => {
                let (tools, model) = (request.context.tools.clone(), request.model.clone());
                let native = shared.inner.stream(request, cancel);
                shared.watch_in_band(tools, model, native)
            }
        }
    }
}
