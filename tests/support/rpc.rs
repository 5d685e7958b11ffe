//! A scripted client of `pi --mode rpc`: commands in on stdin, every line read back kept.
#![allow(dead_code)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};

use super::server::TestServer;

pub struct Client {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    pub seen: Vec<Value>,
}

impl Client {
    pub fn start(server: &TestServer, home: &std::path::Path) -> Client {
        Self::start_with(server, home, &[], Stdio::null())
    }

    /// With more arguments, and stderr going where `stderr` says.
    pub fn start_with(
        server: &TestServer,
        home: &std::path::Path,
        args: &[&str],
        stderr: Stdio,
    ) -> Client {
        let mut child = super::rpc_pi(home, &server.url)
            .args(args)
            .stderr(stderr)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Client {
            child,
            stdin,
            lines,
            seen: Vec::new(),
        }
    }

    pub async fn send_raw(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(text.as_bytes()).await.unwrap();
        stdin.flush().await.unwrap();
    }

    pub async fn send(&mut self, cmd: Value) {
        self.send_raw(&format!("{cmd}\n")).await;
    }

    /// Read lines until one satisfies `want` (at most 10 s); every line read is kept.
    pub async fn until(&mut self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = tokio::time::timeout(left, self.lines.next_line())
                .await
                .unwrap_or_else(|_| panic!("timed out waiting for {what}; seen {:?}", self.seen))
                .unwrap()
                .unwrap_or_else(|| panic!("stdout closed waiting for {what}"));
            let v: Value = serde_json::from_str(&line).expect("every line is JSON");
            self.seen.push(v.clone());
            if want(&v) {
                return v;
            }
        }
    }

    pub async fn response(&mut self, id: &str) -> Value {
        self.until(id, |v| v["type"] == "response" && v["id"] == id)
            .await
    }
}
