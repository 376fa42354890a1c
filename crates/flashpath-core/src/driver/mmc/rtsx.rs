//! The Realtek rtsx PCIe SD host driver (`rtsx_pci_sdmmc.c`) under the legacy MMC block
//! path (docs/kernel-behaviour.md §1, §5), in two variants: mainline (`sd-rtsx`) and the Dec 2021
//! "improve performance for multi block rw" patch (`sd-rtsx-multiseq`, never merged).
//!
//! The MMC core side (dispatcher, `mmc_blk_rw_wait`, the CMD13 after writes) is the legacy
//! path of `driver/mmc/mod.rs`; this file is what happens between `mmc_start_request` and
//! `mmc_request_done`. `sdmmc_request` queues `sd_request` on the driver's workqueue, so
//! every request (and every CMD13) runs in a kworker woken on the submitting core, and
//! each rtsx command batch it sends waits for the controller's interrupt and a wake-up.
//! The host has no CMD23 (no `MMC_CAP_CMD23`): multi-block transfers are open-ended.
//!
//! ```text
//!  mainline, every multi-block request:
//!    kworker ─ CMD18/CMD25 ─ data ─ DMA irq, wake ─ CMD12 (R1 / R1b: card commits, busy)
//!            ─ irq, wake ─ mmc_request_done ─▶ dispatcher: CMD13 (writes) ─ next request
//!  multiseq (SEQ_RW after the first multi-block request):
//!    sequential, same direction:  kworker ─ data only ─ DMA irq, wake ─ done; CMD13 faked
//!    anything else:               kworker ─ CMD12 ─ (busy) ─ irq, wake ─ 50 µs ─ new command
//!    150 ms after the last request (re-armed by each): kworker ─ CMD12 ─ (busy) ─ NORMAL
//! ```
//!
//! Leaves out: the race of the idle work with a request's work (the model serialises
//! them: a request that arrives during the idle stop waits for it), tuning, errors and
//! ACMD22 recovery. Units: ns.

use super::{sched, Mmc, MmcEv};
use crate::device::{self, DevCommand, DevOp};
use crate::driver::DriverCtx;
use crate::engine::SimTime;
use crate::host::block::ReqId;
use crate::host::DriverKind;
use crate::trace::TraceKind;
use crate::workload::Dir;

/// Device tag of the CMD12s this driver sends (never a request id).
pub(crate) const STOP_TAG: u32 = u32::MAX;

/// `msecs_to_jiffies(150)` of `mod_delayed_work(..., rw_idle_work, ...)`.
pub const IDLE_STOP_NS: u64 = 150_000_000;

/// `sd_stop_rw_multi_seq`: `udelay(50)` after the CMD12 before the ring-buffer flush.
const STOP_UDELAY_NS: u64 = 50_000;

/// Write data goes to the card in chunks of one rtsx DMA segment (`max_seg_size`
/// 65536): the card programs from its buffer while later data still crosses the bus.
const WRITE_CHUNK_SECTORS: u32 = 128;

#[derive(Clone, Copy, Debug)]
pub enum RtsxEv {
    /// `sd_request` runs on the kworker for the request.
    Work(ReqId),
    /// The request's data moved and the DMA-done interrupt ran: the kworker goes on.
    DataDone(ReqId),
    /// The stop command's response (R1) or busy end (R1b) is in.
    StopDone,
    /// The idle delayed work fires; stale if the generation moved on.
    Idle(u64),
}

/// What follows a CMD12.
#[derive(Clone, Copy, Debug)]
enum Then {
    /// Mainline: the request is done (`mmc_request_done`).
    Finish(ReqId),
    /// Multiseq: the stream was stopped before this request; issue it as a new command.
    Issue(ReqId),
    /// Multiseq: the idle work stopped the stream.
    Idle,
}

#[derive(Clone, Copy, Debug)]
struct Stream {
    dir: Dir,
    /// `prev_sec_addr + prev_sec_cnt`.
    next_sector: u64,
}

