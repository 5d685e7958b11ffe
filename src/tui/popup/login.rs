//! The `/login` overlay: sign in to a subscription (the overlay then shows what the sign-in
//! needs — the address to open, a device code — takes a pasted address, and Esc cancels),
//! choose a provider and paste its API key (shown as dots, never drawn), or choose a model a
//! local server offers.
//!
//! The state is plain data; the app feeds it keys and pastes and acts on the [`Outcome`]. The
//! key goes from here straight into a host command: it is never put in the editor, the
//! transcript or the prompt history.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::provider::catalog::ModelInfo;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use crate::tui::sanitize::sanitize;
use crate::tui::theme::fg;

/// One row of the list.
#[derive(Clone, Debug, PartialEq)]
pub enum Choice {
    /// A provider that takes an API key, with the variable it is usually read from; `has_key`
    /// when one is set already.
    Provider {
        id: String,
        env: Option<String>,
        has_key: bool,
    },
    /// A model of a local server found on this machine.
    Local(ModelInfo),
    /// A subscription to sign in to (`signed_in` when it is already).
    Subscription {
        provider: String,
        label: String,
        signed_in: bool,
    },
}

/// Where the overlay is.
#[derive(Clone, Debug, PartialEq)]
pub enum Stage {
    /// Choosing; typed text filters the list.
    Choose { selected: usize, filter: String },
    /// Typing (or pasting) the key for `provider`.
    Key { provider: String, key: String },
    /// Signing in to a subscription: what to do so far, and a pasted answer being typed.
    SignIn {
        label: String,
        lines: Vec<String>,
        pasted: String,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct LoginView {
    pub choices: Vec<Choice>,
    pub stage: Stage,
    /// The local servers are still being looked for.
    pub searching: bool,
}

/// What a key press asks the app to do.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    Nothing,
    Close,
    /// Save this key for this provider.
    Save {
        provider: String,
        key: String,
    },
    /// Use this local model.
    UseLocal(ModelInfo),
    /// Sign in to this provider's subscription.
    Subscribe {
        provider: String,
    },
    /// Hand this pasted line to the sign-in under way.
    Paste {
        line: String,
    },
    /// Stop the sign-in under way and close.
    CancelSignIn,
}

impl LoginView {
    pub fn new(providers: Vec<Choice>) -> Self {
        LoginView {
            choices: providers,
            stage: Stage::Choose {
                selected: 0,
                filter: String::new(),
            },
            searching: true,
        }
    }

    /// Local models found: listed first, as they need nothing more.
    pub fn add_local(&mut self, models: Vec<ModelInfo>) {
        self.searching = false;
        let n = models.len();
        let locals = models.into_iter().map(Choice::Local);
        self.choices.splice(0..0, locals);
        if let Stage::Choose { selected, filter } = &mut self.stage
            && (*selected > 0 || !filter.is_empty())
        {
            *selected += n;
        }
    }

    /// The choices the filter lets through.
    pub fn shown(&self) -> Vec<&Choice> {
        let filter = match &self.stage {
            Stage::Choose { filter, .. } => filter.to_lowercase(),
            Stage::Key { .. } | Stage::SignIn { .. } => String::new(),
        };
        self.choices
            .iter()
            .filter(|c| match c {
                Choice::Provider { id, env, .. } => {
                    id.to_lowercase().contains(&filter)
                        || env
                            .as_deref()
                            .is_some_and(|e| e.to_lowercase().contains(&filter))
                }
                Choice::Local(m) => format!("{}/{}", m.provider, m.id)
                    .to_lowercase()
                    .contains(&filter),
                Choice::Subscription {
                    provider, label, ..
                } => format!("{provider} {label} subscription")
                    .to_lowercase()
                    .contains(&filter),
            })
            .collect()
    }

    /// Text pasted while the key is asked for goes into the key. A paste while choosing is
    /// dropped: it is most likely the key itself, which must not land in the visible filter.
    pub fn paste(&mut self, text: &str) {
        match &mut self.stage {
            Stage::Key { key, .. } => key.push_str(text.trim()),
            Stage::SignIn { pasted, .. } => pasted.push_str(text.trim()),
            Stage::Choose { .. } => {}
        }
    }

    /// Something the sign-in under way needs shown.
    pub fn sign_in_notice(&mut self, line: String) {
        if let Stage::SignIn { lines, .. } = &mut self.stage {
            lines.push(line);
        }
    }

    /// Whether a sign-in is under way in the overlay.
    pub fn signing_in(&self) -> bool {
        matches!(self.stage, Stage::SignIn { .. })
    }

