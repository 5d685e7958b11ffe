//! Theme files in the Node.js pi's format through the real binary: `--theme` by name or path,
//! the colours drawn, `/theme` trying and keeping one (remembered in settings.json), and a
//! name no theme has.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::pty::Pty;
use support::server::{TestServer, tags};

const NORD: &str = r##"{
  "name": "nord",
  "vars": {"frost": "#88c0d0", "grey": 242},
  "colors": {"accent": "frost", "muted": "grey", "userMessageBg": "#3b4252", "text": ""}
}"##;

fn raw(pi: &Pty) -> String {
    String::from_utf8_lossy(&pi.raw.lock().unwrap()).to_string()
}

fn terminal(home: &std::path::Path, server: &TestServer, args: &[&str]) -> Pty {
    let agent = home.join("agent").display().to_string();
    let h = home.display().to_string();
    Pty::spawn_with_env(
        &home.join("project"),
        server,
        None,
        30,
        &[("PI_CODING_AGENT_DIR", &agent), ("HOME", &h)],
        args,
    )
}

#[test]
fn a_theme_file_is_drawn_and_theme_tries_and_keeps_another() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(TestServer::start(vec![
        tags("qwen3:8b"),
        tags("qwen3:8b"),
        tags("qwen3:8b"),
    ]));
    let home = support::binary_home("themes");
    std::fs::create_dir_all(home.join("agent/themes")).unwrap();
    std::fs::write(home.join("agent/themes/nord.json"), NORD).unwrap();

    let mut pi = terminal(&home, &server, &["--theme", "nord"]);
    pi.wait_for("qwen3:8b");
    pi.send(b"/theme\r");
    let s = pi.wait_for("Enter keep");
    assert!(s.contains("nord") && s.contains("(was in use)"), "{s}");
    assert!(s.contains("nord.json"), "{s}");
    // The picker's border is drawn in the file's accent (#88c0d0).
    assert!(
        raw(&pi).contains("38;2;136;192;208"),
        "the accent colour was not drawn"
    );
    // Up previews light, Enter keeps it and remembers it.
    pi.send(b"\x1b[A");
    pi.send(b"\r");
    pi.wait_for("Theme: light");
    assert!(pi.quit().success());
    let settings = std::fs::read_to_string(home.join("agent/settings.json")).unwrap();
    assert!(settings.contains("\"theme\": \"light\""), "{settings}");

    // A path names the file to load and use; a name nothing has is said.
    let path = home.join("agent/themes/nord.json").display().to_string();
    let mut pi = terminal(&home, &server, &["--theme", &path]);
    pi.wait_for("qwen3:8b");
    pi.send(b"/theme\r");
    let s = pi.wait_for("Enter keep");
    assert!(s.contains("nord") && s.contains("(was in use)"), "{s}");
    pi.send(b"\x1b");
    pi.wait_until("the picker to close", |s| !s.contains("Enter keep"));
    assert!(pi.quit().success());
    let mut pi = terminal(&home, &server, &["--theme", "solarized"]);
    pi.wait_for("theme `solarized` is not one pi knows");
    assert!(pi.quit().success());
}
