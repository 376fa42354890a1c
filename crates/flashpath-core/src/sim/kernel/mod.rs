//! The kernel above the block layer and around it, as the simulation runs it: the page
//! cache with readahead, dirty pages, writeback and fsync (`buffered.rs`, over the data
//! structure of `host/page_cache.rs`), the ext4 journal (`journal.rs`), the block
//! queue's discard limits (`discard.rs`), polled completions (`iopoll.rs`) and the block
//! layer's trace events as blktrace records them (`blkev.rs`). The block layer itself
//! is `host/block.rs`; the drivers below it are `driver/`.
//! Units: ns, bytes, 512-byte sectors where the kernel counts them.

pub(super) mod blkev;
pub(super) mod buffered;
pub(super) mod discard;
pub(super) mod iopoll;
pub(super) mod journal;
