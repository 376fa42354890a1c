//! The fuzz targets' bodies, one function per target (`fuzz_targets/<name>.rs` runs
//! it), so that a test on stable Rust replays the seeds through the same code
//! (`tests/seeds.rs`). Each asserts what its target asserts: nothing panics, and an
//! error is one line.

use flashpath_cli::serve::nbd;
use flashpath_cli::{flashbench, iozone, run};
use flashpath_core::sim::Precondition;
use std::io::{Cursor, Read, Write};
use std::path::Path;

/// A target's body: one input.
pub type Target = fn(&[u8]);

/// Every target, by the name of its `fuzz_targets/` file and `seeds/` directory.
pub const ALL: &[(&str, Target)] = &[
    ("job_file", job_file),
    ("command_line", command_line),
    ("set_option", set_option),
    ("fio_run", fio_run),
    ("replay_file", replay_file),
    ("iozone_args", iozone_args),
    ("flashbench_args", flashbench_args),
    ("nbd_session", nbd_session),
];

/// Fuzzes the job-file reader: arbitrary bytes as a job file must give jobs or a
/// one-line error, never a panic.
pub fn job_file(data: &[u8]) {
    let env = flashpath_fio::parse::Env::fixed();
    let text = String::from_utf8_lossy(data);
    match flashpath_fio::parse::parse_job_file_text(&text, Path::new("fuzz.fio"), &env) {
        Ok(jobs) => {
            for j in &jobs {
                let _ = j.options.effective_iodepth();
            }
        }
        Err(e) => {
            let s = e.to_string();
            assert!(!s.contains('\n'), "error is not one line: {s:?}");
        }
    }
}

/// Fuzzes the command line: NUL-separated arguments (no job files are read: an
/// argument naming a file that does not exist is an ordinary error).
pub fn command_line(data: &[u8]) {
    let args = crate::arguments(data);
    let mut env = flashpath_fio::parse::Env::fixed();
    // A directory with no job files in it, so fuzzed names never read real files.
    env.cwd = std::path::PathBuf::from("/nonexistent-flashpath-fuzz");
    if let Err(e) = flashpath_fio::parse::parse_command_line(&args, &env) {
        let s = e.to_string();
        assert!(!s.contains('\n'), "error is not one line: {s:?}");
    }
}

/// Fuzzes `--set` on every shipped system: the first byte picks a shipped device
/// preset, the second a `--driver` (0: the device's default; any driver, so ones the
/// device does not take are errors to check), the third a `--host` (0: the device's
/// default), and the rest is a list of NUL-separated `--set` arguments
/// (`device.nand.t_read=50us`). The system they build (presets loaded, fields set,
/// validated, host and driver resolved) runs a short job, so a value the checks let
/// through must also simulate. Errors are one line; nothing panics or grows without
/// bound (libFuzzer's -rss_limit_mb).
pub fn set_option(data: &[u8]) {
    let [device, driver, host, rest @ ..] = data else {
        return;
    };
    crate::enter_scratch();
    let mut args = crate::system(*device, *driver, *host);
    for s in String::from_utf8_lossy(rest).split('\0').take(16) {
        args.push("--set".to_string());
        args.push(s.to_string());
    }
    let opts = match run::split_options(&args) {
        Ok((o, _)) => o,
        Err(e) => return crate::check_error(&e),
    };
    crate::run_fio(&opts, &crate::small_job());
}

/// Fuzzes whole runs on every shipped system: the first byte picks a shipped device
/// preset and the second a `--driver` (0: the device's default; any driver), and the
/// rest is NUL-separated fio arguments of one job, simulated to its end. Caps follow the
/// fuzzed arguments (fio takes the last of an option): 64 I/Os, 256 KiB of them. A run
/// with a job that is not held to at most 64 I/Os (the fuzzed arguments began another
/// job, and the caps hold only the last) is set up but not simulated: a fio job of a
/// whole device's I/Os is long, not hung. Errors are one line; nothing panics.
pub fn fio_run(data: &[u8]) {
    let [device, driver, rest @ ..] = data else {
        return;
    };
    crate::enter_scratch();
    let args = crate::system(*device, *driver, 0);
    let opts = match run::split_options(&args) {
        Ok((o, _)) => o,
        Err(e) => return crate::check_error(&e),
    };
    let mut fio = vec!["--name=fuzz".to_string()];
    fio.extend(crate::arguments(rest).into_iter().take(24));
    fio.extend(["--number_ios=64", "--io_size=256k"].map(String::from));
    crate::run_fio_if(&opts, &fio, |jobs| {
        jobs.iter().all(|j| (1..=64).contains(&j.max_ios))
    });
}

