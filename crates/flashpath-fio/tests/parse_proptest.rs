//! Property tests: arbitrary bytes as a job file and arbitrary argument lists never
//! panic, and every error is one line.

use std::path::Path;

use flashpath_fio::parse::{self, Env};
use proptest::prelude::*;

/// Words that steer generated input into the interesting parts of the grammar.
const WORDS: &[&str] = &[
    "[global]",
    "[job]",
    "[",
    "]",
    "=",
    ",",
    ":",
    "-",
    "/",
    "%",
    ";",
    "#",
    "\n",
    " ",
    "${X}",
    "$pagesize",
    "$mb_memory*2",
    "bs",
    "rw",
    "randread:4",
    "read:-8k",
    "size",
    "4KiB",
    "1.5m",
    "0x10",
    "z",
    "bssplit",
    "4k/50:8k/",
    "bsrange",
    "1k-4k",
    "random_distribution",
    "zoned:50/5:30/15:20/",
    "zipf:1.2",
    "percentile_list",
    "1:5:99.9",
    "numjobs",
    "3",
    "stonewall",
    "new_group",
    "wait_for",
    "ioengine",
    "libaio",
    "nbd",
    "uri",
    "include",
    "direct",
    "1",
    "runtime",
    "10s",
    "thinktime",
    "rate",
    ",8k,",
    "kb_base=1000",
    "name",
    "--name=",
    "--ioengine=",
    "--output-format=",
    "json+",
    "--section=",
    "--",
    "-",
];

fn word_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(WORDS), 0..60).prop_map(|v| v.concat())
}

fn env() -> Env {
    let mut e = Env::fixed();
    e.vars.insert("X".into(), "4k".into());
    // No job files exist here, so generated names never read real files.
    e.cwd = std::path::PathBuf::from("/nonexistent-flashpath-proptest");
    e
}

fn one_line(e: &parse::ParseError) -> Result<(), TestCaseError> {
    let s = e.to_string();
    prop_assert!(!s.contains('\n'), "error is not one line: {s:?}");
    prop_assert!(!s.is_empty());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn job_file_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let text = String::from_utf8_lossy(&bytes);
        if let Err(e) = parse::parse_job_file_text(&text, Path::new("p.fio"), &env()) {
            one_line(&e)?;
        }
    }

    #[test]
    fn job_file_word_soup_never_panics(text in word_soup()) {
        match parse::parse_job_file_text(&text, Path::new("p.fio"), &env()) {
            Ok(jobs) => {
                for (i, j) in jobs.iter().enumerate() {
                    prop_assert_eq!(j.thread_number as usize, i + 1);
                    prop_assert!(j.options.effective_iodepth() >= 1);
                }
            }
            Err(e) => one_line(&e)?,
        }
    }

    #[test]
    fn argument_lists_never_panic(args in prop::collection::vec(
        prop_oneof![word_soup(), any::<String>()], 0..12)) {
        if let Err(e) = parse::parse_command_line(&args, &env()) {
            one_line(&e)?;
        }
    }
}
