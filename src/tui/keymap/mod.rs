//! Which key does what in the main view: pi's actions under the Node.js pi's keybinding ids
//! (`app.model.select`, `tui.editor.deleteToLineStart`, ...), their default keys, key strings
//! (`ctrl+p`, `shift+ctrl+p`, `alt+up`) parsed into crossterm keys, and the person's
//! `keybindings.json` merged over the defaults.
//!
//! The file is an object from action id to a key string or an array of them; an action named
//! there loses its default keys. A key the person gives one action is taken from any other
//! action that had it (with a warning), except for pairs that share keys by design: Ctrl+D
//! quits on an empty editor and deletes forward otherwise. Keys an action had by default and
//! no action has any more do nothing (they do not fall through to the text area). Nothing in
//! the file can stop pi from starting: unknown ids, keys that do not parse and broken JSON are
//! warnings, and whatever could not be read keeps its defaults.
//!
//! Pure except for [`load`], which reads the file. The popups (model and session pickers, the
//! tree, the `@` picker) keep their own fixed keys.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

mod actions;
pub use actions::{ACTIONS, Spec};
use actions::{NODE_ONLY, SHARED};

/// What a key can do in the main view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    Interrupt,
    Clear,
    Exit,
    Suspend,
    ExternalEditor,
    ModelSelect,
    ModelCycleForward,
    ModelCycleBackward,
    ThinkingCycle,
    ApprovalCycle,
    PlanToggle,
    PauseToggle,
    ThinkingToggle,
    ToolsExpand,
    FollowUp,
    Dequeue,
    SessionNew,
    SessionTree,
    SessionFork,
    SessionResume,
    Submit,
    NewLine,
    Tab,
    CursorUp,
    CursorDown,
    CursorLeft,
    CursorRight,
    CursorWordLeft,
    CursorWordRight,
    CursorLineStart,
    CursorLineEnd,
    PageUp,
    PageDown,
    DeleteCharBackward,
    DeleteCharForward,
    DeleteWordBackward,
    DeleteWordForward,
    DeleteToLineStart,
    DeleteToLineEnd,
    Yank,
    Undo,
}

impl Action {
    pub fn spec(self) -> &'static Spec {
        // Every action has a row (a unit test holds it); the first row is a harmless stand-in.
        ACTIONS
            .iter()
            .find(|s| s.action == self)
            .unwrap_or(&ACTIONS[0])
    }

    pub fn id(self) -> &'static str {
        self.spec().id
    }

    fn order(self) -> usize {
        ACTIONS.iter().position(|s| s.action == self).unwrap_or(0)
    }

    fn shares_with(self, other: Action) -> bool {
        SHARED
            .iter()
            .any(|&(a, b)| (a, b) == (self, other) || (b, a) == (self, other))
    }
}

/// A key with its modifiers (Ctrl, Shift, Alt only), in a normal form: letters lower-case
/// with Shift, other characters without Shift (the character already says it), Shift+Tab as
/// Tab with Shift.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

const MODS: KeyModifiers = KeyModifiers::CONTROL
    .union(KeyModifiers::SHIFT)
    .union(KeyModifiers::ALT);

impl Key {
    fn normal(code: KeyCode, mods: KeyModifiers) -> Key {
        let mut mods = mods & MODS;
        let code = match code {
            KeyCode::BackTab => {
                mods |= KeyModifiers::SHIFT;
                KeyCode::Tab
            }
            KeyCode::Char(c) if c.is_ascii_uppercase() => {
                mods |= KeyModifiers::SHIFT;
                KeyCode::Char(c.to_ascii_lowercase())
            }
            KeyCode::Char(c) => {
                if !c.is_alphabetic() {
                    mods.remove(KeyModifiers::SHIFT);
                }
                KeyCode::Char(c)
            }
            other => other,
        };
        Key { code, mods }
    }

    /// The key a terminal event stands for.
    pub fn of(event: &KeyEvent) -> Key {
        Key::normal(event.code, event.modifiers)
    }

