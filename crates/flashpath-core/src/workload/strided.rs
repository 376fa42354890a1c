//! fio's `zonemode=strided` (io_u.c `__fill_io_u_zone`, `last_block`): the job works
//! in one zone of `range` bytes at a time. Once `size` bytes have gone to it, the zone
//! moves on by `range + skip`, wrapping to the region's start past its end; the job's
//! I/O total is unchanged (fio 3.33 on a file moves `size` bytes, the zones going
//! round). Within the zone, offsets are the job's ordinary ones over `range` bytes: sequential from the
//! zone's start (wrapping inside it when `size > range`), random with a map reset per
//! zone (fio_file_reset).

use super::offsets::OffsetGen;
use super::JobConfig;

/// fio's zonesize, zonerange and zoneskip for zonemode=strided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StridedZones {
    /// Bytes transferred in a zone before moving on (zonesize).
    pub size: u64,
    /// The zone's extent (zonerange; fio's default: zonesize).
    pub range: u64,
    /// Bytes skipped between zones (zoneskip).
    pub skip: u64,
}

pub(super) struct ZoneCursor {
    zones: StridedZones,
    cfg: JobConfig,
    align: u64,
    /// Start of the current zone, from the region's start.
    at: u64,
    /// Bytes transferred in it.
    bytes: u64,
    gen: OffsetGen,
}

impl ZoneCursor {
    pub(super) fn new(cfg: &JobConfig, zones: StridedZones, align: u64) -> Self {
        let mut c = cfg.clone();
        c.zones = None;
        let gen = Self::zone_gen(&c, 0, zones.range, align);
        ZoneCursor {
            zones,
            cfg: c,
            align,
            at: 0,
            bytes: 0,
            gen,
        }
    }

    fn zone_gen(cfg: &JobConfig, at: u64, range: u64, align: u64) -> OffsetGen {
        let mut c = cfg.clone();
        c.offset = cfg.offset + at;
        c.size = range.min(cfg.size - at);
        c.file_end = c.size;
        OffsetGen::new(&c, align)
    }

    /// Device offset of the next I/O of `len` bytes.
    pub(super) fn next(&mut self, len: u64) -> u64 {
        if self.bytes >= self.zones.size {
            self.bytes = 0;
            self.at += self.zones.range + self.zones.skip;
            if self.at >= self.cfg.size {
                self.at = 0;
            }
            self.gen = Self::zone_gen(&self.cfg, self.at, self.zones.range, self.align);
        }
        self.bytes += len;
        self.gen.next(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Pattern;

    #[test]
    fn sequential_zones_transfer_size_then_skip() {
        let cfg = JobConfig::simple("z", Pattern::Sequential, 100, 4096, 64 * 4096);
        let z = StridedZones {
            size: 2 * 4096,
            range: 2 * 4096,
            skip: 6 * 4096,
        };
        let mut c = ZoneCursor::new(&cfg, z, 4096);
        let got: Vec<u64> = (0..8).map(|_| c.next(4096) / 4096).collect();
        assert_eq!(got, vec![0, 1, 8, 9, 16, 17, 24, 25]);
        // size > range: the zone is read again before moving on.
        let z = StridedZones {
            size: 4 * 4096,
            range: 2 * 4096,
            skip: 0,
        };
        let mut c = ZoneCursor::new(&cfg, z, 4096);
        let got: Vec<u64> = (0..6).map(|_| c.next(4096) / 4096).collect();
        assert_eq!(got, vec![0, 1, 0, 1, 2, 3]);
    }

    #[test]
    fn zones_wrap_at_the_region_end_and_random_stays_in_its_zone() {
        let cfg = JobConfig::simple("z", Pattern::Random, 100, 4096, 16 * 4096);
        let z = StridedZones {
            size: 4 * 4096,
            range: 4 * 4096,
            skip: 4 * 4096,
        };
        let mut c = ZoneCursor::new(&cfg, z, 4096);
        let blocks: Vec<u64> = (0..12).map(|_| c.next(4096) / 4096).collect();
        let mut zone0: Vec<u64> = blocks[0..4].to_vec();
        zone0.sort();
        assert_eq!(zone0, vec![0, 1, 2, 3]);
        let mut zone1: Vec<u64> = blocks[4..8].to_vec();
        zone1.sort();
        assert_eq!(zone1, vec![8, 9, 10, 11]);
        // 8 + 8 = 16: past the region, back to its start.
        assert!(blocks[8..12].iter().all(|&b| b < 4), "{blocks:?}");
    }
}
