//! WriteBooster on the page-mapped device: host rows into the SLC buffer, and its flush
//! into TLC (`super::write_booster` holds the buffer's state and the mechanism's
//! description; this is the device's side of it, a child of `page_mapped`).
//!
//! ```text
//!  issue_program(die) ─▶ wb_takes_row(die)? ─ yes ─▶ SLC row: [die] data in + SLC tPROG
//!  program_done: each slot still current ─▶ L2P names its SLC address
//!  a host command ─▶ the explicit flush stops; an idle check is armed (idle_flush_delay)
//!  WbIdleCheck: no command for the delay, no write being taken in ─▶ flush starts
//!  Hibern8(true) (the driver's auto-hibern8) ─▶ flush starts; Hibern8(false) ─▶ stops
//!  WbFlushStep per die: [die] SLC tR ─▶ [channel] out ─▶ [channel] in ─▶ [die] TLC tPROG
//!      (labels "wb read", "wb out", "wb in", "wb program"); next step when the die is free
//! ```

use super::*;
use crate::device::write_booster::{SlcBuffer, WriteBoosterConfig};

impl PageMappedDevice {
    /// The device has a WriteBooster buffer with these flags (the driver set them).
    pub fn enable_write_booster(&mut self, cfg: WriteBoosterConfig) {
        let base = self.ftl.tlc_slots();
        self.wb = Some(Box::new(SlcBuffer::new(
            cfg,
            self.c.dies(),
            self.slots_per_row,
            base,
        )));
    }

    /// Whether the next host row on `die` goes to the SLC buffer.
    #[inline]
    pub(super) fn wb_takes_row(&self, die: u32) -> bool {
        self.wb.as_ref().is_some_and(|w| w.takes_row(die))
    }

    /// Whether `ppa` (a NAND address) is in the SLC buffer.
    #[inline]
    pub(super) fn wb_holds(&self, ppa: Ppa) -> bool {
        ppa >= self.ftl.tlc_slots()
    }

    /// Physical blocks' worth of addresses the SLC buffer adds (content tags).
    pub(super) fn wb_blocks(&self) -> u32 {
        self.wb.as_ref().map_or(0, |w| {
            w.capacity_slots()
                .div_ceil(self.ftl.slots_per_block() as u64) as u32
        })
    }

    /// A host command arrived: the explicit flush stops (the device is no longer idle)
    /// and the idle check is armed.
    #[inline]
    pub(super) fn wb_command(&mut self, now: SimTime, out: &mut Outbox<Input, Output>) {
        if let Some(w) = &mut self.wb {
            w.idle = false;
            w.last_activity = now;
            self.wb_arm_idle_check(out);
        }
    }

    /// Arms the idle check for when the device will have been idle for the delay, if
    /// the explicit flush is on, the buffer has data and no check is pending.
    fn wb_arm_idle_check(&mut self, out: &mut Outbox<Input, Output>) {
        let Some(w) = &mut self.wb else {
            return;
        };
        if w.cfg.enabled && w.cfg.flush_explicit && !w.idle_timer && !w.idle && w.any_data() {
            w.idle_timer = true;
            out.timer(
                w.last_activity + w.cfg.idle_flush_delay_ns,
                Input::WbIdleCheck,
            );
        }
    }

    /// The idle check: no command since `idle_flush_delay` and no write being taken in
    /// make the device idle, and the flush starts.
    pub(super) fn wb_idle_check(&mut self, now: SimTime, out: &mut Outbox<Input, Output>) {
        // A write still being taken in keeps the device busy; a partial row left in the
        // SRAM buffer does not (it waits for the next write or a flush command).
        let drained = self.active_write.is_none() && self.write_queue.is_empty();
        let Some(w) = &mut self.wb else {
            return;
        };
        w.idle_timer = false;
        let due = w.last_activity + w.cfg.idle_flush_delay_ns;
        let again = if now < due {
            // A command came meanwhile: idle only from its time plus the delay.
            Some(due)
        } else if !drained {
            // A write is still being taken in: look again a delay later.
            Some(now + w.cfg.idle_flush_delay_ns)
        } else {
            None
        };
        if let Some(at) = again {
            w.idle_timer = true;
            out.timer(at, Input::WbIdleCheck);
            return;
        }
        w.idle = true;
        self.wb_start_flush(now, out);
    }

    /// The link enters or leaves hibern8.
    pub(super) fn wb_hibern8(
        &mut self,
        now: SimTime,
        enter: bool,
        out: &mut Outbox<Input, Output>,
    ) {
        if let Some(w) = &mut self.wb {
            w.hibern8 = enter;
            if enter {
                self.wb_start_flush(now, out);
            }
        }
    }

    /// Starts the flush on every die whose ring has data, if the flags allow it now.
    fn wb_start_flush(&mut self, now: SimTime, out: &mut Outbox<Input, Output>) {
        let Some(w) = &mut self.wb else {
            return;
        };
        if !w.cfg.enabled || !w.flush_allowed() {
            return;
        }
        for d in 0..self.c.dies() {
            if w.has_data(d) && !w.flush_scheduled[d as usize] {
                w.flush_scheduled[d as usize] = true;
                out.timer(
                    now.max(self.dies[d as usize].free_at()),
                    Input::WbFlushStep { die: d },
                );
            }
        }
    }

    /// The SLC row programming on `die` has ended: the ring may be flushed up to it.
    pub(super) fn wb_row_done(&mut self, die: u32, out: &mut Outbox<Input, Output>) {
        if let Some(w) = &mut self.wb {
            w.row_done(die);
        }
        self.wb_arm_idle_check(out);
    }