/// The driver's state.
#[derive(Default)]
pub(crate) struct Rtsx {
    /// `rw_mode == SEQ_RW`: the open stream (multiseq only).
    seq: Option<Stream>,
    /// Core of the kworker running `sd_request` (the submitting core).
    work_core: u32,
    /// The pending CMD12 and what follows it.
    then: Option<(Then, u32)>,
    /// The pending CMD12 ended a write stream: wait for the card's busy end.
    stop_wait_busy: bool,
    /// The idle work's stop is in progress: requests wait for it.
    idle_stopping: bool,
    pending: Option<ReqId>,
    /// Generation of the idle delayed work (bumped by cancel / re-arm).
    idle_gen: u64,
    /// The write on the bus, chunk by chunk.
    wr: Option<WriteXfer>,
}

/// A write crossing the bus. The card's receive FIFO holds one chunk beyond the one it is
/// taking in: a chunk that has crossed the bus waits (`held`) until the card has
/// accepted the previous one (SD flow control: busy between blocks while its buffer is
/// full), and the next chunk streams only once the held one went in.
#[derive(Clone, Copy, Debug)]
struct WriteXfer {
    req: ReqId,
    /// Next sector to put on the bus, and sectors left to put there.
    next: u64,
    left: u32,
    /// End of the last chunk's bus transfer.
    bus_end: SimTime,
    /// A chunk is with the card and not yet accepted.
    in_card: bool,
    /// A chunk that crossed the bus and waits for the card.
    held: Option<DevCommand>,
    /// The first chunk opens the stream with the command (else it continues one).
    first_is_command: bool,
}

impl Mmc {
    fn rtsx_multi_seq(&self) -> bool {
        matches!(self.kind, DriverKind::SdRtsx { multi_seq: true })
    }

    pub(crate) fn rtsx_event(&mut self, ctx: &mut impl DriverCtx, ev: RtsxEv) {
        let now = self.now;
        match ev {
            RtsxEv::Work(r) => self.rtsx_work(ctx, now, r),
            RtsxEv::DataDone(r) => self.rtsx_data_done(ctx, now, r),
            RtsxEv::StopDone => self.rtsx_stop_done(ctx, now),
            RtsxEv::Idle(g) => self.rtsx_idle(ctx, now, g),
        }
    }

    /// `mmc_start_request` → `sdmmc_request`: queue `sd_request` (the kworker wakes on
    /// this core). `cancel_delayed_work` of the idle stop happens here.
    pub(crate) fn rtsx_issue(&mut self, ctx: &mut impl DriverCtx, r: ReqId) {
        let now = self.now;
        let core = self.disp_core();
        self.rtsx.work_core = core;
        self.rtsx.idle_gen += 1;
        if self.rtsx.idle_stopping {
            self.rtsx.pending = Some(r);
            return;
        }
        let t = ctx.wake(core, now);
        sched(ctx, t, MmcEv::Rtsx(RtsxEv::Work(r)));
    }

    /// `sd_request` for a read or write: `sd_check_multi_seq` decides between a data-only
    /// continuation, a stop first, or a new command.
    fn rtsx_work(&mut self, ctx: &mut impl DriverCtx, now: SimTime, r: ReqId) {
        let core = self.rtsx.work_core;
        // The request owns the card from here: a stop the stream needs first is
        // hardware time on its critical path.
        ctx.trace(
            now,
            Some(r),
            TraceKind::Started {
                core,
                ctx: crate::trace::Ctx::Task,
            },
        );
        if let Some(s) = self.rtsx.seq {
            let q = ctx.block().req(r);
            let sequential = q.sectors > 1 && q.dir() == s.dir && q.sector == s.next_sector;
            if sequential {
                return self.rtsx_transfer(ctx, now, r, true);
            }
            self.rtsx.seq = None;
            return self.rtsx_stop(ctx, now, core, s.dir, Then::Issue(r));
        }
        self.rtsx_transfer(ctx, now, r, false)
    }

