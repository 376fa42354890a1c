//! The host: CPU cores and the software costs of each layer of the I/O path, the block
//! layer's limits, the MMC host controller and its bus. A host preset describes a board.
//!
//! Costs are CPU time on a core, a fixed part per request plus, where the work scales
//! with the data (page pinning, DMA mapping), a part per 4 KiB. Leaves out: CPU
//! frequency scaling and idle states other than through the wake-up cost.

pub mod block;
pub mod cpu;
pub mod discard_limits;
pub mod fs_config;
pub mod page_cache;
pub mod ufs_config;
pub mod ufshpb;

use crate::config::{bytes_field, hz_field, ns_field, rate_field, ConfigError};
use serde::Deserialize;

pub use crate::driver::kind::{DriverKind, DRIVER_NAMES};

/// How the MMC core waits for a card to leave the programming state after a write
/// (`card_busy_detect` / `__mmc_poll_for_busy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmd13Mode {
    /// Kernels up to 5.14: CMD13 after CMD13 with no sleep.
    BackToBack,
    /// 5.15 and later: first CMD13 at once, then usleep_range(d, 2d) with d from 32 µs
    /// doubling up to 32 768 µs; each sleep ends at its hard expiry, 2d.
    Backoff,
}

/// The block layer's I/O scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheduler {
    None,
    MqDeadline,
}

/// Software costs of the I/O path, nanoseconds of CPU time.
#[derive(Clone, Debug, PartialEq)]
pub struct HostCosts {
    /// pread/pwrite entry, VFS and block-device direct I/O setup, bio allocation.
    pub syscall_ns: u64,
    /// Direct I/O's per-page submission work for a write (get_user_pages, dio page and
    /// bio building, the filesystem's block mapping), per 4 KiB.
    pub pin_per_4k_ns: u64,
    /// The same for a direct read (`costs.pin_per_4k_read`, default `pin_per_4k`).
    pub pin_per_4k_read_ns: u64,
    /// blk-mq: tag allocation, scheduler insert and merge attempt, per bio.
    pub block_submit_ns: u64,
    /// io_submit / io_uring_enter entry, per call (asynchronous engines).
    pub aio_submit_ns: u64,
    /// io_getevents / CQ reaping, per call.
    pub aio_reap_ns: u64,
    /// Hard interrupt entry, handler and exit.
    pub irq_ns: u64,
    /// Waking a sleeping task: scheduler wake-up, idle exit and context switch.
    pub wakeup_ns: u64,
    /// The same for one of fio's threads waiting on its I/O (`costs.task_wakeup`,
    /// default `wakeup`); `wakeup` stays the kernel's own contexts' (a driver's
    /// dispatcher, a worker, an IRQ thread).
    pub task_wakeup_ns: u64,
    /// Block completion per request: bio end, direct-I/O completion, unpinning.
    pub complete_ns: u64,
    /// System-call return to the thread and fio's own per-I/O work (accounting, next offset).
    pub syscall_return_ns: u64,
    /// fio's verify of 4 KiB read back, by algorithm (`costs.verify_per_4k`, a table of
    /// fio's algorithm names; defaults in `sim::verify::default_cost_per_4k_ns`).
    pub verify_per_4k_ns: [u64; crate::workload::verify_algo::VerifyAlgo::ALL.len()],
}

impl HostCosts {
    /// Takes out the costs above the block layer: the system calls' entry and return,
    /// direct I/O's page pinning and bio building, the asynchronous engines' submit and
    /// reap, waking fio's thread, fio's verify. What stays is the block layer's, the
    /// driver's and the interrupt's (`block_submit`, `irq`, `wakeup`, `complete`), so a
    /// direct I/O's latency is then what a block request sees from its submission to its
    /// end, the part `flashpath serve` simulates under a real client.
    pub fn zero_above_block(&mut self) {
        self.syscall_ns = 0;
        self.pin_per_4k_ns = 0;
        self.pin_per_4k_read_ns = 0;
        self.aio_submit_ns = 0;
        self.aio_reap_ns = 0;
        self.task_wakeup_ns = 0;
        self.syscall_return_ns = 0;
        self.verify_per_4k_ns = [0; crate::workload::verify_algo::VerifyAlgo::ALL.len()];
    }

    /// The CPU cost of fio checking 4 KiB with `algo`.
    pub fn verify_per_4k_ns(&self, algo: crate::workload::verify_algo::VerifyAlgo) -> u64 {
        self.verify_per_4k_ns[algo as usize]
    }
}

