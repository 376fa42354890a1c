//! A job's files (fio's `nrfiles`, `filesize`, `file_service_type`): each file is one
//! contiguous extent of the device, with its own offset cursor or random map, and the
//! job moves between its files as fio's `get_next_file` does (io_u.c):
//!
//! - `roundrobin[:N]` (fio's default, N = 1): after N I/Os to a file, the next file in
//!   order;
//! - `sequential`: a file until its part of the job is issued, then the next;
//! - `random[:N]`: after N I/Os, a file drawn uniformly.
//!
//! A file whose bytes for this pass are all issued (fio's FIO_FILE_DONE) is skipped; when
//! every file is done a new pass begins (time_based and loops go round again).

use super::offsets::OffsetGen;
use super::JobConfig;
use crate::engine::SimRng;

/// One file of a job: the device bytes `offset..offset + size` its I/O goes to (the
/// job's `offset=` within the file already applied).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileExtent {
    pub offset: u64,
    pub size: u64,
}

/// How the job moves between its files (fio's `file_service_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileService {
    RoundRobin { switch_every: u32 },
    Sequential,
    Random { switch_every: u32 },
}

/// The files of a job with more than one region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Files {
    pub extents: Vec<FileExtent>,
    pub service: FileService,
}

/// The job's position among its files.
pub(super) struct FileCursor {
    gens: Vec<OffsetGen>,
    /// Bytes of each file not yet issued in this pass.
    left: Vec<u64>,
    /// Files with bytes left in this pass.
    open: usize,
    sizes: Vec<u64>,
    service: FileService,
    cur: usize,
    /// I/Os to the current file since the job moved to it.
    since_switch: u32,
    rng: SimRng,
}

impl FileCursor {
    pub(super) fn new(cfg: &JobConfig, files: &Files, align: u64) -> Self {
        let gens = files
            .extents
            .iter()
            .map(|e| {
                let mut c = cfg.clone();
                c.offset = e.offset;
                c.size = e.size;
                c.file_end = e.size;
                c.files = None;
                OffsetGen::new(&c, align)
            })
            .collect();
        let sizes: Vec<u64> = files.extents.iter().map(|e| e.size).collect();
        FileCursor {
            gens,
            left: sizes.clone(),
            open: sizes.len(),
            sizes,
            service: files.service,
            cur: 0,
            since_switch: 0,
            rng: SimRng::new(cfg.seed, 2),
        }
    }

    /// Device offset of the next I/O of `len` bytes.
    pub(super) fn next(&mut self, len: u64) -> u64 {
        let n = self.gens.len();
        if self.open == 0 {
            self.left.copy_from_slice(&self.sizes);
            self.open = n;
        }
        let switch = match self.service {
            FileService::RoundRobin { switch_every } | FileService::Random { switch_every } => {
                self.since_switch >= switch_every.max(1)
            }
            FileService::Sequential => false,
        };
        if switch || self.left[self.cur] == 0 {
            self.since_switch = 0;
            self.cur = match self.service {
                FileService::Random { .. } => {
                    // fio draws again until it finds a file not done.
                    loop {
                        let f = self.rng.below(n as u64) as usize;
                        if self.left[f] > 0 {
                            break f;
                        }
                    }
                }
                _ => (1..=n)
                    .map(|k| (self.cur + k) % n)
                    .find(|&f| self.left[f] > 0)
                    .expect("a file is not done"),
            };
        }
        self.since_switch += 1;
        let left = self.left[self.cur];
        self.left[self.cur] = left.saturating_sub(len);
        if left > 0 && self.left[self.cur] == 0 {
            self.open -= 1;
        }
        self.gens[self.cur].next(len)
    }

