//! Editing a picker's filter text the way a shell line is edited: Ctrl+U clears it, Ctrl+W and
//! Alt+Backspace delete the word before the end. Shared by the model, session and tree pickers.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Apply a line-editing key to `query`; `true` when the key was one (whether or not the text
/// changed).
pub fn edit(query: &mut String, key: &KeyEvent) -> bool {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    match key.code {
        KeyCode::Char('u') if ctrl => query.clear(),
        KeyCode::Char('w') if ctrl => delete_word(query),
        KeyCode::Backspace if alt || ctrl => delete_word(query),
        _ => return false,
    }
    true
}

/// Remove the last word (and the spaces after it).
fn delete_word(query: &mut String) {
    let kept = query.trim_end().len();
    let cut = query[..kept]
        .rfind(char::is_whitespace)
        .map_or(0, |i| i + 1);
    query.truncate(cut);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctrl_u_clears_and_ctrl_w_deletes_a_word() {
        let ctrl = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL);
        let mut q = String::from("fix the parser  ");
        assert!(edit(&mut q, &ctrl('w')));
        assert_eq!(q, "fix the ");
        assert!(edit(
            &mut q,
            &KeyEvent::new(KeyCode::Backspace, KeyModifiers::ALT)
        ));
        assert_eq!(q, "fix ");
        assert!(edit(&mut q, &ctrl('u')));
        assert_eq!(q, "");
        assert!(!edit(
            &mut q,
            &KeyEvent::new(KeyCode::Char('u'), KeyModifiers::NONE)
        ));
        assert!(!edit(
            &mut q,
            &KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE)
        ));
    }
}
