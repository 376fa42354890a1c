//! The `--driver` choices: which host driver runs the MMC/SD/UFS controller, and the
//! facts about each that code outside the driver needs (its name, the interface it
//! speaks, whether its queue has poll queues). The driver itself is built from it in
//! `driver::build`.

use crate::device::cq::CqPolicy;

/// Which host driver runs the MMC/SD/UFS controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DriverKind {
    /// The MMC block path without a queue engine (docs/kernel-behaviour.md §1).
    MmcLegacy,
    /// The MMC host software queue (docs/kernel-behaviour.md §2): `depth` slots, at most
    /// `max_in_flight` requests dispatched to it, the next request started from the
    /// completion interrupt, no CMD13 polling. A read or write refused past the limit
    /// waits on the hardware queue's dispatch list, where it merges no more, until a
    /// completion reruns the queue. With `burst_in_flight` > 0 (the dynamic
    /// depth of ~v6.7), the limit rises to `burst_in_flight` while the requests at the
    /// head of the slots are at least two 4 KiB writes.
    MmcHsq {
        depth: u32,
        max_in_flight: u32,
        burst_in_flight: u32,
    },
    /// The UFS host controller driver (ufshcd, docs/kernel-behaviour.md §7): SCSI commands in
    /// UTP transfer request slots, a doorbell per command, up to `nutrs` outstanding in
    /// the device, completion from the UTRCS interrupt. Needs the host's `[ufs]` section
    /// and a device with `interface = "ufs"`.
    Ufs,
    /// The UFS driver with the Host Performance Booster (ufshpb.c, `host/ufshpb.rs`):
    /// `control` is the mode the driver runs (`Device`: `ufs-hpb`, the 2021 series as
    /// measured; `Host`: `ufs-hpb-hcm`, host control mode of HPB 2.0). Needs a device
    /// preset with an `[hpb]` section.
    UfsHpb {
        control: crate::device::hpb::HpbControl,
    },
    /// The UFS driver in multi-circular queue mode (UFSHCI 4.0; Linux 6.3 and later,
    /// drivers/ufs/core/ufs-mcq.c, `driver/ufs/mcq.rs`): a submission and completion
    /// queue per CPU, each submission queue's tail pointer its doorbell, up to
    /// min(the host's MAC, the device's bQueueDepth) commands outstanding instead of
    /// the single doorbell's 32.
    UfsMcq,
    /// The eMMC 5.1 command queue engine (CQHCI, docs/kernel-behaviour.md §3): tasks queued in
    /// the device with CMD44/45, executed with CMD46/47 in the order the device's
    /// `policy` chooses; needs the host preset's `[cqe]` section.
    MmcCqe { policy: CqPolicy },
    /// The Realtek rtsx PCIe SD host (rtsx_pci_sdmmc) under the legacy MMC block path
    /// (docs/kernel-behaviour.md §5): open-ended CMD18/CMD25 closed by CMD12 after every request
    /// (`multi_seq = false`, mainline), or with the Dec 2021 multi-block sequential patch
    /// (`multi_seq = true`): sequential same-direction requests continue the open stream
    /// and CMD12 is sent on a direction change, a non-sequential access, a single-block
    /// command, or 150 ms after the last request.
    SdRtsx { multi_seq: bool },
}

/// Every driver's `--driver` name, in the order listings give them.
pub const DRIVER_NAMES: [&str; 13] = [
    "mmc-legacy",
    "mmc-hsq",
    "mmc-hsq-v6",
    "mmc-hsq-limit2",
    "mmc-hsq-dynamic",
    "mmc-cqe",
    "mmc-cqe-oldest-first",
    "ufs",
    "ufs-hpb",
    "ufs-hpb-hcm",
    "ufs-mcq",
    "sd-rtsx",
    "sd-rtsx-multiseq",
];

