//! Offsets of a job's I/Os, as fio 3.33 picks them. Sequential streams keep one cursor
//! per direction and move as `get_next_seq_offset` moves them (`rw=...:N` skips
//! forwards and backwards); random blocks come from the seeded stream, fio's LFSR or a
//! distribution. A pass ends where fio marks the file done: a sequential I/O past the
//! region's end (or, with a size range, not fitting in it; with one size, not fitting
//! in the file), a full random map, a register gone round. `OffsetGen::next_in` then
//! answers None and the job decides (workload/mod.rs: another pass, or the end).
//!
//! With the random map (fio's default) a random pick that was already used in this
//! pass moves to the next free block after it, as fio's axmap does, so each block is
//! written once per pass; `norandommap` allows repeats. Zipf and Pareto ranks are spread
//! over the region by a fixed bijection, as fio hashes them, so hot blocks are not all
//! at the start. An explicit order (`Distribution::Order`) is replayed as given. With
//! fio's LFSR (`RandomGenerator::Lfsr`) uniform blocks come from the register, each once
//! per pass, and there is no random map (fio allocates no axmap then). Normal blocks
//! come from fio's gauss (workload/gauss.rs); fio keeps no random map for zipf, pareto
//! or normal either.

use super::{Distribution, Gauss, JobConfig, Lfsr, Pattern, RandomGenerator};
use crate::engine::SimRng;

pub struct OffsetGen {
    pattern: Pattern,
    base: u64,
    size: u64,
    align: u64,
    /// Number of `align`-sized blocks in the region.
    nblocks: u64,
    /// Sequential: where the last I/O of each direction (read, write, trim) ended,
    /// relative to `base` (fio's `f->last_pos[ddir]`).
    last_pos: [u64; 3],
    /// The region's bytes, not rounded to `align` (fio's `f->io_size`).
    region: u64,
    /// time_based: a sequential cursor past the region's end starts again at its start.
    rewind: bool,
    /// The end of the file or device the region is in, absolute (fio's
    /// `f->real_file_size`).
    real: u64,
    /// Per direction (read, write, trim): one block size (fio's minbs == maxbs), whose
    /// I/O need only fit in the file, not in the region (get_next_buflen).
    fixed_bs: [bool; 3],
    seq_skip: i64,
    rand_every: u32,
    since_rand: u32,
    dist: Distribution,
    map: Option<RandomMap>,
    /// fio's LFSR in place of the stream and the map (random_generator=lfsr).
    lfsr: Option<Lfsr>,
    /// `Distribution::Normal`: fio's gauss state.
    gauss: Option<Gauss>,
    /// Position in a `Distribution::Order`.
    order_pos: usize,
    /// `Distribution::Zoned`: per zone (cumulative access percent, first block, blocks).
    zones: Vec<(u32, u64, u64)>,
    rng: SimRng,
    /// A uniform pick with the random map, drawn one pick early (the stream's values
    /// are taken in the same order): its word of the map is fetched meanwhile.
    pick_ahead: Option<u64>,
}

/// The zones of a zoned distribution in blocks of the region: fio's
/// `stotal * lastb / 100` start and `lastb * (send - stotal) / 100` extent for percent
/// zones; byte zones cut at the region's end.
fn zone_blocks(zones: &[super::Zone], nblocks: u64, align: u64) -> Vec<(u32, u64, u64)> {
    let mut out = Vec::new();
    let (mut access, mut start_pct, mut start_bytes) = (0u32, 0u64, 0u64);
    for z in zones {
        access += z.access_percent;
        let (start, blocks) = match z.size {
            super::ZoneSize::Percent(p) => {
                let s = start_pct * nblocks / 100;
                let e = (start_pct + p) * nblocks / 100;
                start_pct += p;
                (s, e.saturating_sub(s))
            }
            super::ZoneSize::Bytes(b) => {
                let s = (start_bytes / align).min(nblocks);
                start_bytes += b;
                let e = (start_bytes / align).min(nblocks);
                (s, e - s)
            }
        };
        out.push((access, start.min(nblocks.saturating_sub(1)), blocks));
    }
    out
}