/// The block layer's queue limits.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockConfig {
    pub scheduler: Scheduler,
    /// Requests the scheduler may hold (nr_requests); a submitter blocks for a tag beyond.
    pub nr_requests: u32,
    /// Largest request in bytes (max_sectors_kb); larger bios are split, merges stop here.
    pub max_request_bytes: u64,
}

/// The MMC host controller driver's costs and behaviour.
#[derive(Clone, Debug, PartialEq)]
pub struct MmcHostConfig {
    /// Request prep and `pre_req` (DMA map), fixed part.
    pub prep_ns: u64,
    /// DMA map per 4 KiB.
    pub prep_per_4k_ns: u64,
    /// `mmc_start_request`: programming the controller and sending the command.
    pub start_ns: u64,
    /// `post_req` (DMA unmap) and ending the block request, fixed part.
    pub post_ns: u64,
    pub post_per_4k_ns: u64,
    /// A synchronous command through mmc_wait_for_cmd: sending it and processing its
    /// response in the MMC core. Preset as `mmc.cmd13` (CMD13 is the common one); the
    /// erase sequence's CMD35/36/38 (driver/mmc/erase.rs) go through the same call.
    pub cmd13_ns: u64,
    pub cmd13_mode: Cmd13Mode,
    /// The controller raises the transfer-complete interrupt only once the card has
    /// released DAT0 busy (MMC_CAP_WAIT_WHILE_BUSY); otherwise CMD13 polling covers it.
    pub busy_detect: bool,
    /// CMD23 (SET_BLOCK_COUNT) before multi-block transfers instead of CMD12 after.
    pub cmd23: bool,
    /// SDHCI `always_defer_done`: request completion runs in the IRQ thread (a wake-up)
    /// instead of the hard interrupt; with hsq this delays the next request's start.
    pub always_defer_done: bool,
    /// A single-segment host (SDMA, `max_segs == 1`) with CONFIG_MMC_BLOCK_BOUNCE (Linux
    /// <= 4.14): each request's data goes through a contiguous bounce buffer of this many
    /// bytes, copied at `[memory] copy_rate` on the dispatching CPU: a write's in prep
    /// (mmc_blk_rw_rq_prep → mmc_queue_bounce_pre), a read's in post after the transfer
    /// (mmc_queue_bounce_post). Requests are limited to the buffer (mmc_init_queue sets
    /// max_hw_sectors to it). `None`: the host maps the request's pages directly (ADMA).
    pub bounce_bytes: Option<u64>,
    /// `mmc->max_busy_timeout` in ms, the longest R1b busy the host can wait for in
    /// hardware (sdhci: the data timeout counter's maximum over the timeout clock);
    /// 0: the host gives none. Optional (`mmc.max_busy_timeout`); trims on an eMMC
    /// need it: mmc_calc_max_discard and mmc_do_erase's R1b/R1 choice use it.
    pub max_busy_timeout_ms: Option<u32>,
    /// MMC_CAP_NEED_RSP_BUSY: the host needs R1b responses (mmc_do_erase keeps R1b even
    /// when the erase timeout exceeds max_busy_timeout). Optional (`mmc.need_rsp_busy`);
    /// trims on an eMMC need it.
    pub need_rsp_busy: Option<bool>,
}

/// The eMMC command queue engine of the host controller (CQHCI) and its driver
/// (cqhci-core.c). Optional in a host preset (`[cqe]`); required by the mmc-cqe driver.
#[derive(Clone, Debug, PartialEq)]
pub struct CqeHostConfig {
    /// MMC_CAP2_CQE_DCMD: task slot 31 is kept for direct commands (flush), so the
    /// host offers 31 task slots instead of 32.
    pub dcmd: bool,
    /// `cqhci_request`: task descriptor, transfer descriptor and doorbell write, after
    /// the request's prep and DMA map (`mmc.prep`, `mmc.prep_per_4k`).
    pub request_ns: u64,
    /// SSC1.CIT in time (× the internal timer clock of CQCAP): how long the CQE waits
    /// after a queue-status answer with no ready task before it sends the next CMD13.
    pub sqs_idle_ns: u64,
    /// SSC1.CBC: during a data transfer the CQE sends CMD13 (SQS) at data block
    /// BLOCK_CNT − CBC, so it knows the next task when the transfer ends.
    pub sqs_block_counter: u32,
    /// `cqhci_off` before a discard's erase sequence: write CQHCI_HALT to CQHCI_CTL and
    /// poll CQHCI_CTL until the halt bit reads back (with no task in flight, at once),
    /// plus the host's `disable` hook. Optional (`cqe.halt`); trims on mmc-cqe need it.
    pub halt_ns: Option<u64>,
}

