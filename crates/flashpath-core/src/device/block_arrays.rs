//! One array of 4-byte entries per erase block, made when the block is first written
//! and given back when it is erased: the shape of everything a device keeps per
//! physical slot (the FTL's reverse map, `reverse_map.rs`; verify runs' content tags,
//! `content.rs`). Erased blocks' arrays are reset and kept for reuse, so a device in
//! steady state allocates nothing.

pub struct BlockArrays {
    slots_per_block: u32,
    /// What an entry holds before it is set.
    fill: u32,
    blocks: Vec<Option<Box<[u32]>>>,
    spare: Vec<Box<[u32]>>,
}

impl BlockArrays {
    pub fn new(blocks: usize, slots_per_block: u32, fill: u32) -> Self {
        BlockArrays {
            slots_per_block,
            fill,
            blocks: (0..blocks).map(|_| None).collect(),
            spare: Vec::new(),
        }
    }

    pub fn slots_per_block(&self) -> u32 {
        self.slots_per_block
    }

    /// `block`'s array, if it has one.
    #[inline]
    pub fn get(&self, block: u32) -> Option<&[u32]> {
        self.blocks[block as usize].as_deref()
    }

    #[inline]
    pub fn get_mut(&mut self, block: u32) -> Option<&mut [u32]> {
        self.blocks[block as usize].as_deref_mut()
    }

    /// `block`'s array, made (every entry `fill`) if it has none.
    #[inline]
    pub fn open(&mut self, block: u32) -> &mut [u32] {
        let (n, fill, spare) = (self.slots_per_block as usize, self.fill, &mut self.spare);
        self.blocks[block as usize].get_or_insert_with(|| {
            spare
                .pop()
                .unwrap_or_else(|| vec![fill; n].into_boxed_slice())
        })
    }

    /// Gives `block` the array `arr` (a block filled at once).
    pub fn put(&mut self, block: u32, arr: Box<[u32]>) {
        assert_eq!(arr.len(), self.slots_per_block as usize);
        self.blocks[block as usize] = Some(arr);
    }

    /// Takes `block`'s array away (it is kept elsewhere); hand it back with `recycle`.
    pub fn take(&mut self, block: u32) -> Option<Box<[u32]>> {
        self.blocks[block as usize].take()
    }

    /// Keeps `arr`, reset, for the next block opened.
    pub fn recycle(&mut self, mut arr: Box<[u32]>) {
        arr.fill(self.fill);
        self.spare.push(arr);
    }

    /// `block` was erased: it has no array until it is opened again.
    pub fn erase(&mut self, block: u32) {
        if let Some(arr) = self.take(block) {
            self.recycle(arr);
        }
    }

    /// Blocks holding an array now (memory: this × slots per block × 4 bytes).
    pub fn held(&self) -> usize {
        self.blocks.iter().filter(|b| b.is_some()).count()
    }

    /// Arrays kept for reuse.
    pub fn spares(&self) -> usize {
        self.spare.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_appear_on_open_and_are_reused_reset_after_an_erase() {
        let mut a = BlockArrays::new(4, 8, 7);
        assert!(a.get(1).is_none());
        a.open(1)[3] = 5;
        assert_eq!(a.get(1).unwrap()[3], 5);
        assert_eq!(a.get(1).unwrap()[2], 7, "a new array is all fill");
        assert_eq!(a.held(), 1);
        a.erase(1);
        assert!(a.get(1).is_none());
        assert_eq!((a.held(), a.spares()), (0, 1));
        assert_eq!(a.open(2)[3], 7, "a reused array is reset");
        assert_eq!(a.spares(), 0, "the erased block's array was reused");
        let arr = a.take(2).unwrap();
        assert!(a.get(2).is_none());
        a.put(3, arr);
        assert_eq!(a.held(), 1);
    }
}
