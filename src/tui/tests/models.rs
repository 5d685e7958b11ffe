//! Models and set-up: Ctrl+P cycling, the model picker, the start-up header, `/login`, `/mcp`.

use super::*;

#[test]
fn ctrl_p_cycles_the_scoped_models_with_their_levels() {
    let (mut app, port) = app();
    let ctrl = KeyModifiers::CONTROL;
    // Without a scope: the models whose provider has a key.
    app.providers_without_key = ["openai".to_string()].into_iter().collect();
    app.handle_key(with(KeyCode::Char('p'), ctrl));
    assert_eq!(app.model.id, "claude-sonnet-4-5");
    app.handle_key(with(KeyCode::Char('p'), ctrl));
    assert_eq!(app.model.id, "qwen3:8b", "openai has no key and is skipped");
    // With a scope: its order and levels, backwards with Shift.
    app.scoped_models = vec![
        (model("qwen3:8b", "ollama"), None),
        (model("gpt-5", "openai"), Some(ThinkingLevel::High)),
        (
            model("claude-sonnet-4-5", "anthropic"),
            Some(ThinkingLevel::Low),
        ),
    ];
    app.handle_key(with(KeyCode::Char('p'), ctrl));
    assert_eq!(
        (app.model.id.as_str(), app.thinking),
        ("gpt-5", ThinkingLevel::High)
    );
    app.handle_key(with(KeyCode::Char('p'), ctrl | KeyModifiers::SHIFT));
    assert_eq!(app.model.id, "qwen3:8b");
    app.handle_key(with(KeyCode::Char('P'), ctrl | KeyModifiers::SHIFT));
    assert_eq!(
        (app.model.id.as_str(), app.thinking),
        ("claude-sonnet-4-5", ThinkingLevel::Low)
    );
    assert_eq!(
        port.log().models,
        [
            "claude-sonnet-4-5",
            "qwen3:8b",
            "gpt-5",
            "qwen3:8b",
            "claude-sonnet-4-5"
        ]
    );
    // A scope of one model it is already on says so.
    app.scoped_models = vec![(model("claude-sonnet-4-5", "anthropic"), None)];
    app.handle_key(with(KeyCode::Char('p'), ctrl));
    let s = screen(&mut app, 100, 30, Instant::now());
    assert!(s.contains("No other model to switch to"), "{s}");
}

#[test]
fn the_picker_opens_on_the_current_model_marks_keyless_ones_and_edits_its_filter() {
    let (mut app, _port) = app();
    app.model = model("my-local-model", "ollama");
    app.providers_without_key = ["openai".to_string()].into_iter().collect();
    app.run_command("model", "");
    let matches: Vec<String> = app.picker_matches().iter().map(|m| m.id.clone()).collect();
    assert_eq!(
        matches[0], "my-local-model",
        "listed though not in the catalogue"
    );
    assert_eq!(app.popups.model().unwrap().selected, 0);
    let s = screen(&mut app, 80, 20, Instant::now());
    assert!(s.contains("ollama/my-local-model  128k  (current)"), "{s}");
    assert!(s.contains("openai/gpt-5  128k  no key"), "{s}");
    type_text(&mut app, "gpt five");
    let ctrl = KeyModifiers::CONTROL;
    app.handle_key(with(KeyCode::Char('w'), ctrl));
    assert_eq!(app.popups.model().unwrap().query, "gpt ");
    app.handle_key(with(KeyCode::Char('u'), ctrl));
    assert_eq!(app.popups.model().unwrap().query, "");
    app.handle_key(key(KeyCode::Esc));
    // Reopened on a catalogued model, the selection starts on it.
    app.model = model("gpt-5", "openai");
    app.run_command("model", "");
    let p = app.popups.model().unwrap();
    assert_eq!(app.picker_matches()[p.selected].id, "gpt-5");
}