impl CqeHostConfig {
    /// Task slots the host offers (`cqe_qdepth`).
    pub fn slots(&self) -> u32 {
        if self.dcmd {
            31
        } else {
            32
        }
    }
}

/// The MMC bus between host controller and device.
#[derive(Clone, Debug, PartialEq)]
pub struct BusConfig {
    /// Bus mode name (HS200, HS400, ...), for reports.
    pub mode: String,
    /// Data rate on the DAT lines, bytes per second.
    pub data_bytes_per_s: u64,
    /// Clock of the CMD line (commands and responses are 48 bits, one bit per clock).
    pub clock_hz: u64,
    /// Clocks from the end of a command to the start of its response (N_CR).
    pub ncr_clocks: u64,
    /// Controller latency per command (FIFO, DMA descriptor fetch), not CPU time.
    pub cmd_overhead_ns: u64,
}

impl BusConfig {
    /// Time of one command and its 48-bit response on the CMD line, rounded up.
    pub fn command_ns(&self) -> u64 {
        let clocks = 48 + self.ncr_clocks + 48;
        self.cmd_overhead_ns + (clocks * 1_000_000_000).div_ceil(self.clock_hz)
    }
    /// Time to move `bytes` on the DAT lines, rounded up.
    pub fn data_ns(&self, bytes: u64) -> u64 {
        crate::engine::transfer_ns(bytes, self.data_bytes_per_s)
    }

    /// Bus mode selection at card init (mmc_select_timing, mmc_sd_init_uhs_card): the
    /// host runs the fastest mode both sides support, so a card whose best mode is
    /// slower than the host's brings the bus down to that mode (its clock and data rate).
    pub fn negotiate(&mut self, card: Option<crate::device::config::CardBusMode>) {
        if let Some(m) = card {
            if m.data_bytes_per_s < self.data_bytes_per_s {
                self.mode = m.name.to_string();
                self.data_bytes_per_s = m.data_bytes_per_s;
                self.clock_hz = self.clock_hz.min(m.clock_hz);
            }
        }
    }
}

/// The Linux version a board runs (`kernel = "5.4"`), where the block layer's
/// behaviour depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Kernel {
    pub major: u32,
    pub minor: u32,
}

impl Kernel {
    pub const fn new(major: u32, minor: u32) -> Kernel {
        Kernel { major, minor }
    }

