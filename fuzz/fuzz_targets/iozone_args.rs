//! Fuzzes iozone's command line (NUL-separated arguments, as `flashpath iozone` takes
//! them after its own options): iozone's grammar, then the report's header and
//! per-process lines the arguments decide. Errors are one line; nothing panics.
#![no_main]

use flashpath_cli::iozone::{args, report};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let argv = flashpath_fuzz::arguments(data);
    match args::parse(&argv) {
        Ok(a) => {
            let _ = report::header(&a, "Fri Nov 27 00:00:00 2026");
            let _ = report::each_process(&a);
        }
        Err(e) => flashpath_fuzz::check_error(&e),
    }
});
