//! fio's value conversions (parse.c of fio 3.33), byte for byte where it matters:
//! `strtoll` prefixes, size suffixes with the inverted `KiB` meaning, time suffixes,
//! `%` and zone suffixes, and the per-direction split rules of `handle_option`.
//!
//! Units: sizes in bytes; times as fio stores them, in microseconds (callers convert
//! to nanoseconds).

use super::table::{OptDef, OptType};

/// fio marks a percentage by storing `-1 - N` (`size=50%` → `u64::MAX - 50`).
pub fn is_percent(v: u64) -> Option<u64> {
    let p = u64::MAX - v;
    if p <= 100 {
        Some(p)
    } else {
        None
    }
}

/// fio's `ZONE_BASE_VAL`: a zone count `Nz` is stored as `ZONE_BASE_VAL + N`.
pub const ZONE_BASE_VAL: u64 = (u64::MAX >> 1) + 1;

/// C `strtoll(str, &end, base)` for base 10 or 16: returns (value, consumed, overflow).
fn strtoll(s: &[u8], base: u32) -> (i64, usize, bool) {
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    if base == 16
        && i + 2 < s.len() + 1
        && i + 1 < s.len()
        && s[i] == b'0'
        && (s[i + 1] == b'x' || s[i + 1] == b'X')
        && i + 2 < s.len()
        && (s[i + 2] as char).is_ascii_hexdigit()
    {
        i += 2;
    }
    let start = i;
    let mut acc: u128 = 0;
    let mut overflow = false;
    while i < s.len() {
        let d = match (s[i] as char).to_digit(base) {
            Some(d) => d,
            None => break,
        };
        acc = acc * u128::from(base) + u128::from(d);
        if acc > i64::MAX as u128 + 1 {
            overflow = true;
            acc = i64::MAX as u128 + 1;
        }
        i += 1;
    }
    if i == start {
        return (0, 0, false);
    }
    let v = if neg {
        if acc > i64::MAX as u128 {
            i64::MIN
        } else {
            -(acc as i64)
        }
    } else if acc > i64::MAX as u128 {
        overflow = true;
        i64::MAX
    } else {
        acc as i64
    };
    (v, i, overflow)
}

pub fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

fn is_separator(c: u8) -> bool {
    matches!(c, b':' | b'-' | b',' | b'/')
}

/// `__get_mult_bytes`: the multiplier of a suffix text (already past the digits).
fn mult_bytes_suffix(p: &[u8], kb_base: u64, percent: &mut bool) -> u64 {
    let mut c: Vec<u8> = Vec::with_capacity(p.len());
    for &b in p {
        if is_separator(b) {
            break;
        }
        c.push(b.to_ascii_lowercase());
    }
    let swapped = match kb_base {
        1000 => 1024,
        1024 => 1000,
        other => other,
    };
    let (pow, mult) = if c.starts_with(b"pib") {
        (5, swapped)
    } else if c.starts_with(b"tib") {
        (4, swapped)
    } else if c.starts_with(b"gib") {
        (3, swapped)
    } else if c.starts_with(b"mib") {
        (2, swapped)
    } else if c.starts_with(b"kib") {
        (1, swapped)
    } else if c.starts_with(b"p") {
        (5, kb_base)
    } else if c.starts_with(b"t") {
        (4, kb_base)
    } else if c.starts_with(b"g") {
        (3, kb_base)
    } else if c.starts_with(b"m") {
        (2, kb_base)
    } else if c.starts_with(b"k") {
        (1, kb_base)
    } else if c.starts_with(b"%") {
        *percent = true;
        return 1;
    } else {
        (0, kb_base)
    };
    let mut ret: u64 = 1;
    for _ in 0..pow {
        ret = ret.wrapping_mul(mult);
    }
    ret
}

