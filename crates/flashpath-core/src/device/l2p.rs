//! The page-mapped FTL's L2P table: one 32-bit entry per 4 KiB logical page, kept in
//! chunks of 64 entries (256 bytes) that exist only once one of their entries was set.
//!
//! The LPNs are cut into regions of 65,536 (256 MiB of data, 1,024 chunks). A region
//! never written costs its directory entry, 8 bytes. A region's chunks live in 4 KiB
//! pieces of 16, made as they fill. While the region is written in part, its chunks sit
//! in the order they were made, and a 2 KiB index gives each chunk's slot. When its
//! last chunk is made, the chunks are put in LPN order in the same pieces, one swap at a
//! time, and the index goes: the region is dense. So a device written whole costs
//! 4 bytes per page, plus 536 bytes per 256 MiB; a region written in part costs 256
//! bytes per chunk touched, its index, its own 528 bytes and less than a piece of room
//! not yet used.
//! Nothing is freed and made again when a region turns dense, so the process keeps no
//! freed memory it cannot give back. A chunk, once made, stays (an unmap sets its
//! entries, as a device's map keeps its pages).

const CHUNK_SHIFT: u32 = 6;
/// Entries per chunk.
pub const CHUNK: usize = 1 << CHUNK_SHIFT;
const REGION_SHIFT: u32 = 16;
/// LPNs per region.
const REGION: usize = 1 << REGION_SHIFT;
/// Chunks per region.
const REGION_CHUNKS: usize = REGION / CHUNK;
const PIECE_SHIFT: u32 = 4;
/// Chunks per piece.
const PIECE: usize = 1 << PIECE_SHIFT;
/// Pieces per region.
const PIECES: usize = REGION_CHUNKS / PIECE;
/// A slot meaning "no chunk".
const NO_SLOT: u16 = u16::MAX;

type Chunk = [u32; CHUNK];
type Piece = [Chunk; PIECE];

struct Region {
    /// Each chunk's slot in `pieces`, or NO_SLOT; None once the region is dense (every
    /// chunk made, chunk `c` in slot `c`).
    slots: Option<Box<[u16; REGION_CHUNKS]>>,
    /// Slot `i` is entry `i % PIECE` of piece `i / PIECE`; pieces are made in order.
    pieces: [Option<Box<Piece>>; PIECES],
    /// Chunks made: slots `0..made` hold them.
    made: u16,
}

impl Region {
    /// The slot of chunk `c` (of this region), if it was made.
    #[inline(always)]
    fn slot(&self, c: usize) -> Option<usize> {
        match &self.slots {
            None => Some(c),
            Some(s) => match s[c] {
                NO_SLOT => None,
                x => Some(x as usize),
            },
        }
    }

    #[inline(always)]
    fn chunk(&self, slot: usize) -> &Chunk {
        let piece = self.pieces[slot >> PIECE_SHIFT].as_deref();
        &piece.expect("a made slot's piece")[slot & (PIECE - 1)]
    }

    #[inline(always)]
    fn chunk_mut(&mut self, slot: usize) -> &mut Chunk {
        let piece = self.pieces[slot >> PIECE_SHIFT].as_deref_mut();
        &mut piece.expect("a made slot's piece")[slot & (PIECE - 1)]
    }

    /// Puts every chunk in its own slot and drops the index (all chunks are made).
    #[cold]
    fn make_dense(&mut self) {
        let slots = self.slots.take().expect("a sparse region");
        // at[i]: the chunk in slot i.
        let mut at = [0u16; REGION_CHUNKS];
        for (c, &s) in slots.iter().enumerate() {
            at[s as usize] = c as u16;
        }
        for i in 0..REGION_CHUNKS {
            // Each swap puts one chunk in its own slot for good.
            while at[i] as usize != i {
                let j = at[i] as usize;
                let tmp = *self.chunk(i);
                *self.chunk_mut(i) = *self.chunk(j);
                *self.chunk_mut(j) = tmp;
                at.swap(i, j);
            }
        }
    }
}

pub struct L2pTable {
    lpns: u32,
    dir: Vec<Option<Box<Region>>>,
    chunks: u32,
}

impl L2pTable {
    pub fn new(lpns: u32) -> Self {
        L2pTable {
            lpns,
            dir: (0..(lpns as usize).div_ceil(REGION))
                .map(|_| None)
                .collect(),
            chunks: 0,
        }
    }

    /// `lpn`'s entry, or None if its chunk was never made.
    #[inline]
    pub fn get(&self, lpn: u32) -> Option<u32> {
        debug_assert!(lpn < self.lpns);
        self.entry(lpn).copied()
    }

    /// Where `lpn`'s entry is, if its chunk was made.
    #[inline]
    pub fn entry(&self, lpn: u32) -> Option<&u32> {
        let r = self.dir[(lpn >> REGION_SHIFT) as usize].as_deref()?;
        let slot = r.slot((lpn as usize >> CHUNK_SHIFT) & (REGION_CHUNKS - 1))?;
        Some(&r.chunk(slot)[lpn as usize & (CHUNK - 1)])
    }

