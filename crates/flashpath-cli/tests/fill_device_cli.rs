//! fio's fill_device against real fio 3.33 (docs/fill-device.md).
//!
//! fio's surface-scan example, whole (no size): its write phase grows datafile.tmp
//! until ext4 answers ENOSPC, its stonewalled verify phase (create_serialize=0) reads
//! the file as the write phase left it and verifies it. Real fio on a 64 MiB ext4
//! (4 KiB blocks, loop-mounted; the part that needs root and mount is skipped
//! without them) and flashpath on a 64 MiB device with a 4 MiB journal agree on what
//! is counted: the failed write is one more issued write (total_ios) with no bytes and
//! no latency sample, logged as fio logs it, the job's error stays 0, and the verify
//! phase reads every byte written. flashpath's free space is the device less the
//! journal (files.rs), so it writes more than real ext4, which also keeps its inode
//! tables, bitmaps and reserved clusters.
mod common;

use common::{flashpath, have, scratch};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const SURFACE_SCAN: &str = "/usr/share/doc/fio/examples/surface-scan.fio";
const BS: u64 = 64 << 10;
const MIB: u64 = 1 << 20;

/// The counts the report gives: (write io_bytes, write total_ios, write clat samples,
/// write-phase error, verify-phase read io_bytes, verify-phase error).
fn counts(json: &Value) -> (u64, u64, u64, u64, u64, u64) {
    let jobs = json["jobs"].as_array().expect("jobs");
    let (w, v) = (&jobs[0], &jobs[1]);
    let n = |x: &Value| x.as_u64().unwrap_or_else(|| panic!("not a count: {x}"));
    (
        n(&w["write"]["io_bytes"]),
        n(&w["write"]["total_ios"]),
        n(&w["write"]["clat_ns"]["N"]),
        n(&w["error"]),
        n(&v["read"]["io_bytes"]),
        n(&v["error"]),
    )
}

/// fio's message for the failed write (io_u.c io_u_log_error).
fn enospc_line(offset: u64) -> String {
    format!(
        "fio: io_u error on file datafile.tmp: No space left on device: write offset={offset}, buflen=65536"
    )
}

/// The relations real fio shows (module doc), for `written` bytes.
fn check_fio_counts(who: &str, c: (u64, u64, u64, u64, u64, u64), stderr: &str) {
    let (written, total, clat_n, err, read, verr) = c;
    assert!(written > 0 && written.is_multiple_of(BS), "{who}: {c:?}");
    assert_eq!(total, written / BS + 1, "{who}: the failed write is issued");
    assert_eq!(clat_n, written / BS, "{who}: it has no latency sample");
    assert_eq!(
        (err, verr),
        (0, 0),
        "{who}: ENOSPC ends the job without error"
    );
    assert_eq!(
        read, written,
        "{who}: the verify phase reads the file whole"
    );
    assert!(
        stderr.lines().any(|l| l == enospc_line(written)),
        "{who}: {stderr}"
    );
}

/// A loop-mounted ext4 that is unmounted when dropped.
struct Mounted {
    dir: PathBuf,
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

fn mount_ext4(at: &Path) -> Option<Mounted> {
    let img = at.join("fs.img");
    let dir = at.join("mnt");
    std::fs::create_dir_all(&dir).ok()?;
    let run = |cmd: &mut Command| cmd.output().ok().filter(|o| o.status.success());
    run(Command::new("truncate").args(["-s", "64M"]).arg(&img))?;
    run(Command::new("mkfs.ext4")
        .args(["-q", "-F", "-b", "4096"])
        .arg(&img))?;
    run(Command::new("mount")
        .args(["-o", "loop"])
        .arg(&img)
        .arg(&dir))?;
    Some(Mounted { dir })
}

#[test]
fn surface_scan_fills_the_filesystem_as_fio_does() {
    if !Path::new(SURFACE_SCAN).exists() {
        eprintln!("fio-examples not installed: skipped");
        return;
    }
    let dir = scratch("fill-device");
    // flashpath: 64 MiB, the journal at 4..8 MiB: the file lies in two pieces, 4 MiB
    // before the journal and 56 MiB after it.
    let o = Command::new(env!("CARGO_BIN_EXE_flashpath"))
        .args([
            "fio",
            "--host=jetson-tx1",
            "--set=device.geometry.capacity=64MiB",
            "--set=host.fs.journal_offset=4MiB",
            "--set=host.fs.journal_size=4MiB",
            "--output-format=json",
            SURFACE_SCAN,
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let sim: Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = counts(&sim);
    check_fio_counts("flashpath", c, &stderr);
    assert_eq!(c.0, 60 * MIB, "the device less the journal");

    if !have("fio") {
        eprintln!("fio not installed: the real run is skipped");
        return;
    }
    let Some(fs) = mount_ext4(&dir) else {
        eprintln!("cannot make and mount an ext4 (not root?): the real run is skipped");
        return;
    };
    let o = Command::new("fio")
        .args(["--output-format=json", SURFACE_SCAN])
        .current_dir(&fs.dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let real: Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = counts(&real);
    check_fio_counts("fio", r, &stderr);
    let file = std::fs::metadata(fs.dir.join("datafile.tmp"))
        .unwrap()
        .len();
    assert_eq!(file, r.0, "fio's file is what it wrote");
    // Real ext4 keeps more back (inode tables, bitmaps, reserved clusters).
    assert!(r.0 < c.0 && r.0 > 40 * MIB, "fio {} flashpath {}", r.0, c.0);
}

#[test]
fn a_verify_phase_sized_before_the_fill_fails_as_fios() {
    // Without create_serialize=0 fio sizes the verify phase's file before any job
    // runs, when it does not exist: "verify-phase: you need to specify size=".
    let dir = scratch("fill-serialize");
    let text = std::fs::read_to_string(SURFACE_SCAN).unwrap_or_default();
    if text.is_empty() {
        return;
    }
    let job = dir.join("ss.fio");
    std::fs::write(&job, text.replace("create_serialize=0", "")).unwrap();
    let o = flashpath(&[
        "fio",
        "--set=device.geometry.capacity=64MiB",
        job.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    assert!(
        e.contains("verify-phase")
            && e.contains("you need to specify size=")
            && e.contains("create_serialize"),
        "{e}"
    );
}

#[test]
fn on_the_device_fill_device_writes_whole_blocks_to_its_end() {
    // Real fio 3.33 on a 16 MiB loop device, bs=96k: 170 writes, 16711680 bytes, no
    // error (fill_io_u refuses the write past the end; nothing fails).
    let o = flashpath(&[
        "fio",
        "--set=device.geometry.capacity=16MiB",
        "--name=w",
        "--filename=/dev/mmcblk0",
        "--rw=write",
        "--bs=96k",
        "--direct=1",
        "--ioengine=psync",
        "--fill_device=1",
        "--output-format=json",
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(!stderr.contains("No space left"), "{stderr}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let w = &v["jobs"][0]["write"];
    assert_eq!(w["io_bytes"].as_u64(), Some(16711680));
    assert_eq!(w["total_ios"].as_u64(), Some(170));
}
