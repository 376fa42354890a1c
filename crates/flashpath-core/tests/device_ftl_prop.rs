//! Property tests of the page-mapped FTL against a `BTreeMap` reference.
//!
//! Mapping level: random writes, overwrites, discards and GC passes on a tiny `PageMap`;
//! a physical-content table follows every program and GC move, so a lookup must find
//! the version of the LPN's last write. Device level: random commands on the small test
//! device, with the background drain and GC running on the event queue.
use flashpath_core::device::ftl::{PageMap, Ppa, Stream, BUF_FLAG, UNMAPPED};
use flashpath_core::device::harness::Harness;
use flashpath_core::device::{DevOp, DeviceConfig};
use proptest::prelude::*;
use std::collections::BTreeMap;

const DIES: u32 = 2;
const BLOCKS: u32 = 8;
const ROW: u32 = 4;
const ROWS: u32 = 4;
const USER: u32 = 160; // of 256 raw slots

#[derive(Clone, Debug)]
enum Op {
    Write(u32),
    Discard(u32),
    Gc(u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..USER).prop_map(Op::Write),
        // Hot set: overwrites of a few LPNs make blocks with mixed validity.
        3 => (0..16u32).prop_map(Op::Write),
        1 => (0..USER).prop_map(Op::Discard),
        1 => (0..DIES).prop_map(Op::Gc),
    ]
}

/// One greedy GC pass on `die`: copy the victim's valid slots, erase it.
fn gc_once(ftl: &mut PageMap, die: u32, content: &mut BTreeMap<Ppa, u64>) -> bool {
    let Some(victim) = ftl.pick_victim(die) else {
        return false;
    };
    let mut buf = vec![(0, 0); ftl.slots_per_row() as usize];
    for row in 0..ftl.rows_per_block() {
        let n = ftl.valid_in_row(victim, row, &mut buf);
        for &(lpn, src) in &buf[..n] {
            let dst = ftl.alloc_slot(die, Stream::Gc).expect("GC has a block");
            ftl.relocate(lpn, src, dst);
            let v = content[&src];
            content.insert(dst, v);
        }
    }
    assert_eq!(ftl.valid_in(victim), 0);
    ftl.erase(victim);
    true
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn mapping_matches_reference(
        ops in prop::collection::vec(op(), 1..600),
        resident in prop_oneof![Just(None), (1..4usize).prop_map(Some)],
    ) {
        let mut ftl = PageMap::new(USER, DIES, BLOCKS, ROW, ROWS, 2);
        // Maps of closed blocks in the scratch file, or all in memory.
        if let Some(r) = resident {
            ftl.set_reverse_map_budget(r);
        }
        let mut reference: BTreeMap<u32, u64> = BTreeMap::new();
        let mut content: BTreeMap<Ppa, u64> = BTreeMap::new();
        let mut erases = vec![0u32; (DIES * BLOCKS) as usize];
        for (version, op) in ops.iter().enumerate() {
            let version = version as u64;
            match *op {
                Op::Write(lpn) => {
                    let die = lpn % DIES;
                    let ppa = loop {
                        if ftl.needs_gc(die) {
                            gc_once(&mut ftl, die, &mut content);
                        }
                        if let Some(p) = ftl.write_direct(die, lpn) {
                            break p;
                        }
                        assert!(gc_once(&mut ftl, die, &mut content), "die {die} full");
                    };
                    content.insert(ppa, version);
                    reference.insert(lpn, version);
                }
                Op::Discard(lpn) => {
                    ftl.supersede(lpn, UNMAPPED);
                    reference.remove(&lpn);
                }
                Op::Gc(die) => {
                    gc_once(&mut ftl, die, &mut content);
                }
            }
            for (b, e) in erases.iter_mut().enumerate() {
                let now = ftl.erase_count(b as u32);
                prop_assert!(now >= *e, "erase count of block {} dropped", b);
                *e = now;
            }
            if let Some(r) = resident {
                // Closed blocks' maps past the budget are in the file: memory holds at
                // most the budget's and the open blocks' (a host and a GC block per die).
                prop_assert!(
                    ftl.touched_blocks() <= r + 2 * DIES as usize,
                    "{} maps in memory, budget {}",
                    ftl.touched_blocks(),
                    r
                );
            }
        }
        ftl.check_invariants();
        for lpn in 0..USER {
            let e = ftl.get(lpn);
            match reference.get(&lpn) {
                Some(v) => {
                    prop_assert!(e != UNMAPPED && e & BUF_FLAG == 0);
                    prop_assert_eq!(content[&e], *v, "lpn {} reads a stale version", lpn);
                    prop_assert_eq!(ftl.owner(e), Some(lpn));
                }
                None => prop_assert_eq!(e, UNMAPPED),
            }
        }
        // Each valid physical slot has exactly one owner, and it maps back to it.
        let total_valid: u32 = (0..DIES * BLOCKS).map(|b| ftl.valid_in(b)).sum();
        prop_assert_eq!(total_valid as usize, reference.len());
    }
}

