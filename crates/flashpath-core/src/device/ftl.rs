//! Page-mapped FTL: the mapping state only (no time). 4 KiB logical pages (`Lpn`) map
//! to 4 KiB physical slots (`Ppa`). Blocks are multi-plane blocks (one erase block on
//! every plane of a die, erased and filled together, as firmware pairs them for
//! multi-plane operations); a block is filled row by row, a row being one page on every
//! plane (the program unit).
//!
//! ```text
//! Ppa = ((die · blocks_per_die + block) · rows_per_block + row) · slots_per_row + slot
//! slot = plane · slots_per_page + 4KiB-unit within the page
//! ```
//!
//! The L2P entry of an LPN is a `Ppa`, `UNMAPPED`, or `BUF_FLAG | slot` when the newest
//! data is in the write buffer. A `Ppa` at or above `tlc_slots()` is a slot of the
//! WriteBooster buffer (`super::write_booster`), which keeps its own reverse map: the
//! blocks here never count it. Memory grows with the data touched: the L2P and the
//! reverse map are allocated in chunks on first use; per-block metadata are flat arrays.
//!
//! Leaves out: bad blocks, wear levelling beyond FIFO reuse of free blocks, map pages
//! stored among data pages (the map lives in a reserved area; see `map_cache`).

use std::collections::VecDeque;

pub type Lpn = u32;
pub type Ppa = u32;

/// No mapping (never written, or discarded).
pub const UNMAPPED: u32 = u32::MAX;
/// Set in an L2P entry whose newest data is write-buffer slot `entry & !BUF_FLAG`.
pub const BUF_FLAG: u32 = 1 << 31;
/// A physical slot that holds no valid data.
const INVALID: u32 = u32::MAX;

const L2P_CHUNK_SHIFT: u32 = 12;
const L2P_CHUNK: usize = 1 << L2P_CHUNK_SHIFT;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockState {
    Free,
    Open,
    Closed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Host data drained from the write buffer.
    Host,
    /// Valid data copied by garbage collection.
    Gc,
}

#[derive(Clone, Copy, Debug, Default)]
struct OpenBlock {
    block: u32,
    /// Next slot to allocate within the block.
    next: u32,
    active: bool,
}

pub struct PageMap {
    user_lpns: u32,
    dies: u32,
    blocks_per_die: u32,
    slots_per_row: u32,
    slots_per_block: u32,
    gc_threshold: u32,
    l2p: Vec<Option<Box<[u32]>>>,
    /// Reverse map per block: slot → LPN or INVALID.
    p2l: Vec<Option<Box<[u32]>>>,
    valid: Vec<u32>,
    erase_count: Vec<u32>,
    state: Vec<BlockState>,
    /// Slots placed whose program has not completed yet (a block with any is no victim).
    inflight: Vec<u32>,
    free: Vec<VecDeque<u32>>,
    open: Vec<[OpenBlock; 2]>,
    /// Erased p2l arrays kept for reuse, so steady state allocates nothing.
    spare_p2l: Vec<Box<[u32]>>,
    /// Physical slots of all blocks (the first WriteBooster address).
    tlc_slots: u32,
}

impl PageMap {
    pub fn new(
        user_lpns: u32,
        dies: u32,
        blocks_per_die: u32,
        slots_per_row: u32,
        rows_per_block: u32,
        gc_threshold: u32,
    ) -> PageMap {
        assert!(dies > 0 && blocks_per_die > 0 && slots_per_row > 0 && rows_per_block > 0);
        let blocks = (dies as u64 * blocks_per_die as u64) as usize;
        let slots_per_block = slots_per_row * rows_per_block;
        assert!((blocks as u64) * (slots_per_block as u64) < BUF_FLAG as u64);
        assert!(user_lpns < BUF_FLAG);
        let chunks = (user_lpns as usize).div_ceil(L2P_CHUNK);
        PageMap {
            user_lpns,
            dies,
            blocks_per_die,
            slots_per_row,
            slots_per_block,
            gc_threshold,
            l2p: (0..chunks).map(|_| None).collect(),
            p2l: (0..blocks).map(|_| None).collect(),
            valid: vec![0; blocks],
            erase_count: vec![0; blocks],
            state: vec![BlockState::Free; blocks],
            inflight: vec![0; blocks],
            free: (0..dies)
                .map(|d| (d * blocks_per_die..(d + 1) * blocks_per_die).collect())
                .collect(),
            open: vec![[OpenBlock::default(); 2]; dies as usize],
            spare_p2l: Vec::new(),
            tlc_slots: blocks as u32 * slots_per_block,
        }
    }

