//! fio's job threads and the semantics of its engines, as the simulation runs them: a
//! job thread's loop (`threads.rs`: issue, system call, reap, think time, rates,
//! iodepth batching), and the features a job can switch on: verify and its async
//! threads, `io_submit_mode=offload`, flow groups, latency targets, minimum rates,
//! replayed iologs, steady-state detection, `fill_device`, the null engine, and fio's
//! error handling (`errors.rs`). What a job asks for is typed in `workload/`; here it
//! becomes CPU time, system calls and bios handed to the kernel (`../kernel/`) and the
//! block layer.
//! Units: ns, bytes.

pub mod errors;
pub(super) mod fill_device;
pub(super) mod flow;
pub(super) mod lat_target;
pub(super) mod min_rate;
pub(super) mod null_engine;
pub(super) mod offload;
pub(super) mod replay;
pub mod steadystate;
pub(super) mod threads;
pub(super) mod verify;
pub(super) mod verify_async;
