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
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [device, driver, host, rest @ ..] = data else {
        return;
    };
    flashpath_fuzz::enter_scratch();
    let mut args = flashpath_fuzz::system(*device, *driver, *host);
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