#[test]
fn the_picker_takes_an_uncatalogued_id_as_model_and_rpc_take_it() {
    let (mut app, port) = app();
    let catalog = std::sync::Arc::new(crate::provider::catalog::Catalog::builtin(&|_| None));
    app.catalog = Some(catalog.clone());
    // `/model provider/id` naming an id the catalogue does not list, on a known provider.
    app.run_command("model", "anthropic/claude-opus-9");
    let named: Vec<String> = app
        .picker_matches()
        .iter()
        .map(|m| format!("{}/{}", m.provider, m.id))
        .collect();
    assert_eq!(named, ["anthropic/claude-opus-9"]);
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(port.log().models, ["claude-opus-9"]);
    assert_eq!(app.model.id, "claude-opus-9");
    // The warning is the one `--model` and RPC `set_model` give.
    let (_, warning) =
        crate::setup::select::model_by_id(&catalog, "anthropic", "claude-opus-9", None).unwrap();
    let warning = warning.expect("an uncatalogued id is warned about");
    let s = screen(&mut app, 400, 30, Instant::now());
    assert!(s.contains(&warning), "{s}");
    // An unknown provider names nothing, as it is refused there.
    app.run_command("model", "nobody/x");
    assert!(app.picker_matches().is_empty());
    // Typing the id in the open picker names it too.
    app.handle_key(key(KeyCode::Esc));
    app.run_command("model", "");
    type_text(&mut app, "openai/gpt-9");
    assert_eq!(app.picker_matches()[0].id, "gpt-9");
}

#[test]
fn shift_tab_on_a_model_that_does_not_reason_says_so() {
    let (mut app, port) = app();
    let mut plain = model("llama3", "ollama");
    plain.reasoning = false;
    app.model = plain;
    app.thinking = ThinkingLevel::Off;
    app.handle_key(key(KeyCode::BackTab));
    assert!(port.log().thinking.is_empty());
    let s = screen(&mut app, 100, 20, Instant::now());
    assert!(s.contains("llama3 does not reason"), "{s}");
}

#[test]
fn the_start_header_shows_model_folder_and_keys_until_the_first_prompt() {
    let (mut app, _port) = app();
    app.show_header("9.9.9", true);
    let s = screen(&mut app, 100, 20, Instant::now());
    assert!(
        s.contains("pi 9.9.9 · ollama/qwen3:8b · thinking medium · ~/src/demo"),
        "{s}"
    );
    assert!(
        s.contains("/help commands · Esc interrupt · Ctrl+D quit"),
        "{s}"
    );
    app.run_command("thinking", "high");
    let s = screen(&mut app, 100, 40, Instant::now());
    assert!(s.contains("pi 9.9.9"), "a command keeps it: {s}");
    type_text(&mut app, "hello");
    app.handle_key(key(KeyCode::Enter));
    let s = screen(&mut app, 100, 40, Instant::now());
    assert!(!s.contains("pi 9.9.9"), "{s}");
}

#[test]
fn the_start_header_names_the_sandbox_when_there_is_one() {
    let (mut app, _port) = app();
    app.sandbox = Some("sandbox read-only (Landlock ABI 7)".into());
    app.show_header("9.9.9", true);
    let s = screen(&mut app, 120, 20, Instant::now());
    assert!(
        s.contains("~/src/demo · sandbox read-only (Landlock ABI 7)"),
        "{s}"
    );
}

