//! The fields calibration may move: a preset's declared estimates, each mapped onto
//! `u` in [0, 1] over its declared range (on a log scale for quantities, linear for
//! plain numbers, at integers only for integer fields), and written back in the units
//! the preset uses.

use flashpath_core::config::estimates::{Bounds, Estimate, Family};

/// One declared estimate of the device's or the host's preset.
#[derive(Clone, Debug)]
pub struct Param {
    /// `device.nand.t_read`, as `--set` takes it.
    pub key: String,
    pub est: Estimate,
}

impl Param {
    pub fn new(scope: &str, est: Estimate) -> Param {
        Param {
            key: format!("{scope}.{}", est.field),
            est,
        }
    }

    /// Whether it is a range (fitted continuously); else a list of choices.
    pub fn is_range(&self) -> bool {
        matches!(self.est.bounds, Bounds::Range { .. })
    }

    pub fn choices(&self) -> &[String] {
        match &self.est.bounds {
            Bounds::Choices(c) => c,
            Bounds::Range { .. } => &[],
        }
    }

    /// The value at `u` (clamped to [0, 1]) in the base unit.
    pub fn base_at(&self, u: f64) -> f64 {
        let Bounds::Range {
            family,
            lo_base,
            hi_base,
            integer,
            ..
        } = &self.est.bounds
        else {
            return f64::NAN;
        };
        let u = u.clamp(0.0, 1.0);
        let x = if family.log_scale() {
            lo_base * (hi_base / lo_base).powf(u)
        } else {
            lo_base + (hi_base - lo_base) * u
        };
        if *integer {
            x.round().clamp(*lo_base, *hi_base)
        } else {
            x
        }
    }

    /// Where the preset's own value lies, in [0, 1] (clamped when it is outside).
    pub fn u_of_preset(&self) -> f64 {
        match &self.est.bounds {
            Bounds::Range { value_base, .. } => self.u_of(*value_base),
            Bounds::Choices(_) => 0.0,
        }
    }

