//! The real binary: `--version` and `--help` work, and an unusable run fails clearly.

use std::process::Command;

fn pi() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pi"))
}

#[test]
fn version_prints_the_crate_version() {
    let out = pi().arg("--version").output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("pi {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn help_describes_the_program() {
    let out = pi().arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Usage: pi"));
    assert!(text.contains("coding agent"));
}

#[test]
fn a_prompt_without_providers_fails_with_a_message() {
    let out = pi().arg("hello").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not available yet"));
}