#[test]
fn login_takes_a_pasted_key_without_showing_it_and_switches_model() {
    let (mut app, port) = app();
    app.key_providers = vec![
        ("anthropic".into(), Some("ANTHROPIC_API_KEY".into())),
        ("groq".into(), Some("GROQ_API_KEY".into())),
    ];
    app.providers_without_key = ["anthropic".to_string(), "groq".to_string()]
        .into_iter()
        .collect();
    app.show_welcome("No model to talk to.");
    app.run_command("login", "");
    assert_eq!(port.log().local_searches, 1);
    let s = screen(&mut app, 80, 20, Instant::now());
    assert!(s.contains("looking for local servers"), "{s}");
    // The three subscriptions come first, then anthropic, then groq.
    for _ in 0..4 {
        app.handle_key(key(KeyCode::Down));
    }
    app.handle_key(key(KeyCode::Enter));
    app.handle_paste("gsk-very-secret-key");
    let s = screen(&mut app, 80, 20, Instant::now());
    assert!(s.contains("API key for groq"), "{s}");
    assert!(
        s.contains("•••") && !s.contains("gsk-very-secret-key"),
        "{s}"
    );
    app.handle_key(key(KeyCode::Enter));
    assert!(app.popups.login().is_none());
    assert_eq!(
        port.log().logins,
        [("groq".to_string(), "gsk-very-secret-key".to_string())]
    );
    assert!(
        app.composer.editor.is_empty(),
        "the key never reaches the editor"
    );
    let mut groq = model("openai/gpt-oss-120b", "groq");
    groq.reasoning = true;
    app.handle_host_event(HostEvent::LoggedIn(crate::host::login::LoggedIn {
        provider: "groq".into(),
        file: Some(std::path::PathBuf::from("/nowhere/auth.json")),
        model: Some(groq),
    }));
    assert_eq!(app.model.id, "openai/gpt-oss-120b");
    assert!(!app.providers_without_key.contains("groq"));
    let s = screen(&mut app, 100, 30, Instant::now());
    assert!(s.contains("Welcome to pi. No model is ready yet."), "{s}");
    assert!(
        s.contains(
            "Saved the key for groq in /nowhere/auth.json · model: groq/openai/gpt-oss-120b"
        ),
        "{s}"
    );
    assert!(!s.contains("gsk-very-secret-key"));
}

#[test]
fn login_signs_in_to_a_subscription_shows_the_address_and_switches_model() {
    use crate::provider::subscription::flows::Notice;
    let (mut app, port) = app();
    app.key_providers = vec![("anthropic".into(), None)];
    app.signed_in = ["github-copilot".to_string()].into_iter().collect();
    app.run_command("login", "");
    let s = screen(&mut app, 100, 20, Instant::now());
    assert!(
        s.contains("ChatGPT Plus/Pro (Codex)  subscription · openai-codex"),
        "{s}"
    );
    assert!(
        s.contains("GitHub Copilot  subscription · github-copilot  signed in"),
        "{s}"
    );
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(port.log().sign_ins, ["sign-in openai-codex"]);
    app.handle_host_event(HostEvent::SignInNotice(Notice::OpenUrl {
        url: "https://auth.example/oauth/authorize?state=s1".into(),
        paste_hint: true,
    }));
    let s = screen(&mut app, 100, 30, Instant::now());
    assert!(
        s.contains("https://auth.example/oauth/authorize?state=s1"),
        "{s}"
    );
    assert!(s.contains("Esc cancel"), "{s}");
    // Shown wrapped, so also put on the clipboard for copying.
    assert!(app.take_effects().contains(&crate::tui::app::Effect::Copy(
        "https://auth.example/oauth/authorize?state=s1".into()
    )));
    // An address pasted from a browser on another machine goes to the sign-in.
    app.handle_paste("http://localhost:1455/auth/callback?code=c&state=s1");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(
        port.log().sign_ins[1],
        "paste http://localhost:1455/auth/callback?code=c&state=s1"
    );
    let codex = model("gpt-5.5", "openai-codex");
    app.handle_host_event(HostEvent::SignedIn(Box::new(
        crate::host::login::SignedIn {
            provider: "openai-codex".into(),
            label: "ChatGPT Plus/Pro (Codex)".into(),
            file: Some(std::path::PathBuf::from("/nowhere/auth.json")),
            model: Some(codex.clone()),
            models: vec![codex],
        },
    )));
    assert!(app.popups.login().is_none());
    assert_eq!(app.model.id, "gpt-5.5");
    assert!(app.models.iter().any(|m| m.provider == "openai-codex"));
    assert!(app.signed_in.contains("openai-codex"));
    let s = screen(&mut app, 100, 30, Instant::now());
    assert!(s.contains("Signed in to ChatGPT Plus/Pro (Codex)"), "{s}");
}

