//! fio's `read_iolog=` on the simulated device: an iolog (v2, v3) or a blktrace binary,
//! read the way fio 3.33 reads it (iolog.c `read_iolog`, `delay_since_ttime`;
//! blktrace.c `read_blktrace`, `queue_trace`), streamed to the simulator as a
//! [`ReplaySource`] so a trace of any length replays in bounded memory.
//!
//! The trace is read twice: once before the run to check it whole (every line or record
//! is valid and lands on the device; fio's warnings are printed; the span it covers,
//! whether it syncs, and for a blktrace fio's depth probe), then again during the run,
//! one operation at a time. `read_iolog_chunked` only changes how much of the log fio
//! holds at once: flashpath always streams, so it has no further effect.
//!
//! Target: the simulated device. Every file (iolog) or device number (blktrace) the
//! trace names maps to it; a trace naming several is refused unless `replay_redirect`
//! sends them all to one target (as fio does). Offsets are bytes from the device's
//! start, after `replay_scale` (offset ÷ N) and `replay_align` (offset rounded down).

use anyhow::{anyhow, bail, Result};
use flashpath_core::device::DeviceConfig;
use flashpath_core::workload::{JobConfig, Replay, ReplayKind, ReplayOp, ReplaySource, Submission};
use flashpath_fio::parse::blktrace::{self as bt, BlktraceReader};
use flashpath_fio::parse::iolog::{IologAction, IologItem, IologReader, IologVersion};
use flashpath_fio::parse::Job;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// An error met while streaming a trace during the run (a read error of a file that
/// checked whole before): the run ends its replay there and the command fails.
static STREAM_ERROR: Mutex<Option<String>> = Mutex::new(None);

/// The first error a replay source met during the run, if any.
pub fn take_stream_error() -> Option<String> {
    STREAM_ERROR.lock().ok().and_then(|mut e| e.take())
}

/// The replay options of a job, as fio reads them.
#[derive(Clone, Debug)]
struct Opts {
    no_stall: bool,
    time_scale: u32,
    redirect: bool,
    align: u64,
    scale: u64,
    /// replay_skip (blktrace only in 3.33): read, write, trim, sync.
    skip: [bool; 4],
    read_only: bool,
    direct: bool,
    /// The job's name, for fio's messages.
    job: String,
    capacity: u64,
}

impl Opts {
    /// fio's `delay_since_ttime`: the trace time since the last one, in the trace's
    /// units; 0 for the first (and after a time of 0), when time goes back, or with
    /// replay_no_stall; scaled by 100 / replay_time_scale (fio computes it in double).
    fn delay_since(&self, last: u64, time: u64) -> u64 {
        if last == 0 || self.no_stall || time < last {
            0
        } else if self.time_scale == 100 {
            time - last
        } else {
            ((time - last) as f64 * (100.0 / self.time_scale as f64)) as u64
        }
    }

    /// replay_scale, then replay_align (`ipo_bytes_align`: offset rounded down).
    fn place(&self, offset: u64) -> u64 {
        let mut o = offset.checked_div(self.scale).unwrap_or(offset);
        if self.align > 0 {
            o &= !(self.align - 1);
        }
        o
    }
}

/// Where in the trace an operation came from, for messages.
#[derive(Clone, Copy, Debug)]
enum At {
    Line(u32),
    Record(u64),
}

/// What the trace names as a target.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    File(String),
    Device(u32, u32),
}

/// One decoded operation with where it came from and the target it names.
struct Decoded {
    op: ReplayOp,
    at: At,
    target: Option<Target>,
}

/// Reads one trace into replay operations, as fio queues its io_pieces.
enum Decoder {
    Iolog {
        rd: IologReader<BufReader<File>>,
        last_ttime: u64,
        /// Writes dropped for --readonly.
        skipped_writes: u64,
    },
    Blktrace {
        rd: BlktraceReader<BufReader<File>>,
        last_ttime: u64,
        /// fio warns once about zero-byte traces (fio_did_warn).
        warned_zero: bool,
        path: PathBuf,
        /// Depth probe per direction (depth_inc/dec/end).
        this_depth: [i64; 3],
        depth: [i64; 3],
        ios: [u64; 4],
        skipped_writes: u64,
    },
}

/// What the check pass found.
struct Summary {
    lo: u64,
    hi: u64,
    syncs: bool,
    trims: bool,
    /// I/Os (reads, writes, trims) and v2 waits.
    ios: u64,
    /// The blktrace depth probe (fio sets iodepth to it unless the job set iodepth).
    probed_depth: Option<u32>,
}