#[derive(Clone, Debug)]
enum Cmd {
    Write(u64, u32),
    Read(u64, u32),
    Discard(u64, u32),
    Flush,
}

fn cmd(lpns: u64) -> impl Strategy<Value = Cmd> {
    prop_oneof![
        8 => (0..lpns, 1..64u32).prop_map(|(l, n)| Cmd::Write(l, n)),
        4 => (0..lpns / 8, 1..8u32).prop_map(|(l, n)| Cmd::Write(l, n)),
        3 => (0..lpns, 1..64u32).prop_map(|(l, n)| Cmd::Read(l, n)),
        1 => (0..lpns, 1..256u32).prop_map(|(l, n)| Cmd::Discard(l, n)),
        1 => Just(Cmd::Flush),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// The whole device (buffer, drain, GC, map cache) keeps the mapping consistent:
    /// after a flush, an LPN is on NAND iff its last command was a write.
    #[test]
    fn device_mapping_matches_reference(
        cmds in prop::collection::vec(cmd(4096), 1..300),
    ) {
        // 24 MiB raw (24 blocks of 512 KiB per die) for 16 MiB of user data: the
        // writes below fill it several times over, so GC runs with valid data to copy.
        let mut cfg = DeviceConfig::small_test_device();
        cfg.nand_mut().unwrap().blocks_per_plane = 24;
        // A map cache of 2 segments (of 4) with at most 1 dirty: loads, evictions and
        // write-backs all the time.
        cfg.nand_mut().unwrap().map_cache_bytes = 2 * 4096;
        cfg.nand_mut().unwrap().map_dirty_limit = 1;
        cfg.capacity_bytes = 16 << 20; // 4096 LPNs
        let mut h = Harness::new(&cfg, 1);
        let lpns = h.dev.capacity_sectors() / 8;
        let mut written = BTreeMap::new();
        for c in &cmds {
            match *c {
                Cmd::Write(l, n) => {
                    let n = (n as u64).min(lpns - l);
                    h.next(DevOp::Write, l * 8, (n * 8) as u32);
                    for x in l..l + n { written.insert(x, ()); }
                }
                Cmd::Read(l, n) => {
                    let n = (n as u64).min(lpns - l);
                    let r = h.next(DevOp::Read, l * 8, (n * 8) as u32);
                    prop_assert!(r.first <= r.done);
                }
                Cmd::Discard(l, n) => {
                    let n = (n as u64).min(lpns - l);
                    h.next(DevOp::Discard, l * 8, (n * 8) as u32);
                    for x in l..l + n { written.remove(&x); }
                }
                Cmd::Flush => { h.next(DevOp::Flush, 0, 0); }
            }
        }
        // Fill to force GC on top of whatever happened.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..10_000u64 {
            // xorshift: a fixed scatter over all LPNs.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let l = x % 4096;
            h.next(DevOp::Write, l * 8, 8);
            written.insert(l, ());
        }
        h.next(DevOp::Flush, 0, 0);
        h.run_until_idle();
        let d = h.dev.page_mapped().unwrap();
        d.check_invariants();
        prop_assert!(d.is_quiescent());
        let st = d.stats();
        prop_assert!(st.erases > 0 && st.gc_copies > 0, "{:?}", st);
        prop_assert!(st.map_writebacks > 0 && st.map_page_programs > 0, "{:?}", st);
        let ftl = d.page_map();
        for lpn in 0..lpns as u32 {
            let e = ftl.get(lpn);
            if written.contains_key(&(lpn as u64)) {
                prop_assert!(e != UNMAPPED && e & BUF_FLAG == 0, "lpn {} lost", lpn);
                prop_assert_eq!(ftl.owner(e), Some(lpn));
            } else {
                prop_assert_eq!(e, UNMAPPED, "lpn {} should be unmapped", lpn);
            }
        }
    }
}