#[test]
fn a_device_code_is_shown_and_put_on_the_clipboard() {
    use crate::provider::subscription::flows::Notice;
    let (mut app, _port) = app();
    app.run_command("login", "");
    app.handle_key(key(KeyCode::Enter));
    app.handle_host_event(HostEvent::SignInNotice(Notice::DeviceCode {
        url: "https://github.example/login/device".into(),
        code: "ABCD-1234".into(),
    }));
    let s = screen(&mut app, 120, 30, Instant::now());
    assert!(
        s.contains("Open https://github.example/login/device and enter the code ABCD-1234"),
        "{s}"
    );
    assert!(
        app.take_effects()
            .contains(&crate::tui::app::Effect::Copy("ABCD-1234".into()))
    );
}

#[test]
fn a_sign_in_is_cancelled_with_esc_and_logout_names_the_provider() {
    let (mut app, port) = app();
    app.run_command("login", "");
    app.handle_key(key(KeyCode::Down));
    app.handle_key(key(KeyCode::Enter));
    app.handle_key(key(KeyCode::Esc));
    assert!(app.popups.login().is_none());
    assert_eq!(port.log().sign_ins, ["sign-in anthropic", "cancel"]);
    app.run_command("logout", "");
    let s = screen(&mut app, 100, 20, Instant::now());
    assert!(s.contains("Usage: /logout PROVIDER"), "{s}");
    app.run_command("logout", "anthropic");
    assert_eq!(port.log().sign_ins[2], "logout anthropic");
}

#[test]
fn login_offers_local_servers_first() {
    let (mut app, port) = app();
    app.key_providers = vec![("anthropic".into(), None)];
    app.run_command("login", "");
    app.handle_host_event(HostEvent::LocalModels(vec![model("qwen3:8b", "ollama")]));
    let s = screen(&mut app, 80, 20, Instant::now());
    assert!(
        s.contains("ollama/qwen3:8b  local server, no key needed"),
        "{s}"
    );
    app.model = model("claude-sonnet-4-5", "anthropic");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(app.model.id, "qwen3:8b");
    assert_eq!(port.log().models, ["qwen3:8b"]);
}

#[test]
fn slash_mcp_asks_the_host_and_lists_the_servers() {
    use crate::host::view::{ServerState, ServerStatus, ToolEntry};
    let (mut app, port) = app();
    let names: Vec<_> = app
        .commands
        .completions("/mc")
        .iter()
        .map(|c| c.name.to_string())
        .collect();
    assert_eq!(names, ["mcp"]);
    type_text(&mut app, "/mcp");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(port.log().mcp_status, 1);
    app.handle_host_event(HostEvent::McpStatus(vec![
        ServerStatus {
            name: "docs".into(),
            endpoint: "docs-server --stdio".into(),
            state: ServerState::Ready,
            tools: vec![
                ToolEntry {
                    name: "mcp__docs__search".into(),
                    remote: "search".into(),
                },
                ToolEntry {
                    name: "mcp__docs__fetch".into(),
                    remote: "fetch".into(),
                },
            ],
        },
        ServerStatus {
            name: "web".into(),
            endpoint: "http://127.0.0.1:9/mcp".into(),
            state: ServerState::Starting,
            tools: vec![],
        },
        ServerStatus {
            name: "gone".into(),
            endpoint: "nope".into(),
            state: ServerState::Failed("cannot run `nope`: not found".into()),
            tools: vec![],
        },
        ServerStatus {
            name: "off".into(),
            endpoint: "x".into(),
            state: ServerState::Disabled,
            tools: vec![],
        },
    ]));
    let s = screen(&mut app, 80, 30, Instant::now());
    for line in [
        "MCP servers:",
        "docs (docs-server --stdio): ready with 2 tools",
        "mcp__docs__search",
        "mcp__docs__fetch",
        "web (http://127.0.0.1:9/mcp): starting",
        "gone (nope): failed: cannot run `nope`: not found",
        "off (x): disabled",
    ] {
        assert!(s.contains(line), "missing {line:?} in\n{s}");
    }
}
