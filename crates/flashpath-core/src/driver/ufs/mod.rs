//! The UFS host driver (linux drivers/scsi/ufs/ufshcd.c) and its M-PHY/UniPro link.
//!
//! ```text
//!  blk-mq ──queue_rq──▶ ufshcd_queuecommand (UTRD + COMMAND UPIU + PRDT) ─▶ doorbell (MMIO)
//!                         │ host controller fetches the descriptor (hc_fetch)
//!   host→device lane ═════╪═ COMMAND UPIU ═══════════════ DATA OUT (write, after RTT) ══▶
//!   device→host lane ◀════╪═ READY_TO_TRANSFER ═ DATA IN (read) ═ RESPONSE UPIU ═════════
//!                         ▼
//!  UTRCS interrupt (per completion, or aggregated) ─▶ __ufshcd_transfer_req_compl
//!     ─▶ block completion inline (submitter shares the IRQ core's cache) or by IPI
//! ```
//!
//! Mechanism (docs/kernel-behaviour.md §7, ufshcd.c): the block layer hands a request to
//! `ufshcd_queuecommand`, which takes a free UTP transfer request slot (32 on UFSHCI 2.1
//! hosts), builds the descriptor and rings the doorbell: one MMIO write per command, no
//! waiting for earlier commands, up to `nutrs` outstanding. With scheduler `none` blk-mq
//! issues directly from the submitting thread; with an elevator the hardware queue is run
//! by a kblockd worker. The link is full duplex: each direction is its own resource.
//! Reads: COMMAND UPIU in, the device's read, DATA IN UPIUs and the RESPONSE out.
//! Writes: COMMAND UPIU in; the device grants READY_TO_TRANSFER while fewer than
//! `max_rtt` (bMaxNumOfRTT) writes are between RTT and acceptance (its flow control: it
//! takes write data only as it can accept it, so writes are accepted one at a time in
//! the order their RTTs go out); DATA OUT in; the device accepts the data (write buffer)
//! and sends the RESPONSE. Each RESPONSE sets the request's completion; the interrupt
//! (one per completion unless aggregation is on) runs the completion.
//!
//! Discards (fio trims) are SCSI UNMAP (sd.c sd_setup_unmap_cmnd, one block descriptor
//! per request): a COMMAND UPIU, a READY_TO_TRANSFER and DATA OUT of the 24-byte
//! parameter list, the device unmaps the range, then the RESPONSE.
//! Leaves out: task management, query requests, clock gating/hibern8, auto-hibern8,
//! error handling, the legacy (non-mq) SCSI request path of 4.4 kernels, several DATA
//! IN streams interleaved by the device (each read's data goes out in one piece).
//! Units: ns, bytes.

use super::*;
use crate::host::ufs_config::UfsHostConfig;
use crate::host::Scheduler;
use std::collections::VecDeque;

/// UPIU transaction codes (JEDEC UFS 2.1 §10.5), used as `TraceKind::Command` opcodes.
pub mod upiu {
    /// The parameter list of an UNMAP with one block descriptor (SBC-3 §5.28): an
    /// 8-byte header and one 16-byte descriptor, sent as DATA OUT.
    pub const UNMAP_PARAM_BYTES: u64 = 24;
    pub const COMMAND: u8 = 0x01;
    pub const RESPONSE: u8 = 0x21;
    pub const READY_TO_TRANSFER: u8 = 0x31;
}

#[derive(Debug)]
pub(super) enum UfsEv {
    /// The kblockd worker runs the hardware queue.
    DispStart,
    /// `ufshcd_queuecommand` has rung the doorbell for the request.
    Doorbell { req: ReqId, core: u32 },
    /// The COMMAND UPIU has arrived in the device.
    CmdArrived(ReqId),
    /// The device has the read's data (starting now; all of it by `last_ready`).
    ReadReady { req: ReqId, last_ready: SimTime },
    /// The device accepted the write's data.
    WriteAccepted(ReqId),
    /// The RESPONSE UPIU has arrived: the controller sets the completion (UTRCS).
    Response(ReqId),
    /// The interrupt-aggregation timer of generation `gen` expired.
    AggrTimeout(u32),
    /// The block completion of the request has run.
    Done(ReqId),
    /// The HPB driver's work items and timers (`sim/ufs_hpb.rs`).
    Hpb(super::ufs_hpb::HpbEv),
}

