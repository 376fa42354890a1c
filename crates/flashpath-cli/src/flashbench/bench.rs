//! flashbench's tests as pure code: which accesses each test makes, and what it prints
//! from their times. Nothing here knows the simulator; a [`Target`] times accesses.
//!
//! ```text
//!  Args ──▶ record pass: the tests run with a stand-in clock and note every timed
//!           access (flashbench never picks an access from an earlier time)
//!       ──▶ Target::time(whole plan, once) ──▶ one time per access
//!       ──▶ replay pass: the tests run again, taking those times in order, and print
//! ```
//!
//! The tests are ports of flashbench 62's code (flashbench.c: `try_scatter_io`,
//! `try_read_alignments`, `try_intervals` and its `regression`, `main`'s order and
//! error handling; dev.c: the timed access; vm.c via [`super::vm`] for `-O`, `-f`,
//! `-p`), with C's integer and `float` arithmetic where it shows in the output.
//!
//! A timed access is dev.c's `time_read`/`time_write`: one [`Access`] at `pos` (not yet
//! wrapped: the target does `pos % size` and splits an access that runs past the end, as
//! dev.c's loop over short transfers does), or -ENOMEM without any I/O above 64 MiB.
//! Units: bytes, ns.

use super::args::Args;
use super::cfmt::{self, cut7, f64_to_ll, g, x86_nan32, x86_nan64};
use super::lfsr::flashbench_lfsr;
use super::vm::{self, Vm};

/// One timed access: `len` bytes at byte `offset` (as flashbench computes it, before the
/// wrap at the device's end). `fill` is the byte a write writes (flashbench: 0x5a, or
/// 0x00 and 0xff in `-p`); 0 for reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub write: bool,
    pub offset: u64,
    pub len: u64,
    pub fill: u8,
}

/// What the tests run against: a device of `size()` bytes (what flashbench's
/// `lseek(SEEK_END)` returns), and a clock for a whole plan of accesses made one after
/// the other. `time` returns each access's time in ns, from just before its first
/// pread/pwrite to just after its last (dev.c's `clock_gettime` pair).
pub trait Target {
    fn size(&self) -> u64;
    fn time(&mut self, plan: &[Access]) -> Result<Vec<u64>, String>;
}

/// dev.c's `MAX_BUFSIZE`: larger accesses fail with -ENOMEM before any I/O.
pub const MAX_BUFSIZE: u64 = 64 * 1024 * 1024;

const ENOMEM: i64 = 12;

/// The most accesses one invocation may plan: flashpath holds the plan, runs it in one
/// simulation and keeps each access's time (about 100 bytes per access in all).
pub const MAX_ACCESSES: usize = 4_000_000;

/// The time the record pass hands out. The tests' control flow never depends on a time
/// (checked: the replay must make the same accesses), except vm.c's `BPS`, which fails
/// on a throughput of 0 (a time over 10^9 × length): any plausible time passes it.
const STAND_IN_NS: i64 = 1_000_000;

/// Why a run stops early: flashbench's `exit()` or `return` from main (its messages are
/// already in [`Out`]), or something flashpath does not model.
#[derive(Debug)]
pub enum Halt {
    Exit(u8),
    Fail(String),
}

/// What flashbench writes: standard output, standard error, and the scatter test's
/// `--out` file when it is not standard output.
#[derive(Debug, Default)]
pub struct Out {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub file: Vec<u8>,
    /// `-o FILE` (not `-`): the scatter test writes to `file`.
    pub to_file: bool,
}

impl Out {
    pub fn print(&mut self, b: &[u8]) {
        self.stdout.extend_from_slice(b);
    }

    pub fn eprint(&mut self, b: &[u8]) {
        self.stderr.extend_from_slice(b);
    }

    /// The scatter test's `fprintf(out, ...)`.
    fn fprint(&mut self, b: &[u8]) {
        if self.to_file {
            self.file.extend_from_slice(b);
        } else {
            self.stdout.extend_from_slice(b);
        }
    }

    /// `perror(s)` after a test returned `-errno`.
    fn perror(&mut self, s: &str, errno: i64) {
        let msg = match errno {
            ENOMEM => "Cannot allocate memory".to_string(),
            e => format!("Unknown error {e}"),
        };
        self.eprint(format!("{s}: {msg}\n").as_bytes());
    }
}

enum Mode<'a> {
    Record(Vec<Access>),
    Replay {
        plan: &'a [Access],
        times: &'a [u64],
        next: usize,
    },
}