    pub fn user_lpns(&self) -> u32 {
        self.user_lpns
    }
    pub fn slots_per_row(&self) -> u32 {
        self.slots_per_row
    }
    pub fn slots_per_block(&self) -> u32 {
        self.slots_per_block
    }
    pub fn rows_per_block(&self) -> u32 {
        self.slots_per_block / self.slots_per_row
    }
    pub fn dies(&self) -> u32 {
        self.dies
    }
    #[inline]
    pub fn die_of(&self, ppa: Ppa) -> u32 {
        self.block_of(ppa) / self.blocks_per_die
    }
    #[inline]
    pub fn block_of(&self, ppa: Ppa) -> u32 {
        ppa / self.slots_per_block
    }
    /// Global row id (die, block, row): what a die's page registers hold after a read.
    #[inline]
    pub fn row_of(&self, ppa: Ppa) -> u32 {
        ppa / self.slots_per_row
    }
    pub fn free_blocks(&self, die: u32) -> u32 {
        self.free[die as usize].len() as u32
    }
    pub fn valid_in(&self, block: u32) -> u32 {
        self.valid[block as usize]
    }
    pub fn erase_count(&self, block: u32) -> u32 {
        self.erase_count[block as usize]
    }
    pub fn blocks(&self) -> u32 {
        self.valid.len() as u32
    }
    /// Blocks whose reverse map has been allocated (a memory measure).
    pub fn touched_blocks(&self) -> usize {
        self.p2l.iter().filter(|p| p.is_some()).count()
    }
    /// L2P chunks allocated (a memory measure).
    pub fn touched_l2p_chunks(&self) -> usize {
        self.l2p.iter().filter(|p| p.is_some()).count()
    }
    /// GC should run on `die`.
    pub fn needs_gc(&self, die: u32) -> bool {
        self.free_blocks(die) < self.gc_threshold
    }

    // ------------------------------------------------------------ L2P

    #[inline]
    pub fn get(&self, lpn: Lpn) -> u32 {
        debug_assert!(lpn < self.user_lpns);
        match &self.l2p[(lpn >> L2P_CHUNK_SHIFT) as usize] {
            Some(c) => c[lpn as usize & (L2P_CHUNK - 1)],
            None => UNMAPPED,
        }
    }

    #[inline]
    fn set(&mut self, lpn: Lpn, v: u32) {
        let chunk = &mut self.l2p[(lpn >> L2P_CHUNK_SHIFT) as usize];
        if chunk.is_none() {
            if v == UNMAPPED {
                return;
            }
            *chunk = Some(vec![UNMAPPED; L2P_CHUNK].into_boxed_slice());
        }
        chunk.as_mut().unwrap()[lpn as usize & (L2P_CHUNK - 1)] = v;
    }

    /// Whether the L2P chunk holding `lpn` was ever written (else all of it is unmapped).
    #[inline]
    pub fn chunk_touched(&self, lpn: Lpn) -> bool {
        self.l2p[(lpn >> L2P_CHUNK_SHIFT) as usize].is_some()
    }

    /// The first LPN of the L2P chunk after the one holding `lpn`.
    #[inline]
    pub fn next_chunk_start(&self, lpn: Lpn) -> Lpn {
        ((lpn >> L2P_CHUNK_SHIFT) + 1) << L2P_CHUNK_SHIFT
    }

