//! What a run measured, per job thread and for the whole system, with fio's meaning:
//! submission latency (slat, asynchronous engines only), completion latency (clat, from
//! submission to the moment the thread sees the completion) and total latency (lat),
//! bytes and I/Os per direction, and bandwidth per 500 ms interval (fio's bwavgtime).
//! Units: nanoseconds, bytes.

use crate::workload::Dir;
use flashpath_hist::{IoStat, LatHist};

/// fio samples bandwidth and IOPS every 500 ms by default (bwavgtime, iopsavgtime).
pub const BW_INTERVAL_NS: u64 = 500_000_000;

/// One direction of one job thread.
#[derive(Clone, Debug, Default)]
pub struct DirStats {
    pub bytes: u64,
    pub ios: u64,
    pub slat: LatHist,
    pub clat: LatHist,
    pub lat: LatHist,
    /// Bandwidth and IOPS per 500 ms window since the job's measurement start.
    pub windows: Windows,
}

/// Completions per `BW_INTERVAL_NS` window, streamed: the window I/Os complete in now
/// and the bandwidth (KiB/s) and IOPS samples of the windows before it, so the record
/// stays the same size however long the run. A window with no completion before the
/// last one's is a zero sample, as fio takes it.
#[derive(Clone, Debug, Default)]
pub struct Windows {
    /// Index of the open window, and what completed in it.
    pub open: usize,
    pub open_bytes: u64,
    pub open_ios: u64,
    /// Samples of the closed windows (0..open).
    pub bw_kib: IoStat,
    pub iops: IoStat,
}

impl Windows {
    fn bw_kib_per_s(bytes: u64) -> u64 {
        bytes * 1_000_000_000 / BW_INTERVAL_NS / 1024
    }

    fn per_s(ios: u64) -> u64 {
        ios * 1_000_000_000 / BW_INTERVAL_NS
    }

    fn record(&mut self, slot: usize, bytes: u64) {
        while slot > self.open {
            self.bw_kib.add(Self::bw_kib_per_s(self.open_bytes));
            self.iops.add(Self::per_s(self.open_ios));
            self.open += 1;
            self.open_bytes = 0;
            self.open_ios = 0;
        }
        self.open_bytes += bytes;
        self.open_ios += 1;
    }

    /// The bandwidth and IOPS samples of the first `full` windows (fio samples only
    /// complete ones: the open window counts if it is one of them). Every completion
    /// falls inside the job's runtime, so the closed windows all are.
    pub fn samples(&self, full: usize) -> (IoStat, IoStat) {
        if full == 0 {
            return Default::default();
        }
        debug_assert!(self.open <= full, "{} windows past {full}", self.open);
        let (mut bw, mut iops) = (self.bw_kib, self.iops);
        if self.open_ios > 0 && self.open < full {
            bw.add(Self::bw_kib_per_s(self.open_bytes));
            iops.add(Self::per_s(self.open_ios));
        }
        (bw, iops)
    }
}

impl DirStats {
    #[inline(always)]
    pub(crate) fn record(
        &mut self,
        since_start_ns: u64,
        bytes: u64,
        slat: Option<u64>,
        clat: u64,
        lat: u64,
    ) {
        self.bytes += bytes;
        self.ios += 1;
        if let Some(s) = slat {
            self.slat.record(s);
        }
        self.clat.record(clat);
        self.lat.record(lat);
        self.windows
            .record((since_start_ns / BW_INTERVAL_NS) as usize, bytes);
    }
}

