//! Device preset validation: each impossible value is rejected naming its dotted field.
use flashpath_core::device::DeviceConfig;

const PRESET: &str = include_str!("../../../presets/devices/emmc51-hs400-32g.toml");

/// The preset with `key = ...` in `[table]` replaced by `key = value` (or removed if
/// `value` is None).
fn with(table: &str, key: &str, value: Option<&str>) -> String {
    let mut out = String::new();
    let mut cur = String::new();
    let mut done = false;
    for line in PRESET.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            cur = t.trim_matches(|c| c == '[' || c == ']').to_string();
        } else if cur == table && t.split('=').next().map(str::trim) == Some(key) {
            done = true;
            if let Some(v) = value {
                out.push_str(&format!("{key} = {v}\n"));
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    assert!(done, "{table}.{key} not in the preset");
    out
}

fn err(table: &str, key: &str, value: Option<&str>) -> (String, String) {
    let e = DeviceConfig::from_toml_str(&with(table, key, value)).unwrap_err();
    (e.field, e.reason)
}

#[test]
fn rejects_impossible_values_naming_the_field() {
    let cases: &[(&str, &str, Option<&str>, &str)] = &[
        ("geometry", "channels", Some("0"), "geometry.channels"),
        (
            "geometry",
            "dies_per_channel",
            Some("0"),
            "geometry.dies_per_channel",
        ),
        (
            "geometry",
            "planes_per_die",
            Some("0"),
            "geometry.planes_per_die",
        ),
        (
            "geometry",
            "pages_per_block",
            Some("1"),
            "geometry.pages_per_block",
        ),
        (
            "geometry",
            "page_size",
            Some("\"6KiB\""),
            "geometry.page_size",
        ),
        (
            "geometry",
            "page_size",
            Some("\"128KiB\""),
            "geometry.page_size",
        ),
        (
            "geometry",
            "capacity",
            Some("\"64GiB\""),
            "geometry.capacity",
        ),
        // Fits the raw NAND but leaves no room for GC.
        (
            "geometry",
            "capacity",
            Some("\"32.7GiB\""),
            "geometry.capacity",
        ),
        ("nand", "t_prog", Some("\"2us\""), "nand.t_prog"),
        ("nand", "t_read", Some("\"11ms\""), "nand.t_read"),
        ("nand", "t_read", Some("\"0us\""), "nand.t_read"),
        ("nand", "t_read", Some("\"60\""), "nand.t_read"),
        ("nand", "t_erase", Some("\"100us\""), "nand.t_erase"),
        (
            "nand",
            "channel_rate",
            Some("\"400MB\""),
            "nand.channel_rate",
        ),
        (
            "map_cache",
            "entries_per_segment",
            Some("8192"),
            "map_cache.entries_per_segment",
        ),
        ("map_cache", "size", Some("\"1KiB\""), "map_cache.size"),
        (
            "write_buffer",
            "size",
            Some("\"16KiB\""),
            "write_buffer.size",
        ),
        (
            "ftl",
            "gc_threshold_blocks",
            Some("1"),
            "ftl.gc_threshold_blocks",
        ),
        ("ftl", "gc_copy", Some("\"magic\""), "ftl.gc_copy"),
        ("nand", "t_read", None, "nand.t_read"),
        (
            "controller",
            "fw_per_command",
            None,
            "controller.fw_per_command",
        ),
        ("geometry", "capacity", None, "geometry.capacity"),
        ("", "interface", Some("\"scsi\""), "interface"),
        ("", "kind", Some("\"host\""), "kind"),
    ];
    for &(table, key, value, field) in cases {
        let (f, reason) = err(table, key, value);
        assert_eq!(f, field, "{table}.{key} = {value:?}: {reason}");
        assert!(!reason.is_empty());
    }
    let (_, reason) = err("nand", "t_prog", Some("\"1us\""));
    assert!(
        reason.starts_with("1us must exceed nand.t_read = "),
        "{reason}"
    );
}

#[test]
fn unknown_fields_are_errors() {
    let text = PRESET.replace("[nand]\n", "[nand]\nt_raed = \"60us\"\n");
    let e = DeviceConfig::from_toml_str(&text).unwrap_err();
    assert!(e.reason.contains("t_raed"), "{e}");
}