/// `get_mult_bytes`: skip a sign and digits, then read the suffix if it starts
/// with a letter or `%`.
fn mult_bytes(s: &[u8], kb_base: u64, percent: &mut bool) -> u64 {
    if s.len() < 2 {
        return mult_bytes_suffix(s, kb_base, percent);
    }
    let mut i = 0;
    let mut digit_seen = false;
    while i < s.len() {
        let c = s[i];
        if !c.is_ascii_digit() && ((c != b'+' && c != b'-') || digit_seen) {
            break;
        }
        digit_seen |= c.is_ascii_digit();
        i += 1;
    }
    match s.get(i) {
        Some(&c) if c.is_ascii_alphabetic() || c == b'%' => {
            mult_bytes_suffix(&s[i..], kb_base, percent)
        }
        _ => 1,
    }
}

/// `get_mult_time`: microseconds per unit of a time suffix.
fn mult_time(s: &[u8], is_seconds: bool) -> u64 {
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if !c.is_ascii_digit() && c != b'+' && c != b'-' {
            break;
        }
        i += 1;
    }
    match s.get(i) {
        Some(c) if c.is_ascii_alphabetic() => {}
        _ => return if is_seconds { 1_000_000 } else { 1 },
    }
    let c: Vec<u8> = s[i..].iter().map(|b| b.to_ascii_lowercase()).collect();
    if c.starts_with(b"us") {
        1
    } else if c.starts_with(b"ms") {
        1000
    } else if c == b"s" {
        1_000_000
    } else if c == b"m" {
        60 * 1_000_000
    } else if c == b"h" {
        3600 * 1_000_000
    } else if c == b"d" {
        24 * 3600 * 1_000_000
    } else {
        1
    }
}

/// `str_to_decimal`: `kilo` selects size suffixes, else time suffixes.
/// Returns the value as fio stores it in an `unsigned long long`.
pub fn str_to_decimal(s: &str, kilo: bool, kb_base: u64, is_seconds: bool) -> Option<u64> {
    let b = s.as_bytes();
    if b.is_empty() {
        return None;
    }
    let base = if s.contains("0x") || s.contains("0X") {
        16
    } else {
        10
    };
    let (v, consumed, overflow) = strtoll(b, base);
    if v == 0 && consumed == 0 {
        return None;
    }
    if overflow && v == i64::MAX {
        return None;
    }
    let v = v as u64;
    if kilo {
        let mut percent = false;
        let mult = mult_bytes(b, kb_base, &mut percent);
        if percent {
            Some(u64::MAX.wrapping_sub(v))
        } else {
            Some(v.wrapping_mul(mult))
        }
    } else {
        Some(v.wrapping_mul(mult_time(b, is_seconds)))
    }
}

/// A size as fio reads it (no zone or percent handling).
pub fn parse_size(s: &str, kb_base: u64) -> Option<u64> {
    str_to_decimal(s, true, kb_base, false)
}

/// `check_int`: `sscanf("%u")` (or `%x` when the text contains 0x): leading blanks,
/// optional sign, digits; trailing junk ignored.
pub fn check_int(s: &str) -> Option<i32> {
    if s.is_empty() {
        return None;
    }
    let hex = s.contains("0x") || s.contains("0X");
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && is_c_space(b[i]) {
        i += 1;
    }
    let mut neg = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        neg = b[i] == b'-';
        i += 1;
    }
    let base: u32 = if hex { 16 } else { 10 };
    if hex
        && b.get(i) == Some(&b'0')
        && matches!(b.get(i + 1), Some(b'x') | Some(b'X'))
        && b.get(i + 2).is_some_and(|c| c.is_ascii_hexdigit())
    {
        i += 2;
    }
    let start = i;
    let mut acc: u64 = 0;
    let mut overflow = false;
    while i < b.len() {
        let Some(d) = (b[i] as char).to_digit(base) else {
            break;
        };
        match acc
            .checked_mul(u64::from(base))
            .and_then(|v| v.checked_add(u64::from(d)))
        {
            Some(v) => acc = v,
            None => overflow = true,
        }
        i += 1;
    }
    if i == start {
        return None;
    }
    // strtoul: an overflow gives ULONG_MAX (even when negative); a sign negates.
    let v = if overflow {
        u64::MAX
    } else if neg {
        acc.wrapping_neg()
    } else {
        acc
    };
    // %u / %x store an unsigned int; fio reads the bits as an int.
    Some(v as u32 as i32)
}

