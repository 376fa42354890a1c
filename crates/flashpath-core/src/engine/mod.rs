//! The discrete-event engine's building blocks: integer time, the outbox a layer writes
//! into, the event queue, in-order resources and seeded random streams.
//!
//! ```text
//!   layer.handle(now, input, &mut outbox)
//!        │ outbox.timer(at, Input)   → back to the same layer at `at`
//!        │ outbox.emit(at, Output)   → sim::route() turns it into another layer's Input
//!        ▼
//!   EventQueue  (ordered by (time, insertion sequence): ties are first-in first-out)
//! ```
//!
//! Units: `SimTime` and `SimDuration` are nanoseconds (`u64`). No floating point in time.

mod divisor;
mod prefetch;
mod queue;
mod rate;
mod resource;
mod rng;

pub use divisor::Divisor;
pub use prefetch::prefetch;
pub use queue::EventQueue;
pub use rate::Rate;
pub use resource::FifoResource;
pub use rng::SimRng;

/// Simulated time since the start of the run, in nanoseconds.
pub type SimTime = u64;
/// A span of simulated time, in nanoseconds.
pub type SimDuration = u64;

pub const NS_PER_US: u64 = 1_000;
pub const NS_PER_MS: u64 = 1_000_000;
pub const NS_PER_S: u64 = 1_000_000_000;

/// Time to move `bytes` at `bytes_per_s`, rounded up: a transfer never ends early.
#[inline]
pub fn transfer_ns(bytes: u64, bytes_per_s: u64) -> SimDuration {
    assert!(bytes_per_s > 0, "transfer rate must be positive");
    match bytes.checked_mul(NS_PER_S) {
        // Below 18 GB the product fits 64 bits: the processor's divide, not the
        // 128-bit one's software routine (a per-I/O cost on the bus and the link).
        Some(p) => p.div_ceil(bytes_per_s),
        None => ((bytes as u128 * NS_PER_S as u128).div_ceil(bytes_per_s as u128)) as u64,
    }
}

/// What a layer asks for while handling one input: delayed inputs to itself (timers) and
/// outputs for the engine to route. Both carry the absolute time they take effect.
#[derive(Debug)]
pub struct Outbox<I, O> {
    timers: Vec<(SimTime, I)>,
    emits: Vec<(SimTime, O)>,
}

impl<I, O> Default for Outbox<I, O> {
    fn default() -> Self {
        Self {
            timers: Vec::new(),
            emits: Vec::new(),
        }
    }
}

impl<I, O> Outbox<I, O> {
    pub fn new() -> Self {
        Self::default()
    }
    /// Delivers `input` back to the same layer at `at`.
    #[inline]
    pub fn timer(&mut self, at: SimTime, input: I) {
        self.timers.push((at, input));
    }
    /// Hands `output` to the engine, to be routed at `at`.
    #[inline]
    pub fn emit(&mut self, at: SimTime, output: O) {
        self.emits.push((at, output));
    }
    pub fn timers(&self) -> &[(SimTime, I)] {
        &self.timers
    }
    pub fn emits(&self) -> &[(SimTime, O)] {
        &self.emits
    }
    /// Takes everything out, in the order it was written.
    #[allow(clippy::type_complexity)]
    pub fn drain(
        &mut self,
    ) -> (
        std::vec::Drain<'_, (SimTime, I)>,
        std::vec::Drain<'_, (SimTime, O)>,
    ) {
        (self.timers.drain(..), self.emits.drain(..))
    }
    /// Takes the timers out, in the order they were written (the outputs stay).
    pub fn drain_timers(&mut self) -> std::vec::Drain<'_, (SimTime, I)> {
        self.timers.drain(..)
    }
    /// Takes the outputs out, in the order they were written.
    pub fn drain_emits(&mut self) -> std::vec::Drain<'_, (SimTime, O)> {
        self.emits.drain(..)
    }
    pub fn is_empty(&self) -> bool {
        self.timers.is_empty() && self.emits.is_empty()
    }
    pub fn clear(&mut self) {
        self.timers.clear();
        self.emits.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The 64-bit path gives the 128-bit formula's answer, on both sides of the
        /// point where the product stops fitting 64 bits.
        #[test]
        fn transfer_ns_is_the_exact_ceiling(
            bytes in proptest::prop_oneof![0u64..1 << 40, proptest::num::u64::ANY],
            rate in 1u64..u64::MAX,
        ) {
            let want = (bytes as u128 * NS_PER_S as u128).div_ceil(rate as u128) as u64;
            proptest::prop_assert_eq!(transfer_ns(bytes, rate), want);
        }
    }

    #[test]
    fn transfer_ns_at_the_64_bit_edge() {
        let edge = u64::MAX / NS_PER_S;
        for bytes in [edge, edge + 1] {
            let want = (bytes as u128 * NS_PER_S as u128).div_ceil(7) as u64;
            assert_eq!(transfer_ns(bytes, 7), want);
        }
    }
}