impl OffsetGen {
    pub fn new(cfg: &JobConfig, align: u64) -> Self {
        let nblocks = (cfg.size / align).max(1);
        let uniform = cfg.pattern == Pattern::Random && cfg.distribution == Distribution::Uniform;
        let lfsr = match cfg.generator {
            // JobConfig::validate refuses a seed the register cannot start from.
            RandomGenerator::Lfsr { seed } if uniform => Lfsr::new(nblocks, seed),
            _ => None,
        };
        let map = if uniform && !cfg.norandommap && lfsr.is_none() {
            Some(RandomMap::new(nblocks))
        } else {
            None
        };
        OffsetGen {
            pattern: cfg.pattern,
            base: cfg.offset,
            size: nblocks * align,
            align,
            nblocks,
            last_pos: [0; 3],
            region: cfg.size,
            rewind: cfg.time_based,
            real: cfg.offset + cfg.file_end.max(cfg.size),
            fixed_bs: [&cfg.bs[0], &cfg.bs[1], &cfg.bs_trim].map(|b| b.min() == b.max()),
            seq_skip: cfg.seq_skip,
            rand_every: cfg.rand_every.max(1),
            since_rand: 0,
            dist: cfg.distribution.clone(),
            map,
            lfsr,
            gauss: match cfg.distribution {
                Distribution::Normal(dev) => Some(Gauss::new(nblocks, dev)),
                _ => None,
            },
            order_pos: 0,
            zones: match &cfg.distribution {
                Distribution::Zoned(z) => zone_blocks(z, nblocks, align),
                _ => Vec::new(),
            },
            rng: SimRng::new(cfg.seed, 2),
            pick_ahead: None,
        }
    }

    /// fio 3.33's `get_next_seq_offset` for direction `d`, in fio's own arithmetic
    /// (unsigned, absolute `last_pos`, relative result): None when fio's answer is 1
    /// (the cursor is at the end of the file or device).
    fn seq_pos(&self, d: usize) -> Option<u64> {
        let (base, region, real) = (self.base, self.region, self.real);
        let mut last = if self.rewind && self.last_pos[d] >= region {
            base
        } else {
            base + self.last_pos[d]
        };
        if last >= real {
            return None;
        }
        let skip = self.seq_skip as u64;
        // "Only rewind if we already hit the end": fio sets last_pos to io_size, an
        // absolute offset, for a backwards stream whose region does not start at 0.
        if last == base && base != 0 && self.seq_skip < 0 {
            last = region.min(real);
        }
        let mut pos = last.wrapping_sub(base);
        if pos != 0 && self.seq_skip != 0 {
            pos = pos.wrapping_add(skip);
            // Beyond the end (or, unsigned, before the start): forward streams go to
            // file_offset (as a relative offset: fio's arithmetic), backwards ones to
            // io_size + skip.
            if pos >= real {
                pos = if self.seq_skip > 0 {
                    base
                } else {
                    region.min(real).wrapping_add(skip)
                };
            }
        }
        Some(pos)
    }

    /// The end checks of fio's `get_next_offset` (the offset in the region),
    /// `fill_io_u` (the I/O in the file) and, for a block-size range, `io_u_fits` (the
    /// I/O in the region): whether an I/O of `len` bytes in direction `d` may start at
    /// relative offset `rel`.
    fn in_region(&self, d: usize, rel: u64, len: u64) -> bool {
        let end = self.base + rel + len;
        rel < self.region && end <= self.real && (self.fixed_bs[d] || rel + len <= self.region)
    }

    /// Bytes from where direction `d`'s next sequential I/O would start to the region's
    /// end; None if that is not in the region (fio's room for a block-size range).
    pub fn seq_room(&self, d: usize) -> Option<u64> {
        if self.pattern != Pattern::Sequential {
            return None;
        }
        let pos = self.seq_pos(d)?;
        (pos < self.region).then(|| self.region - pos)
    }

    /// The next offset of a sequential stream in direction `d`, relative to the region,
    /// or None when the pass is over (fio marks the file done).
    fn seq_next(&mut self, d: usize, len: u64) -> Option<u64> {
        let pos = self.seq_pos(d)?;
        if !self.in_region(d, pos, len) {
            return None;
        }
        self.last_pos[d] = pos + len;
        Some(pos)
    }

