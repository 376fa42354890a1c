//! The data of `flashpath serve`'s export: a sparse file as large as the simulated
//! device, so that reads return what was written and memory and disk grow with what was
//! written, not with the device's capacity.
//!
//! - With `--data FILE` the file is kept across restarts: a server started again on it
//!   serves the same data. A file longer than the device is refused (it was made for a
//!   larger one); a shorter one is extended, sparsely.
//! - Without it, an unnamed file in the temporary directory (`TMPDIR`): created and
//!   unlinked at once, so it goes when the process ends. Its pages live in the page
//!   cache, which the kernel may write out and drop, not in the server's own memory.
//!
//! Zeroes (TRIM, WRITE_ZEROES) punch a hole (`fallocate(PUNCH_HOLE)`), so they read back
//! as zeroes and give the space back; where the file system cannot punch holes, zeroes
//! are written. `sync` is `fdatasync`: what a FLUSH and a FUA write wait for.
//! Reads and writes are positioned (`pread`/`pwrite`): connections share the store
//! without a lock.

use anyhow::{bail, Context};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

pub struct Store {
    file: File,
    /// Where it lives (`None`: the unnamed temporary file).
    path: Option<PathBuf>,
}

impl Store {
    /// The store of a `size`-byte export: `path`'s file, or an unnamed temporary one.
    pub fn open(path: Option<&Path>, size: u64) -> anyhow::Result<Store> {
        let (file, path) = match path {
            Some(p) => {
                let file = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(p)
                    .with_context(|| format!("--data {}", p.display()))?;
                let len = file
                    .metadata()
                    .with_context(|| format!("--data {}", p.display()))?
                    .len();
                if len > size {
                    bail!(
                        "--data {}: the file holds {len} bytes, more than the simulated device's {size}: it was made for another device (give another file, or the device it was made for)",
                        p.display()
                    );
                }
                (file, Some(p.to_path_buf()))
            }
            None => (temporary()?, None),
        };
        file.set_len(size).context("sizing the data file")?;
        Ok(Store { file, path })
    }

    /// Whether the data is kept (`--data`).
    pub fn kept(&self) -> bool {
        self.path.is_some()
    }

    /// A description for the start-up line.
    pub fn describe(&self) -> String {
        match &self.path {
            Some(p) => format!("data in {} (kept)", p.display()),
            None => "data in an unnamed temporary file (gone at exit; --data FILE keeps it)".into(),
        }
    }

    /// Reads `buf.len()` bytes at `offset`. A range the file holds no data in (never
    /// written, or zeroed) is filled with zeroes without reading the file: reading a
    /// hole still makes the kernel allocate, zero and read ahead page-cache pages, and
    /// on this machine's ext4 one 128 KiB read of a hole in a hundred took 1-20 ms,
    /// which would show as lateness. Where data begins inside the range, the zeroes
    /// before it are filled and the rest is read.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let end = offset + buf.len() as u64;
        let data = match self.next_data(offset)? {
            Some(d) if d < end => d,
            _ => {
                buf.fill(0);
                return Ok(());
            }
        };
        let skip = (data - offset) as usize;
        buf[..skip].fill(0);
        self.file.read_exact_at(&mut buf[skip..], data)
    }

    /// The allocation of `len` bytes at `offset`, as NBD's `base:allocation` gives it:
    /// runs of (length, status), a hole as `STATE_HOLE | STATE_ZERO` (it reads as
    /// zeroes), data as 0; at most `max` runs (the client asks again for the rest).
    /// `len` fits in 32 bits (an NBD request's length), and so does each run.
    pub fn extents(&self, offset: u64, len: u32, max: usize) -> std::io::Result<Vec<(u32, u32)>> {
        use super::nbd::{STATE_HOLE, STATE_ZERO};
        let end = offset + len as u64;
        let mut runs = Vec::new();
        let mut at = offset;
        while at < end && runs.len() < max {
            let data = self.next_data(at)?.unwrap_or(end).min(end);
            if data > at {
                runs.push(((data - at) as u32, STATE_HOLE | STATE_ZERO));
                at = data;
                continue;
            }
            let hole = self.next_hole(at)?.min(end);
            // Data at `at`, so the next hole is past it; a file system that says
            // otherwise gets the rest reported as data.
            let hole = if hole > at { hole } else { end };
            runs.push(((hole - at) as u32, 0));
            at = hole;
        }
        Ok(runs)
    }

    /// Where the next hole at or after `offset` begins (`lseek(SEEK_HOLE)`; the end of
    /// the file counts as one). Without SEEK_HOLE, the end of the file.
    fn next_hole(&self, offset: u64) -> std::io::Result<u64> {
        match self.seek(offset, libc::SEEK_HOLE)? {
            Some(Some(h)) => Ok(h),
            _ => Ok(self.file.metadata()?.len()),
        }
    }

    /// Where the next data at or after `offset` begins (`lseek(SEEK_DATA)`); `None`
    /// when there is none before the end. A file system without SEEK_DATA reports the
    /// whole file as data, as the call's fallback is.
    fn next_data(&self, offset: u64) -> std::io::Result<Option<u64>> {
        Ok(self.seek(offset, libc::SEEK_DATA)?.unwrap_or(Some(offset)))
    }

    /// `lseek(offset, whence)` for SEEK_DATA or SEEK_HOLE: `Some(Some(at))`, or
    /// `Some(None)` where there is none (ENXIO: at or past the end), or `None` where the
    /// file system does not answer (EINVAL, EOPNOTSUPP).
    fn seek(&self, offset: u64, whence: libc::c_int) -> std::io::Result<Option<Option<u64>>> {
        // SAFETY: lseek on an open file descriptor; it reads no memory of ours. The
        // file is only ever accessed positioned (pread/pwrite), so moving its offset
        // affects nothing else.
        let r = unsafe { libc::lseek(self.file.as_raw_fd(), offset as libc::off_t, whence) };
        if r >= 0 {
            return Ok(Some(Some(r as u64)));
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::ENXIO) => Ok(Some(None)),
            Some(libc::EINVAL) | Some(libc::EOPNOTSUPP) => Ok(None),
            _ => Err(e),
        }
    }

    pub fn write_at(&self, buf: &[u8], offset: u64) -> std::io::Result<()> {
        self.file.write_all_at(buf, offset)
    }

    /// `len` bytes at `offset` read as zeroes from now on.
    pub fn zero(&self, offset: u64, len: u64) -> std::io::Result<()> {
        // SAFETY: fallocate on an open file descriptor with in-range arguments; it
        // reads no memory of ours.
        let r = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                offset as libc::off_t,
                len as libc::off_t,
            )
        };
        if r == 0 {
            return Ok(());
        }
        // No hole punching here (EOPNOTSUPP): write the zeroes.
        let zeroes = vec![0u8; len.min(1 << 20) as usize];
        let mut at = offset;
        while at < offset + len {
            let n = (offset + len - at).min(zeroes.len() as u64) as usize;
            self.file.write_all_at(&zeroes[..n], at)?;
            at += n as u64;
        }
        Ok(())
    }

    /// Everything written so far is on stable storage (fdatasync).
    pub fn sync(&self) -> std::io::Result<()> {
        self.file.sync_data()
    }

    /// Bytes the file takes on disk (its allocated blocks).
    pub fn allocated(&self) -> u64 {
        use std::os::unix::fs::MetadataExt;
        self.file.metadata().map(|m| m.blocks() * 512).unwrap_or(0)
    }
}

