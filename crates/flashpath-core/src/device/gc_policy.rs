//! When host rows may be programmed while garbage collection runs on a die: GC paced by
//! host writes, as UFS and eMMC firmware runs its background operations (JEDEC
//! JESD220G §13.4.4, `bBackgroundOpStatus`; docs/mechanisms.md "GC pacing").
//!
//! ```text
//!  free blocks of a die    status (bBackgroundOpStatus)   host row on that die
//!  ≥ gc_threshold_blocks   not required (00h)             goes at once
//!  < gc_threshold_blocks   required (01h/02h): paced      waits while GC owes copies for
//!                                                         the host rows already
//!                                                         programmed, at most `slice_ns`
//!  < urgent_blocks         critical (03h): urgent         waits until GC owes nothing
//! ```
//!
//! What GC owes: a victim with `v` of its `S` slots valid gives `S − v` slots back for
//! `v` copies, so `h` host slots programmed while GC is required need `h · v / (S − v)`
//! copies to keep the die's free space where it is. A host row waits while
//! `copied · (S − v) < h · v` (exact integer arithmetic); when the victim is erased, the
//! host slots it did not cover (`h − (S − v)`, if positive) carry over to the next one.
//! GC itself runs as before (one victim row per step, back to back while the die is
//! below the threshold or a victim is under way): the policy only decides when the
//! host's next row may go, so that the host cannot use up the free blocks faster than GC
//! returns them and never finds the die out of blocks (the multi-second stall of block-
//! granular allocation: the host waits until GC has freed a whole block net, which at
//! 90 % valid victims is about ten victims).
//!
//! `slice_ns` bounds how long a host row waits for a paced GC slice:
//! `bBackgroundOpsTermLat`, the latency JEDEC lets background operations hold off a
//! command's data transfer (10 ms units; not applied at the critical status).
//!
//! Leaves out: GC started by the host (BKOPS_EN/fBackgroundOpsEn, URGENT_BKOPS
//! exceptions); the policy is the device's own. Units: ns, slots. No randomness.

use crate::engine::SimTime;

/// Pacing parameters (preset `[ftl]` `gc_urgent_blocks`, `gc_slice`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcPacing {
    /// Below this many free blocks GC is urgent: host rows wait for every copy owed.
    pub urgent_blocks: u32,
    /// The longest a host row waits for a paced GC slice (bBackgroundOpsTermLat).
    pub slice_ns: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct DieDebt {
    /// Host slots programmed while GC was required, not yet covered by a victim.
    host: u64,
    /// Slots copied from the current victim.
    copied: u64,
    /// Valid slots of the current victim when it was picked (None: no victim).
    victim_valid: Option<u64>,
    /// Since when a host row has been waiting for this die's GC.
    held_since: Option<SimTime>,
}

/// The policy's state per die. With `pacing` None every GC is unpaced and host rows
/// never wait for it (the policy of the eMMC and SD presets).
pub struct GcPolicy {
    pacing: Option<GcPacing>,
    threshold_blocks: u32,
    slots_per_block: u64,
    dies: Vec<DieDebt>,
}

/// The answer for a host row: whether it may go, and, if it was held, how.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GcGate {
    /// Whether the host row may go now.
    pub open: bool,
    /// It goes because its wait reached the slice bound, with copies still owed.
    pub by_slice: bool,
    /// It goes after waiting this long for GC (0 if it was not held).
    pub held_ns: u64,
}

impl GcPolicy {
    pub fn new(
        pacing: Option<GcPacing>,
        threshold_blocks: u32,
        slots_per_block: u32,
        dies: u32,
    ) -> GcPolicy {
        if let Some(p) = pacing {
            assert!(p.urgent_blocks >= 1 && p.urgent_blocks <= threshold_blocks);
        }
        GcPolicy {
            pacing,
            threshold_blocks,
            slots_per_block: slots_per_block as u64,
            dies: vec![DieDebt::default(); dies as usize],
        }
    }

    pub fn paced(&self) -> bool {
        self.pacing.is_some()
    }

    /// A host row of `slots` slots goes to `die` (which has `free` free blocks) at `now`:
    /// it owes GC copies if GC is required. Returns how its gate opened.
    #[inline]
    pub fn host_row(&mut self, die: u32, slots: u32, free: u32, now: SimTime) -> GcGate {
        if self.pacing.is_none() {
            return GcGate {
                open: true,
                ..GcGate::default()
            };
        }
        let gate = self.gate(die, free, now);
        assert!(gate.open, "a host row went through a shut gate");
        // The host is moving again: no row waits for any die's GC now.
        for d in &mut self.dies {
            d.held_since = None;
        }
        let d = &mut self.dies[die as usize];
        if free < self.threshold_blocks {
            d.host += slots as u64;
        } else {
            // GC not required: the host owes nothing.
            d.host = 0;
        }
        gate
    }

    /// GC picked a victim with `valid` valid slots on `die`.
    pub fn victim_picked(&mut self, die: u32, valid: u32) {
        let d = &mut self.dies[die as usize];
        d.victim_valid = Some(valid as u64);
        d.copied = 0;
    }

    /// GC copied `slots` slots of the current victim of `die`.
    pub fn copied(&mut self, die: u32, slots: u32) {
        self.dies[die as usize].copied += slots as u64;
    }

    /// GC erased the current victim of `die`: the host slots it covered are paid.
    pub fn victim_erased(&mut self, die: u32) {
        let s = self.slots_per_block;
        let d = &mut self.dies[die as usize];
        let v = d.victim_valid.take().expect("a victim was picked");
        d.host = d.host.saturating_sub(s - v);
        d.copied = 0;
    }

