//! UFS WriteBooster (JEDEC JESD220E, UFS 3.1), the device's state: an SLC-mode write
//! buffer in front of the TLC array, and when it is flushed.
//!
//! ```text
//!  host row (write buffer drain) ─▶ fWriteBoosterEn and room in the die's SLC ring?
//!      yes ─▶ SLC program (write_booster.t_prog) into the ring's head row
//!      no  ─▶ TLC program (nand.t_prog), as without WriteBooster
//!  flush allowed (in hibern8 with fWriteBoosterBufferFlushDuringHibernate, or idle for
//!  idle_flush_delay with fWriteBoosterBufferFlushEn) ─▶ per die, row by row:
//!      the ring's oldest valid slots ─▶ [die] SLC tR ─▶ [channel] out ─▶ [channel] in
//!      ─▶ [die] TLC tPROG ─▶ the ring's tail passes them: that space is free again
//!  a host command arrives ─▶ the explicit flush stops after its current row; hibern8
//!      exit (the host's next doorbell) stops the hibern8 flush likewise
//! ```
//!
//! Mechanism as JESD220E §6.4 describes it (the flags and attributes are named as in
//! Linux's include/ufs/ufs.h): with fWriteBoosterEn set, the device writes host data to
//! the WriteBooster buffer (SLC mode) while it has space; when the buffer is full, writes
//! go to normal storage (TLC) at its speed. The buffer is emptied ("flushed") into normal
//! storage only when the host allows it: explicitly, fWriteBoosterBufferFlushEn set, while
//! the device is idle; or fWriteBoosterBufferFlushDuringHibernate set, while the link is
//! in hibern8. Linux (ufshcd_configure_wb, 5.8 and later) sets fWriteBoosterEn and the
//! hibern8 flag, and the explicit flag unless the host has
//! UFSHCI_QUIRK_SKIP_MANUAL_WB_FLUSH_CTRL; the host preset's `[ufs]` wb_* fields say so,
//! and the UFS driver layer sets the policy here (`WriteBoosterConfig::enabled`, ...).
//!
//! Model: the SLC blocks are a ring per die, beside the TLC blocks of `geometry` (a
//! buffer in "user space reduction" mode: its blocks are not the user area's). A ring
//! slot's physical address is a `Ppa` above every TLC slot (`SlcBuffer::base`), so the
//! L2P entry of data in the buffer names it like any NAND slot. Host rows are allocated
//! whole at the ring's head; the flush moves the oldest valid slots from the tail (a
//! slot is valid while the L2P still names it; overwritten and discarded slots are
//! skipped and their space comes back as the tail passes). Flush moves are committed
//! to the map when the row is booked (as GC's). Memory: 4 bytes per ring slot between
//! tail and head, in chunks allocated as the head advances and freed behind the tail.
//!
//! Leaves out (each an estimate or a choice): "preserve user space" mode (the buffer
//! shrinking as the user area fills; refused at validation); the SLC blocks' own erases
//! (their time is not booked); read retries of SLC pages (none); the buffer's lifetime
//! estimate (bWriteBoosterBufferLifeTimeEst); the hibern8 exit latency. Units: ns, bytes.

use super::config::{NandDeviceConfig, LPN_BYTES};
use super::ftl::{Lpn, PageMap, Ppa};
use crate::config::{bytes_field, ns_field, ConfigError};
use crate::engine::SimTime;
use serde::Deserialize;
use std::collections::VecDeque;

/// The `[write_booster]` section of a UFS device preset.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawWriteBooster {
    /// bWriteBoosterBufferType: "shared" (one buffer for the device) or "dedicated" (a
    /// logical unit's; the model runs one LU, so both behave the same).
    pub buffer_type: Option<String>,
    /// User data the buffer holds (dNumSharedWriteBoosterBufferAllocUnits, or the LU's
    /// dLUNumWriteBoosterBufferAllocUnits, × the allocation unit).
    pub size: Option<String>,
    /// bWriteBoosterBufferPreserveUserSpaceEn: only `false` is modelled.
    pub preserve_user_space: Option<bool>,
    /// SLC-mode array read and program of one page.
    pub t_read: Option<String>,
    pub t_prog: Option<String>,
    /// With fWriteBoosterBufferFlushEn: how long the device waits with no command
    /// before it starts to flush.
    pub idle_flush_delay: Option<String>,
}

