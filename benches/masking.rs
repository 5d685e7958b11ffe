//! What the secret masker costs a tool result: a 50 KB command output (the most a result
//! carries) checked against 12 known secrets, with no secret in it (the usual case) and with
//! one on every 100th line; and building the masker when a value is learnt.
//!
//! `cargo bench --bench masking`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use pi::secrets::Secrets;

fn secrets() -> Secrets {
    Secrets::new((0..12).map(|i| format!("sk-test-{i:02}-0123456789abcdefghij")))
}

/// About 50 KB of build output; every `every`th line holds a secret (0: none).
fn output(every: usize) -> String {
    let mut s = String::new();
    let mut n = 0;
    while s.len() < 50 * 1024 {
        if every > 0 && n % every == 0 {
            s.push_str("export KEY=sk-test-07-0123456789abcdefghij\n");
        } else {
            s.push_str("   Compiling some-crate v1.2.3 (/home/user/project/crates/some-crate)\n");
        }
        n += 1;
    }
    s
}

fn bench(c: &mut Criterion) {
    let s = secrets();
    let clean = output(0);
    let dirty = output(100);
    c.bench_function("mask 50 KB, no secret in it", |b| {
        b.iter(|| black_box(s.mask(black_box(&clean))).len())
    });
    c.bench_function("mask 50 KB, a secret every 100 lines", |b| {
        b.iter(|| black_box(s.mask(black_box(&dirty))).len())
    });
    c.bench_function("learn a 13th secret (rebuild)", |b| {
        b.iter(|| {
            let s = secrets();
            s.add("sk-new-value-0123456789");
            black_box(s.len())
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
