//! The page-mapped FTL's L2P table: a 32-bit entry per 4 KiB logical page that was
//! given one. An LPN never set has no entry (the FTL then answers from its sequential
//! layout, or unmapped) and costs nothing.
//!
//! The LPNs are cut into regions of 65,536 (256 MiB of data). A region never set
//! costs its directory entry, 8 bytes. A region set in part is sparse: a hash table
//! of the LPNs it holds. A bucket is two words, the LPN's offset in the region and its
//! entry; the table is probed in line from a multiplicative hash of the offset, and
//! doubles when three quarters full. So an entry costs 10.7 to 21.3 bytes, wherever
//! its LPN lies. A table is never larger than the dense form: past 16,384 buckets
//! (128 KiB, 12,288 entries) in a whole region, the region turns dense, an array of
//! 65,536 words (256 KiB) with NOT_SET where an LPN has no entry. A device set whole
//! costs 4 bytes per page and 672 bytes per 256 MiB.
//!
//! Tables of 512 buckets or more, and dense arrays, live in 4 KiB pieces: a region
//! grows and turns dense in the pieces it has, adding more, and frees none. Smaller
//! tables are one allocation each, freed when they grow (2 KiB at most). So the
//! process is left with no freed memory it cannot use again, whatever the order of the
//! writes. A rebuild copies the table's entries out first, into room the L2P keeps
//! (8 bytes an entry, 96 KiB at most). An entry, once set, stays (an unmap sets it to
//! the FTL's unmapped word, as a device's map keeps its pages).

use std::mem::size_of;

const RUN_SHIFT: u32 = 6;
/// LPNs per run: `run_touched`'s step.
pub const RUN: usize = 1 << RUN_SHIFT;
const REGION_SHIFT: u32 = 16;
/// LPNs per region.
const REGION: usize = 1 << REGION_SHIFT;
/// Words per piece (4 KiB).
const PIECE_SHIFT: u32 = 10;
const PIECE: usize = 1 << PIECE_SHIFT;
/// Pieces of a dense region.
const PIECES: usize = REGION / PIECE;
/// Buckets (two words each) per piece.
const PIECE_BUCKETS_SHIFT: u32 = PIECE_SHIFT - 1;
/// The smallest table: 8 buckets.
const MIN_BITS: u32 = 3;
/// A bucket's key word when the bucket is empty (offsets are below 65,536).
const EMPTY: u32 = u32::MAX;
/// A dense region's word for an LPN that has no entry. No entry may be this word.
pub const NOT_SET: u32 = 0xFFFF_FFFE;

type Piece = [u32; PIECE];

struct Region {
    /// log2 of the table's buckets; 0 once the region is dense.
    bits: u8,
    /// Pieces a dense form of this region has: 64, or fewer in a table's last region.
    span: u8,
    /// Entries set.
    len: u32,
    /// One bit per run of 64 LPNs holding an entry (kept while sparse; a dense region
    /// counts every run as touched).
    touched: [u64; REGION / RUN / 64],
    /// A table of fewer than 512 buckets: its words (else empty).
    small: Box<[u32]>,
    /// A table of 512 buckets or more, 512 to a piece; a dense region's entries, 1,024
    /// to a piece. Pieces are made in order and kept.
    pieces: [Option<Box<Piece>>; PIECES],
}

/// The home bucket of `off` in a table of 2^bits buckets (Fibonacci hashing: the top
/// bits of the offset times 2^32 over the golden ratio, so neighbouring LPNs spread).
#[inline(always)]
fn home(off: u32, bits: u32) -> usize {
    (off.wrapping_mul(0x9E37_79B9) >> (32 - bits)) as usize
}

impl Region {
    /// A region of `lpns` LPNs (at most 65,536), with no entry.
    fn new(lpns: usize) -> Region {
        Region {
            bits: MIN_BITS as u8,
            span: lpns.div_ceil(PIECE) as u8,
            len: 0,
            touched: [0; REGION / RUN / 64],
            small: vec![EMPTY; 2 << MIN_BITS].into_boxed_slice(),
            pieces: [const { None }; PIECES],
        }
    }

