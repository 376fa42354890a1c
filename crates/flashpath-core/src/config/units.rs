//! Values with units as people write them in presets: "50us", "1.5ms", "400MB/s",
//! "4MiB", "1.73GHz". Unlike fio's job grammar, units here mean what they say:
//! k/K/KB = 1000, KiB = 1024 (likewise M, G, T). Results are integers, rounded to the
//! nearest unit (ns, byte, byte/s, Hz); a value that rounds to zero where zero is not
//! allowed is the caller's check.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError(pub String);

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for UnitError {}

/// Splits "12.5us" into (12.5, "us").
fn split_number(s: &str) -> Result<(f64, &str), UnitError> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == '_'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let num: String = num.chars().filter(|c| *c != '_').collect();
    if num.is_empty() {
        return Err(UnitError(format!("'{s}' does not start with a number")));
    }
    let v: f64 = num
        .parse()
        .map_err(|_| UnitError(format!("'{s}' is not a number with a unit")))?;
    if !v.is_finite() {
        return Err(UnitError(format!("'{s}' is not a finite number")));
    }
    Ok((v, unit.trim()))
}

fn to_u64(v: f64, what: &str, s: &str) -> Result<u64, UnitError> {
    let r = v.round();
    if !(0.0..=(u64::MAX as f64 / 2.0)).contains(&r) {
        return Err(UnitError(format!("{what} '{s}' is out of range")));
    }
    Ok(r as u64)
}

fn size_multiplier(unit: &str) -> Option<f64> {
    Some(match unit {
        "" | "B" | "b" => 1.0,
        "k" | "K" | "kB" | "KB" => 1e3,
        "KiB" | "kiB" | "Ki" => 1024.0,
        "M" | "MB" => 1e6,
        "MiB" | "Mi" => 1024.0 * 1024.0,
        "G" | "GB" => 1e9,
        "GiB" | "Gi" => 1024.0 * 1024.0 * 1024.0,
        "T" | "TB" => 1e12,
        "TiB" | "Ti" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    })
}

/// A size in bytes: "4096", "16KiB", "29.1GiB", "8GB".
pub fn parse_bytes(s: &str) -> Result<u64, UnitError> {
    let (v, unit) = split_number(s)?;
    let m = size_multiplier(unit).ok_or_else(|| {
        UnitError(format!(
            "'{s}': unknown size unit '{unit}' (use B, KB, KiB, MB, MiB, GB, GiB, TB, TiB)"
        ))
    })?;
    to_u64(v * m, "size", s)
}

/// A duration in nanoseconds: "60ns", "50us", "1.5ms", "2s". A unit is required.
pub fn parse_ns(s: &str) -> Result<u64, UnitError> {
    let (v, unit) = split_number(s)?;
    let m = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "h" => 3.6e12,
        "d" => 8.64e13,
        "" => {
            return Err(UnitError(format!(
                "'{s}': a duration needs a unit (ns, us, ms, s, h, d)"
            )))
        }
        _ => {
            return Err(UnitError(format!(
                "'{s}': unknown time unit '{unit}' (use ns, us, ms, s, h, d)"
            )))
        }
    };
    to_u64(v * m, "duration", s)
}

/// A data rate in bytes per second: "400MB/s", "200MiB/s", "1.17GB/s". The "/s" is required.
pub fn parse_rate(s: &str) -> Result<u64, UnitError> {
    let t = s.trim();
    let body = t
        .strip_suffix("/s")
        .ok_or_else(|| UnitError(format!("'{s}': a rate is written like 400MB/s")))?;
    let (v, unit) = split_number(body)?;
    let m = size_multiplier(unit)
        .ok_or_else(|| UnitError(format!("'{s}': unknown size unit '{unit}' in rate")))?;
    to_u64(v * m, "rate", s)
}

/// A frequency in Hz: "200MHz", "1.73GHz".
pub fn parse_hz(s: &str) -> Result<u64, UnitError> {
    let (v, unit) = split_number(s)?;
    let m = match unit {
        "Hz" => 1.0,
        "kHz" => 1e3,
        "MHz" => 1e6,
        "GHz" => 1e9,
        _ => {
            return Err(UnitError(format!(
                "'{s}': unknown frequency unit '{unit}' (use Hz, kHz, MHz, GHz)"
            )))
        }
    };
    to_u64(v * m, "frequency", s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert_eq!(parse_bytes("16KiB").unwrap(), 16384);
        assert_eq!(parse_bytes("16KB").unwrap(), 16000);
        assert_eq!(parse_bytes("4MiB").unwrap(), 4 << 20);
        assert_eq!(parse_bytes("1.5KiB").unwrap(), 1536);
        assert!(parse_bytes("4 furlongs").is_err());
        assert!(parse_bytes("KiB").is_err());
    }

    #[test]
    fn times() {
        assert_eq!(parse_ns("60ns").unwrap(), 60);
        assert_eq!(parse_ns("50us").unwrap(), 50_000);
        assert_eq!(parse_ns("1.5ms").unwrap(), 1_500_000);
        assert_eq!(parse_ns("2s").unwrap(), 2_000_000_000);
        assert!(parse_ns("50").is_err());
        assert_eq!(parse_ns("2h").unwrap(), 7_200_000_000_000);
        assert_eq!(parse_ns("365d").unwrap(), 31_536_000_000_000_000);
        assert!(parse_ns("5min").is_err());
    }

    #[test]
    fn rates_and_freqs() {
        assert_eq!(parse_rate("400MB/s").unwrap(), 400_000_000);
        assert_eq!(parse_rate("1MiB/s").unwrap(), 1 << 20);
        assert!(parse_rate("400MB").is_err());
        assert_eq!(parse_hz("1.73GHz").unwrap(), 1_730_000_000);
    }
}
