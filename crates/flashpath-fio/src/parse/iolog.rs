//! Trace-replay iologs (`read_iolog=`), versions 2 and 3, read the way fio 3.33 reads
//! them (`read_iolog2` in iolog.c; fio-compat.md §5.1-5.2).
//!
//! - v2: `FILE add|open|close` and `FILE ACTION OFFSET LENGTH`.
//! - v3: the same lines after a timestamp in microseconds since the log started.
//! - v1 and blktrace binaries are refused (3.33 no longer reads v1; blktrace replay
//!   is not modelled here).
//! - Lines fio skips with a message (unknown action, a `trim` — "bad ddir: 2" in
//!   3.33 —, `wait` in v3, malformed lines) are skipped here too and reported in
//!   [`Iolog::warnings`]. A `wait` in v2 carries an absolute time in milliseconds
//!   since fio started (3.33 behaviour, unlike the HOWTO).
//!
//! Units: offsets and lengths in bytes, times in microseconds as written.

use std::path::Path;

use super::{ErrorKind, Origin, ParseError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IologVersion {
    V2,
    V3,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IologAction {
    Add,
    Open,
    Close,
    Read,
    Write,
    Sync,
    Datasync,
    /// v2 only: wait until this many milliseconds after fio started (the offset field).
    Wait,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IologEntry {
    /// 1-based line in the log.
    pub line: u32,
    /// v3 timestamp (µs since the log started).
    pub time_us: Option<u64>,
    pub file: String,
    pub action: IologAction,
    pub offset_bytes: u64,
    pub length_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Iolog {
    pub version: IologVersion,
    pub entries: Vec<IologEntry>,
    /// Lines fio would skip, with their reason ("path:line: ...").
    pub warnings: Vec<String>,
}

/// `%256s`: a word of at most 256 bytes.
fn word(s: &str) -> &str {
    super::value::truncate_bytes(s, 256)
}

/// C `strtoull` as `%llu` scans it (digits only; a sign is accepted by scanf).
fn scan_u64(s: &str) -> Option<u64> {
    let t = s.strip_prefix('+').unwrap_or(s);
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        // scanf stops at the first non-digit; a token with trailing junk still
        // converts its leading digits.
        let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
        return digits.parse().ok();
    }
    t.parse().ok()
}

/// Reads an iolog's text.
pub fn parse_iolog(text: &str, path: &Path) -> Result<Iolog, ParseError> {
    let origin = |line: u32| Origin::File {
        path: path.to_path_buf(),
        line,
    };
    let mut lines = text.lines();
    let header = lines.next().unwrap_or("").trim_end();
    let version = match header {
        "fio version 2 iolog" => IologVersion::V2,
        "fio version 3 iolog" => IologVersion::V3,
        h if h.as_bytes().starts_with(&[0x00, 0x74, 0x61, 0x65])
            || h.as_bytes().starts_with(&[0x65, 0x61, 0x74, 0x00]) =>
        {
            return Err(ParseError::new(
                ErrorKind::Syntax,
                Some(origin(1)),
                "blktrace binary iologs are not supported by this parser",
            ))
        }
        _ => {
            return Err(ParseError::new(
                ErrorKind::Syntax,
                Some(origin(1)),
                "fio: iolog version 1 is no longer supported",
            ))
        }
    };
    let mut log = Iolog {
        version,
        entries: Vec::new(),
        warnings: Vec::new(),
    };
    for (i, raw) in lines.enumerate() {
        let line = (i + 2) as u32;
        let mut toks = raw.split_ascii_whitespace();
        let warn =
            |log: &mut Iolog, msg: String| log.warnings.push(format!("{}: {msg}", origin(line)));
        let time_us = if version == IologVersion::V3 {
            match toks.next().and_then(scan_u64) {
                Some(t) => Some(t),
                None => {
                    if !raw.trim().is_empty() {
                        warn(&mut log, format!("bad iolog3: {raw}"));
                    }
                    continue;
                }
            }
        } else {
            None
        };
        let (Some(file), Some(act)) = (toks.next(), toks.next()) else {
            if !raw.trim().is_empty() {
                warn(&mut log, format!("bad iolog2: {raw}"));
            }
            continue;
        };
        let (file, act) = (word(file), word(act));
        let off = toks.next().and_then(scan_u64);
        let len = toks.next().and_then(scan_u64);
        let action = match (off, len) {
            (Some(_), Some(_)) => match act {
                "read" => IologAction::Read,
                "write" => IologAction::Write,
                "sync" => IologAction::Sync,
                "datasync" => IologAction::Datasync,
                "wait" if version == IologVersion::V2 => IologAction::Wait,
                "wait" => {
                    warn(
                        &mut log,
                        "fio: wait is not allowed in iolog version 3".to_string(),
                    );
                    continue;
                }
                "trim" => {
                    // 3.33 refuses trims on replay.
                    warn(&mut log, "bad ddir: 2".to_string());
                    continue;
                }
                other => {
                    warn(&mut log, format!("fio: bad iolog file action: {other}"));
                    continue;
                }
            },
            (None, _) => match act {
                "add" => IologAction::Add,
                "open" => IologAction::Open,
                "close" => IologAction::Close,
                other => {
                    warn(&mut log, format!("fio: bad iolog file action: {other}"));
                    continue;
                }
            },
            (Some(_), None) => {
                warn(&mut log, format!("bad iolog2: {raw}"));
                continue;
            }
        };
        log.entries.push(IologEntry {
            line,
            time_us,
            file: file.to_string(),
            action,
            offset_bytes: off.unwrap_or(0),
            length_bytes: len.unwrap_or(0),
        });
    }
    Ok(log)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_as_in_the_reference() {
        // [V] §5.1: the v2 log 3.33 replays (1 read, 2 writes).
        let t = "fio version 2 iolog\n/mnt/test/v2target add\n/mnt/test/v2target open\n\
                 /mnt/test/v2target write 0 4096\n/mnt/test/v2target write 4096 8192\n\
                 /mnt/test/v2target read 0 4096\n/mnt/test/v2target close\n";
        let log = parse_iolog(t, Path::new("v2.log")).expect("parses");
        assert_eq!(log.version, IologVersion::V2);
        assert_eq!(log.entries.len(), 6);
        assert_eq!(log.entries[3].action, IologAction::Write);
        assert_eq!(log.entries[3].offset_bytes, 4096);
        assert_eq!(log.entries[3].length_bytes, 8192);
        assert!(log.warnings.is_empty());
    }

    #[test]
    fn v3_timestamps_trims_and_waits() {
        // [V] §5.1-5.2: µs stamps; trim lines skipped in 3.33; no wait in v3.
        let t = "fio version 3 iolog\n20 /f add\n132 /f open\n136 /f read 61440 4096\n\
                 2919 /f sync 954368 0\n3000 /f trim 0 4096\n3100 /f wait 0 10\n10682 /f close\n";
        let log = parse_iolog(t, Path::new("v3.log")).expect("parses");
        assert_eq!(log.version, IologVersion::V3);
        assert_eq!(log.entries.len(), 5);
        assert_eq!(log.entries[2].time_us, Some(136));
        assert_eq!(log.entries[3].action, IologAction::Sync);
        assert_eq!(log.warnings.len(), 2);
        assert!(
            log.warnings[0].contains("v3.log:6: bad ddir: 2"),
            "{:?}",
            log.warnings
        );
    }

    #[test]
    fn v1_refused() {
        let e = parse_iolog("rw, 0, 4096\n", Path::new("v1.log")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "v1.log:1: fio: iolog version 1 is no longer supported"
        );
    }

    #[test]
    fn reference_samples_parse() {
        let dir = Path::new("/work/shared/reference/fio-samples");
        for name in [
            "iolog_v2_handwritten.log",
            "iolog_v3_handwritten.log",
            "iolog_v3_written_by_fio.log",
        ] {
            let Ok(t) = std::fs::read_to_string(dir.join(name)) else {
                continue;
            };
            let log = parse_iolog(&t, Path::new(name)).expect("sample parses");
            assert!(!log.entries.is_empty(), "{name}");
        }
    }
}
