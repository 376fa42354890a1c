//! Loading a preset: TOML text → `--set` overrides → raw struct (unknown fields are
//! errors) → validated config. Errors name the preset (file or shipped name), the line
//! where the field is written when it is, the dotted field and the reason, in one line.

use super::ConfigError;
use crate::device::{config as devcfg, DeviceConfig};
use crate::host::{HostConfig, RawHost};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresetError {
    /// The file path or shipped preset name.
    pub origin: String,
    /// 1-based line of the offending field, when it is written in the file.
    pub line: Option<usize>,
    pub field: String,
    pub reason: String,
}

impl fmt::Display for PresetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.field.is_empty()) {
            (Some(l), false) => write!(f, "{}:{}: {}: {}", self.origin, l, self.field, self.reason),
            (Some(l), true) => write!(f, "{}:{}: {}", self.origin, l, self.reason),
            (None, false) => write!(f, "{}: {}: {}", self.origin, self.field, self.reason),
            (None, true) => write!(f, "{}: {}", self.origin, self.reason),
        }
    }
}
impl std::error::Error for PresetError {}

/// The line where `dotted` (e.g. `nand.t_read`) is written, if it is.
pub fn line_of(text: &str, dotted: &str) -> Option<usize> {
    let (table, key) = match dotted.rfind('.') {
        Some(i) => (&dotted[..i], &dotted[i + 1..]),
        None => ("", dotted),
    };
    let mut current = String::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if let Some(h) = line.strip_prefix('[') {
            current = h.trim_end_matches(']').trim().to_string();
            if !key.is_empty() && current == dotted {
                return Some(i + 1);
            }
            continue;
        }
        if current == table {
            if let Some((k, _)) = line.split_once('=') {
                if k.trim() == key {
                    return Some(i + 1);
                }
            }
        }
    }
    None
}

/// Sets `dotted = value` in a TOML table. A value the preset has takes the type of the
/// value it replaces (string, integer, float or boolean). A field the preset lacks (an
/// optional field, such as `hpb.max_single_cmd`) is added, with its missing tables: an
/// integer, float or boolean where the text reads as one, else a string; the raw
/// structs then refuse a name that is no field at all ([`load_device`], [`load_host`]).
/// Returns whether the field was added.
pub fn set_field(root: &mut toml::Value, dotted: &str, value: &str) -> Result<bool, ConfigError> {
    let mut cur = root;
    let parts: Vec<&str> = dotted.split('.').collect();
    if parts.iter().any(|p| p.trim().is_empty()) {
        return Err(ConfigError::new(dotted, "no such field in this preset"));
    }
    for (i, p) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let table = cur
            .as_table_mut()
            .ok_or_else(|| ConfigError::new(dotted, "is not a table"))?;
        if !table.contains_key(*p) {
            if last {
                table.insert(p.to_string(), inferred(value));
                return Ok(true);
            }
            table.insert(p.to_string(), toml::Value::Table(Default::default()));
        }
        if last {
            let old = &table[*p];
            let new = match old {
                toml::Value::String(_) => toml::Value::String(value.to_string()),
                toml::Value::Integer(_) => toml::Value::Integer(value.parse().map_err(|_| {
                    ConfigError::new(dotted, format!("'{value}' is not an integer"))
                })?),
                toml::Value::Float(_) => {
                    toml::Value::Float(value.parse().map_err(|_| {
                        ConfigError::new(dotted, format!("'{value}' is not a number"))
                    })?)
                }
                toml::Value::Boolean(_) => toml::Value::Boolean(match value {
                    "true" | "1" => true,
                    "false" | "0" => false,
                    _ => {
                        return Err(ConfigError::new(
                            dotted,
                            format!("'{value}' is not a boolean (true/false)"),
                        ))
                    }
                }),
                _ => {
                    return Err(ConfigError::new(
                        dotted,
                        "is a table or array; set its fields",
                    ))
                }
            };
            table.insert(p.to_string(), new);
            return Ok(false);
        }
        cur = table.get_mut(*p).expect("inserted or present");
    }
    Err(ConfigError::new(dotted, "empty field name"))
}

/// The TOML value a `--set` text reads as, for a field the preset does not have.
fn inferred(value: &str) -> toml::Value {
    if let Ok(i) = value.parse::<i64>() {
        toml::Value::Integer(i)
    } else if let Some(f) = value.parse::<f64>().ok().filter(|f| f.is_finite()) {
        toml::Value::Float(f)
    } else if value == "true" || value == "false" {
        toml::Value::Boolean(value == "true")
    } else {
        toml::Value::String(value.to_string())
    }
}

/// A `--set` that added a field the preset lacks.
struct Added {
    /// As the user wrote it (`device.hpb.max_single_cmd`).
    field: String,
    /// Relative to the preset (`hpb.max_single_cmd`).
    rel: String,
    value: String,
}

