//! Fuzzes the command line: NUL-separated arguments (no job files are read: an
//! argument naming a file that does not exist is an ordinary error).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let args = flashpath_fuzz::arguments(data);
    let mut env = flashpath_fio::parse::Env::fixed();
    // A directory with no job files in it, so fuzzed names never read real files.
    env.cwd = std::path::PathBuf::from("/nonexistent-flashpath-fuzz");
    if let Err(e) = flashpath_fio::parse::parse_command_line(&args, &env) {
        let s = e.to_string();
        assert!(!s.contains('\n'), "error is not one line: {s:?}");
    }
});