#[derive(Default)]
pub(super) struct UfsState {
    /// Core of the kblockd worker running the hardware queue, if any.
    dispatcher: Option<u32>,
    /// UTP transfer request slots taken (queuecommand started, completion not yet run).
    pub(super) slots: u32,
    /// The HPB driver, with `ufs-hpb` and `ufs-hpb-hcm` (`sim/ufs_hpb.rs`).
    pub(super) hpb: Option<Box<super::ufs_hpb::HpbState>>,
    /// Host→device and device→host directions of the link.
    h2d: FifoResource,
    d2h: FifoResource,
    /// Writes between READY_TO_TRANSFER and acceptance.
    rtt: u32,
    /// Writes whose COMMAND arrived, waiting for an RTT, in arrival order.
    rtt_wait: VecDeque<ReqId>,
    /// Completions waiting for the aggregated interrupt.
    aggr_pending: Vec<ReqId>,
    aggr_gen: u32,
    /// Set while a completion ends a block request (a queue rerun from there is async).
    in_completion: bool,
}

impl UfsState {
    pub(super) fn new(hpb: Option<Box<super::ufs_hpb::HpbState>>) -> UfsState {
        UfsState {
            hpb,
            ..UfsState::default()
        }
    }
}

impl Sim {
    /// Busy time so far of the UFS link's (host→device, device→host) directions.
    pub fn ufs_link_busy_ns(&self) -> (u64, u64) {
        (self.ufs.h2d.busy_ns(), self.ufs.d2h.busy_ns())
    }

    pub(super) fn ufs_cfg(&self) -> &UfsHostConfig {
        self.cfg
            .host
            .ufs
            .as_ref()
            .expect("Sim::new checked the [ufs] section")
    }

    pub(super) fn ufs_handle(&mut self, ev: UfsEv) {
        let now = self.now;
        match ev {
            UfsEv::DispStart => self.ufs_disp_next(now),
            UfsEv::Doorbell { req, core } => self.ufs_doorbell(req, core),
            UfsEv::CmdArrived(r) => self.ufs_cmd_arrived(r),
            UfsEv::ReadReady { req, last_ready } => self.ufs_read_data(req, last_ready),
            UfsEv::WriteAccepted(r) => self.ufs_write_accepted(r),
            UfsEv::Response(r) => self.ufs_response(r),
            UfsEv::Hpb(e) => self.ufs_hpb_event(e),
            UfsEv::AggrTimeout(g) => {
                if g == self.ufs.aggr_gen && !self.ufs.aggr_pending.is_empty() {
                    self.ufs_irq();
                }
            }
            UfsEv::Done(r) => {
                self.ufs.slots -= 1;
                self.ufs.in_completion = true;
                self.req_end(r);
                self.ufs.in_completion = false;
                // SCSI's end of request reruns the queue (asynchronously, kblockd) when
                // requests wait for a slot.
                if self.block.has_queued() {
                    let core = self.cfg.host.irq_core;
                    self.ufs_run_async(core);
                }
            }
        }
    }

    /// blk-mq runs the hardware queue after an insert on `core`: directly from the
    /// submitting context without an elevator (`blk_mq_try_issue_directly`), else (and
    /// for reruns from a completion) from a kblockd worker.
    pub(super) fn ufs_kick(&mut self, core: u32) {
        if !self.block.has_queued() {
            return;
        }
        if self.cfg.host.block.scheduler == Scheduler::None && !self.ufs.in_completion {
            // Direct issue: this context dispatches its own request, no hand-off.
            if self.ufs.slots < self.ufs_cfg().nutrs {
                self.ufs_queuecommand(core, self.now, false);
            }
            return;
        }
        self.ufs_run_async(core);
    }

    fn ufs_run_async(&mut self, core: u32) {
        if self.ufs.dispatcher.is_some() || self.ufs.slots >= self.ufs_cfg().nutrs {
            return;
        }
        self.ufs.dispatcher = Some(core);
        let t = self.wake(core, self.now);
        self.q.push(t, Ev::Ufs(UfsEv::DispStart));
    }