    /// log2 of the table's buckets; 0 once the region is dense.
    #[inline(always)]
    fn bits(&self) -> u32 {
        u32::from(self.bits)
    }

    /// Word `i` of a sparse table (bucket `i / 2`'s key or entry).
    #[inline(always)]
    fn word_ref(&self, i: usize) -> &u32 {
        if self.bits() < PIECE_BUCKETS_SHIFT {
            &self.small[i]
        } else {
            &self.pieces[i >> PIECE_SHIFT]
                .as_deref()
                .expect("a made piece")[i & (PIECE - 1)]
        }
    }

    #[inline(always)]
    fn word_mut(&mut self, i: usize) -> &mut u32 {
        if self.bits() < PIECE_BUCKETS_SHIFT {
            &mut self.small[i]
        } else {
            &mut self.pieces[i >> PIECE_SHIFT]
                .as_deref_mut()
                .expect("a made piece")[i & (PIECE - 1)]
        }
    }

    /// Sparse: `off`'s bucket, or the empty bucket where it would go.
    #[inline(always)]
    fn find(&self, off: u32) -> Result<usize, usize> {
        let mask = (1 << self.bits()) - 1;
        let b = home(off, self.bits());
        if self.bits() < PIECE_BUCKETS_SHIFT {
            let words = &self.small[..2 << self.bits()];
            let mut b = b;
            loop {
                match words[2 * b] {
                    k if k == off => return Ok(b),
                    EMPTY => return Err(b),
                    _ => b = (b + 1) & mask,
                }
            }
        }
        self.find_in_pieces(off, b, mask)
    }

    /// `find` in a table of pieces: probes a piece's buckets in a run, then the next
    /// piece's.
    #[inline(always)]
    fn find_in_pieces(&self, off: u32, b: usize, mask: usize) -> Result<usize, usize> {
        const PB: usize = 1 << PIECE_BUCKETS_SHIFT;
        let mut start = b & !(PB - 1);
        let mut i = b & (PB - 1);
        loop {
            let p = self.pieces[start >> PIECE_BUCKETS_SHIFT]
                .as_deref()
                .expect("a made piece");
            while i < PB {
                match p[2 * i] {
                    k if k == off => return Ok(start + i),
                    EMPTY => return Err(start + i),
                    _ => i += 1,
                }
            }
            start = (start + PB) & mask;
            i = 0;
        }
    }

    /// A dense region's word for `off`.
    #[inline(always)]
    fn dense_word(&self, off: usize) -> &u32 {
        &self.pieces[off >> PIECE_SHIFT]
            .as_deref()
            .expect("a dense region's piece")[off & (PIECE - 1)]
    }

    /// `off`'s entry, if it has one.
    #[inline(always)]
    fn entry(&self, off: usize) -> Option<&u32> {
        if self.bits() == 0 {
            let e = self.dense_word(off);
            (*e != NOT_SET).then_some(e)
        } else {
            let b = self.find(off as u32).ok()?;
            Some(self.word_ref(2 * b + 1))
        }
    }

    /// Where `off`'s entry is or would be read first (for a prefetch).
    #[inline(always)]
    fn first_word(&self, off: usize) -> &u32 {
        if self.bits() == 0 {
            self.dense_word(off)
        } else {
            self.word_ref(2 * home(off as u32, self.bits()))
        }
    }

    /// Sets `off`'s entry in a dense region; returns the entry it had.
    #[inline(always)]
    fn set_dense(&mut self, off: usize, v: u32) -> Option<u32> {
        let e = &mut self.pieces[off >> PIECE_SHIFT]
            .as_deref_mut()
            .expect("a dense region's piece")[off & (PIECE - 1)];
        let old = std::mem::replace(e, v);
        self.len += u32::from(old == NOT_SET);
        (old != NOT_SET).then_some(old)
    }