    /// Points `lpn` at `entry` (a buffer slot or UNMAPPED), invalidating the NAND copy
    /// it replaces. Returns the previous entry.
    pub fn supersede(&mut self, lpn: Lpn, entry: u32) -> u32 {
        assert!(entry == UNMAPPED || entry & BUF_FLAG != 0);
        let old = self.get(lpn);
        if old != UNMAPPED && old & BUF_FLAG == 0 && old < self.tlc_slots() {
            self.invalidate(old, lpn);
        }
        self.set(lpn, entry);
        old
    }

    /// Physical slots of the blocks here (addresses at or above are the WriteBooster
    /// buffer's).
    #[inline]
    pub fn tlc_slots(&self) -> u32 {
        self.tlc_slots
    }

    /// `lpn`'s data is now in WriteBooster buffer slot `ppa` (its program has ended and
    /// the L2P still named the write buffer slot it came from).
    pub fn map_slc(&mut self, lpn: Lpn, ppa: Ppa) {
        debug_assert!(ppa >= self.tlc_slots() && ppa & BUF_FLAG == 0);
        self.set(lpn, ppa);
    }

    /// A WriteBooster flush moves valid `lpn` from buffer slot `src` to slot `dst` here
    /// (already allocated).
    pub fn migrate(&mut self, lpn: Lpn, src: Ppa, dst: Ppa) {
        assert_eq!(self.get(lpn), src, "migrating a stale slot");
        assert!(src >= self.tlc_slots());
        self.map_moved(lpn, dst);
    }

    /// `lpn`'s valid data is now in slot `dst` (already allocated, not yet owned).
    fn map_moved(&mut self, lpn: Lpn, dst: Ppa) {
        let b = self.block_of(dst) as usize;
        let off = (dst % self.slots_per_block) as usize;
        let p2l = self.p2l[b].as_mut().unwrap();
        assert_eq!(p2l[off], INVALID);
        p2l[off] = lpn;
        self.valid[b] += 1;
        self.set(lpn, dst);
    }

    fn invalidate(&mut self, ppa: Ppa, lpn: Lpn) {
        let b = self.block_of(ppa) as usize;
        let off = (ppa % self.slots_per_block) as usize;
        let p2l = self.p2l[b]
            .as_mut()
            .expect("mapped page in a block with no reverse map");
        assert_eq!(p2l[off], lpn, "reverse map disagrees with L2P at ppa {ppa}");
        p2l[off] = INVALID;
        assert!(self.valid[b] > 0);
        self.valid[b] -= 1;
    }

    // ------------------------------------------------------------ allocation

    /// Whether a host row can be allocated on `die` (the open block has room, or a free
    /// block can be opened while keeping one in reserve for GC).
    pub fn can_alloc_host(&self, die: u32) -> bool {
        let ob = &self.open[die as usize][0];
        (ob.active
            && ob.next.div_ceil(self.slots_per_row) * self.slots_per_row < self.slots_per_block)
            || self.free_blocks(die) > 1
    }

    /// The host open block of `die`, if its next row fits in it (no new block opened):
    /// a cache program may continue there (cache program works only within a block).
    pub fn host_row_fits_open_block(&self, die: u32) -> Option<u32> {
        let ob = &self.open[die as usize][0];
        (ob.active
            && ob.next.div_ceil(self.slots_per_row) * self.slots_per_row < self.slots_per_block)
            .then_some(ob.block)
    }

    /// Allocates the next whole row (program unit) of `die`'s open block for `stream`;
    /// returns the row's first slot. Host rows keep one free block in reserve for GC.
    pub fn alloc_row(&mut self, die: u32, stream: Stream) -> Option<Ppa> {
        self.ensure_open(die, stream, self.slots_per_row)?;
        let ob = &mut self.open[die as usize][stream as usize];
        // A row is allocated whole; the unused rest of a partly used row is padding.
        let row_start = ob.next.div_ceil(self.slots_per_row) * self.slots_per_row;
        ob.next = row_start + self.slots_per_row;
        Some(ob.block * self.slots_per_block + row_start)
    }