/// The device's WriteBooster buffer and the flags the host set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteBoosterConfig {
    pub dedicated: bool,
    /// User data the buffer holds, bytes (a whole number of rows on every die).
    pub size_bytes: u64,
    pub t_read_ns: u64,
    pub t_prog_ns: u64,
    pub idle_flush_delay_ns: u64,
    /// fWriteBoosterEn, fWriteBoosterBufferFlushEn and
    /// fWriteBoosterBufferFlushDuringHibernate: 0 at power-on (JESD220E), set by the
    /// driver (`driver::configure_device`).
    pub enabled: bool,
    pub flush_explicit: bool,
    pub flush_hibern8: bool,
}

/// Validates `[write_booster]` of a page-mapped device of `nand`'s geometry.
pub fn validate(
    w: &RawWriteBooster,
    nand: &NandDeviceConfig,
) -> Result<WriteBoosterConfig, ConfigError> {
    let need =
        |v: &Option<String>, f: &str| v.clone().ok_or_else(|| ConfigError::new(f, "is required"));
    let dedicated = match need(&w.buffer_type, "buffer_type")?.as_str() {
        "shared" => false,
        "dedicated" => true,
        other => {
            return Err(ConfigError::new(
                "buffer_type",
                format!("'{other}' is not a WriteBooster buffer type (shared, dedicated)"),
            ))
        }
    };
    match w.preserve_user_space {
        None => return Err(ConfigError::new("preserve_user_space", "is required")),
        Some(true) => {
            return Err(ConfigError::new(
                "preserve_user_space",
                "true (a buffer that shrinks as the user area fills) is not modelled; use false (user space reduction)",
            ))
        }
        Some(false) => {}
    }
    let size_bytes = bytes_field("size", &need(&w.size, "size")?)?;
    let row = nand.slots_per_row() as u64 * LPN_BYTES * nand.dies() as u64;
    if size_bytes == 0 || !size_bytes.is_multiple_of(row) {
        return Err(ConfigError::new(
            "size",
            format!(
                "{size_bytes} B is not a positive multiple of one row on every die ({row} B): the buffer is a ring of whole rows per die"
            ),
        ));
    }
    let t_read_ns = ns_field("t_read", &need(&w.t_read, "t_read")?)?;
    let t_prog_ns = ns_field("t_prog", &need(&w.t_prog, "t_prog")?)?;
    if t_read_ns == 0 || t_prog_ns == 0 {
        return Err(ConfigError::new(
            if t_read_ns == 0 { "t_read" } else { "t_prog" },
            "must be more than 0",
        ));
    }
    let idle_flush_delay_ns = ns_field(
        "idle_flush_delay",
        &need(&w.idle_flush_delay, "idle_flush_delay")?,
    )?;
    Ok(WriteBoosterConfig {
        dedicated,
        size_bytes,
        t_read_ns,
        t_prog_ns,
        idle_flush_delay_ns,
        enabled: false,
        flush_explicit: false,
        flush_hibern8: false,
    })
}

/// Ring rows per reverse-map chunk.
const CHUNK_ROWS: u64 = 256;

/// One die's SLC blocks: slots `tail..head` (counted since the start, never wrapping)
/// hold data or stale slots; the slot of count `n` is ring position `n % cap`.
#[derive(Default)]
struct Ring {
    head: u64,
    tail: u64,
    /// First slot of the row being programmed, if one is (the flush stops there).
    in_flight: Option<u64>,
    /// Reverse map, slot → LPN, from `chunk_base` on, in chunks of `CHUNK_ROWS` rows.
    chunks: VecDeque<Box<[Lpn]>>,
    chunk_base: u64,
}

/// What the WriteBooster buffer has done (device counters, 4 KiB slots).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WbStats {
    /// Host slots programmed into the SLC buffer.
    pub slc_slots: u64,
    /// Host slots programmed to TLC while WriteBooster was on (the buffer was full).
    pub tlc_slots: u64,
    /// Slots moved to TLC by flushes, and the flush rows programmed.
    pub flushed_slots: u64,
    pub flush_rows: u64,
    /// Array reads of host data from the SLC buffer.
    pub slc_reads: u64,
    /// Slots in the buffer (valid or stale, not yet passed by a flush): now and at most.
    pub used_slots: u64,
    pub used_peak_slots: u64,
}

/// The WriteBooster buffer of a page-mapped device.
pub struct SlcBuffer {
    pub cfg: WriteBoosterConfig,
    /// First physical address of the SLC rings (every TLC slot is below it).
    base: Ppa,
    /// Slots per die ring, a multiple of `row`.
    per_die: u64,
    row: u64,
    rings: Vec<Ring>,
    /// The link is in hibern8 (the driver said so).
    pub hibern8: bool,
    /// The device has seen no command for `idle_flush_delay` (explicit flush).
    pub idle: bool,
    /// When the last host command's work ends (the device's busy horizon).
    pub last_activity: SimTime,
    /// A `WbIdleCheck` timer is pending.
    pub idle_timer: bool,
    /// Per die: a `WbFlushStep` is pending.
    pub flush_scheduled: Vec<bool>,
}

