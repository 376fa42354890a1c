//! fio's verify options as a job states them: the `verify=` algorithms (their names and
//! the CPU cost of checking 4 KiB with each when a host preset names none) and the
//! job's typed options (`VerifyConfig`). The job-thread side of verify is
//! `sim/jobs/verify.rs`.
//! Units: ns, bytes.

/// fio's `verify=` algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VerifyAlgo {
    Md5,
    Crc64,
    Crc32c,
    Crc32,
    Crc16,
    Crc7,
    Xxhash,
    Sha1,
    Sha256,
    Sha512,
    Sha3_224,
    Sha3_256,
    Sha3_384,
    Sha3_512,
    /// The header alone (fio's `meta`, VERIFY_HDR_ONLY): no checksum of the data.
    Meta,
    /// No header: every block must hold the verify_pattern (VERIFY_PATTERN_NO_HDR).
    Pattern,
    /// Checks nothing (`verify=null`).
    Null,
}

impl VerifyAlgo {
    pub const ALL: [VerifyAlgo; 17] = [
        VerifyAlgo::Md5,
        VerifyAlgo::Crc64,
        VerifyAlgo::Crc32c,
        VerifyAlgo::Crc32,
        VerifyAlgo::Crc16,
        VerifyAlgo::Crc7,
        VerifyAlgo::Xxhash,
        VerifyAlgo::Sha1,
        VerifyAlgo::Sha256,
        VerifyAlgo::Sha512,
        VerifyAlgo::Sha3_224,
        VerifyAlgo::Sha3_256,
        VerifyAlgo::Sha3_384,
        VerifyAlgo::Sha3_512,
        VerifyAlgo::Meta,
        VerifyAlgo::Pattern,
        VerifyAlgo::Null,
    ];

    /// fio's name (its `verify=` value and the prefix of its failure messages).
    pub fn name(self) -> &'static str {
        match self {
            VerifyAlgo::Md5 => "md5",
            VerifyAlgo::Crc64 => "crc64",
            VerifyAlgo::Crc32c => "crc32c",
            VerifyAlgo::Crc32 => "crc32",
            VerifyAlgo::Crc16 => "crc16",
            VerifyAlgo::Crc7 => "crc7",
            VerifyAlgo::Xxhash => "xxhash",
            VerifyAlgo::Sha1 => "sha1",
            VerifyAlgo::Sha256 => "sha256",
            VerifyAlgo::Sha512 => "sha512",
            VerifyAlgo::Sha3_224 => "sha3-224",
            VerifyAlgo::Sha3_256 => "sha3-256",
            VerifyAlgo::Sha3_384 => "sha3-384",
            VerifyAlgo::Sha3_512 => "sha3-512",
            VerifyAlgo::Meta => "meta",
            VerifyAlgo::Pattern => "pattern",
            VerifyAlgo::Null => "null",
        }
    }

    /// fio's `verify=` value (`crc32c-intel` is crc32c; `meta` is the header alone).
    pub fn parse(s: &str) -> Option<VerifyAlgo> {
        Some(match s {
            "md5" => VerifyAlgo::Md5,
            "crc64" => VerifyAlgo::Crc64,
            "crc32c" | "crc32c-intel" => VerifyAlgo::Crc32c,
            "crc32" => VerifyAlgo::Crc32,
            "crc16" => VerifyAlgo::Crc16,
            "crc7" => VerifyAlgo::Crc7,
            "xxhash" => VerifyAlgo::Xxhash,
            "sha1" => VerifyAlgo::Sha1,
            "sha256" => VerifyAlgo::Sha256,
            "sha512" => VerifyAlgo::Sha512,
            "sha3-224" => VerifyAlgo::Sha3_224,
            "sha3-256" => VerifyAlgo::Sha3_256,
            "sha3-384" => VerifyAlgo::Sha3_384,
            "sha3-512" => VerifyAlgo::Sha3_512,
            "meta" => VerifyAlgo::Meta,
            "pattern" => VerifyAlgo::Pattern,
            "null" => VerifyAlgo::Null,
            _ => return None,
        })
    }
}

