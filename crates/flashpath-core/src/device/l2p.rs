//! The page-mapped FTL's L2P table: one 32-bit entry per 4 KiB logical page, kept in
//! chunks of 64 entries (256 bytes) that exist only once one of their entries was set.
//!
//! The LPNs are cut into regions of 65,536 (256 MiB of data, 1,024 chunks). A region
//! never written has nothing but its directory entry (16 bytes). A region written in
//! part is sparse: a 2 KiB index of its chunks' slots and its chunks in the order they
//! were made, sixteen to a 4 KiB piece. When its last chunk is made, the region becomes
//! dense: its 65,536 entries in LPN order, 256 KiB, with no index. So a device written
//! whole costs 4 bytes per page and 16 bytes per 256 MiB; a sparse region costs 256
//! bytes per chunk touched, about 2.6 KiB, and less than a piece of room not yet used.
//! A chunk, once made, stays (an unmap sets its entries, as a device's map keeps its
//! pages).

const CHUNK_SHIFT: u32 = 6;
/// Entries per chunk.
pub const CHUNK: usize = 1 << CHUNK_SHIFT;
const REGION_SHIFT: u32 = 16;
/// LPNs per region.
const REGION: usize = 1 << REGION_SHIFT;
/// Chunks per region.
const REGION_CHUNKS: usize = REGION / CHUNK;
const PIECE_SHIFT: u32 = 4;
/// Chunks per piece of a sparse region.
const PIECE: usize = 1 << PIECE_SHIFT;
/// A slot meaning "no chunk".
const NO_SLOT: u16 = u16::MAX;

type Chunk = [u32; CHUNK];

/// A region written in part.
struct Sparse {
    /// Each chunk's slot in `pieces`, or NO_SLOT.
    slots: [u16; REGION_CHUNKS],
    /// The chunks made, in the order they were made.
    pieces: Vec<Box<[Chunk; PIECE]>>,
    made: u16,
}

enum Region {
    Sparse(Box<Sparse>),
    /// Every chunk made: the entries in LPN order.
    Dense(Box<[u32; REGION]>),
}

pub struct L2pTable {
    lpns: u32,
    dir: Vec<Option<Region>>,
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
        match &self.dir[(lpn >> REGION_SHIFT) as usize] {
            None => None,
            Some(Region::Dense(d)) => Some(&d[lpn as usize & (REGION - 1)]),
            Some(Region::Sparse(s)) => {
                let slot = s.slots[(lpn as usize >> CHUNK_SHIFT) & (REGION_CHUNKS - 1)];
                if slot == NO_SLOT {
                    return None;
                }
                let piece = &s.pieces[(slot >> PIECE_SHIFT) as usize];
                Some(&piece[slot as usize & (PIECE - 1)][lpn as usize & (CHUNK - 1)])
            }
        }
    }

    /// Whether `lpn`'s chunk exists.
    #[inline]
    pub fn has_chunk(&self, lpn: u32) -> bool {
        self.entry(lpn).is_some()
    }

    /// Sets `lpn`'s entry if its chunk exists; false (nothing done) if not.
    #[inline]
    pub fn set(&mut self, lpn: u32, v: u32) -> bool {
        let e = match &mut self.dir[(lpn >> REGION_SHIFT) as usize] {
            None => return false,
            Some(Region::Dense(d)) => &mut d[lpn as usize & (REGION - 1)],
            Some(Region::Sparse(s)) => {
                let slot = s.slots[(lpn as usize >> CHUNK_SHIFT) & (REGION_CHUNKS - 1)];
                if slot == NO_SLOT {
                    return false;
                }
                let piece = &mut s.pieces[(slot >> PIECE_SHIFT) as usize];
                &mut piece[slot as usize & (PIECE - 1)][lpn as usize & (CHUNK - 1)]
            }
        };
        *e = v;
        true
    }

    /// Makes `lpn`'s chunk (it has none) with `entries` for its 64 LPNs from the
    /// first (those past the table's end are never read). The region's last chunk
    /// makes it dense.
    #[cold]
    pub fn add_chunk(&mut self, lpn: u32, entries: Chunk) {
        assert!(!self.has_chunk(lpn), "lpn {lpn}'s chunk exists");
        let region = self.dir[(lpn >> REGION_SHIFT) as usize].get_or_insert_with(|| {
            Region::Sparse(Box::new(Sparse {
                slots: [NO_SLOT; REGION_CHUNKS],
                pieces: Vec::new(),
                made: 0,
            }))
        });
        let Region::Sparse(s) = region else {
            unreachable!("a dense region has every chunk")
        };
        let slot = s.made as usize;
        if slot.is_multiple_of(PIECE) {
            s.pieces.push(Box::new([[0; CHUNK]; PIECE]));
        }
        s.pieces[slot >> PIECE_SHIFT][slot & (PIECE - 1)] = entries;
        s.slots[(lpn as usize >> CHUNK_SHIFT) & (REGION_CHUNKS - 1)] = slot as u16;
        s.made += 1;
        self.chunks += 1;
        if s.made as usize == REGION_CHUNKS {
            let mut d: Box<[u32; REGION]> = vec![0; REGION]
                .into_boxed_slice()
                .try_into()
                .expect("a region's length");
            for (c, dst) in d.chunks_exact_mut(CHUNK).enumerate() {
                let slot = s.slots[c] as usize;
                dst.copy_from_slice(&s.pieces[slot >> PIECE_SHIFT][slot & (PIECE - 1)]);
            }
            *region = Region::Dense(d);
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
        let regions: usize = self
            .dir
            .iter()
            .flatten()
            .map(|r| match r {
                Region::Dense(_) => REGION * 4,
                Region::Sparse(s) => {
                    std::mem::size_of::<Sparse>()
                        + s.pieces.capacity() * std::mem::size_of::<usize>()
                        + s.pieces.len() * PIECE * CHUNK * 4
                }
            })
            .sum();
        self.dir.len() * std::mem::size_of::<Option<Region>>() + regions
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
        // 48 directory entries; three sparse regions, with a piece each.
        let sparse = std::mem::size_of::<Sparse>() + 4 * 8 + 4096;
        assert_eq!(t.bytes(), 48 * 16 + 3 * sparse);
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
        assert!(matches!(t.dir[0], Some(Region::Dense(_))));
        assert!(matches!(t.dir[1], Some(Region::Sparse(_))));
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

    /// A table written whole costs 4 bytes per LPN and 16 bytes per region.
    #[test]
    fn a_whole_table_costs_four_bytes_per_page() {
        let lpns = REGION as u32 * 4;
        let mut t = L2pTable::new(lpns);
        for i in 0..lpns {
            put(&mut t, (i as u64 * 2_654_435_761 % lpns as u64) as u32, i);
        }
        assert_eq!(t.bytes(), lpns as usize * 4 + 4 * 16);
    }
}