fn open_decoder(path: &Path) -> Result<Decoder> {
    let mut f = File::open(path).map_err(|e| anyhow!("read_iolog={}: {e}", path.display()))?;
    let mut head = [0u8; bt::RECORD_BYTES];
    let mut n = 0;
    while n < head.len() {
        match f.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) => bail!("read_iolog={}: {e}", path.display()),
        }
    }
    drop(f);
    if n < bt::RECORD_BYTES && bt::magic(&head[..n]).is_some() {
        // fio: "short read on blktrace file", then it reads the bytes as an iolog and
        // fails on their header ("iolog version 1 is no longer supported").
        bail!(
            "read_iolog={}: {n} bytes that start with blktrace's magic, less than one {}-byte record (fio: short read on blktrace file)",
            path.display(),
            bt::RECORD_BYTES
        );
    }
    let f = File::open(path).map_err(|e| anyhow!("read_iolog={}: {e}", path.display()))?;
    let r = BufReader::with_capacity(64 << 10, f);
    Ok(match bt::sniff(&head[..n]) {
        Some(swap) => Decoder::Blktrace {
            rd: BlktraceReader::new(r, path, swap),
            last_ttime: 0,
            warned_zero: false,
            path: path.to_path_buf(),
            this_depth: [0; 3],
            depth: [0; 3],
            ios: [0; 4],
            skipped_writes: 0,
        },
        None => Decoder::Iolog {
            rd: IologReader::new(r, path).map_err(|e| anyhow!("{e}"))?,
            last_ttime: 0,
            skipped_writes: 0,
        },
    })
}

impl Decoder {
    /// The next operation, or `None` at the end. `warn` receives fio's messages for
    /// lines it skips.
    fn next(&mut self, o: &Opts, warn: &mut dyn FnMut(String)) -> Result<Option<Decoded>> {
        match self {
            Decoder::Iolog {
                rd,
                last_ttime,
                skipped_writes,
            } => loop {
                let v3 = rd.version() == IologVersion::V3;
                let Some(item) = rd.next_item().map_err(|e| anyhow!("{e}"))? else {
                    return Ok(None);
                };
                let e = match item {
                    IologItem::Warning { message, time_us } => {
                        // fio sets io_log_last_ttime before it skips the line.
                        if let Some(t) = time_us {
                            *last_ttime = t;
                        }
                        warn(message);
                        continue;
                    }
                    IologItem::Entry(e) => e,
                };
                let mut delay_us = 0;
                if v3 {
                    let t = e.time_us.unwrap_or(0);
                    delay_us = o.delay_since(*last_ttime, t);
                    *last_ttime = t;
                }
                let at = At::Line(e.line);
                let target = Some(Target::File(e.file.clone()));
                let (kind, offset, len) = match e.action {
                    IologAction::Add | IologAction::Open | IologAction::Close => {
                        (ReplayKind::Mark, 0, 0)
                    }
                    IologAction::Read => {
                        (ReplayKind::Read, o.place(e.offset_bytes), e.length_bytes)
                    }
                    IologAction::Write => {
                        if o.read_only {
                            *skipped_writes += 1;
                            continue;
                        }
                        (ReplayKind::Write, o.place(e.offset_bytes), e.length_bytes)
                    }
                    IologAction::Sync | IologAction::Datasync => (ReplayKind::Sync, 0, 0),
                    IologAction::Wait => {
                        if o.no_stall {
                            continue;
                        }
                        // v2: milliseconds since fio started (3.33's read_iolog_get).
                        let op = ReplayOp {
                            kind: ReplayKind::WaitUntil,
                            offset: 0,
                            len: 0,
                            delay_ns: e.offset_bytes.saturating_mul(1_000_000),
                        };
                        return Ok(Some(Decoded { op, at, target }));
                    }
                };
                let op = ReplayOp {
                    kind,
                    offset,
                    len,
                    delay_ns: delay_us.saturating_mul(1000),
                };
                return Ok(Some(Decoded { op, at, target }));
            },
            Decoder::Blktrace {
                rd,
                last_ttime,
                warned_zero,
                path,
                this_depth,
                depth,
                ios,
                skipped_writes,
            } => loop {
                let Some(mut t) = rd.next_record().map_err(|e| anyhow!("{e}"))? else {
                    return Ok(None);
                };
                let at = At::Record(t.index);
                let what = t.what();
                if !t.is_notify() {
                    if let Some(d) = t.ddir() {
                        match what {
                            bt::TA_QUEUE => this_depth[d] += 1,
                            bt::TA_BACKMERGE | bt::TA_FRONTMERGE => this_depth[d] -= 1,
                            bt::TA_COMPLETE => {
                                depth[d] = depth[d].max(this_depth[d]);
                                this_depth[d] = 0;
                            }
                            _ => {}
                        }
                    }
                    // Read-only: writes and discards are dropped before queue_trace.
                    if o.read_only && t.action & (bt::TC_WRITE | bt::TC_DISCARD) != 0 {
                        *skipped_writes += 1;
                        continue;
                    }
                }
                if what != bt::TA_QUEUE {
                    continue;
                }
                let mut delay_ns = 0;
                if !t.is_notify() {
                    delay_ns = o.delay_since(*last_ttime, t.time_ns);
                    *last_ttime = t.time_ns;
                }
                // t_bytes_align: the length rounded up to replay_align.
                if o.align > 0 {
                    t.bytes = ((t.bytes as u64 + o.align - 1) & !(o.align - 1)) as u32;
                }
                if t.is_notify() {
                    continue;
                }
                // ipo->delay = ttime / 1000: whole microseconds.
                let delay_ns = delay_ns / 1000 * 1000;
                let (kind, ddir) = if t.action & bt::TC_DISCARD != 0 {
                    (ReplayKind::Trim, 2)
                } else if t.action & bt::TC_FLUSH != 0 {
                    (ReplayKind::Sync, 3)
                } else if t.action & bt::TC_WRITE != 0 {
                    (ReplayKind::Write, 1)
                } else {
                    (ReplayKind::Read, 0)
                };
                if o.skip[ddir] {
                    continue;
                }
                if kind == ReplayKind::Read || kind == ReplayKind::Write {
                    // handle_trace_fs: the file is added before the zero-byte check.
                    if t.bytes == 0 {
                        if !*warned_zero {
                            *warned_zero = true;
                            warn(format!(
                                "{}: record {}: blktrace: ignoring zero byte trace: action={:x}",
                                path.display(),
                                t.index,
                                t.action
                            ));
                        }
                        continue;
                    }
                }
                ios[ddir] += 1;
                let dev = t.major_minor();
                let target = Some(Target::Device(dev.0, dev.1));
                let (offset, len) = match kind {
                    ReplayKind::Sync => (0, 0),
                    _ => (o.place(t.sector.saturating_mul(512)), t.bytes as u64),
                };
                let op = ReplayOp {
                    kind,
                    offset,
                    len,
                    delay_ns,
                };
                return Ok(Some(Decoded { op, at, target }));
            },
        }
    }

