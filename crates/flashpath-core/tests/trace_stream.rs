//! The trace streamed as the run goes (`Sim::drain_trace` between steps, fed to
//! `ChromeStream` and `BlktraceStream`) gives the same bytes as the whole-trace
//! exports (`timeline::chrome_json`, `blktrace::encode`), keeps a backlog that does not
//! grow with the run, and every record respects the drain's floor (debug assertions
//! in `Trace::push` and the CPU's booking check it while these runs drain).

mod common;

use flashpath_core::blktrace::{self, BlkDevice, BlktraceStream};
use flashpath_core::host::DriverKind;
use flashpath_core::sim::{Precondition, Sim, SimConfig};
use flashpath_core::timeline::{self, ChromeStream};
use flashpath_core::workload::{JobConfig, Pattern, Submission};

const EMMC: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");
const UFS: &str = include_str!("../../../presets/devices/ufs21-64g.toml");
const HOST: &str = include_str!("../../../presets/hosts/sprd-sc9863a.toml");
const HOST_CQE: &str = include_str!("../../../presets/hosts/sprd-sc9863a-cqe.toml");
const HOST_UFS: &str = include_str!("../../../presets/hosts/sd835-phone.toml");

fn config(host: &str, dev: &str, jobs: Vec<JobConfig>, pre: Precondition) -> SimConfig {
    let (host, device) = common::system(host, dev);
    SimConfig {
        driver: host.default_driver,
        host,
        device,
        jobs,
        precondition: pre,
    }
}

struct Streamed {
    json: String,
    blk: Vec<Vec<u8>>,
    max_kept: usize,
    drains: usize,
}

/// Runs `cfg` draining the trace every `step_ns` of simulated time.
fn streamed(cfg: SimConfig, step_ns: u64) -> Streamed {
    let driver = cfg.driver;
    let mut sim = Sim::new(cfg).unwrap();
    sim.enable_trace();
    let tr = sim.trace().unwrap();
    let (cores, tasks) = (tr.cores, tr.tasks.clone());
    let mut json = ChromeStream::new(cores);
    let mut blk = BlktraceStream::new(BlkDevice::for_driver(driver), cores, tasks);
    let mut parts: Vec<String> = vec![String::new(); timeline::SECTIONS];
    let mut files: Vec<Vec<u8>> = vec![Vec::new(); blk.out.len()];
    let take = |json: &mut ChromeStream,
                blk: &mut BlktraceStream,
                parts: &mut Vec<String>,
                files: &mut Vec<Vec<u8>>| {
        for (p, s) in parts.iter_mut().zip(json.sections.iter_mut()) {
            p.push_str(s);
            s.clear();
        }
        for (f, b) in files.iter_mut().zip(blk.out.iter_mut()) {
            f.extend_from_slice(b);
            b.clear();
        }
    };
    let mut limit = step_ns;
    let mut drains = 0;
    while sim.run_until(limit) {
        limit += step_ns;
        let c = sim.drain_trace().unwrap();
        blk.feed(&c);
        json.feed(c);
        take(&mut json, &mut blk, &mut parts, &mut files);
        drains += 1;
    }
    let rest = sim.take_trace().unwrap().into_chunk();
    blk.finish(&rest);
    json.finish(rest);
    take(&mut json, &mut blk, &mut parts, &mut files);
    let mut out = json.head();
    for p in &parts {
        out.push_str(p);
    }
    out.push_str(ChromeStream::tail());
    sim.finish();
    Streamed {
        json: out,
        blk: files,
        max_kept: json.max_kept.max(blk.max_kept),
        drains,
    }
}

fn whole(cfg: SimConfig) -> (String, Vec<Vec<u8>>) {
    let driver = cfg.driver;
    let mut sim = Sim::new(cfg).unwrap();
    sim.enable_trace();
    sim.run_until(u64::MAX);
    let tr = sim.take_trace().unwrap();
    sim.finish();
    (
        timeline::chrome_json(&tr),
        blktrace::encode(&tr, &BlkDevice::for_driver(driver)),
    )
}

fn check_same(make: impl Fn() -> SimConfig, step_ns: u64) {
    let (json, blk) = whole(make());
    let s = streamed(make(), step_ns);
    assert!(s.drains >= 5, "the run drained only {} times", s.drains);
    assert!(blk.iter().any(|b| !b.is_empty()));
    assert_eq!(s.blk.len(), blk.len());
    for (cpu, (a, b)) in s.blk.iter().zip(&blk).enumerate() {
        assert!(a == b, "blktrace CPU {cpu}: the streamed file differs");
    }
    assert!(s.json == json, "the streamed timeline differs");
}

fn async_job(name: &str, read_pct: u32, depth: u32, ios: u64) -> JobConfig {
    let mut j = JobConfig::simple(name, Pattern::Random, read_pct, 4096, 4096 * ios);
    j.submission = Submission::Async {
        depth,
        batch_submit: 1,
        batch_complete_min: 1,
    };
    j
}

#[test]
fn streamed_exports_equal_whole_trace_exports_mmc() {
    check_same(
        || {
            let mut b = JobConfig::simple("seq", Pattern::Sequential, 0, 65536, 8 << 20);
            b.offset = 64 << 20;
            config(
                HOST,
                EMMC,
                vec![async_job("a", 70, 8, 3000), b],
                Precondition::Off,
            )
        },
        200_000,
    );
}

