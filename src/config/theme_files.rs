//! Theme files in the Node.js pi's format: JSON with a `name`, optional `vars` (reusable
//! colours) and `colors` (token → colour), found in `~/.pi/agent/themes/*.json`,
//! `.pi/themes/*.json`, settings' `themes` and `--theme` paths.
//!
//! A colour is `"#rrggbb"`, a 256-colour index (`39`), `""` for the terminal's default, or the
//! name of a `vars` entry. The Node pi requires all of its 51 tokens; here a file missing some
//! still loads (the missing ones keep the built-in palette's colours) with one warning, and a
//! token with a bad value is a warning too. Which tokens pi draws with is the UI's business
//! ([`crate::tui::theme`]); this module only reads files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::theme::ColorValue;

/// The Node pi's tokens, all of which its theme files define.
pub(crate) const NODE_TOKENS: &[&str] = &[
    "accent",
    "border",
    "borderAccent",
    "borderMuted",
    "success",
    "error",
    "warning",
    "muted",
    "dim",
    "text",
    "thinkingText",
    "selectedBg",
    "userMessageBg",
    "userMessageText",
    "customMessageBg",
    "customMessageText",
    "customMessageLabel",
    "toolPendingBg",
    "toolSuccessBg",
    "toolErrorBg",
    "toolTitle",
    "toolOutput",
    "mdHeading",
    "mdLink",
    "mdLinkUrl",
    "mdCode",
    "mdCodeBlock",
    "mdCodeBlockBorder",
    "mdQuote",
    "mdQuoteBorder",
    "mdHr",
    "mdListBullet",
    "toolDiffAdded",
    "toolDiffRemoved",
    "toolDiffContext",
    "syntaxComment",
    "syntaxKeyword",
    "syntaxFunction",
    "syntaxVariable",
    "syntaxString",
    "syntaxNumber",
    "syntaxType",
    "syntaxOperator",
    "syntaxPunctuation",
    "thinkingOff",
    "thinkingMinimal",
    "thinkingLow",
    "thinkingMedium",
    "thinkingHigh",
    "thinkingXhigh",
    "bashMode",
];

/// The palettes pi itself has.
pub(crate) const BUILTIN: &[&str] = &["dark", "light"];

/// One theme file, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThemeFile {
    pub name: String,
    pub path: PathBuf,
    /// Its tokens (the Node pi's names), each resolved to a colour.
    pub colors: BTreeMap<String, ColorValue>,
}

/// Where to look.
#[derive(Clone, Debug, Default)]
pub(crate) struct Places {
    /// `~/.pi/agent`.
    pub agent_dir: Option<PathBuf>,
    pub cwd: PathBuf,
    /// `--theme` paths (files or folders).
    pub flags: Vec<PathBuf>,
    /// settings' `themes` (files or folders).
    pub settings: Vec<PathBuf>,
    /// `--no-themes`: only the `--theme` ones.
    pub no_discovery: bool,
}

/// Every theme found (the first of a name wins, in the order `--theme`, the project's, the
/// user's, settings'), and a warning for each problem.
pub(crate) fn discover(places: &Places) -> (Vec<ThemeFile>, Vec<String>) {
    let mut found: Vec<ThemeFile> = Vec::new();
    let mut warnings = Vec::new();
    let mut add = |path: &Path| {
        for file in json_files(path) {
            match std::fs::read_to_string(&file)
                .map_err(|e| format!("cannot read it ({e})"))
                .and_then(|text| parse(&text, &file))
            {
                Ok((theme, mut problems)) => {
                    warnings.append(&mut problems);
                    if BUILTIN.contains(&theme.name.as_str()) {
                        warnings.push(format!(
                            "theme {}: `{}` is a built-in theme's name; this file is not used",
                            file.display(),
                            theme.name
                        ));
                    } else if let Some(first) = found.iter().find(|t| t.name == theme.name) {
                        if first.path != theme.path {
                            warnings.push(format!(
                                "theme {}: `{}` is already loaded from {}; the first one is used",
                                file.display(),
                                theme.name,
                                first.path.display()
                            ));
                        }
                    } else {
                        found.push(theme);
                    }
                }
                Err(why) => warnings.push(format!("theme {}: {why}; skipped", file.display())),
            }
        }
    };
    for p in &places.flags {
        add(p);
    }
    if !places.no_discovery {
        add(&places.cwd.join(".pi/themes"));
        if let Some(a) = &places.agent_dir {
            add(&a.join("themes"));
        }
        for p in &places.settings {
            add(p);
        }
    }
    (found, warnings)
}

