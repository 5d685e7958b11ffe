//! The real binary: `--version`, `--help`, `--list-models`, and clear failures without a model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};

fn pi() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pi"));
    // No keys, no config, no local server from the machine running the tests.
    c.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", std::env::temp_dir().join("pi-cli-test-home"))
        .env("OLLAMA_HOST", "127.0.0.1:9")
        .stdin(Stdio::null());
    c
}

#[test]
fn version_prints_the_crate_version() {
    for flag in ["--version", "-v"] {
        let out = pi().arg(flag).output().unwrap();
        assert!(out.status.success());
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!("pi {}", env!("CARGO_PKG_VERSION"))
        );
    }
}

#[test]
fn the_node_pi_two_letter_flags_are_spelled_out_but_not_after_a_double_dash() {
    let args = pi::cli::expand_short_flags(
        ["pi", "-nt", "-nc", "-np", "-nbt", "-ne", "--", "-nt"].map(Into::into),
    );
    let args: Vec<String> = args
        .into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        args,
        [
            "pi",
            "--no-tools",
            "--no-context-files",
            "--no-prompt-templates",
            "--no-builtin-tools",
            "--no-extensions",
            "--",
            "-nt"
        ]
    );
}

#[test]
fn help_describes_the_program_and_its_flags() {
    let out = pi().arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Usage: pi"));
    assert!(text.contains("coding agent"));
    for flag in [
        "--print",
        "--model",
        "--thinking",
        "--api-key",
        "--mode",
        "--max-turns",
        "--list-models",
    ] {
        assert!(text.contains(flag), "{flag} missing from --help");
    }
}

#[test]
fn list_models_prints_the_catalogue_and_filters() {
    let out = pi().args(["--list-models", "sonnet"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("anthropic/claude-sonnet-4-5"));
    assert!(!text.contains("gpt-5"));
    let out = pi().arg("--list-models").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("openai/gpt-5"));
}

#[test]
fn print_mode_without_any_model_explains_how_to_get_one() {
    let out = pi().args(["-p", "hello"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ANTHROPIC_API_KEY") && err.contains("Ollama"),
        "{err}"
    );
}

#[test]
fn a_bad_flag_is_a_usage_error() {
    let out = pi().arg("--no-such-flag").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