    /// Whether `lpn`'s chunk exists.
    #[inline]
    pub fn has_chunk(&self, lpn: u32) -> bool {
        self.entry(lpn).is_some()
    }

    /// Sets `lpn`'s entry if its chunk exists; false (nothing done) if not.
    #[inline]
    pub fn set(&mut self, lpn: u32, v: u32) -> bool {
        let Some(r) = self.dir[(lpn >> REGION_SHIFT) as usize].as_deref_mut() else {
            return false;
        };
        let Some(slot) = r.slot((lpn as usize >> CHUNK_SHIFT) & (REGION_CHUNKS - 1)) else {
            return false;
        };
        r.chunk_mut(slot)[lpn as usize & (CHUNK - 1)] = v;
        true
    }

    /// Makes `lpn`'s chunk (it has none) with `entries` for its 64 LPNs from the
    /// first (those past the table's end are never read). The region's last chunk
    /// makes it dense.
    #[cold]
    pub fn add_chunk(&mut self, lpn: u32, entries: Chunk) {
        assert!(!self.has_chunk(lpn), "lpn {lpn}'s chunk exists");
        let r = self.dir[(lpn >> REGION_SHIFT) as usize].get_or_insert_with(|| {
            Box::new(Region {
                slots: Some(Box::new([NO_SLOT; REGION_CHUNKS])),
                pieces: [const { None }; PIECES],
                made: 0,
            })
        });
        let slot = r.made as usize;
        if slot.is_multiple_of(PIECE) {
            r.pieces[slot >> PIECE_SHIFT] = Some(Box::new([[0; CHUNK]; PIECE]));
        }
        *r.chunk_mut(slot) = entries;
        let slots = r
            .slots
            .as_deref_mut()
            .expect("a dense region has every chunk");
        slots[(lpn as usize >> CHUNK_SHIFT) & (REGION_CHUNKS - 1)] = slot as u16;
        r.made += 1;
        self.chunks += 1;
        if r.made as usize == REGION_CHUNKS {
            r.make_dense();
        }
    }

    /// The first LPN of `lpn`'s chunk.
    #[inline]
    pub fn chunk_start(lpn: u32) -> u32 {
        lpn >> CHUNK_SHIFT << CHUNK_SHIFT
    }

    /// The first LPN of the chunk after `lpn`'s.
    #[inline]
    pub fn next_chunk_start(lpn: u32) -> u32 {
        ((lpn >> CHUNK_SHIFT) + 1) << CHUNK_SHIFT
    }

    /// Chunks made so far (a memory measure: 256 bytes each).
    pub fn chunks(&self) -> usize {
        self.chunks as usize
    }

