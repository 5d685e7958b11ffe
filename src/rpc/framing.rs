//! Reading stdin as JSON lines: records end at LF only (a trailing CR is dropped), so the
//! Unicode line and paragraph separators inside JSON strings never split a record. A thread
//! reads and hands whole lines to the loop; the channel closes when stdin does.

use std::io::Read;

use tokio::sync::mpsc;

/// Split `buf` into complete records, keeping an unfinished tail in it.
pub fn take_records(buf: &mut Vec<u8>) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(end) = buf.iter().position(|b| *b == b'\n') {
        let mut record: Vec<u8> = buf.drain(..=end).collect();
        record.pop();
        if record.last() == Some(&b'\r') {
            record.pop();
        }
        out.push(record);
    }
    out
}

/// Lines of stdin, as they complete; closed at end of input (a last line without LF counts).
pub fn read_stdin() -> mpsc::UnboundedReceiver<Vec<u8>> {
    let (tx, rx) = mpsc::unbounded_channel();
    let spawned = std::thread::Builder::new()
        .name("pi-rpc-stdin".into())
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 64 * 1024];
            loop {
                match stdin.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        buf.extend_from_slice(&chunk[..n]);
                        for record in take_records(&mut buf) {
                            if tx.send(record).is_err() {
                                return;
                            }
                        }
                    }
                }
            }
            if !buf.is_empty() {
                let _ = tx.send(std::mem::take(&mut buf));
            }
        });
    if spawned.is_err() {
        // No thread, no input: the loop sees stdin as closed and shuts down cleanly.
        return mpsc::unbounded_channel().1;
    }
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_end_at_lf_only() {
        let mut buf = "{\"a\":\"x\u{2028}y\"}\r\n{\"b\":1}\n{\"c\""
            .as_bytes()
            .to_vec();
        let r = take_records(&mut buf);
        assert_eq!(r.len(), 2);
        assert_eq!(String::from_utf8_lossy(&r[0]), "{\"a\":\"x\u{2028}y\"}");
        assert_eq!(String::from_utf8_lossy(&r[1]), "{\"b\":1}");
        assert_eq!(buf, b"{\"c\"");
    }
}
