//! The repository stands alone: every source a README, doc, job file, preset, comment or
//! test cites must be inside it. This walks README.md, docs/, crates/, jobs/ and presets/
//! and fails on
//! - a citation of notes outside the repository (the project's private reference notes,
//!   a sibling `shared` directory, any `reference/NAME.md` that is not a file here);
//! - a `docs/NAME.md` that does not exist, or a `docs/NAME.md §N` whose file has no
//!   numbered section N (`## N. …`);
//! - in README.md and docs/, a relative Markdown link to a file that does not exist.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every text file under the walked roots, as (path relative to the root, text).
fn files() -> Vec<(String, String)> {
    let root = root();
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = ["README.md", "docs", "crates", "jobs", "presets"]
        .iter()
        .map(|p| root.join(p))
        .collect();
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name == "target" || name.starts_with('.') {
                continue;
            }
            for e in std::fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
        } else if let Ok(text) = std::fs::read_to_string(&p) {
            let rel = p
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            out.push((rel, text));
        }
    }
    out.sort();
    out
}

/// The numbered sections (`## N.` or `## N ` headings) of a Markdown file.
fn sections(text: &str) -> BTreeSet<u32> {
    text.lines()
        .filter_map(|l| l.strip_prefix("## "))
        .filter_map(|h| {
            let n: String = h.chars().take_while(char::is_ascii_digit).collect();
            n.parse().ok()
        })
        .collect()
}

/// The path-like token that ends at byte `end` of `line` (letters, digits, `/._-`).
fn token_before(line: &str, end: usize) -> &str {
    let start = line[..end]
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || "/._-".contains(c)))
        .map_or(0, |i| i + 1);
    &line[start..end]
}

/// The text after a `§` that follows byte `end` of `line` (past quotes, commas, spaces).
fn section_after(line: &str, end: usize) -> Option<&str> {
    line[end..]
        .trim_start_matches(['`', ',', ' ', ')', ']'])
        .strip_prefix('§')
}

fn followed_by_section(line: &str, end: usize) -> bool {
    section_after(line, end).is_some()
}

/// Problems in one file's text (`path` relative to the repository root).
fn problems(path: &str, text: &str) -> Vec<String> {
    let root = root();
    // Spelt in pieces so this file does not cite them itself.
    let outside = [
        ["../", "shared"].concat(),
        ["/work/", "shared"].concat(),
        ["shared", "/reference"].concat(),
        ["seed", "-results"].concat(),
        ["ARCHITECTURE", ".md"].concat(),
        ["STYLE", ".md"].concat(),
        ["fio", "-compat"].concat(),
        ["kernel-behaviour", " §"].concat(),
    ];
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let at = format!("{path}:{}", n + 1);
        for o in &outside {
            if line.contains(o.as_str()) {
                out.push(format!(
                    "{at}: cites '{o}', which is outside the repository"
                ));
            }
        }
        // Every NAME.md token: reference/NAME.md must be a file here; docs/NAME.md must
        // exist, and a § after it must name one of its numbered sections.
        let mut from = 0;
        while let Some(i) = line[from..].find(".md") {
            let end = from + i + 3;
            from = end;
            let tok = token_before(line, end);
            let doc = if let Some(k) = tok.find("reference/") {
                let rel = &tok[k..];
                if !root.join(rel).is_file() && !root.join(path).with_file_name(rel).is_file() {
                    out.push(format!(
                        "{at}: cites '{rel}', which is not in the repository"
                    ));
                }
                continue;
            } else if let Some(k) = tok.find("docs/") {
                root.join(&tok[k..])
            } else if !tok.contains('/') && !tok.is_empty() && followed_by_section(line, end) {
                // "published-results.md §4": a doc's name alone, with a section.
                root.join("docs").join(tok)
            } else if path.starts_with("docs/") && !tok.contains('/') && !tok.is_empty() {
                // A doc naming a sibling doc without a section.
                let sib = root.join("docs").join(tok);
                if !sib.is_file() {
                    continue;
                }
                sib
            } else {
                continue;
            };
            let Ok(doc_text) = std::fs::read_to_string(&doc) else {
                out.push(format!("{at}: cites '{tok}', which does not exist"));
                continue;
            };
            if let Some(s) = section_after(line, end) {
                let num: String = s.chars().take_while(char::is_ascii_digit).collect();
                let have = sections(&doc_text);
                if !num.parse().is_ok_and(|n: u32| have.contains(&n)) {
                    out.push(format!(
                        "{at}: cites '{tok} §{num}', a section it does not have"
                    ));
                }
            }
        }
        // Markdown links in README.md and docs/.
        if path.ends_with(".md") && (path == "README.md" || path.starts_with("docs/")) {
            let mut from = 0;
            while let Some(i) = line[from..].find("](") {
                let start = from + i + 2;
                let Some(len) = line[start..].find(')') else {
                    break;
                };
                from = start + len;
                let target = line[start..start + len].split('#').next().unwrap();
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                if !root.join(path).with_file_name(target).exists() {
                    out.push(format!("{at}: links to '{target}', which does not exist"));
                }
            }
        }
    }
    out
}

#[test]
fn every_citation_points_inside_the_repository() {
    let me = "crates/flashpath-cli/tests/provenance.rs";
    let all = files();
    assert!(
        all.iter().any(|(p, _)| p == "README.md"),
        "README.md not found"
    );
    assert!(all.len() > 100, "only {} files walked", all.len());
    let bad: Vec<String> = all
        .iter()
        .filter(|(p, _)| p != me)
        .flat_map(|(p, t)| problems(p, t))
        .collect();
    assert!(
        bad.is_empty(),
        "{} citation(s):\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// The checker itself: each kind of bad citation is caught, good ones pass.
#[test]
fn the_checker_catches_each_kind() {
    let cite = |t: &str| problems("presets/devices/x.toml", t);
    let seed = ["seed", "-results §1"].concat();
    assert_eq!(cite(&format!("# ({seed})")).len(), 1);
    assert_eq!(cite(&["# ../", "shared", "/notes.md"].concat()).len(), 1);
    assert_eq!(cite("# (reference/nowhere.md §2)").len(), 1);
    assert_eq!(cite("# (docs/nowhere.md)").len(), 1);
    assert_eq!(cite("# (docs/published-results.md §9)").len(), 1);
    assert_eq!(
        cite("# (docs/mechanisms.md §1)").len(),
        1,
        "no numbered sections"
    );
    assert!(cite("# (docs/published-results.md §4, docs/ufs-hpb.md §3)").is_empty());
    assert!(cite("# `docs/published-results.md` §5 and docs/mechanisms.md").is_empty());
    let doc = |t: &str| problems("docs/x.md", t);
    assert!(doc("see [§4](published-results.md#4-ufs-host-performance-booster-hpb)").is_empty());
    assert_eq!(doc("see [x](no-such-doc.md)").len(), 1);
    assert_eq!(doc("as published-results.md §7 says").len(), 1);
    assert_eq!(cite("# (notes-elsewhere.md §2)").len(), 1);
    assert!(cite("# (kernel-behaviour.md §2, published-results.md §3)").is_empty());
}