    /// Whether GC on `die` owes copies for the host slots programmed so far.
    fn owes(&self, die: u32) -> bool {
        let d = &self.dies[die as usize];
        match d.victim_valid {
            Some(v) => d.copied * (self.slots_per_block - v) < d.host * v,
            // No victim (yet): nothing GC could copy; a pick comes with the next step.
            None => false,
        }
    }

    /// Whether a host row may be programmed on `die` (with `free` free blocks) at `now`:
    /// GC owes nothing, or the row has been held (`hold`) for `slice_ns` and GC is not
    /// urgent.
    #[inline]
    pub fn gate(&self, die: u32, free: u32, now: SimTime) -> GcGate {
        let Some(p) = self.pacing else {
            return GcGate {
                open: true,
                ..GcGate::default()
            };
        };
        let d = &self.dies[die as usize];
        let held_ns = d.held_since.map_or(0, |t| now - t);
        if free >= self.threshold_blocks || !self.owes(die) {
            return GcGate {
                open: true,
                by_slice: false,
                held_ns,
            };
        }
        let by_slice = d.held_since.is_some() && free >= p.urgent_blocks && held_ns >= p.slice_ns;
        GcGate {
            open: by_slice,
            by_slice,
            held_ns,
        }
    }

    /// A host row found no die to go to and `die`'s gate was shut: it is held from
    /// `now` (if not already), until a host row goes to any die.
    pub fn hold(&mut self, die: u32, now: SimTime) {
        self.dies[die as usize].held_since.get_or_insert(now);
    }

    /// Whether a host row is held on `die` (GC steps reopen the gate).
    pub fn holding(&self, die: u32) -> bool {
        self.dies[die as usize].held_since.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u32 = 100;

    fn policy() -> GcPolicy {
        GcPolicy::new(
            Some(GcPacing {
                urgent_blocks: 2,
                slice_ns: 1000,
            }),
            4,
            S,
            1,
        )
    }

    #[test]
    fn without_pacing_the_host_never_waits() {
        let mut p = GcPolicy::new(None, 4, S, 1);
        p.victim_picked(0, 90);
        p.host_row(0, 8, 0, 0);
        assert!(p.gate(0, 0, 0).open);
    }

    #[test]
    fn a_host_row_waits_for_its_copies_at_the_victims_ratio() {
        let mut p = policy();
        // A victim 90 % valid: 9 copies per host slot.
        p.victim_picked(0, 90);
        p.host_row(0, 8, 3, 0);
        assert!(!p.gate(0, 3, 0).open);
        p.hold(0, 0);
        p.copied(0, 71);
        assert!(!p.gate(0, 3, 10).open, "71 < 72 copies owed");
        p.copied(0, 1);
        assert_eq!(
            p.gate(0, 3, 20),
            GcGate {
                open: true,
                by_slice: false,
                held_ns: 20
            }
        );
    }

    #[test]
    fn above_the_threshold_nothing_is_owed() {
        let mut p = policy();
        p.victim_picked(0, 90);
        p.host_row(0, 8, 4, 0);
        assert!(p.gate(0, 3, 0).open);
        p.host_row(0, 8, 3, 0);
        assert!(p.gate(0, 4, 0).open);
        assert!(!p.gate(0, 3, 0).open);
    }

    #[test]
    fn a_paced_slice_ends_after_slice_ns_but_an_urgent_one_does_not() {
        let mut p = policy();
        p.victim_picked(0, 90);
        p.host_row(0, 8, 3, 0);
        assert!(!p.gate(0, 3, 100).open);
        assert!(!p.gate(0, 3, 5000).open, "not held: no slice runs");
        p.hold(0, 100);
        assert!(!p.gate(0, 3, 1099).open);
        assert_eq!(
            p.gate(0, 3, 1100),
            GcGate {
                open: true,
                by_slice: true,
                held_ns: 1000
            }
        );
        // Below the urgent floor the row waits for every copy owed.
        assert!(!p.gate(0, 1, 5000).open);
        let went = p.host_row(0, 8, 3, 1100);
        assert!(went.by_slice && went.held_ns == 1000);
        assert!(!p.holding(0));
    }

    #[test]
    fn uncovered_host_slots_carry_over_to_the_next_victim() {
        let mut p = policy();
        p.victim_picked(0, 90);
        p.host_row(0, 8, 3, 0);
        p.copied(0, 72);
        p.host_row(0, 8, 3, 0);
        p.copied(0, 18);
        // The victim gave 10 slots back for 16 host slots: 6 carry over.
        p.victim_erased(0);
        p.victim_picked(0, 50);
        assert!(!p.gate(0, 3, 0).open);
        p.copied(0, 5);
        assert!(!p.gate(0, 3, 0).open, "5 · 50 < 6 · 50");
        p.copied(0, 1);
        assert!(p.gate(0, 3, 0).open);
    }

    #[test]
    fn a_row_that_goes_to_another_die_ends_the_hold() {
        let mut p = GcPolicy::new(
            Some(GcPacing {
                urgent_blocks: 2,
                slice_ns: 1000,
            }),
            4,
            S,
            2,
        );
        p.victim_picked(0, 90);
        p.host_row(0, 8, 3, 0);
        p.hold(0, 10);
        assert!(p.holding(0));
        let went = p.host_row(1, 8, 4, 500);
        assert_eq!(went.held_ns, 0, "die 1 held nothing");
        assert!(!p.holding(0));
        // A later wait for die 0 starts its slice afresh.
        p.hold(0, 900);
        assert!(!p.gate(0, 3, 1500).open);
        assert!(p.gate(0, 3, 1900).by_slice);
    }
}