/// `sscanf("%lf")`: the longest decimal float prefix (or inf/nan).
pub fn scan_float(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && is_c_space(b[i]) {
        i += 1;
    }
    let start = i;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let rest = s[i..].to_ascii_lowercase();
    if let Some(h) = hex_float(&rest) {
        let neg = b.get(start) == Some(&b'-');
        return Some(if neg { -h } else { h });
    }
    for word in ["infinity", "inf", "nan"] {
        if rest.starts_with(word) {
            let neg = b.get(start) == Some(&b'-');
            let v = if word == "nan" {
                f64::NAN
            } else {
                f64::INFINITY
            };
            return Some(if neg { -v } else { v });
        }
    }
    let mut digits = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
        digits += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    let mut end = i;
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let ds = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > ds {
            end = j;
        }
    }
    s[start..end].parse::<f64>().ok()
}

/// A C99 hex float (`0x1.8p3`), lower-cased, without sign.
fn hex_float(s: &str) -> Option<f64> {
    let t = s.strip_prefix("0x")?;
    let b = t.as_bytes();
    let mut i = 0;
    let mut mant = 0f64;
    let mut digits = 0;
    while i < b.len() && b[i].is_ascii_hexdigit() {
        mant = mant * 16.0 + f64::from((b[i] as char).to_digit(16)?);
        i += 1;
        digits += 1;
    }
    let mut scale = 0i32;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_hexdigit() {
            mant = mant * 16.0 + f64::from((b[i] as char).to_digit(16)?);
            scale -= 4;
            i += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    if i < b.len() && b[i] == b'p' {
        let mut j = i + 1;
        let mut eneg = false;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            eneg = b[j] == b'-';
            j += 1;
        }
        let ds = j;
        let mut e: i32 = 0;
        while j < b.len() && b[j].is_ascii_digit() {
            e = e.saturating_mul(10).saturating_add(i32::from(b[j] - b'0'));
            j += 1;
        }
        if j > ds {
            scale = scale.saturating_add(if eneg { -e } else { e });
        }
    }
    Some(mant * 2f64.powi(scale))
}

/// One converted piece of an option value, as fio's `__handle_option` stores it.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    /// A number (bytes, microseconds, or a bool/flag as 0/1).
    Num(u64),
    /// A range `lo-hi` (already ordered).
    Range(u64, u64),
    /// A float of a list.
    Float(f64),
    /// A word of a fixed list (or free text).
    Text(String),
}

/// Result of fio's generic conversion of one option value.
#[derive(Debug, Clone, Default)]
pub struct Converted {
    /// Values per direction for per-direction options (read, write, trim); for other
    /// options only `[0]` is meaningful. `None` = left at its previous value.
    pub per_dir: [Option<Piece>; 3],
    /// Floats of a float list, in order.
    pub floats: Vec<f64>,
    /// Messages fio prints while still accepting the value.
    pub warnings: Vec<String>,
    /// Every number converted, in order (what `fio --debug=parse` prints as `out=`).
    pub outs: Vec<String>,
    /// Numeric parts that passed their checks, in order (fio runs an option's
    /// callback once per part, so the last one wins).
    pub nums: Vec<u64>,
}