    /// The kblockd worker's dispatch loop: one request per `queue_rq` while slots last.
    fn ufs_disp_next(&mut self, at: SimTime) {
        let Some(core) = self.ufs.dispatcher else {
            return;
        };
        if self.ufs.slots >= self.ufs_cfg().nutrs || !self.ufs_queuecommand(core, at, true) {
            self.ufs.dispatcher = None;
        }
    }

    /// A driver's own request (HPB) is issued from its worker on `core` at `at`.
    pub(super) fn ufs_issue_from(&mut self, core: u32, at: SimTime) {
        self.ufs_queuecommand(core, at, true);
    }

    /// `scsi_queue_rq` → `ufshcd_queuecommand` on `core` from `at`: takes a slot,
    /// builds UTRD/UPIU/PRDT and rings the doorbell, from the submitting thread (direct
    /// issue) or from kblockd (`kernel`). False if nothing was queued.
    fn ufs_queuecommand(&mut self, core: u32, at: SimTime, kernel: bool) -> bool {
        let Some(r) = self.block.dispatch(at) else {
            return false;
        };
        if self.trace.is_some() {
            if kernel {
                self.blk_rq(at, r, crate::trace::BlkAction::Issue, core);
            } else {
                self.blk_rq_direct(at, r, core);
            }
        }
        self.ufs.slots += 1;
        assert!(
            self.ufs.slots <= self.ufs_cfg().nutrs,
            "more commands than UTP slots"
        );
        let bytes = self.ufs_data_bytes(r);
        let hpb = self.ufs_hpb_prep(r);
        let u = self.ufs_cfg();
        let cost = u.queuecommand_ns
            + u.queuecommand_per_4k_ns * bytes.div_ceil(4096)
            + u.doorbell_ns
            + hpb;
        let end = if kernel {
            self.cpu.run_kernel(core, at, cost, "queuecommand")
        } else {
            self.cpu.run_l(core, at, cost, "queuecommand")
        };
        self.q.push(end, Ev::Ufs(UfsEv::Doorbell { req: r, core }));
        true
    }

    /// The doorbell is rung: the controller fetches the descriptor and sends the COMMAND
    /// UPIU; the dispatcher (if any) goes on with the next request.
    fn ufs_doorbell(&mut self, r: ReqId, core: u32) {
        let now = self.now;
        let in_flight = self.ufs.slots;
        self.tr(
            now,
            Some(r),
            TraceKind::DriverQueued {
                queued: 0,
                in_flight,
            },
        );
        self.tr(
            now,
            Some(r),
            TraceKind::Started {
                core,
                ctx: Ctx::Task,
            },
        );
        let u = self.ufs_cfg();
        let (fetch, cmd_ns) = (u.hc_fetch_ns, u.upiu_ns(0));
        let (s, e) = self.ufs.h2d.book(now + fetch, cmd_ns);
        self.tr(
            s,
            Some(r),
            TraceKind::Command {
                opcode: upiu::COMMAND,
                end: e,
            },
        );
        if self.trace.is_some() {
            self.ufs_hpb_trace(r, s, e);
        }
        self.q.push(e, Ev::Ufs(UfsEv::CmdArrived(r)));
        if self.ufs.dispatcher == Some(core) {
            self.ufs_disp_next(now);
        }
    }

    /// Bytes of the command's data: an UNMAP carries its parameter list, not the range.
    fn ufs_data_bytes(&self, r: ReqId) -> u64 {
        let q = self.block.req(r);
        if q.discard {
            upiu::UNMAP_PARAM_BYTES
        } else {
            q.bytes()
        }
    }

    fn ufs_dev_command(&self, r: ReqId) -> DevCommand {
        let q = self.block.req(r);
        let cmd = DevCommand {
            tag: r,
            op: match q.dir() {
                // SYNCHRONIZE CACHE (sd_setup_flush_cmnd): no data.
                _ if q.flush => DevOp::Flush,
                // UNMAP (sd_setup_unmap_cmnd): one descriptor for the request's range.
                _ if q.discard => DevOp::Discard,
                Dir::Read => DevOp::Read,
                Dir::Write => DevOp::Write,
            },
            lba: q.sector,
            sectors: q.sectors,
            fua: self.req_fua(r),
            hpb: 0,
        };
        self.ufs_hpb_command(r, cmd)
    }