/// The fill `PageMappedDevice::precondition` makes when the layout cannot be a formula:
/// rows round robin over the dies from `die0`, each LPN placed and completed.
fn explicit_fill(ftl: &mut PageMap, first: u32, end: u32, die0: u32) -> u32 {
    let (dies, spr) = (ftl.dies(), ftl.slots_per_row());
    let (mut rr, mut base, mut pos) = (die0, 0, spr);
    for lpn in first..end {
        if pos == spr {
            let d = (0..dies)
                .map(|i| (rr + i) % dies)
                .find(|&d| ftl.can_alloc_host(d))
                .expect("room");
            base = ftl.alloc_row(d, Stream::Host).unwrap();
            pos = 0;
            rr = (d + 1) % dies;
        }
        ftl.supersede(lpn, UNMAPPED);
        ftl.place(base + pos, lpn);
        ftl.complete(base + pos, lpn, true);
        pos += 1;
    }
    rr
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 96,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// A sequential layout kept as a formula is the explicit fill: the same map, the
    /// same valid counts and free blocks, and after the same writes, discards and GC
    /// passes, the same slots chosen and the same map.
    #[test]
    fn formula_layout_is_the_explicit_fill(
        dies in 2..4u32,
        die0 in 0..3u32,
        span in (0..200u32, 1..200u32),
        ops in prop::collection::vec(op(), 0..400),
    ) {
        let die0 = die0 % dies;
        let user = dies * BLOCKS * ROW * ROWS * 5 / 8;
        let first = span.0 % user;
        let end = (first + span.1).min(user);
        let mut a = PageMap::new(user, dies, BLOCKS, ROW, ROWS, 2);
        let mut b = PageMap::new(user, dies, BLOCKS, ROW, ROWS, 2);
        // The formula's map keeps closed blocks' maps in the scratch file.
        a.set_reverse_map_budget(1);
        let rr_a = a.map_sequential(first, end, die0).expect("a fresh map");
        let rr_b = explicit_fill(&mut b, first, end, die0);
        prop_assert_eq!(rr_a, rr_b);
        prop_assert!(a.map_sequential(first, end, die0).is_none(), "only once, on a fresh map");
        a.check_invariants();
        for lpn in 0..user {
            prop_assert_eq!(a.get(lpn), b.get(lpn), "lpn {}", lpn);
        }
        for blk in 0..a.blocks() {
            prop_assert_eq!(a.valid_in(blk), b.valid_in(blk), "block {}", blk);
        }
        prop_assert_eq!(a.l2p_entries(), 0);
        let (mut ca, mut cb) = (BTreeMap::new(), BTreeMap::new());
        for lpn in first..end {
            ca.insert(a.get(lpn), 0);
            cb.insert(b.get(lpn), 0);
        }
        for op in &ops {
            match *op {
                Op::Write(lpn) => {
                    let lpn = lpn % user;
                    let die = lpn % dies;
                    let pa = loop {
                        if a.needs_gc(die) {
                            gc_once(&mut a, die, &mut ca);
                            gc_once(&mut b, die, &mut cb);
                        }
                        match (a.write_direct(die, lpn), b.write_direct(die, lpn)) {
                            (Some(pa), Some(pb)) => {
                                prop_assert_eq!(pa, pb);
                                break pa;
                            }
                            (None, None) => {
                                let ga = gc_once(&mut a, die, &mut ca);
                                prop_assert_eq!(ga, gc_once(&mut b, die, &mut cb));
                                prop_assert!(ga, "die {} full", die);
                            }
                            (x, y) => prop_assert!(false, "{:?} vs {:?}", x, y),
                        }
                    };
                    ca.insert(pa, 0);
                    cb.insert(pa, 0);
                }
                Op::Discard(lpn) => {
                    let lpn = lpn % user;
                    prop_assert_eq!(a.supersede(lpn, UNMAPPED), b.supersede(lpn, UNMAPPED));
                }
                Op::Gc(die) => {
                    let die = die % dies;
                    prop_assert_eq!(gc_once(&mut a, die, &mut ca), gc_once(&mut b, die, &mut cb));
                }
            }
        }
        a.check_invariants();
        for lpn in 0..user {
            prop_assert_eq!(a.get(lpn), b.get(lpn), "lpn {}", lpn);
        }
        for blk in 0..a.blocks() {
            prop_assert_eq!(a.valid_in(blk), b.valid_in(blk), "block {}", blk);
            prop_assert_eq!(a.erase_count(blk), b.erase_count(blk), "block {}", blk);
        }
    }
}
