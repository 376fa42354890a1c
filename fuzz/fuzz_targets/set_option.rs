//! The `set_option` fuzz target: `flashpath_fuzz::targets::set_option` says what it takes and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| flashpath_fuzz::targets::set_option(data));
