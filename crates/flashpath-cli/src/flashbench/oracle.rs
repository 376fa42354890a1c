//! flashbench's own code as the oracle: `tests/flashbench-oracle/gen.sh` builds flashbench
//! 62's flashbench.c and vm.c with a stand-in dev.c (`fake_dev.c`: no device; access i
//! takes a time computed from i, its direction, position and length) and records, for
//! each line of `cases.txt`, what flashbench printed, its exit status and its accesses.
//! These tests run the same arguments through the port with the same stand-in times and
//! compare byte for byte; `formats.txt` and `lfsr.txt` hold flashbench's own formatting
//! of ~1800 values and its two LFSRs' sequences.

use super::args;
use super::bench::{self, format_ns, Access, Target};
use super::cfmt::{self, x86_nan64};
use super::lfsr::{flashbench_lfsr, vm_lfsr};
use super::vm;
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/flashbench-oracle")
}

/// fake_dev.c's `mix` (splitmix64's finaliser).
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// fake_dev.c's `fake_ns`.
fn fake_ns(i: u64, a: &Access) -> u64 {
    let fill: i64 = if a.write { a.fill as i64 } else { -1 };
    let h = mix(i ^ mix(a.offset ^ mix(a.len ^ (fill + 1) as u64)));
    let r = h / 20;
    match h % 20 {
        0 => 1 + r % 999,
        13..=18 => 1_000_000 + r % 999_000_000,
        19 => 1_000_000_000 + r % 9_000_000_000,
        _ => 1000 + r % 999_000,
    }
}

/// fake_dev.c's log line of an access.
fn log_line(a: &Access) -> String {
    format!(
        "{} {} {} {}\n",
        if a.write { 'W' } else { 'R' },
        a.offset,
        a.len,
        a.fill
    )
}