/// Converts `value` the way fio's `handle_option` does. `Err` carries the message fio
/// prints before "failed parsing" (may be empty).
pub fn convert(def: &OptDef, value: Option<&str>, kb_base: u64) -> Result<Converted, String> {
    let mut out = Converted::default();
    let Some(full) = value else {
        return match def.ty {
            OptType::StrSet => {
                out.outs.push("1".to_string());
                out.per_dir = [Some(Piece::Num(1)), None, None];
                if def.per_dir {
                    out.per_dir = [
                        Some(Piece::Num(1)),
                        Some(Piece::Num(1)),
                        Some(Piece::Num(1)),
                    ];
                }
                Ok(out)
            }
            OptType::Str if def.posvals.is_empty() => Ok(out),
            OptType::Deprecated => Err(format!("Option {} is deprecated", def.name)),
            OptType::SoftDeprecated => Err(format!("Option {} requires an argument", def.name)),
            OptType::Str => Err(String::new()),
            _ => Err(format!("Option {} requires an argument", def.name)),
        };
    };
    match def.ty {
        OptType::Str | OptType::StrUll | OptType::StrStore => {
            return convert_piece(def, full, kb_base, &mut out, true, false, 0).map(|_| out);
        }
        // Measured: a hard-deprecated option fails the job, a soft one only warns.
        OptType::Deprecated => return Err(format!("Option {} is deprecated", def.name)),
        OptType::SoftDeprecated => {
            out.warnings
                .push(format!("Option {} is deprecated", def.name));
            return Ok(out);
        }
        _ => {}
    }
    // The split loop of handle_option: every part is tried; the option is accepted
    // when any part converts (a failing first part is allowed, as in `bs=,8k`).
    let mut ok = false;
    let mut first_err = None;
    let mut rest: &str = full;
    let mut curr = 0usize;
    loop {
        let mut piece = rest;
        let mut next: Option<&str> = None;
        if def.ty == OptType::FloatList {
            if let Some(p) = rest.find(':') {
                next = Some(&rest[p + 1..]);
            }
        } else {
            let mut sep = rest.find(',');
            if let Some(p) = sep {
                if p + 1 == rest.len() {
                    // A trailing comma is cut; the (empty) part after it still runs.
                    piece = &rest[..p];
                    next = Some("");
                    sep = None;
                }
            }
            if next.is_none() {
                if sep.is_none() && def.ty != OptType::StrMulti && def.ty != OptType::Range {
                    sep = rest.find(':').or_else(|| rest.find('-'));
                }
                if let Some(p) = sep {
                    next = Some(&rest[p + 1..]);
                }
            }
        }
        let more = next.is_some();
        match convert_piece(def, piece, kb_base, &mut out, curr == 0, more, curr) {
            Ok(()) => ok = true,
            Err(e) => {
                if !e.is_empty() {
                    out.warnings.push(e.clone());
                }
                if first_err.is_none() {
                    first_err = Some(e);
                }
            }
        }
        match next {
            Some(n) => {
                rest = n;
                curr += 1;
                if curr > 4096 {
                    break;
                }
            }
            None => break,
        }
    }
    if ok {
        // Messages of failing parts are printed by fio but do not fail the option.
        Ok(out)
    } else {
        Err(first_err.unwrap_or_default())
    }
}

fn store(out: &mut Converted, def: &OptDef, v: Piece, first: bool, more: bool, curr: usize) {
    if first {
        out.per_dir[0] = Some(v.clone());
    }
    if !def.per_dir {
        return;
    }
    if curr == 1 {
        out.per_dir[1] = Some(v.clone());
    }
    if curr == 2 {
        out.per_dir[2] = Some(v.clone());
    }
    if !more {
        if curr < 1 {
            out.per_dir[1] = Some(v.clone());
        }
        if curr < 2 {
            out.per_dir[2] = Some(v);
        }
    }
}

