//! A preset's declared estimates: the values no public source gives, each with the
//! physical range parts of its class can have and the reason for that range. They are
//! what `flashpath calibrate` may move; a sourced value is not declared and stays fixed.
//!
//! They are declared in a table of their own at the end of the preset, one line each,
//! keyed by the dotted field:
//!
//! ```toml
//! [estimates]
//! "nand.t_read" = { range = ["45us", "90us"], why = "3D TLC array reads of 2016-2018 parts" }
//! "write_buffer.coalesce" = { choices = [false, true], why = "no public description" }
//! ```
//!
//! The values themselves stay plain where they are written (with the comment that
//! argues them), so `--set`, error lines and every reader of presets see one form. A
//! range is written in the value's own units; quantities (times, sizes, rates,
//! frequencies) are searched on a log scale, plain numbers on a linear one, and an
//! integer field only at integers. `choices` is for booleans and names.

use super::preset::PresetError;
use super::units;

/// One declared estimate.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// Dotted field, relative to the preset (`nand.t_read`).
    pub field: String,
    /// The preset's value, as written (`60us`, `8`, `true`).
    pub value: String,
    pub bounds: Bounds,
    pub why: String,
    /// `calibrated = "..."`: the value was fitted by `flashpath calibrate`, from what.
    pub calibrated: Option<String>,
    /// 1-based line of the declaration.
    pub line: usize,
}

impl Estimate {
    /// Whether the preset's value lies in its declared range (or is one of its
    /// choices). A value outside is not an error — the preset is the user's to set, as
    /// `--set` is — but the listing says so, and the shipped presets keep theirs inside.
    pub fn inside(&self) -> bool {
        match &self.bounds {
            Bounds::Range {
                lo_base,
                hi_base,
                value_base,
                ..
            } => (lo_base..=hi_base).contains(&value_base),
            Bounds::Choices(c) => c.contains(&self.value),
        }
    }
}

/// What an estimate may be.
#[derive(Debug, Clone, PartialEq)]
pub enum Bounds {
    /// `lo..=hi` in the value's family; `value`, `lo` and `hi` in its base unit (ns,
    /// bytes, bytes/s, Hz, or the number itself).
    Range {
        lo: String,
        hi: String,
        family: Family,
        value_base: f64,
        lo_base: f64,
        hi_base: f64,
        /// The field is an integer: only whole numbers.
        integer: bool,
    },
    /// One of these values (booleans, names), as written.
    Choices(Vec<String>),
}

/// The kind of quantity a value is, from how it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Time,
    Bytes,
    Rate,
    Frequency,
    Number,
}

impl Family {
    /// Quantities spanning orders of magnitude are searched by their logarithm.
    pub fn log_scale(self) -> bool {
        self != Family::Number
    }
    pub fn name(self) -> &'static str {
        match self {
            Family::Time => "time",
            Family::Bytes => "size",
            Family::Rate => "rate",
            Family::Frequency => "frequency",
            Family::Number => "number",
        }
    }
}

impl Bounds {
    /// The range or choices as a reader writes them: `45us .. 90us`, `false | true`.
    pub fn show(&self) -> String {
        match self {
            Bounds::Range { lo, hi, .. } => format!("{lo} .. {hi}"),
            Bounds::Choices(c) => c.join(" | "),
        }
    }
}

/// A TOML value as written in a preset (strings without their quotes).
fn shown(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The family and base-unit magnitude of a written value.
fn quantity(v: &toml::Value) -> Option<(Family, f64, bool)> {
    match v {
        toml::Value::Integer(i) => Some((Family::Number, *i as f64, true)),
        toml::Value::Float(f) => Some((Family::Number, *f, false)),
        toml::Value::String(s) => {
            let s = s.trim();
            if s.ends_with("/s") {
                units::parse_rate(s)
                    .ok()
                    .map(|r| (Family::Rate, r as f64, false))
            } else if s.ends_with("Hz") {
                units::parse_hz(s)
                    .ok()
                    .map(|r| (Family::Frequency, r as f64, false))
            } else if let Ok(ns) = units::parse_ns(s) {
                Some((Family::Time, ns as f64, false))
            } else {
                units::parse_bytes(s)
                    .ok()
                    .map(|b| (Family::Bytes, b as f64, false))
            }
        }
        _ => None,
    }
}

fn lookup<'a>(v: &'a toml::Value, dotted: &str) -> Option<&'a toml::Value> {
    dotted.split('.').try_fold(v, |cur, p| cur.get(p))
}