/// One job thread's results.
#[derive(Clone, Debug, Default)]
pub struct JobStats {
    /// Index of the job in the run's job list.
    pub job: usize,
    pub name: String,
    /// Read and write.
    pub dirs: [DirStats; 2],
    /// Trims (BLKDISCARD), fio's third direction.
    pub trim: DirStats,
    /// Simulated time the job measured (after ramp), ns.
    pub runtime_ns: u64,
    /// When the job started and finished, simulated ns since the run began.
    pub start_ns: u64,
    pub end_ns: u64,
    /// Time the thread spent asleep or running, in context switches (wake-ups).
    pub ctx: u64,
    /// Integral of the number of this thread's I/Os in flight over time (ns × I/Os),
    /// measured independently of the latency samples (for Little's law).
    pub outstanding_area: u128,
    /// Distribution of in-flight depth at submission, fio's iodepth_level buckets
    /// (1, 2, 4, 8, 16, 32, >=64), counted per submitted I/O.
    pub depth_hist: [u64; 7],
    /// I/Os per submitting system call, fio's iodepth_submit buckets
    /// (0, 1-4, 5-8, 9-16, 17-32, 33-64, >64), counted per call.
    pub submit_hist: [u64; 7],
    /// I/Os reaped per completion wait, the same buckets (iodepth_complete).
    pub complete_hist: [u64; 7],
    /// CPU time spent by this thread (system side), ns.
    pub sys_ns: u64,
    /// CPU time spent by this thread in user space, ns, where the model counts it
    /// (fio's own work under the null engine, fio's verify).
    pub usr_ns: u64,
    /// Where the time of its requests went (see [`Span`]), over all its I/Os: the
    /// merge of `dir_spans`, made when the run ends.
    pub spans: Spans,
    /// The same per fio direction (read, write, trim; see [`ddir_index`]), `None` for a
    /// direction without a measured I/O or request. An I/O's pre, hw and post go to its direction;
    /// a request's Q2G, G2I and I2D to the direction of its first bio, its D2C and Q2C
    /// to each bio's, as btt would count them with a filter on the direction.
    pub dir_spans: [Option<Spans>; 3],
    /// Latencies of the fsync/fdatasync calls fio issued (fsync=N, fdatasync=N), for
    /// fio's `sync` statistics: a histogram with exact count, sum, min and max, so it
    /// stays the same size however many calls a run makes.
    pub sync_lat: LatHist,
    /// A scripted job's I/O latencies (submission to return), in script order; empty
    /// for other jobs. It grows with the script the caller holds, not with the run.
    pub script_lat_ns: Vec<u64>,
    /// The job's first verify failure (fio's EILSEQ), if it verifies and one failed.
    pub verify_failure: Option<crate::sim::VerifyFailure>,
    /// Runtime per direction (read, write) where it is not `runtime_ns`: a verifying
    /// job's write phase and verify phase (fio's update_runtime per direction).
    pub dir_runtime_ns: [Option<u64>; 2],
    /// The error that ended the job (fio's td_verror), if one did.
    pub error: Option<JobError>,
    /// The errors counted (fio's total_err_count, first_error: sim/jobs/errors.rs).
    pub errors: crate::sim::errors::ErrorCount,
    /// The last td_verror, kept when a non-fatal error is cleared (fio's td->verror,
    /// which its report shows with first_error).
    pub last_verror: Option<JobError>,
    /// latency_target: the queue depth fio's latency profile settled on (sim/jobs/lat_target.rs).
    pub lat_depth: Option<u32>,
    /// fio's steady-state detection, for a job with `ss_dur` (`sim/jobs/steadystate.rs`).
    pub steadystate: Option<crate::sim::steadystate::SteadyStateResult>,
    /// fio's fill_device: the length of the write that failed with ENOSPC and ended the
    /// job (`sim/jobs/fill_device.rs`), if one did. fio counts it among the issued writes
    /// (`total_ios`, the depth histograms) but not in bytes or latencies.
    pub enospc_write: Option<u64>,
    /// How busy the host's cores and the hardware were over the job's measured window
    /// (`sim/occupancy.rs`); `None` if the job measured nothing (it ended in its ramp).
    pub occupancy: Option<Occupancy>,
}

/// Busy time of the system's servers over one job's measured window (from the end of
/// its ramp to its end), whoever the work was for: the operational laws' view of a
/// run. With `ios` I/Os of mean size `size` measured in the window, the busy time per
/// I/O of a server is its demand, and `size / demand` bounds the throughput whatever
/// the queue depth (a server is busy at most all of the window).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Occupancy {
    /// The window's length, ns (= the job's `runtime_ns`).
    pub window_ns: u64,
    /// CPU time each core spent on any work (tasks, kernel threads, interrupts), ns,
    /// at most `window_ns`.
    pub core_busy_ns: Vec<u64>,
    /// Time some block request was on the hardware (between its start there and the
    /// interrupt that finished it: the union of the requests' hw spans), ns.
    pub hw_busy_ns: u64,
}

/// An error that ends a job as fio's td_verror does: the job stops issuing, its report
/// carries `err=` and the run fails.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobError {
    /// The errno fio records (EIO = 5 for a missed minimum rate).
    pub errno: i32,
    /// The fio function that failed (`check_min_rate`).
    pub func: &'static str,
    /// What fio logs when it happens (log_err).
    pub message: String,
}

impl JobStats {
    /// The spans of direction `d` (a [`ddir_index`]), to record into.
    #[inline]
    pub(crate) fn spans_of(&mut self, d: usize) -> &mut Spans {
        self.dir_spans[d].get_or_insert_with(Spans::default)
    }

    /// Makes `spans` the merge of the directions' spans (at the end of the run).
    pub(crate) fn close_spans(&mut self) {
        let mut all = Spans::default();
        for s in self.dir_spans.iter().flatten() {
            all.merge(s);
        }
        self.spans = all;
    }
}

/// The fio direction of an I/O as an index into per-direction arrays: a trim (a write
/// to the block layer) is fio's third direction.
#[inline]
pub fn ddir_index(dir: Dir, trim: bool) -> usize {
    if trim {
        2
    } else {
        dir.index()
    }
}