    /// fio's probed depth, once the whole trace has been read.
    fn probed_depth(&self) -> Option<u32> {
        match self {
            Decoder::Iolog { .. } => None,
            Decoder::Blktrace { depth, ios, .. } => {
                let mut max = 0;
                for d in 0..3 {
                    let mut v = depth[d].min(1024);
                    if v <= 0 && ios[d] > 0 {
                        v = 1;
                    }
                    max = max.max(v);
                }
                Some(max.max(1) as u32)
            }
        }
    }
}

fn where_(path: &Path, at: At) -> String {
    match at {
        At::Line(l) => format!("{}:{l}", path.display()),
        At::Record(r) => format!("{}: record {r}", path.display()),
    }
}

/// The check pass: every operation is valid on the device.
fn check(path: &Path, o: &Opts) -> Result<Summary> {
    let mut d = open_decoder(path)?;
    let mut s = Summary {
        lo: u64::MAX,
        hi: 0,
        syncs: false,
        trims: false,
        ios: 0,
        probed_depth: None,
    };
    let mut first_target: Option<Target> = None;
    let mut warn =
        |m: String| crate::embed::note(&format!("flashpath fio: warning: {}", crate::one_line(&m)));
    while let Some(x) = d.next(o, &mut warn)? {
        if let (Some(t), false) = (&x.target, o.redirect) {
            match &first_target {
                None => first_target = Some(t.clone()),
                Some(f) if f != t => bail!(
                    "{}: the trace names a second {} ({}) after {}: flashpath replays onto one simulated device; set replay_redirect to send every one to it",
                    where_(path, x.at),
                    if matches!(t, Target::File(_)) { "file" } else { "device" },
                    show_target(t),
                    show_target(f)
                ),
                _ => {}
            }
        }
        let op = x.op;
        match op.kind {
            ReplayKind::Read | ReplayKind::Write | ReplayKind::Trim => {
                let what = match op.kind {
                    ReplayKind::Read => "read",
                    ReplayKind::Write => "write",
                    _ => "trim",
                };
                if op.len == 0 {
                    bail!(
                        "{}: a {what} of 0 bytes at {} is not modelled",
                        where_(path, x.at),
                        op.offset
                    );
                }
                let end = op.offset.saturating_add(op.len);
                if end > o.capacity {
                    bail!(
                        "{}: {what} of {} bytes at offset {} ends beyond the simulated device's {} bytes",
                        where_(path, x.at),
                        op.len,
                        op.offset,
                        o.capacity
                    );
                }
                if (o.direct || op.kind == ReplayKind::Trim)
                    && (op.offset % 512 != 0 || op.len % 512 != 0)
                {
                    bail!(
                        "{}: {what} of {} bytes at offset {}: {} needs offsets and lengths in whole 512-byte sectors (the kernel answers EINVAL)",
                        where_(path, x.at),
                        op.len,
                        op.offset,
                        if op.kind == ReplayKind::Trim { "a discard (BLKDISCARD)" } else { "direct=1" }
                    );
                }
                s.trims |= op.kind == ReplayKind::Trim;
                s.lo = s.lo.min(op.offset);
                s.hi = s.hi.max(end);
                s.ios += 1;
            }
            ReplayKind::Sync => s.syncs = true,
            ReplayKind::WaitUntil => s.ios += 1,
            ReplayKind::Mark => {}
        }
    }
    s.probed_depth = d.probed_depth();
    // fio 3.33 says so for a blktrace only: read_iolog skips a write before counting it.
    let skipped = match &d {
        Decoder::Iolog { .. } => 0,
        Decoder::Blktrace { skipped_writes, .. } => *skipped_writes,
    };
    if skipped > 0 {
        crate::embed::note(&format!(
            "flashpath fio: warning: fio: {} skips replay of {skipped} writes due to read-only",
            o.job
        ));
    }
    if o.skip.iter().any(|&x| x) && matches!(d, Decoder::Iolog { .. }) {
        crate::embed::note(&format!(
            "flashpath fio: warning: replay_skip: fio 3.33 applies it to blktrace replays only; {} is an iolog, replayed whole",
            path.display()
        ));
    }
    if s.ios == 0 && !(s.syncs && matches!(d, Decoder::Blktrace { .. })) {
        bail!(
            "read_iolog={}: {}",
            path.display(),
            if matches!(d, Decoder::Blktrace { .. }) {
                "fio: found no ios in blktrace data"
            } else {
                "the iolog has no reads, writes or waits (fio: failed initializing iolog)"
            }
        );
    }
    Ok(s)
}