/// Deserializes the raw struct of a preset, retrying an added field's value as a
/// string where it read as a number or boolean and the field wants a string, and
/// naming the `--set` of an added field that is no field at all.
fn deserialize_raw<T: serde::de::DeserializeOwned>(
    mut v: toml::Value,
    added: &[Added],
    kind: &str,
    text: &str,
    origin: &str,
    overrides: &[(String, String)],
) -> Result<T, PresetError> {
    let mut retyped = vec![false; added.len()];
    loop {
        let e = match T::deserialize(v.clone()) {
            Ok(raw) => return Ok(raw),
            Err(e) => e,
        };
        let msg = e.message().trim().replace('\n', "; ");
        if msg.starts_with("unknown field") {
            let name = msg.split('`').nth(1).unwrap_or("");
            if let Some(a) = added.iter().find(|a| a.rel.split('.').any(|s| s == name)) {
                return Err(PresetError {
                    origin: format!("--set {}={} ({origin})", a.field, a.value),
                    line: None,
                    field: a.field.clone(),
                    reason: format!("no such field in a {kind} preset ({msg})"),
                });
            }
        }
        let retry = (msg.starts_with("invalid type") && msg.contains("expected a string"))
            .then(|| {
                added.iter().enumerate().position(|(i, a)| {
                    !retyped[i]
                        && !matches!(lookup(&v, &a.rel), Some(toml::Value::String(_)) | None)
                        && msg.contains(a.value.as_str())
                })
            })
            .flatten();
        match retry {
            Some(i) => {
                retyped[i] = true;
                set_at(
                    &mut v,
                    &added[i].rel,
                    toml::Value::String(added[i].value.clone()),
                );
            }
            None => return Err(deser_error::<T>(text, origin, overrides, e)),
        }
    }
}

fn lookup<'a>(v: &'a toml::Value, dotted: &str) -> Option<&'a toml::Value> {
    dotted.split('.').try_fold(v, |cur, p| cur.get(p))
}

fn set_at(v: &mut toml::Value, dotted: &str, new: toml::Value) {
    let mut cur = v;
    let parts: Vec<&str> = dotted.split('.').collect();
    for p in &parts[..parts.len() - 1] {
        match cur.get_mut(*p) {
            Some(next) => cur = next,
            None => return,
        }
    }
    if let Some(t) = cur.as_table_mut() {
        t.insert(parts[parts.len() - 1].to_string(), new);
    }
}

/// 1-based line of a byte offset.
fn line_at(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The dotted key written on `line` (`table.key`), if the line is `key = value`.
fn key_on_line(text: &str, line: usize) -> Option<String> {
    let mut table = String::new();
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if let Some(h) = l.strip_prefix('[') {
            table = h.trim_end_matches(']').trim().to_string();
        }
        if i + 1 == line {
            let (k, _) = l.split_once('=')?;
            let k = k.trim();
            return Some(if table.is_empty() {
                k.to_string()
            } else {
                format!("{table}.{k}")
            });
        }
    }
    None
}

/// The table whose header is written on `line`, if it is a header line.
fn table_on_line(text: &str, line: usize) -> Option<String> {
    let l = text.lines().nth(line.checked_sub(1)?)?.trim();
    let h = l.strip_prefix('[')?;
    Some(h.trim_end_matches(']').trim().to_string())
}

fn parse_with_overrides(
    text: &str,
    origin: &str,
    overrides: &[(String, String)],
) -> Result<(toml::Value, Vec<Added>), PresetError> {
    let mut value: toml::Value = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].lines().count().max(1));
        PresetError {
            origin: origin.to_string(),
            line,
            field: String::new(),
            reason: e.message().trim().replace('\n', " "),
        }
    })?;
    let mut added = Vec::new();
    for (field, v) in overrides {
        // `--set device.nand.t_read=..` names the field with the preset kind in front.
        let rel = match field.split_once('.') {
            Some(("device" | "host", rest)) => rest,
            _ => field.as_str(),
        };
        if rel == "estimates" || rel.starts_with("estimates.") {
            return Err(PresetError {
                origin: format!("--set {field}={v} ({origin})"),
                line: None,
                field: field.clone(),
                reason: "estimates are declared in the preset's [estimates] table, not set".into(),
            });
        }
        let was_added = set_field(&mut value, rel, v).map_err(|e| PresetError {
            origin: format!("--set {field}={v} ({origin})"),
            line: None,
            field: field.clone(),
            reason: e.reason,
        })?;
        if was_added {
            added.push(Added {
                field: field.clone(),
                rel: rel.to_string(),
                value: v.clone(),
            });
        }
    }
    Ok((value, added))
}