/// An unnamed file in the temporary directory (`flashpath_core::scratch`).
fn temporary() -> anyhow::Result<File> {
    flashpath_core::scratch::file("serve-data").with_context(|| {
        format!(
            "making the temporary data file in {} (set TMPDIR, or give --data FILE)",
            std::env::temp_dir().display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_was_written_zeroes_read_as_zero_and_the_file_stays_sparse() {
        let s = Store::open(None, 1 << 40).unwrap();
        let data: Vec<u8> = (0..8192u32).map(|i| (i * 7) as u8).collect();
        s.write_at(&data, 1 << 39).unwrap();
        let mut back = vec![0u8; 8192];
        s.read_at(&mut back, 1 << 39).unwrap();
        assert_eq!(back, data);
        // Never written: zeroes.
        s.read_at(&mut back, 12345 * 4096).unwrap();
        assert!(back.iter().all(|&b| b == 0));
        // A range that starts in a hole and runs into the data: zeroes, then the data
        // (and one that ends where the data begins: all zeroes).
        let mut span = vec![0xffu8; 3 * 4096];
        s.read_at(&mut span, (1 << 39) - 4096).unwrap();
        assert!(span[..4096].iter().all(|&b| b == 0));
        assert_eq!(&span[4096..], &data[..]);
        s.read_at(&mut span, (1 << 39) - 3 * 4096).unwrap();
        assert!(span.iter().all(|&b| b == 0));
        // Its allocation: a hole, the 8 KiB of data, a hole; REQ_ONE's single run.
        use crate::serve::nbd::{STATE_HOLE, STATE_ZERO};
        let z = STATE_HOLE | STATE_ZERO;
        assert_eq!(
            s.extents((1 << 39) - 8192, 6 * 4096, 100).unwrap(),
            [(8192, z), (8192, 0), (8192, z)]
        );
        assert_eq!(
            s.extents((1 << 39) - 8192, 6 * 4096, 1).unwrap(),
            [(8192, z)]
        );
        assert_eq!(s.extents(1 << 39, 512, 100).unwrap(), [(512, 0)]);
        assert_eq!(s.extents(0, 1 << 20, 100).unwrap(), [(1 << 20, z)]);
        // A terabyte export costs what was written (a few blocks), not its size.
        assert!(s.allocated() < 1 << 20, "{}", s.allocated());
        s.zero((1 << 39) + 4096, 4096).unwrap();
        s.read_at(&mut back, 1 << 39).unwrap();
        assert_eq!(&back[..4096], &data[..4096]);
        assert!(back[4096..].iter().all(|&b| b == 0));
        s.sync().unwrap();
    }

    #[test]
    fn a_data_file_is_kept_and_a_larger_one_refused() {
        let dir = std::env::temp_dir().join(format!("fp-store-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("d");
        {
            let s = Store::open(Some(&p), 1 << 20).unwrap();
            s.write_at(b"kept", 4096).unwrap();
            s.sync().unwrap();
        }
        let s = Store::open(Some(&p), 1 << 20).unwrap();
        let mut b = [0u8; 4];
        s.read_at(&mut b, 4096).unwrap();
        assert_eq!(&b, b"kept");
        let e = Store::open(Some(&p), 1 << 19).err().unwrap().to_string();
        assert!(e.contains("more than the simulated device's"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