    /// Starts the transfer of `r` at `t`: a new CMD17/18/24/25 (`sd_rw_multi`) or, for a
    /// continuation, the data only (`sd_rw_multi_seq`, `AUTO_READ_3`/`AUTO_WRITE_3`).
    fn rtsx_transfer(&mut self, ctx: &mut impl DriverCtx, t: SimTime, r: ReqId, cont: bool) {
        let (dir, sector, sectors) = {
            let q = ctx.block().req(r);
            (q.dir(), q.sector, q.sectors)
        };
        let multi = sectors > 1;
        let mut t = t;
        if !cont {
            let opcode = match (dir, multi) {
                (Dir::Read, false) => 17,
                (Dir::Read, true) => 18,
                (Dir::Write, false) => 24,
                (Dir::Write, true) => 25,
            };
            t = self.bus_cmds(ctx, t, &[opcode], Some(r));
        }
        if multi && self.rtsx_multi_seq() {
            // rw_mode = SEQ_RW; prev_sec_addr/prev_sec_cnt.
            self.rtsx.seq = Some(Stream {
                dir,
                next_sector: sector + sectors as u64,
            });
        }
        let cmd = DevCommand {
            tag: r,
            op: match dir {
                Dir::Read => DevOp::Read,
                Dir::Write => DevOp::Write,
            },
            lba: sector,
            sectors,
            // SD cards have no reliable write in Linux's eyes (MMC_BLK_REL_WR is eMMC only).
            fua: false,
            hpb: 0,
        };
        let input = if cont {
            device::Input::Continue(cmd)
        } else {
            device::Input::Command(cmd)
        };
        let bytes = sectors as u64 * 512;
        match dir {
            Dir::Read => {
                ctx.sys().device_host_read_bytes += bytes;
                sched(ctx, t, MmcEv::Dev(input));
            }
            Dir::Write => {
                ctx.sys().device_host_write_bytes += bytes;
                debug_assert!(self.rtsx.wr.is_none());
                let _ = input;
                let mut w = WriteXfer {
                    req: r,
                    next: sector,
                    left: sectors,
                    bus_end: t,
                    in_card: false,
                    held: None,
                    first_is_command: !cont,
                };
                let c = self.rtsx_wchunk(ctx, &mut w);
                let at = w.bus_end;
                self.rtsx_wdeliver(ctx, &mut w, c, at);
                let c = self.rtsx_wchunk(ctx, &mut w);
                w.held = c;
                self.rtsx.wr = Some(w);
            }
        }
    }

    /// Puts the next chunk of the write on the bus from `w.bus_end`; None when all sent.
    fn rtsx_wchunk(&mut self, ctx: &mut impl DriverCtx, w: &mut WriteXfer) -> Option<DevCommand> {
        if w.left == 0 {
            return None;
        }
        let n = w.left.min(WRITE_CHUNK_SECTORS);
        let dur = self.bus_rate.ns(n as u64 * 512);
        w.bus_end = self.bus_data(ctx, w.bus_end, dur, Dir::Write, w.req);
        let c = DevCommand {
            tag: w.req,
            op: DevOp::Write,
            lba: w.next,
            sectors: n,
            fua: false,
            hpb: 0,
        };
        w.next += n as u64;
        w.left -= n;
        Some(c)
    }

    /// Hands chunk `c` to the card at `at`: the command with the first chunk of a new
    /// transfer, else a stream continuation.
    fn rtsx_wdeliver(
        &mut self,
        ctx: &mut impl DriverCtx,
        w: &mut WriteXfer,
        c: Option<DevCommand>,
        at: SimTime,
    ) {
        let Some(c) = c else {
            return;
        };
        let input = if w.first_is_command {
            w.first_is_command = false;
            device::Input::Command(c)
        } else {
            device::Input::Continue(c)
        };
        w.in_card = true;
        sched(ctx, at, MmcEv::Dev(input));
    }

