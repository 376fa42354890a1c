//! The `command_line` fuzz target: `flashpath_fuzz::targets::command_line` says what it takes and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| flashpath_fuzz::targets::command_line(data));
