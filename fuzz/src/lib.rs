//! What the fuzz targets share: the command's error check, a scratch directory, and a
//! small job to run on whatever system a target builds; the targets themselves are in
//! `targets`.

pub mod targets;

use flashpath_cli::run;
use std::sync::{Once, OnceLock};

/// The error as `flashpath` prints it (its chain of causes, outermost first, through
/// `one_line`): it must say something, on one line.
pub fn check_error(e: &anyhow::Error) {
    let chain: Vec<String> = e.chain().map(|c| c.to_string()).collect();
    let line = flashpath_cli::one_line(&chain.join(": "));
    assert!(!line.trim().is_empty(), "an empty error");
    assert!(!line.contains('\n'), "error is not one line: {line:?}");
}

static SCRATCH: Once = Once::new();

/// Moves the process into a directory of its own, so a file a fuzzed option names
/// (merge_blktrace_file=, a relative read_iolog=) lands or is looked for there.
pub fn enter_scratch() {
    SCRATCH.call_once(|| {
        let d = std::env::temp_dir().join(format!("flashpath-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("scratch directory");
        std::env::set_current_dir(&d).expect("enter the scratch directory");
    });
}

/// NUL-separated arguments, as the command-line targets take them.
pub fn arguments(data: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(data)
        .split('\0')
        .map(str::to_string)
        .collect()
}

/// A fio environment whose working directory has no job files in it.
pub fn env() -> flashpath_fio::parse::Env {
    let mut env = flashpath_fio::parse::Env::fixed();
    env.cwd = std::env::current_dir().unwrap_or_else(|_| "/nonexistent".into());
    env
}

/// The device presets the repository ships, by name (from the command's own list, so
/// a new preset is fuzzed as soon as it ships).
fn devices() -> &'static [String] {
    static D: OnceLock<Vec<String>> = OnceLock::new();
    D.get_or_init(|| flashpath_cli::shipped_names("device"))
}

/// The host presets the repository ships, by name.
fn hosts() -> &'static [String] {
    static H: OnceLock<Vec<String>> = OnceLock::new();
    H.get_or_init(|| flashpath_cli::shipped_names("host"))
}

/// flashpath's options for the system three bytes pick: a shipped device preset, a
/// `--driver` (0: the device's default; any driver, so ones the device does not take
/// give errors to check) and a shipped `--host` (0: the device's default). No
/// preconditioning.
pub fn system(device: u8, driver: u8, host: u8) -> Vec<String> {
    use flashpath_core::host::DRIVER_NAMES;
    let (devices, hosts) = (devices(), hosts());
    let mut args = vec![
        "--device".to_string(),
        devices[device as usize % devices.len()].clone(),
        "--precondition".to_string(),
        "off".to_string(),
    ];
    if driver != 0 {
        args.push("--driver".to_string());
        args.push(DRIVER_NAMES[(driver as usize - 1) % DRIVER_NAMES.len()].to_string());
    }
    if host != 0 {
        args.push("--host".to_string());
        args.push(hosts[(host as usize - 1) % hosts.len()].clone());
    }
    args
}

/// Runs fio arguments `fio` with flashpath's `opts` as `flashpath fio` would, up to
/// the end of the simulation (no report is written): every error must be one line,
/// and nothing may panic.
pub fn run_fio(opts: &run::Options, fio: &[String]) {
    run_fio_if(opts, fio, |_| true);
}

/// As `run_fio`, but simulates only when `short` accepts the set-up jobs (a run of
/// millions of I/Os is not a hang to report).
pub fn run_fio_if(
    opts: &run::Options,
    fio: &[String],
    short: impl Fn(&[flashpath_core::workload::JobConfig]) -> bool,
) {
    let inv = match run::parse_fio(fio, &env()) {
        Ok(i) => i,
        Err(e) => return check_error(&e),
    };
    let set = match run::set_up(opts, &inv) {
        Ok(s) => s,
        Err(e) => return check_error(&e),
    };
    if !short(&set.cfg.jobs) {
        return;
    }
    if let Err(e) = run::simulate(set.cfg, false) {
        check_error(&e);
    }
}

/// A short random read/write job: 16 I/Os of 4 KiB at depth 4 in the device's first MiB.
pub fn small_job() -> Vec<String> {
    [
        "--name=fuzz",
        "--rw=randrw",
        "--bs=4k",
        "--size=1m",
        "--number_ios=16",
        "--ioengine=libaio",
        "--iodepth=4",
        "--direct=1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}