    /// Read data streams out of the card (no CMD12 here), then the DMA-done interrupt.
    pub(crate) fn rtsx_read_data(
        &mut self,
        ctx: &mut impl DriverCtx,
        r: ReqId,
        last_ready: SimTime,
    ) {
        let now = self.now;
        ctx.trace(last_ready, Some(r), TraceKind::DeviceDone);
        let bytes = ctx.block().req(r).bytes();
        let (_, end) = self.bus_read_stream(ctx, now, bytes, last_ready, r);
        let t = self.irq_run(ctx, end, self.host.costs.irq_ns, r);
        sched(ctx, t, MmcEv::Rtsx(RtsxEv::DataDone(r)));
    }

    /// The card accepted the write data (it releases busy between blocks as its buffer
    /// frees): the DMA completes and its interrupt runs.
    pub(crate) fn rtsx_write_accepted(&mut self, ctx: &mut impl DriverCtx, r: ReqId, at: SimTime) {
        let mut w = self.rtsx.wr.take().expect("a write on the bus");
        debug_assert!(w.req == r && w.in_card);
        w.in_card = false;
        if w.held.is_some() {
            // The held chunk goes in; the next one streams from then.
            let t = at.max(w.bus_end);
            let c = w.held.take();
            self.rtsx_wdeliver(ctx, &mut w, c, t);
            w.bus_end = t;
            w.held = self.rtsx_wchunk(ctx, &mut w);
            self.rtsx.wr = Some(w);
            return;
        }
        debug_assert_eq!(w.left, 0);
        ctx.trace(at, Some(r), TraceKind::DeviceDone);
        let t = self.irq_run(ctx, at, self.host.costs.irq_ns, r);
        sched(ctx, t, MmcEv::Rtsx(RtsxEv::DataDone(r)));
    }

    /// The kworker wakes from the DMA wait: mainline stops a multi-block transfer; the
    /// multiseq driver leaves the stream open and re-arms the idle stop.
    fn rtsx_data_done(&mut self, ctx: &mut impl DriverCtx, now: SimTime, r: ReqId) {
        let core = self.rtsx.work_core;
        let t = ctx.wake(core, now);
        let (dir, multi) = {
            let q = ctx.block().req(r);
            (q.dir(), q.sectors > 1)
        };
        if multi && !self.rtsx_multi_seq() {
            return self.rtsx_stop(ctx, t, core, dir, Then::Finish(r));
        }
        if !multi && dir == Dir::Write {
            // A single-block write ends by itself: the card programs the block and holds
            // busy (no CMD12 on the bus), which the controller waits out.
            sched(ctx, t, MmcEv::Dev(device::Input::Stop { tag: STOP_TAG }));
            self.rtsx.then = Some((Then::Finish(r), core));
            self.rtsx.stop_wait_busy = true;
            return;
        }
        if self.rtsx.seq.is_some() {
            self.rtsx.idle_gen += 1;
            let g = self.rtsx.idle_gen;
            sched(ctx, t + IDLE_STOP_NS, MmcEv::Rtsx(RtsxEv::Idle(g)));
        }
        // mmc_request_done from the kworker.
        sched(ctx, t, MmcEv::Irq(r));
    }

    /// CMD12 on the bus from `t` closing a `dir` stream; the card commits a write stream
    /// and holds busy (R1b), which the controller waits out before its interrupt.
    fn rtsx_stop(&mut self, ctx: &mut impl DriverCtx, t: SimTime, core: u32, dir: Dir, then: Then) {
        let req = match then {
            Then::Finish(r) | Then::Issue(r) => Some(r),
            Then::Idle => None,
        };
        let end = self.bus_cmds(ctx, t, &[12], req);
        sched(ctx, end, MmcEv::Dev(device::Input::Stop { tag: STOP_TAG }));
        debug_assert!(self.rtsx.then.is_none(), "one CMD12 at a time");
        self.rtsx.then = Some((then, core));
        if dir == Dir::Write {
            self.rtsx.stop_wait_busy = true;
        } else {
            sched(ctx, end, MmcEv::Rtsx(RtsxEv::StopDone));
        }
    }