/// dev.c's timing functions, over a recording or a replay.
pub struct Clock<'a> {
    size: i64,
    mode: Mode<'a>,
}

impl<'a> Clock<'a> {
    fn record(size: i64) -> Self {
        Clock {
            size,
            mode: Mode::Record(Vec::new()),
        }
    }

    fn replay(size: i64, plan: &'a [Access], times: &'a [u64]) -> Self {
        Clock {
            size,
            mode: Mode::Replay {
                plan,
                times,
                next: 0,
            },
        }
    }

    /// `time_read` (`fill` None) or `time_write`: the access's time, or -ENOMEM.
    pub fn timed(&mut self, fill: Option<u8>, pos: i64, len: u64) -> Result<i64, Halt> {
        if len > MAX_BUFSIZE {
            return Ok(-ENOMEM);
        }
        if pos < 0 {
            return Err(Halt::Fail(format!(
                "flashbench would access offset {pos}, which pread/pwrite refuse (EINVAL); flashbench then counts 0 ns"
            )));
        }
        if len == 0 {
            return Err(Halt::Fail(
                "flashbench would time zero-length accesses, which do no I/O: not modelled".into(),
            ));
        }
        let a = Access {
            write: fill.is_some(),
            offset: pos as u64,
            len,
            fill: fill.unwrap_or(0),
        };
        match &mut self.mode {
            Mode::Record(plan) => {
                if plan.len() >= MAX_ACCESSES {
                    return Err(Halt::Fail(format!(
                        "these tests make more than {MAX_ACCESSES} accesses, more than flashpath runs in one go; use smaller counts or sizes"
                    )));
                }
                plan.push(a);
                Ok(STAND_IN_NS)
            }
            Mode::Replay { plan, times, next } => {
                if plan.get(*next) != Some(&a) {
                    return Err(Halt::Fail(
                        "internal: the replay's accesses differ from the plan's".into(),
                    ));
                }
                let t = times[*next];
                *next += 1;
                i64::try_from(t).map_err(|_| Halt::Fail(format!("a time of {t} ns")))
            }
        }
    }
}

/// flashbench.c's `format_ns` before the 8-byte cut.
pub fn format_ns_text(ns: i64) -> String {
    if ns < 1000 {
        format!("{ns}ns")
    } else if ns < 1000 * 1000 {
        format!("{}µs", g(ns as f64 / 1000.0, 3))
    } else if ns < 1000 * 1000 * 1000 {
        format!("{}ms", g(ns as f64 / 1_000_000.0, 3))
    } else {
        format!("{}s", g(ns as f64 / 1_000_000_000.0, 4))
    }
}

/// flashbench.c's `format_ns`: at most 7 bytes.
pub fn format_ns(ns: i64) -> Vec<u8> {
    cut7(&format_ns_text(ns))
}

fn ns_min(d: &[i64]) -> i64 {
    d.iter().copied().fold(i64::MAX, i64::min)
}

fn ns_max(d: &[i64]) -> i64 {
    d.iter().copied().fold(0, i64::max)
}

/// `ns_avg`: the sum over the count, C's truncating division (callers never pass an
/// empty slice: flashbench would die of SIGFPE).
pub fn ns_avg(d: &[i64]) -> i64 {
    let sum = d.iter().fold(0i64, |s, &x| s.wrapping_add(x));
    sum / d.len() as i64
}

/// `time_read_interval`: `results.len()` accesses at `offset + i * interval`, each
/// result the smallest non-zero time so far. `Ok(Err(e))`: -errno.
fn time_interval(
    clk: &mut Clock,
    fill: Option<u8>,
    results: &mut [i64],
    size: u64,
    offset: i64,
    interval: i64,
) -> Result<i64, Halt> {
    for (i, r) in results.iter_mut().enumerate() {
        let pos = offset.wrapping_add((i as i64).wrapping_mul(interval));
        let t = clk.timed(fill, pos, size)?;
        if t < 0 {
            return Ok(t);
        }
        if *r == 0 || *r > t {
            *r = t;
        }
    }
    Ok(0)
}

/// The positions `-a` (and `-A`) read or write at, as (maxalign, aligns): maxalign is the
/// smallest `2·bs·2^k` at least size/7; aligns go from maxalign down to 2·bs by halves.
pub fn align_steps(size: i64, blocksize: i32) -> (i64, Vec<i64>) {
    let count = 7;
    let mut maxalign = blocksize.wrapping_mul(2) as i64;
    while maxalign < size / count {
        maxalign *= 2;
    }
    let mut aligns = Vec::new();
    let mut align = maxalign;
    while align >= blocksize.wrapping_mul(2) as i64 {
        aligns.push(align);
        align /= 2;
    }
    (maxalign, aligns)
}