    pub fn u_of(&self, base: f64) -> f64 {
        let Bounds::Range {
            family,
            lo_base,
            hi_base,
            ..
        } = &self.est.bounds
        else {
            return 0.0;
        };
        let u = if family.log_scale() {
            (base / lo_base).ln() / (hi_base / lo_base).ln()
        } else {
            (base - lo_base) / (hi_base - lo_base)
        };
        if u.is_finite() {
            u.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    /// The value at `u` as the preset writes it (`72.4us`, `3`, `1.5`).
    pub fn written_at(&self, u: f64) -> String {
        let Bounds::Range {
            family, integer, ..
        } = &self.est.bounds
        else {
            return String::new();
        };
        let x = self.base_at(u);
        if *family == Family::Bytes {
            // A size keeps the alignment its range and value share (4 KiB at most):
            // sizes of buffers and capacities are multiples of a sector or a page.
            let g = self.granule();
            return written(Family::Bytes, true, ((sig(x, 4) / g).round() * g).max(g));
        }
        written(*family, *integer, x)
    }

    /// The largest power of two, up to 4096, that divides both ends of a size's range
    /// and its value.
    fn granule(&self) -> f64 {
        let Bounds::Range {
            lo_base,
            hi_base,
            value_base,
            ..
        } = &self.est.bounds
        else {
            return 1.0;
        };
        let mut g = 4096u64;
        while g > 1
            && [lo_base, hi_base, value_base]
                .iter()
                .any(|&&b| !(b as u64).is_multiple_of(g))
        {
            g /= 2;
        }
        g as f64
    }
}

/// Rounds to `digits` significant digits.
fn sig(x: f64, digits: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let p = digits - 1 - x.abs().log10().floor() as i32;
    let m = 10f64.powi(p);
    (x * m).round() / m
}

/// A number without trailing zeros (`72.4`, `3`).
fn plain(x: f64) -> String {
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// A base-unit value written as a preset writes it, to 4 significant digits (a
/// calibration does not pin a value closer than that).
pub fn written(family: Family, integer: bool, base: f64) -> String {
    let x = sig(base, 4);
    let scaled = |units: &[(f64, &str)]| {
        let (m, u) = units
            .iter()
            .find(|(m, _)| x >= *m)
            .copied()
            .unwrap_or(*units.last().expect("units"));
        format!("{}{u}", plain(x / m))
    };
    match family {
        Family::Time => scaled(&[(1e9, "s"), (1e6, "ms"), (1e3, "us"), (1.0, "ns")]),
        Family::Frequency => scaled(&[(1e9, "GHz"), (1e6, "MHz"), (1e3, "kHz"), (1.0, "Hz")]),
        Family::Rate => {
            let r = scaled(&[(1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1.0, "B")]);
            format!("{r}/s")
        }
        Family::Bytes => {
            let b = if integer { base.round() } else { x.round() } as u64;
            for (m, u) in [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")] {
                if b >= m && b.is_multiple_of(m) {
                    return format!("{}{u}", b / m);
                }
            }
            format!("{b}B")
        }
        Family::Number if integer => format!("{}", x.round() as i64),
        Family::Number => {
            let s = plain(x);
            if s.contains('.') {
                s
            } else {
                format!("{s}.0")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flashpath_core::config::units;

    fn param(text: &str) -> Param {
        let list = flashpath_core::config::estimates::declared(text, "t").unwrap();
        Param::new("device", list[0].clone())
    }

    #[test]
    fn a_time_range_is_searched_on_a_log_scale_and_written_back_in_its_units() {
        let p = param(
            "[nand]\nt_read = \"60us\"\n[estimates]\n\"nand.t_read\" = { range = [\"25us\", \"100us\"], why = \"x\" }\n",
        );
        assert_eq!(p.key, "device.nand.t_read");
        assert_eq!(p.base_at(0.0), 25_000.0);
        assert!((p.base_at(0.5) - 50_000.0).abs() < 1e-6);
        assert!((p.u_of_preset() - (60.0f64 / 25.0).ln() / 4f64.ln()).abs() < 1e-12);
        assert_eq!(p.written_at(1.0), "100us");
        let w = p.written_at(0.3);
        let back = units::parse_ns(&w).unwrap() as f64;
        assert!((back - p.base_at(0.3)).abs() / back < 1e-3, "{w}");
        assert_eq!(p.written_at(2.0), "100us", "clamped");
    }

    #[test]
    fn integers_and_plain_numbers() {
        let p = param("[g]\nn = 2\n[estimates]\n\"g.n\" = { range = [1, 4], why = \"x\" }\n");
        assert_eq!(p.written_at(0.4), "2");
        assert_eq!(p.base_at(0.9), 4.0);
        let p = param("[g]\nf = 0.5\n[estimates]\n\"g.f\" = { range = [0.1, 0.9], why = \"x\" }\n");
        assert_eq!(p.written_at(0.5), "0.5");
        assert_eq!(p.written_at(1.0), "0.9");
    }

    #[test]
    fn written_values_parse_back() {
        assert_eq!(written(Family::Bytes, true, 65536.0), "64KiB");
        assert_eq!(written(Family::Bytes, true, 31268536320.0), "29820MiB");
        assert_eq!(written(Family::Rate, false, 123_456_789.0), "123.5MB/s");
        assert_eq!(units::parse_rate("123.5MB/s").unwrap(), 123_500_000);
        assert_eq!(written(Family::Frequency, false, 52e6), "52MHz");
        assert_eq!(written(Family::Time, false, 1_234_567.0), "1.235ms");
        assert_eq!(written(Family::Number, false, 3.0), "3.0");
        // A size keeps the alignment its range and value share.
        let p = param("[w]\nsize = \"512KiB\"\n[estimates]\n\"w.size\" = { range = [\"128KiB\", \"1MiB\"], why = \"x\" }\n");
        assert_eq!(p.written_at(0.0), "128KiB");
        let b = units::parse_bytes(&p.written_at(0.37)).unwrap();
        assert_eq!(b % 4096, 0, "{}", p.written_at(0.37));
        let p = param("[g]\ncapacity = \"31268536320B\"\n[estimates]\n\"g.capacity\" = { range = [\"29527900160B\", \"32GB\"], why = \"x\" }\n");
        assert_eq!(units::parse_bytes(&p.written_at(0.0)).unwrap() % 512, 0);
    }
}
