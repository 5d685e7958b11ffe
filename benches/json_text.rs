//! What writing a resumed history's long strings costs: 1 MiB of source-like text (an escape
//! every ~40 bytes, as in tool output), escaped into a body, counted, and read back from its
//! literal. These are most of a large request's CPU time (issue 29's resume figure).
//!
//! `cargo bench --bench json_text`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, Throughput, black_box, criterion_group, criterion_main};
use pi::json_text;

/// About 1 MiB of Rust-like source: short lines, indentation, quotes, a tab now and then.
fn source() -> String {
    let lines = [
        "pub fn parse_config(path: &Path) -> Result<Config, ConfigError> {",
        "    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Io(path.into(), e))?;",
        "    let table: toml::Table = text.parse()?;",
        "\tfor (key, value) in table {",
        "        warn!(\"unknown key `{key}` in {}\", path.display());",
        "    }",
        "    Ok(Config::from_table(table)) // \\ done",
        "}",
        "",
    ];
    let mut s = String::new();
    let mut i = 0;
    while s.len() < 1 << 20 {
        s.push_str(lines[i % lines.len()]);
        s.push('\n');
        i += 1;
    }
    s
}

fn bench(c: &mut Criterion) {
    let text = source();
    let literal = serde_json::to_string(&text).unwrap();
    let mut g = c.benchmark_group("json_text 1 MiB source");
    g.throughput(Throughput::Bytes(text.len() as u64));
    let mut out = Vec::with_capacity(literal.len() + 64);
    g.bench_function("write_string", |b| {
        b.iter(|| {
            out.clear();
            json_text::write_string(&mut out, black_box(&text));
            out.len()
        })
    });
    g.bench_function("string_len", |b| {
        b.iter(|| json_text::string_len(black_box(&text)))
    });
    g.bench_function("unescape_literal", |b| {
        b.iter(|| json_text::unescape_literal(black_box(&literal)).map(|u| u.text.len()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
