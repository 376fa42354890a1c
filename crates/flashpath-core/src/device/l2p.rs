//! The page-mapped FTL's L2P table: one 32-bit entry per 4 KiB logical page, kept in
//! chunks of 64 entries (256 bytes) that exist only once one of their entries was set.
//! A two-level index finds a chunk: a directory entry per 65,536 LPNs (256 MiB of
//! data) points to a 4 KiB page of chunk numbers, made on first use; chunks live in
//! slabs of 4,096 (1 MiB), so there is no allocator overhead per chunk and growth is
//! in 1 MiB steps. Memory: 4 bytes per LPN of the chunks touched, plus 1/16 of that
//! for the index pages, plus 8 bytes per 256 MiB of capacity; nothing for a region
//! never written. A chunk, once made, stays (an unmap sets its entries, as a device's
//! map keeps its pages).

const CHUNK_SHIFT: u32 = 6;
/// Entries per chunk.
pub const CHUNK: usize = 1 << CHUNK_SHIFT;
const PAGE_SHIFT: u32 = 10;
const PAGE: usize = 1 << PAGE_SHIFT;
const SLAB_SHIFT: u32 = 12;
const SLAB: usize = 1 << SLAB_SHIFT;
/// A chunk number meaning "no chunk".
const NO_CHUNK: u32 = u32::MAX;

type Chunk = [u32; CHUNK];

pub struct L2pTable {
    lpns: u32,
    /// Per 2^(CHUNK_SHIFT + PAGE_SHIFT) LPNs: a page of chunk numbers.
    dir: Vec<Option<Box<[u32; PAGE]>>>,
    slabs: Vec<Box<[Chunk]>>,
    chunks: u32,
}

impl L2pTable {
    pub fn new(lpns: u32) -> Self {
        let span = 1usize << (CHUNK_SHIFT + PAGE_SHIFT);
        L2pTable {
            lpns,
            dir: (0..(lpns as usize).div_ceil(span)).map(|_| None).collect(),
            slabs: Vec::new(),
            chunks: 0,
        }
    }

    /// The chunk number of `lpn`'s chunk, or NO_CHUNK.
    #[inline]
    fn chunk_of(&self, lpn: u32) -> u32 {
        match &self.dir[(lpn >> (CHUNK_SHIFT + PAGE_SHIFT)) as usize] {
            Some(p) => p[((lpn >> CHUNK_SHIFT) as usize) & (PAGE - 1)],
            None => NO_CHUNK,
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
        let c = self.chunk_of(lpn);
        if c == NO_CHUNK {
            return None;
        }
        let slab = &self.slabs[(c >> SLAB_SHIFT) as usize];
        Some(&slab[c as usize & (SLAB - 1)][lpn as usize & (CHUNK - 1)])
    }

    /// Whether `lpn`'s chunk exists.
    #[inline]
    pub fn has_chunk(&self, lpn: u32) -> bool {
        self.chunk_of(lpn) != NO_CHUNK
    }

    /// Sets `lpn`'s entry if its chunk exists; false (nothing done) if not.
    #[inline]
    pub fn set(&mut self, lpn: u32, v: u32) -> bool {
        let c = self.chunk_of(lpn);
        if c == NO_CHUNK {
            return false;
        }
        let slab = &mut self.slabs[(c >> SLAB_SHIFT) as usize];
        slab[c as usize & (SLAB - 1)][lpn as usize & (CHUNK - 1)] = v;
        true
    }

    /// Makes `lpn`'s chunk (it has none) with `entries` for its 64 LPNs from the
    /// first (those past the table's end are never read).
    #[cold]
    pub fn add_chunk(&mut self, lpn: u32, entries: Chunk) {
        assert!(!self.has_chunk(lpn), "lpn {lpn}'s chunk exists");
        let c = self.chunks;
        self.chunks += 1;
        if (c as usize) >> SLAB_SHIFT == self.slabs.len() {
            self.slabs
                .push(vec![[0u32; CHUNK]; SLAB].into_boxed_slice());
        }
        self.slabs[(c >> SLAB_SHIFT) as usize][c as usize & (SLAB - 1)] = entries;
        let page = self.dir[(lpn >> (CHUNK_SHIFT + PAGE_SHIFT)) as usize]
            .get_or_insert_with(|| Box::new([NO_CHUNK; PAGE]));
        page[((lpn >> CHUNK_SHIFT) as usize) & (PAGE - 1)] = c;
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
        self.dir.len() * 8
            + self.dir.iter().flatten().count() * PAGE * 4
            + self.slabs.len() * SLAB * CHUNK * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_back_and_chunks_appear_on_first_set_only() {
        let lpns = 3 << 20;
        let mut t = L2pTable::new(lpns);
        assert_eq!(t.get(12_345), None);
        let mut made = Vec::new();
        for (i, lpn) in [5u32, 70, 3 << 19, lpns - 1, 6].into_iter().enumerate() {
            if !t.set(lpn, i as u32) {
                let first = L2pTable::chunk_start(lpn);
                made.push(first);
                t.add_chunk(lpn, [first; CHUNK]);
                assert!(t.set(lpn, i as u32));
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
        // 48 directory entries, 3 index pages, one slab.
        assert_eq!(t.bytes(), 48 * 8 + 3 * 4096 + (1 << 20));
    }

    #[test]
    fn thousands_of_chunks_span_slabs() {
        let mut t = L2pTable::new(1 << 24);
        for c in 0..10_000u32 {
            t.add_chunk(c * 64 + 1, [u32::MAX; CHUNK]);
            t.set(c * 64 + 1, c);
        }
        assert_eq!(t.chunks(), 10_000);
        for c in (0..10_000u32).step_by(997) {
            assert_eq!(t.get(c * 64 + 1), Some(c));
            assert_eq!(t.get(c * 64), Some(u32::MAX));
        }
    }
}