    /// The device answered a CMD12 (`Done` for `STOP_TAG`) at `at`.
    pub(crate) fn rtsx_stop_answered(&mut self, ctx: &mut impl DriverCtx, at: SimTime) {
        if self.rtsx.stop_wait_busy {
            self.rtsx.stop_wait_busy = false;
            ctx.trace(at, None, TraceKind::DeviceDone);
            sched(ctx, at, MmcEv::Rtsx(RtsxEv::StopDone));
        }
    }

    /// The CMD12 completed: interrupt, the waiting kworker wakes, then what follows.
    fn rtsx_stop_done(&mut self, ctx: &mut impl DriverCtx, now: SimTime) {
        let (then, core) = self.rtsx.then.take().expect("a CMD12 was pending");
        let irq_core = self.host.irq_core;
        let mut t = ctx
            .cpu()
            .run_irq_l(irq_core, now, self.host.costs.irq_ns, "irq handler");
        ctx.trace(t, None, TraceKind::Irq { core: irq_core });
        t = ctx.wake(core, t);
        match then {
            Then::Finish(r) => sched(ctx, t, MmcEv::Irq(r)),
            Then::Issue(r) => {
                // udelay(50) busy-waits, then the ring-buffer flush register write.
                t = ctx.cpu().run_kernel(core, t, STOP_UDELAY_NS, "stop udelay");
                self.rtsx_transfer(ctx, t, r, false);
            }
            Then::Idle => {
                self.rtsx.idle_stopping = false;
                if let Some(r) = self.rtsx.pending.take() {
                    let w = self.rtsx.work_core;
                    let t = ctx.wake(w, t);
                    sched(ctx, t, MmcEv::Rtsx(RtsxEv::Work(r)));
                }
            }
        }
    }

    /// `sd_rw_idle_work`: 150 ms after the last request the stream is stopped.
    fn rtsx_idle(&mut self, ctx: &mut impl DriverCtx, now: SimTime, g: u64) {
        if g != self.rtsx.idle_gen || self.mmc.active.is_some() {
            return;
        }
        let Some(s) = self.rtsx.seq.take() else {
            return;
        };
        // A system_wq kworker on the core that armed it.
        let core = self.rtsx.work_core;
        let t = ctx.wake(core, now);
        self.rtsx.idle_stopping = true;
        self.rtsx_stop(ctx, t, core, s.dir, Then::Idle);
    }

    /// The MMC core's CMD13 after a write (`card_busy_detect`), through `sdmmc_request`
    /// and the kworker. The card is out of busy already (mainline waited out the CMD12's
    /// R1b); in SEQ_RW the driver answers with a fake R1 and nothing goes on the bus.
    /// Returns when the polling context continues.
    pub(crate) fn rtsx_cmd13(
        &mut self,
        ctx: &mut impl DriverCtx,
        core: u32,
        at: SimTime,
        prev: ReqId,
    ) -> SimTime {
        let mut t = ctx
            .cpu()
            .run_kernel(core, at, self.host.mmc.cmd13_ns, "cmd13");
        t = ctx.wake(core, t);
        if self.rtsx.seq.is_none() {
            t = self.bus_cmds(ctx, t, &[13], Some(prev));
            ctx.sys().cmd13 += 1;
            t = self.irq_run(ctx, t, self.host.costs.irq_ns, prev);
            t = ctx.wake(core, t);
        }
        // mmc_request_done → complete(): the waiter wakes.
        ctx.wake(core, t)
    }
}