impl SlcBuffer {
    /// The buffer of `cfg` on `dies` dies with rows of `row` slots, its addresses from
    /// `base` (the first address above the TLC blocks).
    pub fn new(cfg: WriteBoosterConfig, dies: u32, row: u32, base: Ppa) -> SlcBuffer {
        let slots = cfg.size_bytes / LPN_BYTES;
        let per_die = slots / dies as u64;
        assert!(per_die > 0 && per_die.is_multiple_of(row as u64));
        assert!(
            base as u64 + slots < super::ftl::BUF_FLAG as u64,
            "SLC addresses overflow the L2P entry"
        );
        SlcBuffer {
            cfg,
            base,
            per_die,
            row: row as u64,
            rings: (0..dies).map(|_| Ring::default()).collect(),
            hibern8: false,
            idle: false,
            last_activity: 0,
            idle_timer: false,
            flush_scheduled: vec![false; dies as usize],
        }
    }

    /// Whether NAND address `ppa` is in the SLC buffer.
    #[inline]
    pub fn holds(&self, ppa: Ppa) -> bool {
        ppa >= self.base
    }

    /// The die of SLC address `ppa`.
    #[inline]
    pub fn die_of(&self, ppa: Ppa) -> u32 {
        ((ppa - self.base) as u64 / self.per_die) as u32
    }

    #[inline]
    fn ppa(&self, die: u32, n: u64) -> Ppa {
        self.base + (die as u64 * self.per_die + n % self.per_die) as Ppa
    }

    /// A host row on `die` goes to the buffer: WriteBooster is on, the die's ring has
    /// room for a row and no row of it is being programmed.
    #[inline]
    pub fn takes_row(&self, die: u32) -> bool {
        let r = &self.rings[die as usize];
        self.cfg.enabled && r.in_flight.is_none() && r.head - r.tail + self.row <= self.per_die
    }

    /// Allocates the head row of `die`'s ring; returns its first address.
    pub fn alloc_row(&mut self, die: u32, stats: &mut WbStats) -> Ppa {
        assert!(self.takes_row(die));
        let row = self.row;
        let r = &mut self.rings[die as usize];
        let n = r.head;
        let chunk = row * CHUNK_ROWS;
        if r.chunks.is_empty() {
            r.chunk_base = n - n % chunk;
        }
        if n >= r.chunk_base + r.chunks.len() as u64 * chunk {
            r.chunks
                .push_back(vec![Lpn::MAX; chunk as usize].into_boxed_slice());
        }
        r.head += row;
        r.in_flight = Some(n);
        stats.used_slots += row;
        stats.used_peak_slots = stats.used_peak_slots.max(stats.used_slots);
        self.ppa(die, n)
    }

    /// Slot `ppa` (of the row in flight on its die) holds `lpn`.
    pub fn place(&mut self, ppa: Ppa, lpn: Lpn) {
        let die = self.die_of(ppa);
        let first = self.rings[die as usize]
            .in_flight
            .expect("placing into a ring with no row in flight");
        let n = first + (ppa - self.ppa(die, first)) as u64;
        let chunk = self.row * CHUNK_ROWS;
        let r = &mut self.rings[die as usize];
        let off = n - r.chunk_base;
        r.chunks[(off / chunk) as usize][(off % chunk) as usize] = lpn;
    }

    /// The program of `die`'s row in flight has ended.
    pub fn row_done(&mut self, die: u32) {
        let r = &mut self.rings[die as usize];
        assert!(r.in_flight.take().is_some(), "no SLC row in flight");
    }

    /// Whether `die`'s ring holds slots a flush could pass (programmed ones).
    pub fn has_data(&self, die: u32) -> bool {
        let r = &self.rings[die as usize];
        r.in_flight.unwrap_or(r.head) > r.tail
    }

    /// Whether any ring holds slots a flush could pass.
    pub fn any_data(&self) -> bool {
        (0..self.rings.len() as u32).any(|d| self.has_data(d))
    }

    /// Flush is allowed now (the host's flags and the link's or device's state).
    pub fn flush_allowed(&self) -> bool {
        (self.cfg.flush_hibern8 && self.hibern8) || (self.cfg.flush_explicit && self.idle)
    }