/// Counters of the whole system.
#[derive(Clone, Debug, Default)]
pub struct SystemStats {
    pub sim_end_ns: u64,
    pub events: u64,
    pub requests: u64,
    pub merges: u64,
    pub cmd13: u64,
    /// Time the eMMC/SD bus (command or data line) was busy; 0 on UFS (see `link_busy_ns`).
    pub bus_busy_ns: u64,
    /// Time each direction of the UFS link was busy (host→device, device→host): the
    /// M-PHY lanes are full duplex. 0 on eMMC and SD.
    pub link_busy_ns: [u64; 2],
    pub core_busy_ns: Vec<u64>,
    /// Bytes the device was asked to write by the host.
    pub device_host_write_bytes: u64,
    pub device_host_read_bytes: u64,
    /// The page cache, writeback and flushes (buffered jobs and the sync family).
    pub cache: crate::sim::CacheStats,
    /// The device's own counters at the end of the run (including any preconditioning).
    pub device: crate::device::DeviceStats,
    /// The disk's block-layer accounting (/sys/block/<disk>/stat) as fio samples it:
    /// when the reported jobs are set up (after any preconditioning) and when the last
    /// of them finishes. fio's disk statistics are the difference.
    pub disk_start: crate::host::block::DiskStats,
    pub disk_end: crate::host::block::DiskStats,
    /// The UFS HPB driver's counters (`ufs-hpb`, `ufs-hpb-hcm`), including any
    /// preconditioning.
    pub hpb: Option<crate::host::ufshpb::HpbHostStats>,
    /// The allocation-unit FTL's own counters, when that is the device's FTL.
    pub au: Option<crate::device::allocation_unit::AuStats>,
}

/// Everything a run produced.
#[derive(Clone, Debug)]
pub struct RunResult {
    pub jobs: Vec<JobStats>,
    pub system: SystemStats,
}

/// The spans of a request's life (docs/architecture.md, The request path; docs/published-results.md §3), in ns.
///
/// The white paper's split of each I/O, from the simulated timestamps:
/// - `Pre`: system call entry to the start of the I/O's first request on the hardware
///   (the command sent, or the task queued in the command queue engine): VFS, block
///   layer, scheduler wait, driver preparation.
/// - `Hw`: that start to the interrupt that finished its last request: bus, device,
///   and any wait in the device's queue.
/// - `Post`: that interrupt to the moment the thread has the result (fio's clat end):
///   interrupt handling, DMA unmap, request end, wake-up, system call return.
///
/// pre + hw + post is fio's total latency (`lat`) of the I/O.
///
/// blktrace's spans as `btt` computes them: per block request Q2G (its first bio queued
/// → request allocated: a wait for a tag), G2I (allocated → inserted), I2D (inserted →
/// dispatched to the driver); per bio D2C (its request dispatched → completed, counted
/// once for every bio the request carries, as btt does) and Q2C (queued → its request
/// completed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Span {
    Pre,
    Hw,
    Post,
    Q2g,
    G2i,
    I2d,
    D2c,
    Q2c,
}

impl Span {
    pub const ALL: [Span; 8] = [
        Span::Pre,
        Span::Hw,
        Span::Post,
        Span::Q2g,
        Span::G2i,
        Span::I2d,
        Span::D2c,
        Span::Q2c,
    ];

    /// The name in reports (`jobs[i].flashpath.spans.NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Span::Pre => "pre",
            Span::Hw => "hw",
            Span::Post => "post",
            Span::Q2g => "q2g",
            Span::G2i => "g2i",
            Span::I2d => "i2d",
            Span::D2c => "d2c",
            Span::Q2c => "q2c",
        }
    }
}

/// Distributions of every [`Span`] of one job (measured I/Os only: after ramp_time).
#[derive(Clone, Debug, Default)]
pub struct Spans {
    pub hist: [LatHist; 8],
}

impl Spans {
    #[inline]
    pub fn record(&mut self, span: Span, ns: u64) {
        self.hist[span as usize].record(ns);
    }

    #[inline]
    pub(crate) fn record_io(&mut self, pre: u64, hw: u64, post: u64) {
        self.record(Span::Pre, pre);
        self.record(Span::Hw, hw);
        self.record(Span::Post, post);
    }

    #[inline]
    pub(crate) fn record_request(&mut self, q2g: u64, g2i: u64, i2d: u64) {
        self.record(Span::Q2g, q2g);
        self.record(Span::G2i, g2i);
        self.record(Span::I2d, i2d);
    }

    pub fn get(&self, span: Span) -> &LatHist {
        &self.hist[span as usize]
    }

    pub fn merge(&mut self, other: &Spans) {
        for (a, b) in self.hist.iter_mut().zip(&other.hist) {
            a.merge(b);
        }
    }

    /// The paper's software share: (pre + post) / (pre + hw + post), from the means;
    /// None before any I/O was measured.
    pub fn software_share(&self) -> Option<f64> {
        let m = |s: Span| self.get(s).mean();
        let total = m(Span::Pre) + m(Span::Hw) + m(Span::Post);
        (self.get(Span::Pre).count() > 0 && total > 0.0)
            .then(|| (m(Span::Pre) + m(Span::Post)) / total)
    }
}
