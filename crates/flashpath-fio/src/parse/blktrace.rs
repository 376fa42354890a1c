//! blktrace binary records as fio 3.33 reads them for `read_iolog=` (blktrace.c
//! `is_blktrace`, `read_blktrace`, `queue_trace`; blktrace_api.h), one record at a time
//! so a trace of any length is read in bounded memory.
//!
//! A record is a 48-byte header in the byte order of the machine that traced (fio
//! tries the magic both ways and swaps every field when needed), then `pdu_len`
//! payload bytes, which fio skips:
//!
//! ```text
//!  0 u32 magic (0x65617400 | version 7)   4 u32 sequence   8 u64 time (ns)
//! 16 u64 sector   24 u32 bytes   28 u32 action (low 16: what, high 16: category)
//! 32 u32 pid   36 u32 device (major << 20 | minor)   40 u32 cpu   44 u16 error   46 u16 pdu_len
//! ```
//!
//! fio fails the job on a bad magic or version; it stops quietly at a short record
//! ("fio: iolog short read"). flashpath refuses both, naming the record, since a
//! trace cut in the middle is not the trace the user means to replay.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::{ErrorKind, ParseError};

pub const RECORD_BYTES: usize = 48;
pub const MAGIC: u32 = 0x6561_7400;
pub const VERSION: u32 = 0x07;

/// Action codes (low 16 bits of `action`).
pub const TA_QUEUE: u32 = 1;
pub const TA_BACKMERGE: u32 = 2;
pub const TA_FRONTMERGE: u32 = 3;
pub const TA_COMPLETE: u32 = 8;

/// Category bits (`BLK_TC_ACT(x)`: x << 16).
pub const TC_READ: u32 = 1 << 16;
pub const TC_WRITE: u32 = 2 << 16;
pub const TC_FLUSH: u32 = 4 << 16;
pub const TC_NOTIFY: u32 = 0x400 << 16;
pub const TC_DISCARD: u32 = 0x2000 << 16;

/// One record's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlkRecord {
    /// 0-based record number in the file.
    pub index: u64,
    /// Where the record starts in the file.
    pub at_byte: u64,
    pub sequence: u32,
    pub time_ns: u64,
    pub sector: u64,
    pub bytes: u32,
    pub action: u32,
    pub pid: u32,
    pub device: u32,
    pub cpu: u32,
    pub error: u16,
    pub pdu_len: u16,
}

impl BlkRecord {
    pub fn what(&self) -> u32 {
        self.action & 0xffff
    }
    pub fn is_notify(&self) -> bool {
        self.action & TC_NOTIFY != 0
    }
    /// fio's `t_get_ddir`: 0 read, 1 write, 2 trim, by category.
    pub fn ddir(&self) -> Option<usize> {
        if self.action & TC_READ != 0 {
            Some(0)
        } else if self.action & TC_WRITE != 0 {
            Some(1)
        } else if self.action & TC_DISCARD != 0 {
            Some(2)
        } else {
            None
        }
    }
    /// fio's FMAJOR/FMINOR.
    pub fn major_minor(&self) -> (u32, u32) {
        (self.device >> 20, self.device & ((1 << 20) - 1))
    }
}

/// fio's `is_blktrace` on a file's first bytes: `Some(swap)` if they start a blktrace
/// record (in this machine's byte order or swapped).
pub fn sniff(first: &[u8]) -> Option<bool> {
    if first.len() < RECORD_BYTES {
        return None;
    }
    magic(first)
}

/// Whether `first` starts with blktrace's magic (`Some(swap)`), however short it is:
/// fio's `is_blktrace` needs a whole record, and says "short read on blktrace file"
/// when it gets less.
pub fn magic(first: &[u8]) -> Option<bool> {
    let [a, b, c, d, ..] = *first else {
        return None;
    };
    let m = u32::from_le_bytes([a, b, c, d]);
    if m & 0xffff_ff00 == MAGIC {
        Some(false)
    } else if m.swap_bytes() & 0xffff_ff00 == MAGIC {
        Some(true)
    } else {
        None
    }
}

/// Reads a blktrace file record by record.
pub struct BlktraceReader<R> {
    r: R,
    path: PathBuf,
    /// The file is big-endian (fio's need_swap, on this little-endian build).
    swap: bool,
    index: u64,
    at: u64,
    skip: Vec<u8>,
}

