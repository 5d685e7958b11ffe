//! The interactive TUI end to end: the real binary in a pseudo-terminal (portable-pty) against
//! the scripted local server, the screen read back through a vt100 emulator.
//!
//! Types a prompt, sees the streamed answer, starts a second run that stalls, presses Esc and
//! sees it aborted with the text back in the editor… then quits with Ctrl+D twice (the first
//! clears nothing: Ctrl+C clears the editor) and checks the process exited 0 and the terminal
//! left the alternate screen, mouse capture and bracketed paste.

mod support;

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use serde_json::{Value, json};
use support::server::{Chunk, Reply, TestServer, event, raw_data};

fn chunk(delta: Value, finish: Option<&str>) -> Chunk {
    event(
        "",
        &json!({"id": "c1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
    )
}

fn tags(model: &str) -> Reply {
    Reply {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        chunks: vec![Chunk::Bytes(
            json!({"models": [{"name": model}]})
                .to_string()
                .into_bytes(),
        )],
    }
}

struct Screen {
    parser: Arc<Mutex<vt100::Parser>>,
    raw: Arc<Mutex<Vec<u8>>>,
}

impl Screen {
    fn contents(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    fn wait_for(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let s = self.contents();
            if s.contains(needle) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {needle:?}; screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(30));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn type_stream_abort_and_quit_in_a_pty() {
    let server = TestServer::start(vec![
        tags("qwen3:8b"),
        Reply::sse(vec![
            chunk(json!({"content": "Hello from "}), None),
            Chunk::Delay(Duration::from_millis(50)),
            chunk(
                json!({"content": "the **test** server.\nSecond line.\n"}),
                None,
            ),
            chunk(json!({}), Some("stop")),
            raw_data("[DONE]"),
        ]),
        Reply::sse(vec![
            chunk(json!({"content": "Thinking about it\n"}), None),
            Chunk::Stall,
        ]),
    ])
    .await;
    let home = std::env::temp_dir().join(format!("pi-tui-pty-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).unwrap();

    let pty = native_pty_system()
        .openpty(PtySize {
            rows: 30,
            cols: 100,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_pi"));
    cmd.env_clear();
    cmd.env("PATH", std::env::var("PATH").unwrap_or_default());
    cmd.env("HOME", &home);
    cmd.env("TERM", "xterm-256color");
    cmd.env("PI_CODING_AGENT_DIR", home.join("agent"));
    cmd.env("OLLAMA_HOST", &server.url);
    cmd.cwd(&home);
    let mut child = pty.slave.spawn_command(cmd).unwrap();
    drop(pty.slave);

    let parser = Arc::new(Mutex::new(vt100::Parser::new(30, 100, 0)));
    let raw = Arc::new(Mutex::new(Vec::new()));
    let mut reader = pty.master.try_clone_reader().unwrap();
    let (p2, r2) = (parser.clone(), raw.clone());
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            p2.lock().unwrap().process(&buf[..n]);
            r2.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    let mut writer = pty.master.take_writer().unwrap();
    let screen = Screen { parser, raw };
    let mut send = |bytes: &[u8]| {
        writer.write_all(bytes).unwrap();
        writer.flush().unwrap();
    };

    screen.wait_for("qwen3:8b");
    assert!(screen.parser.lock().unwrap().screen().alternate_screen());
    send(b"say hi");
    screen.wait_for("say hi");
    send(b"\r");
    let s = screen.wait_for("Second line.");
    assert!(s.contains("Hello from the test server."), "{s}");

    send(b"keep going");
    send(b"\r");
    screen.wait_for("esc to interrupt");
    screen.wait_for("Thinking about it");
    send(b"steer me");
    send(b"\r");
    screen.wait_for("Steering: steer me");
    send(b"\x1b");
    let s = screen.wait_for("Operation aborted");
    assert!(!s.contains("esc to interrupt"), "{s}");
    assert!(
        s.contains("steer me"),
        "the queued message is back in the editor:\n{s}"
    );

    send(b"\x03"); // Ctrl+C clears the editor
    std::thread::sleep(Duration::from_millis(100));
    send(b"\x04"); // Ctrl+D quits on an empty editor
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "pi did not exit");
        std::thread::sleep(Duration::from_millis(30));
    };
    assert!(status.success(), "{status:?}");
    std::thread::sleep(Duration::from_millis(100));
    let p = screen.parser.lock().unwrap();
    let sc = p.screen();
    assert!(!sc.alternate_screen(), "left the alternate screen");
    assert!(!sc.bracketed_paste(), "bracketed paste off");
    assert_eq!(sc.mouse_protocol_mode(), vt100::MouseProtocolMode::None);
    assert!(!sc.hide_cursor(), "cursor shown");
    let raw = screen.raw.lock().unwrap();
    let text = String::from_utf8_lossy(&raw);
    assert!(
        text.contains("\u{1b}[?2026h"),
        "frames are drawn in synchronized output"
    );
    let _ = std::fs::remove_dir_all(&home);
}
