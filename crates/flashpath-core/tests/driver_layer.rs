//! A host driver as a layer on its own: the UFS driver driven through `handle(now,
//! input, ctx)` by a test context instead of the simulation, with a block layer, idle
//! cores and a device that answers every read a fixed time after its command arrives.
//! One 4 KiB read must end exactly when the driver's own steps add up to (an analytic
//! case: nothing else is in flight), and the driver's MMC counterpart answers the
//! same way through the same interface.

use flashpath_core::config::preset;
use flashpath_core::device::{self, DevOp};
use flashpath_core::driver::{self, DriverCtx, Event, HostDriver, Input, Output};
use flashpath_core::engine::{transfer_ns, SimTime};
use flashpath_core::host::block::{Bio, BlockLayer, ReqId};
use flashpath_core::host::cpu::Cpu;
use flashpath_core::host::{DriverKind, HostConfig};
use flashpath_core::stats::SystemStats;
use flashpath_core::trace::{BlkAction, TraceKind};
use flashpath_core::workload::Dir;
use std::collections::BTreeMap;

/// What the device takes from a read command's arrival to its data being ready.
const DEVICE_NS: u64 = 50_000;

/// The kernel around the driver, reduced to what a single request needs.
struct TestCtx {
    block: BlockLayer,
    cpu: Cpu,
    host: HostConfig,
    now: SimTime,
    /// Timed steps by (time, order of scheduling).
    events: BTreeMap<(SimTime, u64), Event>,
    device_inputs: BTreeMap<(SimTime, u64), device::Input>,
    seq: u64,
    outputs: Vec<Output>,
    sys: SystemStats,
    irq_at: Vec<(ReqId, SimTime)>,
}

impl TestCtx {
    fn new(host: HostConfig) -> TestCtx {
        TestCtx {
            block: BlockLayer::new(
                host.block.scheduler,
                host.block.nr_requests,
                host.block.max_request_bytes,
            ),
            cpu: Cpu::new(host.cores),
            host,
            now: 0,
            events: BTreeMap::new(),
            device_inputs: BTreeMap::new(),
            seq: 0,
            outputs: Vec::new(),
            sys: SystemStats::default(),
            irq_at: Vec::new(),
        }
    }

    /// The device: a read's data is ready `DEVICE_NS` after its command; a write is
    /// taken at once.
    fn answer(&self, input: device::Input) -> (SimTime, device::Output) {
        let device::Input::Command(cmd) = input else {
            panic!("only whole commands in this test: {input:?}");
        };
        match cmd.op {
            DevOp::Read => {
                let ready = self.now + DEVICE_NS;
                (
                    ready,
                    device::Output::ReadReady {
                        tag: cmd.tag,
                        last_ready: ready,
                    },
                )
            }
            _ => (
                self.now,
                device::Output::Done {
                    tag: cmd.tag,
                    status: device::DevStatus::Ok,
                },
            ),
        }
    }
}

impl DriverCtx for TestCtx {
    fn block(&mut self) -> &mut BlockLayer {
        &mut self.block
    }
    fn cpu(&mut self) -> &mut Cpu {
        &mut self.cpu
    }
    fn blk_trace(&mut self, _at: SimTime, _r: ReqId, _action: BlkAction, _core: u32) {}
    fn blk_trace_direct(&mut self, _at: SimTime, _r: ReqId, _core: u32) {}
    fn device(&mut self, input: device::Input, emits: &mut Vec<(SimTime, device::Output)>) {
        emits.push(self.answer(input));
    }
    fn schedule(&mut self, at: SimTime, ev: Event) {
        self.seq += 1;
        self.events.insert((at, self.seq), ev);
    }
    fn device_at(&mut self, at: SimTime, input: device::Input) {
        self.seq += 1;
        self.device_inputs.insert((at, self.seq), input);
    }
    fn wake(&mut self, core: u32, at: SimTime) -> SimTime {
        let w = self.host.costs.wakeup_ns;
        self.cpu.run_kernel(core, at, w, "wakeup")
    }
    fn trace(&mut self, t: SimTime, req: Option<ReqId>, kind: TraceKind) {
        if let (Some(r), TraceKind::Started { .. }) = (req, kind) {
            self.block.mark_hw_start(r, t);
        }
    }
    fn tracing(&self) -> bool {
        false
    }
    fn irq_raised(&mut self, r: ReqId, at: SimTime) {
        self.block.mark_irq(r, at);
        self.irq_at.push((r, at));
    }
    fn sys(&mut self) -> &mut SystemStats {
        &mut self.sys
    }
    fn end_cost(&self, r: ReqId) -> u64 {
        self.host.costs.complete_ns * self.block.req(r).bios.len() as u64
    }
    fn fua(&self, _r: ReqId) -> bool {
        false
    }
    fn jobs_running(&self) -> bool {
        true
    }
    fn emit(&mut self, o: Output) {
        self.outputs.push(o);
    }
    fn device_map_entries(&mut self, _first: u32, _n: u32, _buf: &mut Vec<u32>) {
        unreachable!("no HPB in this test");
    }
}