    /// A key string as `keybindings.json` writes it: modifiers `ctrl`, `shift`, `alt` joined
    /// with `+` in any order, then a key: a letter, digit or symbol, `f1`…`f12`, or a name
    /// (`escape`/`esc`, `enter`/`return`, `tab`, `space`, `backspace`, `delete`, `insert`,
    /// `home`, `end`, `pageUp`, `pageDown`, `up`, `down`, `left`, `right`). Case does not
    /// matter.
    pub fn parse(text: &str) -> Option<Key> {
        let text = text.trim();
        // The key itself may be `+` (`ctrl++`).
        let (mods_part, key_part) = if text == "+" {
            ("", "+")
        } else if let Some(m) = text.strip_suffix("++") {
            (m, "+")
        } else {
            match text.rsplit_once('+') {
                Some((m, k)) if !m.is_empty() => (m, k),
                Some(_) => return None,
                None => ("", text),
            }
        };
        let mut mods = KeyModifiers::NONE;
        if !mods_part.is_empty() {
            for m in mods_part.split('+') {
                mods |= match m.trim().to_ascii_lowercase().as_str() {
                    "ctrl" => KeyModifiers::CONTROL,
                    "shift" => KeyModifiers::SHIFT,
                    "alt" => KeyModifiers::ALT,
                    _ => return None,
                };
            }
        }
        let mut chars = key_part.chars();
        let code = match (chars.next(), chars.next()) {
            (Some(c), None) if !c.is_whitespace() && !c.is_control() => {
                KeyCode::Char(c.to_ascii_lowercase())
            }
            _ => named(&key_part.to_ascii_lowercase())?,
        };
        Some(Key::normal(code, mods))
    }

    /// How `/help` and hints name the key (`Ctrl+Shift+P`, `Alt+Up`).
    pub fn label(&self) -> String {
        let mut s = String::new();
        for (m, name) in [
            (KeyModifiers::CONTROL, "Ctrl+"),
            (KeyModifiers::SHIFT, "Shift+"),
            (KeyModifiers::ALT, "Alt+"),
        ] {
            if self.mods.contains(m) {
                s.push_str(name);
            }
        }
        match self.code {
            KeyCode::Char(' ') => s.push_str("Space"),
            KeyCode::Char(c) => s.push(c.to_ascii_uppercase()),
            KeyCode::F(n) => s.push_str(&format!("F{n}")),
            KeyCode::Esc => s.push_str("Esc"),
            KeyCode::PageUp => s.push_str("PgUp"),
            KeyCode::PageDown => s.push_str("PgDn"),
            other => s.push_str(&format!("{other:?}")),
        }
        s
    }
}

fn named(name: &str) -> Option<KeyCode> {
    Some(match name {
        "escape" | "esc" => KeyCode::Esc,
        "enter" | "return" => KeyCode::Enter,
        "tab" => KeyCode::Tab,
        "space" => KeyCode::Char(' '),
        "backspace" => KeyCode::Backspace,
        "delete" => KeyCode::Delete,
        "insert" => KeyCode::Insert,
        "home" => KeyCode::Home,
        "end" => KeyCode::End,
        "pageup" => KeyCode::PageUp,
        "pagedown" => KeyCode::PageDown,
        "up" => KeyCode::Up,
        "down" => KeyCode::Down,
        "left" => KeyCode::Left,
        "right" => KeyCode::Right,
        f if f.starts_with('f') => match f[1..].parse::<u8>() {
            Ok(n @ 1..=12) => KeyCode::F(n),
            _ => return None,
        },
        _ => return None,
    })
}

/// The key a legacy terminal's byte stands for, where the byte is ambiguous: xterm and tmux
/// send Ctrl+- (like Ctrl+_ and Ctrl+/) as 0x1F, which crossterm reads as Ctrl+7. Used only
/// when the key as read has no binding of its own.
fn legacy_alias(key: Key) -> Option<Key> {
    (key == Key {
        code: KeyCode::Char('7'),
        mods: KeyModifiers::CONTROL,
    })
    .then_some(Key {
        code: KeyCode::Char('-'),
        mods: KeyModifiers::CONTROL,
    })
}