    /// Bytes this table holds now.
    pub fn bytes(&self) -> usize {
        use std::mem::size_of;
        let regions: usize = self
            .dir
            .iter()
            .flatten()
            .map(|r| {
                size_of::<Region>()
                    + r.slots
                        .as_ref()
                        .map_or(0, |_| size_of::<[u16; REGION_CHUNKS]>())
                    + r.pieces.iter().flatten().count() * size_of::<Piece>()
            })
            .sum();
        self.dir.len() * size_of::<Option<Box<Region>>>() + regions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sets `lpn` to `v`, making its chunk first (filled with its first LPN) if need be.
    fn put(t: &mut L2pTable, lpn: u32, v: u32) -> bool {
        if t.set(lpn, v) {
            return false;
        }
        let first = L2pTable::chunk_start(lpn);
        t.add_chunk(lpn, [first; CHUNK]);
        assert!(t.set(lpn, v));
        true
    }

    #[test]
    fn entries_read_back_and_chunks_appear_on_first_set_only() {
        let lpns = 3 << 20;
        let mut t = L2pTable::new(lpns);
        assert_eq!(t.get(12_345), None);
        let mut made = Vec::new();
        for (i, lpn) in [5u32, 70, 3 << 19, lpns - 1, 6].into_iter().enumerate() {
            if put(&mut t, lpn, i as u32) {
                made.push(L2pTable::chunk_start(lpn));
            }
        }
        assert_eq!(made, [0, 64, 3 << 19, lpns - 64]);
        assert_eq!(t.chunks(), 4);
        assert_eq!(t.get(5), Some(0));
        assert_eq!(t.get(6), Some(4));
        assert_eq!(t.get(7), Some(0), "a filled entry of a made chunk");
        assert_eq!(t.get(71), Some(64));
        assert_eq!(t.get(lpns - 1), Some(3));
        assert_eq!(t.get(128), None);
        assert!(t.has_chunk(63) && !t.has_chunk(64 * 2));
        assert_eq!(L2pTable::next_chunk_start(65), 128);
        // 48 directory entries; three sparse regions, with an index and a piece each.
        let sparse = std::mem::size_of::<Region>() + 2048 + 4096;
        assert_eq!(t.bytes(), 48 * 8 + 3 * sparse);
    }

    #[test]
    fn thousands_of_chunks_span_pieces_and_regions() {
        let mut t = L2pTable::new(1 << 24);
        for c in 0..10_000u32 {
            let lpn = (c * 64 * 37) % (1 << 24) + 1;
            assert!(put(&mut t, lpn, c), "chunk {c} once");
        }
        assert_eq!(t.chunks(), 10_000);
        for c in (0..10_000u32).step_by(997) {
            let lpn = (c * 64 * 37) % (1 << 24) + 1;
            assert_eq!(t.get(lpn), Some(c));
            assert_eq!(t.get(lpn - 1), Some(lpn - 1));
        }
    }

    /// The table against a plain array, through a region's change to dense.
    #[test]
    fn a_region_made_whole_turns_dense_and_keeps_every_entry() {
        let lpns = REGION as u32 * 2 + 1000;
        let mut t = L2pTable::new(lpns);
        let mut model = vec![None; lpns as usize];
        // Region 0 whole, in a scattered order; a few LPNs of regions 1 and 2.
        let mut x = 12_345u64;
        let order = (0..REGION as u64).map(|i| (i * 40_503 % REGION as u64) as u32);
        for lpn in order.chain([REGION as u32 + 7, lpns - 1]) {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let v = (x >> 33) as u32;
            if put(&mut t, lpn, v) {
                let first = L2pTable::chunk_start(lpn);
                for l in first..(first + CHUNK as u32).min(lpns) {
                    model[l as usize] = Some(first);
                }
            }
            model[lpn as usize] = Some(v);
        }
        assert!(
            t.dir[0].as_ref().is_some_and(|r| r.slots.is_none()),
            "dense"
        );
        assert!(
            t.dir[1].as_ref().is_some_and(|r| r.slots.is_some()),
            "sparse"
        );
        assert_eq!(t.chunks(), REGION_CHUNKS + 2);
        for lpn in 0..lpns {
            assert_eq!(t.get(lpn), model[lpn as usize], "lpn {lpn}");
        }
        // Sets after the change land in the dense entries.
        assert!(t.set(1234, 99) && t.get(1234) == Some(99));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        /// Any sequence of sets reads back as a plain array would, whether its regions
        /// end sparse or dense; the chunk count is the chunks touched.
        #[test]
        fn reads_back_as_a_plain_array(
            lpns in 1u32..(REGION as u32 * 5 / 2),
            ops in 0usize..30_000,
            seed in proptest::prelude::any::<u64>(),
        ) {
            let mut t = L2pTable::new(lpns);
            let mut model = vec![None; lpns as usize];
            let mut touched = std::collections::HashSet::new();
            let mut x = seed;
            for _ in 0..ops {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                let lpn = ((x >> 32) % lpns as u64) as u32;
                let v = x as u32;
                if put(&mut t, lpn, v) {
                    let first = L2pTable::chunk_start(lpn);
                    for l in first..(first + CHUNK as u32).min(lpns) {
                        model[l as usize] = Some(first);
                    }
                }
                model[lpn as usize] = Some(v);
                touched.insert(lpn >> CHUNK_SHIFT);
            }
            proptest::prop_assert_eq!(t.chunks(), touched.len());
            for lpn in 0..lpns {
                proptest::prop_assert_eq!(t.get(lpn), model[lpn as usize], "lpn {}", lpn);
                proptest::prop_assert_eq!(t.has_chunk(lpn), model[lpn as usize].is_some());
            }
        }
    }

    /// A region turns dense in the pieces it has: nothing is freed but the index, so
    /// no freed memory is left for the process to hold.
    #[test]
    fn a_region_turns_dense_in_place() {
        let mut t = L2pTable::new(REGION as u32);
        // Every chunk but chunk 0, last to first.
        for c in (1..REGION_CHUNKS as u32).rev() {
            put(&mut t, c * CHUNK as u32 + 5, c);
        }
        let r = t.dir[0].as_deref().unwrap();
        assert!(r.slots.is_some());
        let before: Vec<*const Piece> = r.pieces.iter().flatten().map(|p| &**p as _).collect();
        assert_eq!(before.len(), PIECES);
        put(&mut t, 5, 0);
        let r = t.dir[0].as_deref().unwrap();
        assert!(r.slots.is_none(), "dense");
        let after: Vec<*const Piece> = r.pieces.iter().flatten().map(|p| &**p as _).collect();
        assert_eq!(before, after, "the same pieces");
        for c in 0..REGION_CHUNKS {
            assert_eq!(r.chunk(c)[5], c as u32, "chunk {c} in slot {c}");
        }
    }

    /// A table written whole costs 4 bytes per LPN and 536 bytes per region.
    #[test]
    fn a_whole_table_costs_four_bytes_per_page() {
        let lpns = REGION as u32 * 4;
        let mut t = L2pTable::new(lpns);
        for i in 0..lpns {
            put(&mut t, (i as u64 * 2_654_435_761 % lpns as u64) as u32, i);
        }
        assert_eq!(std::mem::size_of::<Region>(), 8 + 64 * 8 + 8);
        assert_eq!(t.bytes(), lpns as usize * 4 + 4 * (8 + 528));
    }
}