fn fnv(text: &[u8], mut h: u64) -> u64 {
    for &c in text {
        h = (h ^ c as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

struct Fake {
    size: u64,
    plan: Vec<Access>,
}

impl Target for Fake {
    fn size(&self) -> u64 {
        self.size
    }
    fn time(&mut self, plan: &[Access]) -> Result<Vec<u64>, String> {
        self.plan = plan.to_vec();
        Ok(plan
            .iter()
            .enumerate()
            .map(|(i, a)| fake_ns(i as u64, a))
            .collect())
    }
}

/// One recorded case.
struct Case {
    name: String,
    args: Vec<String>,
    size: u64,
    status: u8,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    file: Option<Vec<u8>>,
    accesses: usize,
    digest: u64,
    head: Vec<String>,
}

fn parse_case(name: &str, b: &[u8]) -> Case {
    let mut at = 0;
    let line = |at: &mut usize| -> String {
        let end = b[*at..].iter().position(|&c| c == b'\n').unwrap() + *at;
        let l = String::from_utf8(b[*at..end].to_vec()).unwrap();
        *at = end + 1;
        l
    };
    let field = |l: String, key: &str| -> String {
        l.strip_prefix(key)
            .unwrap_or_else(|| panic!("{name}: expected '{key}' in {l:?}"))
            .to_string()
    };
    let args: Vec<String> = field(line(&mut at), "args: ")
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let size = field(line(&mut at), "size: ").parse().unwrap();
    let status = field(line(&mut at), "status: ").parse().unwrap();
    let block = |at: &mut usize, key: &str| -> Option<Vec<u8>> {
        let save = *at;
        let l = line(at);
        let Some(n) = l.strip_prefix(key) else {
            *at = save;
            return None;
        };
        let n: usize = n.parse().unwrap();
        let v = b[*at..*at + n].to_vec();
        *at += n + 1;
        Some(v)
    };
    let stdout = block(&mut at, "stdout ").expect("stdout");
    let stderr = block(&mut at, "stderr ").expect("stderr");
    let file = block(&mut at, "file ");
    let acc = line(&mut at);
    let f: Vec<&str> = acc.split(' ').collect();
    assert_eq!((f[0], f[2]), ("accesses", "fnv"), "{name}: {acc:?}");
    let head = String::from_utf8(b[at..].to_vec())
        .unwrap()
        .lines()
        .map(|l| format!("{l}\n"))
        .collect();
    Case {
        name: name.to_string(),
        args,
        size,
        status,
        stdout,
        stderr,
        file,
        accesses: f[1].parse().unwrap(),
        digest: u64::from_str_radix(f[3], 16).unwrap(),
        head,
    }
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn check(c: &Case) {
    let n = &c.name;
    let a = match args::parse(&c.args) {
        Ok(a) => a,
        Err(r) => {
            assert_eq!(r.stdout.as_bytes(), &c.stdout[..], "{n}: stdout");
            assert_eq!(show(&r.stderr), show(&c.stderr), "{n}: stderr");
            assert_eq!(r.status, c.status, "{n}: status");
            assert_eq!(c.accesses, 0, "{n}");
            return;
        }
    };
    let mut t = Fake {
        size: c.size,
        plan: Vec::new(),
    };
    let o = bench::run(&a, &mut t).unwrap_or_else(|e| panic!("{n}: {e}"));
    let lines: Vec<String> = t.plan.iter().map(log_line).collect();
    for (k, (got, want)) in lines.iter().zip(&c.head).enumerate() {
        assert_eq!(got, want, "{n}: access {k}");
    }
    assert_eq!(t.plan.len(), c.accesses, "{n}: number of accesses");
    let digest = lines
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |h, l| fnv(l.as_bytes(), h));
    assert_eq!(digest, c.digest, "{n}: the accesses' digest");
    assert_eq!(show(&o.stdout), show(&c.stdout), "{n}: stdout");
    assert_eq!(o.stdout, c.stdout, "{n}: stdout bytes");
    assert_eq!(show(&o.stderr), show(&c.stderr), "{n}: stderr");
    assert_eq!(o.status, c.status, "{n}: status");
    match &c.file {
        Some(f) => assert_eq!(show(&o.file), show(f), "{n}: the -o file"),
        None => assert!(o.file.is_empty(), "{n}: no -o file"),
    }
}

#[test]
fn every_case_matches_flashbench() {
    let list = std::fs::read_to_string(dir().join("cases.txt")).unwrap();
    let names: Vec<&str> = list
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split('|').next().unwrap().trim())
        .collect();
    assert!(names.len() > 50);
    for name in names {
        let b = std::fs::read(dir().join(format!("cases/{name}.txt")))
            .unwrap_or_else(|e| panic!("{name}: {e} (run gen.sh)"));
        check(&parse_case(name, &b));
    }
}

fn text8(r: vm::Res) -> String {
    match r {
        vm::Res::S(s) => show(&s[..s.iter().position(|&c| c == 0).unwrap_or(8)]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn formats_match_flashbench() {
    let t = std::fs::read(dir().join("formats.txt")).unwrap();
    let t = show(&t);
    let mut rows = 0;
    for row in t.lines() {
        let f: Vec<&str> = row.split('\t').collect();
        let v: i64 = f[0].parse().unwrap();
        assert_eq!(show(&format_ns(v)), f[1], "format_ns({v})");
        assert_eq!(text8(vm::format_ns_field(v)), f[2], "R_NS {v}");
        assert_eq!(text8(vm::format_bytes(v)), f[3], "R_BYTE {v}");
        assert_eq!(text8(vm::format_bps(v)), f[4], "R_BPS {v}");
        assert_eq!(cfmt::f(v as f64 / 1_000_000.0), f[5], "%f of {v}/1e6");
        let rate = x86_nan64(512.0 / (v as f64 / 1000.0));
        assert_eq!(cfmt::g(rate, 6), f[6], "%g of 512/({v}/1000.0)");
        rows += 1;
    }
    assert!(rows > 1500);
}

#[test]
fn lfsrs_match_flashbench() {
    let t = std::fs::read_to_string(dir().join("lfsr.txt")).unwrap();
    let mut lines = t.lines();
    for bits in 8..=16u32 {
        for (name, f) in [
            ("lfsr", flashbench_lfsr as fn(u16, u32) -> Option<u32>),
            ("vm_lfsr", vm_lfsr),
        ] {
            let l = lines.next().unwrap();
            let mut v = 0u32;
            let mut got = format!("{name} {bits}");
            for _ in 0..64 {
                v = f(v as u16, bits).unwrap();
                got += &format!(" {v}");
            }
            assert_eq!(got, l);
        }
        let (mut a, mut b, mut d1, mut d2) = (0u32, 0u32, 0u64, 0u64);
        for _ in 0..(1u32 << bits) + 5 {
            a = flashbench_lfsr(a as u16, bits).unwrap();
            b = vm_lfsr(b as u16, bits).unwrap();
            d1 = d1.wrapping_mul(31).wrapping_add(a as u64);
            d2 = d2.wrapping_mul(31).wrapping_add(b as u64);
        }
        assert_eq!(lines.next().unwrap(), format!("digest {bits} {d1} {d2}"));
    }
}
