//! Docs that cannot drift: every command shown in README.md and docs/*.md runs here, and
//! the excerpts shown beside them are checked against what the program prints.
//!
//! The convention, in the Markdown source:
//!
//! - A ```` ```sh ```` block with a `flashpath` command (or `cargo run ... -p
//!   flashpath-cli -- ARGS`; both run this build's binary) must follow a marker line
//!   `<!-- doc-test -->` (run as shown) or `<!-- doc-test: DIRECTIVE; DIRECTIVE ... -->`.
//!   An unmarked one fails this test. Directives:
//!   - `skip REASON` — not run (e.g. `skip board only: writes /dev/mmcblk0`);
//!   - `sub OLD => NEW` — the run replaces OLD with NEW in the block's text (a size a
//!     test can afford);
//!   - `edit FILE: OLD => NEW` — the run uses a copy of FILE (under jobs/ or presets/)
//!     with OLD replaced by NEW;
//!   - `shape` — the excerpt is checked with every number masked (for a run `sub` or
//!     `edit` made smaller: the lines, labels and columns must be there, not the values);
//!   - `only flashpath` — run only the block's flashpath commands (the others are shown
//!     for the reader, e.g. `cargo test`).
//! - The block's lines run in order through `bash -e` in a fresh directory that holds
//!   the repository's `jobs/` and `presets/` (commands are written from the repository
//!   root), with the binary first on PATH as `flashpath`. A block needing a tool that is
//!   not installed (fio, blkparse) is skipped with a note, as the fio-oracle tests do.
//! - A ```` ```output ```` block after a run block (before the next ```` ```sh ````
//!   block) is its excerpt: each of its lines must appear in the block's standard output,
//!   in order (other output lines may come between). Runs of blanks compare as one space;
//!   a line `...` stands for lines left out; `…` in a line matches any text.
//! - Any other fenced block holding a command line (`flashpath ...`, `cargo run ...`)
//!   fails this test: a command is a ```` ```sh ```` block, a synopsis a
//!   ```` ```text ```` block.
//!
//! `DOC_EXAMPLES_SHOW=1` prints every run's output (to write an excerpt).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// One fenced block of a Markdown file.
#[derive(Debug, Clone)]
struct Fence {
    line: usize,
    lang: String,
    body: String,
    /// The `<!-- doc-test... -->` marker on the last non-blank line before the fence.
    marker: Option<String>,
}

fn fences(text: &str) -> Vec<Fence> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    let mut last_nonblank: Option<&str> = None;
    while let Some((i, l)) = lines.next() {
        if let Some(lang) = l.trim_start().strip_prefix("```") {
            let marker = last_nonblank
                .map(str::trim)
                .and_then(|m| m.strip_prefix("<!-- doc-test"))
                .and_then(|m| m.strip_suffix("-->"))
                .map(|m| m.trim().trim_start_matches(':').trim().to_string());
            let mut body = String::new();
            for (_, b) in lines.by_ref() {
                if b.trim_start().starts_with("```") {
                    break;
                }
                body.push_str(b);
                body.push('\n');
            }
            out.push(Fence {
                line: i + 1,
                lang: lang.trim().to_string(),
                body,
                marker,
            });
            last_nonblank = None;
        } else if !l.trim().is_empty() {
            last_nonblank = Some(l);
        }
    }
    out
}

/// Inline code spans (outside fenced blocks) that are a command with an elision (`...`,
/// `…`), which a reader cannot type: (line, span).
fn elided_inline_commands(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for (i, l) in text.lines().enumerate() {
        if l.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        for span in l.split('`').skip(1).step_by(2) {
            if is_flashpath_command(span) && (span.contains("...") || span.contains('…')) {
                out.push((i + 1, span.to_string()));
            }
        }
    }
    out
}

const CARGO_RUN: &str = "cargo run --release -p flashpath-cli --";