    /// A new pass (fio's fio_file_reset): the sequential cursors at the region's start,
    /// the random map and the register cleared.
    pub fn reset(&mut self) {
        self.last_pos = [0; 3];
        if let Some(m) = &mut self.map {
            *m = RandomMap::new(self.nblocks);
        }
        if let Some(l) = &mut self.lfsr {
            l.reset();
        }
    }

    fn rank_to_block(&self, rank: u64) -> u64 {
        // A fixed bijection on 0..nblocks: multiply by an odd constant modulo the next
        // power of two and cycle-walk until inside the range.
        let n = self.nblocks;
        if n <= 1 {
            return 0;
        }
        let bits = 64 - (n - 1).leading_zeros();
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let mut x = rank;
        loop {
            x = (x
                .wrapping_mul(0x9E37_79B9_7F4A_7C15 | 1)
                .wrapping_add(0x632B_E59B))
                & mask;
            if x < n {
                return x;
            }
        }
    }

    /// The next random block; None when a uniform pass has used every block (the
    /// random map is full, or the register has gone round: fio marks the file done).
    fn rand_block(&mut self) -> Option<u64> {
        let n = self.nblocks;
        Some(match self.dist {
            Distribution::Uniform => {
                if let Some(l) = &mut self.lfsr {
                    return l.next_block();
                }
                if self.map.as_ref().is_some_and(|m| m.full()) {
                    return None;
                }
                match &mut self.map {
                    Some(m) => {
                        let pick = match self.pick_ahead.take() {
                            Some(p) => p,
                            None => self.rng.below(n),
                        };
                        let b = m.take_from(pick);
                        let next = self.rng.below(n);
                        m.prefetch(next);
                        self.pick_ahead = Some(next);
                        b
                    }
                    None => self.rng.below(n),
                }
            }
            Distribution::Zipf(theta) => {
                let u = self.rng.unit_f64();
                let nf = n as f64;
                let rank = if (theta - 1.0).abs() < 1e-9 {
                    (nf.powf(u)).floor() as u64
                } else {
                    let a = 1.0 - theta;
                    (((nf.powf(a) - 1.0) * u + 1.0).powf(1.0 / a)).floor() as u64
                };
                self.rank_to_block(rank.saturating_sub(1).min(n - 1))
            }
            Distribution::Pareto(h) => {
                let u = self.rng.unit_f64();
                let pow = h.ln() / (1.0 - h).ln();
                let rank = ((n - 1) as f64 * u.powf(pow)) as u64;
                self.rank_to_block(rank.min(n - 1))
            }
            Distribution::Normal(_) => {
                let g = self.gauss.as_ref().expect("normal has its gauss state");
                g.next(&mut self.rng).min(n - 1)
            }
            Distribution::Zoned(_) => {
                // fio: v = rand_between(1, 100); the zone; then a block below its size,
                // from its start.
                let v = 1 + self.rng.below(100) as u32;
                let &(_, start, blocks) = self
                    .zones
                    .iter()
                    .find(|z| v <= z.0)
                    .or(self.zones.last())
                    .expect("a zoned distribution has zones");
                (start + self.rng.below(blocks.max(1))).min(n - 1)
            }
            Distribution::Order(ref order) => {
                // JobConfig::validate keeps every entry inside the region.
                let b = order[self.order_pos % order.len()];
                self.order_pos = (self.order_pos + 1) % order.len();
                b.min(n - 1)
            }
        })
    }

    /// Offset (absolute, bytes) of the next I/O of `len` bytes, a new pass starting
    /// whenever one ends (the files and zones of a job).
    pub fn next(&mut self, len: u64) -> u64 {
        if let Some(o) = self.next_in(0, len) {
            return o;
        }
        self.reset();
        self.next_in(0, len).unwrap_or(self.base)
    }