    fn parse(s: &str) -> Result<Kernel, ConfigError> {
        let bad = || {
            ConfigError::new(
                "kernel",
                format!("'{s}' is not a Linux version MAJOR.MINOR (e.g. \"5.4\") from 2.6 to 7.x"),
            )
        };
        let (a, b) = s.split_once('.').ok_or_else(bad)?;
        let k = Kernel::new(a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
        if k < Kernel::new(2, 6) || k.major > 7 {
            return Err(bad());
        }
        Ok(k)
    }

    /// Linux 4.3 (blk_queue_split): a bio is built as large as its pages allow (up to
    /// BIO_MAX_PAGES) and the block layer splits it at the queue's limits, marking each
    /// piece split off the front REQ_NOMERGE (blktrace: one Q, an X per split, a Q for
    /// each remainder). Before, bio_add_page kept every bio within max_sectors: one Q
    /// per piece, no split.
    pub fn splits_bios(self) -> bool {
        self >= Kernel::new(4, 3)
    }

    /// mm/readahead.c across versions (read in 3.19.8, 4.1.19, 4.4.121, 4.9.0, 4.9.229,
    /// 4.10.17, 4.11-4.18.0, 4.19.1, 4.19.95, 4.20.0 trees):
    /// - before 4.4, `max_sane_readahead` caps the on-demand window and the forced
    ///   readahead at 512 pages (present in 4.1, gone in 4.4; the commit between them
    ///   was not read);
    /// - from 4.10 (Axboe, "mm: don't cap request size based on read-ahead setting") a
    ///   request larger than ra_pages may grow the window to the device's `io_pages`,
    ///   and the forced readahead reads up to max(io_pages, ra_pages) (4.4-4.9:
    ///   ra_pages);
    /// - from 4.19 the "readit" merge is capped at the window's max (size = max, async =
    ///   max/2 past it); before, it adds the next window uncapped.
    pub fn readahead_capped_at_512(self) -> bool {
        self < Kernel::new(4, 4)
    }

    /// See [`Kernel::readahead_capped_at_512`].
    pub fn readahead_io_pages(self) -> bool {
        self >= Kernel::new(4, 10)
    }

    /// See [`Kernel::readahead_capped_at_512`].
    pub fn readahead_merge_capped(self) -> bool {
        self >= Kernel::new(4, 19)
    }

    /// Whether `driver`'s disk uses blk-mq (else the single-queue block layer, a
    /// request_fn drained by the driver: mmcqd for MMC). MMC moved to blk-mq in 4.16
    /// ("mmc: block: Add blk-mq support"); SCSI (UFS) defaulted to scsi-mq in 4.19 and
    /// lost the legacy path in 5.0.
    pub fn blk_mq(self, driver: DriverKind) -> bool {
        match driver.interface() {
            crate::device::config::Interface::Ufs => self >= Kernel::new(4, 19),
            crate::device::config::Interface::Emmc | crate::device::config::Interface::Sd => {
                self >= Kernel::new(4, 16)
            }
        }
    }

    /// Linux 4.10 (__blkdev_direct_IO_simple): a synchronous direct I/O on a block
    /// device of up to BIO_MAX_PAGES is one bio submitted without a plug; before,
    /// do_blockdev_direct_IO plugged every direct I/O.
    pub fn simple_dio(self) -> bool {
        self >= Kernel::new(4, 10)
    }

    /// A direct write with IOCB_DSYNC (O_SYNC, O_DSYNC) is REQ_FUA (dio_bio_write_op,
    /// "avoid the need for a I/O completion work item"; fs/block_dev.c, block/fops.c from
    /// 5.16; read in 5.x and 6.x sources). Taken from the same 4.10 rewrite as
    /// `simple_dio` (an inference: the helper's first release was not checked); before
    /// it the write carried no FUA and only the fsync after it made it durable.
    pub fn dsync_dio_fua(self) -> bool {
        self >= Kernel::new(4, 10)
    }
}

impl std::fmt::Display for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// A host board, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct HostConfig {
    pub name: String,
    pub description: String,
    /// The Linux version it runs.
    pub kernel: Kernel,
    pub cores: u32,
    /// Core that takes the storage controller's interrupt (and runs its kworkers).
    pub irq_core: u32,
    pub default_driver: DriverKind,
    pub costs: HostCosts,
    pub block: BlockConfig,
    pub mmc: MmcHostConfig,
    pub bus: BusConfig,
    /// The UFS host controller and M-PHY link (the optional `[ufs]` section); required
    /// by the `ufs` driver only.
    pub ufs: Option<UfsHostConfig>,
    /// The command queue engine, if the preset describes one (`[cqe]`).
    pub cqe: Option<CqeHostConfig>,
    /// Memory, page cache and writeback (the optional `[memory]` section); required by
    /// buffered jobs (direct=0) only.
    pub memory: Option<MemoryConfig>,
    /// The filesystem of the jobs' files (the optional `[fs]` section); absent: the raw
    /// block device.
    pub fs: Option<FsConfig>,
}

/// Host memory for the page cache and the writeback tunables (`[memory]`).
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryConfig {
    /// RAM of the board.
    pub size_bytes: u64,
    /// Memory the page cache may use for the run (dirtyable memory: free + file pages).
    pub cache_bytes: u64,
    /// vm.dirty_background_ratio, percent of `cache_bytes`.
    pub dirty_background_ratio: u32,
    /// vm.dirty_ratio, percent of `cache_bytes`.
    pub dirty_ratio: u32,
    /// vm.dirty_expire_centisecs, in ns.
    pub dirty_expire_ns: u64,
    /// vm.dirty_writeback_centisecs, in ns.
    pub dirty_writeback_interval_ns: u64,
    /// memcpy rate of one core (copy_to_user / copy_from_user), bytes per second.
    pub copy_bytes_per_s: u64,
    /// Page cache work per 4 KiB page: lookup or allocation and LRU insertion.
    pub page_op_ns: u64,
    /// A buffered write's work per page besides the copy (`write_page_op`, default
    /// `page_op`): lookup and the filesystem's write_begin / write_end.
    pub write_page_op_ns: u64,
    /// Writeback's work per page (`writeback_page_op`, default `page_op`): page lock,
    /// dirty to writeback, the filesystem's block mapping in writepages.
    pub writeback_page_op_ns: u64,
    /// The block device's read_ahead_kb.
    pub read_ahead_kb: u64,
}

