//! Fuzzes the replay files `read_iolog=` takes: fio's iolog (v2, v3) and blktrace's
//! binary format, sniffed from the bytes as `flashpath fio` does. The first byte picks
//! the job's replay options (direct, readonly, replay_redirect, replay_scale,
//! replay_align, replay_time_scale, replay_no_stall, iodepth); the rest is the trace,
//! written to a file and replayed to its end on the default system (not preconditioned). Errors are one line;
//! nothing panics.
#![no_main]

use flashpath_cli::run;
use flashpath_core::sim::Precondition;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, trace)) = data.split_first() else {
        return;
    };
    flashpath_fuzz::enter_scratch();
    let path = std::env::current_dir().unwrap().join("trace");
    std::fs::write(&path, trace).expect("write the trace");
    let mut fio = vec![
        "--name=replay".to_string(),
        format!("--read_iolog={}", path.display()),
        "--ioengine=libaio".to_string(),
    ];
    let bit = |n: u8| pick & (1 << n) != 0;
    fio.push(format!("--direct={}", bit(0) as u8));
    if bit(1) {
        fio.push("--readonly".to_string());
    }
    if bit(2) {
        fio.push("--replay_redirect=/dev/fuzz".to_string());
    }
    if bit(3) {
        fio.push("--replay_scale=8".to_string());
    }
    if bit(4) {
        fio.push("--replay_align=4096".to_string());
    }
    if bit(5) {
        fio.push("--replay_time_scale=1000".to_string());
    }
    if bit(6) {
        fio.push("--replay_no_stall=1".to_string());
    }
    if bit(7) {
        fio.push("--iodepth=8".to_string());
    }
    // The device as it leaves the factory: no aged layout to build for each input.
    let opts = run::Options {
        precondition: Some(Precondition::Off),
        ..Default::default()
    };
    flashpath_fuzz::run_fio(&opts, &fio);
});