    /// Allocates one slot of `die`'s open block for `stream`.
    pub fn alloc_slot(&mut self, die: u32, stream: Stream) -> Option<Ppa> {
        self.ensure_open(die, stream, 1)?;
        let ob = &mut self.open[die as usize][stream as usize];
        let ppa = ob.block * self.slots_per_block + ob.next;
        ob.next += 1;
        Some(ppa)
    }

    /// Makes sure `stream`'s open block on `die` has room for an allocation aligned to
    /// `align` slots, opening a free block (FIFO: the longest-erased first) when it has
    /// not. Host allocations leave one free block for GC.
    fn ensure_open(&mut self, die: u32, stream: Stream, align: u32) -> Option<()> {
        let d = die as usize;
        let ob = self.open[d][stream as usize];
        if ob.active && ob.next.div_ceil(align) * align < self.slots_per_block {
            return Some(());
        }
        let reserve = if stream == Stream::Host { 1 } else { 0 };
        if self.free[d].len() <= reserve {
            return None;
        }
        if ob.active {
            self.state[ob.block as usize] = BlockState::Closed;
        }
        let b = self.free[d].pop_front().unwrap();
        assert_eq!(self.state[b as usize], BlockState::Free);
        assert_eq!(self.valid[b as usize], 0);
        self.state[b as usize] = BlockState::Open;
        if self.p2l[b as usize].is_none() {
            let arr = self
                .spare_p2l
                .pop()
                .unwrap_or_else(|| vec![INVALID; self.slots_per_block as usize].into_boxed_slice());
            self.p2l[b as usize] = Some(arr);
        }
        self.open[d][stream as usize] = OpenBlock {
            block: b,
            next: 0,
            active: true,
        };
        Some(())
    }

    /// Records that `ppa` is being programmed with `lpn`'s data (not yet valid).
    pub fn place(&mut self, ppa: Ppa, lpn: Lpn) {
        let b = self.block_of(ppa) as usize;
        let off = (ppa % self.slots_per_block) as usize;
        let p2l = self.p2l[b]
            .as_mut()
            .expect("placing into an unopened block");
        assert_eq!(p2l[off], INVALID, "slot {ppa} programmed twice");
        p2l[off] = lpn;
        self.inflight[b] += 1;
    }

    /// The program of `ppa` finished. If `current` (the L2P still names the buffer slot
    /// the data came from), `lpn` now maps to `ppa`; otherwise the data is already stale.
    pub fn complete(&mut self, ppa: Ppa, lpn: Lpn, current: bool) {
        let b = self.block_of(ppa) as usize;
        let off = (ppa % self.slots_per_block) as usize;
        assert!(self.inflight[b] > 0);
        self.inflight[b] -= 1;
        let p2l = self.p2l[b].as_mut().unwrap();
        assert_eq!(p2l[off], lpn);
        if current {
            self.valid[b] += 1;
            self.set(lpn, ppa);
        } else {
            p2l[off] = INVALID;
        }
    }

    /// Writes `lpn` straight to the next slot of `die`'s host stream (no buffer, no
    /// time): for tests and benches of the mapping alone.
    pub fn write_direct(&mut self, die: u32, lpn: Lpn) -> Option<Ppa> {
        let ppa = self.alloc_slot(die, Stream::Host)?;
        self.supersede(lpn, UNMAPPED);
        self.place(ppa, lpn);
        self.complete(ppa, lpn, true);
        Some(ppa)
    }

    // ------------------------------------------------------------ garbage collection

    /// Greedy victim on `die`: the closed block with the fewest valid slots (ties: the
    /// lowest block number), skipping blocks with programs in flight. None if no closed
    /// block has an invalid slot to reclaim.
    pub fn pick_victim(&self, die: u32) -> Option<u32> {
        let lo = (die * self.blocks_per_die) as usize;
        let hi = lo + self.blocks_per_die as usize;
        let mut best: Option<(u32, u32)> = None;
        for b in lo..hi {
            if self.state[b] != BlockState::Closed || self.inflight[b] != 0 {
                continue;
            }
            let v = self.valid[b];
            if v < self.slots_per_block && best.is_none_or(|(bv, _)| v < bv) {
                best = Some((v, b as u32));
                if v == 0 {
                    break;
                }
            }
        }
        best.map(|(_, b)| b)
    }

