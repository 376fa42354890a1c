//! Typed values of the options a block-device simulator models.
//!
//! Units: sizes in bytes, times in nanoseconds, rates in bytes/s or I/Os per second.

/// Index of a data direction in fio's per-direction arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ddir {
    Read = 0,
    Write = 1,
    Trim = 2,
}

impl Ddir {
    pub const ALL: [Ddir; 3] = [Ddir::Read, Ddir::Write, Ddir::Trim];
}

/// A value per data direction, in fio's read, write, trim order.
pub type PerDir<T> = [T; 3];

/// `rw=` mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwMode {
    Read,
    Write,
    Trim,
    RandRead,
    RandWrite,
    RandTrim,
    /// `rw` / `readwrite`: sequential mix.
    ReadWrite,
    RandRw,
    TrimWrite,
    RandTrimWrite,
}

impl RwMode {
    pub fn from_fio(s: &str) -> Option<RwMode> {
        Some(match s {
            "read" => RwMode::Read,
            "write" => RwMode::Write,
            "trim" => RwMode::Trim,
            "randread" => RwMode::RandRead,
            "randwrite" => RwMode::RandWrite,
            "randtrim" => RwMode::RandTrim,
            "rw" | "readwrite" => RwMode::ReadWrite,
            "randrw" => RwMode::RandRw,
            "trimwrite" => RwMode::TrimWrite,
            "randtrimwrite" => RwMode::RandTrimWrite,
            _ => return None,
        })
    }

    /// fio's name (as in the normal output's job header).
    pub fn as_fio(self) -> &'static str {
        match self {
            RwMode::Read => "read",
            RwMode::Write => "write",
            RwMode::Trim => "trim",
            RwMode::RandRead => "randread",
            RwMode::RandWrite => "randwrite",
            RwMode::RandTrim => "randtrim",
            RwMode::ReadWrite => "rw",
            RwMode::RandRw => "randrw",
            RwMode::TrimWrite => "trimwrite",
            RwMode::RandTrimWrite => "randtrimwrite",
        }
    }

    pub fn is_random(self) -> bool {
        matches!(
            self,
            RwMode::RandRead
                | RwMode::RandWrite
                | RwMode::RandTrim
                | RwMode::RandRw
                | RwMode::RandTrimWrite
        )
    }

    pub fn reads(self) -> bool {
        matches!(
            self,
            RwMode::Read | RwMode::RandRead | RwMode::ReadWrite | RwMode::RandRw
        )
    }

    pub fn writes(self) -> bool {
        matches!(
            self,
            RwMode::Write
                | RwMode::RandWrite
                | RwMode::ReadWrite
                | RwMode::RandRw
                | RwMode::TrimWrite
                | RwMode::RandTrimWrite
        )
    }

    pub fn trims(self) -> bool {
        matches!(
            self,
            RwMode::Trim | RwMode::RandTrim | RwMode::TrimWrite | RwMode::RandTrimWrite
        )
    }
}

/// The `:N` suffix of `rw=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RwModifier {
    #[default]
    None,
    /// Sequential modes: bytes added after each I/O (negative = backwards, holes).
    SeqAddBytes(i64),
    /// Random modes: a new random offset only every N I/Os.
    RandomEvery(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rw {
    pub mode: RwMode,
    pub modifier: RwModifier,
}

impl Default for Rw {
    fn default() -> Self {
        Rw {
            mode: RwMode::Read,
            modifier: RwModifier::None,
        }
    }
}

/// `rw_sequencer=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RwSequencer {
    #[default]
    Sequential,
    Identical,
}

/// `ioengine=`. Engines a block-device simulator models are named; the others keep
/// their name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum IoEngine {
    #[default]
    Psync,
    Sync,
    Vsync,
    Pvsync,
    Pvsync2,
    Libaio,
    IoUring,
    Posixaio,
    Mmap,
    Null,
    Nbd,
    /// Any other engine name fio accepts (cpuio, net, sg, ...), or one it cannot load.
    Other(String),
}

impl IoEngine {
    pub fn from_fio(s: &str) -> IoEngine {
        match s {
            "psync" => IoEngine::Psync,
            "sync" => IoEngine::Sync,
            "vsync" => IoEngine::Vsync,
            "pvsync" => IoEngine::Pvsync,
            "pvsync2" => IoEngine::Pvsync2,
            "libaio" => IoEngine::Libaio,
            "io_uring" => IoEngine::IoUring,
            "posixaio" => IoEngine::Posixaio,
            "mmap" => IoEngine::Mmap,
            "null" => IoEngine::Null,
            "nbd" => IoEngine::Nbd,
            other => IoEngine::Other(other.to_string()),
        }
    }

    pub fn as_fio(&self) -> &str {
        match self {
            IoEngine::Psync => "psync",
            IoEngine::Sync => "sync",
            IoEngine::Vsync => "vsync",
            IoEngine::Pvsync => "pvsync",
            IoEngine::Pvsync2 => "pvsync2",
            IoEngine::Libaio => "libaio",
            IoEngine::IoUring => "io_uring",
            IoEngine::Posixaio => "posixaio",
            IoEngine::Mmap => "mmap",
            IoEngine::Null => "null",
            IoEngine::Nbd => "nbd",
            IoEngine::Other(s) => s,
        }
    }

