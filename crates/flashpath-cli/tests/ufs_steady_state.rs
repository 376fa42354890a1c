//! UFS steady state (issue 21, part 4): jobs/ufs/steady-randwrite.fio, a full random
//! precondition and then one device capacity of 4 KiB random writes at QD32, on the
//! ufs21-64g preset scaled down (fewer and smaller blocks, the same dies, timings,
//! buffer, thresholds and over-provisioning share) so that it runs in seconds.
//!
//! With GC paced by host writes (device/gc_policy.rs) every 500 ms window has
//! completions, and no write waits longer than the bound the policy sets from
//! bBackgroundOpsTermLat (40 ms on a Samsung UFS 2.1 part, docs/mechanisms.md "GC
//! pacing"). With the old policy (GC unpaced, host rows never held: the preset without
//! `gc_urgent_blocks`/`gc_slice`) the same run had 6 empty windows and a 984 ms write.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const NS_PER_MS: u64 = 1_000_000;

/// The preset's geometry scaled: 2 dies × 2 planes × 140 blocks of 192 pages of 16 KiB
/// (1.64 GiB raw), user capacity 90.7 % of it (the preset's 63,887,638,528 B of 65.6 GiB
/// raw), a multiple of 4 KiB.
const PAGES_PER_BLOCK: u64 = 192;
const BLOCKS_PER_PLANE: u64 = 140;

fn capacity() -> u64 {
    let raw = (2 * 2 * BLOCKS_PER_PLANE * PAGES_PER_BLOCK * 16384) as u128;
    let preset_raw = 2 * 2 * 1400 * 768 * 16384_u128;
    (raw * 63_887_638_528 / preset_raw / 4096 * 4096) as u64
}

fn run(dir: &Path) -> (Value, String) {
    let job = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../jobs/ufs/steady-randwrite.fio");
    let cap = format!("device.geometry.capacity={}B", capacity());
    let ppb = format!("device.geometry.pages_per_block={PAGES_PER_BLOCK}");
    let bpp = format!("device.geometry.blocks_per_plane={BLOCKS_PER_PLANE}");
    let o = Command::new(env!("CARGO_BIN_EXE_flashpath"))
        .current_dir(dir)
        .args(["fio", "--device", "ufs21-64g", "--host", "sd835-phone"])
        .args(["--driver", "ufs", "--output-format=json"])
        .args(["--set", &cap, "--set", &ppb, "--set", &bpp])
        .arg(&job)
        .output()
        .expect("run flashpath");
    let out = ok(&o);
    let bw = std::fs::read_to_string(dir.join("steady_bw.1.log")).expect("bw log");
    (serde_json::from_str(&out).expect("JSON"), out + &bw)
}

#[test]
fn paced_gc_leaves_no_window_without_completions_and_bounds_each_write() {
    let dir = scratch("ufs-steady");
    let (j, bytes) = run(&dir);
    let w = &j["jobs"][0]["write"];

    // fio's helper thread writes a line per 500 ms window in which writes completed;
    // an idle window has none. Every window but the job's last partial one is there.
    let bw = std::fs::read_to_string(dir.join("steady_bw.1.log")).unwrap();
    let times: Vec<u64> = bw
        .lines()
        .map(|l| l.split(", ").next().unwrap().parse().unwrap())
        .collect();
    assert!(times.len() > 100, "{} windows", times.len());
    let runtime_ms = w["runtime"].as_u64().unwrap();
    for (i, &t) in times[..times.len() - 1].iter().enumerate() {
        assert_eq!(
            t,
            500 * (i as u64 + 1),
            "window {} has no completion",
            i + 1
        );
    }
    assert!(*times.last().unwrap() >= runtime_ms.saturating_sub(500));

    // The policy holds a host row for GC at most one slice, bBackgroundOpsTermLat =
    // 40 ms (not at the critical floor, which this run never reaches). A write that
    // finds 31 queued ahead of it and the buffer full waits for 32 slots = 4 rows of
    // 8, 2 per die; each row waits at most one slice, the GC step under way when the
    // slice ends and its own program. A GC step is one victim row: tR, its data out
    // and in over the channel, up to two GC row programs and a map-segment load per
    // slot moved. Preset timings: tR 60 us, tPROG 167 us, 1000 MB/s channel.
    let fl = &j["flashpath"]["device"];
    assert_eq!(fl["gc_urgent_steps"].as_u64(), Some(0), "{fl}");
    assert!(
        fl["gc_host_holds"].as_u64().unwrap() > 1000,
        "pacing ran: {fl}"
    );
    let slice_ns = 40 * NS_PER_MS;
    // A row (2 planes × 16 KiB) crosses the channel in 32,768 ns; a 4 KiB map segment
    // in 4,096 ns.
    let row_xfer_ns = 32_768;
    let row_prog_ns = row_xfer_ns + 167_000;
    let map_load_ns = 60_000 + 4_096;
    let step_ns = 60_000 + row_xfer_ns + 2 * row_prog_ns + 8 * map_load_ns;
    let unloaded_ns = w["clat_ns"]["min"].as_u64().unwrap();
    let bound_ns = 2 * (slice_ns + step_ns + row_prog_ns) + unloaded_ns;
    let max_ns = w["clat_ns"]["max"].as_u64().unwrap();
    assert!(
        max_ns <= bound_ns,
        "max write latency {max_ns} ns over the bound {bound_ns} ns"
    );

    // Same inputs, same bytes.
    let dir2 = scratch("ufs-steady-again");
    let (_, bytes2) = run(&dir2);
    assert!(bytes == bytes2, "a second run differs");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&dir2);
}

