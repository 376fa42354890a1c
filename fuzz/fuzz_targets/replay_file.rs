//! The `replay_file` fuzz target: `flashpath_fuzz::targets::replay_file` says what it takes and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| flashpath_fuzz::targets::replay_file(data));
