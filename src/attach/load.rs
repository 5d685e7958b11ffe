//! Reading one file to attach: its text, or an image recognised by its first bytes.
//!
//! A PNG, JPEG, GIF or WebP file (told by its signature, whatever its name says) becomes an
//! image of at most [`IMAGE_LIMIT`] bytes; any other file without a NUL byte near its start is
//! text of at most [`TEXT_LIMIT`] bytes (bytes that are not UTF-8 are replaced). Everything
//! else is refused with a sentence that names the file and says why.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use base64::Engine;

use crate::agent::protocol::types::ImageContent;
use crate::tools::fsutil::{describe_io_error, looks_binary, sniff_image};
use crate::tools::truncate::format_size;

/// The most text one file may add to a prompt (about 64,000 tokens).
pub(crate) const TEXT_LIMIT: u64 = 256 * 1024;
/// The largest image attached (raw bytes; its base64 form stays within what providers take).
pub(crate) const IMAGE_LIMIT: u64 = crate::tools::read::MAX_IMAGE_BYTES;
/// How much of a file is looked at to tell an image or a binary file.
const SNIFF_BYTES: u64 = 8192;

/// A file read for a prompt.
#[derive(Clone, Debug, PartialEq)]
pub enum Attachment {
    Text { name: String, text: String },
    Image { name: String, image: ImageContent },
}

impl Attachment {
    pub(crate) fn is_image(&self) -> bool {
        matches!(self, Attachment::Image { .. })
    }
}

fn refuse(name: &str, why: impl std::fmt::Display) -> String {
    format!("cannot attach {name}: {why}")
}

fn io_refusal(name: &str, e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => refuse(name, "no such file"),
        _ => refuse(name, describe_io_error(e)),
    }
}

/// Read the file at `path`, shown and named to the model as `name`.
pub(crate) fn load(name: &str, path: &Path) -> Result<Attachment, String> {
    let meta = std::fs::metadata(path).map_err(|e| io_refusal(name, &e))?;
    if meta.is_dir() {
        return Err(refuse(
            name,
            "it is a folder; name the files in it (the model can list it with its tools)",
        ));
    }
    if !meta.is_file() {
        return Err(refuse(name, "it is not a regular file"));
    }
    let mut file = File::open(path).map_err(|e| io_refusal(name, &e))?;
    let mut data = Vec::new();
    (&mut file)
        .take(SNIFF_BYTES)
        .read_to_end(&mut data)
        .map_err(|e| io_refusal(name, &e))?;
    if let Some(mime) = sniff_image(&data) {
        if meta.len() > IMAGE_LIMIT {
            return Err(refuse(
                name,
                format!(
                    "it is a {mime} image of {}, more than the {} that can be sent; attach a \
                     smaller copy",
                    format_size(meta.len()),
                    format_size(IMAGE_LIMIT)
                ),
            ));
        }
        file.read_to_end(&mut data)
            .map_err(|e| io_refusal(name, &e))?;
        return Ok(Attachment::Image {
            name: name.to_string(),
            image: ImageContent {
                data: base64::engine::general_purpose::STANDARD.encode(&data),
                mime_type: mime.to_string(),
                detail: None,
            },
        });
    }
    if looks_binary(&data) {
        return Err(refuse(
            name,
            format!(
                "it is a binary file ({}); only text files and PNG, JPEG, GIF or WebP images \
                 can be attached",
                format_size(meta.len())
            ),
        ));
    }
    if meta.len() > TEXT_LIMIT {
        return Err(refuse(
            name,
            format!(
                "it is {}, more than the {} one file may add to a prompt; ask the model to \
                 read the part you need instead (its read tool takes an offset and a limit)",
                format_size(meta.len()),
                format_size(TEXT_LIMIT)
            ),
        ));
    }
    // A file that grew since it was measured is cut at the limit rather than read on.
    file.take(TEXT_LIMIT.saturating_sub(data.len() as u64))
        .read_to_end(&mut data)
        .map_err(|e| io_refusal(name, &e))?;
    Ok(Attachment::Text {
        name: name.to_string(),
        text: String::from_utf8_lossy(&data).into_owned(),
    })
}

/// The image type of the file at `path` by its first bytes, if it is a readable image.
pub(crate) fn sniff(path: &Path) -> Option<&'static str> {
    let mut head = Vec::with_capacity(16);
    File::open(path)
        .ok()?
        .take(16)
        .read_to_end(&mut head)
        .ok()?;
    sniff_image(&head)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn text_is_read_and_images_are_told_by_their_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("notes.txt");
        std::fs::write(&text, "caf\u{e9} notes\n").unwrap();
        assert_eq!(
            load("notes.txt", &text).unwrap(),
            Attachment::Text {
                name: "notes.txt".into(),
                text: "café notes\n".into()
            }
        );
        // Named .txt, but a PNG by its bytes.
        let disguised = dir.path().join("shot.txt");
        std::fs::write(&disguised, PNG).unwrap();
        match load("shot.txt", &disguised).unwrap() {
            Attachment::Image { image, .. } => {
                assert_eq!(image.mime_type, "image/png");
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(&image.data)
                    .unwrap();
                assert_eq!(raw, PNG);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(sniff(&disguised), Some("image/png"));
        assert_eq!(sniff(&text), None);
        // Named .png, but text.
        let fake = dir.path().join("fake.png");
        std::fs::write(&fake, "not an image").unwrap();
        assert!(!load("fake.png", &fake).unwrap().is_image());
    }

    #[test]
    fn refusals_name_the_file_and_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let missing = load("gone.txt", &dir.path().join("gone.txt")).unwrap_err();
        assert_eq!(missing, "cannot attach gone.txt: no such file");
        let folder = load("src", dir.path()).unwrap_err();
        assert!(folder.contains("src: it is a folder"), "{folder}");
        let bin = dir.path().join("a.out");
        std::fs::write(&bin, b"\x7fELF\0\0\0").unwrap();
        let e = load("a.out", &bin).unwrap_err();
        assert!(e.contains("binary file"), "{e}");
        let big = dir.path().join("big.log");
        std::fs::write(&big, "x".repeat(TEXT_LIMIT as usize + 1)).unwrap();
        let e = load("big.log", &big).unwrap_err();
        assert!(e.contains("more than the 256.0 KB"), "{e}");
        let exact = dir.path().join("exact.log");
        std::fs::write(&exact, "y".repeat(TEXT_LIMIT as usize)).unwrap();
        match load("exact.log", &exact).unwrap() {
            Attachment::Text { text, .. } => assert_eq!(text.len(), TEXT_LIMIT as usize),
            other => panic!("{other:?}"),
        }
    }
}
