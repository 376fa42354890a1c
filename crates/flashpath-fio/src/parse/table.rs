//! The table of every option fio 3.33 knows: core options, engine options of the
//! engines built into Debian's fio 3.33, deprecated options and profile options.
//!
//! The data lives in `table/options.tsv`, generated from the fio binary itself by
//! `table/gen_table.py` (`fio --cmdhelp`, `fio --enghelp`, `fio --debug=parse`), so that
//! "parse-only accepts exactly what fio accepts" has one source of truth.

use std::sync::OnceLock;

/// fio's internal option type (`enum fio_opt_type` in parse.h); it decides how a value
/// is split and converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptType {
    /// A word from a fixed list, with an optional `:suffix` handled by a callback.
    Str,
    /// Like `Str` but the value is split at `,` and every part must match.
    StrMulti,
    /// A string handed whole to a callback (`bssplit`).
    StrUll,
    /// A free string (file names, descriptions).
    StrStore,
    /// A size with k/m/g suffix.
    StrVal,
    /// A size that may also be a `%` or a zone count (`z`).
    StrValZone,
    /// A time with us/ms/s/m/h/d suffix.
    StrValTime,
    /// 32-bit integer (with size suffixes).
    Int,
    /// 64-bit integer (with size suffixes).
    Ull,
    /// `0` or `1` (any unsigned integer is scanned, then range-checked).
    Bool,
    /// A flag: bare name means 1, `=N` also accepted.
    StrSet,
    /// `lo-hi` or `lo:hi`, per direction.
    Range,
    /// `:`-separated list of floats.
    FloatList,
    /// Accepted with a notice and ignored.
    Deprecated,
    /// Accepted silently and ignored.
    SoftDeprecated,
}

impl OptType {
    fn from_tsv(s: &str) -> OptType {
        match s {
            "STR" => OptType::Str,
            "STR_MULTI" => OptType::StrMulti,
            "STR_ULL" => OptType::StrUll,
            "STR_STORE" => OptType::StrStore,
            "STR_VAL" => OptType::StrVal,
            "STR_VAL_ZONE" => OptType::StrValZone,
            "STR_VAL_TIME" => OptType::StrValTime,
            "INT" => OptType::Int,
            "ULL" => OptType::Ull,
            "BOOL" => OptType::Bool,
            "STR_SET" => OptType::StrSet,
            "RANGE" => OptType::Range,
            "FLOAT_LIST" => OptType::FloatList,
            "DEPRECATED" => OptType::Deprecated,
            "SOFT_DEPRECATED" => OptType::SoftDeprecated,
            // The generator writes only the names above; a hand edit that breaks this
            // is caught by the table unit test.
            _ => OptType::StrStore,
        }
    }

    /// Whether a bare `--name` (no value) is accepted, i.e. getopt's optional_argument.
    pub fn value_optional(self) -> bool {
        matches!(self, OptType::StrSet)
    }
}

/// One option of fio's table.
#[derive(Debug, Clone)]
pub struct OptDef {
    pub name: String,
    pub alias: Option<String>,
    pub ty: OptType,
    /// `None` for a core option, else the engine that owns it.
    pub engine: Option<String>,
    pub default: Option<String>,
    pub min: Option<i64>,
    /// fio prints "max=-1" for "no maximum".
    pub max: Option<i64>,
    pub min_fp: Option<f64>,
    pub max_fp: Option<f64>,
    pub posvals: Vec<String>,
    /// Value is a time (stored by fio in microseconds).
    pub is_time: bool,
    /// A time without suffix is in seconds (else microseconds).
    pub is_seconds: bool,
    /// Accepts the read,write,trim comma list and stores one value per direction.
    pub per_dir: bool,
    pub help: String,
    /// Parsing priority (fio sorts a section's options by it before parsing them).
    pub prio: i32,
}

impl OptDef {
    pub fn matches(&self, name: &str) -> bool {
        self.name == name || self.alias.as_deref() == Some(name)
    }

    /// Maximum number of entries of a float list (fio's `maxlen`).
    pub fn max_len(&self) -> usize {
        match self.name.as_str() {
            "percentile_list" => 20,
            "merge_blktrace_scalars" | "merge_blktrace_iters" => 256,
            _ => 1,
        }
    }
}

