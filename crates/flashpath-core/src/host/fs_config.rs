//! The optional `[fs]` section of a host preset: the filesystem the jobs' files live on.
//! Absent: the jobs do I/O on the raw block device (blkdev_fsync semantics). `kind =
//! "ext4"`: an ext4 filesystem mounted with the defaults (data=ordered, barrier=1,
//! commit=5) and its jbd2 journal, whose commits fsync, fdatasync and O_SYNC writes wait
//! for (sim/kernel/journal.rs). Units: bytes, ns of CPU time.

use super::cost;
use crate::config::{bytes_field, ns_field, ConfigError};
use serde::Deserialize;

/// The ext4 / jbd2 block size modelled (mke2fs's default for filesystems over 512 MiB).
pub const FS_BLOCK: u64 = 4096;

/// An ext4 filesystem with its journal, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct FsConfig {
    /// First byte of the journal (the journal inode's blocks, contiguous) on the device.
    pub journal_offset_bytes: u64,
    /// Size of the journal.
    pub journal_bytes: u64,
    /// Metadata blocks a transaction journals for a file whose change was only its
    /// timestamps (mtime/ctime: the inode table block).
    pub blocks_update: u64,
    /// Metadata blocks a transaction journals for a file whose writes converted
    /// unwritten (fallocated) extents to written ones (inode block with the extent
    /// root, plus extent tree blocks if any).
    pub blocks_convert: u64,
    /// kjournald2's work from the start of a commit to the log blocks' submission
    /// (lock the transaction, wait for its handles, ordered data, revoke records,
    /// descriptor block).
    pub commit_start_ns: u64,
    /// Per block written to the journal (log blocks and the commit block): the
    /// journal copy of the buffer, its tag, submit_bh.
    pub commit_per_block_ns: u64,
    /// After the commit block is written: the transaction's checkpoint lists, T_FINISHED,
    /// waking the waiters (the wake-ups themselves cost the host's `wakeup`).
    pub commit_end_ns: u64,
    /// The periodic commit interval (mount option commit=, default 5 s).
    pub commit_interval_ns: u64,
}

fn default_commit() -> String {
    "5s".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFs {
    pub kind: String,
    pub journal_offset: String,
    pub journal_size: String,
    pub blocks_update: u64,
    pub blocks_convert: u64,
    pub commit_start: String,
    pub commit_per_block: String,
    pub commit_end: String,
    #[serde(default = "default_commit")]
    pub commit_interval: String,
}

impl RawFs {
    pub fn validate(&self) -> Result<FsConfig, ConfigError> {
        if self.kind != "ext4" {
            return Err(ConfigError::new(
                "fs.kind",
                format!("'{}' is not modelled (ext4)", self.kind),
            ));
        }
        let journal_offset_bytes = bytes_field("fs.journal_offset", &self.journal_offset)?;
        if !journal_offset_bytes.is_multiple_of(FS_BLOCK) {
            return Err(ConfigError::new(
                "fs.journal_offset",
                "must be a multiple of the 4KiB block",
            ));
        }
        let journal_bytes = bytes_field("fs.journal_size", &self.journal_size)?;
        // mke2fs accepts 1024 to 10240000 journal blocks (ext2fs_add_journal_inode).
        if !journal_bytes.is_multiple_of(FS_BLOCK)
            || !(1024 * FS_BLOCK..=10_240_000 * FS_BLOCK).contains(&journal_bytes)
        {
            return Err(ConfigError::new(
                "fs.journal_size",
                "must be 1024 to 10240000 blocks of 4KiB (4MiB..39GiB)",
            ));
        }
        for (f, v) in [
            ("fs.blocks_update", self.blocks_update),
            ("fs.blocks_convert", self.blocks_convert),
        ] {
            if !(1..=64).contains(&v) {
                return Err(ConfigError::new(
                    f,
                    "must be 1..=64 (the inode block is always journaled)",
                ));
            }
        }
        let commit_interval_ns = ns_field("fs.commit_interval", &self.commit_interval)?;
        if commit_interval_ns == 0 {
            return Err(ConfigError::new(
                "fs.commit_interval",
                "must be above 0 (commit=0 means the 5s default in ext4: write 5s)",
            ));
        }
        Ok(FsConfig {
            journal_offset_bytes,
            journal_bytes,
            blocks_update: self.blocks_update,
            blocks_convert: self.blocks_convert,
            commit_start_ns: cost("fs.commit_start", &self.commit_start)?,
            commit_per_block_ns: cost("fs.commit_per_block", &self.commit_per_block)?,
            commit_end_ns: cost("fs.commit_end", &self.commit_end)?,
            commit_interval_ns,
        })
    }
}