    /// The COMMAND UPIU is in the device: a read goes to the device at once; a write
    /// waits for a READY_TO_TRANSFER.
    fn ufs_cmd_arrived(&mut self, r: ReqId) {
        let now = self.now;
        let cmd = self.ufs_dev_command(r);
        let bytes = cmd.sectors as u64 * 512;
        match cmd.op {
            DevOp::Read | DevOp::HpbRead => {
                self.sys.device_host_read_bytes += bytes;
                self.device(device::Input::Command(cmd));
            }
            DevOp::ReadBuffer => self.device(device::Input::Command(cmd)),
            // A flush or a WRITE BUFFER carries no data: no READY_TO_TRANSFER.
            DevOp::Flush | DevOp::WriteBuffer => self.device(device::Input::Command(cmd)),
            _ => {
                if cmd.op == DevOp::Write {
                    self.sys.device_host_write_bytes += bytes;
                }
                if self.ufs.rtt < self.ufs_cfg().max_rtt {
                    self.ufs_grant_rtt(r, now);
                } else {
                    self.ufs.rtt_wait.push_back(r);
                }
            }
        }
    }

    /// The device sends READY_TO_TRANSFER for each data segment of write `r` from `at`;
    /// the controller answers each with a DATA OUT UPIU; the device has the command and
    /// its data when the last one is in.
    fn ufs_grant_rtt(&mut self, r: ReqId, at: SimTime) {
        self.ufs.rtt += 1;
        let cmd = self.ufs_dev_command(r);
        let mut left = self.ufs_data_bytes(r);
        let (seg_max, rtt_ns) = (
            self.ufs_cfg().max_data_segment_bytes,
            self.ufs_cfg().upiu_ns(0),
        );
        let mut t = at;
        while left > 0 {
            let seg = left.min(seg_max);
            left -= seg;
            let (s, e) = self.ufs.d2h.book(t, rtt_ns);
            self.tr(
                s,
                Some(r),
                TraceKind::Command {
                    opcode: upiu::READY_TO_TRANSFER,
                    end: e,
                },
            );
            let dur = self.ufs_cfg().upiu_ns(seg);
            let (ds, de) = self.ufs.h2d.book(e, dur);
            self.tr(
                ds,
                Some(r),
                TraceKind::Data {
                    dir: Dir::Write,
                    end: de,
                },
            );
            t = de;
        }
        self.q.push(t, Ev::Dev(device::Input::Command(cmd)));
    }

    /// Routed device output: a read's data is ready from `at`.
    pub(super) fn ufs_on_read_ready(&mut self, r: ReqId, at: SimTime, last_ready: SimTime) {
        self.ufs_hpb_read_buffer_data(r);
        self.q
            .push(at, Ev::Ufs(UfsEv::ReadReady { req: r, last_ready }));
    }

    /// Routed device output: a write was accepted (or a command failed) at `at`.
    pub(super) fn ufs_on_done(&mut self, r: ReqId, at: SimTime) {
        self.q.push(at, Ev::Ufs(UfsEv::WriteAccepted(r)));
    }

    /// DATA IN UPIUs stream the read's data to the host (the last 4 KiB cannot leave
    /// before it is ready), then the RESPONSE UPIU.
    fn ufs_read_data(&mut self, r: ReqId, last_ready: SimTime) {
        let now = self.now;
        self.tr(last_ready, Some(r), TraceKind::DeviceDone);
        let mut left = self.block.req(r).bytes();
        let seg_max = self.ufs_cfg().max_data_segment_bytes;
        let mut t = now;
        while left > 0 {
            let seg = left.min(seg_max);
            left -= seg;
            let u = self.ufs_cfg();
            let dur = u.upiu_ns(seg);
            let mut ready = t;
            if left == 0 {
                // The segment cannot end before its last 4 KiB, ready at `last_ready`,
                // has crossed the link.
                let chunk = crate::engine::transfer_ns(seg.min(4096), u.link_bytes_per_s);
                ready = ready.max((last_ready + chunk).saturating_sub(dur));
            }
            let (s, e) = self.ufs.d2h.book(ready, dur);
            self.tr(
                s,
                Some(r),
                TraceKind::Data {
                    dir: Dir::Read,
                    end: e,
                },
            );
            t = e;
        }
        self.ufs_response_upiu(r, t);
    }

