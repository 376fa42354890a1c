//! UFS multi-circular queue mode (UFSHCI 4.0; Linux 6.3 and later, drivers/ufs/core/
//! ufs-mcq.c), `--driver ufs-mcq`: what changes from the single-doorbell driver.
//!
//! ```text
//!  CPU n ─▶ its submission queue: UTRD at the tail, tail pointer written (the doorbell)
//!        ─▶ the controller fetches it ─▶ COMMAND UPIU ... RESPONSE (as in mod.rs)
//!        ─▶ the completion queue entry ─▶ its interrupt ─▶ ufshcd_mcq_poll_cqe_lock
//! ```
//!
//! - Depth: ufshcd_mcq_decide_queue_depth makes nutrs the smaller of the controller's
//!   MAC (host `[ufs] mcq_mac`; ufs-qcom: "Qualcomm HC supports up to 64") and the
//!   device's bQueueDepth (device `queue_depth`); one tag stays reserved for device
//!   management commands (can_queue = nutrs - UFSHCD_NUM_RESERVED), shared by all
//!   queues (host_tagset). The single doorbell's limit of 32 slots (a 5-bit NUTRS,
//!   one 32-bit UTRLDBR) does not apply.
//! - Queues: one read/write queue per CPU (rw_queues defaults to the CPU count) and one
//!   poll queue (poll_queues 1); a request goes on its submitting CPU's queue, whose
//!   tail-pointer write costs what the doorbell write did (`[ufs] doorbell`).
//! - Completion: each completion queue raises its own interrupt (ESI, or the shared
//!   line's MCQ_CQ_EVENT_STATUS), handled by ufshcd_mcq_poll_cqe_lock with the per-request
//!   work of the single-doorbell path (`[ufs] completion`).
//!
//! Leaves out: the interrupt vectors' CPU affinity (every completion interrupt is taken
//! on the host's `irq_core`, as the single-doorbell one; upstream ufs-qcom sets none),
//! polled completion on the poll queue (a hipri job is refused), a queue per CPU
//! contending for the controller's fetch engine.

use super::Ufs;
use crate::device::DeviceConfig;
use crate::host::{DriverKind, HostConfig, Kernel};

/// The first Linux with MCQ (ufs-mcq.c).
pub const MCQ_KERNEL: Kernel = Kernel::new(6, 3);
/// Tags kept for device management commands (ufshcd.h UFSHCD_NUM_RESERVED).
pub const NUM_RESERVED: u32 = 1;
/// BLKDEV_MAX_RQ: the cap on an elevator's nr_requests (blk_mq_init_sched).
const BLKDEV_MAX_RQ: u32 = 128;

/// What `ufs-mcq` needs: a kernel with MCQ, the host's MAC, the device's bQueueDepth.
pub(crate) fn check(
    kind: DriverKind,
    host: &HostConfig,
    device: &DeviceConfig,
) -> Result<(), String> {
    if kind != DriverKind::UfsMcq {
        return Ok(());
    }
    if host.kernel < MCQ_KERNEL {
        return Err(format!(
            "driver 'ufs-mcq' needs Linux {MCQ_KERNEL} or later (ufs-mcq.c); host '{}' runs {} (--set host.kernel=6.6 for a newer phone)",
            host.name, host.kernel
        ));
    }
    if host.ufs.as_ref().is_some_and(|u| u.mcq_mac.is_none()) {
        return Err(format!(
            "driver 'ufs-mcq' needs the controller's MAC: mcq_mac in the [ufs] section of host preset '{}' (--set host.ufs.mcq_mac=64)",
            host.name
        ));
    }
    if device.ufs_queue_depth.is_none() {
        return Err(format!(
            "driver 'ufs-mcq' needs the device's bQueueDepth: queue_depth in device preset '{}'",
            device.name
        ));
    }
    Ok(())
}

/// hba->nutrs in MCQ mode: min(MAC, bQueueDepth).
pub fn queue_depth(host: &HostConfig, device: &DeviceConfig) -> u32 {
    let mac = host.ufs.as_ref().and_then(|u| u.mcq_mac).expect("checked");
    mac.min(device.ufs_queue_depth.expect("checked"))
}

impl Ufs {
    /// The blk-mq tags of the queue (`nr`: the host preset's nr_requests, which
    /// describes the single-doorbell queue): in MCQ mode the shared tag set's depth,
    /// can_queue, with "none"; twice that up to BLKDEV_MAX_RQ with an elevator.
    pub fn tags(&self, nr: u32) -> u32 {
        if !self.mcq {
            return nr;
        }
        let can_queue = self.cfg.nutrs - NUM_RESERVED;
        if self.direct_issue {
            can_queue
        } else {
            2 * can_queue.min(BLKDEV_MAX_RQ)
        }
    }
}
