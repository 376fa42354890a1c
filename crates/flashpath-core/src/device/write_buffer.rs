//! The controller's write buffer (SRAM/DRAM): 4 KiB slots holding host data until the
//! background drain has programmed it to NAND. A slot is Waiting (queued for the
//! drain, may be overwritten in place by a newer write of the same LPN), InFlight (its
//! program is running; reads are still served from it), or Dead (waiting, but its LPN
//! was discarded or rewritten: it is dropped when the drain reaches it). Space frees
//! when a program completes. No time here; the device charges copies and programs.

use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotState {
    Free,
    Waiting,
    InFlight,
    Dead,
}

pub struct WriteBuffer {
    lpn: Vec<u32>,
    state: Vec<SlotState>,
    /// Free slots (a stack: deterministic reuse).
    free: Vec<u32>,
    /// Waiting and dead slots in arrival order: the drain takes from the front.
    pending: VecDeque<u32>,
    pending_live: u32,
    in_flight: u32,
}

impl WriteBuffer {
    pub fn new(slots: u32) -> WriteBuffer {
        assert!(slots > 0);
        WriteBuffer {
            lpn: vec![u32::MAX; slots as usize],
            state: vec![SlotState::Free; slots as usize],
            free: (0..slots).rev().collect(),
            pending: VecDeque::with_capacity(slots as usize),
            pending_live: 0,
            in_flight: 0,
        }
    }
    pub fn capacity(&self) -> u32 {
        self.lpn.len() as u32
    }
    pub fn free_slots(&self) -> u32 {
        self.free.len() as u32
    }
    /// Slots waiting for the drain (not counting dead ones).
    pub fn waiting(&self) -> u32 {
        self.pending_live
    }
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }
    /// Nothing left to program: a flush may complete.
    pub fn is_clean(&self) -> bool {
        self.pending_live == 0 && self.in_flight == 0
    }
    #[inline]
    pub fn state(&self, slot: u32) -> SlotState {
        self.state[slot as usize]
    }
    #[inline]
    pub fn lpn(&self, slot: u32) -> u32 {
        self.lpn[slot as usize]
    }

    /// Puts `lpn` in a free slot (the caller checked there is one); returns the slot.
    #[inline]
    pub fn insert(&mut self, lpn: u32) -> u32 {
        let s = self
            .free
            .pop()
            .expect("write buffer insert with no free slot");
        self.lpn[s as usize] = lpn;
        self.state[s as usize] = SlotState::Waiting;
        self.pending.push_back(s);
        self.pending_live += 1;
        s
    }

    /// A waiting slot's LPN was discarded: drop its data when the drain reaches it.
    pub fn kill(&mut self, slot: u32) {
        assert_eq!(self.state[slot as usize], SlotState::Waiting);
        self.state[slot as usize] = SlotState::Dead;
        self.pending_live -= 1;
    }

    /// Takes up to `out.len()` waiting slots, oldest first, marking them in flight;
    /// dead slots met on the way are freed. Returns how many were taken.
    pub fn take(&mut self, out: &mut [(u32, u32)]) -> usize {
        let mut n = 0;
        while n < out.len() {
            let Some(s) = self.pending.pop_front() else {
                break;
            };
            match self.state[s as usize] {
                SlotState::Dead => {
                    self.state[s as usize] = SlotState::Free;
                    self.free.push(s);
                }
                SlotState::Waiting => {
                    self.state[s as usize] = SlotState::InFlight;
                    self.pending_live -= 1;
                    self.in_flight += 1;
                    out[n] = (s, self.lpn[s as usize]);
                    n += 1;
                }
                st => panic!("slot {s} in the pending queue is {st:?}"),
            }
        }
        n
    }

    /// The program holding `slot` completed: the space is free.
    pub fn release(&mut self, slot: u32) {
        assert_eq!(self.state[slot as usize], SlotState::InFlight);
        self.state[slot as usize] = SlotState::Free;
        self.in_flight -= 1;
        self.free.push(slot);
    }
}
