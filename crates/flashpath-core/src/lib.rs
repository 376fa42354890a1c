//! flashpath-core: a discrete-event simulator of the Linux I/O path to mobile flash
//! storage. No I/O: it takes typed, validated configurations and returns typed results.
//!
//! ```text
//! workload (fio job threads) → host CPU / block layer → host driver → bus → device
//!        ▲                                                                    │
//!        └──────────── completion: IRQ → driver → block → thread ◀────────────┘
//! ```
//! The layers: `workload/` (what a job asks for), `host/` (cores, block layer, page
//! cache), `driver/` (host controller drivers and their bus or link), `device/`. All the
//! wiring between them is in [`sim`].

pub mod blktrace;
pub mod config;
pub mod device;
pub mod driver;
pub mod engine;
pub mod host;
pub mod scratch;
pub mod sim;
pub mod stats;
pub mod timeline;
pub mod trace;
pub mod workload;