    /// Offset (absolute, bytes) of the next I/O of `len` bytes in direction `d` (0 read,
    /// 1 write, 2 trim), or None when the pass is over.
    pub fn next_in(&mut self, d: usize, len: u64) -> Option<u64> {
        let rel = match self.pattern {
            Pattern::Sequential => self.seq_next(d, len)?,
            Pattern::Random => {
                // rw=randread:N: a random block, then N - 1 I/Os going on from where
                // the last one of their direction ended (fio's get_next_block with
                // rw_sequencer=sequential); one that runs past the region's end ends the
                // pass, and at the very end of the device fio picks a random block.
                let seq = self.since_rand != 0;
                // (since_rand + 1) % rand_every without a division per I/O.
                self.since_rand += 1;
                if self.since_rand == self.rand_every {
                    self.since_rand = 0;
                }
                let pos = if seq { self.seq_pos(d) } else { None };
                let rel = match pos {
                    Some(p) => {
                        if !self.in_region(d, p, len) {
                            return None;
                        }
                        p
                    }
                    None => {
                        // A full random map or register ends the pass too.
                        let mut c = self.rand_block()? * self.align;
                        if c + len > self.size {
                            c = self.size - len.min(self.size);
                            c -= c % self.align;
                        }
                        c
                    }
                };
                self.last_pos[d] = rel + len;
                rel
            }
        };
        Some(self.base + rel)
    }
}

/// One bit per block: used in this pass (`OffsetGen::reset` starts a new one).
struct RandomMap {
    words: Vec<u64>,
    nblocks: u64,
    used: u64,
}

impl RandomMap {
    fn new(nblocks: u64) -> Self {
        RandomMap {
            words: vec![0; nblocks.div_ceil(64) as usize],
            nblocks,
            used: 0,
        }
    }

    /// Every block of the pass is used.
    fn full(&self) -> bool {
        self.used == self.nblocks
    }

    /// Starts fetching the word of block `pick` into the cache.
    #[inline]
    fn prefetch(&self, pick: u64) {
        crate::engine::prefetch(&self.words[(pick / 64) as usize]);
    }

