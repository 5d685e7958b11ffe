//! [`DialectProvider`], the [`Provider`] the loop talks to: it wraps the real one and decides
//! per model which dialect (if any) a request uses — asked for by flag, environment or
//! config, or learned: a local server whose chat template takes no tools, a local server that
//! refuses native tools, and (with `auto`) a model that writes its call as text — and wraps
//! the reply in the [`Rewriter`] so calls written as text come out as tool calls.

use std::collections::{HashMap, HashSet};
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

/// `none`/`off`, `auto`, or a dialect by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Setting {
    Off,
    On(String),
    /// Native tools until the model shows it writes calls as text (or its server takes no
    /// tools): then the dialect of the form it wrote, for the rest of the session, with the
    /// reply asked again.
    Auto,
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
    told_in_band: Mutex<HashSet<String>>,
    /// Models whose server was asked about its chat template.
    asked_template: Mutex<HashSet<String>>,
    /// How many times `auto` switched each model.
    switches: Mutex<HashMap<String, u32>>,
}

/// How many times `auto` switches one model's dialect in a session.
const MAX_SWITCHES: u32 = 2;

/// The loop's provider: the real one, with a dialect where one is asked for or learned.
pub(crate) struct DialectProvider {
    shared: Arc<Shared>,
}

enum Choice {
    /// This dialect; `switch` (under `auto`): a reply in another dialect's form switches again.
    Use(Arc<dyn Dialect>, bool),
    /// Native tools. `learn`: a local server's template and refusal may choose a dialect;
    /// `switch`: a call written as text switches to its dialect and the reply is asked again.
    Native { learn: bool, switch: bool },
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
                asked_template: Mutex::default(),
                switches: Mutex::default(),
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
            Choice::Use(d, _) => Some(d.name()),
            Choice::Native { .. } => None,
        }
    }
}

impl Shared {
    fn choose(&self, model: &Model) -> Choice {
        let plain = Choice::Native {
            learn: false,
            switch: false,
        };
        let auto = match self.settings.setting_for(model) {
            Some(Setting::On(name)) => {
                return by_name(name).map_or(plain, |d| Choice::Use(d, false));
            }
            Some(Setting::Off) => return plain,
            Some(Setting::Auto) => true,
            None => false,
        };
        if let Some(d) = crate::sync::lock(&self.learned).get(&model_key(model)) {
            return Choice::Use(d.clone(), auto);
        }
        Choice::Native {
            learn: auto || self.is_local(model),
            switch: auto,
        }
    }

    /// Whether `auto` may switch `model` once more (and count it).
    fn may_switch(&self, model: &Model) -> bool {
        let mut switches = crate::sync::lock(&self.switches);
        let n = switches.entry(model_key(model)).or_insert(0);
        *n += 1;
        *n <= MAX_SWITCHES
    }

    /// From now on `model` calls tools in `dialect`.
    fn learn(&self, model: &Model, dialect: Arc<dyn Dialect>) {
        crate::sync::lock(&self.learned).insert(model_key(model), dialect);
    }