/// One `-a` line's figures from the per-position minima: the means over the positions
/// of pre, on, post, and diff = on − (pre + post) / 2.
pub fn align_figures(pre: &[i64], on: &[i64], post: &[i64]) -> [i64; 4] {
    let (a, b, c) = (ns_avg(pre), ns_avg(on), ns_avg(post));
    [a, b, c, b - (a + c) / 2]
}

/// `try_read_alignments` (and its write twin for `-A`). Returns 0 or -errno.
fn try_alignments(
    clk: &mut Clock,
    out: &mut Out,
    tries: i32,
    blocksize: i32,
    write: bool,
) -> Result<i64, Halt> {
    let count = 7;
    let (maxalign, aligns) = align_steps(clk.size, blocksize);
    let bs = blocksize as i64 as u64; // size_t
    let fill = write.then_some(0x5a);
    for align in aligns {
        let mut pre = vec![0i64; count];
        let mut on = vec![0i64; count];
        let mut post = vec![0i64; count];
        for _ in 0..tries.max(0) {
            let sweeps: [(&mut Vec<i64>, i64); 3] = [
                (&mut pre, (align as u64).wrapping_sub(bs) as i64),
                (&mut on, (align as u64).wrapping_sub(bs / 2) as i64),
                (&mut post, align),
            ];
            for (res, at) in sweeps {
                let r = time_interval(clk, fill, res, bs, at, maxalign)?;
                if r < 0 {
                    return Ok(r);
                }
            }
        }
        let f = align_figures(&pre, &on, &post);
        let mut line =
            format!("{}align {align}\tpre ", if write { "write " } else { "" }).into_bytes();
        line.extend(format_ns(f[0]));
        line.extend_from_slice(b"\ton ");
        line.extend(format_ns(f[1]));
        line.extend_from_slice(b"\tpost ");
        line.extend(format_ns(f[2]));
        line.extend_from_slice(b"\tdiff ");
        line.extend(format_ns(f[3]));
        line.push(b'\n');
        out.print(&line);
    }
    Ok(0)
}

/// The order `-s` visits its positions in: 0, then flashbench.c's LFSR from 0
/// (`None`: the width is outside 8..=16, flashbench's internal error, which comes after
/// the first read).
pub fn scatter_order(order: u32) -> (Vec<u64>, bool) {
    let count = 1usize << order;
    let mut v = Vec::with_capacity(count);
    let mut pos: u64 = 0;
    for _ in 0..count {
        v.push(pos);
        match flashbench_lfsr(pos as u16, order) {
            Some(p) => pos = p as u64,
            None => return (v, false),
        }
    }
    (v, true)
}

/// `try_scatter_io`. Returns 0 or -errno.
fn try_scatter(clk: &mut Clock, out: &mut Out, a: &Args) -> Result<i64, Halt> {
    let order = a.scatter_order as u32;
    let count = 1usize << order;
    let bs = a.blocksize;
    let size = a.scatter_span.wrapping_mul(bs) as i64 as u64; // int product → size_t
    let mut min = vec![0i64; count];
    let (positions, complete) = scatter_order(order);
    for i in 0..a.count.max(0) {
        for (j, &pos) in positions.iter().enumerate() {
            let at = pos.wrapping_mul(bs as i64 as u64) as i64;
            let t = clk.timed(None, at, size)?;
            if t < 0 {
                return Ok(t);
            }
            if i == 0 || t < min[pos as usize] {
                min[pos as usize] = t;
            }
            if !complete && j + 1 == positions.len() {
                out.eprint(b"flashbench: internal error\n");
                return Err(Halt::Exit(super::args::EXIT_EINVAL));
            }
        }
    }
    for (j, m) in min.iter().enumerate() {
        let mib = (j as i32).wrapping_mul(bs) as f64 / (1024.0 * 1024.0);
        let line = format!("{}\t{}\n", cfmt::f(mib), cfmt::f(*m as f64 / 1_000_000.0));
        out.fprint(line.as_bytes());
    }
    Ok(0)
}

