//! NAND array timing that varies by mechanism: the page type a row lands on (lower,
//! upper, …) and read retry. Shared by the FTLs: they ask for a row's tR and tPROG and
//! for the retry steps of an array read, and book the time themselves.
//!
//! **Page type.** A multi-level cell stores its bits in pages programmed and sensed
//! separately: an MLC word line holds a lower and an upper page, a TLC one a lower, a
//! centre and an upper page. Lower pages need fewer sensing steps and program faster.
//! The FTL fills a block row by row in page order, so the page type of a row follows
//! from its index in the block:
//! - MLC: Linux's `nand_pairing_dist3_get_info` (drivers/mtd/nand/raw/nand_base.c):
//!   page 0 and every odd page are lower pages, every even page from 2 on an upper page
//!   (paired with lower page p − 3): L L U L U L U …
//! - TLC (3D, one-shot program of a word line): the three pages of a word line are
//!   consecutive, lower, centre, upper (estimate: the page order of one-shot 3D TLC is
//!   not in a datasheet read here; see docs/dev/issue21-sources.md §1.2).
//!
//! A preset gives the profile of a measured chip (`[page_types] read_profile`,
//! `prog_profile`: one time per page type) and its own calibrated mean (`nand.t_read`,
//! `nand.t_prog`); the model scales the profile so that its mean over a block's rows
//! is the preset's mean. Calibrations made on the mean stay true; the spread is the
//! chip's.
//!
//! **Read retry.** An array read whose data fails ECC is read again with shifted read
//! reference voltages, step by step through the chip's retry table (Linux's raw NAND
//! core: `nand_do_read_ops` and the vendors' `setup_read_retry`; Park et al., ASPLOS
//! 2021). Each step costs another tR and another transfer to the controller's ECC.
//! How many steps a page needs grows with its block's program/erase cycles and with
//! the age of its data (Ye et al., ASPLOS 2024: over 3 retries on average at 3K P/E
//! with vendors' tables; Cai et al., HPCA 2015, and Luo et al., SIGMETRICS 2018:
//! retention errors grow with time since programming, in 3D NAND within hours). The
//! model: the mean number of steps is `mean_steps` at the reference wear
//! (`ref_pe_cycles`, `ref_age`), proportional to P/E cycles and to the logarithm of
//! the data's age (retention loss is close to linear in log time), in hours:
//! `m = mean_steps · pe / ref_pe · ln(1 + age/1h) / ln(1 + ref_age/1h)`. A page needs
//! `k` steps with the geometric law of mean `m` (P(k ≥ j) = qʲ, q = m / (1 + m)),
//! at most `max_steps` (the table's length). Which pages are the weak ones is fixed per
//! page and per program (a hash of the run seed, the page and its block's erase count),
//! so reading a page again at the same age takes the same steps, and the run is
//! reproducible. The shape (linear in P/E, log in time, geometric) is an estimate;
//! the anchor and the table lengths are sourced in the presets.
//!
//! **Wear** (`[wear]`): the device's age, which no preset fixes: `pe_cycles` every block
//! has had before the run, and `data_age`, how old the data already on the device is
//! when the reported jobs start. On a fresh device (0, 0 s) the data found there needs
//! no retries; blocks erased during the run gain P/E cycles like any other.

use crate::config::{ns_field, ConfigError};
use crate::engine::SimTime;
use serde::Deserialize;

/// `[page_types]` of a preset.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawPageTypes {
    /// Whether rows pay their page type's time (false: every row pays the mean).
    pub enabled: Option<bool>,
    /// "slc", "mlc" or "tlc": the cell of the blocks host data is written to.
    pub cell: Option<String>,
    /// tR of each page type of the measured chip, lower page first (scaled to `nand.t_read`).
    pub read_profile: Option<Vec<String>>,
    /// tPROG of each page type, lower first (scaled to `nand.t_prog`); absent: one time
    /// for every type (one-shot programming of a word line).
    pub prog_profile: Option<Vec<String>>,
}

/// `[read_retry]` of a preset.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawReadRetry {
    pub enabled: Option<bool>,
    /// Steps in the chip's retry table (the most a read can take).
    pub max_steps: Option<u32>,
    /// Mean steps per array read at the reference wear.
    pub mean_steps: Option<f64>,
    pub ref_pe_cycles: Option<u32>,
    pub ref_age: Option<String>,
}

