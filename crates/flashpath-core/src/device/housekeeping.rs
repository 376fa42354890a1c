//! Foreground housekeeping at block turnover: the card's own bookkeeping that stretches
//! some writes (the second mode of the SD card's write latency, docs/published-results.md §2).
//!
//! What the firmware does and when (page-mapped model, `ftl.housekeeping_move` > 0):
//! each time a die's open host block is full (its last row has been given a program),
//! the firmware moves `housekeeping_move` bytes of data on that die, right after that
//! program: row by row (one `Input::HousekeepingStep` per row, as GC steps, so the
//! shared channel serves other dies between rows), an array read (tR), the row out to
//! the controller and back in over the channel (or an on-die copyback, as `ftl.gc_copy`
//! says), and a program (tPROG). The die takes no host row until the move is done, so
//! the host rows that come to it next, and the commit that waits for them (the SD
//! card's busy after CMD12, a flush), wait too. Each die does its own move: dies whose
//! blocks fill together move in parallel.
//!
//! ```text
//!  issue_program(die): [channel] data in ─▶ [die] tPROG
//!     the row was the block's last? ─ yes ─▶ housekeeping_start(die): die held
//!        HousekeepingStep per row: [die] tR ─▶ [channel] out ─▶ [channel] in ─▶ [die] tPROG
//!                  (labels "hk read", "hk out", "hk in", "hk program")
//!        after the last row: the die is released, the drain goes on
//! ```
//!
//! Sources:
//! - SanDisk, "Scheduling of housekeeping operations in flash memory systems"
//!   (US 7,315,917; US 8,364,883): the card performs housekeeping unrelated to the host
//!   command in the foreground, by keeping busy asserted after the command's own work,
//!   within the command's time budget; the housekeeping named is wear levelling,
//!   "transferring a quantity of data from one location to another", scheduled on the
//!   count of block erasures. SanDisk, "Methods for phased garbage collection"
//!   (US 7,444,461): a write command's busy carries a portion of a garbage collection
//!   (copying part of the valid data of a block), the rest in later commands.
//! - SD Physical Layer Simplified Specification 4.10: the time budget is 250 ms of busy
//!   per write (Table 4-60); the card may "move used RUs" (Pm, Table 4-45), and the unit
//!   it moves is the recording unit, 512 KB for UHS cards (Table 4-60).
//!
//! Choices (estimates, documented in docs/mechanisms.md):
//! - The trigger is a die's host block becoming full (the firmware's block-level
//!   bookkeeping: the next block to open consumes an erased block and adds to the erase
//!   count wear levelling is scheduled on); one move per block filled.
//! - The amount moved per trigger is a preset value (the SD preset: one UHS RU).
//! - Only the time is modelled: the page map and the free-block pool are not changed
//!   (the data moved is data the model does not track as hot; the move reclaims no
//!   space in the model). It is counted in `DeviceStats::housekeeping_moves`,
//!   `housekeeping_slots` and `nand_page_programs`.
//!
//! Deterministic: no random numbers.

use crate::device::config::{GcCopy, LPN_BYTES};
use crate::device::{Input, Output};
use crate::engine::{Outbox, SimTime};

use super::PageMappedDevice;

impl PageMappedDevice {
    /// Whether the host row at `base` is the last of its block (the block is full and
    /// closed), and housekeeping is on.
    #[inline]
    pub(super) fn housekeeping_due(&self, base: u32) -> bool {
        self.c.housekeeping_move_bytes > 0
            && (base + self.slots_per_row).is_multiple_of(self.ftl.slots_per_block())
    }

    /// Whether `die` is held by a housekeeping move (it takes no host row meanwhile).
    #[inline]
    pub(super) fn housekeeping_holds(&self, die: u32) -> bool {
        self.hk_rows[die as usize] > 0
    }

    /// `die` closed a full host block: its move starts now (after the work already
    /// booked on the die), one row per step.
    pub(super) fn housekeeping_start(
        &mut self,
        now: SimTime,
        die: u32,
        out: &mut Outbox<Input, Output>,
    ) {
        let row_bytes = self.slots_per_row as u64 * LPN_BYTES;
        let rows = self.c.housekeeping_move_bytes.div_ceil(row_bytes) as u32;
        let d = die as usize;
        if self.hk_rows[d] == 0 {
            out.timer(now, Input::HousekeepingStep { die });
        }
        self.hk_rows[d] += rows;
        self.stats.housekeeping_moves += 1;
    }

