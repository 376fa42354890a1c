//! The fitted preset: the input preset's text with each fitted value replaced, a
//! comment above it and `calibrated = "..."` in its `[estimates]` entry saying what it
//! was fitted to and what it was; every other line, comment and source stays as it was.

use anyhow::{anyhow, Context, Result};
use toml_edit::{DocumentMut, Item, Value};

/// One fitted value.
pub struct Fitted {
    /// Dotted field within the preset (`nand.t_read`).
    pub field: String,
    /// The new value as written (`72.4us`, `3`, `true`).
    pub value: String,
    /// What it was fitted to, for `calibrated = "..."`.
    pub from: String,
}

/// The preset `text` with the fitted values, renamed `name`.
pub fn fitted_preset(
    text: &str,
    origin: &str,
    name: &str,
    fitted: &[Fitted],
    header: &str,
) -> Result<String> {
    let mut doc: DocumentMut = text
        .parse()
        .with_context(|| format!("{origin}: not TOML"))?;
    for f in fitted {
        let parts: Vec<&str> = f.field.split('.').collect();
        let (leaf, path) = parts.split_last().ok_or_else(|| anyhow!("empty field"))?;
        let mut table = doc.as_table_mut() as &mut dyn toml_edit::TableLike;
        for p in path {
            table = table
                .get_mut(p)
                .and_then(Item::as_table_like_mut)
                .ok_or_else(|| anyhow!("{origin}: no table '{p}' for {}", f.field))?;
        }
        let old = table
            .get(leaf)
            .and_then(Item::as_value)
            .ok_or_else(|| anyhow!("{origin}: no value {}", f.field))?;
        let mut new = typed_like(old, &f.value);
        // Keep the value's spacing and any comment after it on its line.
        *new.decor_mut() = old.decor().clone();
        let was = match old {
            Value::String(s) => s.value().clone(),
            other => other.clone().decorated("", "").to_string(),
        };
        // The comments above the line stay, with the calibration's below them.
        let prefix = table
            .key(leaf)
            .and_then(|k| k.leaf_decor().prefix())
            .and_then(|p| p.as_str())
            .unwrap_or("")
            .to_string();
        table.insert(leaf, Item::Value(new));
        if let Some(mut key) = table.key_mut(leaf) {
            key.leaf_decor_mut().set_prefix(format!(
                "{prefix}# calibrated: {} (the preset had {was}), fitted to {}\n",
                f.value, f.from
            ));
        }
        let entry = doc
            .get_mut("estimates")
            .and_then(Item::as_table_like_mut)
            .and_then(|t| t.get_mut(&f.field))
            .and_then(Item::as_inline_table_mut)
            .ok_or_else(|| anyhow!("{origin}: {} has no [estimates] entry", f.field))?;
        entry.insert(
            "calibrated",
            Value::from(format!(
                "{} from {} (the preset had {was})",
                f.value, f.from
            )),
        );
    }
    doc["name"] = toml_edit::value(name);
    let described = doc
        .get("description")
        .and_then(Item::as_str)
        .unwrap_or("")
        .to_string();
    doc["description"] =
        toml_edit::value(format!("calibrated from board measurements: {described}"));
    Ok(format!("{header}{doc}"))
}

/// `s` as a TOML value of the same type as `old` (a quantity stays a string).
fn typed_like(old: &Value, s: &str) -> Value {
    match old {
        Value::Integer(_) => s
            .parse::<i64>()
            .map(Value::from)
            .unwrap_or_else(|_| Value::from(s)),
        Value::Float(_) => s
            .parse::<f64>()
            .map(Value::from)
            .unwrap_or_else(|_| Value::from(s)),
        Value::Boolean(_) => s
            .parse::<bool>()
            .map(Value::from)
            .unwrap_or_else(|_| Value::from(s)),
        _ => Value::from(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_value_and_marks_it_calibrated() {
        let text = "name = \"a\"\nkind = \"device\"\ndescription = \"d\"\n[nand]\n# Estimate: why\nt_read = \"60us\"  # tR\nplanes = 2\n[estimates]\n\"nand.t_read\" = { range = [\"25us\", \"100us\"], why = \"w\" }\n";
        let out = fitted_preset(
            text,
            "t",
            "mine",
            &[Fitted {
                field: "nand.t_read".into(),
                value: "72.4us".into(),
                from: "b.json".into(),
            }],
            "# head\n",
        )
        .unwrap();
        assert!(out.starts_with("# head\nname = \"mine\""), "{out}");
        assert!(out.contains("# Estimate: why\n# calibrated: 72.4us (the preset had 60us), fitted to b.json\nt_read = \"72.4us\"  # tR\n"), "{out}");
        assert!(
            out.contains("calibrated = \"72.4us from b.json (the preset had 60us)\""),
            "{out}"
        );
        assert!(
            out.contains("description = \"calibrated from board measurements: d\""),
            "{out}"
        );
        let est = flashpath_core::config::estimates::declared(&out, "o").unwrap();
        assert_eq!(est[0].value, "72.4us");
        assert!(est[0].calibrated.is_some());
    }
}