    /// The next flush row of `die`: its ring's oldest valid slots, up to a row, written
    /// to `out` as (lpn, SLC address); the tail passes them and the stale slots among
    /// them. Returns how many are valid (0: nothing left but stale slots, now passed).
    pub fn take_flush_row(
        &mut self,
        die: u32,
        ftl: &PageMap,
        out: &mut [(Lpn, Ppa)],
        stats: &mut WbStats,
    ) -> usize {
        let chunk = self.row * CHUNK_ROWS;
        let mut n = 0;
        loop {
            let r = &self.rings[die as usize];
            let end = r.in_flight.unwrap_or(r.head);
            if r.tail >= end || n == self.row as usize {
                break;
            }
            let t = r.tail;
            let off = t - r.chunk_base;
            let lpn = r.chunks[(off / chunk) as usize][(off % chunk) as usize];
            let ppa = self.ppa(die, t);
            if lpn != Lpn::MAX && ftl.get(lpn) == ppa {
                out[n] = (lpn, ppa);
                n += 1;
            }
            let r = &mut self.rings[die as usize];
            r.tail += 1;
            stats.used_slots -= 1;
            if (r.tail - r.chunk_base) >= chunk {
                r.chunks.pop_front();
                r.chunk_base += chunk;
            }
        }
        n
    }

    /// The buffer's capacity in slots.
    pub fn capacity_slots(&self) -> u64 {
        self.per_die * self.rings.len() as u64
    }

    /// Bytes of reverse map held now (memory accounting, tests).
    pub fn map_bytes(&self) -> u64 {
        self.rings
            .iter()
            .map(|r| r.chunks.len() as u64 * self.row * CHUNK_ROWS * 4)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(size: u64) -> WriteBoosterConfig {
        WriteBoosterConfig {
            dedicated: false,
            size_bytes: size,
            t_read_ns: 30_000,
            t_prog_ns: 200_000,
            idle_flush_delay_ns: 1_000_000,
            enabled: true,
            flush_explicit: true,
            flush_hibern8: true,
        }
    }

    /// A write hint for an LPN held in the SLC ring (past the FTL's TLC slots) reads no
    /// reverse map: the ring's slots have none in the FTL.
    #[test]
    fn a_write_hint_on_an_slc_slot_prefetches_nothing() {
        let mut ftl = PageMap::new(1024, 2, 8, 8, 4, 1);
        let base = 2 * 8 * 32;
        let mut b = SlcBuffer::new(cfg(2 * 4 * 8 * 4096), 2, 8, base);
        let p = b.alloc_row(0, &mut WbStats::default());
        b.place(p, 5);
        ftl.supersede(5, crate::device::ftl::UNMAPPED);
        ftl.map_slc(5, p);
        ftl.prefetch_entry(5);
        ftl.prefetch_slot(5);
        assert_eq!(ftl.get(5), p);
    }

    /// A 2-die buffer of 4 rows of 8 slots per die: it takes 4 rows per die, then no
    /// more until a flush passes the tail; a flush row takes the valid slots only.
    #[test]
    fn the_ring_takes_whole_rows_until_full_and_a_flush_frees_them() {
        let mut ftl = PageMap::new(1024, 2, 8, 8, 4, 1);
        let base = 2 * 8 * 32;
        let mut b = SlcBuffer::new(cfg(2 * 4 * 8 * 4096), 2, 8, base);
        let mut st = WbStats::default();
        assert_eq!(b.capacity_slots(), 64);
        let mut lpn = 0;
        for _ in 0..4 {
            let p = b.alloc_row(1, &mut st);
            assert!(b.holds(p) && b.die_of(p) == 1);
            for i in 0..8 {
                b.place(p + i, lpn);
                ftl.supersede(lpn, crate::device::ftl::UNMAPPED);
                ftl.map_slc(lpn, p + i);
                lpn += 1;
            }
            assert!(!b.takes_row(1), "one row in flight at a time");
            b.row_done(1);
        }
        assert!(!b.takes_row(1), "full: 4 rows of 8");
        assert!(b.takes_row(0), "the other die's ring is empty");
        assert_eq!((st.used_slots, st.used_peak_slots), (32, 32));
        // LPN 3 overwritten elsewhere: its slot is stale.
        ftl.supersede(3, crate::device::ftl::UNMAPPED);
        let mut out = [(0, 0); 8];
        let n = b.take_flush_row(1, &ftl, &mut out, &mut st);
        assert_eq!(
            n, 8,
            "the stale slot is skipped and the row filled from the next"
        );
        assert_eq!(out[3].0, 4);
        assert_eq!(out[7].0, 8);
        assert_eq!((st.used_slots, st.used_peak_slots), (23, 32));
        assert!(b.takes_row(1), "the flushed row's space is free again");
    }
}
