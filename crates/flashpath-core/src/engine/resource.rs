//! A resource that serves work in the order it is booked: a NAND die, a channel, a
//! controller CPU. Booking returns when the work starts and ends; the resource is busy
//! until then. Booking order is the service order, so callers book at the instant the
//! work arrives.

use super::{SimDuration, SimTime};

#[derive(Clone, Debug, Default)]
pub struct FifoResource {
    free_at: SimTime,
    busy_ns: u64,
}

impl FifoResource {
    pub fn new() -> Self {
        Self::default()
    }
    /// Books `dur` of work that can start no earlier than `ready`; returns (start, end).
    #[inline]
    pub fn book(&mut self, ready: SimTime, dur: SimDuration) -> (SimTime, SimTime) {
        let start = ready.max(self.free_at);
        let end = start + dur;
        self.free_at = end;
        self.busy_ns += dur;
        (start, end)
    }
    /// Pushes the end of the booked work back by `by` if it is still running at `at`:
    /// higher-priority work (an interrupt) took the resource for that long.
    #[inline]
    pub fn preempt(&mut self, at: SimTime, by: SimDuration) {
        if self.free_at > at {
            self.free_at += by;
        }
    }
    /// When the resource next becomes free.
    pub fn free_at(&self) -> SimTime {
        self.free_at
    }
    /// Total time spent serving work.
    pub fn busy_ns(&self) -> u64 {
        self.busy_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_in_booking_order() {
        let mut r = FifoResource::new();
        assert_eq!(r.book(100, 50), (100, 150));
        assert_eq!(r.book(120, 10), (150, 160));
        assert_eq!(r.book(200, 5), (200, 205));
        assert_eq!(r.busy_ns(), 65);
    }
}