/// Engines compiled into Debian's fio 3.33 (`fio --enghelp`).
pub const BUILTIN_ENGINES: &[&str] = &[
    "cpuio",
    "mmap",
    "sync",
    "psync",
    "vsync",
    "pvsync",
    "pvsync2",
    "null",
    "net",
    "netsplice",
    "ftruncate",
    "filecreate",
    "filestat",
    "filedelete",
    "exec",
    "posixaio",
    "falloc",
    "e4defrag",
    "splice",
    "gfapi",
    "gfapi_async",
    "mtd",
    "sg",
    "io_uring",
    "io_uring_cmd",
    "nbd",
    "libaio",
    "rdma",
    "rados",
    "rbd",
    "pmemblk",
    "dev-dax",
    "libpmem",
];

const TSV: &str = include_str!("table/options.tsv");

/// Options parsed before the others of a section (fio's `prio`, measured with
/// `--debug=parse`): `kb_base` first, so `bs=4k kb_base=1000` gives 4000.
const PRIO_HIGH: &[&str] = &["kb_base", "unit_base", "lockfile", "cpus_allowed_policy"];
/// Options parsed after the others of a section.
const PRIO_LOW: &[&str] = &["filename", "filename_format"];

pub struct Table {
    pub core: Vec<OptDef>,
    pub engine: Vec<OptDef>,
}

fn parse_num(s: &str) -> Option<i64> {
    if s.is_empty() {
        None
    } else {
        s.parse::<i64>().ok()
    }
}

fn load() -> Table {
    let mut core = Vec::new();
    let mut engine = Vec::new();
    for line in TSV.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let c: Vec<&str> = line.split('\t').collect();
        if c.len() < 10 {
            continue;
        }
        let ty = OptType::from_tsv(c[2]);
        let float = ty == OptType::FloatList;
        let flags = c[8];
        let name = c[0].to_string();
        let prio = if PRIO_HIGH.contains(&c[0]) {
            1
        } else if PRIO_LOW.contains(&c[0]) {
            -1
        } else {
            0
        };
        let def = OptDef {
            alias: if c[1].is_empty() {
                None
            } else {
                Some(c[1].to_string())
            },
            ty,
            engine: if c[3].is_empty() {
                None
            } else {
                Some(c[3].to_string())
            },
            default: if c[4].is_empty() {
                None
            } else {
                Some(c[4].to_string())
            },
            // parse.c's option_init gives every BOOL the range 0..=1 (engine options
            // do not print it in --enghelp).
            min: if ty == OptType::Bool {
                Some(0)
            } else if float {
                None
            } else {
                parse_num(c[5])
            },
            max: if ty == OptType::Bool {
                Some(1)
            } else if float {
                None
            } else {
                parse_num(c[6])
            },
            min_fp: if float { c[5].parse().ok() } else { None },
            max_fp: if float { c[6].parse().ok() } else { None },
            posvals: if c[7].is_empty() {
                Vec::new()
            } else {
                c[7].split('|').map(str::to_string).collect()
            },
            is_time: flags.contains('t'),
            is_seconds: flags.contains('s'),
            per_dir: flags.contains('d'),
            help: c[9].to_string(),
            prio,
            name,
        };
        if def.engine.is_some() {
            engine.push(def);
        } else {
            core.push(def);
        }
    }
    Table { core, engine }
}

pub fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(load)
}

/// A core option by name or alias (case-sensitive, exact).
pub fn find_core(name: &str) -> Option<&'static OptDef> {
    table().core.iter().find(|o| o.matches(name))
}

/// An option of `engine` by name or alias.
pub fn find_engine(engine: &str, name: &str) -> Option<&'static OptDef> {
    table()
        .engine
        .iter()
        .find(|o| o.engine.as_deref() == Some(engine) && o.matches(name))
}

/// Whether fio 3.33 (Debian build) can load this engine.
pub fn engine_builtin(engine: &str) -> bool {
    BUILTIN_ENGINES.contains(&engine)
}

const GETOPT_ORDER: &str = include_str!("table/getopt_order.txt");