/// The keys of every action, and what each key does.
#[derive(Clone, Debug)]
pub struct Keymap {
    keys: HashMap<Action, Vec<Key>>,
    by_key: HashMap<Key, Vec<Action>>,
    /// Keys some action has by default and none has now: they do nothing.
    released: HashSet<Key>,
    /// The actions keybindings.json gave keys, in its order.
    changed: Vec<Action>,
}

impl Default for Keymap {
    fn default() -> Self {
        Keymap::build(defaults())
    }
}

fn defaults() -> HashMap<Action, Vec<Key>> {
    ACTIONS
        .iter()
        .map(|s| {
            let keys = s.keys.iter().filter_map(|k| Key::parse(k)).collect();
            (s.action, keys)
        })
        .collect()
}

impl Keymap {
    fn build(keys: HashMap<Action, Vec<Key>>) -> Keymap {
        let mut by_key: HashMap<Key, Vec<Action>> = HashMap::new();
        for (action, list) in &keys {
            for k in list {
                let entry = by_key.entry(*k).or_default();
                if !entry.contains(action) {
                    entry.push(*action);
                }
            }
        }
        for actions in by_key.values_mut() {
            actions.sort_by_key(|a| a.order());
        }
        let released = defaults()
            .into_values()
            .flatten()
            .filter(|k| !by_key.contains_key(k))
            .collect();
        Keymap {
            keys,
            by_key,
            released,
            changed: Vec::new(),
        }
    }

    /// The actions a key event asks for, in the order to try them.
    pub fn actions(&self, event: &KeyEvent) -> &[Action] {
        let key = Key::of(event);
        match self.by_key.get(&key) {
            Some(actions) => actions,
            None => legacy_alias(key)
                .and_then(|k| self.by_key.get(&k))
                .map_or(&[], Vec::as_slice),
        }
    }

    /// A key that had an action by default and has none now (it does nothing).
    pub fn released(&self, event: &KeyEvent) -> bool {
        let key = Key::of(event);
        self.released.contains(&key)
            || (!self.by_key.contains_key(&key)
                && legacy_alias(key).is_some_and(|k| self.released.contains(&k)))
    }

    /// An action's keys.
    pub fn keys(&self, action: Action) -> &[Key] {
        self.keys.get(&action).map_or(&[], Vec::as_slice)
    }

    /// What keybindings.json changed, for `/help`: each action's keys and what it does.
    pub fn changes(&self) -> Vec<(String, &'static Spec)> {
        self.changed
            .iter()
            .map(|a| {
                let keys: Vec<String> = self.keys(*a).iter().map(Key::label).collect();
                let keys = if keys.is_empty() {
                    "(none)".to_string()
                } else {
                    keys.join(", ")
                };
                (keys, a.spec())
            })
            .collect()
    }

    /// All of an action's keys, named for `/help` (`Left, Ctrl+B`), if it has any.
    pub fn labels(&self, action: Action) -> Option<String> {
        let keys: Vec<String> = self.keys(action).iter().map(Key::label).collect();
        (!keys.is_empty()).then(|| keys.join(", "))
    }

    /// How to name an action's first key in a hint (`Ctrl+C`), if it has one.
    pub fn label(&self, action: Action) -> Option<String> {
        self.keys(action).first().map(Key::label)
    }