/// The file itself, or the `.json` files of the folder (sorted).
fn json_files(path: &Path) -> Vec<PathBuf> {
    if path.is_file() {
        return vec![path.to_path_buf()];
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

/// A theme from its file's text, with a warning for each token it lacks or gets wrong.
pub(crate) fn parse(text: &str, path: &Path) -> Result<(ThemeFile, Vec<String>), String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON ({e})"))?;
    let o = v.as_object().ok_or("not a JSON object")?;
    let name = o
        .get("name")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .ok_or("it has no name")?;
    let vars = o.get("vars").and_then(Value::as_object);
    let colors = o
        .get("colors")
        .and_then(Value::as_object)
        .ok_or("it has no `colors` object")?;
    let at = path.display();
    let mut warnings = Vec::new();
    let mut out = BTreeMap::new();
    for (token, value) in colors {
        if !NODE_TOKENS.contains(&token.as_str()) {
            continue;
        }
        match resolve(value, vars, 0) {
            Ok(c) => {
                out.insert(token.clone(), c);
            }
            Err(why) => warnings.push(format!("theme {at}: `{token}`: {why}")),
        }
    }
    let missing: Vec<&str> = NODE_TOKENS
        .iter()
        .copied()
        .filter(|t| !colors.contains_key(*t))
        .collect();
    if !missing.is_empty() {
        warnings.push(format!(
            "theme {at}: no colour for {} (the built-in palette's are used)",
            missing.join(", ")
        ));
    }
    Ok((
        ThemeFile {
            name,
            path: path.to_path_buf(),
            colors: out,
        },
        warnings,
    ))
}

/// One colour value, following `vars` references (a few levels deep at most).
fn resolve(
    value: &Value,
    vars: Option<&serde_json::Map<String, Value>>,
    depth: u8,
) -> Result<ColorValue, String> {
    match value {
        Value::Number(n) => n
            .as_u64()
            .and_then(|i| u8::try_from(i).ok())
            .map(ColorValue::Indexed)
            .ok_or_else(|| format!("{n} is not a colour index 0-255")),
        Value::String(s) if s.is_empty() => Ok(ColorValue::Reset),
        Value::String(s) if s.starts_with('#') => super::theme::parse_color(s),
        Value::String(s) => match vars.and_then(|v| v.get(s)) {
            Some(next) if depth < 8 => resolve(next, vars, depth + 1),
            Some(_) => Err(format!("`{s}` refers to itself")),
            None => super::theme::parse_color(s)
                .map_err(|_| format!("`{s}` is neither a colour nor one of the file's vars")),
        },
        other => Err(format!("{other} is not a colour")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vars_hex_indexes_and_the_default_resolve() {
        let text = r##"{"name": "nord", "vars": {"frost": "#88c0d0", "grey": 242, "alias": "frost"},
            "colors": {"accent": "alias", "muted": "grey", "text": "", "error": "#bf616a",
                       "warning": "nope", "unknownToken": "#000000"}}"##;
        let (t, warnings) = parse(text, Path::new("nord.json")).unwrap();
        assert_eq!(t.name, "nord");
        assert_eq!(t.colors["accent"], ColorValue::Rgb(0x88, 0xc0, 0xd0));
        assert_eq!(t.colors["muted"], ColorValue::Indexed(242));
        assert_eq!(t.colors["text"], ColorValue::Reset);
        assert!(!t.colors.contains_key("warning"));
        assert!(!t.colors.contains_key("unknownToken"));
        let all = warnings.join("\n");
        assert!(all.contains("`warning`: `nope`"), "{all}");
        assert!(all.contains("no colour for border"), "{all}");
        assert!(parse("[]", Path::new("x.json")).is_err());
        assert!(parse("{\"name\": \"x\"}", Path::new("x.json")).is_err());
    }

    #[test]
    fn folders_flags_and_name_clashes() {
        let d = std::env::temp_dir().join(format!("pi-themes-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let put = |p: &str, name: &str| {
            let path = d.join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(
                path,
                format!(r##"{{"name": "{name}", "colors": {{"accent": "#010203"}}}}"##),
            )
            .unwrap();
        };
        put("agent/themes/mine.json", "mine");
        put("agent/themes/dark.json", "dark");
        put("proj/.pi/themes/mine.json", "mine");
        put("proj/.pi/themes/team.json", "team");
        put("flag.json", "flagged");
        let places = Places {
            agent_dir: Some(d.join("agent")),
            cwd: d.join("proj"),
            flags: vec![d.join("flag.json")],
            settings: vec![],
            no_discovery: false,
        };
        let (found, warnings) = discover(&places);
        let names: Vec<&str> = found.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["flagged", "mine", "team"]);
        assert!(found[1].path.starts_with(d.join("proj")));
        let all = warnings.join("\n");
        assert!(all.contains("built-in theme's name"), "{all}");
        assert!(all.contains("already loaded"), "{all}");
        let (only, _) = discover(&Places {
            no_discovery: true,
            ..places
        });
        assert_eq!(only.len(), 1);
        let _ = std::fs::remove_dir_all(&d);
    }
}
