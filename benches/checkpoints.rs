//! What checkpoints add: a `bash` call's scans before and after (nothing changed, warm cache)
//! in a working folder of 10,000 and of 100,000 files; one `edit`'s reads before and after;
//! and (printed, not timed) the disk 100 edits of one 100 KB file take.
//!
//! `cargo bench --bench checkpoints`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use pi::checkpoint::{Limits, Tracker};

/// `n` files of ~200 bytes, 100 to a folder, two levels deep (like a source tree).
fn tree(root: &Path, n: usize) {
    for i in 0..n {
        let dir = root
            .join(format!("d{}", i / 1000))
            .join(format!("e{}", (i / 100) % 10));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        std::fs::write(
            dir.join(format!("f{i}.rs")),
            format!("// file {i}\n{}", "fn x() {}\n".repeat(18)),
        )
        .unwrap();
    }
}

fn tracker(root: &Path, store: &Path) -> Tracker {
    Tracker::new(root, store, Limits::default(), Box::new(|_| {}))
}

fn du(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let md = e.metadata().unwrap();
            if md.is_dir() {
                stack.push(e.path());
            } else {
                total += md.len();
            }
        }
    }
    total
}

fn bench(c: &mut Criterion) {
    for n in [10_000, 100_000] {
        let work = tempfile::tempdir().unwrap();
        let store = tempfile::tempdir().unwrap();
        tree(work.path(), n);
        let t = tracker(work.path(), store.path());
        // The first call saves every file (once per folder, in the background in pi).
        let started = std::time::Instant::now();
        drop(t.begin());
        eprintln!(
            "{n} files: first save of every file {:?}",
            started.elapsed()
        );
        let mut scanner = pi::checkpoint::scan::Scanner::new(work.path(), Vec::new(), 1 << 20);
        scanner.changes().unwrap();
        c.bench_function(&format!("one later scan, {n} files"), |b| {
            b.iter(|| scanner.changes().unwrap().len())
        });
        c.bench_function(
            &format!("bash call, {n} files (scan before and after)"),
            |b| {
                b.iter(|| {
                    let begin = t.begin().unwrap();
                    t.finish(begin)
                })
            },
        );
    }

    let work = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let t = tracker(work.path(), store.path());
    let file = work.path().join("big.rs");
    let body = "let value = compute(input, 42);\n".repeat(100 * 1024 / 32);
    std::fs::write(&file, &body).unwrap();
    let mut i = 0u64;
    c.bench_function("edit of a 100 KB file (read before and after)", |b| {
        b.iter(|| {
            let before = t.before_file(&file).unwrap();
            i += 1;
            std::fs::write(&file, format!("{body}// {i}\n")).unwrap();
            t.after_file(before)
        })
    });

    let work = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let t = tracker(work.path(), store.path());
    let file = work.path().join("big.rs");
    let mut text = body.clone();
    std::fs::write(&file, &text).unwrap();
    for k in 0..100 {
        let before = t.before_file(&file).unwrap();
        let at = (k * 997) % (text.len() - 8);
        text.replace_range(at..at + 5, "EDIT!");
        std::fs::write(&file, &text).unwrap();
        t.after_file(before);
    }
    eprintln!(
        "100 edits of one 100 KB file: {} KB in the store",
        du(store.path()) / 1024
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
