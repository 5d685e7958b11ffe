//! The `@` file picker on 100,000 files: listing a real folder of that size in the background
//! (the `ignore` walk), and matching the filter as it is typed (nucleo-matcher), both a whole
//! search per keystroke and the narrowed searches typing actually does.
//!
//! `cargo bench --bench file_picker`. The folder is made once in the system's temporary
//! folder (about 100,000 empty files in 2,000 folders) and removed at the end.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use pi::tui::files::FileIndex;
use pi::tui::popup::file_picker::{FileMatcher, LIMIT};

const FILES: usize = 100_000;
const WORDS: &[&str] = &[
    "src", "lib", "core", "util", "tests", "parser", "render", "widget", "session", "config",
    "model", "agent", "tool", "event", "stream", "cache", "index", "view", "input", "output",
];

/// 100,000 paths shaped like a large repository's: 1 to 4 folders deep, 50 files a folder.
fn paths() -> Vec<String> {
    (0..FILES)
        .map(|i| {
            let folder = i / 50;
            let depth = 1 + folder % 4;
            let mut p = String::new();
            for d in 1..depth {
                p.push_str(WORDS[(folder / d + d * 7) % WORDS.len()]);
                p.push_str(&format!("{}/", (folder >> d) % 13));
            }
            // The last folder's number is the folder's own: every path is different.
            p.push_str(&format!("{}{folder}/", WORDS[folder % WORDS.len()]));
            p.push_str(&format!(
                "{}_{}.{}",
                WORDS[i % WORDS.len()],
                i % 50,
                ["rs", "md", "toml", "json"][i % 4]
            ));
            p
        })
        .collect()
}

fn make_tree(root: &Path, paths: &[String]) {
    for p in paths {
        let path = root.join(p);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, "").unwrap();
    }
}

fn bench(c: &mut Criterion) {
    let list = paths();
    let mut g = c.benchmark_group("file_picker_100k");
    g.sample_size(20);
    g.bench_function("no_filter", |b| {
        let mut m = FileMatcher::default();
        b.iter(|| m.search(1, &list, "", LIMIT))
    });
    for query in ["r", "render", "srcutilrs", "session_4"] {
        g.bench_function(format!("whole_search/{query}"), |b| {
            b.iter(|| FileMatcher::default().search(1, &list, query, LIMIT))
        });
    }
    // Typing "rendermod" one key at a time: each keystroke narrows the previous result.
    g.bench_function("typing_9_keys_narrowed", |b| {
        let query = "rendermod";
        b.iter(|| {
            let mut m = FileMatcher::default();
            for n in 1..=query.len() {
                m.search(1, &list, &query[..n], LIMIT);
            }
        })
    });

    let dir = std::env::temp_dir().join(format!("pi-bench-files-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let made = Instant::now();
    make_tree(&dir, &list);
    eprintln!("made {FILES} files in {:.1?}", made.elapsed());
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    g.bench_function("list_folder", |b| {
        b.iter(|| {
            let mut index = FileIndex::lazy(dir.clone());
            index.refresh();
            while index.is_listing() {
                std::thread::sleep(Duration::from_micros(200));
            }
            let n = index.with(|l| l.paths.len());
            assert_eq!(n, FILES);
        })
    });
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
