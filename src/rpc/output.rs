//! Writing stdout a line at a time. Lines are buffered and flushed whenever no further event
//! is already waiting: each event goes out as it happens, and a burst of deltas that arrived
//! together costs one write instead of one per line.

use std::io::Write;

pub struct Output {
    out: std::io::BufWriter<std::io::Stdout>,
    /// stdout is gone (the client closed it): stop writing.
    closed: bool,
}

impl Output {
    pub fn start() -> Output {
        Output {
            out: std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout()),
            closed: false,
        }
    }

    /// Write one line (the text without its newline); control characters in it are escaped.
    pub fn line(&mut self, text: &str) {
        if !self.closed && writeln!(self.out, "{}", crate::visible::json_escaped(text)).is_err() {
            self.closed = true;
        }
    }

    /// Send what is buffered.
    pub fn flush(&mut self) {
        if !self.closed && self.out.flush().is_err() {
            self.closed = true;
        }
    }
}