    /// The valid slots of `row` in `block`, written into `out` as (lpn, ppa); returns
    /// how many.
    pub fn valid_in_row(&self, block: u32, row: u32, out: &mut [(Lpn, Ppa)]) -> usize {
        let Some(p2l) = &self.p2l[block as usize] else {
            return 0;
        };
        let mut n = 0;
        let base = block * self.slots_per_block + row * self.slots_per_row;
        for i in 0..self.slots_per_row {
            let off = (row * self.slots_per_row + i) as usize;
            let lpn = p2l[off];
            if lpn != INVALID && self.get(lpn) == base + i {
                out[n] = (lpn, base + i);
                n += 1;
            }
        }
        n
    }

    /// Moves valid `lpn` from `src` to the GC slot `dst` (already allocated).
    pub fn relocate(&mut self, lpn: Lpn, src: Ppa, dst: Ppa) {
        assert_eq!(self.get(lpn), src, "relocating a stale page");
        self.invalidate(src, lpn);
        self.map_moved(lpn, dst);
    }

    /// Erases a closed block with no valid data and returns it to its die's free list.
    pub fn erase(&mut self, block: u32) {
        let b = block as usize;
        assert_eq!(
            self.state[b],
            BlockState::Closed,
            "erasing a block that is not closed"
        );
        assert_eq!(self.valid[b], 0, "erasing a block with valid data");
        assert_eq!(self.inflight[b], 0);
        if let Some(mut arr) = self.p2l[b].take() {
            arr.fill(INVALID);
            self.spare_p2l.push(arr);
        }
        self.state[b] = BlockState::Free;
        self.erase_count[b] += 1;
        let die = block / self.blocks_per_die;
        self.free[die as usize].push_back(block);
    }

    /// Whether `ppa` currently holds the valid copy of some LPN, and which.
    pub fn owner(&self, ppa: Ppa) -> Option<Lpn> {
        let b = self.block_of(ppa) as usize;
        let p2l = self.p2l[b].as_ref()?;
        let lpn = p2l[(ppa % self.slots_per_block) as usize];
        (lpn != INVALID && self.get(lpn) == ppa).then_some(lpn)
    }

    /// Full consistency check (slow; for tests): every mapped LPN's slot names it back,
    /// every block's valid count equals its slots owned, no slot has two owners.
    pub fn check_invariants(&self) {
        let mut owned = vec![0u32; self.valid.len()];
        for lpn in 0..self.user_lpns {
            let e = self.get(lpn);
            if e == UNMAPPED || e & BUF_FLAG != 0 || e >= self.tlc_slots() {
                continue;
            }
            let b = self.block_of(e) as usize;
            let p2l = self.p2l[b]
                .as_ref()
                .expect("mapped into a block without reverse map");
            assert_eq!(
                p2l[(e % self.slots_per_block) as usize],
                lpn,
                "lpn {lpn} → ppa {e} not owned"
            );
            owned[b] += 1;
        }
        for (b, &owned_b) in owned.iter().enumerate() {
            assert_eq!(owned_b, self.valid[b], "block {b} valid count");
            if let Some(p2l) = &self.p2l[b] {
                let names = p2l
                    .iter()
                    .enumerate()
                    .filter(|(i, &l)| {
                        l != INVALID && self.get(l) == b as u32 * self.slots_per_block + *i as u32
                    })
                    .count() as u32;
                assert_eq!(names, self.valid[b], "block {b} reverse map");
            }
            if self.state[b] == BlockState::Free {
                assert_eq!(self.valid[b], 0);
            }
        }
        let free_total: usize = self.free.iter().map(|f| f.len()).sum();
        let free_state = self
            .state
            .iter()
            .filter(|s| **s == BlockState::Free)
            .count();
        assert_eq!(free_total, free_state, "free lists vs block states");
    }
}