/// `__handle_option` for one part.
fn convert_piece(
    def: &OptDef,
    ptr: &str,
    kb_base: u64,
    out: &mut Converted,
    first: bool,
    more: bool,
    curr: usize,
) -> Result<(), String> {
    match def.ty {
        OptType::Str | OptType::StrMulti | OptType::StrUll => {
            if def.posvals.is_empty() {
                out.per_dir[0] = Some(Piece::Text(ptr.to_string()));
                return Ok(());
            }
            if posval_match(def, ptr).is_some() {
                if first {
                    out.per_dir[0] = Some(Piece::Text(ptr.to_string()));
                }
                Ok(())
            } else {
                Err(String::new())
            }
        }
        OptType::StrStore => {
            if ptr.is_empty() {
                return Err(String::new());
            }
            out.per_dir[0] = Some(Piece::Text(ptr.to_string()));
            Ok(())
        }
        OptType::StrVal
        | OptType::StrValZone
        | OptType::StrValTime
        | OptType::Int
        | OptType::Ull => {
            let ull;
            if let Some(digits) = ptr.strip_suffix('z') {
                if def.ty != OptType::StrValZone {
                    return Err(format!("{}: 'z' suffix isn't applicable", def.name));
                }
                let (v, consumed, overflow) = strtoll(digits.as_bytes(), 10);
                if consumed == 0 || consumed != digits.len() || overflow {
                    return Err(format!("{}: unexpected zone value '{}'", def.name, ptr));
                }
                ull = ZONE_BASE_VAL.wrapping_add(u64::from(v as u32));
                store(out, def, Piece::Num(ull), first, more, curr);
                return Ok(());
            }
            let tmp = match ptr.find(',') {
                Some(p) => &ptr[..p],
                None => ptr,
            };
            // fio copies into a 128-byte buffer.
            let tmp = truncate_bytes(tmp, 127);
            let is_time = def.ty == OptType::StrValTime || def.is_time;
            ull = if is_time {
                str_to_decimal(tmp, false, kb_base, def.is_seconds)
            } else {
                str_to_decimal(tmp, true, kb_base, false)
            }
            .ok_or_else(String::new)?;
            out.outs.push(ull.to_string());
            range_check(def, ull)?;
            if !def.posvals.is_empty() {
                let allowed = def
                    .posvals
                    .iter()
                    .any(|p| p.parse::<u64>().ok() == Some(ull));
                if !allowed {
                    return Err(format!("fio: value {ull} not allowed"));
                }
            }
            out.nums.push(ull);
            store(out, def, Piece::Num(ull), first, more, curr);
            Ok(())
        }
        OptType::Bool | OptType::StrSet => {
            let il: i32 = if ptr.is_empty() && def.ty == OptType::StrSet {
                // An empty part after a trailing comma: check_int fails.
                return Err(String::new());
            } else {
                check_int(ptr).ok_or_else(String::new)?
            };
            out.outs.push(il.to_string());
            if let Some(max) = def.max {
                if max > 0 && i64::from(il) > max {
                    return Err(format!("max value out of range: {il} ({max} max)"));
                }
            }
            if let Some(min) = def.min {
                if min != 0 && i64::from(il) < min {
                    return Err(format!("min value out of range: {il} ({min} min)"));
                }
            }
            store(out, def, Piece::Num(il as u32 as u64), first, more, curr);
            Ok(())
        }
        OptType::Range => {
            let tmp = truncate_bytes(ptr, 127);
            let tmp = match tmp.find(',') {
                Some(p) => &tmp[..p],
                None => tmp,
            };
            let p = tmp
                .find('-')
                .or_else(|| tmp.find(':'))
                .ok_or_else(String::new)?;
            let lo = str_to_decimal(&tmp[..p], true, kb_base, false).ok_or_else(String::new)?;
            let hi = str_to_decimal(&tmp[p + 1..], true, kb_base, false).ok_or_else(String::new)?;
            // fio compares as signed longs.
            let (lo, hi) = if (lo as i64) > (hi as i64) {
                (hi, lo)
            } else {
                (lo, hi)
            };
            store(out, def, Piece::Range(lo, hi), first, more, curr);
            Ok(())
        }
        OptType::FloatList => {
            if first {
                out.floats.clear();
            }
            if curr >= def.max_len() {
                return Err(format!("the list exceeding max length {}", def.max_len()));
            }
            let uf = scan_float(ptr).ok_or_else(|| format!("not a floating point value: {ptr}"))?;
            if let Some(max) = def.max_fp {
                if uf > max {
                    return Err(format!("value out of range: {uf:.6} (range max: {max:.6})"));
                }
            }
            if let Some(min) = def.min_fp {
                if uf < min {
                    return Err(format!("value out of range: {uf:.6} (range min: {min:.6})"));
                }
            }
            out.floats.push(uf);
            out.outs.push(format!("{uf:.6}"));
            if first {
                out.per_dir[0] = Some(Piece::Float(uf));
            }
            Ok(())
        }
        OptType::Deprecated | OptType::SoftDeprecated => Ok(()),
    }
}