/// Fuzzes the replay files `read_iolog=` takes: fio's iolog (v2, v3) and blktrace's
/// binary format, sniffed from the bytes as `flashpath fio` does. The first byte picks
/// the job's replay options (direct, readonly, replay_redirect, replay_scale,
/// replay_align, replay_time_scale, replay_no_stall, iodepth); the rest is the trace,
/// written to a file and replayed to its end on the default system (not preconditioned). Errors are one line;
/// nothing panics.
pub fn replay_file(data: &[u8]) {
    let Some((&pick, trace)) = data.split_first() else {
        return;
    };
    crate::enter_scratch();
    let path = std::env::current_dir().unwrap().join("trace");
    std::fs::write(&path, trace).expect("write the trace");
    let mut fio = vec![
        "--name=replay".to_string(),
        format!("--read_iolog={}", path.display()),
        "--ioengine=libaio".to_string(),
    ];
    fio.push(format!("--direct={}", pick & 1));
    // Bits 1-7 of the first byte, each one option.
    let options = [
        "--readonly",
        "--replay_redirect=/dev/fuzz",
        "--replay_scale=8",
        "--replay_align=4096",
        "--replay_time_scale=1000",
        "--replay_no_stall=1",
        "--iodepth=8",
    ];
    for (n, o) in options.iter().enumerate() {
        if pick & (2 << n) != 0 {
            fio.push(o.to_string());
        }
    }
    // The device as it leaves the factory: no aged layout to build for each input.
    let opts = run::Options {
        precondition: Some(Precondition::Off),
        ..Default::default()
    };
    crate::run_fio(&opts, &fio);
}

/// Fuzzes iozone's command line (NUL-separated arguments, as `flashpath iozone` takes
/// them after its own options): iozone's grammar, then the report's header and
/// per-process lines the arguments decide. Errors are one line; nothing panics.
pub fn iozone_args(data: &[u8]) {
    let argv = crate::arguments(data);
    match iozone::args::parse(&argv) {
        Ok(a) => {
            let _ = iozone::report::header(&a, "Fri Nov 27 00:00:00 2026");
            let _ = iozone::report::each_process(&a);
        }
        Err(e) => crate::check_error(&e),
    }
}

/// Fuzzes flashbench's command line (NUL-separated arguments): glibc getopt_long's
/// grammar as flashbench 62 uses it. A refusal is flashbench's: a non-zero status and
/// a message on standard error; accepted arguments must pass or fail flashpath's
/// checks of what it models in one line. Nothing panics.
pub fn flashbench_args(data: &[u8]) {
    let argv = crate::arguments(data);
    match flashbench::args::parse(&argv) {
        Ok(a) => {
            if let Err(e) = flashbench::bench::refuse_unmodelled(&a) {
                crate::check_error(&anyhow::anyhow!("{e}"));
            }
        }
        Err(r) => {
            assert_ne!(r.status, 0, "a refusal exits 0");
            assert!(!r.stderr.is_empty(), "a refusal says nothing");
        }
    }
}

/// Fuzzes what `flashpath serve` reads from a client: the bytes are the client's whole
/// stream (client flags, options, then requests with their payloads), taken as the
/// server's reader takes it (`serve::nbd::drain_session`: the handshake, each request
/// header read and checked, a write's payload read and dropped). Nothing a client sends
/// may panic, and no allocation may follow a length the client gave beyond the
/// protocol's limits (libFuzzer's -rss_limit_mb).
pub fn nbd_session(data: &[u8]) {
    let export = nbd::Export {
        name: "emmc51-hs400-32g".into(),
        description: "fuzz".into(),
        size: 31_268_536_320,
        flags: nbd::TF_HAS_FLAGS | nbd::TF_SEND_FLUSH | nbd::TF_SEND_TRIM,
    };
    let mut c = Client {
        input: Cursor::new(data.to_vec()),
        replies: 0,
    };
    // A protocol error or the end of the stream ends the session; neither may panic.
    let _ = nbd::drain_session(&mut c, &export);
}

/// The NBD client of `nbd_session`: its bytes in, the replies counted and dropped.
struct Client {
    input: Cursor<Vec<u8>>,
    replies: u64,
}

impl Read for Client {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.input.read(buf)
    }
}

impl Write for Client {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.replies += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