    /// Sets `off`'s entry in a sparse region; returns the entry it had.
    #[inline(always)]
    fn set_sparse(&mut self, off: usize, v: u32, scratch: &mut Vec<(u32, u32)>) -> Option<u32> {
        match self.find(off as u32) {
            Ok(b) => Some(std::mem::replace(self.word_mut(2 * b + 1), v)),
            Err(b) => {
                self.insert(b, off, v, scratch);
                None
            }
        }
    }

    /// Adds `off` (it has no entry; `b` is the empty bucket `find` gave), growing the
    /// table or turning the region dense first when it is three quarters full.
    #[inline(never)]
    fn insert(&mut self, b: usize, off: usize, v: u32, scratch: &mut Vec<(u32, u32)>) {
        self.touched[off >> (RUN_SHIFT + 6)] |= 1 << ((off >> RUN_SHIFT) & 63);
        if (self.len as usize + 1) * 4 <= 3 << self.bits() {
            *self.word_mut(2 * b) = off as u32;
            *self.word_mut(2 * b + 1) = v;
            self.len += 1;
            return;
        }
        self.drain(scratch);
        scratch.push((off as u32, v));
        // Double the table while it stays smaller than the dense form (8 bytes a
        // bucket, 4 an LPN): 16,384 buckets at most in a whole region.
        if (2usize << self.bits()) * 8 < self.span as usize * size_of::<Piece>() {
            self.rebuild(self.bits() + 1, scratch);
        } else {
            self.make_dense(scratch);
        }
        self.len += 1;
    }

    /// Moves every (offset, entry) out into `scratch` (emptied first).
    fn drain(&self, scratch: &mut Vec<(u32, u32)>) {
        scratch.clear();
        // Room for these and the one to add, no more: growth doubles the tables, not this.
        scratch.reserve_exact(self.len as usize + 1);
        for b in 0..1usize << self.bits() {
            let k = *self.word_ref(2 * b);
            if k != EMPTY {
                scratch.push((k, *self.word_ref(2 * b + 1)));
            }
        }
        debug_assert_eq!(scratch.len(), self.len as usize);
    }

    /// Makes pieces `0..n` (those already made are kept) and fills them with `w`.
    fn fill_pieces(&mut self, n: usize, w: u32) {
        for p in &mut self.pieces[..n] {
            match p {
                Some(p) => p.fill(w),
                None => *p = Some(Box::new([w; PIECE])),
            }
        }
    }

    /// A table of 2^bits buckets holding `pairs` (the old words are overwritten).
    #[cold]
    fn rebuild(&mut self, bits: u32, pairs: &[(u32, u32)]) {
        self.bits = bits as u8;
        if bits < PIECE_BUCKETS_SHIFT {
            self.small = vec![EMPTY; 2 << bits].into_boxed_slice();
        } else {
            self.small = Box::new([]);
            self.fill_pieces(1 << (bits - PIECE_BUCKETS_SHIFT), EMPTY);
        }
        for &(k, v) in pairs {
            let b = self.find(k).expect_err("offsets are distinct");
            *self.word_mut(2 * b) = k;
            *self.word_mut(2 * b + 1) = v;
        }
    }

    /// Every LPN's entry in its own word, in the pieces the table had and more.
    #[cold]
    fn make_dense(&mut self, pairs: &[(u32, u32)]) {
        self.small = Box::new([]);
        self.fill_pieces(self.span as usize, NOT_SET);
        self.bits = 0;
        for &(k, v) in pairs {
            let k = k as usize;
            self.pieces[k >> PIECE_SHIFT].as_deref_mut().expect("made")[k & (PIECE - 1)] = v;
        }
    }

    fn bytes(&self) -> usize {
        size_of::<Region>()
            + self.small.len() * 4
            + self.pieces.iter().flatten().count() * size_of::<Piece>()
    }
}