/// Whether a line is a flashpath command line.
fn is_flashpath_command(l: &str) -> bool {
    let l = l.trim_start().trim_start_matches("$ ");
    l.starts_with("flashpath ") || l.starts_with("cargo run")
}

/// The block's commands, continuation lines joined, comments dropped.
fn commands(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for l in body.lines() {
        let t = l.trim();
        if cur.is_empty() && (t.is_empty() || t.starts_with('#')) {
            continue;
        }
        if let Some(head) = t.strip_suffix('\\') {
            cur.push_str(head.trim_end());
            cur.push(' ');
        } else {
            cur.push_str(t);
            out.push(std::mem::take(&mut cur));
        }
    }
    out
}

#[derive(Default, Debug)]
struct Directives {
    skip: Option<String>,
    subs: Vec<(String, String)>,
    edits: Vec<(String, String, String)>,
    shape: bool,
    only_flashpath: bool,
}

fn directives(marker: &str) -> Result<Directives, String> {
    let mut d = Directives::default();
    // `skip` takes the rest of the marker as its reason.
    if let Some(reason) = marker.strip_prefix("skip") {
        if reason.trim().is_empty() {
            return Err("skip without a reason".into());
        }
        d.skip = Some(reason.trim().to_string());
        return Ok(d);
    }
    for part in marker.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (word, rest) = part.split_once(' ').unwrap_or((part, ""));
        let rest = rest.trim();
        let pair = |s: &str| -> Result<(String, String), String> {
            let (a, b) = s
                .split_once("=>")
                .ok_or_else(|| format!("'{part}': no '=>'"))?;
            Ok((a.trim().to_string(), b.trim().to_string()))
        };
        match word {
            "sub" => d.subs.push(pair(rest)?),
            "edit" => {
                let (file, r) = rest
                    .split_once(':')
                    .ok_or_else(|| format!("'{part}': no 'FILE:'"))?;
                let (a, b) = pair(r)?;
                d.edits.push((file.trim().to_string(), a, b));
            }
            "shape" => d.shape = true,
            "only" if rest == "flashpath" => d.only_flashpath = true,
            _ => return Err(format!("unknown directive '{part}'")),
        }
    }
    Ok(d)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool} >/dev/null")])
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Runs one block; Ok(Some(stdout)) or Ok(None) when a tool it needs is missing.
fn run_block(id: &str, body: &str, d: &Directives) -> Result<Option<String>, String> {
    let dir = std::env::temp_dir().join(format!("flashpath-doc-{}-{id}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    let root = root();
    for sub in ["jobs", "presets"] {
        if d.edits
            .iter()
            .any(|(f, _, _)| f.starts_with(&format!("{sub}/")))
        {
            copy_dir(&root.join(sub), &dir.join(sub));
        } else {
            std::os::unix::fs::symlink(root.join(sub), dir.join(sub)).unwrap();
        }
    }
    for (file, old, new) in &d.edits {
        let p = dir.join(file);
        let text = std::fs::read_to_string(&p).map_err(|e| format!("edit {file}: {e}"))?;
        if !text.contains(old.as_str()) {
            return Err(format!("edit {file}: '{old}' is not in it"));
        }
        std::fs::write(&p, text.replace(old.as_str(), new)).unwrap();
    }
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_flashpath"), dir.join("bin/flashpath")).unwrap();
    let mut script = body.replace(CARGO_RUN, "flashpath");
    for (old, new) in &d.subs {
        if !script.contains(old.as_str()) {
            return Err(format!("sub: '{old}' is not in the block"));
        }
        script = script.replace(old.as_str(), new);
    }
    let cmds: Vec<String> = commands(&script)
        .into_iter()
        .filter(|c| !d.only_flashpath || c.starts_with("flashpath "))
        .collect();
    for c in &cmds {
        let tool = c.split_whitespace().next().unwrap_or("");
        if tool != "flashpath" && !have(tool) {
            eprintln!("doc-test {id}: {tool} is not installed; block not run");
            return Ok(None);
        }
    }
    let out = Command::new("bash")
        .args(["-e", "-o", "pipefail", "-c", &cmds.join("\n")])
        .current_dir(&dir)
        .env(
            "PATH",
            format!(
                "{}:{}",
                dir.join("bin").display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!(
            "exit {:?}\n--- stderr:\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(Some(stdout))
}

fn norm(l: &str) -> String {
    l.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Every number (digits with their points and commas, and a sign just before) as '#'.
fn mask(l: &str) -> String {
    let mut out = String::new();
    let mut in_num = false;
    for c in l.chars() {
        if c.is_ascii_digit() || (in_num && (c == '.' || c == ',')) {
            if !in_num {
                if out.ends_with(['+', '-']) {
                    out.pop();
                }
                out.push('#');
            }
            in_num = true;
        } else {
            in_num = false;
            out.push(c);
        }
    }
    out
}

fn line_matches(want: &str, got: &str) -> bool {
    let pieces: Vec<&str> = want.split('…').map(str::trim).collect();
    if pieces.len() == 1 {
        return want == got;
    }
    let mut rest = got;
    for (i, p) in pieces.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(p) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == pieces.len() - 1 {
            return rest.ends_with(p);
        } else {
            match rest.find(p) {
                Some(at) => rest = &rest[at + p.len()..],
                None => return false,
            }
        }
    }
    true
}

/// Checks the excerpt's lines appear in the output in order; the first one missing.
fn check_excerpt(excerpt: &str, output: &str, shape: bool) -> Result<(), String> {
    let f = |l: &str| if shape { mask(&norm(l)) } else { norm(l) };
    let got: Vec<String> = output.lines().map(f).collect();
    let mut at = 0;
    for want in excerpt.lines().map(f) {
        if want.is_empty() || want == "..." {
            continue;
        }
        match got[at..].iter().position(|g| line_matches(&want, g)) {
            Some(k) => at += k + 1,
            None => {
                return Err(format!(
                    "excerpt line not in the output (in order): {want:?}\n--- output:\n{output}"
                ))
            }
        }
    }
    Ok(())
}

struct Case {
    id: String,
    fence: Fence,
    d: Directives,
    excerpt: Option<Fence>,
}

/// The docs' run blocks with their excerpts, and the convention's violations.
fn cases() -> (Vec<Case>, Vec<String>) {
    let root = root();
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut cases = Vec::new();
    let mut bad = Vec::new();
    for file in &files {
        let name = file.strip_prefix(&root).unwrap().display().to_string();
        let text = std::fs::read_to_string(file).unwrap();
        for (line, span) in elided_inline_commands(&text) {
            bad.push(format!(
                "{name}:{line}: a command with an elision, which cannot be typed: `{span}`"
            ));
        }
        let mut last_run: Option<usize> = None;
        for f in fences(&text) {
            let at = format!("{name}:{}", f.line);
            let has_cmd = f.body.lines().any(is_flashpath_command);
            match f.lang.as_str() {
                "sh" => {
                    last_run = None;
                    let Some(m) = &f.marker else {
                        if has_cmd {
                            bad.push(format!(
                                "{at}: a flashpath command block with no <!-- doc-test --> marker"
                            ));
                        }
                        continue;
                    };
                    match directives(m) {
                        Err(e) => bad.push(format!("{at}: {e}")),
                        Ok(d) if d.skip.is_some() => {}
                        Ok(d) => {
                            last_run = Some(cases.len());
                            cases.push(Case {
                                id: format!(
                                    "{}-{}",
                                    name.replace(['/', '.'], "_"),
                                    f.line
                                ),
                                fence: f.clone(),
                                d,
                                excerpt: None,
                            });
                        }
                    }
                }
                "output" => match last_run {
                    Some(k) if cases[k].excerpt.is_none() => cases[k].excerpt = Some(f),
                    _ => bad.push(format!(
                        "{at}: an output excerpt with no run block before it"
                    )),
                },
                "text" => {}
                _ if has_cmd => bad.push(format!(
                    "{at}: a command in a ```{} block (commands go in ```sh with a marker; a synopsis in ```text)",
                    f.lang
                )),
                _ => {}
            }
        }
    }
    (cases, bad)
}

#[test]
fn doc_commands_run_and_print_their_excerpts() {
    let (cases, mut bad) = cases();
    assert!(cases.len() >= 10, "only {} doc commands found", cases.len());
    let show = std::env::var_os("DOC_EXAMPLES_SHOW").is_some();
    // Two at a time: the blocks are independent.
    let results: Vec<(String, Result<Option<String>, String>)> = std::thread::scope(|s| {
        let chunks: Vec<Vec<&Case>> = (0..2)
            .map(|k| cases.iter().skip(k).step_by(2).collect())
            .collect();
        let hs: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .into_iter()
                        .map(|c| {
                            let t = std::time::Instant::now();
                            let r = run_block(&c.id, &c.fence.body, &c.d);
                            if show {
                                eprintln!(
                                    "=== {} ({:.1} s)\n{}",
                                    c.id,
                                    t.elapsed().as_secs_f64(),
                                    match &r {
                                        Ok(Some(o)) => o.clone(),
                                        other => format!("{other:?}"),
                                    }
                                );
                            }
                            (c.id.clone(), r)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    for (id, r) in results {
        let c = cases.iter().find(|c| c.id == id).unwrap();
        match r {
            Err(e) => bad.push(format!("{id}: {e}")),
            Ok(None) => {}
            Ok(Some(out)) => {
                if let Some(x) = &c.excerpt {
                    if let Err(e) = check_excerpt(&x.body, &out, c.d.shape) {
                        bad.push(format!("{id} (excerpt at line {}): {e}", x.line));
                    }
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n\n"));
}

/// The checker itself: a wrong excerpt line fails, elisions and wildcards match, masking
/// ignores values, an unmarked command block and a command outside ```sh are caught.
#[test]
fn the_checker_catches_what_it_must() {
    let out = "t: (groupid=0)\n  read: IOPS=7068, BW=27.6MiB/s\n  clat (usec): min=398\n";
    assert!(check_excerpt("  read: IOPS=7068, BW=27.6MiB/s\n...\n", out, false).is_ok());
    assert!(check_excerpt("  read: IOPS=7069, BW=27.6MiB/s\n", out, false).is_err());
    assert!(check_excerpt(
        "  clat (usec): min=398\n  read: IOPS=7068, BW=27.6MiB/s\n",
        out,
        false
    )
    .is_err());
    assert!(check_excerpt("  read: IOPS=…, BW=27.6MiB/s\n", out, false).is_ok());
    assert!(check_excerpt("  read: IOPS=12, BW=9.9MiB/s\n", out, true).is_ok());
    assert!(check_excerpt("  write: IOPS=12, BW=9.9MiB/s\n", out, true).is_err());
    assert_eq!(
        mask("9453   29519 (+212.3%) -"),
        mask("29905   29884 (-0.1%) -")
    );
    let md = "x\n\n```sh\nflashpath fio --name=a\n```\n\n<!-- doc-test: sub a => b -->\n```sh\nflashpath x\n```\n```\nflashpath fio\n```\n";
    let f = fences(md);
    assert_eq!(f.len(), 3);
    assert_eq!(f[0].marker, None);
    assert_eq!(f[1].marker.as_deref(), Some("sub a => b"));
    assert!(directives("skip").is_err());
    let prose = "run `flashpath iozone -F f1 ... f16` or `flashpath fio a.fio`\n```text\n`flashpath x ...`\n```\n";
    assert_eq!(
        elided_inline_commands(prose),
        [(1, "flashpath iozone -F f1 ... f16".to_string())]
    );
    assert!(directives("bogus").is_err());
    assert_eq!(
        commands("# c\nflashpath fio --a \\\n  --b\nfio x\n"),
        ["flashpath fio --a --b", "fio x"]
    );
}
