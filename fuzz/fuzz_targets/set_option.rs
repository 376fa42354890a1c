//! Fuzzes `--set` on every shipped system: the first byte picks a shipped device
//! preset, the second a `--driver` (0: the device's default; any driver, so ones the
//! device does not take are errors to check), the third a `--host` (0: the device's
//! default), and the rest is a list of NUL-separated `--set` arguments
//! (`device.nand.t_read=50us`). The system they build (presets loaded, fields set,
//! validated, host and driver resolved) runs a short job, so a value the checks let
//! through must also simulate. Errors are one line; nothing panics or grows without
//! bound (libFuzzer's -rss_limit_mb).
#![no_main]

use flashpath_cli::run;
use flashpath_core::host::DRIVER_NAMES;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [device, driver, host, rest @ ..] = data else {
        return;
    };
    flashpath_fuzz::enter_scratch();
    let devices = flashpath_fuzz::devices();
    let hosts = flashpath_fuzz::hosts();
    let mut args = vec![
        "--device".to_string(),
        devices[*device as usize % devices.len()].clone(),
        "--precondition".to_string(),
        "off".to_string(),
    ];
    if *driver != 0 {
        args.push("--driver".to_string());
        args.push(DRIVER_NAMES[(*driver as usize - 1) % DRIVER_NAMES.len()].to_string());
    }
    if *host != 0 {
        args.push("--host".to_string());
        args.push(hosts[(*host as usize - 1) % hosts.len()].clone());
    }
    for s in String::from_utf8_lossy(rest).split('\0').take(16) {
        args.push("--set".to_string());
        args.push(s.to_string());
    }
    let opts = match run::split_options(&args) {
        Ok((o, _)) => o,
        Err(e) => return flashpath_fuzz::check_error(&e),
    };
    flashpath_fuzz::run_fio(&opts, &flashpath_fuzz::small_job());
});