pub struct L2pTable {
    lpns: u32,
    dir: Vec<Option<Box<Region>>>,
    /// Room to rebuild a table in, kept from one rebuild to the next (the largest
    /// table's entries at most).
    scratch: Vec<(u32, u32)>,
}

impl L2pTable {
    pub fn new(lpns: u32) -> Self {
        L2pTable {
            lpns,
            dir: (0..(lpns as usize).div_ceil(REGION))
                .map(|_| None)
                .collect(),
            scratch: Vec::new(),
        }
    }

    /// `lpn`'s entry, or None if it was never set.
    #[inline]
    pub fn get(&self, lpn: u32) -> Option<u32> {
        self.entry(lpn).copied()
    }

    /// Where `lpn`'s entry is, if it was set.
    #[inline]
    pub fn entry(&self, lpn: u32) -> Option<&u32> {
        debug_assert!(lpn < self.lpns);
        let r = self.dir[(lpn >> REGION_SHIFT) as usize].as_deref()?;
        r.entry(lpn as usize & (REGION - 1))
    }

    /// Where `lpn`'s entry is if its region is dense and it was set (no probe of a
    /// sparse table: for prefetches, which must cost little).
    #[inline]
    pub fn dense_entry(&self, lpn: u32) -> Option<&u32> {
        let r = self.dir[(lpn >> REGION_SHIFT) as usize].as_deref()?;
        if r.bits != 0 {
            return None;
        }
        r.entry(lpn as usize & (REGION - 1))
    }

    /// Starts bringing the word a lookup of `lpn` reads first into the cache.
    #[inline]
    pub fn prefetch(&self, lpn: u32) {
        if let Some(r) = self.dir[(lpn >> REGION_SHIFT) as usize].as_deref() {
            crate::engine::prefetch(r.first_word(lpn as usize & (REGION - 1)));
        }
    }

    /// Sets `lpn`'s entry to `v` (not NOT_SET); returns the entry it had, if any.
    #[inline(always)]
    pub fn replace(&mut self, lpn: u32, v: u32) -> Option<u32> {
        debug_assert!(lpn < self.lpns);
        assert!(v != NOT_SET, "lpn {lpn}: entry {v:#x} is the word for none");
        let off = lpn as usize & (REGION - 1);
        match self.dir[(lpn >> REGION_SHIFT) as usize].as_deref_mut() {
            Some(r) if r.bits == 0 => r.set_dense(off, v),
            _ => self.set_sparse(lpn, v),
        }
    }

    /// `replace` in a sparse region, or in one not yet made.
    #[inline(never)]
    fn set_sparse(&mut self, lpn: u32, v: u32) -> Option<u32> {
        let first = lpn as usize & !(REGION - 1);
        let span = (self.lpns as usize - first).min(REGION);
        let r = self.dir[(lpn >> REGION_SHIFT) as usize]
            .get_or_insert_with(|| Box::new(Region::new(span)));
        r.set_sparse(lpn as usize & (REGION - 1), v, &mut self.scratch)
    }

    /// Whether any LPN of `lpn`'s run of 64 may have an entry.
    #[inline]
    pub fn run_touched(&self, lpn: u32) -> bool {
        self.dir[(lpn >> REGION_SHIFT) as usize]
            .as_deref()
            .is_some_and(|r| {
                let run = (lpn as usize & (REGION - 1)) >> RUN_SHIFT;
                r.bits == 0 || r.touched[run >> 6] & (1 << (run & 63)) != 0
            })
    }

    /// The first LPN of `lpn`'s run.
    #[inline]
    pub fn run_start(lpn: u32) -> u32 {
        lpn >> RUN_SHIFT << RUN_SHIFT
    }

    /// The first LPN of the run after `lpn`'s.
    #[inline]
    pub fn next_run_start(lpn: u32) -> u32 {
        ((lpn >> RUN_SHIFT) + 1) << RUN_SHIFT
    }

    /// LPNs set so far.
    pub fn len(&self) -> usize {
        self.dir.iter().flatten().map(|r| r.len as usize).sum()
    }

