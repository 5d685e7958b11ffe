//! Each component drawn on its own (TestBackend snapshots): the footer, the composer's status
//! line, the model picker and the login popup, given only what they show, not the app.

use super::*;
use crate::agent::protocol::types::UsageTotals;
use crate::approval::ApprovalMode;
use crate::tui::composer::{Composer, Status};
use crate::tui::footer::Footer;
use crate::tui::keymap::Keymap;
use crate::tui::popup::login::{Choice, LoginView};
use crate::tui::popup::model::{Catalogue, ModelPicker};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

fn text(buf: &Buffer) -> String {
    let area = buf.area;
    (area.y..area.bottom())
        .map(|y| {
            (area.x..area.right())
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn snapshot_footer_with_and_without_a_model() {
    let place = Place {
        cwd: "~/src/demo".into(),
        branch: Some("main".into()),
        session_name: Some("refactor".into()),
    };
    let totals = UsageTotals {
        input: 12_300,
        output: 850,
        cache_read: 4_000,
        cost: 0.042,
        ..Default::default()
    };
    let m = model("qwen3:8b", "ollama");
    let now = Instant::now();
    let draw = |model: Option<&ModelInfo>, approval, paused| {
        let footer = Footer {
            place: &place,
            totals: &totals,
            context_tokens: 16_000,
            model,
            thinking: ThinkingLevel::High,
            approval,
            planning: false,
            paused_since: paused,
            subscription: None,
        };
        let mut buf = Buffer::empty(Rect::new(0, 0, 70, 2));
        footer.draw(buf.area, &mut buf, now);
        text(&buf)
    };
    let ready = draw(Some(&m), ApprovalMode::Auto, None);
    let none = draw(None, ApprovalMode::Ask, Some(now - Duration::from_secs(75)));
    assert!(none.contains("no model"), "{none}");
    insta::assert_snapshot!(format!("{ready}\n\n{none}"));
}

#[test]
fn the_footer_names_the_subscription_and_drops_a_cost_the_plan_has_not() {
    use crate::provider::subscription::Kind;
    let place = Place {
        cwd: "~/src/demo".into(),
        ..Default::default()
    };
    let totals = UsageTotals {
        input: 1_000,
        output: 200,
        cost: 0.042,
        ..Default::default()
    };
    let m = model("gpt-5.5", "openai-codex");
    let draw = |subscription| {
        let footer = Footer {
            place: &place,
            totals: &totals,
            context_tokens: 1_000,
            model: Some(&m),
            thinking: ThinkingLevel::High,
            approval: ApprovalMode::Auto,
            planning: false,
            paused_since: None,
            subscription,
        };
        let mut buf = Buffer::empty(Rect::new(0, 0, 100, 2));
        footer.draw(buf.area, &mut buf, Instant::now());
        text(&buf)
    };
    let codex = draw(Some(Kind::Codex));
    assert!(
        codex.contains("↑1.0k ↓200 · ChatGPT Plus/Pro (Codex)"),
        "{codex}"
    );
    assert!(!codex.contains('$'), "{codex}");
    let claude = draw(Some(Kind::Claude));
    assert!(claude.contains("$0.042 · Claude Pro/Max"), "{claude}");
}

#[test]
fn snapshot_composer_status_names_the_live_keys() {
    let (keys, _) =
        Keymap::with_user(r#"{ "app.interrupt": "ctrl+x", "app.agent.pause": "alt+s" }"#);
    let now = Instant::now();
    let started = now - Duration::from_secs(4);
    let steering = vec!["also check the docs".to_string()];
    let c = Composer {
        steering,
        ..Composer::default()
    };
    let draw = |paused: Option<Instant>| {
        let status = Status {
            working: Some(started),
            stopping: false,
            paused_since: paused,
            retry: None,
            thinking: ThinkingLevel::Medium,
            keys: &keys,
        };
        let rows: Vec<Line<'static>> = c
            .queued_lines(&keys, 70)
            .into_iter()
            .chain([c.status_line(&status, now)])
            .collect();
        rows.iter()
            .map(|l| l.to_string().trim_end().to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let working = draw(None);
    let paused = draw(Some(now - Duration::from_secs(3)));
    assert!(working.contains("ctrl+x to interrupt"), "{working}");
    assert!(paused.contains("alt+s goes on · ctrl+x aborts"), "{paused}");
    insta::assert_snapshot!(format!("{working}\n\n{paused}"));
}

#[test]
fn snapshot_model_picker_alone() {
    let models = vec![
        model("qwen3:8b", "ollama"),
        model("claude-sonnet-4-5", "anthropic"),
        model("gpt-5", "openai"),
    ];
    let without_key = std::collections::HashSet::from(["openai".to_string()]);
    let cat = Catalogue {
        models: &models,
        current: &models[1],
        catalog: None,
        without_key: &without_key,
    };
    let picker = ModelPicker::open("", &cat);
    assert_eq!(picker.selected, 1, "it opens on the current model");
    let mut buf = Buffer::empty(Rect::new(0, 0, 60, 8));
    let area = buf.area;
    let covered = picker.draw(&mut buf, area, &cat);
    assert_eq!(covered.height, 6);
    insta::assert_snapshot!(text(&buf));
}

#[test]
fn snapshot_login_popup_alone() {
    let mut view = LoginView::new(vec![
        Choice::Provider {
            id: "anthropic".into(),
            env: Some("ANTHROPIC_API_KEY".into()),
            has_key: true,
        },
        Choice::Provider {
            id: "groq".into(),
            env: Some("GROQ_API_KEY".into()),
            has_key: false,
        },
    ]);
    view.add_local(vec![model("qwen3:8b", "ollama")]);
    let mut buf = Buffer::empty(Rect::new(0, 0, 70, 7));
    let area = buf.area;
    view.draw(&mut buf, area);
    insta::assert_snapshot!(text(&buf));
}