fn range_check(def: &OptDef, ull: u64) -> Result<(), String> {
    // Measured against fio 3.33: an INT option checks its range on the value cut to a
    // 32-bit int (`nice=-30` fails the min check, `dedupe_percentage=16pm` passes the
    // max check because the low 32 bits are 0); ULL and size options compare the
    // unsigned 64-bit value (`bs=-4k` passes min=1). A printed max of -1 means none.
    if def.name == "replay_align" && !ull.is_power_of_two() {
        return Err(format!("{}: must be a power-of-2", def.name));
    }
    let has_max = |m: i64| m != -1 && m != 0;
    if def.ty == OptType::Int {
        let v = i64::from(ull as u32 as i32);
        if let Some(max) = def.max.filter(|m| has_max(*m)) {
            if v > max {
                return Err(format!(
                    "{}: max value out of range: {} ({} max)",
                    def.name, v, max
                ));
            }
        }
        if let Some(min) = def.min.filter(|m| *m != 0) {
            if v < min {
                return Err(format!(
                    "{}: min value out of range: {} ({} min)",
                    def.name, v, min
                ));
            }
        }
        return Ok(());
    }
    if let Some(max) = def.max.filter(|m| has_max(*m)) {
        if ull > max as u64 {
            return Err(format!(
                "{}: max value out of range: {} ({} max)",
                def.name, ull, max
            ));
        }
    }
    if let Some(min) = def.min.filter(|m| *m > 0) {
        if ull < min as u64 {
            return Err(format!(
                "{}: min value out of range: {} ({} min)",
                def.name, ull as i64, min
            ));
        }
    }
    Ok(())
}

/// fio's pattern syntax (`verify_pattern`, `buffer_pattern`): a run of `"strings"`,
/// `0x` hex, 32-bit decimal numbers and `%o`, with no separators (blanks only after
/// a decimal number). Measured against fio 3.33.
pub fn pattern_ok(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'"' {
            match b[i + 1..].iter().position(|&x| x == b'"') {
                Some(p) => i += p + 2,
                None => return false,
            }
        } else if c == b'0' && matches!(b.get(i + 1), Some(b'x') | Some(b'X')) {
            let start = i + 2;
            let mut j = start;
            while j < b.len() && b[j].is_ascii_hexdigit() {
                j += 1;
            }
            if j == start {
                return false;
            }
            i = j;
        } else if c == b'%' {
            if b.get(i + 1) != Some(&b'o') {
                return false;
            }
            i += 2;
        } else if c == b'-' || c.is_ascii_digit() {
            let start = i;
            let mut j = if c == b'-' { i + 1 } else { i };
            let ds = j;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            if j == ds {
                return false;
            }
            if s[start..j].parse::<i32>().is_err() {
                return false;
            }
            i = j;
            while i < b.len() && b[i] == b' ' {
                i += 1;
            }
        } else {
            return false;
        }
    }
    true
}

