//! The `fio_run` fuzz target: `flashpath_fuzz::targets::fio_run` says what it takes and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| flashpath_fuzz::targets::fio_run(data));
