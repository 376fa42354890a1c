//! What a run measured, per job thread and for the whole system, with fio's meaning:
//! submission latency (slat, asynchronous engines only), completion latency (clat, from
//! submission to the moment the thread sees the completion) and total latency (lat),
//! bytes and I/Os per direction, and bandwidth per 500 ms interval (fio's bwavgtime).
//! Units: nanoseconds, bytes.

use flashpath_hist::LatHist;

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
    /// Bytes completed in each 500 ms interval since the job's measurement start.
    pub bytes_per_interval: Vec<u64>,
    /// I/Os completed in each 500 ms interval.
    pub ios_per_interval: Vec<u64>,
}

impl DirStats {
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
        let slot = (since_start_ns / BW_INTERVAL_NS) as usize;
        if self.bytes_per_interval.len() <= slot {
            self.bytes_per_interval.resize(slot + 1, 0);
            self.ios_per_interval.resize(slot + 1, 0);
        }
        self.bytes_per_interval[slot] += bytes;
        self.ios_per_interval[slot] += 1;
    }
}

/// One job thread's results.
#[derive(Clone, Debug)]
pub struct JobStats {
    /// Index of the job in the run's job list.
    pub job: usize,
    pub name: String,
    /// Read and write.
    pub dirs: [DirStats; 2],
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
    /// Latency of each fsync/fdatasync fio issued (fsync=N, fdatasync=N), for fio's
    /// `sync` statistics.
    pub sync_lat_ns: Vec<u64>,
}

/// Counters of the whole system.
#[derive(Clone, Debug, Default)]
pub struct SystemStats {
    pub sim_end_ns: u64,
    pub events: u64,
    pub requests: u64,
    pub merges: u64,
    pub cmd13: u64,
    pub bus_busy_ns: u64,
    pub core_busy_ns: Vec<u64>,
    /// Bytes the device was asked to write by the host.
    pub device_host_write_bytes: u64,
    pub device_host_read_bytes: u64,
    /// The page cache, writeback and flushes (buffered jobs and the sync family).
    pub cache: crate::sim::CacheStats,
}

/// Everything a run produced.
#[derive(Clone, Debug)]
pub struct RunResult {
    pub jobs: Vec<JobStats>,
    pub system: SystemStats,
}