    /// One flush row on `die`: the ring's oldest valid slots are read from SLC and
    /// programmed into a TLC row of the same die; the next row when the die is free.
    pub(super) fn wb_flush_step(
        &mut self,
        now: SimTime,
        die: u32,
        out: &mut Outbox<Input, Output>,
    ) {
        let d = die as usize;
        let Some(w) = &mut self.wb else {
            return;
        };
        w.flush_scheduled[d] = false;
        if !w.flush_allowed() || !w.has_data(die) {
            return;
        }
        if self.die_prog[d].active || self.dies[d].free_at() > now {
            // A host program (or earlier work) holds the die: after it.
            w.flush_scheduled[d] = true;
            let at = self.dies[d].free_at().max(now + 1);
            out.timer(at, Input::WbFlushStep { die });
            return;
        }
        if !self.ftl.can_alloc_host(die) {
            // No TLC row without GC first: the flush waits for the next idle period.
            self.schedule_gc(now, die, out);
            return;
        }
        let mut rows = std::mem::take(&mut self.gc_scratch);
        let w = self.wb.as_mut().unwrap();
        let n = w.take_flush_row(die, &self.ftl, &mut rows, &mut self.stats.wb);
        if n > 0 {
            self.wb_copy_row(now, die, &rows[..n]);
        }
        self.gc_scratch = rows;
        let w = self.wb.as_mut().unwrap();
        if w.has_data(die) {
            w.flush_scheduled[d] = true;
            let at = self.dies[d].free_at().max(now);
            out.timer(at, Input::WbFlushStep { die });
        }
        if self.ftl.needs_gc(die) {
            self.schedule_gc(now, die, out);
        }
        // Space came free: a write waiting for a row may go on.
        if self.active_write.is_some() {
            self.continue_write(now, out);
        }
    }

    /// The reported jobs start on a device that has been idle since it was written
    /// (preconditioned): its buffer has been flushed. Moves every programmed valid slot
    /// to TLC at once, taking no time, as `precondition` maps data.
    pub(super) fn wb_settle(&mut self) {
        if !self.wb.as_ref().is_some_and(|w| w.any_data()) {
            return;
        }
        let mut rows = std::mem::take(&mut self.gc_scratch);
        for die in 0..self.c.dies() {
            while self.wb.as_ref().unwrap().has_data(die) {
                while !self.ftl.can_alloc_host(die) {
                    assert!(self.instant_gc(die), "WriteBooster settle: device full");
                }
                let w = self.wb.as_mut().unwrap();
                let n = w.take_flush_row(die, &self.ftl, &mut rows, &mut self.stats.wb);
                if n == 0 {
                    continue;
                }
                let base = self.ftl.alloc_row(die, Stream::Host).unwrap();
                for (i, &(lpn, src)) in rows[..n].iter().enumerate() {
                    self.wb_move(lpn, src, base + i as u32);
                }
                self.stats.wb.flushed_slots += n as u64;
                self.stats.wb.flush_rows += 1;
                while self.ftl.needs_gc(die) && self.instant_gc(die) {}
            }
            self.invalidate_registers(die);
        }
        self.gc_scratch = rows;
    }

    /// `lpn`'s data moves from buffer slot `src` to TLC slot `dst`, its content tag with it.
    fn wb_move(&mut self, lpn: Lpn, src: Ppa, dst: Ppa) {
        self.ftl.migrate(lpn, src, dst);
        if let Some(c) = &mut self.content {
            let v = c.nand.get(src);
            c.nand.set(dst, v);
        }
    }

    /// Moves `valid` (lpn, SLC address) into the next TLC row of `die`, through the
    /// controller.
    fn wb_copy_row(&mut self, now: SimTime, die: u32, valid: &[(Lpn, Ppa)]) {
        let ch = self.channel_of(die);
        let n = valid.len() as u64;
        let t_r = self.wb.as_ref().unwrap().cfg.t_read_ns;
        let (_, tr_end) = self.book_die(die, "wb read", now, t_r);
        let (_, xend) = self.book_ch(ch, "wb out", tr_end, self.channel_rate.ns(n * LPN_BYTES));
        self.book_die(die, "wb out", tr_end, xend - tr_end);
        self.invalidate_registers(die);
        let base = self
            .ftl
            .alloc_row(die, Stream::Host)
            .expect("can_alloc_host promised a row");
        if base.is_multiple_of(self.ftl.slots_per_block()) {
            self.ages.programmed(self.ftl.block_of(base), xend);
        }
        let mut last_seg = NONE;
        for (i, &(lpn, src)) in valid.iter().enumerate() {
            self.wb_move(lpn, src, base + i as u32);
            let seg = self.segment_of(lpn);
            if seg != last_seg {
                self.map_update(seg, xend);
                last_seg = seg;
            }
        }
        let t_prog = self
            .c
            .timing
            .t_prog_row(self.row_in_block(base), self.c.t_prog_ns);
        let start = xend.max(self.dies[die as usize].free_at());
        let bytes = self.slots_per_row as u64 * LPN_BYTES;
        let (_, inend) = self.book_ch(ch, "wb in", start, self.channel_rate.ns(bytes));
        self.book_die(die, "wb program", start, inend - start + t_prog);
        self.stats.nand_page_programs += self.c.planes_per_die as u64;
        self.stats.padding_slots += self.slots_per_row as u64 - n;
        self.stats.wb.flushed_slots += n;
        self.stats.wb.flush_rows += 1;
    }
}