    /// The defaults with the person's `keybindings.json` (its text) over them, and what in
    /// the file was not understood.
    pub fn with_user(text: &str) -> (Keymap, Vec<String>) {
        let mut warnings = Vec::new();
        let value: serde_json::Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                warnings.push(format!(
                    "not valid JSON at line {}, column {} ({}); using the default keys",
                    e.line(),
                    e.column(),
                    without_position(&e.to_string())
                ));
                return (Keymap::default(), warnings);
            }
        };
        let Some(object) = value.as_object() else {
            warnings
                .push("expected an object of action ids and keys; using the default keys".into());
            return (Keymap::default(), warnings);
        };
        // The person's bindings, in the file's order.
        let mut user: Vec<(Action, Vec<(Key, String)>)> = Vec::new();
        for (id, keys) in object {
            let Some(spec) = ACTIONS.iter().find(|s| s.id == id || s.legacy == id) else {
                if NODE_ONLY.contains(&id.as_str()) {
                    warnings.push(format!("\"{id}\" is not an action this pi has (ignored)"));
                } else {
                    warnings.push(format!("unknown action \"{id}\" (ignored)"));
                }
                continue;
            };
            let strings: Vec<&str> = match keys {
                serde_json::Value::String(s) => vec![s.as_str()],
                serde_json::Value::Array(a) if a.iter().all(serde_json::Value::is_string) => {
                    a.iter().filter_map(|v| v.as_str()).collect()
                }
                _ => {
                    warnings.push(format!(
                        "\"{id}\": expected a key or an array of keys (keeping its defaults)"
                    ));
                    continue;
                }
            };
            let mut parsed = Vec::new();
            for s in &strings {
                match Key::parse(s) {
                    Some(k) => parsed.push((k, s.to_string())),
                    None => warnings.push(format!("\"{id}\": \"{s}\" is not a key pi knows")),
                }
            }
            if parsed.is_empty() && !strings.is_empty() {
                warnings.push(format!("\"{id}\" keeps its default keys"));
                continue;
            }
            user.retain(|(a, _)| *a != spec.action);
            user.push((spec.action, parsed));
        }

        let mut keys = defaults();
        for (action, _) in &user {
            keys.insert(*action, Vec::new());
        }
        // Who holds each key the person gave, first come first served among their bindings.
        let mut holder: HashMap<Key, Vec<Action>> = HashMap::new();
        for (action, list) in &user {
            for (key, text) in list {
                let holders = holder.entry(*key).or_default();
                if holders.contains(action) {
                    continue;
                }
                if let Some(first) = holders.iter().find(|h| !h.shares_with(*action)) {
                    warnings.push(format!(
                        "\"{text}\" is given to both {} and {}; {} keeps it",
                        first.id(),
                        action.id(),
                        first.id()
                    ));
                    continue;
                }
                holders.push(*action);
                if let Some(list) = keys.get_mut(action)
                    && !list.contains(key)
                {
                    list.push(*key);
                }
            }
        }
        // A key the person gave takes it from the actions that had it by default.
        let users: HashSet<Action> = user.iter().map(|(a, _)| *a).collect();
        let texts: HashMap<Key, &str> = user
            .iter()
            .flat_map(|(_, l)| l.iter().map(|(k, t)| (*k, t.as_str())))
            .collect();
        for spec in ACTIONS {
            if users.contains(&spec.action) {
                continue;
            }
            let Some(list) = keys.get_mut(&spec.action) else {
                continue;
            };
            list.retain(|k| {
                let Some(holders) = holder.get(k) else {
                    return true;
                };
                let kept = holders.iter().all(|h| h.shares_with(spec.action));
                if !kept {
                    let taker = holders.first().map_or("", |h| h.id());
                    warnings.push(format!(
                        "\"{}\" now does {taker}, no longer {}",
                        texts.get(k).copied().unwrap_or_default(),
                        spec.id
                    ));
                }
                kept
            });
        }
        let mut map = Keymap::build(keys);
        map.changed = user.iter().map(|(a, _)| *a).collect();
        (map, warnings)
    }
}

/// serde_json's message without its own " at line L column C".
fn without_position(message: &str) -> &str {
    message
        .rfind(" at line ")
        .map_or(message, |i| &message[..i])
}

/// The keys from `<agent dir>/keybindings.json`, with warnings that name the file; no file:
/// the defaults and no warning.
pub fn load(agent_dir: Option<&Path>) -> (Keymap, Vec<String>) {
    let Some(path) = agent_dir.map(|d| d.join("keybindings.json")) else {
        return (Keymap::default(), Vec::new());
    };
    let shown = crate::paths::short_home(&path);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let (map, warnings) = Keymap::with_user(&text);
            let warnings = warnings
                .into_iter()
                .map(|w| format!("{shown}: {w}"))
                .collect();
            (map, warnings)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Keymap::default(), Vec::new()),
        Err(e) => (
            Keymap::default(),
            vec![format!(
                "{shown}: could not be read ({e}); using the default keys"
            )],
        ),
    }
}

#[cfg(test)]
mod tests;
