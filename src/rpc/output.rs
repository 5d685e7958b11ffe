//! Writing stdout a line at a time: a thread of its own writes and flushes each line as it
//! comes, so a slow reader never holds up the loop and every event is out as soon as it
//! happens.

use std::io::Write;
use std::sync::mpsc;

pub struct Output {
    tx: Option<mpsc::Sender<String>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Output {
    pub fn start() -> Output {
        let (tx, rx) = mpsc::channel::<String>();
        let thread = std::thread::Builder::new()
            .name("pi-rpc-stdout".into())
            .spawn(move || {
                let stdout = std::io::stdout();
                let mut out = std::io::BufWriter::new(stdout.lock());
                while let Ok(line) = rx.recv() {
                    // Write what is queued, then flush: each line goes out as it happens under
                    // light load, and a flood of deltas is written in batches.
                    let mut next = Some(line);
                    while let Some(line) = next {
                        let text = crate::visible::json_escaped(&line).into_owned();
                        if writeln!(out, "{text}").is_err() {
                            return;
                        }
                        next = rx.try_recv().ok();
                    }
                    if out.flush().is_err() {
                        return;
                    }
                }
            })
            .ok();
        Output {
            tx: Some(tx),
            thread,
        }
    }

    /// Queue one line (without its newline).
    pub fn line(&self, text: String) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(text);
        }
    }

    /// Write everything queued and stop.
    pub fn finish(mut self) {
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
