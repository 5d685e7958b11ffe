//! Link settings that keep the release binary's resident memory small.
//!
//! Most of what `pi` holds in memory on a short run is not heap but pages of its own code: the
//! kernel maps code in 64 KB blocks around each page touched, and the functions a run needs are
//! spread over ~17 MB of code, so `pi -p` touched ~150 blocks (~10 MB) to run ~2 MB of code. Two
//! linker options fix most of that, for release builds of the `pi` binary on x86-64 Linux with
//! the linker rustc uses there since 1.90 (LLD):
//! - `--symbol-ordering-file=build/hot_code.txt` puts the functions the common paths run
//!   (listed by `bench/hot_code.sh`) next to each other;
//! - `-z pack-relative-relocs` stores the ~40,000 start-up relocations compactly (about 1 MB
//!   less to read at start; needs glibc 2.36 or later, checked here).
//!
//! Neither changes what the program does. `PI_PLAIN_LINK=1` turns both off, as does a linker
//! chosen in the rustflags. The list is read by the linker, not by cargo: a new list takes
//! effect at the next link (`bench/hot_code.sh` touches `src/main.rs` for that), and does not
//! make cargo compile the library again.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PI_PLAIN_LINK");
    if !wanted() {
        return;
    }
    let order = concat!(env!("CARGO_MANIFEST_DIR"), "/build/hot_code.txt");
    if std::path::Path::new(order).is_file() {
        println!("cargo:rustc-link-arg-bin=pi=-Wl,--symbol-ordering-file={order}");
        println!("cargo:rustc-link-arg-bin=pi=-Wl,--no-warn-symbol-ordering");
    }
    if glibc_has_relr() {
        println!("cargo:rustc-link-arg-bin=pi=-Wl,-z,pack-relative-relocs");
    }
}

/// A release build for x86-64 Linux with rustc's own LLD, and nobody asked for a plain link.
fn wanted() -> bool {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("PI_PLAIN_LINK") == "1" || var("PROFILE") != "release" {
        return false;
    }
    if var("TARGET") != "x86_64-unknown-linux-gnu" {
        return false;
    }
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    if flags.contains("linker") || flags.contains("link-self-contained") {
        return false;
    }
    rustc_minor().is_some_and(|minor| minor >= 90)
}

/// The minor version of the rustc building this (`rustc 1.95.0 (...)` gives 95).
fn rustc_minor() -> Option<u32> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc).arg("--version").output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let version = text.split_whitespace().nth(1)?;
    version.split('.').nth(1)?.parse().ok()
}

/// Whether this machine's glibc reads packed relocations (2.36 and later).
fn glibc_has_relr() -> bool {
    let Ok(out) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(version) = text.split_whitespace().nth(1) else {
        return false;
    };
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    (major, minor) >= (2, 36)
}
