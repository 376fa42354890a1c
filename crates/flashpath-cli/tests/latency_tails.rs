//! Issue 21: on every device preset a QD1 4 KiB random read over an aged device has a
//! body and a tail, and each comes from a mechanism that `--set` turns off: read retry
//! (the tail: aged blocks, old data) and page types (the body's spread: lower, centre
//! and upper pages sensed in different times).

mod common;
use common::{flashpath, ok};
use serde_json::Value;

/// Every shipped device preset, with a host whose interface it has, and whether its
/// host data lands on cells with more than one page type.
const PRESETS: [(&str, &str, bool); 8] = [
    ("emmc51-hs400-32g", "sprd-sc9863a", true),
    ("emmc51-hs400-8g", "sprd-sc9863a", false),
    ("emmc51-hs400-32g-mlc", "sprd-sc9863a", false),
    ("emmc441-2011-au-8g", "sprd-sc9863a", true),
    ("ufs21-64g", "sd835-phone", true),
    ("sd-samsung-pro-plus-128g", "x86-laptop-rtsx", true),
    ("sd-flashbench-readme-4g", "x86-laptop-rtsx", true),
    ("microsd-lexar-633x-32g", "x86-laptop-rtsx", true),
];

const AGED: [&str; 4] = [
    "--set",
    "device.wear.pe_cycles=3000",
    "--set",
    "device.wear.data_age=365d",
];

struct Run {
    p: [f64; 5],
    retry_reads: u64,
    retry_steps: u64,
    /// Array reads per page type (lower, centre, upper), if the cell has several.
    by_type: Option<[u64; 3]>,
    page_reads: u64,
    json: Value,
}

/// p1, p10, p50, p90, p99.9 of the completion latency, in µs, and the retry counters.
fn run(device: &str, host: &str, sets: &[&str]) -> Run {
    let mut a = vec!["fio", "--device", device, "--host", host];
    a.extend_from_slice(sets);
    a.extend_from_slice(&[
        "--name=t",
        "--rw=randread",
        "--bs=4k",
        "--size=8m",
        "--io_size=8m",
        "--direct=1",
        "--ioengine=psync",
        "--output-format=json",
    ]);
    let j: Value = serde_json::from_str(&ok(&flashpath(&a))).unwrap();
    let pct = &j["jobs"][0]["read"]["clat_ns"]["percentile"];
    let at = |k: &str| pct[k].as_f64().unwrap() / 1e3;
    let dev = &j["flashpath"]["device"];
    Run {
        p: [
            at("1.000000"),
            at("10.000000"),
            at("50.000000"),
            at("90.000000"),
            at("99.900000"),
        ],
        retry_reads: dev["read_retry_reads"].as_u64().unwrap(),
        retry_steps: dev["read_retry_steps"].as_u64().unwrap(),
        by_type: dev.get("nand_page_reads_lower").map(|_| {
            ["lower", "centre", "upper"]
                .map(|t| dev[format!("nand_page_reads_{t}")].as_u64().unwrap())
        }),
        page_reads: dev["nand_page_reads"].as_u64().unwrap(),
        json: pct.clone(),
    }
}

#[test]
fn each_tail_goes_away_with_its_mechanism() {
    for (device, host, multi) in PRESETS {
        let aged = run(device, host, &AGED);
        let mut no_retry = AGED.to_vec();
        no_retry.extend(["--set", "device.read_retry.enabled=false"]);
        let plain = run(device, host, &no_retry);
        let mut flat = no_retry.clone();
        flat.extend(["--set", "device.page_types.enabled=false"]);
        let flat = run(device, host, &flat);
        let fresh = run(device, host, &[]);

        // Read retry: the aged device retries, and its p99.9 is at least one more array
        // read and transfer above the body; without retry the counters are zero and the
        // tail is gone.
        assert!(
            aged.retry_reads > 0,
            "{device}: no retries on an aged device"
        );
        assert!(aged.retry_steps >= aged.retry_reads);
        assert_eq!((plain.retry_reads, plain.retry_steps), (0, 0), "{device}");
        assert!(
            aged.p[4] > plain.p[4] + 40.0,
            "{device}: retry tail {:?} vs {:?}",
            aged.p,
            plain.p
        );
        assert!(aged.p[2] >= plain.p[2], "{device}");
        // A fresh device (the default wear) needs no retries: it runs as with retry off.
        assert_eq!(fresh.retry_reads, 0, "{device}");
        assert_eq!(fresh.json, plain.json, "{device}: fresh vs retry off");

        // Page types: on MLC/TLC the body spreads over the page types' tR; with one
        // type (pSLC areas, or page types off) it does not.
        let spread = |r: &Run| r.p[3] - r.p[1];
        if multi {
            // The device counts the host reads of each page type: nearly every one of the
            // 2048 reads is an array read (a few find their page in a register), and
            // nand_page_reads also counts an AU device's copy reads, preconditioning
            // included.
            let t = plain
                .by_type
                .unwrap_or_else(|| panic!("{device}: no page-type reads"));
            let sum = t.iter().sum::<u64>();
            assert!(sum >= 1900 && sum <= plain.page_reads, "{device}: {t:?}");
            assert!(t[0] > 0 && t[2] > 0, "{device}: {t:?}");
            assert_eq!(flat.by_type, None, "{device}: page types off");
            assert!(
                spread(&plain) > spread(&flat) + 5.0,
                "{device}: page-type body {:?} vs {:?}",
                plain.p,
                flat.p
            );
        } else {
            assert_eq!(plain.json, flat.json, "{device}: one page type");
            assert_eq!(plain.by_type, None, "{device}");
        }
    }
}

/// Same inputs, same bytes: the pages that need retries are drawn from the run's seed.
#[test]
fn an_aged_run_is_reproducible_and_follows_the_seed() {
    let a = run("ufs21-64g", "sd835-phone", &AGED);
    let b = run("ufs21-64g", "sd835-phone", &AGED);
    assert_eq!(a.json, b.json);
    assert_eq!(a.retry_steps, b.retry_steps);
    let mut other = AGED.to_vec();
    other.push("--randseed=7");
    let c = run("ufs21-64g", "sd835-phone", &other);
    assert_ne!(
        (a.retry_reads, a.retry_steps),
        (c.retry_reads, c.retry_steps)
    );
}