    pub fn key(&mut self, k: KeyEvent) -> Outcome {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        let count = self.shown().len();
        let chosen = match &self.stage {
            Stage::Choose { selected, .. } => self.shown().get(*selected).map(|c| (*c).clone()),
            Stage::Key { .. } | Stage::SignIn { .. } => None,
        };
        match &mut self.stage {
            Stage::Choose { selected, filter } => match k.code {
                KeyCode::Esc => Outcome::Close,
                KeyCode::Char('c') if ctrl => Outcome::Close,
                KeyCode::Up => {
                    *selected = selected.saturating_sub(1);
                    Outcome::Nothing
                }
                KeyCode::Down => {
                    *selected = (*selected + 1).min(count.saturating_sub(1));
                    Outcome::Nothing
                }
                KeyCode::Backspace => {
                    filter.pop();
                    *selected = 0;
                    Outcome::Nothing
                }
                _ if crate::tui::filter::edit(filter, &k) => {
                    *selected = 0;
                    Outcome::Nothing
                }
                KeyCode::Char(c) if !ctrl => {
                    filter.push(c);
                    *selected = 0;
                    Outcome::Nothing
                }
                KeyCode::Enter => match chosen {
                    Some(Choice::Provider { id, .. }) => {
                        self.stage = Stage::Key {
                            provider: id,
                            key: String::new(),
                        };
                        Outcome::Nothing
                    }
                    Some(Choice::Local(m)) => Outcome::UseLocal(m),
                    Some(Choice::Subscription {
                        provider, label, ..
                    }) => {
                        self.stage = Stage::SignIn {
                            lines: vec![format!("Signing in to {label}…")],
                            label,
                            pasted: String::new(),
                        };
                        Outcome::Subscribe { provider }
                    }
                    None => Outcome::Nothing,
                },
                _ => Outcome::Nothing,
            },
            Stage::Key { provider, key } => match k.code {
                KeyCode::Esc => {
                    self.stage = Stage::Choose {
                        selected: 0,
                        filter: String::new(),
                    };
                    Outcome::Nothing
                }
                KeyCode::Char('c') if ctrl => Outcome::Close,
                _ if crate::tui::filter::edit(key, &k) => Outcome::Nothing,
                KeyCode::Backspace => {
                    key.pop();
                    Outcome::Nothing
                }
                KeyCode::Enter if !key.trim().is_empty() => Outcome::Save {
                    provider: provider.clone(),
                    key: std::mem::take(key),
                },
                KeyCode::Char(c) if !ctrl => {
                    key.push(c);
                    Outcome::Nothing
                }
                _ => Outcome::Nothing,
            },
            Stage::SignIn { pasted, lines, .. } => match k.code {
                KeyCode::Esc => Outcome::CancelSignIn,
                KeyCode::Char('c') if ctrl => Outcome::CancelSignIn,
                _ if crate::tui::filter::edit(pasted, &k) => Outcome::Nothing,
                KeyCode::Backspace => {
                    pasted.pop();
                    Outcome::Nothing
                }
                KeyCode::Enter if !pasted.trim().is_empty() => {
                    lines.push("Checking the pasted address…".into());
                    Outcome::Paste {
                        line: std::mem::take(pasted),
                    }
                }
                KeyCode::Char(c) if !ctrl => {
                    pasted.push(c);
                    Outcome::Nothing
                }
                _ => Outcome::Nothing,
            },
        }
    }
}

/// The `/login` overlay: the providers and local models, or the key being typed (as dots).
impl LoginView {
    /// The overlay at the bottom of `area`; the rows it covers.
    pub fn draw(&self, buf: &mut Buffer, area: Rect) -> Rect {
        let view = self;
        let dim = fg(|t| t.dim);
        let (title, lines) = match &view.stage {
            Stage::Choose { selected, filter } => {
                let shown = view.shown();
                let mut lines = vec![Line::from(vec![
                    Span::styled(
                        if view.searching {
                            " Sign in to a provider (looking for local servers…): "
                        } else {
                            " Sign in to a provider, or use a local server: "
                        },
                        Style::new().add_modifier(Modifier::BOLD),
                    ),
                    Span::raw(sanitize(filter)),
                    Span::styled("▏", fg(|t| t.accent)),
                ])];
                let sel = (*selected).min(shown.len().saturating_sub(1));
                let start = sel.saturating_sub(9);
                for (i, c) in shown.iter().enumerate().skip(start).take(10) {
                    let style = if i == sel {
                        fg(|t| t.accent).add_modifier(Modifier::BOLD)
                    } else {
                        Style::default()
                    };
                    let (name, note) = match *c {
                        Choice::Provider { id, env, has_key } => (
                            sanitize(id),
                            format!(
                                "{}{}",
                                env.as_deref().map(|e| format!("  {e}")).unwrap_or_default(),
                                if *has_key { "  key set" } else { "" }
                            ),
                        ),
                        Choice::Local(m) => (
                            format!("{}/{}", sanitize(&m.provider), sanitize(&m.id)),
                            "  local server, no key needed".to_string(),
                        ),
                        Choice::Subscription {
                            provider,
                            label,
                            signed_in,
                        } => (
                            sanitize(label),
                            format!(
                                "  subscription · {}{}",
                                sanitize(provider),
                                if *signed_in { "  signed in" } else { "" }
                            ),
                        ),
                    };
                    lines.push(Line::from(vec![
                        Span::styled(if i == sel { " › " } else { "   " }, style),
                        Span::styled(name, style),
                        Span::styled(note, dim),
                    ]));
                }
                (
                    " type to filter · ↑↓ choose · Enter select · Esc close ",
                    lines,
                )
            }
            Stage::Key { provider, key } => (
                " Enter save · Ctrl+U clear · Esc back ",
                vec![
                    Line::styled(
                        format!(
                            " API key for {} (paste it; it is saved in auth.json)",
                            sanitize(provider)
                        ),
                        Style::new().add_modifier(Modifier::BOLD),
                    ),
                    Line::from(vec![
                        Span::raw(" "),
                        Span::raw("•".repeat(key.chars().count().min(40))),
                        Span::styled("▏", fg(|t| t.accent)),
                        Span::styled(
                            if key.is_empty() {
                                String::new()
                            } else {
                                format!("  {} characters", key.chars().count())
                            },
                            dim,
                        ),
                    ]),
                ],
            ),
            Stage::SignIn {
                label,
                lines: said,
                pasted,
            } => {
                let mut lines = vec![Line::styled(
                    format!(" {}", sanitize(label)),
                    Style::new().add_modifier(Modifier::BOLD),
                )];
                lines.extend(said.iter().map(|l| Line::raw(format!(" {}", sanitize(l)))));
                lines.push(Line::from(vec![
                    Span::styled(
                        " Browser on another machine? Paste the address it ends on: ",
                        dim,
                    ),
                    Span::raw("•".repeat(pasted.chars().count().min(40))),
                    Span::styled("▏", fg(|t| t.accent)),
                ]));
                (" Enter send the pasted address · Esc cancel ", lines)
            }
        };
        let h = (lines.len() as u16 + 1).min(area.height);
        let popup = Rect::new(area.x, area.y + area.height - h, area.width, h);
        let block = Block::default()
            .borders(Borders::TOP)
            .border_style(fg(|t| t.accent))
            .title(title);
        Clear.render(popup, buf);
        Paragraph::new(lines).block(block).render(popup, buf);
        popup
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn provider(id: &str, has_key: bool) -> Choice {
        Choice::Provider {
            id: id.into(),
            env: Some(format!("{}_API_KEY", id.to_uppercase())),
            has_key,
        }
    }

    #[test]
    fn the_filter_also_matches_the_key_variable() {
        let mut v = LoginView::new(vec![
            Choice::Provider {
                id: "google".into(),
                env: Some("GEMINI_API_KEY".into()),
                has_key: false,
            },
            provider("groq", false),
        ]);
        for c in "gemini".chars() {
            v.key(key(KeyCode::Char(c)));
        }
        assert_eq!(v.shown().len(), 1);
        v.key(key(KeyCode::Enter));
        assert!(matches!(&v.stage, Stage::Key { provider, .. } if provider == "google"));
    }

    #[test]
    fn a_provider_then_its_key_is_saved() {
        let mut v = LoginView::new(vec![provider("anthropic", false), provider("groq", true)]);
        v.paste("sk-pasted-too-early");
        assert!(v.shown().len() == 2, "a paste while choosing is dropped");
        assert_eq!(v.key(key(KeyCode::Down)), Outcome::Nothing);
        v.key(key(KeyCode::Enter));
        assert!(matches!(&v.stage, Stage::Key { provider, .. } if provider == "groq"));
        assert_eq!(v.key(key(KeyCode::Enter)), Outcome::Nothing, "no key yet");
        v.key(key(KeyCode::Char('x')));
        v.key(key(KeyCode::Backspace));
        v.paste("  gsk-123\n");
        assert_eq!(
            v.key(key(KeyCode::Enter)),
            Outcome::Save {
                provider: "groq".into(),
                key: "gsk-123".into()
            }
        );
        v.key(key(KeyCode::Esc));
        assert_eq!(
            v.stage,
            Stage::Choose {
                selected: 0,
                filter: String::new()
            }
        );
        for c in "gro".chars() {
            v.key(key(KeyCode::Char(c)));
        }
        assert_eq!(v.shown().len(), 1);
        v.key(key(KeyCode::Enter));
        assert!(matches!(&v.stage, Stage::Key { provider, .. } if provider == "groq"));
        v.key(key(KeyCode::Esc));
        assert_eq!(v.key(key(KeyCode::Esc)), Outcome::Close);
    }

    #[test]
    fn local_models_come_first_and_are_used_at_once() {
        let mut v = LoginView::new(vec![provider("anthropic", false)]);
        let c = crate::provider::catalog::Catalog::builtin(&|_| None);
        let m = c.resolve("ollama", "qwen3:8b").unwrap().0;
        v.add_local(vec![m.clone()]);
        assert!(!v.searching);
        assert_eq!(v.key(key(KeyCode::Enter)), Outcome::UseLocal(m));
    }
}