/// The CPU cost of fio checking 4 KiB with `algo`, when a host preset names none
/// (`costs.verify_per_4k`). Measured with fio 3.33's own checksum code, `fio
/// --crctest` (t/crctest: each algorithm over a buffer, MiB/s), on the x86-64 Intel Xeon
/// this model was written on: ns = 4 KiB / rate. An estimate for the ARM boards of the
/// presets: their cores are slower (a Cortex-A53 at 1.6 GHz perhaps 2-4 times), and
/// crc32c uses the ARMv8 CRC32 instructions there as SSE4.2 here (fio's
/// crc32c_arm64/crc32c_intel). `pattern` is a memory compare (an estimate: 10 GB/s);
/// `null` checks nothing.
pub fn default_cost_per_4k_ns(algo: VerifyAlgo) -> u64 {
    // fio --crctest MiB/s (fio 3.33, Intel Xeon): md5 375, crc64 231, crc32 217,
    // crc32c 4224, crc16 196, crc7 271, sha1 563, sha256 226, sha512 264, xxhash 1231,
    // sha3-224 51.6, sha3-256 44.2, sha3-384 30.7, sha3-512 24.6.
    let mib_per_s_x10: u64 = match algo {
        VerifyAlgo::Md5 => 3751,
        VerifyAlgo::Crc64 => 2305,
        VerifyAlgo::Crc32 => 2166,
        VerifyAlgo::Crc32c => 42241,
        VerifyAlgo::Crc16 => 1957,
        VerifyAlgo::Crc7 => 2707,
        VerifyAlgo::Xxhash => 12313,
        VerifyAlgo::Sha1 => 5631,
        VerifyAlgo::Sha256 => 2265,
        VerifyAlgo::Sha512 => 2635,
        VerifyAlgo::Sha3_224 => 516,
        VerifyAlgo::Sha3_256 => 442,
        VerifyAlgo::Sha3_384 => 307,
        VerifyAlgo::Sha3_512 => 246,
        // The header's crc32c alone (its 4 KiB read as crc32c's rate is an upper bound).
        VerifyAlgo::Meta => 42241,
        VerifyAlgo::Pattern => 95367, // 10 GB/s
        VerifyAlgo::Null => return 0,
    };
    // 4 KiB = 1/256 MiB: ns = 1e9 / (256 * MiB/s), rounded up.
    (10_000_000_000u64).div_ceil(256 * mib_per_s_x10)
}

/// A job's verify options, typed (the CLI maps fio's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyConfig {
    pub algo: VerifyAlgo,
    /// fio's do_verify: run the verify phase after the write phase.
    pub do_verify: bool,
    /// Bytes per verify header (fio's verify_interval; its default is the write block
    /// size). A multiple of 4 KiB here, or a divisor of it (512, 1024, 2048: each
    /// 4 KiB block then holds whole intervals of one write, checked by its tag).
    pub interval: u64,
    /// Where the header sits in its interval (fio's verify_offset), a multiple of 4 KiB
    /// below `interval`.
    pub header_offset: u64,
    /// fio's verify_backlog (0: off) and verify_backlog_batch (0: = backlog).
    pub backlog: u64,
    pub backlog_batch: u64,
    /// fio's verify_only: the write phase is a dry run.
    pub only: bool,
    /// fio's verify_fatal: stop at the first bad header of an I/O (the job ends at its
    /// first failing I/O either way, td->error).
    pub fatal: bool,
    /// fio checks the header's numberio: a writing job with one block size, not
    /// time_based, not verify_only (verify_header).
    pub check_numberio: bool,
    /// fio takes the expected rand_seed from the header (a job that does not mix reads
    /// and writes, or one with verify_backlog): stale data at the right offset passes
    /// the seed check.
    pub seed_from_header: bool,
    /// Any fio write at the right offset will do (verify_only, a job that only reads):
    /// fio checks the header's offset, not whose write it was, then the data under it.
    pub any_writer: bool,
    /// verify=pattern: the pattern's identity (every block written holds it) and
    /// whether it carries the block's offset (`%o`).
    pub pattern_id: u32,
    pub pattern_per_offset: bool,
    /// fio's verify_async: threads that verify the job's reads off its thread (0: the
    /// job's thread verifies; sim/jobs/verify_async.rs).
    pub async_threads: u32,
    /// fio's verify_async_cpus: the cores those threads may run on (empty: the job's
    /// own affinity).
    pub async_cpus: Vec<u32>,
}

impl VerifyConfig {
    /// fio's defaults for `verify=ALGO` on a writing job of one 4 KiB block size:
    /// verify after the write phase, a header per 4 KiB at its start, no backlog,
    /// numberio and seed checked, verified in the job's thread.
    pub fn new(algo: VerifyAlgo) -> Self {
        VerifyConfig {
            algo,
            do_verify: true,
            interval: 4096,
            header_offset: 0,
            backlog: 0,
            backlog_batch: 0,
            only: false,
            fatal: false,
            check_numberio: true,
            seed_from_header: true,
            any_writer: false,
            pattern_id: 0,
            pattern_per_offset: false,
            async_threads: 0,
            async_cpus: Vec::new(),
        }
    }
}