/// `[wear]` of a preset: the state of the device at the start of the run.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawWear {
    /// Program/erase cycles every block has had before the run.
    pub pe_cycles: Option<u32>,
    /// Age of the data on the device when the reported jobs start, e.g. "30d".
    pub data_age: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    Slc,
    Mlc,
    Tlc,
}

impl Cell {
    fn name(self) -> &'static str {
        match self {
            Cell::Slc => "slc",
            Cell::Mlc => "mlc",
            Cell::Tlc => "tlc",
        }
    }
    fn types(self) -> usize {
        self.slots().len()
    }
    /// The page types this cell has, as indices of [`PAGE_TYPES`], lower first (the
    /// order of a preset's profile).
    fn slots(self) -> &'static [usize] {
        match self {
            Cell::Slc => &[0],
            Cell::Mlc => &[0, 2],
            Cell::Tlc => &[0, 1, 2],
        }
    }
}

/// The names of the page types, as `NandTiming::page_type` numbers them (an MLC word
/// line has a lower and an upper page, a TLC one all three; SLC pages count as lower).
pub const PAGE_TYPES: [&str; 3] = ["lower", "centre", "upper"];

/// The validated timing model (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NandTiming {
    pub cell: Cell,
    /// tR and tPROG of each page type (`PAGE_TYPES`) relative to the preset's mean
    /// (`nand.t_read`, `nand.t_prog`), in 1/65536ths: the mean stays the one source of
    /// the level (a `--set` or a test that changes it moves every type).
    pub read_q16: [u32; 3],
    pub prog_q16: [u32; 3],
    /// 0: no read retry.
    pub retry_max_steps: u32,
    /// Mean steps at the reference wear, in thousandths.
    pub retry_mean_milli: u32,
    pub retry_ref_pe: u32,
    pub retry_ref_age_ns: u64,
    pub wear_pe_cycles: u32,
    pub wear_data_age_ns: u64,
}

const HOUR_NS: f64 = 3.6e12;
/// 1.0 in the 1/65536ths of `read_q16`/`prog_q16`.
const ONE: u32 = 1 << 16;

impl NandTiming {
    /// Uniform timing: every row pays the mean, no retries (tests, presets without
    /// `[page_types]`).
    pub fn uniform() -> NandTiming {
        NandTiming {
            cell: Cell::Slc,
            read_q16: [ONE; 3],
            prog_q16: [ONE; 3],
            retry_max_steps: 0,
            retry_mean_milli: 0,
            retry_ref_pe: 1,
            retry_ref_age_ns: 1,
            wear_pe_cycles: 0,
            wear_data_age_ns: 0,
        }
    }

    /// The page type of row `row` of a block: an index of `PAGE_TYPES`.
    #[inline]
    pub fn page_type(&self, row: u32) -> usize {
        match self.cell {
            Cell::Slc => 0,
            // Linux nand_pairing_dist3_get_info: page 0 and odd pages are lower pages.
            Cell::Mlc => 2 * (row != 0 && row.is_multiple_of(2)) as usize,
            Cell::Tlc => (row % 3) as usize,
        }
    }

    /// tR of row `row` of a block, the device's mean tR being `mean`.
    #[inline]
    pub fn t_read_row(&self, row: u32, mean: u64) -> u64 {
        (mean * self.read_q16[self.page_type(row)] as u64) >> 16
    }

    /// tPROG of row `row` of a block, the device's mean tPROG being `mean`.
    #[inline]
    pub fn t_prog_row(&self, row: u32, mean: u64) -> u64 {
        (mean * self.prog_q16[self.page_type(row)] as u64) >> 16
    }

    /// Whether any read can need a retry on this device as it is (a fresh device, or
    /// retry off, needs none: the read path skips the computation).
    #[inline]
    pub fn retry_possible(&self) -> bool {
        self.retry_max_steps > 0 && self.retry_mean_milli > 0
    }

