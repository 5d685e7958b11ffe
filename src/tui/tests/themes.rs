//! Themes: the light palette draws the same text in its own colours, down to the footer, the editor and the popups.

use super::*;

// ----- themes -----------------------------------------------------------------------------

/// A mixed transcript drawn with `theme` on this thread: its text and its buffer.
fn themed_cells(theme: crate::tui::theme::Theme) -> (String, ratatui::buffer::Buffer) {
    crate::tui::theme::scoped(theme, || {
        let md = "# Title\n\nRun `cargo test`, see [docs](https://x.dev).";
        let cells = vec![
            Cell::User("hello".into()),
            Cell::assistant(assistant(vec![ContentBlock::text(md)]), false),
            Cell::Tool(ToolCell {
                id: "t1".into(),
                name: "edit".into(),
                args: Arc::new(json!({"path": "a.rs"})),
                state: ToolState::Done {
                    ok: true,
                    took: Duration::from_millis(10),
                },
                output: String::new(),
                diff: Some("-1 old\n+1 new".into()),
                saved: None,
            }),
            Cell::Error("boom".into()),
        ];
        let mut t = Transcript::default();
        for c in cells {
            t.push(c);
        }
        let rows = t.visible(40, 16, &view(Instant::now()));
        let mut term = Terminal::new(TestBackend::new(40, 16)).unwrap();
        term.draw(|f| f.render_widget(Paragraph::new(rows), f.area()))
            .unwrap();
        (term.backend().to_string(), term.backend().buffer().clone())
    })
}

/// Foreground and background of the first cell where `needle` starts.
fn colours_at(
    buf: &ratatui::buffer::Buffer,
    needle: &str,
) -> (ratatui::style::Color, ratatui::style::Color) {
    let area = buf.area;
    for y in 0..area.height {
        let row: String = (0..area.width).map(|x| buf[(x, y)].symbol()).collect();
        if let Some(byte) = row.find(needle) {
            let x = row[..byte].chars().count() as u16;
            let c = &buf[(x, y)];
            return (c.fg, c.bg);
        }
    }
    panic!("{needle:?} is not on screen");
}

/// Runs of same-coloured, non-blank text per row: what a reviewer needs to see a palette.
fn style_runs(buf: &ratatui::buffer::Buffer) -> String {
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut runs: Vec<(ratatui::style::Color, ratatui::style::Color, String)> = Vec::new();
        for x in 0..buf.area.width {
            let c = &buf[(x, y)];
            match runs.last_mut() {
                Some(r) if r.0 == c.fg && r.1 == c.bg => r.2.push_str(c.symbol()),
                _ => runs.push((c.fg, c.bg, c.symbol().to_string())),
            }
        }
        for (fg, bg, text) in runs {
            if !text.trim().is_empty() {
                out.push_str(&format!("{y:>2} {fg:?}/{bg:?} {:?}\n", text.trim_end()));
            }
        }
    }
    out
}

#[test]
fn the_light_theme_draws_the_same_text_in_its_own_colours() {
    use crate::tui::theme::Theme;
    use ratatui::style::Color;
    let (dark_text, dark) = themed_cells(Theme::DARK);
    let (light_text, light) = themed_cells(Theme::LIGHT);
    assert_eq!(dark_text, light_text, "themes change colours, not text");
    for (buf, t) in [(&dark, Theme::DARK), (&light, Theme::LIGHT)] {
        assert_eq!(colours_at(buf, "hello"), (t.user_fg, t.user_bg));
        assert_eq!(colours_at(buf, "Title").0, t.heading_1);
        assert_eq!(colours_at(buf, "cargo test").0, t.code);
        assert_eq!(colours_at(buf, "docs").0, t.link);
        assert_eq!(colours_at(buf, "(https").0, t.dim);
        assert_eq!(colours_at(buf, "✓").0, t.success);
        assert_eq!(colours_at(buf, "+1 new").0, t.diff_added);
        assert_eq!(colours_at(buf, "-1 old").0, t.diff_removed);
        assert_eq!(colours_at(buf, "Error: boom").0, t.error);
    }
    // The dark palette is the UI's look from before themes: the existing snapshots hold.
    assert_eq!(
        colours_at(&dark, "hello"),
        (Color::White, Color::Indexed(236))
    );
    assert_eq!(colours_at(&dark, "Title").0, Color::Magenta);
    assert_ne!(colours_at(&light, "Title").0, Color::Magenta);
    insta::assert_snapshot!(style_runs(&light));
}

#[test]
fn the_theme_reaches_the_footer_editor_and_popups() {
    use crate::config::theme::{ColorValue, ThemeName};
    use crate::tui::theme::Theme;
    use ratatui::style::Color;
    let mut overrides = std::collections::BTreeMap::new();
    overrides.insert("accent".to_string(), ColorValue::Rgb(1, 2, 3));
    let theme = Theme::build(ThemeName::Light, &overrides);
    let now = Instant::now();
    let buf = crate::tui::theme::scoped(theme, || {
        let (mut app, _) = app();
        type_text(&mut app, "/");
        let mut term = Terminal::new(TestBackend::new(60, 16)).unwrap();
        term.draw(|f| render::draw(f, &mut app, now)).unwrap();
        term.backend().buffer().clone()
    });
    assert_eq!(colours_at(&buf, "~/src/demo").0, theme.dim);
    assert_eq!(
        colours_at(&buf, "─").0,
        theme.thinking[3],
        "medium thinking rule"
    );
    // The selected completion uses the overridden accent.
    let selected = (0..16)
        .flat_map(|y| (0..60).map(move |x| (x, y)))
        .map(|p| buf[p].fg)
        .any(|fg| fg == Color::Rgb(1, 2, 3));
    assert!(selected, "{}", style_runs(&buf));
}
