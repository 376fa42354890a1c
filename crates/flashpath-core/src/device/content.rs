//! Content tags: what data the device holds, as a 32-bit tag per 4 KiB block, kept with
//! the physical location the FTL put it in (write buffer slot, NAND slot) and carried by
//! every move (buffer drain, GC copy, AU close and merge). A read returns the tags of
//! the locations it really reads, so a wrong map entry or a bad copy returns wrong data,
//! as it would on a device: fio's verify (`sim/jobs/verify.rs`) then finds it.
//!
//! Off unless a verify job (or a test) turns it on (`Device::track_content`): ordinary
//! runs keep no tags and pay one `Option` test per command.
//!
//! ```text
//!   host ──stage_write(tag, lpn, tags)──▶ Port.writes ──FTL admits──▶ buffer slot / NAND slot
//!   host ◀──take_read(tag)────────────── Port.reads ◀──FTL reads──── buffer slot / NAND slot
//! ```
//!
//! Memory, when on: 4 bytes per 4 KiB of the physical blocks that hold data (the
//! page-mapped FTL allocates per erase block on first use and gives a block's tags back
//! when it is erased), at most 0.1% of the NAND: about 34 MiB for a 32 GiB device and
//! 270 MiB for 256 GiB written whole, as much as the region a job writes otherwise. The
//! allocation-unit FTL keeps one flat array over its physical AUs (the same 0.1%).
//!
//! Leaves out: data itself (a tag stands for the 4 KiB it names), sub-4 KiB content
//! (a partial write tags its whole 4 KiB unit).
//! Units: 4 KiB logical blocks (`lpn`), device command tags.

use super::block_arrays::BlockArrays;
use std::collections::BTreeMap;

/// The tag of a block never written (or trimmed): the device returns zeroes.
pub const UNWRITTEN: u32 = 0;
/// The tag of an erased NAND slot (reads of erased flash give 0xff bytes).
pub const ERASED: u32 = u32::MAX;

/// The data going in and out with host commands, by command tag.
#[derive(Default)]
pub struct Port {
    /// Write commands whose data the FTL has not all taken in: (first lpn, tags).
    writes: BTreeMap<u32, (u64, Vec<u32>)>,
    /// What read commands returned, until the host takes it (one tag per 4 KiB, in
    /// address order).
    reads: BTreeMap<u32, Vec<u32>>,
}

impl Port {
    /// The data of write command `tag`: `tags[i]` for lpn `first + i`.
    pub fn stage_write(&mut self, tag: u32, first: u64, tags: Vec<u32>) {
        self.writes.insert(tag, (first, tags));
    }

    /// The tag write command `tag` carries for `lpn` (`UNWRITTEN` if the host staged
    /// none: a write from a test harness or a job the host does not follow).
    pub fn write_tag(&self, tag: u32, lpn: u64) -> u32 {
        match self.writes.get(&tag) {
            Some((first, tags)) => lpn
                .checked_sub(*first)
                .and_then(|i| tags.get(i as usize))
                .copied()
                .unwrap_or(UNWRITTEN),
            None => UNWRITTEN,
        }
    }

    /// Whether write command `tag` carries staged data.
    pub fn has_write(&self, tag: u32) -> bool {
        self.writes.contains_key(&tag)
    }

    /// Write command `tag`'s data is all in.
    pub fn end_write(&mut self, tag: u32) {
        self.writes.remove(&tag);
    }

    /// Read command `tag` returns `value` for its next 4 KiB.
    pub fn push_read(&mut self, tag: u32, value: u32) {
        self.reads.entry(tag).or_default().push(value);
    }

    /// What read command `tag` returned (empty if nothing was recorded).
    pub fn take_read(&mut self, tag: u32) -> Vec<u32> {
        self.reads.remove(&tag).unwrap_or_default()
    }
}

/// Tags per physical slot, allocated per erase block on first use.
pub struct BlockTags(BlockArrays);

impl BlockTags {
    pub fn new(blocks: u32, slots_per_block: u32) -> Self {
        BlockTags(BlockArrays::new(blocks as usize, slots_per_block, ERASED))
    }

    /// The tag at physical slot `ppa` (`ERASED` if its block holds none).
    pub fn get(&self, ppa: u32) -> u32 {
        let spb = self.0.slots_per_block();
        match self.0.get(ppa / spb) {
            Some(t) => t[(ppa % spb) as usize],
            None => ERASED,
        }
    }

    pub fn set(&mut self, ppa: u32, v: u32) {
        let spb = self.0.slots_per_block();
        self.0.open(ppa / spb)[(ppa % spb) as usize] = v;
    }

    /// Block `block` was erased: its slots read as erased.
    pub fn erase(&mut self, block: u32) {
        self.0.erase(block);
    }

    /// Blocks holding tags now (memory: this × slots per block × 4 bytes).
    pub fn blocks_held(&self) -> usize {
        self.0.held()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_staged_write_answers_for_its_lpns_only() {
        let mut p = Port::default();
        p.stage_write(7, 100, vec![11, 12, 13]);
        assert_eq!(p.write_tag(7, 99), UNWRITTEN);
        assert_eq!(p.write_tag(7, 101), 12);
        assert_eq!(p.write_tag(7, 103), UNWRITTEN);
        assert_eq!(p.write_tag(8, 100), UNWRITTEN);
        p.end_write(7);
        assert_eq!(p.write_tag(7, 100), UNWRITTEN);
    }

    #[test]
    fn block_tags_come_back_erased_after_an_erase_and_reuse_memory() {
        let mut t = BlockTags::new(4, 8);
        assert_eq!(t.get(9), ERASED);
        t.set(9, 5);
        assert_eq!(t.get(9), 5);
        assert_eq!(t.blocks_held(), 1);
        t.erase(1);
        assert_eq!(t.get(9), ERASED);
        assert_eq!(t.blocks_held(), 0);
        t.set(30, 6);
        assert_eq!((t.get(30), t.get(29), t.blocks_held()), (6, ERASED, 1));
        assert_eq!(t.0.spares(), 0, "the erased block's array was reused");
    }
}
