//! Fuzzes the job-file reader: arbitrary bytes as a job file must give jobs or a
//! one-line error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let env = flashpath_fio::parse::Env::fixed();
    let text = String::from_utf8_lossy(data);
    match flashpath_fio::parse::parse_job_file_text(&text, Path::new("fuzz.fio"), &env) {
        Ok(jobs) => {
            for j in &jobs {
                let _ = j.options.effective_iodepth();
            }
        }
        Err(e) => {
            let s = e.to_string();
            assert!(!s.contains('\n'), "error is not one line: {s:?}");
        }
    }
});