    /// Mean retry steps of a read of a block with `pe` P/E cycles whose data is
    /// `age_ns` old.
    pub fn mean_steps(&self, pe: u32, age_ns: u64) -> f64 {
        if !self.retry_possible() || pe == 0 || age_ns == 0 {
            return 0.0;
        }
        let wear = pe as f64 / self.retry_ref_pe as f64;
        let time = (1.0 + age_ns as f64 / HOUR_NS).ln()
            / (1.0 + self.retry_ref_age_ns as f64 / HOUR_NS).ln();
        self.retry_mean_milli as f64 / 1000.0 * wear * time
    }

    /// Retry steps of an array read of `page` (a global page id) in a block erased
    /// `erases` times during the run (its P/E cycles are those and `[wear]`'s; the count
    /// names the block's current program), its data `age_ns` old; `seed` is the run's.
    pub fn retry_steps(&self, seed: u64, page: u32, erases: u32, age_ns: u64) -> u32 {
        let m = self.mean_steps(self.wear_pe_cycles + erases, age_ns);
        if m <= 0.0 {
            return 0;
        }
        let q = m / (1.0 + m);
        // 1 - u in (0, 1]: the page's own weakness for this program of its block.
        let h = mix(seed ^ mix(((page as u64) << 32) | erases as u64));
        let v = ((h >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64);
        let k = (v.ln() / q.ln()).floor();
        if k >= self.retry_max_steps as f64 {
            self.retry_max_steps
        } else {
            k as u32
        }
    }
}

/// SplitMix64's finaliser: a well-mixed 64-bit hash.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The age of each block's data: when its first row was programmed, in ns of simulated
/// time (negative: before the run began).
#[derive(Debug, Clone)]
pub struct BlockAges {
    born: Vec<i64>,
}

impl BlockAges {
    pub fn new(blocks: u32) -> BlockAges {
        BlockAges {
            born: vec![0; blocks as usize],
        }
    }
    /// Block `block` starts to be programmed at `now`.
    #[inline]
    pub fn programmed(&mut self, block: u32, now: SimTime) {
        self.born[block as usize] = now as i64;
    }
    /// The data on the device at `now` is `age_ns` old (the reported jobs start): every
    /// block's birth moves back by `age_ns`.
    pub fn age_all(&mut self, age_ns: u64) {
        for b in &mut self.born {
            *b -= age_ns as i64;
        }
    }
    #[inline]
    pub fn age(&self, block: u32, now: SimTime) -> u64 {
        (now as i64 - self.born[block as usize]).max(0) as u64
    }
}

/// Validates `[page_types]`, `[read_retry]` and `[wear]` against the mean times of
/// `nand` (all three optional: absent, the device has uniform timing and no retry).
pub fn validate(
    pt: Option<&RawPageTypes>,
    rr: Option<&RawReadRetry>,
    wear: Option<&RawWear>,
    pages_per_block: u32,
) -> Result<NandTiming, ConfigError> {
    let mut t = NandTiming::uniform();
    if let Some(pt) = pt {
        let cell = match pt.cell.as_deref() {
            Some("slc") => Cell::Slc,
            Some("mlc") => Cell::Mlc,
            Some("tlc") => Cell::Tlc,
            Some(o) => {
                return Err(ConfigError::new(
                    "page_types.cell",
                    format!("'{o}' is not \"slc\", \"mlc\" or \"tlc\""),
                ))
            }
            None => return Err(ConfigError::new("page_types.cell", "is missing")),
        };
        let n = cell.types();
        let profile =
            |v: &Option<Vec<String>>, field: &str| -> Result<Option<Vec<u64>>, ConfigError> {
                let Some(v) = v else { return Ok(None) };
                if v.len() != n {
                    return Err(ConfigError::new(
                        field,
                        format!("has {} times; {} has {n} page types", v.len(), cell.name()),
                    ));
                }
                v.iter()
                    .map(|s| {
                        let ns = ns_field(field, s)?;
                        if ns == 0 {
                            return Err(ConfigError::new(
                                field,
                                format!("{s} is not a time above 0"),
                            ));
                        }
                        Ok(ns)
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(Some)
            };
        let read = profile(&pt.read_profile, "page_types.read_profile")?;
        let prog = profile(&pt.prog_profile, "page_types.prog_profile")?;
        if read.is_none() && cell != Cell::Slc {
            return Err(ConfigError::new("page_types.read_profile", "is missing"));
        }
        if pt.enabled.unwrap_or(true) {
            t.cell = cell;
            if let Some(p) = read {
                t.read_q16 = relative(&t, &p, pages_per_block);
            }
            if let Some(p) = prog {
                t.prog_q16 = relative(&t, &p, pages_per_block);
            }
        }
    }
    if let Some(rr) = rr {
        let max_steps = rr
            .max_steps
            .ok_or_else(|| ConfigError::new("read_retry.max_steps", "is missing"))?;
        if max_steps > 64 {
            return Err(ConfigError::new(
                "read_retry.max_steps",
                format!("{max_steps} is more than any retry table (64)"),
            ));
        }
        let mean = rr
            .mean_steps
            .ok_or_else(|| ConfigError::new("read_retry.mean_steps", "is missing"))?;
        if !(0.0..=64.0).contains(&mean) {
            return Err(ConfigError::new(
                "read_retry.mean_steps",
                format!("{mean} is outside 0..64"),
            ));
        }
        let ref_pe = rr
            .ref_pe_cycles
            .ok_or_else(|| ConfigError::new("read_retry.ref_pe_cycles", "is missing"))?;
        if ref_pe == 0 {
            return Err(ConfigError::new(
                "read_retry.ref_pe_cycles",
                "must be at least 1",
            ));
        }
        let age = rr
            .ref_age
            .as_deref()
            .ok_or_else(|| ConfigError::new("read_retry.ref_age", "is missing"))?;
        let ref_age = ns_field("read_retry.ref_age", age)?;
        if ref_age == 0 {
            return Err(ConfigError::new("read_retry.ref_age", "must be above 0"));
        }
        if rr.enabled.unwrap_or(true) {
            t.retry_max_steps = max_steps;
            t.retry_mean_milli = (mean * 1000.0).round() as u32;
            t.retry_ref_pe = ref_pe;
            t.retry_ref_age_ns = ref_age;
        }
    }
    if let Some(w) = wear {
        t.wear_pe_cycles = w.pe_cycles.unwrap_or(0);
        if t.wear_pe_cycles > 1_000_000 {
            return Err(ConfigError::new(
                "wear.pe_cycles",
                format!("{} is more than any NAND endures", t.wear_pe_cycles),
            ));
        }
        t.wear_data_age_ns = match &w.data_age {
            Some(s) => ns_field("wear.data_age", s)?,
            None => 0,
        };
    }
    Ok(t)
}

/// Each type's time in `profile` relative to the profile's mean over the rows of a
/// block (with `t`'s page-type layout), in 1/65536ths.
fn relative(t: &NandTiming, profile: &[u64], rows: u32) -> [u32; 3] {
    let mut by_type = [0u64; 3];
    for (&slot, &p) in t.cell.slots().iter().zip(profile) {
        by_type[slot] = p;
    }
    let sum: f64 = (0..rows).map(|r| by_type[t.page_type(r)] as f64).sum();
    let k = rows as f64 / sum;
    let mut out = [ONE; 3];
    for &slot in t.cell.slots() {
        out[slot] = (by_type[slot] as f64 * k * ONE as f64).round() as u32;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROWS: u32 = 256;

    fn mlc() -> NandTiming {
        let pt = RawPageTypes {
            enabled: None,
            cell: Some("mlc".into()),
            read_profile: Some(vec!["48us".into(), "64us".into()]),
            prog_profile: Some(vec!["850us".into(), "2300us".into()]),
        };
        validate(Some(&pt), None, None, ROWS).unwrap()
    }

    #[test]
    fn mlc_rows_follow_linux_dist3_pairing() {
        let t = mlc();
        let types: Vec<usize> = (0..8).map(|r| t.page_type(r)).collect();
        assert_eq!(types, [0, 0, 2, 0, 2, 0, 2, 0]);
    }

    #[test]
    fn the_profile_is_scaled_to_the_preset_mean_over_a_block() {
        let t = mlc();
        // 129 lower rows (page 0 and the odd pages), 127 upper rows.
        let read: u64 = (0..ROWS).map(|r| t.t_read_row(r, 56_000)).sum();
        assert!((read as f64 / 256.0 - 56_000.0).abs() < 2.0, "{read}");
        let prog: u64 = (0..ROWS).map(|r| t.t_prog_row(r, 1_575_000)).sum();
        assert!((prog as f64 / 256.0 - 1_575_000.0).abs() < 30.0, "{prog}");
        // The ratio is the measured chip's.
        let r = t.t_read_row(0, 56_000) as f64 / t.t_read_row(2, 56_000) as f64;
        assert!((r - 0.75).abs() < 1e-4, "{r}");
    }

    #[test]
    fn disabled_page_types_give_the_mean_everywhere() {
        let pt = RawPageTypes {
            enabled: Some(false),
            cell: Some("tlc".into()),
            read_profile: Some(vec!["56.5us".into(), "77.5us".into(), "106us".into()]),
            prog_profile: None,
        };
        let t = validate(Some(&pt), None, None, ROWS).unwrap();
        assert!((0..9)
            .all(|r| t.t_read_row(r, 56_000) == 56_000 && t.t_prog_row(r, 1_575_000) == 1_575_000));
    }

    #[test]
    fn a_profile_of_the_wrong_length_is_refused() {
        let pt = RawPageTypes {
            enabled: None,
            cell: Some("tlc".into()),
            read_profile: Some(vec!["48us".into(), "64us".into()]),
            prog_profile: None,
        };
        let e = validate(Some(&pt), None, None, ROWS).unwrap_err();
        assert!(e.to_string().contains("page_types.read_profile"), "{e}");
    }

    fn retry(pe: u32) -> NandTiming {
        let rr = RawReadRetry {
            enabled: None,
            max_steps: Some(8),
            mean_steps: Some(3.0),
            ref_pe_cycles: Some(3000),
            ref_age: Some("365d".into()),
        };
        let w = RawWear {
            pe_cycles: Some(pe),
            data_age: Some("365d".into()),
        };
        validate(None, Some(&rr), Some(&w), ROWS).unwrap()
    }

    #[test]
    fn mean_steps_hit_the_anchor_and_vanish_when_fresh() {
        let t = retry(3000);
        let year = 365 * 24 * 3600 * 1_000_000_000u64;
        assert!((t.mean_steps(3000, year) - 3.0).abs() < 1e-9);
        assert_eq!(t.mean_steps(0, year), 0.0);
        assert_eq!(t.mean_steps(3000, 0), 0.0);
        assert!(t.mean_steps(1500, year) < t.mean_steps(3000, year));
        assert!(t.mean_steps(3000, year / 365) < t.mean_steps(3000, year));
    }

    /// Over many pages the steps follow the geometric law (mean m, capped), and a page
    /// read twice in the same state takes the same steps.
    #[test]
    fn steps_are_geometric_per_page_and_repeatable() {
        let pe = 300; // m = 0.3
        let t = retry(pe);
        let year = 365 * 24 * 3600 * 1_000_000_000u64;
        let m = t.mean_steps(pe, year);
        let n = 200_000u32;
        let mut hist = [0u32; 9];
        for p in 0..n {
            let k = t.retry_steps(7, p, 0, year);
            assert_eq!(k, t.retry_steps(7, p, 0, year));
            hist[k as usize] += 1;
        }
        let q = m / (1.0 + m);
        for (j, &h) in hist.iter().enumerate().take(4) {
            let expect = (1.0 - q) * q.powi(j as i32) * n as f64;
            assert!(
                (h as f64 - expect).abs() < 5.0 * expect.sqrt() + 5.0,
                "{j}: {h} vs {expect}"
            );
        }
        // Another program of the block draws other weak pages.
        let moved = (0..1000)
            .filter(|&p| t.retry_steps(7, p, 0, year) != t.retry_steps(7, p, 1, year))
            .count();
        assert!(moved > 100, "{moved}");
    }

    #[test]
    fn steps_stop_at_the_table_length() {
        let t = retry(100_000);
        let year = 365 * 24 * 3600 * 1_000_000_000u64;
        let worst = (0..100_000).map(|p| t.retry_steps(1, p, 0, year)).max();
        assert_eq!(worst, Some(8));
    }
}
