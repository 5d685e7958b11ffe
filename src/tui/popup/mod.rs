//! Popups: each in its own file, owning its state, its keys and its drawing, and answering a
//! key with an outcome the app carries out (the app alone talks to the host).
//!
//! The modal ones (model picker, session picker, tree, rewind, login, themes) live on one [`Stack`]: keys go to
//! the top one, and they are drawn bottom to top. The approval prompt is a queue of the host's
//! requests that sits above the stack while it holds one; the `@` file picker belongs to the
//! composer (it follows the word being typed, and keys it does not take go on to the editor).
//! The folder-trust question is asked before the screen is set up.

pub mod approval;
pub mod file_picker;
pub mod login;
pub mod model;
pub mod plan;
pub mod rewind;
pub mod sessions;
pub mod theme;
pub mod tree;
pub mod trust;

use login::LoginView;
use model::ModelPicker;
use rewind::RewindView;
use sessions::SessionPicker;
use theme::ThemePicker;
use tree::TreeView;

/// One modal popup.
#[derive(Debug)]
pub enum Popup {
    Model(ModelPicker),
    Sessions(SessionPicker),
    Tree(TreeView),
    Login(LoginView),
    Theme(ThemePicker),
    Rewind(RewindView),
    Plan(plan::PlanChoice),
}

impl Popup {
    fn same_kind(&self, other: &Popup) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

/// The open popups, the last on top.
#[derive(Debug, Default)]
pub struct Stack(Vec<Popup>);

macro_rules! find {
    ($get:ident, $get_mut:ident, $close:ident, $variant:ident, $ty:ty) => {
        pub fn $get(&self) -> Option<&$ty> {
            self.0.iter().rev().find_map(|p| match p {
                Popup::$variant(v) => Some(v),
                _ => None,
            })
        }

        pub fn $get_mut(&mut self) -> Option<&mut $ty> {
            self.0.iter_mut().rev().find_map(|p| match p {
                Popup::$variant(v) => Some(v),
                _ => None,
            })
        }

        pub fn $close(&mut self) {
            self.0.retain(|p| !matches!(p, Popup::$variant(_)));
        }
    };
}

impl Stack {
    /// Open `popup` on top; one of the same kind already open is replaced.
    pub fn push(&mut self, popup: Popup) {
        self.0.retain(|p| !p.same_kind(&popup));
        self.0.push(popup);
    }

    pub fn top_mut(&mut self) -> Option<&mut Popup> {
        self.0.last_mut()
    }

    /// Close the top popup.
    pub fn pop(&mut self) -> Option<Popup> {
        self.0.pop()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Bottom to top, the order they are drawn in.
    pub fn iter(&self) -> impl Iterator<Item = &Popup> {
        self.0.iter()
    }

    find!(model, model_mut, close_model, Model, ModelPicker);
    find!(
        sessions,
        sessions_mut,
        close_sessions,
        Sessions,
        SessionPicker
    );
    find!(tree, tree_mut, close_tree, Tree, TreeView);
    find!(login, login_mut, close_login, Login, LoginView);
    find!(theme, theme_mut, close_theme, Theme, ThemePicker);
    find!(rewind, rewind_mut, close_rewind, Rewind, RewindView);
    find!(plan, plan_mut, close_plan, Plan, plan::PlanChoice);
}
