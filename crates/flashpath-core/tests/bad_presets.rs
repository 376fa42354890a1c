//! The bad-input corpus for presets: every file in `tests/data/bad_presets/` is a
//! shipped preset with one thing broken, and `NAME.err` beside it holds the one-line
//! error the loader must give (origin = the file name). Also bad `--set` overrides,
//! and properties: no text and no override ever makes the loader panic.
//!
//! The kind of a file comes from its name: `device-*.toml` or `host-*.toml`. To
//! regenerate the `.err` files after a deliberate change of wording, run with
//! `FLASHPATH_BLESS_BAD_PRESETS=1` and read every changed message before committing.

use flashpath_core::config::preset::{load_device, load_host, PresetError};
use proptest::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

const DEVICE: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");
const HOST: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Device,
    Host,
}

fn load(kind: Kind, text: &str, origin: &str, set: &[(String, String)]) -> Result<(), PresetError> {
    match kind {
        Kind::Device => load_device(text, origin, set).map(|_| ()),
        Kind::Host => load_host(text, origin, set).map(|_| ()),
    }
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/bad_presets")
}

struct BadFile {
    /// File name, e.g. `device-zero-dies.toml`; also the origin given to the loader.
    name: String,
    kind: Kind,
    /// The file's text; bytes that are not UTF-8 become U+FFFD (the loader takes `&str`).
    text: String,
    err_path: PathBuf,
}

fn corpus() -> Vec<BadFile> {
    let mut files: Vec<BadFile> = std::fs::read_dir(data_dir())
        .expect("tests/data/bad_presets exists")
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let kind = if name.starts_with("device-") {
                Kind::Device
            } else if name.starts_with("host-") {
                Kind::Host
            } else {
                panic!("{name}: a bad preset's name starts with device- or host-")
            };
            let bytes = std::fs::read(&p).expect("readable bad preset");
            BadFile {
                text: String::from_utf8_lossy(&bytes).into_owned(),
                err_path: p.with_extension("err"),
                name,
                kind,
            }
        })
        .collect();
    files.sort_by(|a, b| a.name.cmp(&b.name));
    files
}

#[test]
fn corpus_is_complete() {
    let files = corpus();
    let devices = files.iter().filter(|f| f.kind == Kind::Device).count();
    let hosts = files.len() - devices;
    assert!(
        devices >= 15 && hosts >= 15,
        "{devices} device and {hosts} host files"
    );
    // Every .err has its .toml (a renamed case leaves no stale expectation behind).
    for e in std::fs::read_dir(data_dir()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "err") {
            assert!(
                p.with_extension("toml").exists(),
                "{} has no .toml beside it",
                p.display()
            );
        }
    }
}

/// Files on which the loader is known to panic instead of returning an error: a bug found
/// by a new file goes here until it is fixed, so the corpus can hold it without failing.
/// `no_bad_file_panics` checks that exactly these panic: when one is fixed, remove it
/// here and bless its `.err` file. (The u32 geometry overflows of `device-channels-u32-max`
/// and `device-planes-u32-max` were fixed in 98838c5.)
const KNOWN_PANICS: &[&str] = &[];

enum Outcome {
    Accepted,
    Rejected(String),
    Panicked(String),
}

fn try_load(f: &BadFile) -> Outcome {
    match catch_unwind(AssertUnwindSafe(|| load(f.kind, &f.text, &f.name, &[]))) {
        Ok(Ok(())) => Outcome::Accepted,
        Ok(Err(e)) => Outcome::Rejected(e.to_string()),
        Err(p) => Outcome::Panicked(
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default(),
        ),
    }
}