/// flashbench.c's `regression` over `count` points (C's `float`s; with fewer than two
/// points the slope is 0/0 = NaN, which C prints as "-nan"): prints the line and returns
/// (access time as C's `long long`, throughput as `float`).
fn regression(out: &mut Out, ns: &[i64], bytes: &[i64], count: i32) -> (i64, f32) {
    let (mut sx, mut sxx, mut sy, mut sxy) = (0f32, 0f32, 0f32, 0f32);
    for i in 0..count.max(0) as usize {
        let (b, t) = (bytes[i] as f32, ns[i] as f32);
        sx = x86_nan32(sx + b);
        sxx = x86_nan32(sxx + x86_nan32(b * b));
        sy = x86_nan32(sy + t);
        sxy = x86_nan32(sxy + x86_nan32(t * b));
    }
    let n = count as f32;
    let num = x86_nan32(x86_nan32(n * sxy) - x86_nan32(sx * sy));
    let den = x86_nan32(x86_nan32(n * sxx) - x86_nan32(sx * sx));
    let slope = x86_nan32(num / den);
    let intercept = x86_nan32(x86_nan32(sy - x86_nan32(slope * sx)) / n);
    let atime = f64_to_ll(intercept as f64);
    let rate = x86_nan64(1000.0 / slope as f64);
    let mut line = g(rate, 6).into_bytes();
    line.extend_from_slice(b" MB/s, ");
    line.extend(format_ns(atime));
    line.extend_from_slice(b" access time\n");
    out.print(&line);
    (atime, x86_nan32(rate as f32))
}

/// `try_intervals`: for sizes 512 << i, `count` reads at 0, 9·size, 18·size, ...;
/// min/avg/max per size, then the regression over the sizes after the first three.
fn try_intervals(clk: &mut Clock, out: &mut Out, count: i32, rounds: i32) -> Result<i64, Halt> {
    let ignore = 3;
    let rounds = rounds.max(0) as usize;
    let mut min = vec![0i64; rounds];
    let mut bytes = vec![0i64; rounds];
    for i in 0..rounds {
        bytes[i] = 512i64 << i;
        let mut times = vec![0i64; count as usize];
        let r = time_interval(clk, None, &mut times, bytes[i] as u64, 0, bytes[i] * 9)?;
        if r < 0 {
            // Refused up front (sizes over 64 MiB): flashbench would go on with an
            // uninitialised minimum.
            return Err(Halt::Fail("interval: -ENOMEM".into()));
        }
        let (lo, avg, hi) = (ns_min(&times), ns_avg(&times), ns_max(&times));
        let mut line = format!("{} bytes: min ", bytes[i]).into_bytes();
        line.extend(format_ns(lo));
        line.extend_from_slice(b" avg ");
        line.extend(format_ns(avg));
        line.extend_from_slice(b" max ");
        line.extend(format_ns(hi));
        let rate = x86_nan64(bytes[i] as f64 / (lo as f64 / 1000.0));
        line.extend(format!(": {} MB/s\n", g(rate, 6)).into_bytes());
        out.print(&line);
        min[i] = lo;
    }
    let (tail_ns, tail_bytes) = if rounds > ignore {
        (&min[ignore..], &bytes[ignore..])
    } else {
        (&min[..0], &bytes[..0])
    };
    let (atime, rate) = regression(out, tail_ns, tail_bytes, rounds as i32 - ignore as i32);
    for i in 0..rounds {
        let over = x86_nan32(
            min[i].wrapping_sub(atime) as f32
                - x86_nan32(bytes[i].wrapping_mul(1000) as f32 / rate),
        );
        let line = format!(
            "bytes {}, time {} overhead {}\n",
            bytes[i],
            min[i],
            g(x86_nan64(over as f64), 6)
        );
        out.print(line.as_bytes());
    }
    Ok(0)
}

fn run_vm(
    clk: &mut Clock,
    out: &mut Out,
    verbose: bool,
    ops: Vec<vm::Op>,
    max: i64,
) -> Result<(), Halt> {
    let mut m = Vm {
        ops,
        clock: clk,
        out,
        verbose,
    };
    // flashbench ignores what call() returns: an error has printed its messages.
    m.call(0, 0, max, 0)?;
    Ok(())
}