    /// Whether no LPN was ever set.
    pub fn is_empty(&self) -> bool {
        self.dir.iter().all(Option::is_none)
    }

    /// Bytes this table holds now.
    pub fn bytes(&self) -> usize {
        let regions: usize = self.dir.iter().flatten().map(|r| r.bytes()).sum();
        self.dir.len() * size_of::<Option<Box<Region>>>()
            + regions
            + self.scratch.capacity() * size_of::<(u32, u32)>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lcg(x: &mut u64) -> u64 {
        *x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        *x >> 33
    }

    #[test]
    fn entries_read_back_and_only_set_lpns_have_one() {
        let lpns = 3 << 20;
        let mut t = L2pTable::new(lpns);
        assert_eq!(t.get(12_345), None);
        assert!(t.is_empty());
        for (i, lpn) in [5u32, 70, 3 << 19, lpns - 1, 6, 5].into_iter().enumerate() {
            t.replace(lpn, i as u32);
        }
        assert_eq!(t.len(), 5, "5 was set twice");
        assert_eq!(t.get(5), Some(5));
        assert_eq!(t.get(6), Some(4));
        assert_eq!(t.get(7), None, "a neighbour of set LPNs has no entry");
        assert_eq!(t.get(70), Some(1));
        assert_eq!(t.get(lpns - 1), Some(3));
        assert!(t.run_touched(63) && t.run_touched(64) && !t.run_touched(128));
        assert!(!t.run_touched(1 << 20), "a region never set");
        assert_eq!(L2pTable::next_run_start(65), 128);
        assert_eq!(L2pTable::run_start(127), 64);
        // 48 directory entries; three regions, each with the smallest table (8
        // buckets of 8 bytes).
        assert_eq!(t.bytes(), 48 * 8 + 3 * (size_of::<Region>() + 64));
        t.replace(70, UNMAPPED_LIKE);
        assert_eq!(t.get(70), Some(UNMAPPED_LIKE));
    }

    /// The FTL's unmapped word: an entry like any other here.
    const UNMAPPED_LIKE: u32 = u32::MAX;

    #[test]
    #[should_panic(expected = "entry 0xfffffffe is the word for none")]
    fn not_set_is_no_entry() {
        L2pTable::new(100).replace(1, NOT_SET);
    }

    /// A table's bytes as it grows: 8 bytes a bucket, doubling at three quarters full;
    /// pieces of 4 KiB from 512 buckets; dense (256 KiB) past 12,288 entries.
    #[test]
    fn a_region_grows_by_doubling_then_turns_dense() {
        let mut t = L2pTable::new(REGION as u32);
        let base = 8 + size_of::<Region>();
        let mut x = 7;
        let mut lpns: Vec<u32> = (0..REGION as u32).collect();
        for i in (1..lpns.len()).rev() {
            lpns.swap(i, lcg(&mut x) as usize % (i + 1));
        }
        for (n, &lpn) in lpns.iter().enumerate().take(12_289) {
            t.replace(lpn, n as u32);
            let entries = n + 1;
            let r = t.dir[0].as_deref().unwrap();
            if entries <= 12_288 {
                // The smallest power of two holding `entries` at 3/4, at least 8.
                let buckets = (entries * 4).div_ceil(3).next_power_of_two().max(8);
                assert_eq!(1usize << r.bits, buckets, "{entries} entries");
                assert_eq!(
                    t.bytes() - t.scratch.capacity() * 8,
                    base + buckets * 8,
                    "{entries} entries"
                );
            } else {
                assert_eq!(r.bits, 0, "dense");
                assert_eq!(t.bytes() - t.scratch.capacity() * 8, base + (256 << 10));
            }
        }
        for (n, &lpn) in lpns.iter().enumerate() {
            assert_eq!(t.get(lpn), (n < 12_289).then_some(n as u32));
        }
        assert_eq!(t.len(), 12_289);
    }

    /// A table's last region, when short, turns dense sooner and smaller: its table
    /// never outgrows its own dense form.
    #[test]
    fn a_short_last_region_turns_dense_in_its_own_span() {
        // The second region has 3,000 LPNs: 3 pieces (12 KiB) dense.
        let mut t = L2pTable::new(REGION as u32 + 3_000);
        let first = REGION as u32;
        for i in 0..769 {
            t.replace(first + i * 3, i);
            let r = t.dir[1].as_deref().unwrap();
            // A table of 1,024 buckets (8 KiB) holds 768; the next would be 16 KiB.
            assert_eq!(r.bits == 0, i == 768, "entry {i}");
        }
        let r = t.dir[1].as_deref().unwrap();
        assert_eq!(r.bytes(), size_of::<Region>() + 3 * 4096);
        for i in 0..3_000 {
            let want = (i % 3 == 0 && i / 3 < 769).then_some(i / 3);
            assert_eq!(t.get(first + i), want, "lpn {}", first + i);
        }
    }

    /// A region grows and turns dense in the pieces it has: none is freed, so the
    /// process is left with no freed memory it cannot use again.
    #[test]
    fn pieces_are_kept_through_growth_and_the_change_to_dense() {
        let mut t = L2pTable::new(REGION as u32);
        let mut seen: Vec<*const Piece> = Vec::new();
        for lpn in 0..REGION as u32 {
            t.replace(lpn.wrapping_mul(40_503) % REGION as u32, lpn);
            let r = t.dir[0].as_deref().unwrap();
            let now: Vec<*const Piece> = r.pieces.iter().flatten().map(|p| &**p as _).collect();
            assert_eq!(now[..seen.len()], seen[..], "a piece was replaced at {lpn}");
            seen = now;
        }
        assert_eq!(seen.len(), PIECES);
        assert_eq!(t.len(), REGION);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        /// Any sequence of sets, scattered or in runs, reads back as a map would,
        /// whether its regions end sparse or dense; a run with an entry is touched,
        /// and in a sparse region a run with none is not.
        #[test]
        fn reads_back_as_a_map(
            lpns in 1u32..(REGION as u32 * 5 / 2),
            ops in 0usize..40_000,
            run in 1u32..40,
            seed in proptest::prelude::any::<u64>(),
        ) {
            let mut t = L2pTable::new(lpns);
            let mut model = HashMap::new();
            let mut x = seed;
            let mut i = 0;
            while i < ops {
                let first = (lcg(&mut x) % lpns as u64) as u32;
                for lpn in first..(first + run).min(lpns) {
                    let v = lcg(&mut x) as u32;
                    t.replace(lpn, v);
                    model.insert(lpn, v);
                    i += 1;
                }
            }
            proptest::prop_assert_eq!(t.len(), model.len());
            for lpn in 0..lpns {
                proptest::prop_assert_eq!(t.get(lpn), model.get(&lpn).copied(), "lpn {}", lpn);
            }
            for first in (0..lpns).step_by(RUN) {
                let any = (first..(first + RUN as u32).min(lpns)).any(|l| model.contains_key(&l));
                let dense = t.dir[(first >> REGION_SHIFT) as usize].as_deref().is_some_and(|r| r.bits == 0);
                proptest::prop_assert_eq!(t.run_touched(first), any || dense, "run at {}", first);
            }
        }
    }

    /// A table set whole costs 4 bytes per LPN and a Region's bytes and 8 per region.
    #[test]
    fn a_whole_table_costs_four_bytes_per_page() {
        let lpns = REGION as u32 * 4;
        let mut t = L2pTable::new(lpns);
        for i in 0..lpns {
            t.replace((i as u64 * 2_654_435_761 % lpns as u64) as u32, i);
        }
        assert_eq!(size_of::<Region>(), 664);
        assert_eq!(
            t.bytes(),
            lpns as usize * 4 + 4 * (8 + 664) + t.scratch.capacity() * 8
        );
        assert!(
            t.scratch.capacity() <= 16_384,
            "the scratch holds one table"
        );
    }
}