/// The page-mapped eMMC presets pace GC too (`gc_slice` = the HPI out-of-interrupt time,
/// 100 ms): the same job on emmc51-hs400-32g scaled down (10× fewer blocks of a quarter
/// the pages, the same spare share) holds host rows for GC, and its longest write is
/// well under the longest of the same device without the pacing fields (the preset's
/// text with `gc_urgent_blocks` and `gc_slice` removed).
#[test]
fn emmc_presets_pace_gc_and_shorten_the_longest_write() {
    let preset = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");
    let unpaced: String = preset
        .lines()
        .filter(|l| {
            // The fields, and their declarations as estimates.
            ![
                "gc_urgent_blocks",
                "gc_slice",
                "\"ftl.gc_urgent_blocks\"",
                "\"ftl.gc_slice\"",
            ]
            .iter()
            .any(|f| l.starts_with(f))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(unpaced.len(), preset.len(), "the preset paces GC");
    let dir = scratch("emmc-steady");
    std::fs::write(dir.join("unpaced.toml"), unpaced).unwrap();
    // 4 dies × 2 planes × 104 blocks × 64 pages × 16 KiB, user capacity in the preset's
    // ratio (31,268,536,320 B of 4 × 2 × 1048 × 256 × 16 KiB), a multiple of 4 KiB.
    let raw = 4 * 2 * 104 * 64 * 16384_u128;
    let full = 4 * 2 * 1048 * 256 * 16384_u128;
    let cap = format!(
        "device.geometry.capacity={}B",
        raw * 31_268_536_320 / full / 4096 * 4096
    );
    let job = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../jobs/ufs/steady-randwrite.fio");
    let run = |device: &str| -> Value {
        let o = Command::new(env!("CARGO_BIN_EXE_flashpath"))
            .current_dir(&dir)
            .args(["fio", "--device", device, "--output-format=json"])
            .args(["--set", &cap])
            .args(["--set", "device.geometry.pages_per_block=64"])
            .args(["--set", "device.geometry.blocks_per_plane=104"])
            .args(["--filename=/dev/mmcblk0"])
            .arg(&job)
            .output()
            .expect("run flashpath");
        serde_json::from_str(&ok(&o)).expect("JSON")
    };
    let paced = run("emmc51-hs400-32g");
    let unpaced = run("./unpaced.toml");
    let max = |j: &Value| j["jobs"][0]["write"]["clat_ns"]["max"].as_u64().unwrap();
    let holds = |j: &Value| j["flashpath"]["device"]["gc_host_holds"].as_u64();
    assert!(holds(&paced).unwrap() > 1000, "{}", paced["flashpath"]);
    assert_eq!(holds(&unpaced), Some(0));
    assert!(
        2 * max(&paced) < max(&unpaced),
        "longest write paced {} ns, unpaced {} ns",
        max(&paced),
        max(&unpaced)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