    /// Marks and returns `pick` if free, else the next free block after it (wrapping).
    fn take_from(&mut self, pick: u64) -> u64 {
        debug_assert!(!self.full(), "a full map ends the pass first");
        let nwords = self.words.len();
        let mut w = (pick / 64) as usize;
        // Mask off blocks before `pick` in its word on the first visit.
        let mut mask = !0u64 << (pick % 64);
        for _ in 0..=nwords {
            let free = !self.words[w] & mask;
            if free != 0 {
                let b = w as u64 * 64 + free.trailing_zeros() as u64;
                if b < self.nblocks {
                    self.words[w] |= 1 << (b % 64);
                    self.used += 1;
                    return b;
                }
            }
            w = if w + 1 == nwords { 0 } else { w + 1 }; // (w + 1) % nwords, no division
            mask = !0;
        }
        unreachable!("random map has a free block while used < nblocks")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{BlockSizes, JobConfig};

    #[test]
    fn uniform_picks_drawn_early_are_the_streams_picks_in_order_across_passes() {
        // 100 blocks, 250 picks: two full passes (the map resets) and part of a third.
        let cfg = JobConfig::simple("u", Pattern::Random, 100, 4096, 100 * 4096);
        let mut g = OffsetGen::new(&cfg, 4096);
        let got: Vec<u64> = (0..250).map(|_| g.next(4096) / 4096).collect();
        let mut rng = SimRng::new(cfg.seed, 2);
        let mut map = RandomMap::new(100);
        let want: Vec<u64> = (0..250)
            .map(|_| {
                if map.full() {
                    map = RandomMap::new(100);
                }
                map.take_from(rng.below(100))
            })
            .collect();
        assert_eq!(got, want);
        let mut pass: Vec<u64> = got[..100].to_vec();
        pass.sort_unstable();
        assert_eq!(
            pass,
            (0..100).collect::<Vec<_>>(),
            "a pass takes every block once"
        );
    }

    #[test]
    fn sequential_with_skip_and_wrap() {
        let mut cfg = JobConfig::simple("s", Pattern::Sequential, 100, 4096, 32768);
        cfg.seq_skip = 4096;
        let mut g = OffsetGen::new(&cfg, 4096);
        let offs: Vec<u64> = (0..6).map(|_| g.next(4096) / 4096).collect();
        assert_eq!(offs, vec![0, 2, 4, 6, 0, 2]);
    }

    #[test]
    fn a_pass_with_holes_ends_at_the_regions_end_and_directions_keep_their_cursors() {
        // 8 blocks of a larger device, read 1 skip 2: 0, 3, 6, then 9 is past the
        // region's end: the pass is over.
        let mut cfg = JobConfig::simple("h", Pattern::Sequential, 50, 4096, 8 * 4096);
        cfg.seq_skip = 8192;
        cfg.file_end = 1 << 30;
        let mut g = OffsetGen::new(&cfg, 4096);
        let reads: Vec<Option<u64>> = (0..4).map(|_| g.next_in(0, 4096)).collect();
        assert_eq!(reads, vec![Some(0), Some(3 * 4096), Some(6 * 4096), None]);
        // The writes have their own cursor, from the start.
        assert_eq!(g.next_in(1, 4096), Some(0));
        assert_eq!(g.next_in(1, 4096), Some(3 * 4096));
        g.reset();
        assert_eq!(
            g.next_in(0, 4096),
            Some(0),
            "a new pass starts at the region's start"
        );
        // A block that does not fit before the end ends the pass too (io_u_fits).
        let cfg = JobConfig::simple("f", Pattern::Sequential, 100, 12288, 8 * 4096);
        let mut g = OffsetGen::new(&cfg, 4096);
        let got: Vec<Option<u64>> = (0..3).map(|_| g.next_in(0, 12288)).collect();
        assert_eq!(got, vec![Some(0), Some(12288), None]);
    }

    #[test]
    fn a_stream_past_the_files_end_wraps_to_its_start() {
        // The region is the whole file (fio's real_file_size): fio's get_next_seq_offset
        // wraps a forward stream past it to the start, as fio does on a 32 KiB file with
        // rw=read:8k (0 3 6 0 3 6 0 3).
        let mut cfg = JobConfig::simple("w", Pattern::Sequential, 100, 4096, 8 * 4096);
        cfg.seq_skip = 8192;
        let mut g = OffsetGen::new(&cfg, 4096);
        let got: Vec<u64> = (0..8).map(|_| g.next_in(0, 4096).unwrap() / 4096).collect();
        assert_eq!(got, vec![0, 3, 6, 0, 3, 6, 0, 3]);
    }

    #[test]
    fn time_based_streams_start_again_at_the_start() {
        let mut cfg = JobConfig::simple("t", Pattern::Sequential, 100, 4096, 4 * 4096);
        cfg.time_based = true;
        let mut g = OffsetGen::new(&cfg, 4096);
        let got: Vec<u64> = (0..6).map(|_| g.next_in(0, 4096).unwrap() / 4096).collect();
        assert_eq!(got, vec![0, 1, 2, 3, 0, 1]);
    }

    #[test]
    fn random_map_covers_every_block_once_per_pass() {
        let mut cfg = JobConfig::simple("r", Pattern::Random, 100, 4096, 4096 * 1000);
        cfg.bs = [BlockSizes::Fixed(4096), BlockSizes::Fixed(4096)];
        let mut g = OffsetGen::new(&cfg, 4096);
        let mut seen = vec![0u32; 1000];
        for _ in 0..2000 {
            seen[(g.next(4096) / 4096) as usize] += 1;
        }
        assert!(
            seen.iter().all(|&c| c == 2),
            "each block exactly once per pass"
        );
    }

    #[test]
    fn lfsr_offsets_visit_each_block_once_per_pass_in_fios_order() {
        let mut cfg = JobConfig::simple("l", Pattern::Random, 100, 4096, 4096 * 1000);
        cfg.offset = 1 << 20;
        cfg.generator = RandomGenerator::Lfsr { seed: 0xb189_9bed };
        let mut g = OffsetGen::new(&cfg, 4096);
        assert!(g.map.is_none(), "no random map with the LFSR");
        let mut lf = Lfsr::new(1000, 0xb189_9bed).unwrap();
        let mut seen = vec![0u32; 1000];
        for i in 0..2000 {
            let b = (g.next(4096) - (1 << 20)) / 4096;
            if i < 1000 {
                assert_eq!(Some(b), lf.next_block(), "the register's own order");
            }
            seen[b as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c == 2), "each block once per pass");
    }

    #[test]
    fn an_explicit_order_is_replayed_and_repeated() {
        let mut cfg = JobConfig::simple("o", Pattern::Random, 100, 4096, 4096 * 4);
        cfg.offset = 1 << 20;
        cfg.distribution = Distribution::Order(vec![2, 0, 3, 1].into());
        cfg.validate().unwrap();
        let mut g = OffsetGen::new(&cfg, 4096);
        let blocks: Vec<u64> = (0..6).map(|_| (g.next(4096) - (1 << 20)) / 4096).collect();
        assert_eq!(blocks, vec![2, 0, 3, 1, 2, 0]);
        cfg.distribution = Distribution::Order(vec![0, 4].into());
        assert!(
            cfg.validate().is_err(),
            "block 4 is beyond a 4-block region"
        );
    }

    #[test]
    fn zipf_is_skewed_and_in_range() {
        let mut cfg = JobConfig::simple("z", Pattern::Random, 100, 4096, 4096 * 1000);
        cfg.distribution = Distribution::Zipf(1.2);
        let mut g = OffsetGen::new(&cfg, 4096);
        let mut seen = vec![0u32; 1000];
        for _ in 0..10000 {
            let b = g.next(4096) / 4096;
            assert!(b < 1000);
            seen[b as usize] += 1;
        }
        seen.sort_unstable();
        assert!(seen[999] > 1000, "the hottest block takes a large share");
    }
}

#[cfg(test)]
mod zoned_tests {
    use super::*;
    use crate::workload::{Zone, ZoneSize};

