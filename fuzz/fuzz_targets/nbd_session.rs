//! The `nbd_session` fuzz target: `flashpath_fuzz::targets::nbd_session` says what it takes and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| flashpath_fuzz::targets::nbd_session(data));
