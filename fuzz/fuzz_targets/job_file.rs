//! The `job_file` fuzz target: `flashpath_fuzz::targets::job_file` says what it takes and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| flashpath_fuzz::targets::job_file(data));