/// The parameters flashpath refuses because flashbench itself would hang, crash, read
/// uninitialised memory, or do what the simulator cannot (zero-length accesses). Each
/// names the option. Checked before anything runs.
pub fn refuse_unmodelled(a: &Args) -> Result<(), String> {
    let uses_bs = a.scatter || a.fat || a.align || a.write_align || a.open_au;
    if uses_bs && a.blocksize <= 0 {
        return Err(format!(
            "--blocksize={}: flashbench needs a positive block size (with 0 its -a, -O and -f loops never end)",
            a.blocksize
        ));
    }
    if (a.align || a.write_align) && a.blocksize >= 1 << 30 {
        return Err(format!(
            "--blocksize={}: flashbench's -a doubles it in a C int, which overflows from 2^30 on",
            a.blocksize
        ));
    }
    if (a.fat || a.open_au) && a.erasesize <= 0 {
        return Err(format!(
            "--erasesize={}: flashbench needs a positive erase size for -O and -f (0 divides by zero)",
            a.erasesize
        ));
    }
    if a.scatter && a.scatter_order < 0 {
        return Err(format!(
            "--scatter-order={}: a negative shift in flashbench (undefined behaviour)",
            a.scatter_order
        ));
    }
    if a.scatter && a.scatter_span == 0 {
        return Err("--scatter-span=0: zero-length reads, which do no I/O: not modelled".into());
    }
    if a.fat && a.fat_nr < 0 {
        return Err(format!(
            "--fat-nr={}: flashbench takes it as an unsigned count of about 4 billion",
            a.fat_nr
        ));
    }
    if a.open_au && a.open_au_nr < 0 {
        return Err(format!(
            "--open-au-nr={}: flashbench takes it as an unsigned count of about 4 billion",
            a.open_au_nr
        ));
    }
    if a.interval {
        if a.count <= 0 {
            return Err(format!(
                "--count={} with -i: flashbench divides by the count (SIGFPE) or sizes an array with it",
                a.count
            ));
        }
        if !(0..=18).contains(&a.interval_order) {
            return Err(format!(
                "--interval-order={}: flashbench's -i takes 0 to 18 (sizes up to 64 MiB); beyond that it reads uninitialised memory",
                a.interval_order
            ));
        }
    }
    Ok(())
}

/// `main()` after the device is open: the tests in flashbench's order, with its error
/// handling. Returns main's return value as an exit status.
fn flashbench_main(a: &Args, clk: &mut Clock, out: &mut Out) -> Result<u8, Halt> {
    if a.verbose > 1 {
        out.print(format!("filename: \"{}\"\n", a.argv1).as_bytes());
        out.print(format!("filesize: 0x{:x}\n", clk.size).as_bytes());
    }
    let verbose = a.verbose > 0;
    if a.scatter {
        let r = try_scatter(clk, out, a)?;
        if r < 0 {
            out.perror("try_scatter_io", -r);
            return Ok(r as u8);
        }
    }
    if a.fat {
        let (e, b) = (a.erasesize as u32, a.blocksize as u32);
        let p = vm::find_fat_program(e, b, a.fat_nr as u32, a.random);
        run_vm(clk, out, verbose, p, e as i64)?;
    }
    if a.align {
        let r = try_alignments(clk, out, a.count, a.blocksize, false)?;
        if r < 0 {
            out.perror("try_align", -r);
            return Ok(r as u8);
        }
    }
    if a.write_align {
        let r = try_alignments(clk, out, a.count, a.blocksize, true)?;
        if r < 0 {
            out.perror("try_write_align", -r);
            return Ok(r as u8);
        }
    }
    if a.open_au {
        let (e, b) = (a.erasesize as u32, a.blocksize as u32);
        let offset = if a.offset == u64::MAX {
            // (1024 * 1024 * 16 + erasesize - 1) / erasesize * erasesize, in unsigned int.
            let e32 = e;
            ((16u32 << 20).wrapping_add(e32).wrapping_sub(1) / e32).wrapping_mul(e32) as u64
        } else {
            a.offset
        };
        let p = vm::open_au_program(e, b, a.open_au_nr as u32, offset, a.random);
        run_vm(clk, out, verbose, p, e as i64)?;
    }
    if a.interval {
        try_intervals(clk, out, a.count, a.interval_order)?;
    }
    if a.program {
        run_vm(clk, out, verbose, vm::demo_program(), 4096 * 1024)?;
    }
    Ok(0)
}

/// What a run printed, and its exit status.
#[derive(Debug, Default)]
pub struct Outcome {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The scatter output for `-o FILE`.
    pub file: Vec<u8>,
    pub status: u8,
}

