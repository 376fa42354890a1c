//! The flash device behind the bus: controller firmware, L2P map cache, write buffer,
//! FTL and NAND. (Interface fixed here; the model lives in the submodules.)
//!
//! Contract with the host side (driver + bus), in simulated time:
//! - Read: the host sends the command; the bus delivers `Input::Command` when the
//!   command has arrived. The device emits `Output::ReadReady { tag, last_ready }` at
//!   the instant the first data is in its buffer, ready to stream out; `last_ready` is
//!   when the last byte will be ready. The bus streams the data and never finishes
//!   before `last_ready` + the last chunk's transfer.
//! - Write: the bus delivers `Input::Command` once all the data has crossed the bus
//!   into the device. The device emits `Output::Done { tag }` when it has accepted the
//!   data (busy released on DAT0): after firmware work and, if the write buffer is
//!   full, after space has been freed by the background drain.
//! - Flush / Discard: `Output::Done` when finished.
//! The device serves one host command at a time unless the interface queues commands
//! (eMMC without CQ: one); background work (buffer drain, GC) runs alongside.

pub use crate::engine::{Outbox, SimTime};

/// A 512-byte sector address, as the host addresses the device.
pub type Lba = u64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DevOp {
    Read,
    Write,
    Flush,
    Discard,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevCommand {
    /// The host's name for the command (a request id); echoed in outputs.
    pub tag: u32,
    pub op: DevOp,
    /// First 512-byte sector.
    pub lba: Lba,
    /// Length in 512-byte sectors (0 for Flush).
    pub sectors: u32,
}