fn show_target(t: &Target) -> String {
    match t {
        Target::File(f) => format!("'{f}'"),
        Target::Device(a, b) => format!("{a},{b}"),
    }
}

/// The streaming source the simulator pulls during the run.
struct Stream {
    d: Decoder,
    o: Opts,
}

impl ReplaySource for Stream {
    fn next_op(&mut self) -> Option<ReplayOp> {
        match self.d.next(&self.o, &mut |_| {}) {
            Ok(Some(x)) => Some(x.op),
            Ok(None) => None,
            Err(e) => {
                if let Ok(mut slot) = STREAM_ERROR.lock() {
                    slot.get_or_insert_with(|| e.to_string());
                }
                None
            }
        }
    }
}

/// fio 3.33's `merge_blktrace_iologs`, as the binary behaves: the lists of scalars and
/// iterations must be empty or one per trace (else a message and nothing more); the
/// merge file is created empty; the first trace's first record is read into a pointer's
/// 8 bytes ("fio: iolog short read", fixed upstream in c55d29ef); the error is not
/// propagated (`!merge_blktrace_iologs()` of a non-zero return), so the job goes on and
/// replays `read_iolog` as if no merge had been asked for.
fn merge_blktrace_3_33(
    list: &str,
    merge: &str,
    scalars: Option<String>,
    iters: Option<String>,
) -> Result<()> {
    let names: Vec<&str> = list.split(':').collect();
    let warn = |m: String| {
        crate::embed::note(&format!("flashpath fio: warning: {m} (fio 3.33's merge_blktrace_file merges nothing: docs/replay.md)"))
    };
    for (opt, v) in [
        ("merge_blktrace_scalars", scalars),
        ("merge_blktrace_iters", iters),
    ] {
        // init_merge_param_list: values up to the first 0.
        let n = v
            .as_deref()
            .unwrap_or("")
            .split(':')
            .map(|x| x.trim().parse::<f64>().unwrap_or(0.0))
            .take_while(|&x| x != 0.0)
            .count();
        if n != 0 && n != names.len() {
            warn(format!("fio: {opt}({n}) != nr_logs({})", names.len()));
            return Ok(());
        }
    }
    File::create(merge).map_err(|e| anyhow!("merge_blktrace_file={merge}: {e}"))?;
    let first = names[0];
    let mut head = Vec::new();
    match File::open(first) {
        Err(_) => warn(format!("fio: could not open file: {first}")),
        Ok(f) => {
            let _ = f.take(bt::RECORD_BYTES as u64).read_to_end(&mut head);
            if bt::sniff(&head).is_none() {
                warn(format!("fio: file is not a blktrace: {first}"));
            } else {
                warn("fio: iolog short read".to_string());
            }
        }
    }
    Ok(())
}