/// Runs flashbench's tests for `a` against `target`: the accesses of all of them in one
/// plan, timed at once, then the output. `Err`: a parameter or access flashpath does not
/// model, or the target's failure.
pub fn run(a: &Args, target: &mut dyn Target) -> Result<Outcome, String> {
    refuse_unmodelled(a)?;
    let size = i64::try_from(target.size()).map_err(|_| "device too large".to_string())?;
    if size <= 0 {
        return Err("the device has no capacity".into());
    }
    let to_file = a.out.as_deref().is_some_and(|o| o != "-");
    let mut rec = Clock::record(size);
    let mut scratch = Out {
        to_file,
        ..Out::default()
    };
    match flashbench_main(a, &mut rec, &mut scratch) {
        Ok(_) | Err(Halt::Exit(_)) => {}
        Err(Halt::Fail(m)) => return Err(m),
    }
    let Mode::Record(plan) = rec.mode else {
        unreachable!("the record pass records")
    };
    let times = if plan.is_empty() {
        Vec::new()
    } else {
        target.time(&plan)?
    };
    if times.len() != plan.len() {
        return Err(format!(
            "the target timed {} of {} accesses",
            times.len(),
            plan.len()
        ));
    }
    let mut clk = Clock::replay(size, &plan, &times);
    let mut out = Out {
        to_file,
        ..Out::default()
    };
    let status = match flashbench_main(a, &mut clk, &mut out) {
        Ok(s) | Err(Halt::Exit(s)) => s,
        Err(Halt::Fail(m)) => return Err(m),
    };
    if let Mode::Replay { next, .. } = clk.mode {
        if next != plan.len() {
            return Err(
                "flashbench's accesses depended on a time; the replay stopped early".into(),
            );
        }
    }
    Ok(Outcome {
        stdout: out.stdout,
        stderr: out.stderr,
        file: out.file,
        status,
    })
}

#[cfg(test)]
mod tests {
    use super::super::args::parse;
    use super::*;

    /// A target whose every access takes `base + len / 1000` ns, or what `f` says; it
    /// keeps the plan.
    struct Fixed {
        size: u64,
        plan: Vec<Access>,
        f: fn(usize, &Access) -> u64,
    }

    impl Target for Fixed {
        fn size(&self) -> u64 {
            self.size
        }
        fn time(&mut self, plan: &[Access]) -> Result<Vec<u64>, String> {
            self.plan = plan.to_vec();
            Ok(plan
                .iter()
                .enumerate()
                .map(|(i, a)| (self.f)(i, a))
                .collect())
        }
    }

    fn run_args(s: &str, size: u64, f: fn(usize, &Access) -> u64) -> (Outcome, Vec<Access>) {
        let v: Vec<String> = s.split_whitespace().map(str::to_string).collect();
        let a = parse(&v).unwrap();
        let mut t = Fixed {
            size,
            plan: Vec::new(),
            f,
        };
        let o = run(&a, &mut t).unwrap();
        (o, t.plan)
    }

    #[test]
    fn format_ns_branches() {
        assert_eq!(format_ns(999), b"999ns");
        assert_eq!(format_ns(-12345), b"-12345n");
        assert_eq!(format_ns(1000), "1µs".as_bytes());
        assert_eq!(format_ns(53_300), "53.3µs".as_bytes());
        assert_eq!(format_ns(999_999), "1e+03µ".as_bytes());
        assert_eq!(format_ns(1_080_000), b"1.08ms");
        assert_eq!(format_ns(1_234_567_890), b"1.235s");
        assert_eq!(format_ns(i64::MAX), b"9.223e+");
    }

    /// maxalign for the README's case and a 32 GB eMMC, worked by hand.
    #[test]
    fn align_positions() {
        // 1 GiB / 7 = 153391689: 2 KiB doubled to 256 MiB (268435456 >= 153391689).
        let (max, al) = align_steps(1 << 30, 1024);
        assert_eq!(max, 268_435_456);
        assert_eq!(al.first(), Some(&268_435_456));
        assert_eq!(al.last(), Some(&2048));
        assert_eq!(al.len(), 18);
        // 31268536320 / 7 = 4466933760 > 2^32: maxalign 2^33, down to 32 KiB: 19 lines.
        let (max, al) = align_steps(31_268_536_320, 16384);
        assert_eq!(max, 1 << 33);
        assert_eq!(al.len(), 19);
    }

    #[test]
    fn align_reduction_is_min_then_mean() {
        // diff = on - (pre + post) / 2, truncating.
        assert_eq!(
            align_figures(&[10; 7], &[20; 7], &[11; 7]),
            [10, 20, 11, 20 - 10]
        );
        assert_eq!(
            align_figures(&[1, 2, 3, 4, 5, 6, 7], &[7; 7], &[0; 7]),
            [4, 7, 0, 5]
        );
        assert_eq!(align_figures(&[100; 7], &[10; 7], &[100; 7])[3], -90);
    }