/// The line of `key = ...` inside the `[estimates]` table.
fn line_of_entry(text: &str, key: &str) -> Option<usize> {
    let mut inside = false;
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if l.starts_with('[') {
            inside = l == "[estimates]";
            continue;
        }
        if inside {
            let k = l.split('=').next().unwrap_or("").trim().trim_matches('"');
            if k == key {
                return Some(i + 1);
            }
        }
    }
    None
}

/// The estimates `text` declares, each checked against the preset: the field exists and
/// is a value, the range is in the value's family, or the choices are of the value's
/// type; every declaration says why. Errors name the line. Whether the value lies
/// inside is [`Estimate::inside`].
pub fn declared(text: &str, origin: &str) -> Result<Vec<Estimate>, PresetError> {
    let root: toml::Value = match toml::from_str(text) {
        Ok(v) => v,
        // The loader reports a preset that is not TOML, with its line.
        Err(_) => return Ok(Vec::new()),
    };
    let Some(table) = root.get("estimates") else {
        return Ok(Vec::new());
    };
    let err = |line: Option<usize>, field: &str, reason: String| PresetError {
        origin: origin.to_string(),
        line,
        field: field.to_string(),
        reason,
    };
    let table = table.as_table().ok_or_else(|| {
        err(
            crate::config::preset::line_of(text, "estimates"),
            "estimates",
            "is a table of dotted fields, each { range = [LOW, HIGH] or choices = [...], why = \"...\" }".into(),
        )
    })?;
    let mut out = Vec::new();
    for (field, decl) in table {
        let line = line_of_entry(text, field);
        let fail = |reason: String| err(line, &format!("estimates.\"{field}\""), reason);
        let value = match lookup(&root, field) {
            Some(toml::Value::Table(_)) => {
                return Err(fail(format!("'{field}' is a table: declare its fields")))
            }
            Some(v) if field.split('.').next() != Some("estimates") => v,
            _ => {
                return Err(fail(format!(
                    "'{field}' is not a field of this preset (a field taken out of a preset takes its declaration with it)"
                )))
            }
        };
        let decl = decl.as_table().ok_or_else(|| {
            fail("is { range = [LOW, HIGH] or choices = [...], why = \"...\" }".into())
        })?;
        if let Some(k) = decl
            .keys()
            .find(|k| !matches!(k.as_str(), "range" | "choices" | "why" | "calibrated"))
        {
            return Err(fail(format!(
                "unknown key '{k}' (range, choices, why, calibrated)"
            )));
        }
        let calibrated = match decl.get("calibrated") {
            None => None,
            Some(toml::Value::String(s)) => Some(s.trim().to_string()),
            Some(_) => {
                return Err(fail(
                    "calibrated is a string: what the value was fitted to".into(),
                ))
            }
        };
        let why = match decl.get("why") {
            Some(toml::Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
            _ => {
                return Err(fail(
                    "needs a why = \"...\": the reason for its range".into(),
                ))
            }
        };
        let bounds = match (decl.get("range"), decl.get("choices")) {
            (Some(r), None) => {
                let r = r
                    .as_array()
                    .filter(|a| a.len() == 2)
                    .ok_or_else(|| fail("range is [LOW, HIGH], in the value's own units".into()))?;
                let (family, value_base, integer) = quantity(value).ok_or_else(|| {
                    fail(format!(
                        "the value {} is not a number or a quantity with a unit: declare choices",
                        shown(value)
                    ))
                })?;
                let mut ends = Vec::new();
                for end in r {
                    match quantity(end) {
                        Some((f, b, _)) if f == family => ends.push(b),
                        _ => {
                            return Err(fail(format!(
                                "range end {} is not a {} as the value {} is",
                                shown(end),
                                family.name(),
                                shown(value)
                            )))
                        }
                    }
                }
                let (lo_base, hi_base) = (ends[0], ends[1]);
                if lo_base >= hi_base {
                    return Err(fail(format!(
                        "range [{}, {}] is empty: LOW must be below HIGH",
                        shown(&r[0]),
                        shown(&r[1])
                    )));
                }
                if family.log_scale() && lo_base <= 0.0 {
                    return Err(fail(format!(
                        "range starts at {}: a {} is searched on a log scale, so above zero",
                        shown(&r[0]),
                        family.name()
                    )));
                }
                Bounds::Range {
                    lo: shown(&r[0]),
                    hi: shown(&r[1]),
                    family,
                    value_base,
                    lo_base,
                    hi_base,
                    integer,
                }
            }
            (None, Some(c)) => {
                let c = c
                    .as_array()
                    .filter(|a| a.len() >= 2)
                    .ok_or_else(|| fail("choices is a list of at least two values".into()))?;
                if c.iter().any(|x| x.type_str() != value.type_str()) {
                    return Err(fail(format!(
                        "choices must be of the value's type ({})",
                        value.type_str()
                    )));
                }
                Bounds::Choices(c.iter().map(shown).collect())
            }
            _ => {
                return Err(fail(
                    "declares either range = [LOW, HIGH] or choices = [...]".into(),
                ))
            }
        };
        out.push(Estimate {
            field: field.clone(),
            value: shown(value),
            bounds,
            why,
            calibrated,
            line: line.unwrap_or(0),
        });
    }
    out.sort_by_key(|e| e.line);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"name = "x"
[nand]
t_read = "60us"
planes = 2
[write_buffer]
coalesce = false
rate = "400MB/s"

[estimates]
"nand.t_read" = { range = ["45us", "90us"], why = "3D TLC parts" }
"nand.planes" = { range = [1, 4], why = "dies of the period" }
"write_buffer.coalesce" = { choices = [false, true], why = "not published" }
"#;

    #[test]
    fn reads_ranges_and_choices_with_their_lines() {
        let e = declared(TEXT, "t").unwrap();
        assert_eq!(e.len(), 3);
        assert_eq!((e[0].field.as_str(), e[0].line), ("nand.t_read", 10));
        match &e[0].bounds {
            Bounds::Range {
                family,
                lo_base,
                hi_base,
                value_base,
                integer,
                ..
            } => {
                assert_eq!(*family, Family::Time);
                assert_eq!((*lo_base, *value_base, *hi_base), (45e3, 60e3, 90e3));
                assert!(!integer && family.log_scale());
            }
            b => panic!("{b:?}"),
        }
        assert!(matches!(
            e[1].bounds,
            Bounds::Range {
                family: Family::Number,
                integer: true,
                ..
            }
        ));
        assert_eq!(e[2].bounds.show(), "false | true");
        assert_eq!(e[0].bounds.show(), "45us .. 90us");
        assert!(declared("name = \"x\"\n", "t").unwrap().is_empty());
        assert!(e.iter().all(Estimate::inside));
    }

    #[test]
    fn a_value_outside_its_range_is_read_and_said_to_be_outside() {
        let text = "[nand]\nt_read = \"60us\"\nplanes = 2\n[estimates]\n\
                    \"nand.t_read\" = { range = [\"70us\", \"90us\"], why = \"w\" }\n\
                    \"nand.planes\" = { choices = [1, 4], why = \"w\" }\n";
        let e = declared(text, "p.toml").unwrap();
        assert_eq!(e.len(), 2);
        assert!(!e[0].inside() && !e[1].inside());
    }

    fn refusal(decl: &str) -> String {
        let text = format!("[nand]\nt_read = \"60us\"\nplanes = 2\n[estimates]\n{decl}\n");
        declared(&text, "p.toml").unwrap_err().to_string()
    }

    #[test]
    fn refuses_a_declaration_that_is_not_a_range_or_choices_of_the_value() {
        for (decl, says) in [
            (
                r#""nand.t_read" = { range = ["90us", "45us"], why = "w" }"#,
                "is empty",
            ),
            (
                r#""nand.t_read" = { range = ["4KiB", "8KiB"], why = "w" }"#,
                "is not a time",
            ),
            (
                r#""nand.t_read" = { range = ["0us", "90us"], why = "w" }"#,
                "log scale",
            ),
            (
                r#""nand.t_read" = { range = ["45us", "90us"] }"#,
                "needs a why",
            ),
            (
                r#""nand.t_read" = { range = ["45us", "90us"], why = "w", step = 1 }"#,
                "unknown key 'step'",
            ),
            (
                r#""nand.t_prog" = { range = ["45us", "90us"], why = "w" }"#,
                "not a field",
            ),
            (r#""nand" = { range = [1, 2], why = "w" }"#, "is a table"),
            (
                r#""nand.planes" = { choices = [1, "two"], why = "w" }"#,
                "value's type",
            ),
            (r#""nand.planes" = { why = "w" }"#, "either range"),
        ] {
            let e = refusal(decl);
            assert!(e.contains(says), "{decl}: {e}");
            assert!(e.starts_with("p.toml:5: estimates."), "{decl}: {e}");
        }
    }
}