#[test]
fn streamed_exports_equal_whole_trace_exports_cqe_preconditioned() {
    // Preconditioning first: the reported jobs' start is unknown for many drains.
    check_same(
        || {
            let mut j = async_job("q", 50, 16, 2000);
            j.size = 16 << 20;
            config(HOST_CQE, EMMC, vec![j], Precondition::Random)
        },
        500_000,
    );
}

#[test]
fn streamed_exports_equal_whole_trace_exports_ufs_buffered() {
    check_same(
        || {
            let mut w = JobConfig::simple("w", Pattern::Sequential, 0, 16384, 16 << 20);
            w.direct = false;
            w.end_fsync = true;
            config(
                HOST_UFS,
                UFS,
                vec![w, async_job("r", 100, 4, 1500)],
                Precondition::Off,
            )
        },
        300_000,
    );
}

/// The backlog the encoders keep between drains does not grow with the run: ten times
/// the I/Os, about the same largest backlog.
#[test]
fn streamed_backlog_does_not_grow_with_the_run() {
    let run = |ios: u64| {
        streamed(
            config(
                HOST,
                EMMC,
                vec![async_job("a", 70, 8, ios)],
                Precondition::Off,
            ),
            1_000_000,
        )
    };
    let small = run(1_000);
    let big = run(10_000);
    assert!(big.drains >= 8 * small.drains);
    assert!(
        big.max_kept <= small.max_kept * 2 + 64,
        "backlog {} for 10x the I/Os, {} for the short run",
        big.max_kept,
        small.max_kept
    );
    // And it is small: the events of the requests in flight.
    assert!(big.max_kept < 5_000, "{}", big.max_kept);
}

/// Records booked ahead come out in time order, across chunks: a synthetic trace whose
/// block and request events are recorded out of time order (as work booked ahead on
/// a resource is), cut into chunks that respect the floor, streams to the whole
/// trace's bytes.
#[test]
fn events_booked_ahead_are_written_in_time_order() {
    use flashpath_core::trace::{pid, BlkAction, BlkOp, Trace, TraceChunk, TraceKind};
    use flashpath_core::workload::Dir;
    let blk = |action, sector| TraceKind::Block {
        action,
        sector,
        sectors: 8,
        dir: Dir::Read,
        op: BlkOp::Data,
        cpu: (sector % 2) as u32,
        pid: pid::THREAD,
    };
    let mut tr = Trace {
        cores: 2,
        start: 1_000,
        started: true,
        tasks: vec![(pid::THREAD, "job".into())],
        ..Trace::default()
    };
    // Each request: Q G I D at t, its C booked ahead at t + 5 us, recorded first.
    let mut cuts = Vec::new();
    for r in 0..40u64 {
        let t = 1_000 + r * 2_000;
        let req = Some((r % 3) as u32);
        tr.push(t + 5_000, req, TraceKind::Completed);
        tr.push(t + 5_000, req, blk(BlkAction::Complete, r));
        tr.push(t + 4_000, req, TraceKind::Irq { core: 0 });
        tr.push(t, None, blk(BlkAction::Queue, r));
        tr.push(t, req, blk(BlkAction::GetRq, r));
        tr.push(t, req, blk(BlkAction::Insert, r));
        tr.push(t, req, blk(BlkAction::Issue, r));
        tr.push(
            t + 1,
            req,
            TraceKind::Started {
                core: 0,
                ctx: flashpath_core::trace::Ctx::Task,
            },
        );
        cuts.push((tr.events.len(), t + 1));
    }
    let dev = BlkDevice::for_driver(DriverKind::MmcLegacy);
    let want_json = timeline::chrome_json(&tr);
    let want_blk = blktrace::encode(&tr, &dev);
    let mut json = ChromeStream::new(2);
    let mut bs = BlktraceStream::new(dev, 2, tr.tasks.clone());
    let mut parts = vec![String::new(); timeline::SECTIONS];
    let mut files = vec![Vec::new(); 2];
    let mut from = 0;
    for (i, &(to, now)) in cuts.iter().enumerate() {
        if i % 3 != 2 {
            continue;
        }
        let c = TraceChunk {
            events: tr.events[from..to].to_vec(),
            now,
            start: Some(1_000),
            cores: 2,
            ..TraceChunk::default()
        };
        from = to;
        bs.feed(&c);
        json.feed(c);
    }
    let rest = TraceChunk {
        events: tr.events[from..].to_vec(),
        now: u64::MAX,
        start: Some(1_000),
        cores: 2,
        ..TraceChunk::default()
    };
    bs.finish(&rest);
    json.finish(rest);
    for (p, s) in parts.iter_mut().zip(&json.sections) {
        p.push_str(s);
    }
    for (f, b) in files.iter_mut().zip(&bs.out) {
        f.extend_from_slice(b);
    }
    let mut got = json.head();
    parts.iter().for_each(|p| got.push_str(p));
    got.push_str(ChromeStream::tail());
    assert_eq!(got, want_json);
    assert!(files == want_blk, "the streamed blktrace files differ");
    // The completions booked ahead were kept, not written early.
    assert!(json.max_kept >= 2 && bs.max_kept >= 1);
}
