//! The page-mapped FTL's reverse map, per erase block: which LPN each physical slot was
//! written with. A device keeps this in each page's spare area and reads it back when
//! it garbage-collects the block; here a block's map is in memory while the block is
//! open or has programs in flight, and once it is closed and settled, beyond a budget
//! of resident blocks, it moves to a scratch file (the simulator's spare area). Reads
//! of a moved block's map (GC of the block, consistency checks) read the file.
//!
//! So memory holds the L2P (4 bytes per LPN written) plus at most `RESIDENT_BYTES` of
//! closed blocks' maps plus the open blocks', whatever the capacity written. The file
//! holds 4 bytes per slot of the blocks moved (0.1 % of the simulated NAND written), is
//! sparse, and is unlinked as soon as it is created, so it goes when the process goes.
//! If the file cannot be made or written, maps stay in memory (a warning once).
//!
//! A slot's entry changes only while its block is resident (placing data, a stale
//! program's end); an overwrite of data in a moved block changes the L2P and the
//! block's valid count only, which is what makes the slot invalid (the FTL checks a
//! recorded LPN against the L2P before trusting it).

use super::block_arrays::BlockArrays;
use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// A slot that holds no valid data.
pub const INVALID: u32 = u32::MAX;

/// Closed blocks' maps kept in memory before they move to the file.
const RESIDENT_BYTES: usize = 16 << 20;

pub struct ReverseMap {
    slots_per_block: u32,
    /// The maps in memory (erased blocks' arrays kept for reuse, so steady state
    /// allocates nothing).
    resident: BlockArrays,
    /// Blocks whose map is in the file.
    moved: Vec<bool>,
    /// Blocks queued to move (closed, no program in flight), oldest first; an entry
    /// whose block was erased since is skipped.
    settled: VecDeque<u32>,
    queued: Vec<bool>,
    queued_live: usize,
    budget_blocks: usize,
    file: Option<File>,
    /// Moving failed once: everything stays in memory.
    stay: bool,
    bytes: Vec<u8>,
}

impl ReverseMap {
    pub fn new(blocks: usize, slots_per_block: u32) -> Self {
        ReverseMap {
            slots_per_block,
            resident: BlockArrays::new(blocks, slots_per_block, INVALID),
            moved: vec![false; blocks],
            settled: VecDeque::new(),
            queued: vec![false; blocks],
            queued_live: 0,
            budget_blocks: (RESIDENT_BYTES / (4 * slots_per_block as usize)).max(1),
            file: None,
            stay: false,
            bytes: Vec::new(),
        }
    }

    /// Keeps at most `blocks` closed blocks' maps in memory (tests: to make them move).
    pub fn set_budget_blocks(&mut self, blocks: usize) {
        self.budget_blocks = blocks.max(1);
    }

    /// Whether `block` has a map (in memory or in the file).
    #[inline]
    pub fn has(&self, block: u32) -> bool {
        self.resident.get(block).is_some() || self.moved[block as usize]
    }

    /// Blocks whose map is in memory (a memory measure).
    pub fn resident_blocks(&self) -> usize {
        self.resident.held()
    }

    /// Blocks whose map is in the file.
    pub fn moved_blocks(&self) -> usize {
        self.moved.iter().filter(|m| **m).count()
    }

    /// `block` is opened (erased, or never used): its map starts all INVALID.
    pub fn open(&mut self, block: u32) {
        let b = block as usize;
        assert!(
            !self.moved[b],
            "opening a block whose map was never dropped"
        );
        self.resident.open(block);
    }

    /// Gives `block` the map `arr` (a block filled at once).
    pub fn put(&mut self, block: u32, arr: Box<[u32]>) {
        self.resident.put(block, arr);
    }

    /// The resident map of `block`, if it is in memory.
    #[inline]
    pub fn resident(&self, block: u32) -> Option<&[u32]> {
        self.resident.get(block)
    }

    /// The resident map of `block`, if it is in memory, to change.
    #[inline]
    pub fn resident_mut(&mut self, block: u32) -> Option<&mut [u32]> {
        self.resident.get_mut(block)
    }

    /// The LPN recorded for slot `off` of `block` (INVALID if it has no map).
    pub fn get(&self, block: u32, off: u32) -> u32 {
        if let Some(a) = self.resident.get(block) {
            return a[off as usize];
        }
        let mut v = [0u8; 4];
        if self.moved[block as usize] {
            self.read(block, off, &mut v);
            return u32::from_le_bytes(v);
        }
        INVALID
    }

