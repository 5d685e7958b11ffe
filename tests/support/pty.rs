//! A pseudo-terminal around the real `pi` binary, for end-to-end tests of the terminal UI:
//! the screen is read back through a vt100 emulator, the raw bytes are kept too, and so is
//! every row that scrolled off the top of the screen (the terminal's scrollback), in order.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

use super::server::TestServer;

/// The real `pi` binary running in a pseudo-terminal, its output fed to a vt100 emulator.
pub struct Pty {
    pub parser: Arc<Mutex<vt100::Parser>>,
    pub raw: Arc<Mutex<Vec<u8>>>,
    /// The rows that scrolled off the top of the normal screen, oldest first.
    pub scrolled: Arc<Mutex<Vec<String>>>,
    writer: Box<dyn Write + Send>,
    pub child: Box<dyn portable_pty::Child + Send + Sync>,
    /// Kept open for as long as the child's output is read.
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Pty {
    pub fn spawn(home: &std::path::Path, server: &TestServer, args: &[&str]) -> Pty {
        Self::spawn_wrapped(home, server, None, args)
    }

    /// Like [`Pty::spawn`], with pi started by `bash -c "<wrapper>; exec pi ..."` when a
    /// wrapper is given (e.g. `ulimit -f 2`).
    pub fn spawn_wrapped(
        home: &std::path::Path,
        server: &TestServer,
        wrapper: Option<&str>,
        args: &[&str],
    ) -> Pty {
        Self::spawn_sized(home, server, wrapper, 30, args)
    }

    /// Like [`Pty::spawn_wrapped`], in a terminal of `rows` rows (100 columns).
    pub fn spawn_sized(
        home: &std::path::Path,
        server: &TestServer,
        wrapper: Option<&str>,
        rows: u16,
        args: &[&str],
    ) -> Pty {
        Self::spawn_with_env(home, server, wrapper, rows, &[], args)
    }

    /// Like [`Pty::spawn_sized`], with these variables added to pi's environment.
    pub fn spawn_with_env(
        home: &std::path::Path,
        server: &TestServer,
        wrapper: Option<&str>,
        rows: u16,
        env: &[(&str, &str)],
        args: &[&str],
    ) -> Pty {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows,
                cols: 100,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = match wrapper {
            None => CommandBuilder::new(env!("CARGO_BIN_EXE_pi")),
            Some(w) => {
                let mut c = CommandBuilder::new("bash");
                c.args([
                    "-c",
                    &format!("{w}; exec \"$0\" \"$@\""),
                    env!("CARGO_BIN_EXE_pi"),
                ]);
                c
            }
        };
        cmd.args(args);
        cmd.env_clear();
        cmd.env("PATH", std::env::var("PATH").unwrap_or_default());
        cmd.env("HOME", home);
        cmd.env("TERM", "xterm-256color");
        cmd.env("PI_CODING_AGENT_DIR", home.join("agent"));
        cmd.env("OLLAMA_HOST", &server.url);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.cwd(home);
        let child = pty.slave.spawn_command(cmd).unwrap();
        drop(pty.slave);

        let parser = Arc::new(Mutex::new(vt100::Parser::new(rows, 100, SCROLLBACK)));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let scrolled = Arc::new(Mutex::new(Vec::new()));
        let mut reader = pty.master.try_clone_reader().unwrap();
        let (p2, r2, s2) = (parser.clone(), raw.clone(), scrolled.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut p = p2.lock().unwrap();
                process(&mut p, &buf[..n], &mut s2.lock().unwrap());
                r2.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        let writer = pty.master.take_writer().unwrap();
        Pty {
            parser,
            raw,
            scrolled,
            writer,
            child,
            _master: pty.master,
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).unwrap();
        self.writer.flush().unwrap();
    }

    pub fn contents(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    /// Everything the normal screen printed, as a terminal keeps it: the rows that scrolled
    /// into the scrollback, then the screen's rows (trailing blanks cut, trailing blank rows
    /// dropped).
    pub fn history(&self) -> Vec<String> {
        let p = self.parser.lock().unwrap();
        let mut rows = self.scrolled.lock().unwrap().clone();
        let screen = p.screen();
        if !screen.alternate_screen() {
            let (_, width) = screen.size();
            rows.extend(screen.rows(0, width).map(|r| r.trim_end().to_string()));
        }
        while rows.last().is_some_and(String::is_empty) {
            rows.pop();
        }
        rows
    }

    /// Resize the terminal to `rows`×`cols` (the emulator first, then the pty, which sends
    /// pi SIGWINCH).
    pub fn resize(&mut self, rows: u16, cols: u16) {
        self.parser.lock().unwrap().set_size(rows, cols);
        self._master
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
    }

    pub fn wait_for(&self, needle: &str) -> String {
        self.wait_until(needle, |s| s.contains(needle))
    }

    /// Wait (at most 20 s) until the screen's text satisfies `done`.
    pub fn wait_until(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let s = self.contents();
            if done(&s) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    /// Wait (at most 5 s) until the terminal has left the alternate screen.
    pub fn wait_restored(&self) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.parser.lock().unwrap().screen().alternate_screen() {
            assert!(Instant::now() < deadline, "the alternate screen stayed on");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Quit with Ctrl+D on an empty editor and return the exit status.
    pub fn quit(&mut self) -> portable_pty::ExitStatus {
        self.send(b"\x04");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < deadline, "pi did not exit");
            std::thread::sleep(Duration::from_millis(30));
        }
    }
}

/// How many rows the emulator's scrollback holds (more than any test prints).
const SCROLLBACK: usize = 1 << 20;

/// Feed `bytes` to the emulator, keeping the rows that scroll off the top in `scrolled`.
/// vt100 keeps a scrollback but lets one read only as many of its rows as the screen has, so
/// the bytes go in pieces too short to scroll more than that (a line feed scrolls one row),
/// and the rows that left are read after each piece.
fn process(p: &mut vt100::Parser, bytes: &[u8], scrolled: &mut Vec<String>) {
    let (rows, width) = p.screen().size();
    for piece in bytes.chunks(usize::from(rows.max(2)) - 1) {
        p.process(piece);
        p.set_scrollback(usize::MAX);
        let kept = p.screen().scrollback();
        for offset in (1..=kept.saturating_sub(scrolled.len())).rev() {
            p.set_scrollback(offset);
            let row = p.screen().rows(0, width).next().unwrap_or_default();
            scrolled.push(row.trim_end().to_string());
        }
        p.set_scrollback(0);
    }
}

pub fn temp_home(tag: &str) -> std::path::PathBuf {
    let home = std::env::temp_dir().join(format!("pi-tui-pty-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).unwrap();
    home
}