    fn gen(zones: Vec<Zone>) -> OffsetGen {
        let mut cfg = JobConfig::simple("z", Pattern::Random, 100, 4096, 4096 * 10_000);
        cfg.distribution = Distribution::Zoned(zones.into());
        OffsetGen::new(&cfg, 4096)
    }

    /// Shares of `n` draws falling in each of the block ranges `cuts` (ends).
    fn shares(g: &mut OffsetGen, cuts: &[u64], n: u32) -> Vec<f64> {
        let mut c = vec![0u32; cuts.len()];
        for _ in 0..n {
            let b = g.next(4096) / 4096;
            let i = cuts.iter().position(|&e| b < e).unwrap();
            c[i] += 1;
        }
        c.iter().map(|&x| x as f64 / n as f64).collect()
    }

    #[test]
    fn zoned_follows_the_access_shares() {
        // jesd219.fio: 50 % of accesses to the first 5 %, 30 % to the next 15 %, 20 %
        // to the last 80 %.
        let pct = |a, s| Zone {
            access_percent: a,
            size: ZoneSize::Percent(s),
        };
        let mut g = gen(vec![pct(50, 5), pct(30, 15), pct(20, 80)]);
        let s = shares(&mut g, &[500, 2000, 10_000], 200_000);
        for (got, want) in s.iter().zip([0.5, 0.3, 0.2]) {
            assert!((got - want).abs() < 0.01, "{s:?}");
        }
        // zoned_abs: byte extents.
        let abs = |a, b| Zone {
            access_percent: a,
            size: ZoneSize::Bytes(b),
        };
        let mut g = gen(vec![abs(70, 4096 * 100), abs(30, 4096 * 9_900)]);
        let s = shares(&mut g, &[100, 10_000], 100_000);
        assert!((s[0] - 0.7).abs() < 0.01, "{s:?}");
    }
}

#[cfg(test)]
mod align_tests {
    use crate::workload::{IoSource, JobConfig, Pattern};

    #[test]
    fn blockalign_aligns_random_offsets() {
        let mut cfg = JobConfig::simple("a", Pattern::Random, 100, 512, 1 << 20);
        cfg.norandommap = true;
        let mut src = IoSource::new(&cfg);
        assert!((0..1000).any(|_| !src.next_io().unwrap().offset.is_multiple_of(4096)));
        cfg.block_align = 4096;
        let mut src = IoSource::new(&cfg);
        assert!((0..1000).all(|_| src.next_io().unwrap().offset.is_multiple_of(4096)));
    }
}