    /// Ask a local server once per model whether its chat template takes tools; when it
    /// says not, the dialect of the model's family is used from then on.
    async fn dialect_from_template(&self, model: &Model) -> Option<Arc<dyn Dialect>> {
        let (info, _) = self.catalog.resolve(&model.provider, &model.id).ok()?;
        // Local servers speak Chat Completions; other formats have no template to ask about.
        if info.api != crate::provider::catalog::Api::OpenAiCompletions
            || !is_local_url(&info.base_url)
            || !crate::sync::lock(&self.asked_template).insert(model_key(model))
        {
            return None;
        }
        let template =
            crate::provider::tool_template::ask_server(&info.base_url, &model.id, &info.headers)
                .await
                .filter(|t| !t.takes_tools)?;
        let dialect = by_name(template.dialect)?;
        self.learn(model, dialect.clone());
        self.notice(format!(
            "{}: the server's chat template takes no tools; calling them in the {} dialect \
             (the form of the model's family)",
            model.id, template.dialect
        ));
        Some(dialect)
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
        if dialect.whole_reply() {
            return super::json::whole_reply_stream(tools, inner);
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

/// The state of a reply watched for a call written as text, with `auto` on.
enum Watch {
    /// The reply as first asked for.
    First {
        stream: EventStream,
        request: ProviderRequest,
        cancel: CancellationToken,
    },
    /// Asked again in the dialect the reply showed.
    Again(EventStream),
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
                     (or \"auto\") for this model in config.toml",
                    model.id
                ));
            })
            .boxed()
    }

    /// With `auto`: when the reply comes back as a tool call written as text, switch the
    /// model to the dialect of that form and ask again. The loop takes the new reply's
    /// `Start` as a restart of the same message, so the text call is replaced, not kept.
    /// `current` is the dialect the reply was asked in (`None`: native tools); a model is
    /// switched at most [`MAX_SWITCHES`] times, so one that wanders between forms settles.
    fn switch_on_in_band(
        self: &Arc<Self>,
        stream: EventStream,
        current: Option<&'static str>,
        request: ProviderRequest,
        cancel: CancellationToken,
    ) -> EventStream {
        if request.context.tools.is_empty() {
            return stream;
        }
        let shared = self.clone();
        let first = Watch::First {
            stream,
            request,
            cancel,
        };
        futures::stream::unfold(first, move |watch| {
            let shared = shared.clone();
            async move {
                let (mut stream, request, cancel) = match watch {
                    Watch::Again(mut s) => return Some((s.next().await?, Watch::Again(s))),
                    Watch::First {
                        stream,
                        request,
                        cancel,
                    } => (stream, request, cancel),
                };
                let item = stream.next().await?;
                let form = match &item {
                    Ok(StreamEvent::Done { message, .. })
                        if !message.has_tool_calls() && !cancel.is_cancelled() =>
                    {
                        super::in_band::shape_of(&message.text(), &request.context.tools)
                    }
                    _ => None,
                };
                let form =
                    form.filter(|f| Some(*f) != current && shared.may_switch(&request.model));
                let Some(dialect) = form.and_then(by_name) else {
                    let watch = Watch::First {
                        stream,
                        request,
                        cancel,
                    };
                    return Some((item, watch));
                };
                drop(stream);
                shared.learn(&request.model, dialect.clone());
                shared.notice(format!(
                    "{} wrote its tool call as text; switching it to the {} dialect for this \
                     session and asking again",
                    request.model.id,
                    dialect.name()
                ));
                let mut again = shared.dialect_stream(dialect, request, cancel);
                Some((again.next().await?, Watch::Again(again)))
            }
        })
        .boxed()
    }

    /// Native tools, for a model whose refusal of them may teach pi a dialect: a reply that
    /// opens with an error about tools is asked again in `hermes`. `Err` holds that stream.
    async fn native_unless_refused(
        self: &Arc<Self>,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<EventStream, EventStream> {
        let mut first = self.inner.stream(request.clone(), cancel.clone());
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
                    self.learn(&request.model, hermes.clone());
                    self.notice(format!(
                        "{} refused native tools; using the hermes dialect",
                        request.model.id
                    ));
                    drop(first);
                    return Err(self.dialect_stream(hermes, request.clone(), cancel.clone()));
                }
                Some(other) => {
                    head.push(other);
                    break;
                }
                None => break,
            }
        }
        Ok(futures::stream::iter(head).chain(first).boxed())
    }
}

impl Provider for DialectProvider {
    fn stream(&self, request: ProviderRequest, cancel: CancellationToken) -> EventStream {
        let shared = self.shared.clone();
        match shared.choose(&request.model) {
            Choice::Use(d, false) => shared.dialect_stream(d, request, cancel),
            Choice::Use(d, true) => {
                let reply = shared.dialect_stream(d.clone(), request.clone(), cancel.clone());
                shared.switch_on_in_band(reply, Some(d.name()), request, cancel)
            }
            Choice::Native {
                learn: true,
                switch,
            } if !request.context.tools.is_empty() => {
                let fut = async move {
                    if let Some(d) = shared.dialect_from_template(&request.model).await {
                        return shared.dialect_stream(d, request, cancel);
                    }
                    let native = match shared.native_unless_refused(&request, &cancel).await {
                        Ok(native) => native,
                        Err(dialect) => return dialect,
                    };
                    if switch {
                        return shared.switch_on_in_band(native, None, request, cancel);
                    }
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
