//! Fuzzes flashbench's command line (NUL-separated arguments): glibc getopt_long's
//! grammar as flashbench 62 uses it. A refusal is flashbench's: a non-zero status and
//! a message on standard error; accepted arguments must pass or fail flashpath's
//! checks of what it models in one line. Nothing panics.
#![no_main]

use flashpath_cli::flashbench::args;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let argv = flashpath_fuzz::arguments(data);
    match args::parse(&argv) {
        Ok(a) => {
            if let Err(e) = flashpath_cli::flashbench::bench::refuse_unmodelled(&a) {
                flashpath_fuzz::check_error(&anyhow::anyhow!("{e}"));
            }
        }
        Err(r) => {
            assert_ne!(r.status, 0, "a refusal exits 0");
            assert!(!r.stderr.is_empty(), "a refusal says nothing");
        }
    }
});