/// fio's posval match: the word must equal a listed value, up to an optional `:suffix`.
pub fn posval_match<'a>(def: &'a OptDef, ptr: &str) -> Option<&'a str> {
    // fio's opt_len: the text up to the first ',' if any, else up to the first ':'.
    let prefix_len = ptr.find(',').or_else(|| ptr.find(':')).unwrap_or(ptr.len());
    let mut vals: Vec<&String> = def.posvals.iter().filter(|v| !v.is_empty()).collect();
    vals.sort_by_key(|v| std::cmp::Reverse(v.len()));
    for v in vals {
        let n = v.len().max(prefix_len);
        let a = &v.as_bytes()[..v.len().min(n)];
        let b = &ptr.as_bytes()[..ptr.len().min(n)];
        // strncmp over n bytes: equal iff both strings agree up to n (or both end).
        if a == b {
            return Some(v.as_str());
        }
    }
    None
}

pub fn truncate_bytes(s: &str, n: usize) -> &str {
    if s.len() <= n {
        return s;
    }
    let mut end = n;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(s: &str) -> Option<u64> {
        parse_size(s, 1024)
    }

    #[test]
    fn sizes_as_fio_reads_them() {
        // [V] fio's size suffixes, kb_base=1024.
        for (s, v) in [
            ("4096", 4096),
            ("4096b", 4096),
            ("4096B", 4096),
            ("0x1000", 4096),
            ("4k", 4096),
            ("4K", 4096),
            ("4kb", 4096),
            ("4KB", 4096),
            ("4kB", 4096),
            ("4ki", 4096),
            ("4KiB", 4000),
            ("4kib", 4000),
            ("1m", 1 << 20),
            ("1M", 1 << 20),
            ("1mi", 1 << 20),
            ("1MiB", 1_000_000),
            ("1g", 1 << 30),
            ("1GiB", 1_000_000_000),
            ("1t", 1 << 40),
            ("1.5m", 1),
            (" 1m", 1),
            ("4x", 4),
        ] {
            assert_eq!(size(s), Some(v), "{s}");
        }
        // kb_base=1000.
        for (s, v) in [
            ("4k", 4000),
            ("4ki", 4000),
            ("4KiB", 4096),
            ("1MiB", 1 << 20),
            ("1m", 1_000_000),
            ("1GiB", 1 << 30),
            ("1t", 1_000_000_000_000),
        ] {
            assert_eq!(parse_size(s, 1000), Some(v), "{s}");
        }
        assert_eq!(size("abc"), None);
        assert_eq!(size(""), None);
        assert_eq!(size("99999999999999999999"), None);
        assert_eq!(size("-4k"), Some((-4096i64) as u64));
        assert_eq!(size("50%").and_then(is_percent), Some(50));
    }

    #[test]
    fn times_as_fio_reads_them() {
        // [V] microseconds, seconds default for runtime-like options.
        let t = |s: &str, secs| str_to_decimal(s, false, 1024, secs);
        assert_eq!(t("10", true), Some(10_000_000));
        assert_eq!(t("500ms", true), Some(500_000));
        assert_eq!(t("250us", true), Some(250));
        assert_eq!(t("2m", true), Some(120_000_000));
        assert_eq!(t("1h", true), Some(3_600_000_000));
        assert_eq!(t("1d", true), Some(86_400_000_000));
        assert_eq!(t("10MS", true), Some(10_000));
        assert_eq!(t("100", false), Some(100));
        assert_eq!(t("1ms", false), Some(1000));
        assert_eq!(t("1.5s", true), Some(1_000_000));
        // startdelay=1s-3s: the low end reads "s-3s", an unknown suffix → 1 µs.
        assert_eq!(t("1s-3s", true), Some(1));
        assert_eq!(t("1-3", true), Some(1_000_000));
    }

    #[test]
    fn ints_and_floats() {
        assert_eq!(check_int("1"), Some(1));
        assert_eq!(check_int("1abc"), Some(1));
        assert_eq!(check_int("abc"), None);
        assert_eq!(check_int("-1"), Some(-1));
        assert_eq!(scan_float("99.5"), Some(99.5));
        assert_eq!(scan_float("1e2x"), Some(100.0));
        assert_eq!(scan_float("x"), None);
    }
}