    /// How the engine submits I/O.
    pub fn submission(&self) -> Submission {
        match self {
            IoEngine::Psync
            | IoEngine::Sync
            | IoEngine::Vsync
            | IoEngine::Pvsync
            | IoEngine::Pvsync2
            | IoEngine::Mmap => Submission::Sync,
            IoEngine::Libaio | IoEngine::IoUring | IoEngine::Posixaio | IoEngine::Nbd => {
                Submission::Async {
                    sync_trim: !matches!(self, IoEngine::Nbd),
                }
            }
            IoEngine::Null => Submission::Async { sync_trim: false },
            IoEngine::Other(_) => Submission::Sync,
        }
    }

    /// fio's `FIO_SYNCIO`: the engine completes each I/O inside the submit call.
    pub fn is_sync(&self) -> bool {
        self.submission() == Submission::Sync
    }
}

/// Submission semantics of an engine (fio 3.33's engines/*.c; docs/engines-and-rates.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submission {
    /// `FIO_SYNCIO`: iodepth is capped at 1 (the configured value is still reported);
    /// no submission latency is sampled.
    Sync,
    /// Queued I/O with a real depth. `sync_trim`: trims are executed synchronously
    /// (`FIO_ASYNCIO_SYNC_TRIM`).
    Async { sync_trim: bool },
}

/// One `bssplit` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BsSplitEntry {
    pub bs_bytes: u64,
    /// Share in percent, after fio's filling of empty entries.
    pub percent: u32,
}

/// The block size of one direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockSizeSpec {
    Fixed(u64),
    /// `bsrange`: sizes in [min, max], multiples of min unless `bs_unaligned`.
    Range {
        min_bytes: u64,
        max_bytes: u64,
    },
    /// `bssplit`, sorted by percentage as fio keeps it.
    Split(Vec<BsSplitEntry>),
}

impl BlockSizeSpec {
    pub fn min_bytes(&self) -> u64 {
        match self {
            BlockSizeSpec::Fixed(b) => *b,
            BlockSizeSpec::Range { min_bytes, .. } => *min_bytes,
            BlockSizeSpec::Split(v) => v.iter().map(|e| e.bs_bytes).min().unwrap_or(0),
        }
    }
    pub fn max_bytes(&self) -> u64 {
        match self {
            BlockSizeSpec::Fixed(b) => *b,
            BlockSizeSpec::Range { max_bytes, .. } => *max_bytes,
            BlockSizeSpec::Split(v) => v.iter().map(|e| e.bs_bytes).max().unwrap_or(0),
        }
    }
}

/// One zone of `random_distribution=zoned:` / `zoned_abs:`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ZoneSpec {
    pub access_percent: u32,
    /// `zoned`: percent of the region; `zoned_abs`: bytes.
    pub size: u64,
}

/// `random_distribution=`.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum RandomDistribution {
    #[default]
    Random,
    Zipf {
        theta: f64,
        center: Option<f64>,
    },
    Pareto {
        h: f64,
        center: Option<f64>,
    },
    /// `normal:dev%[:center]`.
    Normal {
        dev_percent: f64,
        center: Option<f64>,
    },
    /// Sizes in percent of the region.
    Zoned(Vec<ZoneSpec>),
    /// Sizes in bytes.
    ZonedAbs(Vec<ZoneSpec>),
}

/// `fadvise_hint=` (fio's `enum fio_fadvise_hint` of fio 3.33: F_ADV_NONE, F_ADV_TYPE,
/// F_ADV_RANDOM, F_ADV_SEQUENTIAL).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FadviseHint {
    /// `0`: no posix_fadvise call.
    None,
    /// `1` (the default): POSIX_FADV_RANDOM for a random workload, POSIX_FADV_SEQUENTIAL
    /// otherwise.
    #[default]
    Type,
    /// `random`: POSIX_FADV_RANDOM.
    Random,
    /// `sequential`: POSIX_FADV_SEQUENTIAL.
    Sequential,
}

/// `sync=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncMode {
    #[default]
    None,
    /// O_SYNC.
    Sync,
    /// O_DSYNC.
    Dsync,
}

/// `unified_rw_reporting=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnifiedRw {
    #[default]
    None,
    Mixed,
    Both,
}

/// `size`, `offset`, `offset_increment`, `io_size`: bytes, percent of the device, or
/// a number of zones (`zonemode=zbd`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeSpec {
    Bytes(u64),
    Percent(u32),
    Zones(u32),
}

impl Default for SizeSpec {
    fn default() -> Self {
        SizeSpec::Bytes(0)
    }
}

/// `random_generator=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RandomGenerator {
    #[default]
    Tausworthe,
    Lfsr,
    Tausworthe64,
}

/// `thinktime_blocks_type=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ThinktimeBlocksType {
    #[default]
    Complete,
    Issue,
}

/// `rate_process=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RateProcess {
    #[default]
    Linear,
    Poisson,
}

/// `io_submit_mode=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoSubmitMode {
    #[default]
    Inline,
    Offload,
}

/// Output formats of `--output-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    Normal,
    Json,
    JsonPlus,
    Terse,
}