#[test]
fn every_bad_file_is_rejected_with_its_message() {
    let bless = std::env::var_os("FLASHPATH_BLESS_BAD_PRESETS").is_some();
    let mut failures = Vec::new();
    for f in corpus() {
        let msg = match try_load(&f) {
            Outcome::Accepted => {
                failures.push(format!("{}: accepted", f.name));
                continue;
            }
            // Reported (or expected) by `no_bad_file_panics`.
            Outcome::Panicked(_) => continue,
            Outcome::Rejected(msg) => msg,
        };
        if msg.contains('\n') || msg.contains('\r') {
            failures.push(format!("{}: message is not one line: {msg:?}", f.name));
        }
        if !msg.starts_with(&format!("{}:", f.name)) {
            failures.push(format!(
                "{}: message does not start with the origin: {msg}",
                f.name
            ));
        }
        if bless {
            std::fs::write(&f.err_path, format!("{msg}\n")).unwrap();
            continue;
        }
        match std::fs::read_to_string(&f.err_path) {
            Ok(want) if want.trim() == msg => {}
            Ok(want) => failures.push(format!(
                "{}:\n    expected: {}\n    got:      {msg}",
                f.name,
                want.trim()
            )),
            Err(e) => failures.push(format!("{}: no .err file ({e}); got: {msg}", f.name)),
        }
    }
    assert!(
        failures.is_empty(),
        "bad presets:\n  {}",
        failures.join("\n  ")
    );
}

#[test]
fn no_bad_file_panics() {
    let mut unexpected = Vec::new();
    let mut fixed = Vec::new();
    for f in corpus() {
        let known = KNOWN_PANICS.contains(&f.name.as_str());
        match try_load(&f) {
            Outcome::Panicked(why) if !known => unexpected.push(format!("{}: {why}", f.name)),
            Outcome::Panicked(_) => {}
            _ if known => fixed.push(f.name.clone()),
            _ => {}
        }
    }
    assert!(
        unexpected.is_empty(),
        "the loader panicked on:\n  {}",
        unexpected.join("\n  ")
    );
    assert!(
        fixed.is_empty(),
        "no longer panic (remove from KNOWN_PANICS and bless their .err): {fixed:?}"
    );
    for name in KNOWN_PANICS {
        assert!(
            data_dir().join(name).exists(),
            "{name} is not in the corpus"
        );
    }
}

