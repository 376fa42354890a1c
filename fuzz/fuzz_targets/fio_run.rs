//! Fuzzes whole runs on every shipped system: the first byte picks a shipped device
//! preset and the second a `--driver` (0: the device's default; any driver), and the
//! rest is NUL-separated fio arguments of one job, simulated to its end. Caps follow the
//! fuzzed arguments (fio takes the last of an option): 64 I/Os, 256 KiB of them. A run
//! with a job that is not held to at most 64 I/Os (the fuzzed arguments began another
//! job, and the caps hold only the last) is set up but not simulated: a fio job of a
//! whole device's I/Os is long, not hung. Errors are one line; nothing panics.
#![no_main]

use flashpath_cli::run;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [device, driver, rest @ ..] = data else {
        return;
    };
    flashpath_fuzz::enter_scratch();
    let args = flashpath_fuzz::system(*device, *driver, 0);
    let opts = match run::split_options(&args) {
        Ok((o, _)) => o,
        Err(e) => return flashpath_fuzz::check_error(&e),
    };
    let mut fio = vec!["--name=fuzz".to_string()];
    fio.extend(flashpath_fuzz::arguments(rest).into_iter().take(24));
    fio.extend(["--number_ios=64", "--io_size=256k"].map(String::from));
    flashpath_fuzz::run_fio_if(&opts, &fio, |jobs| {
        jobs.iter().all(|j| (1..=64).contains(&j.max_ios))
    });
});
