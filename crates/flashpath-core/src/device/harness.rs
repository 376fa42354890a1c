//! A device on its own: an event queue that delivers the device's timers and one host
//! command at a time, as the host side would (QD1, no bus). For tests, benches and the
//! flashbench-style probes; the full simulator wires the device through `sim::route`.

use super::{DevCommand, DevOp, DevStatus, Device, DeviceConfig, Input, Output};
use crate::engine::{EventQueue, Outbox, SimTime};

/// When a command finished, as seen at the device's side of the bus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// When the command arrived.
    pub issued: SimTime,
    /// Reads: first data ready (`ReadReady` emit time); others: the `Done` time.
    pub first: SimTime,
    /// Reads: `last_ready`; others: the `Done` time.
    pub done: SimTime,
    pub status: DevStatus,
}

pub struct Harness {
    pub dev: Device,
    queue: EventQueue<Input>,
    out: Outbox<Input, Output>,
    now: SimTime,
    last_done: SimTime,
    next_tag: u32,
}

impl Harness {
    pub fn new(cfg: &DeviceConfig, seed: u64) -> Harness {
        Harness {
            dev: Device::new(cfg, seed),
            queue: EventQueue::new(),
            out: Outbox::new(),
            now: 0,
            last_done: 0,
            next_tag: 0,
        }
    }

    /// Time of the last event processed.
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Sends a command arriving at `at` (not before the last event processed), runs the
    /// device until that command's output and returns it. Device timers due before `at`
    /// run first.
    pub fn run(&mut self, at: SimTime, op: DevOp, lba: u64, sectors: u32) -> Completion {
        self.run_fua(at, op, lba, sectors, false)
    }

    /// `run` with the command's FUA flag (reliable write) given.
    pub fn run_fua(
        &mut self,
        at: SimTime,
        op: DevOp,
        lba: u64,
        sectors: u32,
        fua: bool,
    ) -> Completion {
        let at = at.max(self.now);
        let tag = self.next_tag;
        self.next_tag = self.next_tag.wrapping_add(1);
        self.queue.push(
            at,
            Input::Command(DevCommand {
                tag,
                op,
                lba,
                sectors,
                fua,
                hpb: 0,
            }),
        );
        loop {
            let (t, input) = self
                .queue
                .pop()
                .expect("the device went idle without answering the command");
            self.now = t;
            self.dev.handle(t, &input, &mut self.out);
            let mut found = None;
            let (timers, emits) = self.out.drain();
            for (when, i) in timers {
                assert!(when >= t, "timer set in the past");
                self.queue.push(when, i);
            }
            for (when, o) in emits {
                assert!(when >= t, "output emitted in the past");
                match o {
                    Output::ReadReady { tag: g, last_ready } if g == tag => {
                        found = Some(Completion {
                            issued: at,
                            first: when,
                            done: last_ready,
                            status: DevStatus::Ok,
                        })
                    }
                    Output::Done { tag: g, status } if g == tag => {
                        found = Some(Completion {
                            issued: at,
                            first: when,
                            done: when,
                            status,
                        })
                    }
                    other => panic!("unexpected output {other:?}"),
                }
            }
            if let Some(c) = found {
                self.last_done = c.done;
                return c;
            }
        }
    }

    /// Runs a command right after the previous one finished (QD1, zero host time).
    /// The tag the next command will carry (to stage its data in the content port).
    pub fn next_tag(&self) -> u32 {
        self.next_tag
    }

    pub fn next(&mut self, op: DevOp, lba: u64, sectors: u32) -> Completion {
        self.run(self.last_done.max(self.now), op, lba, sectors)
    }

    /// Processes every pending device timer (background drain and GC) to the end.
    pub fn run_until_idle(&mut self) {
        while let Some((t, input)) = self.queue.pop() {
            self.now = t;
            self.dev.handle(t, &input, &mut self.out);
            let (timers, emits) = self.out.drain();
            for (when, i) in timers {
                self.queue.push(when, i);
            }
            assert_eq!(emits.count(), 0, "output with no command pending");
        }
    }
}
