//! C-compatible number formatting used by every writer: fio's `num2str` and
//! printf-style `%f` (Rust rounds ties to even on the exact binary value, like glibc;
//! only NaN/inf need special spelling).

/// fio's `enum n2s_unit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum N2s {
    None,
    PerSec,
    Byte,
    Bit,
    BytePerSec,
    BitPerSec,
}

impl N2s {
    fn suffix(self) -> &'static str {
        match self {
            N2s::None => "",
            N2s::PerSec => "/s",
            N2s::Byte => "B",
            N2s::Bit => "bit",
            N2s::BytePerSec => "B/s",
            N2s::BitPerSec => "bit/s",
        }
    }
}

/// fio's `num2str`: at most `maxlen` digits (counting the dot), SI or IEC prefix.
pub fn num2str(num: u64, maxlen: u32, base: u64, pow2: bool, units: N2s) -> String {
    const SI: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    const IEC: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let prefix = if pow2 { &IEC } else { &SI };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    // fio's significant_figures is 1..=10; clamp absurd values instead of allocating.
    let maxlen = (maxlen as usize).min(64);
    let mut num = num;
    let mut base = base;
    let mut post_index = 0usize;
    while base > 1 {
        base /= thousand;
        post_index += 1;
    }
    if matches!(units, N2s::Bit | N2s::BitPerSec) {
        num = num.wrapping_mul(8);
    }
    let mut modulo: Option<u64> = None;
    let mut carry = false;
    while post_index < SI.len() {
        if num.to_string().len() <= maxlen {
            break;
        }
        let m = num % thousand;
        modulo = Some(m);
        num /= thousand;
        carry = m >= thousand / 2;
        post_index += 1;
    }
    if post_index >= SI.len() {
        post_index = 0;
    }
    let done = |n: u64, pi: usize| format!("{}{}{}", n, prefix[pi], units.suffix());
    let Some(modulo) = modulo else {
        return done(num, post_index);
    };
    let len = num.to_string().len();
    if maxlen as i64 - len as i64 <= 1 {
        if carry {
            num += 1;
        }
        return done(num, post_index);
    }
    let decimals = maxlen - len - 1;
    let frac = format!("{:.*}", decimals, modulo as f64 / thousand as f64);
    if frac.starts_with('1') {
        num += 1;
    }
    let digits = frac.get(2..).unwrap_or("");
    format!("{}.{}{}{}", num, digits, prefix[post_index], units.suffix())
}

/// printf `%.{prec}f`, including glibc's spelling of NaN and infinities.
pub fn cf(v: f64, prec: usize) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf" } else { "inf" }.into();
    }
    format!("{:.*}", prec, v)
}

/// printf `%{width}.{prec}f`.
pub fn cfw(v: f64, width: usize, prec: usize) -> String {
    format!("{:>width$}", cf(v, prec), width = width)
}

/// fio's `nsec_to_msec` / `nsec_to_usec` choice for a latency line: returns the unit
/// label and the scaled values.
pub fn scale_lat(min: u64, max: u64, mean: f64, dev: f64) -> (&'static str, u64, u64, f64, f64) {
    if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        (
            "msec",
            min / 1_000_000,
            max / 1_000_000,
            mean / 1_000_000.0,
            dev / 1_000_000.0,
        )
    } else if min > 2000 && max > 99_999 && dev > 1000.0 {
        ("usec", min / 1000, max / 1000, mean / 1000.0, dev / 1000.0)
    } else {
        ("nsec", min, max, mean, dev)
    }
}

/// C `ctime()` text (without the newline) of a Unix time in UTC, e.g.
/// `Sun Nov 22 09:30:31 2026` — what fio prints as JSON `time` and on each job's text
/// block (fio uses local time; pass a shifted time for another zone).
pub fn ctime_utc(unix_s: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = unix_s / 86_400;
    let secs = unix_s % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{} {} {:>2} {:02}:{:02}:{:02} {}",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        day,
        secs / 3600,
        secs % 3600 / 60,
        secs % 60,
        year
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num2str_matches_fio_samples() {
        // From tests/data/report/nbd_randrw.normal.txt (real fio 3.33 output).
        assert_eq!(num2str(36250, 4, 1, false, N2s::None), "36.2k");
        assert_eq!(
            num2str(148_624_458, 4, 1, true, N2s::BytePerSec),
            "142MiB/s"
        );
        assert_eq!(num2str(28_426_123, 6, 1, false, N2s::None), "28426k");
        assert_eq!(num2str(4096, 4, 1, true, N2s::Byte), "4096B");
        assert_eq!(num2str(33_554_432, 4, 1, true, N2s::Byte), "32.0MiB");
        assert_eq!(num2str(33_554_432, 4, 1, false, N2s::Byte), "33.6MB");
        assert_eq!(num2str(0, 4, 1, true, N2s::Byte), "0B");
        assert_eq!(num2str(u64::MAX, 4, 1, true, N2s::Byte), "16.0EiB");
    }

    #[test]
    fn ctime_matches_fio_samples() {
        // tests/data/report/nbd_randrw.jsonplus.json: timestamp 1795339782, UTC host.
        assert_eq!(ctime_utc(1_795_339_782), "Sun Nov 22 09:29:42 2026");
        assert_eq!(ctime_utc(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(ctime_utc(951_782_400), "Tue Feb 29 00:00:00 2000");
    }

    #[test]
    fn c_float_spelling() {
        assert_eq!(cf(f64::NAN, 2), "nan");
        assert_eq!(cf(-f64::NAN, 2), "-nan");
        assert_eq!(cfw(7.685, 5, 2), " 7.68");
        assert_eq!(cf(0.25, 1), "0.2");
    }
}