/// Bad `--set` overrides on the shipped presets: (kind, field, value, expected message).
const BAD_SETS: &[(Kind, &str, &str, &str)] = &[
    (
        Kind::Device,
        "page_types.cell",
        "qlc",
        "--set page_types.cell=qlc (emmc51-hs400-32g): page_types.cell: 'qlc' is not \"slc\", \"mlc\" or \"tlc\"",
    ),
    (
        Kind::Device,
        "page_types.cell",
        "tlc",
        "emmc51-hs400-32g:172: page_types.read_profile: has 2 times; tlc has 3 page types",
    ),
    (
        Kind::Device,
        "read_retry.max_steps",
        "100",
        "--set read_retry.max_steps=100 (emmc51-hs400-32g): read_retry.max_steps: 100 is more than any retry table (64)",
    ),
    (
        Kind::Device,
        "read_retry.ref_pe_cycles",
        "0",
        "--set read_retry.ref_pe_cycles=0 (emmc51-hs400-32g): read_retry.ref_pe_cycles: must be at least 1",
    ),
    (
        Kind::Device,
        "wear.data_age",
        "30",
        "--set wear.data_age=30 (emmc51-hs400-32g): wear.data_age: '30': a duration needs a unit (ns, us, ms, s, h, d)",
    ),
    (
        Kind::Device,
        "nand.t_raed",
        "60us",
        "--set nand.t_raed=60us (emmc51-hs400-32g): nand.t_raed: no such field in a device preset (unknown field `t_raed`, expected one of `t_read`, `t_prog`, `t_erase`, `channel_rate`, `cache_program`)",
    ),
    (
        Kind::Device,
        "nnad.t_read",
        "60us",
        "--set nnad.t_read=60us (emmc51-hs400-32g): nnad.t_read: no such field in a device preset (unknown field `nnad`, expected one of `name`, `kind`, `description`, `interface`, `bus_mode`, `queue_depth`, `hosts`, `drivers`, `geometry`, `nand`, `controller`, `map_cache`, `write_buffer`, `ftl`, `ext_csd`, `block_limits`, `hpb`, `write_booster`, `allocation_unit`, `page_types`, `read_retry`, `wear`, `estimates`)",
    ),
    (
        Kind::Device,
        "geometry.channels",
        "two",
        "--set geometry.channels=two (emmc51-hs400-32g): geometry.channels: 'two' is not an integer",
    ),
    (
        Kind::Device,
        "geometry.channels",
        "2.5",
        "--set geometry.channels=2.5 (emmc51-hs400-32g): geometry.channels: '2.5' is not an integer",
    ),
    (
        Kind::Device,
        "geometry.channels",
        "99999999999999999999",
        "--set geometry.channels=99999999999999999999 (emmc51-hs400-32g): geometry.channels: '99999999999999999999' is not an integer",
    ),
    (
        Kind::Device,
        "geometry.channels",
        "-1",
        "--set geometry.channels=-1 (emmc51-hs400-32g): geometry.channels: invalid value: integer `-1`, expected u32",
    ),
    (
        Kind::Device,
        "geometry.dies_per_channel",
        "0",
        "--set geometry.dies_per_channel=0 (emmc51-hs400-32g): geometry.dies_per_channel: 0 is outside the plausible range 1..=256",
    ),
    (
        Kind::Device,
        "nand.t_read",
        "0us",
        "--set nand.t_read=0us (emmc51-hs400-32g): nand.t_read: 0us is outside the plausible range 1000ns..=10000000ns",
    ),
    (
        Kind::Device,
        "nand.t_read",
        "60",
        "--set nand.t_read=60 (emmc51-hs400-32g): nand.t_read: '60': a duration needs a unit (ns, us, ms, s, h, d)",
    ),
    (
        Kind::Device,
        "nand",
        "60us",
        "--set nand=60us (emmc51-hs400-32g): nand: is a table or array; set its fields",
    ),
    (
        Kind::Device,
        "nand.t_read.max",
        "60us",
        "--set nand.t_read.max=60us (emmc51-hs400-32g): nand.t_read.max: is not a table",
    ),
    (
        Kind::Device,
        "",
        "60us",
        "--set =60us (emmc51-hs400-32g): no such field in this preset",
    ),
    (
        Kind::Host,
        "mmc.busy_detect",
        "yes",
        "--set mmc.busy_detect=yes (sprd-sc9863a): mmc.busy_detect: 'yes' is not a boolean (true/false)",
    ),
    (
        Kind::Host,
        "cpu.irq_core",
        "8",
        "--set cpu.irq_core=8 (sprd-sc9863a): cpu.irq_core: core 8 does not exist on a 8-core host",
    ),
    (
        Kind::Host,
        "sources",
        "linux",
        "--set sources=linux (sprd-sc9863a): sources: is a table or array; set its fields",
    ),
    (
        Kind::Host,
        "mmc",
        "mmc-hsq",
        "--set mmc=mmc-hsq (sprd-sc9863a): mmc: is a table or array; set its fields",
    ),
    (
        Kind::Host,
        "cpu.cores",
        "eight",
        "--set cpu.cores=eight (sprd-sc9863a): cpu.cores: 'eight' is not an integer",
    ),
    (
        Kind::Host,
        "block.scheduler",
        "bfq",
        "--set block.scheduler=bfq (sprd-sc9863a): block.scheduler: 'bfq' is not modelled (none, mq-deadline)",
    ),
];

fn shipped(kind: Kind) -> (&'static str, &'static str) {
    match kind {
        Kind::Device => (DEVICE, "emmc51-hs400-32g"),
        Kind::Host => (HOST, "sprd-sc9863a"),
    }
}