/// Runs `driver` until nothing is left; returns when each request ended.
fn run(driver: &mut driver::Driver, ctx: &mut TestCtx) -> Vec<(ReqId, SimTime)> {
    let mut ended = Vec::new();
    loop {
        let next_ev = ctx.events.keys().next().copied();
        let next_dev = ctx.device_inputs.keys().next().copied();
        let (at, input) = match (next_ev, next_dev) {
            (None, None) => break,
            (Some(e), d) if d.is_none_or(|d| e <= d) => {
                let ev = ctx.events.remove(&e).unwrap();
                (e.0, Input::Event(ev))
            }
            (_, Some(d)) => {
                let input = ctx.device_inputs.remove(&d).unwrap();
                ctx.now = d.0;
                let (t, out) = ctx.answer(input);
                (d.0, Input::Device { at: t, out })
            }
            (Some(_), None) => unreachable!(),
        };
        ctx.now = at;
        driver.handle(at, input, ctx);
        for o in std::mem::take(&mut ctx.outputs) {
            let Output::EndRequest(r) = o;
            let mut ios = Vec::new();
            ctx.block.complete(at, r, &mut ios);
            ended.push((r, at));
            driver.handle(at, Input::Ended(r), ctx);
        }
    }
    ended
}

fn presets(host: &str, device: &str) -> (HostConfig, device::DeviceConfig) {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../presets");
    let h = std::fs::read_to_string(format!("{root}/hosts/{host}.toml")).unwrap();
    let d = std::fs::read_to_string(format!("{root}/devices/{device}.toml")).unwrap();
    (
        preset::load_host(&h, host, &[]).unwrap(),
        preset::load_device(&d, device, &[]).unwrap(),
    )
}

fn read_bio(core: u32) -> Bio {
    Bio {
        io: 0,
        dir: Dir::Read,
        sector: 8 * 1000,
        sectors: 8,
        cpu: core,
        queued_at: 0,
        discard: false,
        nomerge: false,
    }
}

#[test]
fn one_ufs_read_ends_when_the_drivers_steps_add_up() {
    let (host, dev) = presets("sd835-phone", "ufs21-64g");
    let u = host.ufs.clone().unwrap();
    assert!(
        u.intr_aggr.is_none(),
        "the sum below has one interrupt per response"
    );
    let mut drv = driver::build(DriverKind::Ufs, &host, &dev).unwrap();
    let mut ctx = TestCtx::new(host.clone());
    // Submitted from core 5: another cluster than the IRQ core's (llc_cores 4), so the
    // block completion runs there after an IPI.
    let core = 5;
    assert_ne!(core / u.llc_cores, host.irq_core / u.llc_cores);
    assert!(ctx.block.submit(0, read_bio(core)));
    drv.handle(0, Input::Kick { core }, &mut ctx);
    let ended = run(&mut drv, &mut ctx);

    // Scheduler none: the submitter issues directly (queuecommand on its core).
    let doorbell = u.queuecommand_ns + u.queuecommand_per_4k_ns + u.doorbell_ns;
    let cmd_in = doorbell + u.hc_fetch_ns + u.upiu_ns(0);
    let ready = cmd_in + DEVICE_NS;
    // The DATA IN UPIU carries the 4 KiB; its last 4 KiB is ready from `ready`.
    assert!(u.upiu_ns(4096) >= transfer_ns(4096, u.link_bytes_per_s));
    let response = ready + u.upiu_ns(4096) + u.upiu_ns(0);
    let irq = response + host.costs.irq_ns;
    let completion = irq + u.completion_ns + u.completion_per_4k_ns;
    let end = completion + host.costs.irq_ns + host.costs.complete_ns;
    assert_eq!(
        ctx.block.req(0).hw_at,
        doorbell,
        "hw starts at the doorbell"
    );
    assert_eq!(ctx.irq_at, vec![(0, response)]);
    assert_eq!(ended, vec![(0, end)]);
    let mut sys = SystemStats::default();
    drv.report(&mut sys);
    // The link moved the command, the data and the response, one direction each way.
    assert_eq!(
        sys.link_busy_ns,
        [u.upiu_ns(0), u.upiu_ns(4096) + u.upiu_ns(0)]
    );
}

#[test]
fn the_mmc_driver_answers_the_same_interface() {
    let (host, dev) = presets("sprd-sc9863a", "emmc51-hs400-32g");
    let mut drv = driver::build(DriverKind::MmcLegacy, &host, &dev).unwrap();
    let mut ctx = TestCtx::new(host.clone());
    assert!(ctx.block.submit(0, read_bio(1)));
    drv.handle(0, Input::Kick { core: 1 }, &mut ctx);
    let ended = run(&mut drv, &mut ctx);
    assert_eq!(ended.len(), 1, "the read ends once");
    let (r, end) = ended[0];
    let irq = ctx.irq_at[0].1;
    // The request was on the bus, its data ready DEVICE_NS after the command: the
    // interrupt comes after that and the end after the interrupt.
    assert!(irq > DEVICE_NS && end > irq, "irq {irq}, end {end}");
    assert_eq!(ctx.block.req(r).irq_at, irq);
    let mut sys = SystemStats::default();
    drv.report(&mut sys);
    assert!(sys.bus_busy_ns > 0);
}
