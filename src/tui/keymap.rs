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

/// One action: its id in `keybindings.json`, the older id the Node.js pi used before ids were
/// namespaced (still accepted), its default keys and what it does (for the README and `/help`).
pub struct Spec {
    pub action: Action,
    pub id: &'static str,
    pub legacy: &'static str,
    pub keys: &'static [&'static str],
    pub what: &'static str,
}

const fn spec(
    action: Action,
    id: &'static str,
    legacy: &'static str,
    keys: &'static [&'static str],
    what: &'static str,
) -> Spec {
    Spec {
        action,
        id,
        legacy,
        keys,
        what,
    }
}

/// Every action pi has, in the order a key shared by two of them is tried.
pub const ACTIONS: &[Spec] = &[
    spec(
        Action::Interrupt,
        "app.interrupt",
        "interrupt",
        &["escape"],
        "close the / list, else interrupt the agent (twice on an empty editor: the tree)",
    ),
    spec(
        Action::Clear,
        "app.clear",
        "clear",
        &["ctrl+c"],
        "clear the editor; twice to quit",
    ),
    spec(
        Action::Exit,
        "app.exit",
        "exit",
        &["ctrl+d"],
        "quit (empty editor)",
    ),
    spec(
        Action::Suspend,
        "app.suspend",
        "suspend",
        &["ctrl+z"],
        "suspend (resume with fg)",
    ),
    spec(
        Action::ExternalEditor,
        "app.editor.external",
        "externalEditor",
        &["ctrl+g"],
        "edit the prompt in $VISUAL / $EDITOR",
    ),
    spec(
        Action::ModelSelect,
        "app.model.select",
        "selectModel",
        &["ctrl+l"],
        "choose a model",
    ),
    spec(
        Action::ModelCycleForward,
        "app.model.cycleForward",
        "cycleModelForward",
        &["ctrl+p"],
        "next model of --models",
    ),
    spec(
        Action::ModelCycleBackward,
        "app.model.cycleBackward",
        "cycleModelBackward",
        &["shift+ctrl+p"],
        "previous model of --models",
    ),
    spec(
        Action::ThinkingCycle,
        "app.thinking.cycle",
        "cycleThinkingLevel",
        &["shift+tab"],
        "cycle the thinking level",
    ),
    spec(
        Action::ApprovalCycle,
        "app.approval.cycle",
        "cycleApprovalMode",
        &["alt+a"],
        "cycle the approval mode (auto, ask, read-only)",
    ),
    spec(
        Action::PauseToggle,
        "app.agent.pause",
        "pauseAgent",
        &["ctrl+s"],
        "pause the agent at its next step, or go on",
    ),
    spec(
        Action::ThinkingToggle,
        "app.thinking.toggle",
        "toggleThinking",
        &["ctrl+t"],
        "show/hide thinking",
    ),
    spec(
        Action::ToolsExpand,
        "app.tools.expand",
        "expandTools",
        &["ctrl+o"],
        "expand/collapse tool output",
    ),
    spec(
        Action::FollowUp,
        "app.message.followUp",
        "followUp",
        &["alt+enter"],
        "queue a follow-up for when the agent finishes",
    ),
    spec(
        Action::Dequeue,
        "app.message.dequeue",
        "dequeue",
        &["alt+up"],
        "queued messages back into the editor",
    ),
    spec(
        Action::SessionNew,
        "app.session.new",
        "newSession",
        &[],
        "a new session (/new)",
    ),
    spec(
        Action::SessionTree,
        "app.session.tree",
        "tree",
        &[],
        "the session tree (/tree)",
    ),
    spec(
        Action::SessionFork,
        "app.session.fork",
        "fork",
        &[],
        "fork the session (/fork)",
    ),
    spec(
        Action::SessionResume,
        "app.session.resume",
        "resume",
        &[],
        "the session picker (/resume)",
    ),
    spec(
        Action::Submit,
        "tui.input.submit",
        "submit",
        &["enter"],
        "send (while working: steer)",
    ),
    spec(
        Action::NewLine,
        "tui.input.newLine",
        "newLine",
        &["shift+enter", "ctrl+enter", "ctrl+j"],
        "new line",
    ),
    spec(
        Action::Tab,
        "tui.input.tab",
        "tab",
        &["tab"],
        "complete a command or a file path",
    ),
    spec(
        Action::CursorUp,
        "tui.editor.cursorUp",
        "cursorUp",
        &["up"],
        "up a line; the / list; earlier prompts",
    ),
    spec(
        Action::CursorDown,
        "tui.editor.cursorDown",
        "cursorDown",
        &["down"],
        "down a line; the / list; later prompts",
    ),
    spec(
        Action::CursorLeft,
        "tui.editor.cursorLeft",
        "cursorLeft",
        &["left", "ctrl+b"],
        "back a character",
    ),
    spec(
        Action::CursorRight,
        "tui.editor.cursorRight",
        "cursorRight",
        &["right", "ctrl+f"],
        "forward a character",
    ),
    spec(
        Action::CursorWordLeft,
        "tui.editor.cursorWordLeft",
        "cursorWordLeft",
        &["alt+left", "ctrl+left", "alt+b"],
        "back a word",
    ),
    spec(
        Action::CursorWordRight,
        "tui.editor.cursorWordRight",
        "cursorWordRight",
        &["alt+right", "ctrl+right", "alt+f"],
        "forward a word",
    ),
    spec(
        Action::CursorLineStart,
        "tui.editor.cursorLineStart",
        "cursorLineStart",
        &["home", "ctrl+a"],
        "line start (Home on an empty editor: top of the conversation)",
    ),
    spec(
        Action::CursorLineEnd,
        "tui.editor.cursorLineEnd",
        "cursorLineEnd",
        &["end", "ctrl+e"],
        "line end (End on an empty editor: bottom of the conversation)",
    ),
    spec(
        Action::PageUp,
        "tui.editor.pageUp",
        "pageUp",
        &["pageUp"],
        "scroll the conversation up a page",
    ),
    spec(
        Action::PageDown,
        "tui.editor.pageDown",
        "pageDown",
        &["pageDown"],
        "scroll the conversation down a page",
    ),
    spec(
        Action::DeleteCharBackward,
        "tui.editor.deleteCharBackward",
        "deleteCharBackward",
        &["backspace"],
        "delete the character before (empty editor: the last attachment)",
    ),
    spec(
        Action::DeleteCharForward,
        "tui.editor.deleteCharForward",
        "deleteCharForward",
        &["delete", "ctrl+d"],
        "delete the character under the cursor",
    ),
    spec(
        Action::DeleteWordBackward,
        "tui.editor.deleteWordBackward",
        "deleteWordBackward",
        &["ctrl+w", "alt+backspace"],
        "delete the word before",
    ),
    spec(
        Action::DeleteWordForward,
        "tui.editor.deleteWordForward",
        "deleteWordForward",
        &["alt+d", "alt+delete"],
        "delete the word after",
    ),
    spec(
        Action::DeleteToLineStart,
        "tui.editor.deleteToLineStart",
        "deleteToLineStart",
        &["ctrl+u"],
        "delete to the line start",
    ),
    spec(
        Action::DeleteToLineEnd,
        "tui.editor.deleteToLineEnd",
        "deleteToLineEnd",
        &["ctrl+k"],
        "delete to the line end",
    ),
    spec(
        Action::Yank,
        "tui.editor.yank",
        "yank",
        &["ctrl+y"],
        "paste the text deleted last",
    ),
    spec(
        Action::Undo,
        "tui.editor.undo",
        "undo",
        &["ctrl+-"],
        "undo the last edit",
    ),
];