    /// The device accepted write `r`: the next waiting write gets its RTT; the RESPONSE
    /// goes out.
    fn ufs_write_accepted(&mut self, r: ReqId) {
        let now = self.now;
        self.tr(now, Some(r), TraceKind::DeviceDone);
        let q = self.block.req(r);
        if q.dir() == Dir::Write && !q.flush && !q.passthrough {
            self.ufs.rtt -= 1;
            if let Some(w) = self.ufs.rtt_wait.pop_front() {
                self.ufs_grant_rtt(w, now);
            }
        }
        self.ufs_response_upiu(r, now);
    }

    fn ufs_response_upiu(&mut self, r: ReqId, at: SimTime) {
        let dur = self.ufs_cfg().upiu_ns(0);
        let (s, e) = self.ufs.d2h.book(at, dur);
        self.tr(
            s,
            Some(r),
            TraceKind::Command {
                opcode: upiu::RESPONSE,
                end: e,
            },
        );
        self.q.push(e, Ev::Ufs(UfsEv::Response(r)));
    }

    /// The controller clears the request's doorbell bit and raises UTRCS, or counts it
    /// for the aggregated interrupt.
    fn ufs_response(&mut self, r: ReqId) {
        let now = self.now;
        self.ufs.aggr_pending.push(r);
        match self.ufs_cfg().intr_aggr {
            None => self.ufs_irq(),
            Some((counter, timeout)) => {
                if self.ufs.aggr_pending.len() as u32 >= counter {
                    self.ufs_irq();
                } else if self.ufs.aggr_pending.len() == 1 {
                    self.ufs.aggr_gen += 1;
                    let g = self.ufs.aggr_gen;
                    self.q.push(now + timeout, Ev::Ufs(UfsEv::AggrTimeout(g)));
                }
            }
        }
    }

    /// `ufshcd_intr` → `ufshcd_transfer_req_compl`: every completed request is completed
    /// from the hard interrupt; blk-mq ends it here when the submitting core shares the
    /// IRQ core's cache, else on the submitting core through an IPI.
    fn ufs_irq(&mut self) {
        let now = self.now;
        let irq_core = self.cfg.host.irq_core;
        let mut t = self
            .cpu
            .run_irq_l(irq_core, now, self.cfg.host.costs.irq_ns, "irq handler");
        let done = std::mem::take(&mut self.ufs.aggr_pending);
        // A new aggregation window starts with the next completion.
        self.ufs.aggr_gen += 1;
        for &r in &done {
            self.block.mark_irq(r, now);
            self.hw_busy.end(r, now, now);
            self.tr(t, Some(r), TraceKind::Irq { core: irq_core });
        }
        for &r in &done {
            let bytes = self.block.req(r).bytes();
            let u = self.ufs_cfg();
            let (drv, llc) = (
                u.completion_ns + u.completion_per_4k_ns * bytes.div_ceil(4096),
                u.llc_cores,
            );
            t = self.cpu.run_irq_l(irq_core, t, drv, "ufs completion");
            t = self.ufs_hpb_complete(r, irq_core, t);
            let end = self.end_cost(r);
            let req_cpu = self.block.req(r).cpu;
            let fin = if req_cpu / llc == irq_core / llc {
                t = self.cpu.run_irq_l(irq_core, t, end, "post+complete");
                t
            } else {
                let ipi = self.cfg.host.costs.irq_ns;
                self.cpu.run_irq_l(req_cpu, t, ipi + end, "ipi+complete")
            };
            self.q.push(fin, Ev::Ufs(UfsEv::Done(r)));
        }
        let mut done = done;
        done.clear();
        self.ufs.aggr_pending = done;
    }
}
