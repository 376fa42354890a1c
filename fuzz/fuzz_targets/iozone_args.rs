//! The `iozone_args` fuzz target: `flashpath_fuzz::targets::iozone_args` says what it takes and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| flashpath_fuzz::targets::iozone_args(data));