/// Pairs that share keys by design: the first acts when it applies (quitting needs an empty
/// editor), else the second.
const SHARED: &[(Action, Action)] = &[(Action::Exit, Action::DeleteCharForward)];

/// Ids the Node.js pi has and this pi does not (accepted quietly would mislead; unknown would
/// be wrong): they get their own warning.
const NODE_ONLY: &[&str] = &[
    "tui.editor.jumpForward",
    "tui.editor.jumpBackward",
    "tui.editor.yankPop",
    "tui.input.copy",
    "tui.select.up",
    "tui.select.down",
    "tui.select.pageUp",
    "tui.select.pageDown",
    "tui.select.confirm",
    "tui.select.cancel",
    "app.clipboard.pasteImage",
    "app.session.togglePath",
    "app.session.toggleSort",
    "app.session.toggleNamedFilter",
    "app.session.rename",
    "app.session.delete",
    "app.session.deleteNoninvasive",
    "app.tree.foldOrUp",
    "app.tree.unfoldOrDown",
    "app.tree.editLabel",
    "app.tree.toggleLabelTimestamp",
    "app.tree.filter.default",
    "app.tree.filter.noTools",
    "app.tree.filter.userOnly",
    "app.tree.filter.labeledOnly",
    "app.tree.filter.all",
    "app.tree.filter.cycleForward",
    "app.tree.filter.cycleBackward",
    "app.models.save",
    "app.models.enableAll",
    "app.models.clearAll",
    "app.models.toggleProvider",
    "app.models.reorderUp",
    "app.models.reorderDown",
];

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
                serde_json::Value::Array(a) if a.iter().all(|v| v.is_string()) => {
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
    let shown = crate::host::view::short_path(&path);
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
mod tests {
    use super::*;

    fn k(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    const CTRL: KeyModifiers = KeyModifiers::CONTROL;
    const SHIFT: KeyModifiers = KeyModifiers::SHIFT;
    const ALT: KeyModifiers = KeyModifiers::ALT;

    #[test]
    fn the_readme_lists_every_action_with_its_default_keys() {
        let readme = include_str!("../../README.md");
        for s in ACTIONS {
            let keys = if s.keys.is_empty() {
                "none".to_string()
            } else {
                let quoted: Vec<String> = s.keys.iter().map(|k| format!("`{k}`")).collect();
                quoted.join(", ")
            };
            let row = format!("| `{}` | {keys} |", s.id);
            assert!(readme.contains(&row), "README.md lacks {row}");
        }
    }

    #[test]
    fn key_strings_parse_into_keys() {
        let cases = [
            ("ctrl+p", KeyCode::Char('p'), CTRL),
            ("shift+ctrl+p", KeyCode::Char('p'), CTRL | SHIFT),
            ("Ctrl+Shift+P", KeyCode::Char('p'), CTRL | SHIFT),
            ("alt+up", KeyCode::Up, ALT),
            ("shift+tab", KeyCode::Tab, SHIFT),
            ("escape", KeyCode::Esc, KeyModifiers::NONE),
            ("esc", KeyCode::Esc, KeyModifiers::NONE),
            ("return", KeyCode::Enter, KeyModifiers::NONE),
            ("alt+enter", KeyCode::Enter, ALT),
            ("pageUp", KeyCode::PageUp, KeyModifiers::NONE),
            ("pagedown", KeyCode::PageDown, KeyModifiers::NONE),
            ("ctrl+alt+backspace", KeyCode::Backspace, CTRL | ALT),
            ("space", KeyCode::Char(' '), KeyModifiers::NONE),
            ("ctrl+-", KeyCode::Char('-'), CTRL),
            ("ctrl++", KeyCode::Char('+'), CTRL),
            ("+", KeyCode::Char('+'), KeyModifiers::NONE),
            ("ctrl+]", KeyCode::Char(']'), CTRL),
            ("f5", KeyCode::F(5), KeyModifiers::NONE),
            ("delete", KeyCode::Delete, KeyModifiers::NONE),
            ("ctrl+1", KeyCode::Char('1'), CTRL),
        ];
        for (text, code, mods) in cases {
            assert_eq!(Key::parse(text), Some(Key { code, mods }), "{text}");
        }
        for bad in [
            "",
            "ctrl+",
            "hyper+x",
            "ctrl+foo",
            "f13",
            "f0",
            "ctrl+shift",
            "+x",
            "clear",
        ] {
            assert_eq!(Key::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn events_match_keys_however_the_terminal_spells_them() {
        let map = Keymap::default();
        // Shift+Ctrl+P arrives as 'P' with or without Shift, or as 'p' with Shift.
        for e in [
            k(KeyCode::Char('P'), CTRL),
            k(KeyCode::Char('P'), CTRL | SHIFT),
            k(KeyCode::Char('p'), CTRL | SHIFT),
        ] {
            assert_eq!(map.actions(&e), [Action::ModelCycleBackward], "{e:?}");
        }
        assert_eq!(
            map.actions(&k(KeyCode::BackTab, KeyModifiers::NONE)),
            [Action::ThinkingCycle]
        );
        assert_eq!(
            map.actions(&k(KeyCode::BackTab, SHIFT)),
            [Action::ThinkingCycle]
        );
        assert_eq!(map.actions(&k(KeyCode::Char('j'), CTRL)), [Action::NewLine]);
        // Byte 0x1F (Ctrl+- in xterm and tmux) reaches crossterm as Ctrl+7.
        assert_eq!(map.actions(&k(KeyCode::Char('7'), CTRL)), [Action::Undo]);
        assert_eq!(map.actions(&k(KeyCode::Char('-'), CTRL)), [Action::Undo]);
        // A typed symbol with Shift is the symbol.
        let question = k(KeyCode::Char('?'), SHIFT);
        assert_eq!(Key::of(&question), Key::parse("?").unwrap());
        assert!(
            map.actions(&k(KeyCode::Char('x'), KeyModifiers::NONE))
                .is_empty()
        );
    }

    #[test]
    fn the_defaults_have_every_action_once_and_no_clash_but_the_shared_pair() {
        for s in ACTIONS {
            assert_eq!(s.action.spec().id, s.id);
            for key in s.keys {
                assert!(Key::parse(key).is_some(), "{}: {key}", s.id);
            }
        }
        let ids: HashSet<&str> = ACTIONS.iter().map(|s| s.id).collect();
        assert_eq!(ids.len(), ACTIONS.len());
        for id in NODE_ONLY {
            assert!(!ids.contains(id), "{id}");
        }
        let map = Keymap::default();
        for (key, actions) in &map.by_key {
            if actions.len() > 1 {
                assert_eq!(
                    actions,
                    &[Action::Exit, Action::DeleteCharForward],
                    "{key:?}"
                );
            }
        }
        assert_eq!(
            map.actions(&k(KeyCode::Char('d'), CTRL)),
            [Action::Exit, Action::DeleteCharForward]
        );
        assert!(map.released.is_empty());
    }

    #[test]
    fn the_persons_keys_replace_an_actions_defaults() {
        let (map, warnings) = Keymap::with_user(
            r#"{
                "app.model.select": "ctrl+x",
                "tui.editor.cursorUp": ["up", "alt+k"],
                "tui.input.submit": ["ctrl+enter"],
                "tui.input.newLine": "enter"
            }"#,
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            map.actions(&k(KeyCode::Char('x'), CTRL)),
            [Action::ModelSelect]
        );
        assert!(map.actions(&k(KeyCode::Char('l'), CTRL)).is_empty());
        assert!(map.released(&k(KeyCode::Char('l'), CTRL)));
        assert_eq!(map.actions(&k(KeyCode::Char('k'), ALT)), [Action::CursorUp]);
        assert_eq!(
            map.actions(&k(KeyCode::Up, KeyModifiers::NONE)),
            [Action::CursorUp]
        );
        assert_eq!(
            map.actions(&k(KeyCode::Enter, KeyModifiers::NONE)),
            [Action::NewLine]
        );
        assert_eq!(map.actions(&k(KeyCode::Enter, CTRL)), [Action::Submit]);
        // Shift+Enter was newLine's and is nobody's now.
        assert!(map.released(&k(KeyCode::Enter, SHIFT)));
        assert_eq!(map.label(Action::ModelSelect).as_deref(), Some("Ctrl+X"));
        // An empty list unbinds.
        let (map, warnings) = Keymap::with_user(r#"{"app.suspend": []}"#);
        assert!(warnings.is_empty());
        assert!(map.actions(&k(KeyCode::Char('z'), CTRL)).is_empty());
        // Older ids are the same actions.
        let (map, warnings) =
            Keymap::with_user(r#"{"expandTools": "ctrl+e", "cursorLineEnd": "end"}"#);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            map.actions(&k(KeyCode::Char('e'), CTRL)),
            [Action::ToolsExpand]
        );
    }

    #[test]
    fn unknown_ids_bad_keys_and_broken_files_are_warnings() {
        let (map, warnings) = Keymap::with_user(
            r#"{
                "app.model.selct": "ctrl+x",
                "app.tree.editLabel": "shift+l",
                "app.thinking.toggle": ["ctrl+foo", "alt+t"],
                "app.tools.expand": ["hyper+o"],
                "app.exit": 3
            }"#,
        );
        assert_eq!(
            warnings,
            [
                "unknown action \"app.model.selct\" (ignored)",
                "\"app.tree.editLabel\" is not an action this pi has (ignored)",
                "\"app.thinking.toggle\": \"ctrl+foo\" is not a key pi knows",
                "\"app.tools.expand\": \"hyper+o\" is not a key pi knows",
                "\"app.tools.expand\" keeps its default keys",
                "\"app.exit\": expected a key or an array of keys (keeping its defaults)",
            ]
        );
        assert_eq!(
            map.actions(&k(KeyCode::Char('t'), ALT)),
            [Action::ThinkingToggle]
        );
        assert!(map.actions(&k(KeyCode::Char('t'), CTRL)).is_empty());
        assert_eq!(
            map.actions(&k(KeyCode::Char('o'), CTRL)),
            [Action::ToolsExpand]
        );
        assert_eq!(map.actions(&k(KeyCode::Char('d'), CTRL))[0], Action::Exit);

        let (map, warnings) = Keymap::with_user("{\n  \"app.exit\": \"ctrl+q\",\n  oops\n}");
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with("not valid JSON at line 3, column 3"),
            "{warnings:?}"
        );
        assert!(
            warnings[0].ends_with("using the default keys"),
            "{warnings:?}"
        );
        assert_eq!(map.actions(&k(KeyCode::Char('d'), CTRL))[0], Action::Exit);
        let (_, warnings) = Keymap::with_user("[1, 2]");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
    }

    #[test]
    fn a_clash_is_won_by_the_persons_binding_and_reported() {
        // Ctrl+Y is yank's by default.
        let (map, warnings) = Keymap::with_user(r#"{"app.model.select": "ctrl+y"}"#);
        assert_eq!(
            warnings,
            ["\"ctrl+y\" now does app.model.select, no longer tui.editor.yank"]
        );
        assert_eq!(
            map.actions(&k(KeyCode::Char('y'), CTRL)),
            [Action::ModelSelect]
        );
        assert!(map.keys(Action::Yank).is_empty());

        // Two of the person's own: the first in the file keeps the key.
        let (map, warnings) = Keymap::with_user(
            r#"{"app.tools.expand": "alt+x", "app.thinking.toggle": ["alt+x", "alt+t"]}"#,
        );
        assert_eq!(
            warnings,
            [
                "\"alt+x\" is given to both app.tools.expand and app.thinking.toggle; app.tools.expand keeps it"
            ]
        );
        assert_eq!(
            map.actions(&k(KeyCode::Char('x'), ALT)),
            [Action::ToolsExpand]
        );
        assert_eq!(
            map.actions(&k(KeyCode::Char('t'), ALT)),
            [Action::ThinkingToggle]
        );

        // The Emacs example: Ctrl+D deletes forward and still quits on an empty editor;
        // Ctrl+P moves up instead of cycling models.
        let (map, warnings) = Keymap::with_user(
            r#"{
                "tui.editor.cursorUp": ["up", "ctrl+p"],
                "tui.editor.deleteCharForward": ["delete", "ctrl+d"],
                "tui.editor.deleteCharBackward": ["backspace", "ctrl+h"]
            }"#,
        );
        assert_eq!(
            warnings,
            ["\"ctrl+p\" now does tui.editor.cursorUp, no longer app.model.cycleForward"]
        );
        assert_eq!(
            map.actions(&k(KeyCode::Char('d'), CTRL)),
            [Action::Exit, Action::DeleteCharForward]
        );
        assert_eq!(
            map.actions(&k(KeyCode::Char('p'), CTRL)),
            [Action::CursorUp]
        );
    }
}