/// A value of the wrong type, an unknown or a missing field. The raw structs are
/// deserialized once more from the text itself (not the `Value` tree) to get a span,
/// which gives the line and the dotted field; fields set by `--set` have no line.
fn deser_error<T: serde::de::DeserializeOwned>(
    text: &str,
    origin: &str,
    overrides: &[(String, String)],
    e: toml::de::Error,
) -> PresetError {
    let spanned = toml::from_str::<T>(text).err();
    if spanned.is_none() {
        // The file is fine: an override made the value wrong. Name the `--set`.
        let msg = e.message().trim().replace('\n', "; ");
        let culprit = overrides
            .iter()
            .find(|(_, v)| msg.contains(v.as_str()))
            .or(overrides.last());
        if let Some((f, v)) = culprit {
            return PresetError {
                origin: format!("--set {f}={v} ({origin})"),
                line: None,
                field: f.clone(),
                reason: msg,
            };
        }
    }
    let (line, msg) = match &spanned {
        Some(se) => (se.span().map(|s| line_at(text, s.start)), se.message()),
        None => (None, e.message()),
    };
    let msg = msg.trim().replace('\n', "; ");
    // serde names unknown and missing fields in backquotes; otherwise the key on the
    // offending line is the field.
    let named = (msg.starts_with("unknown field") || msg.starts_with("missing field"))
        .then(|| msg.split('`').nth(1).map(str::to_string))
        .flatten();
    let field = match (line.and_then(|l| key_on_line(text, l)), named) {
        (Some(k), Some(n)) if msg.starts_with("unknown field") => {
            // The span points at the unknown key itself.
            if k.ends_with(&n) {
                k
            } else {
                n
            }
        }
        (_, Some(n)) => match line.and_then(|l| table_on_line(text, l)) {
            // A missing field is reported at its table's header.
            Some(t) if msg.starts_with("missing field") => format!("{t}.{n}"),
            _ => n,
        },
        (Some(k), None) => k,
        (None, None) => String::new(),
    };
    PresetError {
        origin: origin.to_string(),
        line,
        field,
        reason: msg,
    }
}

fn validation_error(
    text: &str,
    origin: &str,
    overrides: &[(String, String)],
    e: ConfigError,
) -> PresetError {
    // A value that came from `--set` is blamed on the `--set`, not on the file's line.
    let set = overrides
        .iter()
        .find(|(f, _)| f == &e.field || f.split_once('.').is_some_and(|(_, rest)| rest == e.field));
    match set {
        Some((f, v)) => PresetError {
            origin: format!("--set {f}={v} ({origin})"),
            line: None,
            field: e.field,
            reason: e.reason,
        },
        None => PresetError {
            origin: origin.to_string(),
            line: line_of(text, &e.field),
            field: e.field,
            reason: e.reason,
        },
    }
}

/// Loads a host preset. `overrides` are `--set` pairs; a field may carry the preset
/// kind in front (`host.costs.irq`) or not (`costs.irq`).
pub fn load_host(
    text: &str,
    origin: &str,
    overrides: &[(String, String)],
) -> Result<HostConfig, PresetError> {
    let (v, added) = parse_with_overrides(text, origin, overrides)?;
    let raw: RawHost = deserialize_raw(v, &added, "host", text, origin, overrides)?;
    let host = raw
        .validate()
        .map_err(|e| validation_error(text, origin, overrides, e))?;
    super::estimates::declared(text, origin)?;
    Ok(host)
}

/// Loads a device preset.
pub fn load_device(
    text: &str,
    origin: &str,
    overrides: &[(String, String)],
) -> Result<DeviceConfig, PresetError> {
    let (v, added) = parse_with_overrides(text, origin, overrides)?;
    let raw: devcfg::RawDeviceConfig =
        deserialize_raw(v, &added, "device", text, origin, overrides)?;
    let device =
        devcfg::validate(&raw).map_err(|e| validation_error(text, origin, overrides, e))?;
    // The declarations are checked once the preset itself is right.
    super::estimates::declared(text, origin)?;
    Ok(device)
}

/// The `kind`, `name` and `description` of a preset, for listings.
pub fn header(text: &str) -> Option<(String, String, String)> {
    let v: toml::Value = toml::from_str(text).ok()?;
    let get = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
    Some((get("kind")?, get("name")?, get("description")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_lines_and_sets_fields() {
        let text = "name = \"x\"\n[nand]\nt_read = \"60us\"\nplanes = 2\n";
        assert_eq!(line_of(text, "nand.t_read"), Some(3));
        assert_eq!(line_of(text, "nand.planes"), Some(4));
        assert_eq!(line_of(text, "name"), Some(1));
        let mut v: toml::Value = toml::from_str(text).unwrap();
        assert!(!set_field(&mut v, "nand.planes", "4").unwrap());
        assert_eq!(v["nand"]["planes"].as_integer(), Some(4));
        assert!(set_field(&mut v, "nand.planes", "four").is_err());
        // A field the preset lacks is added, typed by its text; its tables too.
        assert!(set_field(&mut v, "nand.planez", "4").unwrap());
        assert_eq!(v["nand"]["planez"].as_integer(), Some(4));
        assert!(set_field(&mut v, "hpb.max_single_cmd", "512KiB").unwrap());
        assert_eq!(v["hpb"]["max_single_cmd"].as_str(), Some("512KiB"));
        assert!(set_field(&mut v, "nand..x", "1").is_err());
    }
}