    /// `-a` reads: per pass 7 pre, 7 on, 7 post; minimum per position over passes.
    #[test]
    fn align_plan_and_minimum() {
        // 64 MiB device, bs 8 MiB: maxalign 16 MiB (64M/7 = 9.6M), aligns 16M only.
        let (o, plan) = run_args("-a -c 2 -b 8388608 dev", 64 << 20, |i, _| {
            // pass 0 slow, pass 1 fast: the minimum is pass 1's.
            if i < 21 {
                5_000_000
            } else {
                1_000 + i as u64
            }
        });
        assert_eq!(plan.len(), 2 * 21);
        let bs = 8u64 << 20;
        let m = 16u64 << 20;
        for (k, a) in plan[..21].iter().enumerate() {
            let (sweep, i) = (k / 7, (k % 7) as u64);
            let base = i * m + m;
            let want = [base - bs, base - bs / 2, base][sweep];
            assert_eq!((a.offset, a.len, a.write), (want, bs, false), "access {k}");
        }
        // Pass 1 times: pre 1021..1027, on 1028..1034, post 1035..1041.
        // Means: 1024, 1031, 1038; diff = 1031 - (1024 + 1038) / 2 = 0.
        assert_eq!(
            String::from_utf8(o.stdout).unwrap(),
            "align 16777216\tpre 1.02µs\ton 1.03µs\tpost 1.04µs\tdiff 0ns\n"
        );
        // Offsets past the end are left for the target to wrap: 7 × 16 MiB > 64 MiB.
        assert!(plan.iter().any(|a| a.offset >= 64 << 20));
    }

    #[test]
    fn write_align_writes_the_same_positions() {
        let (r, rp) = run_args("-a -c 1 -b 8388608 dev", 64 << 20, |_, _| 2000);
        let (w, wp) = run_args("-A -c 1 -b 8388608 dev", 64 << 20, |_, _| 2000);
        assert_eq!(rp.len(), wp.len());
        for (x, y) in rp.iter().zip(&wp) {
            assert_eq!((x.offset, x.len), (y.offset, y.len));
            assert!(!x.write && y.write && y.fill == 0x5a);
        }
        let r = String::from_utf8(r.stdout).unwrap();
        let w = String::from_utf8(w.stdout).unwrap();
        assert_eq!(format!("write {r}"), w);
    }

    #[test]
    fn scatter_order_and_minimum() {
        let (positions, complete) = scatter_order(8);
        assert!(complete);
        assert_eq!(positions[0], 0);
        let mut s = positions.clone();
        s.sort_unstable();
        s.dedup();
        // flashbench.c's LFSR never returns to 0: 0 plus the 255 other values.
        assert_eq!(s.len(), 256);
        let (o, plan) = run_args("-s --scatter-order=8 -c 2 -b 4096 dev", 1 << 30, |i, a| {
            if i < 256 {
                9_000_000
            } else {
                a.offset / 4096 * 1000 + 500
            }
        });
        assert_eq!(plan.len(), 512);
        let text = String::from_utf8(o.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 256);
        assert_eq!(lines[0], "0.000000\t0.000500");
        // Position 3: 3 × 4096 B = 0.011719 MiB; min 3500 ns = 0.003500 ms.
        assert_eq!(lines[3], "0.011719\t0.003500");
        // An order below 8 stops after its first read with flashbench's internal error.
        let (o, plan) = run_args("-s --scatter-order=3 -c 1 dev", 1 << 30, |_, _| 1);
        assert_eq!(plan.len(), 1);
        assert_eq!(o.status, 234);
        assert_eq!(o.stderr, b"flashbench: internal error\n");
        assert!(o.stdout.is_empty());
    }

    /// -O: chunk j goes to each AU (LFSR order) before chunk j+1; AUs 12 erase blocks
    /// apart from 16 MiB; the line is len and len / mean time.
    #[test]
    fn open_au_plan() {
        let e = 4u64 << 20;
        let (o, plan) = run_args("-O -e 4194304 -b 2097152 dev", 1 << 30, |_, a| a.len / 1000);
        // Lengths 4 MiB (1 chunk) and 2 MiB (2 chunks), 2 AUs each: 2 + 4 writes.
        assert_eq!(plan.len(), 6);
        let start = 16u64 << 20;
        let au = |k: u64| start + k * 12 * e;
        let order = super::super::lfsr::off_rand_order(2).unwrap();
        let want: Vec<(u64, u64)> = [(0u64, e)]
            .into_iter()
            .chain([(0, e / 2), (e / 2, e / 2)])
            .flat_map(|(at, len)| order.iter().map(move |&k| (au(k as u64) + at, len)))
            .collect();
        let got: Vec<(u64, u64)> = plan.iter().map(|a| (a.offset, a.len)).collect();
        assert_eq!(got, want);
        assert!(plan.iter().all(|a| a.write && a.fill == 0x5a));
        // Each write takes len/1000 ns: 10^9 × len / (len / 1000) = 10^12 B/s = 1000G/s.
        assert_eq!(
            String::from_utf8(o.stdout).unwrap(),
            "4MiB    1000G/s \n2MiB    1000G/s \n"
        );
    }