    /// One row of the move on `die`: tR, out and in over the channel (or copyback),
    /// tPROG. The next row is due when the die is free; after the last, the drain goes on.
    pub(super) fn housekeeping_step(
        &mut self,
        now: SimTime,
        die: u32,
        out: &mut Outbox<Input, Output>,
    ) {
        let d = die as usize;
        if self.hk_rows[d] == 0 {
            return;
        }
        let row_bytes = self.slots_per_row as u64 * LPN_BYTES;
        let ch = self.channel_of(die);
        let xfer = self.channel_rate.ns(row_bytes);
        let (_, tr_end) = self.book_die(die, "hk read", now, self.c.t_read_ns);
        let mut t_data = tr_end;
        if self.c.gc_copy == GcCopy::Controller {
            let (_, xend) = self.book_ch(ch, "hk out", tr_end, xfer);
            self.book_die(die, "hk out", tr_end, xend - tr_end);
            t_data = xend;
        }
        let end = match self.c.gc_copy {
            GcCopy::Copyback => self.book_die(die, "hk program", t_data, self.c.t_prog_ns).1,
            GcCopy::Controller => {
                let start = t_data.max(self.dies[d].free_at());
                let (_, xend) = self.book_ch(ch, "hk in", start, xfer);
                let dur = xend - start + self.c.t_prog_ns;
                self.book_die(die, "hk program", start, dur).1
            }
        };
        self.invalidate_registers(die);
        self.stats.housekeeping_slots += self.slots_per_row as u64;
        self.stats.nand_page_programs += self.c.planes_per_die as u64;
        self.hk_rows[d] -= 1;
        if self.hk_rows[d] > 0 {
            out.timer(end, Input::HousekeepingStep { die });
        } else {
            // The die takes host rows again (booked after the move).
            self.try_drain(now, out);
        }
    }
}

#[cfg(test)]
mod tests {
    //! On `DeviceConfig::small_test_device()`: 2 dies (one per channel), rows of 8 slots
    //! (2 planes × 16 KiB), 16 rows per block, tR 50 us, tPROG 500 us, 400 MB/s channel
    //! (32 KiB = 81 920 ns), controller copies.
    use super::*;
    use crate::device::harness::Harness;
    use crate::device::{DevOp, DeviceConfig};
    use crate::engine::Outbox;

    fn dev(move_bytes: u64) -> PageMappedDevice {
        let cfg = cfg(move_bytes);
        PageMappedDevice::new(cfg.nand().unwrap(), cfg.capacity_bytes)
    }

    #[test]
    fn one_move_books_read_transfers_and_program_per_row() {
        let mut d = dev(64 * 1024);
        d.record_nand();
        let mut out = Outbox::new();
        d.housekeeping_start(1_000, 1, &mut out);
        assert!(d.housekeeping_holds(1) && !d.housekeeping_holds(0));
        loop {
            let (timers, _) = out.drain();
            let timers: Vec<_> = timers.collect();
            if timers.is_empty() {
                break;
            }
            for (t, i) in timers {
                d.handle(t, i, &mut out);
            }
        }
        assert!(!d.housekeeping_holds(1) && d.is_quiescent());
        // Two rows of 32 KiB, each: tR, out, in, tPROG, one after the other on die 1.
        let row = 50_000 + 2 * 81_920 + 500_000;
        let slices = d.take_nand_slices();
        let end = slices.iter().map(|s| s.end).max().unwrap();
        assert_eq!(end, 1_000 + 2 * row);
        let s = d.stats();
        assert_eq!(
            (
                s.housekeeping_moves,
                s.housekeeping_slots,
                s.nand_page_programs
            ),
            (1, 16, 4)
        );
        let labels: Vec<_> = slices.iter().map(|s| s.label).collect();
        assert!(labels.contains(&"hk read") && labels.contains(&"hk program"));
        // The page map is untouched.
        d.check_invariants();
    }

    #[test]
    fn due_only_at_the_last_row_of_a_block_and_when_on() {
        let d = dev(32 * 1024);
        let spb = d.ftl.slots_per_block();
        assert!(d.housekeeping_due(spb - 8) && d.housekeeping_due(3 * spb - 8));
        assert!(!d.housekeeping_due(0) && !d.housekeeping_due(spb + 8));
        assert!(!dev(0).housekeeping_due(spb - 8));
    }

    fn cfg(move_bytes: u64) -> DeviceConfig {
        let mut cfg = DeviceConfig::small_test_device();
        cfg.nand_mut().unwrap().housekeeping_move_bytes = move_bytes;
        cfg
    }

    /// Writes `rows` full rows (one 32 KiB write each, QD1) and lets the device finish.
    fn write_rows(move_bytes: u64, rows: u32) -> crate::device::DeviceStats {
        let mut h = Harness::new(&cfg(move_bytes), 1);
        for r in 0..rows {
            h.next(DevOp::Write, r as u64 * 64, 64);
        }
        h.run_until_idle();
        h.dev.stats().clone()
    }

    #[test]
    fn one_move_per_host_block_filled() {
        // 70 rows round-robin over 2 dies of 16-row blocks: each die fills a block at
        // its rows 15 and 31 (host rows 30, 31, 62, 63); its third block is not full.
        let on = write_rows(32 * 1024, 70);
        assert_eq!((on.housekeeping_moves, on.housekeeping_slots), (4, 4 * 8));
        assert_eq!(on.host_slots_programmed, 70 * 8);
        let off = write_rows(0, 70);
        assert_eq!(off.housekeeping_moves, 0);
        // The same host data is programmed either way; only the moves differ.
        assert_eq!(on.host_slots_programmed, off.host_slots_programmed);
        assert_eq!(on.nand_page_programs, off.nand_page_programs + 4 * 2);
    }
}