/// fio's replay_skip list (`str_replay_skip_cb`): read, write, trim, sync.
fn replay_skip(text: &str) -> Result<[bool; 4]> {
    let mut s = [false; 4];
    for w in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        match w {
            "read" => s[0] = true,
            "write" => s[1] = true,
            "trim" => s[2] = true,
            "sync" => s[3] = true,
            other => bail!("replay_skip={text}: '{other}' is not read, write, trim or sync"),
        }
    }
    Ok(s)
}

/// Turns a job with `read_iolog` into a replay job, as fio would run it: the I/O, its
/// directions, sizes and offsets come from the trace (fio overrides rw, bs and size and
/// drops the job's files); the engine, iodepth (for a blktrace: fio's probe unless the
/// job set iodepth), direct, thinktime, rate, runtime and start delays apply as usual.
pub fn job(job: &Job, cfg: JobConfig, dev: &DeviceConfig, read_only: bool) -> Result<JobConfig> {
    let o = &job.options;
    let set = |name: &str| job.set_options.iter().any(|s| s.name == name);
    let raw = |name: &str| {
        job.set_options
            .iter()
            .rev()
            .find(|s| s.name == name)
            .and_then(|s| s.value.clone())
    };
    let Some(list) = o.read_iolog.as_deref() else {
        if let Some(m) = [
            "merge_blktrace_file",
            "merge_blktrace_scalars",
            "merge_blktrace_iters",
        ]
        .iter()
        .find(|m| set(m))
        {
            bail!("job '{}': {m} without read_iolog (the traces to merge) is not modelled by flashpath", job.name);
        }
        return Ok(cfg);
    };
    if let Some(m) = raw("merge_blktrace_file") {
        merge_blktrace_3_33(
            list,
            &m,
            raw("merge_blktrace_scalars"),
            raw("merge_blktrace_iters"),
        )?;
    }
    for (opt, why) in [
        ("time_based", "fio ends a replay when its trace ends"),
        ("number_ios", "the trace decides the I/O count"),
        ("io_size", "the trace decides the bytes"),
    ] {
        // time_based=0 set explicitly is the default, not a refusal.
        let on = opt != "time_based" || o.time_based;
        if on && set(opt) {
            bail!(
                "job '{}': {opt} with read_iolog is not modelled by flashpath ({why})",
                job.name
            );
        }
    }
    if o.loops > 1 {
        bail!(
            "job '{}': loops={} with read_iolog is not modelled by flashpath (fio's replay list is used up by the first loop)",
            job.name,
            o.loops
        );
    }
    // get_name_by_idx: clone n replays the (n mod count)-th file of the list.
    let names: Vec<&str> = list.split(':').collect();
    let name = names[job.clone_index as usize % names.len()];
    if name == "-" {
        bail!(
            "job '{}': read_iolog=- (standard input) is not modelled by flashpath: give the trace's file",
            job.name
        );
    }
    let path = PathBuf::from(name);
    let opts = Opts {
        no_stall: o.replay_no_stall,
        time_scale: o.replay_time_scale.max(1),
        redirect: o.replay_redirect.is_some(),
        align: o.replay_align,
        scale: o.replay_scale,
        skip: match raw("replay_skip") {
            Some(v) => replay_skip(&v)?,
            None => [false; 4],
        },
        read_only,
        direct: o.direct,
        job: job.name.clone(),
        capacity: dev.capacity_bytes,
    };
    if opts.align > 0 && !opts.align.is_power_of_two() {
        bail!(
            "job '{}': replay_align={} is not a power of 2 (fio's alignment masks with align - 1)",
            job.name,
            opts.align
        );
    }
    let s = check(&path, &opts)?;
    let (lo, hi) = if s.hi > 0 {
        (s.lo / 512 * 512, s.hi.div_ceil(512) * 512)
    } else {
        (0, 512)
    };
    let replay = Replay {
        open: {
            let (path, opts) = (path.clone(), opts.clone());
            Arc::new(move || {
                let d = open_decoder(&path).map_err(|e| e.to_string())?;
                Ok(Box::new(Stream { d, o: opts.clone() }) as Box<dyn ReplaySource>)
            })
        },
        syncs: s.syncs,
        trims: s.trims,
        name: path.display().to_string(),
    };
    let mut r = JobConfig::replayed(&cfg.name, replay, lo, (hi - lo).max(512));
    // What fio keeps of the job.
    r.direct = cfg.direct;
    r.submission = if o.ioengine.is_sync() {
        Submission::Sync
    } else {
        let depth = match s.probed_depth {
            Some(p) if !set("iodepth") => p,
            _ => o.iodepth.max(1),
        };
        let batch = match cfg.submission {
            Submission::Async { batch_submit, .. } => batch_submit,
            Submission::Sync => 1,
        };
        Submission::Async {
            depth,
            batch_submit: batch.min(depth).max(1),
            batch_complete_min: o.iodepth_batch_complete_min.min(depth),
        }
    };
    // fsync=N, end_fsync and sync=1 apply to the replayed writes as to any.
    r.fsync_every = cfg.fsync_every;
    r.end_fsync = cfg.end_fsync;
    r.o_sync = cfg.o_sync;
    r.fdatasync = cfg.fdatasync;
    r.o_dsync = cfg.o_dsync;
    r.runtime_ns = cfg.runtime_ns;
    r.ramp_ns = cfg.ramp_ns;
    r.startdelay_ns = cfg.startdelay_ns;
    r.thinktime_ns = cfg.thinktime_ns;
    r.thinktime_blocks = cfg.thinktime_blocks;
    r.rate_bytes_per_s = cfg.rate_bytes_per_s;
    r.rate_iops = cfg.rate_iops;
    r.seed = cfg.seed;
    r.stonewall = cfg.stonewall;
    r.fadvise = cfg.fadvise;
    r.exitall = cfg.exitall;
    r.validate().map_err(|e| anyhow!("{e}"))?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> Opts {
        Opts {
            no_stall: false,
            time_scale: 100,
            redirect: false,
            align: 0,
            scale: 0,
            skip: [false; 4],
            read_only: false,
            direct: true,
            job: "r".into(),
            capacity: 1 << 30,
        }
    }

    #[test]
    fn delay_since_ttime_as_fio_computes_it() {
        let o = opts();
        // No reference yet (or a reference of 0), time going back: no delay.
        assert_eq!(o.delay_since(0, 500), 0);
        assert_eq!(o.delay_since(600, 500), 0);
        assert_eq!(o.delay_since(100, 350), 250);
        // replay_time_scale=200 halves it, 50 doubles it; fio truncates the double.
        let o2 = Opts {
            time_scale: 200,
            ..opts()
        };
        assert_eq!(o2.delay_since(100, 351), 125);
        let o3 = Opts {
            time_scale: 50,
            ..opts()
        };
        assert_eq!(o3.delay_since(100, 350), 500);
        let o4 = Opts {
            time_scale: 300,
            ..opts()
        };
        assert_eq!(o4.delay_since(1, 101), 33);
        let ns = Opts {
            no_stall: true,
            ..opts()
        };
        assert_eq!(ns.delay_since(100, 350), 0);
    }

    #[test]
    fn replay_scale_divides_then_replay_align_rounds_down() {
        let o = Opts {
            scale: 4,
            align: 4096,
            ..opts()
        };
        assert_eq!(o.place(65536 + 8192), 16384);
        assert_eq!(o.place(3 * 4096 * 4 + 4), 12288);
        assert_eq!(
            Opts {
                align: 512,
                ..opts()
            }
            .place(1000),
            512
        );
        assert_eq!(opts().place(1000), 1000);
    }

    #[test]
    fn replay_skip_names_fios_directions() {
        assert_eq!(
            replay_skip("read,trim").unwrap(),
            [true, false, true, false]
        );
        assert_eq!(replay_skip("sync").unwrap(), [false, false, false, true]);
        assert!(replay_skip("reads")
            .unwrap_err()
            .to_string()
            .contains("'reads'"));
    }
}