    /// -O -r: an AU's chunks in vm.c's LFSR order (of erasesize/len values), each chunk to
    /// every AU (the AUs in the LFSR order of their count) before the next chunk.
    #[test]
    fn open_au_random_chunk_order() {
        let (_, plan) = run_args("-O -r -e 1048576 -b 262144 dev", 1 << 30, |_, _| 1000);
        let au = |k: u32| (16u64 << 20) + k as u64 * 12 * (1 << 20);
        let aus = super::super::lfsr::off_rand_order(2).unwrap();
        let mut want = Vec::new();
        for len in [1u64 << 20, 1 << 19, 1 << 18] {
            let chunks = super::super::lfsr::off_rand_order(((1 << 20) / len) as u32).unwrap();
            for &c in &chunks {
                for &k in &aus {
                    want.push((au(k) + c as u64 * len, len));
                }
            }
        }
        let got: Vec<(u64, u64)> = plan.iter().map(|a| (a.offset, a.len)).collect();
        assert_eq!(got, want);
        // The chunk order is not linear at 4 chunks.
        assert_ne!(
            super::super::lfsr::off_rand_order(4).unwrap(),
            vec![0, 1, 2, 3]
        );
    }

    /// -f: each of fat-nr AUs from offset 0 gets its chunks in turn; a column per AU,
    /// each followed by two spaces (PRINTF's "%s " and the array separator).
    #[test]
    fn find_fat_plan() {
        let (o, plan) = run_args("-f --fat-nr=3 -e 1048576 -b 524288 dev", 1 << 30, |_, a| {
            // AU k takes (k + 1) ms per write.
            (a.offset / (1 << 20) + 1) * 1_000_000
        });
        let offs: Vec<u64> = plan.iter().map(|a| a.offset).collect();
        let m = 1u64 << 20;
        assert_eq!(
            offs,
            vec![0, m, 2 * m, 0, m / 2, m, m + m / 2, 2 * m, 2 * m + m / 2]
        );
        // 1 MiB in 1, 2, 3 ms: 1.05G/s, 524M/s, 350M/s.
        assert_eq!(
            String::from_utf8(o.stdout).unwrap(),
            "1MiB    1.049G/  524M/s   350M/s   \n512KiB  524M/s   262M/s   175M/s   \n"
        );
    }

    #[test]
    fn interval_lines() {
        let (o, plan) = run_args("-i --interval-order=5 -c 2 dev", 1 << 30, |_, a| {
            // 100 µs access time + 10 ns per byte (100 MB/s).
            100_000 + a.len * 10
        });
        assert_eq!(plan.len(), 10);
        assert_eq!(plan[1].offset, 9 * 512);
        let text = String::from_utf8(o.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "512 bytes: min 105µs avg 105µs max 105µs: 4.87062 MB/s"
        );
        // The regression over 4 KiB and 8 KiB: slope 10 ns/B → 100 MB/s, 100 µs.
        assert_eq!(lines[5], "100 MB/s, 100µs access time");
        assert_eq!(lines[6], "bytes 512, time 105120 overhead 0");
        assert_eq!(lines.len(), 11);
    }

    #[test]
    fn unmodelled_parameters_are_refused() {
        for s in [
            "-a -b 0 dev",
            "-O -e 0 dev",
            "-i -c 0 dev",
            "-i --interval-order=19 dev",
            "-s --scatter-span=0 dev",
            "-s --scatter-order=-1 dev",
            "-f --fat-nr=-1 dev",
            "-O --open-au-nr=-2 dev",
            "-a -b 1073741824 dev",
        ] {
            let v: Vec<String> = s.split_whitespace().map(str::to_string).collect();
            let a = parse(&v).unwrap();
            assert!(refuse_unmodelled(&a).is_err(), "{s}");
        }
    }

    #[test]
    fn enomem_is_flashbench_s() {
        // -a with 128 MiB blocks: the first read fails before any I/O.
        let (o, plan) = run_args("-a -b 134217728 dev", 1 << 40, |_, _| 1);
        assert!(plan.is_empty());
        assert_eq!(o.status, 244);
        assert_eq!(o.stderr, b"try_align: Cannot allocate memory\n");
    }
}