// ---- Raw preset structures (TOML) ----

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawHost {
    pub name: String,
    pub kind: String,
    pub description: String,
    /// "MAJOR.MINOR".
    pub kernel: String,
    #[serde(default)]
    pub sources: Vec<String>,
    pub cpu: RawCpu,
    pub costs: RawCosts,
    pub block: RawBlock,
    pub mmc: RawMmc,
    pub bus: RawBus,
    /// Optional: only hosts with a UFS controller have it.
    #[serde(default)]
    pub ufs: Option<RawUfs>,
    #[serde(default)]
    pub cqe: Option<RawCqe>,
    /// Optional: needed by buffered (direct=0) jobs only.
    #[serde(default)]
    pub memory: Option<RawMemory>,
    /// Optional: jobs on an ext4 file with its journal (sim/kernel/journal.rs).
    #[serde(default)]
    pub fs: Option<RawFs>,
    /// The declared estimates (`config/estimates.rs`), read and checked there.
    #[serde(default)]
    pub estimates: Option<toml::Value>,
}

fn default_bg_ratio() -> u32 {
    10
}
fn default_dirty_ratio() -> u32 {
    20
}
fn default_expire() -> String {
    "30s".into()
}
fn default_wb_interval() -> String {
    "5s".into()
}
fn default_ra_kb() -> u64 {
    128
}

/// `[memory]`: the writeback tunables default to Linux's (Documentation/admin-guide/
/// sysctl/vm.rst: dirty_background_ratio 10, dirty_ratio 20, dirty_expire_centisecs
/// 3000, dirty_writeback_centisecs 500); read_ahead_kb to VM_READAHEAD_PAGES (128 KiB).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMemory {
    pub size: String,
    pub cache: String,
    #[serde(default = "default_bg_ratio")]
    pub dirty_background_ratio: u32,
    #[serde(default = "default_dirty_ratio")]
    pub dirty_ratio: u32,
    #[serde(default = "default_expire")]
    pub dirty_expire: String,
    #[serde(default = "default_wb_interval")]
    pub dirty_writeback_interval: String,
    pub copy_rate: String,
    pub page_op: String,
    #[serde(default)]
    pub write_page_op: Option<String>,
    #[serde(default)]
    pub writeback_page_op: Option<String>,
    #[serde(default = "default_ra_kb")]
    pub read_ahead_kb: u64,
}