impl DriverKind {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "mmc-legacy" => Ok(DriverKind::MmcLegacy),
            // As merged in v5.7: 64 slots; queue_rq refuses only when in_flight > 2, so
            // three requests get through although the comment says two.
            "mmc-hsq" => Ok(DriverKind::MmcHsq {
                depth: 64,
                max_in_flight: 3,
                burst_in_flight: 0,
            }),
            // As measured in the published series (the v4-v7 patches of Oct-Nov 2019,
            // whose cover letters carry the figures of docs/published-results.md §1): HSQ_NUM_SLOTS 32,
            // and queue_rq already refused only when in_flight > 2, so three requests
            // get through although the comment and the cover letter say two.
            "mmc-hsq-v6" => Ok(DriverKind::MmcHsq {
                depth: 32,
                max_in_flight: 3,
                burst_in_flight: 0,
            }),
            // The limit the comment states: 32 slots, at most two requests in flight
            // (queue_rq refusing at in_flight >= 2). No kernel shipped it; it shows what
            // the third request in flight does.
            "mmc-hsq-limit2" => Ok(DriverKind::MmcHsq {
                depth: 32,
                max_in_flight: 2,
                burst_in_flight: 0,
            }),
            // ~v6.7 ("mmc: hsq: dynamic adjustment of hsq->depth", Unisoc, 2023): hsq_depth
            // is HSQ_NORMAL_DEPTH 2, or HSQ_PERFORMANCE_DEPTH 5 when the pump finds at
            // least two 4 KiB writes at the head of the slots; queue_rq refuses when
            // in_flight > hsq_depth, so 3 or 6 get through.
            "mmc-hsq-dynamic" => Ok(DriverKind::MmcHsq {
                depth: 64,
                max_in_flight: 3,
                burst_in_flight: 6,
            }),
            "ufs" => Ok(DriverKind::Ufs),
            "ufs-hpb" => Ok(DriverKind::UfsHpb {
                control: crate::device::hpb::HpbControl::Device,
            }),
            "ufs-hpb-hcm" => Ok(DriverKind::UfsHpb {
                control: crate::device::hpb::HpbControl::Host,
            }),
            "ufs-mcq" => Ok(DriverKind::UfsMcq),
            // The device reports ready reads before writes (see device::cq::CqPolicy).
            "mmc-cqe" => Ok(DriverKind::MmcCqe {
                policy: CqPolicy::ReadsFirst,
            }),
            "mmc-cqe-oldest-first" => Ok(DriverKind::MmcCqe {
                policy: CqPolicy::OldestFirst,
            }),
            "sd-rtsx" => Ok(DriverKind::SdRtsx { multi_seq: false }),
            "sd-rtsx-multiseq" => Ok(DriverKind::SdRtsx { multi_seq: true }),
            _ => Err(format!(
                "unknown driver '{s}' (available: {})",
                DRIVER_NAMES.join(", ")
            )),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            DriverKind::MmcLegacy => "mmc-legacy",
            DriverKind::MmcHsq {
                burst_in_flight: 1..,
                ..
            } => "mmc-hsq-dynamic",
            DriverKind::MmcHsq {
                max_in_flight: 2, ..
            } => "mmc-hsq-limit2",
            DriverKind::MmcHsq { depth: 32, .. } => "mmc-hsq-v6",
            DriverKind::MmcHsq { .. } => "mmc-hsq",
            DriverKind::MmcCqe {
                policy: CqPolicy::ReadsFirst,
            } => "mmc-cqe",
            DriverKind::MmcCqe {
                policy: CqPolicy::OldestFirst,
            } => "mmc-cqe-oldest-first",
            DriverKind::Ufs => "ufs",
            DriverKind::UfsHpb {
                control: crate::device::hpb::HpbControl::Device,
            } => "ufs-hpb",
            DriverKind::UfsHpb {
                control: crate::device::hpb::HpbControl::Host,
            } => "ufs-hpb-hcm",
            DriverKind::UfsMcq => "ufs-mcq",
            DriverKind::SdRtsx { multi_seq: false } => "sd-rtsx",
            DriverKind::SdRtsx { multi_seq: true } => "sd-rtsx-multiseq",
        }
    }
    /// Whether the driver's blk-mq queue has poll queues (a `.poll` op and HCTX_TYPE_POLL
    /// maps), so that hipri I/O completes by polling instead of its interrupt
    /// (sim/kernel/iopoll.rs). None of the modelled drivers has them: mmc_mq_ops has no `.poll`
    /// in any kernel (drivers/mmc/core/queue.c, including hsq and CQE, which share it;
    /// rtsx SD cards too), and ufshcd's `.mq_poll = ufshcd_poll` comes with MCQ in 6.3:
    /// `ufs-mcq` has them (one poll queue by default, ufs-mcq.c `poll_queues`), and a
    /// hipri job on it is refused, its polling not being modelled (`driver/ufs/mcq.rs`).
    pub fn poll_queues(self) -> bool {
        match self {
            DriverKind::MmcLegacy
            | DriverKind::MmcHsq { .. }
            | DriverKind::MmcCqe { .. }
            | DriverKind::SdRtsx { .. }
            | DriverKind::Ufs
            | DriverKind::UfsHpb { .. } => false,
            DriverKind::UfsMcq => true,
        }
    }
    /// Whether the driver runs the eMMC command queue engine (the host preset's `[cqe]`
    /// section).
    pub fn needs_cqe(self) -> bool {
        matches!(self, DriverKind::MmcCqe { .. })
    }
    /// The UFS host controller driver, with or without HPB.
    pub fn is_ufs(self) -> bool {
        matches!(
            self,
            DriverKind::Ufs | DriverKind::UfsHpb { .. } | DriverKind::UfsMcq
        )
    }
    /// The device interface the driver talks to.
    pub fn interface(self) -> crate::device::config::Interface {
        match self {
            DriverKind::MmcLegacy | DriverKind::MmcHsq { .. } | DriverKind::MmcCqe { .. } => {
                crate::device::config::Interface::Emmc
            }
            DriverKind::Ufs | DriverKind::UfsHpb { .. } | DriverKind::UfsMcq => {
                crate::device::config::Interface::Ufs
            }
            DriverKind::SdRtsx { .. } => crate::device::config::Interface::Sd,
        }
    }
}