    /// For a verifying job's runs (workload/mod.rs `Runs`): the next offset, or None
    /// when every file is done. A file is done as fio marks it (FIO_FILE_DONE): when
    /// its region is (a full random map, a sequential cursor at its end), not after so
    /// many bytes: without a random map a file is never done, and the run goes on to
    /// its bytes. Each direction `d` keeps its own sequential cursor in a file, as in
    /// fio (`f->last_pos[ddir]`).
    pub(super) fn next_in_run(&mut self, d: usize, len: u64) -> Option<u64> {
        let n = self.gens.len();
        loop {
            if self.open == 0 {
                return None;
            }
            let switch = match self.service {
                FileService::RoundRobin { switch_every } | FileService::Random { switch_every } => {
                    self.since_switch >= switch_every.max(1)
                }
                FileService::Sequential => false,
            };
            // `left`: 0 for a file done in this run.
            if switch || self.left[self.cur] == 0 {
                self.since_switch = 0;
                self.cur = match self.service {
                    FileService::Random { .. } => loop {
                        let f = self.rng.below(n as u64) as usize;
                        if self.left[f] > 0 {
                            break f;
                        }
                    },
                    _ => (1..=n)
                        .map(|k| (self.cur + k) % n)
                        .find(|&f| self.left[f] > 0)
                        .expect("a file is not done"),
                };
            }
            match self.gens[self.cur].next_in(d, len) {
                Some(o) => {
                    self.since_switch += 1;
                    return Some(o);
                }
                None => {
                    self.left[self.cur] = 0;
                    self.open -= 1;
                }
            }
        }
    }

    /// A new run: every file from its start (fio reopens them: fio_file_reset).
    pub(super) fn new_run(&mut self) {
        self.left.copy_from_slice(&self.sizes);
        self.open = self.gens.len();
        for g in &mut self.gens {
            g.reset();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{JobConfig, Pattern};

    fn cursor(pattern: Pattern, service: FileService) -> FileCursor {
        let cfg = JobConfig::simple("f", pattern, 0, 4096, 3 * 16384);
        let files = Files {
            extents: (0..3)
                .map(|i| FileExtent {
                    offset: (i + 1) << 20,
                    size: 16384,
                })
                .collect(),
            service,
        };
        FileCursor::new(&cfg, &files, 4096)
    }

    #[test]
    fn roundrobin_moves_to_the_next_file_after_each_io() {
        let mut c = cursor(
            Pattern::Sequential,
            FileService::RoundRobin { switch_every: 1 },
        );
        let got: Vec<u64> = (0..6).map(|_| c.next(4096)).collect();
        let m = 1 << 20;
        assert_eq!(
            got,
            vec![m, 2 * m, 3 * m, m + 4096, 2 * m + 4096, 3 * m + 4096]
        );
    }

    #[test]
    fn roundrobin_n_and_sequential_stay_on_a_file() {
        let m = 1 << 20;
        let mut c = cursor(
            Pattern::Sequential,
            FileService::RoundRobin { switch_every: 2 },
        );
        let got: Vec<u64> = (0..4).map(|_| c.next(4096)).collect();
        assert_eq!(got, vec![m, m + 4096, 2 * m, 2 * m + 4096]);
        let mut c = cursor(Pattern::Sequential, FileService::Sequential);
        let got: Vec<u64> = (0..6).map(|_| c.next(4096)).collect();
        assert_eq!(
            got,
            vec![m, m + 4096, m + 8192, m + 12288, 2 * m, 2 * m + 4096]
        );
    }

    #[test]
    fn random_service_covers_each_file_once_per_pass() {
        for pattern in [Pattern::Sequential, Pattern::Random] {
            let mut c = cursor(pattern, FileService::Random { switch_every: 1 });
            let mut got: Vec<u64> = (0..12).map(|_| c.next(4096)).collect();
            got.sort();
            let m = 1 << 20;
            let want: Vec<u64> = (1..=3)
                .flat_map(|f| (0..4).map(move |b| f * m + b * 4096))
                .collect();
            assert_eq!(got, want, "{pattern:?}");
            // The next pass starts again over every file.
            let next = c.next(4096);
            assert!(want.contains(&next));
        }
    }
}