impl RawMemory {
    fn validate(&self) -> Result<MemoryConfig, ConfigError> {
        let size_bytes = bytes_field("memory.size", &self.size)?;
        let cache_bytes = bytes_field("memory.cache", &self.cache)?;
        if cache_bytes < 64 * 4096 || cache_bytes > size_bytes {
            return Err(ConfigError::new(
                "memory.cache",
                "must be at least 256KiB and at most memory.size",
            ));
        }
        if self.dirty_background_ratio == 0 || self.dirty_background_ratio >= 100 {
            return Err(ConfigError::new(
                "memory.dirty_background_ratio",
                "must be 1..=99",
            ));
        }
        if self.dirty_ratio <= self.dirty_background_ratio || self.dirty_ratio > 100 {
            return Err(ConfigError::new(
                "memory.dirty_ratio",
                "must be above dirty_background_ratio and at most 100",
            ));
        }
        let dirty_expire_ns = ns_field("memory.dirty_expire", &self.dirty_expire)?;
        let dirty_writeback_interval_ns = ns_field(
            "memory.dirty_writeback_interval",
            &self.dirty_writeback_interval,
        )?;
        if dirty_writeback_interval_ns == 0 {
            return Err(ConfigError::new(
                "memory.dirty_writeback_interval",
                "0 (periodic writeback off) is not modelled",
            ));
        }
        let copy_bytes_per_s = rate_field("memory.copy_rate", &self.copy_rate)?;
        if !(1_000_000..=1_000_000_000_000).contains(&copy_bytes_per_s) {
            return Err(ConfigError::new(
                "memory.copy_rate",
                "must be between 1MB/s and 1TB/s",
            ));
        }
        if !(4..=65536).contains(&self.read_ahead_kb) || !self.read_ahead_kb.is_multiple_of(4) {
            return Err(ConfigError::new(
                "memory.read_ahead_kb",
                "must be a multiple of 4 in 4..=65536 (0, readahead off, is not modelled)",
            ));
        }
        Ok(MemoryConfig {
            size_bytes,
            cache_bytes,
            dirty_background_ratio: self.dirty_background_ratio,
            dirty_ratio: self.dirty_ratio,
            dirty_expire_ns,
            dirty_writeback_interval_ns,
            copy_bytes_per_s,
            page_op_ns: cost("memory.page_op", &self.page_op)?,
            write_page_op_ns: cost(
                "memory.write_page_op",
                self.write_page_op.as_ref().unwrap_or(&self.page_op),
            )?,
            writeback_page_op_ns: cost(
                "memory.writeback_page_op",
                self.writeback_page_op.as_ref().unwrap_or(&self.page_op),
            )?,
            read_ahead_kb: self.read_ahead_kb,
        })
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCqe {
    pub dcmd: bool,
    pub request: String,
    pub sqs_idle: String,
    pub sqs_block_counter: u32,
    #[serde(default)]
    pub halt: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCpu {
    pub cores: u32,
    pub irq_core: u32,
    #[serde(default)]
    pub model: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCosts {
    pub syscall: String,
    pub pin_per_4k: String,
    #[serde(default)]
    pub pin_per_4k_read: Option<String>,
    pub block_submit: String,
    pub aio_submit: String,
    pub aio_reap: String,
    pub irq: String,
    pub wakeup: String,
    #[serde(default)]
    pub task_wakeup: Option<String>,
    pub complete: String,
    pub syscall_return: String,
    /// fio verify cost per 4 KiB by algorithm name (`crc32c = "0.8us"`); optional.
    #[serde(default)]
    pub verify_per_4k: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBlock {
    pub scheduler: String,
    pub nr_requests: u32,
    pub max_sectors_kb: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMmc {
    pub driver: String,
    pub prep: String,
    pub prep_per_4k: String,
    pub start: String,
    pub post: String,
    pub post_per_4k: String,
    pub cmd13: String,
    pub cmd13_mode: String,
    pub busy_detect: bool,
    pub cmd23: bool,
    pub always_defer_done: bool,
    #[serde(default)]
    pub bounce_buffer: Option<String>,
    #[serde(default)]
    pub max_busy_timeout: Option<String>,
    #[serde(default)]
    pub need_rsp_busy: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBus {
    pub mode: String,
    pub data_rate: String,
    pub cmd_clock: String,
    pub ncr_clocks: u64,
    pub cmd_overhead: String,
}

/// A CPU cost must be below a second: anything larger is a unit mistake.
pub(crate) fn cost(field: &str, s: &str) -> Result<u64, ConfigError> {
    let v = ns_field(field, s)?;
    if v > 1_000_000_000 {
        return Err(ConfigError::new(
            field,
            format!("{s} is absurd for a CPU cost (over 1 s)"),
        ));
    }
    Ok(v)
}

/// `mmc.max_busy_timeout`: whole milliseconds (the kernel's unit), 0 for none.
fn busy_timeout_ms(s: &str) -> Result<u32, ConfigError> {
    const FIELD: &str = "mmc.max_busy_timeout";
    let ns = ns_field(FIELD, s)?;
    if ns % 1_000_000 != 0 {
        return Err(ConfigError::new(
            FIELD,
            format!("{s} is not whole milliseconds (mmc->max_busy_timeout is in ms)"),
        ));
    }
    let ms = ns / 1_000_000;
    if ms > 3_600_000 {
        return Err(ConfigError::new(
            FIELD,
            format!("{s} is absurd for a host's busy timeout (over 1 h)"),
        ));
    }
    Ok(ms as u32)
}

impl RawHost {
    pub fn validate(self) -> Result<HostConfig, ConfigError> {
        if self.kind != "host" {
            return Err(ConfigError::new(
                "kind",
                format!("is '{}', expected 'host'", self.kind),
            ));
        }
        crate::config::text_field("name", &self.name)?;
        crate::config::text_field("description", &self.description)?;
        let kernel = Kernel::parse(&self.kernel)?;
        if self.cpu.cores == 0 || self.cpu.cores > 256 {
            return Err(ConfigError::new("cpu.cores", "must be 1..=256"));
        }
        if self.cpu.irq_core >= self.cpu.cores {
            return Err(ConfigError::new(
                "cpu.irq_core",
                format!(
                    "core {} does not exist on a {}-core host",
                    self.cpu.irq_core, self.cpu.cores
                ),
            ));
        }
        let c = &self.costs;
        let costs = HostCosts {
            syscall_ns: cost("costs.syscall", &c.syscall)?,
            pin_per_4k_ns: cost("costs.pin_per_4k", &c.pin_per_4k)?,
            pin_per_4k_read_ns: cost(
                "costs.pin_per_4k_read",
                c.pin_per_4k_read.as_ref().unwrap_or(&c.pin_per_4k),
            )?,
            block_submit_ns: cost("costs.block_submit", &c.block_submit)?,
            aio_submit_ns: cost("costs.aio_submit", &c.aio_submit)?,
            aio_reap_ns: cost("costs.aio_reap", &c.aio_reap)?,
            irq_ns: cost("costs.irq", &c.irq)?,
            wakeup_ns: cost("costs.wakeup", &c.wakeup)?,
            task_wakeup_ns: cost(
                "costs.task_wakeup",
                c.task_wakeup.as_ref().unwrap_or(&c.wakeup),
            )?,
            complete_ns: cost("costs.complete", &c.complete)?,
            syscall_return_ns: cost("costs.syscall_return", &c.syscall_return)?,
            verify_per_4k_ns: {
                let mut v = crate::workload::verify_algo::VerifyAlgo::ALL
                    .map(crate::workload::verify_algo::default_cost_per_4k_ns);
                for (k, val) in &c.verify_per_4k {
                    let field = format!("costs.verify_per_4k.{k}");
                    let Some(a) = crate::workload::verify_algo::VerifyAlgo::parse(k) else {
                        return Err(ConfigError::new(
                            &field,
                            "is not one of fio's verify algorithms",
                        ));
                    };
                    v[a as usize] = cost(&field, val)?;
                }
                v
            },
        };
        let scheduler = match self.block.scheduler.as_str() {
            "none" => Scheduler::None,
            "mq-deadline" => Scheduler::MqDeadline,
            other => {
                return Err(ConfigError::new(
                    "block.scheduler",
                    format!("'{other}' is not modelled (none, mq-deadline)"),
                ))
            }
        };
        if self.block.nr_requests == 0 || self.block.nr_requests > 4096 {
            return Err(ConfigError::new("block.nr_requests", "must be 1..=4096"));
        }
        if self.block.max_sectors_kb < 4 || self.block.max_sectors_kb > 65536 {
            return Err(ConfigError::new(
                "block.max_sectors_kb",
                "must be 4..=65536",
            ));
        }
        let m = &self.mmc;
        let default_driver =
            DriverKind::parse(&m.driver).map_err(|e| ConfigError::new("mmc.driver", e))?;
        let cmd13_mode = match m.cmd13_mode.as_str() {
            "back-to-back" => Cmd13Mode::BackToBack,
            "backoff" => Cmd13Mode::Backoff,
            other => {
                return Err(ConfigError::new(
                    "mmc.cmd13_mode",
                    format!(
                        "'{other}' (use back-to-back for kernels <= 5.14, backoff for >= 5.15)"
                    ),
                ))
            }
        };
        let mmc = MmcHostConfig {
            prep_ns: cost("mmc.prep", &m.prep)?,
            prep_per_4k_ns: cost("mmc.prep_per_4k", &m.prep_per_4k)?,
            start_ns: cost("mmc.start", &m.start)?,
            post_ns: cost("mmc.post", &m.post)?,
            post_per_4k_ns: cost("mmc.post_per_4k", &m.post_per_4k)?,
            cmd13_ns: cost("mmc.cmd13", &m.cmd13)?,
            cmd13_mode,
            busy_detect: m.busy_detect,
            cmd23: m.cmd23,
            always_defer_done: m.always_defer_done,
            bounce_bytes: match &m.bounce_buffer {
                None => None,
                Some(v) => {
                    let b = bytes_field("mmc.bounce_buffer", v)?;
                    if !(4096..=1 << 20).contains(&b) || b % 512 != 0 {
                        return Err(ConfigError::new(
                            "mmc.bounce_buffer",
                            "must be 4KiB..=1MiB, a multiple of 512 bytes",
                        ));
                    }
                    if self.block.max_sectors_kb * 1024 > b {
                        return Err(ConfigError::new(
                            "block.max_sectors_kb",
                            format!(
                                "{} KiB exceeds mmc.bounce_buffer ({} KiB): mmc_init_queue limits requests to the bounce buffer",
                                self.block.max_sectors_kb,
                                b / 1024
                            ),
                        ));
                    }
                    if self.memory.is_none() {
                        return Err(ConfigError::new(
                            "mmc.bounce_buffer",
                            "needs a [memory] section: the bounce copy runs at memory.copy_rate",
                        ));
                    }
                    Some(b)
                }
            },
            max_busy_timeout_ms: match &m.max_busy_timeout {
                None => None,
                Some(v) => Some(busy_timeout_ms(v)?),
            },
            need_rsp_busy: m.need_rsp_busy,
        };
        let b = &self.bus;
        let data_bytes_per_s = rate_field("bus.data_rate", &b.data_rate)?;
        if !(1_000_000..=100_000_000_000).contains(&data_bytes_per_s) {
            return Err(ConfigError::new(
                "bus.data_rate",
                "must be between 1MB/s and 100GB/s",
            ));
        }
        let clock_hz = hz_field("bus.cmd_clock", &b.cmd_clock)?;
        if !(100_000..=10_000_000_000).contains(&clock_hz) {
            return Err(ConfigError::new(
                "bus.cmd_clock",
                "must be between 100kHz and 10GHz",
            ));
        }
        if b.ncr_clocks > 1000 {
            return Err(ConfigError::new(
                "bus.ncr_clocks",
                "absurd (over 1000 clocks)",
            ));
        }
        let bus = BusConfig {
            mode: b.mode.clone(),
            data_bytes_per_s,
            clock_hz,
            ncr_clocks: b.ncr_clocks,
            cmd_overhead_ns: cost("bus.cmd_overhead", &b.cmd_overhead)?,
        };
        let cqe = match &self.cqe {
            None => None,
            Some(c) => {
                let sqs_idle_ns = cost("cqe.sqs_idle", &c.sqs_idle)?;
                if sqs_idle_ns == 0 {
                    return Err(ConfigError::new(
                        "cqe.sqs_idle",
                        "must be above 0 (the idle timer counts at least one clock)",
                    ));
                }
                if c.sqs_block_counter > 15 {
                    return Err(ConfigError::new(
                        "cqe.sqs_block_counter",
                        "must be 0..=15 (SSC1.CBC is 4 bits)",
                    ));
                }
                Some(CqeHostConfig {
                    dcmd: c.dcmd,
                    request_ns: cost("cqe.request", &c.request)?,
                    sqs_idle_ns,
                    sqs_block_counter: c.sqs_block_counter,
                    halt_ns: match &c.halt {
                        None => None,
                        Some(v) => Some(cost("cqe.halt", v)?),
                    },
                })
            }
        };
        if default_driver.needs_cqe() && cqe.is_none() {
            return Err(ConfigError::new(
                "mmc.driver",
                format!("'{}' needs a [cqe] section", m.driver),
            ));
        }
        Ok(HostConfig {
            cqe,
            name: self.name,
            description: self.description,
            kernel,
            cores: self.cpu.cores,
            irq_core: self.cpu.irq_core,
            default_driver,
            costs,
            block: BlockConfig {
                scheduler,
                nr_requests: self.block.nr_requests,
                max_request_bytes: self.block.max_sectors_kb * 1024,
            },
            mmc,
            bus,
            ufs: match &self.ufs {
                Some(u) => Some(u.validate(kernel)?),
                None => None,
            },
            memory: match &self.memory {
                Some(m) => Some(m.validate()?),
                None => None,
            },
            fs: match &self.fs {
                Some(f) => Some(f.validate()?),
                None => None,
            },
        })
    }
}

impl HostConfig {
    /// A host whose software costs all vanish except the ones given: for analytic tests.
    pub fn ideal(cores: u32) -> HostConfig {
        HostConfig {
            name: "ideal".into(),
            description: "zero-cost host for analytic tests".into(),
            kernel: Kernel::new(5, 4),
            cores,
            irq_core: 0,
            default_driver: DriverKind::MmcLegacy,
            costs: HostCosts {
                syscall_ns: 0,
                pin_per_4k_ns: 0,
                pin_per_4k_read_ns: 0,
                block_submit_ns: 0,
                aio_submit_ns: 0,
                aio_reap_ns: 0,
                irq_ns: 0,
                wakeup_ns: 0,
                task_wakeup_ns: 0,
                complete_ns: 0,
                syscall_return_ns: 0,
                verify_per_4k_ns: [0; crate::workload::verify_algo::VerifyAlgo::ALL.len()],
            },
            block: BlockConfig {
                scheduler: Scheduler::None,
                nr_requests: 64,
                max_request_bytes: 512 * 1024,
            },
            mmc: MmcHostConfig {
                prep_ns: 0,
                prep_per_4k_ns: 0,
                start_ns: 0,
                post_ns: 0,
                post_per_4k_ns: 0,
                cmd13_ns: 0,
                cmd13_mode: Cmd13Mode::BackToBack,
                busy_detect: true,
                cmd23: true,
                always_defer_done: false,
                bounce_bytes: None,
                max_busy_timeout_ms: None,
                need_rsp_busy: None,
            },
            bus: BusConfig {
                mode: "ideal".into(),
                data_bytes_per_s: 400_000_000,
                clock_hz: 200_000_000,
                ncr_clocks: 0,
                cmd_overhead_ns: 0,
            },
            ufs: None,
            cqe: None,
            memory: None,
            fs: None,
        }
    }
}

pub use fs_config::{FsConfig, RawFs, FS_BLOCK};
pub use ufs_config::{RawUfs, UfsHostConfig};
