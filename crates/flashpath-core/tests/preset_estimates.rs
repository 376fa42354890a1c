//! Every shipped preset declares its estimates (`config/estimates.rs`): each value
//! whose comment calls it an estimate has a declared physical range (or choices) and a
//! reason, the declarations are valid against the preset, and the preset still loads.

use flashpath_core::config::estimates;
use flashpath_core::config::preset;
use std::path::{Path, PathBuf};

fn presets() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../presets");
    let mut out = Vec::new();
    for kind in ["devices", "hosts"] {
        for e in std::fs::read_dir(root.join(kind)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                let text = std::fs::read_to_string(&p).unwrap();
                out.push((p, text));
            }
        }
    }
    out.sort();
    assert!(out.len() >= 14, "shipped presets: {}", out.len());
    out
}

/// The fields whose comment block (the `#` lines right above them) calls them an
/// estimate, with the line they are written on. A block that says "not an estimate"
/// does not count.
fn commented_estimates(text: &str) -> Vec<(String, usize)> {
    let mut table = String::new();
    let mut block = String::new();
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if let Some(c) = l.strip_prefix('#') {
            block.push_str(c);
            block.push(' ');
            continue;
        }
        if let Some(h) = l.strip_prefix('[') {
            table = h.trim_end_matches(']').trim().to_string();
            block.clear();
            continue;
        }
        if let Some((k, _)) = l.split_once('=') {
            let b = block.to_lowercase();
            if table != "estimates" && b.contains("estimate") && !b.contains("not an estimate") {
                let k = k.trim();
                let field = if table.is_empty() {
                    k.to_string()
                } else {
                    format!("{table}.{k}")
                };
                out.push((field, i + 1));
            }
        }
        block.clear();
    }
    out
}

#[test]
fn every_estimate_is_declared_with_a_range_and_a_reason() {
    let mut missing = Vec::new();
    for (path, text) in presets() {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let declared = estimates::declared(&text, &name).unwrap_or_else(|e| panic!("{e}"));
        for (field, line) in commented_estimates(&text) {
            if !declared.iter().any(|d| d.field == field) {
                missing.push(format!("{name}:{line}: {field}"));
            }
        }
        for d in &declared {
            assert!(d.why.len() >= 10, "{name}:{}: {}: say why", d.line, d.field);
            // A shipped preset's values lie inside their declared ranges.
            assert!(
                d.inside(),
                "{name}:{}: {} = {} is outside {}",
                d.line,
                d.field,
                d.value,
                d.bounds.show()
            );
        }
        // The table does not change what the preset is.
        let (kind, _, _) = preset::header(&text).unwrap();
        if kind == "device" {
            preset::load_device(&text, &name, &[]).unwrap_or_else(|e| panic!("{e}"));
        } else {
            preset::load_host(&text, &name, &[]).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    assert!(
        missing.is_empty(),
        "{} values are called an estimate in their comment but have no [estimates] entry:\n{}",
        missing.len(),
        missing.join("\n")
    );
}

#[test]
fn the_comment_scan_finds_what_it_should() {
    let text = "[nand]\n# Estimate: x.\nt_read = \"60us\"\n# Source: y.\nt_prog = \"1ms\"\n\
                # derived, not an estimate\nt_erase = \"3ms\"\n[estimates]\n# an estimate\n\"nand.t_read\" = 1\n";
    assert_eq!(
        commented_estimates(text),
        vec![("nand.t_read".to_string(), 3)]
    );
}