#[test]
fn bad_overrides_are_rejected_with_their_message() {
    let mut failures = Vec::new();
    for &(kind, field, value, want) in BAD_SETS {
        let (text, origin) = shipped(kind);
        let set = [(field.to_string(), value.to_string())];
        match load(kind, text, origin, &set) {
            Ok(()) => failures.push(format!("--set {field}={value}: accepted")),
            Err(e) => {
                let msg = e.to_string();
                if msg != want || msg.contains('\n') {
                    failures.push(format!(
                        "--set {field}={value}:\n    expected: {want}\n    got:      {msg}"
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "bad overrides:\n  {}",
        failures.join("\n  ")
    );
}

#[test]
fn shipped_presets_load_without_overrides() {
    // The corpus proves something only if the unbroken originals load.
    load(Kind::Device, DEVICE, "emmc51-hs400-32g", &[]).unwrap();
    load(Kind::Host, HOST, "sprd-sc9863a", &[]).unwrap();
}

/// The dotted fields of a preset (`table.key` and top-level keys), from its text.
fn fields_of(text: &str) -> Vec<String> {
    let mut table = String::new();
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(h) = line.strip_prefix('[') {
            table = h.trim_end_matches(']').to_string();
            out.push(table.clone());
        } else if let Some((k, _)) = line.split_once('=') {
            let k = k.trim();
            if !k.is_empty() && !k.starts_with('#') && !k.starts_with('"') {
                out.push(if table.is_empty() {
                    k.to_string()
                } else {
                    format!("{table}.{k}")
                });
            }
        }
    }
    out
}

fn kind_strategy() -> impl Strategy<Value = Kind> {
    prop_oneof![Just(Kind::Device), Just(Kind::Host)]
}

/// A field: one of the preset's own (so the override reaches validation), or made up.
fn field_strategy(kind: Kind) -> BoxedStrategy<String> {
    let known = fields_of(shipped(kind).0);
    prop_oneof![
        3 => proptest::sample::select(known),
        1 => "[a-z_.]{0,24}",
        1 => any::<String>(),
    ]
    .boxed()
}

fn value_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        // Numbers with and without units, signs, exponents and huge magnitudes.
        "[-+]?[0-9_.]{0,30}(e[0-9]{1,3})?(ns|us|ms|s|B|KiB|MB/s|GB/s|MHz|Hz|furlongs)?",
        "(true|false|1|0|yes|none|mq-deadline|back-to-back|backoff|mmc-legacy|copyback)",
        any::<String>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_text_never_panics(kind in kind_strategy(), text in any::<String>()) {
        let _ = load(kind, &text, "prop.toml", &[]);
    }

    /// A shipped preset with a slice replaced by arbitrary text: mostly valid TOML
    /// with odd values, which reaches deeper than random strings do.
    #[test]
    fn mutated_preset_never_panics(
        kind in kind_strategy(),
        at in any::<prop::sample::Index>(),
        len in 0usize..40,
        insert in prop_oneof!["[0-9]{1,25}", "\"[^\"\n]{0,12}\"", any::<String>()],
    ) {
        let text = shipped(kind).0;
        let mut start = at.index(text.len());
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = (start + len).min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let mutated = format!("{}{}{}", &text[..start], insert, &text[end..]);
        let _ = load(kind, &mutated, "prop.toml", &[]);
    }

    /// Every geometry count at once, over the whole u32 range: products of them must be
    /// reported as errors, never overflow.
    #[test]
    fn geometry_overrides_never_panic(
        counts in proptest::collection::vec(
            prop_oneof![0u32..=300, any::<u32>(), Just(u32::MAX)], 5),
    ) {
        let fields = [
            "geometry.channels",
            "geometry.dies_per_channel",
            "geometry.planes_per_die",
            "geometry.pages_per_block",
            "geometry.blocks_per_plane",
        ];
        let set: Vec<(String, String)> = fields
            .iter()
            .zip(&counts)
            .map(|(f, v)| (f.to_string(), v.to_string()))
            .collect();
        let _ = load(Kind::Device, DEVICE, "emmc51-hs400-32g", &set);
    }

    #[test]
    fn arbitrary_overrides_never_panic(
        (kind, field) in kind_strategy().prop_flat_map(|k| (Just(k), field_strategy(k))),
        value in value_strategy(),
    ) {
        let (text, origin) = shipped(kind);
        let r = load(kind, text, origin, &[(field.clone(), value.clone())]);
        if let Err(e) = r {
            prop_assert!(!e.to_string().contains('\n') || field.contains('\n') || value.contains('\n'));
        }
    }
}