    /// The entries of slots `off..off + out.len()` of `block` (INVALID if it has no map).
    pub fn get_range(&self, block: u32, off: u32, out: &mut [u32]) {
        if let Some(a) = self.resident.get(block) {
            out.copy_from_slice(&a[off as usize..off as usize + out.len()]);
        } else if self.moved[block as usize] {
            // Through a buffer on the stack, 256 entries at a time: no allocation per row.
            const PART: usize = 256;
            let mut buf = [0u8; 4 * PART];
            for (i, part) in out.chunks_mut(PART).enumerate() {
                let b = &mut buf[..4 * part.len()];
                self.read(block, off + (i * PART) as u32, b);
                for (o, c) in part.iter_mut().zip(b.chunks_exact(4)) {
                    *o = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                }
            }
        } else {
            out.fill(INVALID);
        }
    }

    fn read(&self, block: u32, off: u32, buf: &mut [u8]) {
        let at = (block as u64 * self.slots_per_block as u64 + off as u64) * 4;
        self.file
            .as_ref()
            .expect("a moved map has its file")
            .read_exact_at(buf, at)
            .unwrap_or_else(|e| panic!("reading the reverse map's scratch file: {e}"));
    }

    /// `block` is closed and has no program in flight: its map may move to the file.
    pub fn settled(&mut self, block: u32) {
        let b = block as usize;
        if self.stay || self.queued[b] || self.resident.get(block).is_none() {
            return;
        }
        self.queued[b] = true;
        self.queued_live += 1;
        self.settled.push_back(block);
        while self.queued_live > self.budget_blocks {
            let Some(old) = self.settled.pop_front() else {
                break;
            };
            if !self.queued[old as usize] {
                continue; // erased since it was queued
            }
            self.queued[old as usize] = false;
            self.queued_live -= 1;
            if !self.move_out(old) {
                self.stay = true;
                break;
            }
        }
    }

    /// Writes `block`'s map to the file and frees its memory; false if that failed.
    fn move_out(&mut self, block: u32) -> bool {
        if self.file.is_none() {
            match crate::scratch::file("reverse-map") {
                Ok(f) => self.file = Some(f),
                Err(e) => {
                    eprintln!(
                        "flashpath: the FTL's reverse map stays in memory: no scratch file in {} ({e}; TMPDIR chooses the directory)",
                        std::env::temp_dir().display()
                    );
                    return false;
                }
            }
        }
        let b = block as usize;
        let arr = self.resident.take(block).unwrap();
        self.bytes.clear();
        self.bytes.extend(arr.iter().flat_map(|v| v.to_le_bytes()));
        let at = block as u64 * self.slots_per_block as u64 * 4;
        if let Err(e) = self.file.as_ref().unwrap().write_all_at(&self.bytes, at) {
            eprintln!("flashpath: the FTL's reverse map stays in memory: {e}");
            self.resident.put(block, arr);
            return false;
        }
        self.moved[b] = true;
        self.resident.recycle(arr);
        true
    }

    /// `block` was erased: it has no map until it is opened again.
    pub fn erase(&mut self, block: u32) {
        let b = block as usize;
        if self.queued[b] {
            self.queued[b] = false;
            self.queued_live -= 1;
        }
        self.moved[b] = false;
        self.resident.erase(block);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_past_the_budget_move_to_the_file_and_read_back() {
        let spb = 1024u32;
        let mut m = ReverseMap::new(64, spb);
        m.budget_blocks = 2;
        for b in 0..6u32 {
            m.open(b);
            for (i, e) in m.resident_mut(b).unwrap().iter_mut().enumerate() {
                *e = b * 10_000 + i as u32;
            }
            m.settled(b);
        }
        assert_eq!((m.resident_blocks(), m.moved_blocks()), (2, 4));
        for b in 0..6u32 {
            assert!(m.has(b));
            assert_eq!(m.get(b, 7), b * 10_000 + 7);
            let mut row = [0u32; 8];
            m.get_range(b, 16, &mut row);
            assert_eq!(row[3], b * 10_000 + 19);
            // A range longer than the read's stack buffer (256 entries) and across it.
            let mut long = vec![0u32; 600];
            m.get_range(b, 100, &mut long);
            assert!(long
                .iter()
                .enumerate()
                .all(|(i, &e)| e == b * 10_000 + 100 + i as u32));
        }
        assert_eq!(m.get(9, 0), INVALID, "a block never opened has no map");
        m.erase(1);
        assert!(!m.has(1));
        m.open(1);
        assert_eq!(m.get(1, 7), INVALID, "an erased block's map starts empty");
        // Erasing a queued block drops it from the queue.
        m.erase(5);
        assert_eq!(m.queued_live, 1);
    }
}