/// All core options and aliases as getopt sees them, in the order fio's abbreviation
/// messages list them (`table/getopt_order.txt`).
pub fn core_long_names() -> impl Iterator<Item = (&'static str, &'static OptDef)> {
    static NAMES: OnceLock<Vec<(&'static str, &'static OptDef)>> = OnceLock::new();
    NAMES
        .get_or_init(|| {
            let rank: std::collections::BTreeMap<&str, usize> = GETOPT_ORDER
                .lines()
                .enumerate()
                .map(|(i, n)| (n.trim(), i))
                .collect();
            let mut v: Vec<(&'static str, &'static OptDef)> = table()
                .core
                .iter()
                .flat_map(|o| {
                    std::iter::once((o.name.as_str(), o)).chain(o.alias.as_deref().map(|a| (a, o)))
                })
                .collect();
            v.sort_by_key(|(n, _)| rank.get(n).copied().unwrap_or(usize::MAX));
            v
        })
        .iter()
        .copied()
}

/// Engine options and aliases of `engine`, in table order.
pub fn engine_long_names(engine: &str) -> Vec<(&'static str, &'static OptDef)> {
    table()
        .engine
        .iter()
        .filter(|o| o.engine.as_deref() == Some(engine))
        .flat_map(|o| {
            std::iter::once((o.name.as_str(), o)).chain(o.alias.as_deref().map(|a| (a, o)))
        })
        .collect()
}

/// fio's `show_closest_option`: the first option name (aliases are not compared), in
/// fio's table order, with the smallest Levenshtein distance, offered when the distance
/// is at most half the length of what was typed (rounded up). Job files pass the name
/// before `=`; the command line passes the whole argument without its dashes.
pub fn closest_option(typed: &str) -> Option<&'static str> {
    let mut best: Option<(&'static str, usize)> = None;
    for o in &table().core {
        let d = levenshtein(&o.name, typed);
        if best.is_none_or(|(_, bd)| d < bd) {
            best = Some((o.name.as_str(), d));
        }
    }
    match best {
        Some((n, d)) if d <= typed.len().div_ceil(2) => Some(n),
        _ => None,
    }
}

fn levenshtein(a: &str, b: &str) -> usize {
    let a = a.as_bytes();
    let b = b.as_bytes();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let sub = prev[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(sub);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_core_and_engine_options() {
        let t = table();
        assert!(t.core.len() > 200, "core options: {}", t.core.len());
        assert!(find_core("bs").is_some());
        assert_eq!(find_core("blocksize").map(|o| o.name.as_str()), Some("bs"));
        assert_eq!(
            find_core("timeout").map(|o| o.name.as_str()),
            Some("runtime")
        );
        assert_eq!(find_core("bs").map(|o| o.ty), Some(OptType::Ull));
        assert!(find_core("runtime").is_some_and(|o| o.is_time && o.is_seconds));
        assert!(find_core("thinktime").is_some_and(|o| o.is_time && !o.is_seconds));
        assert!(find_engine("nbd", "uri").is_some());
        assert!(find_engine("libaio", "cmdprio_percentage").is_some());
        assert!(find_engine("psync", "uri").is_none());
        assert!(find_core("Bs").is_none());
    }

    #[test]
    fn closest_like_fio() {
        // Measured with fio 3.33 ("Did you mean ...?").
        for (typed, want) in [
            ("foo", Some("flow")),
            ("uri", Some("rw")),
            ("thraed", Some("thread")),
            ("blocksz", Some("block")),
            ("iodepht", Some("iodepth")),
            ("nmae", Some("name")),
            ("BS", None),
            ("zz", None),
            // Command-line form: the whole argument without its dashes.
            ("foo=1", Some("loops")),
            ("q", None),
            ("nmae=x", None),
            ("iodepht=4", Some("iodepth")),
        ] {
            assert_eq!(closest_option(typed), want, "{typed}");
        }
    }

    #[test]
    fn abbreviation_order_like_fio() {
        let io: Vec<&str> = core_long_names()
            .map(|(n, _)| n)
            .filter(|n| n.starts_with("io"))
            .collect();
        // fio: '--ioengine' '--iodepth' '--iodepth_batch' '--iodepth_batch_submit' ...
        assert_eq!(
            &io[..4],
            &[
                "ioengine",
                "iodepth",
                "iodepth_batch",
                "iodepth_batch_submit"
            ]
        );
    }
}
