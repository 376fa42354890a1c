//! flashbench's two linear feedback shift registers, which order its accesses: the one in
//! flashbench.c (the scatter test's order) and the one in vm.c (`O_OFF_RAND`: `-O`'s order
//! of the AUs, and the chunk order of `-O`/`-f` with `--random`). They differ in one line:
//! vm.c's maps the seed to 0, so its cycle passes through 0 ("fix random generator to also
//! include 0", Feb 2011); flashbench.c's never returns 0. Both take the seed
//! `0xace1` (masked to the width) in place of 0.
//!
//! An unsupported width (outside 8..=16) is flashbench's "internal error" exit.

/// The taps of each supported width, as bit positions XORed into the new top bit.
fn feedback(v: u16, bits: u32) -> Option<u16> {
    let t = |s: u32| v >> s;
    let bit = match bits {
        8 => t(0) ^ t(2) ^ t(3) ^ t(4),
        9 => t(0) ^ t(4),
        10 => t(0) ^ t(3),
        11 => t(0) ^ t(2),
        12 => t(0) ^ t(1) ^ t(2) ^ t(8),
        13 => t(0) ^ t(1) ^ t(2) ^ t(5),
        14 => t(0) ^ t(1) ^ t(2) ^ t(12),
        15 => t(0) ^ t(1),
        16 => t(0) ^ t(2) ^ t(3) ^ t(5),
        _ => return None,
    };
    Some(bit & 1)
}

fn seed(bits: u32) -> u16 {
    (((1u32 << bits) - 1) & 0xace1) as u16
}

/// One step of a register `bits` wide: `(v >> 1) | (bit << (bits - 1))`, computed in C's
/// `int` from an `unsigned short` `v`. `None`: flashbench's internal error.
fn step(v: u16, bits: u32) -> Option<u32> {
    let bit = feedback(v, bits)?;
    Some((v >> 1) as u32 | (bit as u32) << (bits - 1))
}

/// flashbench.c's `lfsr(v, bits)` (`v` is the `unsigned short` the caller's value is
/// truncated to). `None`: flashbench prints "flashbench: internal error" and exits.
pub fn flashbench_lfsr(v: u16, bits: u32) -> Option<u32> {
    if bits > 16 || v as u32 >= 1u32 << bits {
        return None;
    }
    let v = if v == 0 { seed(bits) } else { v };
    step(v, bits)
}

/// vm.c's `lfsr(v, bits)`. `None`: vm.c prints "lfsr: internal error" and exits.
pub fn vm_lfsr(v: u16, bits: u32) -> Option<u32> {
    if bits > 16 || v as u32 >= 1u32 << bits {
        return None;
    }
    if v == seed(bits) {
        return Some(0);
    }
    let v = if v == 0 { seed(bits) } else { v };
    step(v, bits)
}

/// The `num` positions `O_OFF_RAND` visits, in order (vm.c `off_rand`): the register is
/// at least 8 bits wide and as wide as `num`'s bit length; values `>= num` are skipped.
/// `None`: the width is over 16 (num >= 65536), vm.c's internal error at the first step.
pub fn off_rand_order(num: u32) -> Option<Vec<u32>> {
    let mut bits = 0;
    let mut i = num;
    while i > 0 {
        bits += 1;
        i /= 2;
    }
    let bits = bits.max(8);
    let mut out = Vec::with_capacity(num as usize);
    let mut pos: u32 = 0;
    for _ in 0..num {
        loop {
            pos = vm_lfsr(pos as u16, bits)?;
            if pos < num {
                break;
            }
        }
        out.push(pos);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Worked by hand: seed 0xe1 = 1110_0001; taps 0,2,3,4 give 1^0^0^0 = 1, so the next
    /// value is 0x70 | 0x80 = 0xf0.
    #[test]
    fn first_steps_by_hand() {
        assert_eq!(flashbench_lfsr(0, 8), Some(0xf0));
        assert_eq!(vm_lfsr(0, 8), Some(0xf0));
        // 0xf0 = 1111_0000: taps 0^0^0^1 = 1: 0x78 | 0x80 = 0xf8.
        assert_eq!(vm_lfsr(0xf0, 8), Some(0xf8));
        // vm.c sends the seed to 0; flashbench.c steps on.
        assert_eq!(vm_lfsr(0xe1, 8), Some(0));
        assert_eq!(flashbench_lfsr(0xe1, 8), Some(0xf0));
        // 9 bits: seed 0xace1 & 0x1ff = 0xe1; taps 0,4: 1^0 = 1 → 0x70 | 0x100.
        assert_eq!(flashbench_lfsr(0, 9), Some(0x170));
    }

    #[test]
    fn widths_outside_8_to_16_are_the_internal_error() {
        assert_eq!(flashbench_lfsr(0, 7), None);
        assert_eq!(flashbench_lfsr(0, 17), None);
        assert_eq!(flashbench_lfsr(0, 0), None);
        assert_eq!(vm_lfsr(0, 17), None);
        assert_eq!(flashbench_lfsr(256, 8), None);
        assert_eq!(off_rand_order(65536), None);
        assert!(off_rand_order(65535).is_some());
    }

    /// The 8-bit register of vm.c runs through all 256 values (0 included), so
    /// `O_OFF_RAND` visits each position below num exactly once.
    #[test]
    fn off_rand_is_a_permutation() {
        for num in [1u32, 2, 3, 7, 12, 255, 256, 1000, 4096] {
            let mut o = off_rand_order(num).unwrap();
            assert_eq!(o.len(), num as usize);
            o.sort_unstable();
            assert_eq!(o, (0..num).collect::<Vec<_>>(), "num {num}");
        }
        // Two AUs (-O's default): the order the 8-bit cycle gives.
        assert_eq!(off_rand_order(2).unwrap(), vec![1, 0]);
    }
}