impl<R: Read> BlktraceReader<R> {
    pub fn new(r: R, path: &Path, swap: bool) -> Self {
        BlktraceReader {
            r,
            path: path.to_path_buf(),
            swap,
            index: 0,
            at: 0,
            skip: Vec::new(),
        }
    }

    fn error(&self, msg: impl std::fmt::Display) -> ParseError {
        ParseError::new(
            ErrorKind::Syntax,
            None,
            format!(
                "{}: record {} (byte {}): {msg}",
                self.path.display(),
                self.index,
                self.at
            ),
        )
    }

    /// Reads up to `buf.len()` bytes; returns how many (less only at the end).
    fn fill(&mut self, buf: &mut [u8]) -> Result<usize, ParseError> {
        let mut n = 0;
        while n < buf.len() {
            match self.r.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(ParseError::new(
                        ErrorKind::Io,
                        None,
                        format!("{}: reading the blktrace: {e}", self.path.display()),
                    ))
                }
            }
        }
        Ok(n)
    }

    /// The next record (its payload skipped), or `None` at the end of the file.
    pub fn next_record(&mut self) -> Result<Option<BlkRecord>, ParseError> {
        let mut h = [0u8; RECORD_BYTES];
        let n = self.fill(&mut h)?;
        if n == 0 {
            return Ok(None);
        }
        if n < RECORD_BYTES {
            return Err(self.error(format_args!(
                "truncated: {n} of the {RECORD_BYTES} bytes of a record header (fio: iolog short read)"
            )));
        }
        let u32_at = |i: usize| {
            let v = u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
            if self.swap {
                v.swap_bytes()
            } else {
                v
            }
        };
        let u64_at = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&h[i..i + 8]);
            let v = u64::from_le_bytes(b);
            if self.swap {
                v.swap_bytes()
            } else {
                v
            }
        };
        let u16_at = |i: usize| {
            let v = u16::from_le_bytes([h[i], h[i + 1]]);
            if self.swap {
                v.swap_bytes()
            } else {
                v
            }
        };
        let magic = u32_at(0);
        if magic & 0xffff_ff00 != MAGIC {
            return Err(self.error(format_args!(
                "fio: bad magic in blktrace data: {magic:x} (not a blktrace record)"
            )));
        }
        if magic & 0xff != VERSION {
            return Err(self.error(format_args!(
                "fio: bad blktrace version {} (fio reads version {VERSION})",
                magic & 0xff
            )));
        }
        let rec = BlkRecord {
            index: self.index,
            at_byte: self.at,
            sequence: u32_at(4),
            time_ns: u64_at(8),
            sector: u64_at(16),
            bytes: u32_at(24),
            action: u32_at(28),
            pid: u32_at(32),
            device: u32_at(36),
            cpu: u32_at(40),
            error: u16_at(44),
            pdu_len: u16_at(46),
        };
        let pdu = rec.pdu_len as usize;
        if pdu > 0 {
            self.skip.resize(pdu, 0);
            let mut skip = std::mem::take(&mut self.skip);
            let got = self.fill(&mut skip)?;
            self.skip = skip;
            if got < pdu {
                return Err(self.error(format_args!(
                    "truncated: {got} of the record's {pdu} payload bytes"
                )));
            }
        }
        self.index += 1;
        self.at += (RECORD_BYTES + pdu) as u64;
        Ok(Some(rec))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(action: u32, sector: u64, bytes: u32, time: u64, pdu: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&(MAGIC | VERSION).to_le_bytes());
        v.extend_from_slice(&1u32.to_le_bytes());
        v.extend_from_slice(&time.to_le_bytes());
        v.extend_from_slice(&sector.to_le_bytes());
        v.extend_from_slice(&bytes.to_le_bytes());
        v.extend_from_slice(&action.to_le_bytes());
        v.extend_from_slice(&7u32.to_le_bytes());
        v.extend_from_slice(&(179u32 << 20).to_le_bytes()); // device 179,0
        v.extend_from_slice(&0u32.to_le_bytes());
        v.extend_from_slice(&0u16.to_le_bytes());
        v.extend_from_slice(&(pdu.len() as u16).to_le_bytes());
        v.extend_from_slice(pdu);
        v
    }

    #[test]
    fn magic_alone_is_not_a_trace_but_is_recognised() {
        let r = record(TA_QUEUE | TC_WRITE, 8, 4096, 1000, &[]);
        // A short file with blktrace's magic: fio's is_blktrace needs the whole record.
        assert_eq!(sniff(&r[..20]), None);
        assert_eq!(magic(&r[..20]), Some(false));
        let swapped: Vec<u8> = r[..4].iter().rev().copied().collect();
        assert_eq!(magic(&swapped), Some(true));
        assert_eq!(magic(b"fio "), None);
        assert_eq!(magic(&r[..3]), None);
    }

    #[test]
    fn records_and_payloads_and_byte_order() {
        let mut f = record(TA_QUEUE | TC_WRITE | (0x10 << 16), 8, 4096, 1000, b"abc");
        f.extend(record(TA_COMPLETE | TC_READ, 16, 512, 2000, &[]));
        assert_eq!(sniff(&f), Some(false));
        let mut rd = BlktraceReader::new(&f[..], Path::new("t.bin"), false);
        let a = rd.next_record().unwrap().unwrap();
        assert_eq!((a.what(), a.sector, a.bytes, a.time_ns), (1, 8, 4096, 1000));
        assert_eq!(a.ddir(), Some(1));
        assert_eq!(a.major_minor(), (179, 0));
        let b = rd.next_record().unwrap().unwrap();
        assert_eq!((b.index, b.at_byte, b.what()), (1, 51, TA_COMPLETE));
        assert!(rd.next_record().unwrap().is_none());
        // The same records from a big-endian machine.
        let mut be = Vec::new();
        for chunk in [&f[..48], &f[51..99]] {
            let c = chunk;
            let sw4 = |i: usize| [c[i + 3], c[i + 2], c[i + 1], c[i]];
            let mut r = Vec::new();
            r.extend_from_slice(&sw4(0));
            r.extend_from_slice(&sw4(4));
            r.extend(c[8..16].iter().rev());
            r.extend(c[16..24].iter().rev());
            for i in [24, 28, 32, 36, 40] {
                r.extend_from_slice(&sw4(i));
            }
            r.extend([c[45], c[44], 0, 0]);
            be.extend(r);
        }
        assert_eq!(sniff(&be), Some(true));
        let mut rd = BlktraceReader::new(&be[..], Path::new("t.bin"), true);
        let a = rd.next_record().unwrap().unwrap();
        assert_eq!((a.what(), a.sector, a.bytes, a.time_ns), (1, 8, 4096, 1000));
    }

    #[test]
    fn truncated_and_foreign_records_are_errors_naming_the_record() {
        let mut f = record(TA_QUEUE | TC_READ, 0, 4096, 0, &[]);
        f.extend(&record(TA_QUEUE | TC_READ, 0, 4096, 0, &[])[..30]);
        let mut rd = BlktraceReader::new(&f[..], Path::new("t.bin"), false);
        rd.next_record().unwrap();
        let e = rd.next_record().unwrap_err().to_string();
        assert!(
            e.starts_with("t.bin: record 1 (byte 48): truncated: 30 of the 48"),
            "{e}"
        );
        let mut f = record(TA_QUEUE | TC_READ, 0, 4096, 0, &[]);
        f.extend(vec![0x55u8; 48]);
        let mut rd = BlktraceReader::new(&f[..], Path::new("t.bin"), false);
        rd.next_record().unwrap();
        let e = rd.next_record().unwrap_err().to_string();
        assert!(e.contains("record 1 (byte 48): fio: bad magic"), "{e}");
        let mut f = record(TA_QUEUE | TC_READ, 0, 4096, 0, &[]);
        f[0] = 6;
        let e = BlktraceReader::new(&f[..], Path::new("t.bin"), false)
            .next_record()
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad blktrace version 6"), "{e}");
        let f = record(TA_QUEUE | TC_READ, 0, 4096, 0, b"0123456789");
        let e = BlktraceReader::new(&f[..52], Path::new("t.bin"), false)
            .next_record()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("truncated: 4 of the record's 10 payload bytes"),
            "{e}"
        );
        assert_eq!(sniff(b"fio version 2 iolog\n"), None);
    }
}
