//! Shipped presets (compiled in, so the binary works from any directory) and loading a
//! preset by name or from a TOML file.

use anyhow::{bail, Context, Result};
use flashpath_core::config::preset::{self, PresetError};
use flashpath_core::device::DeviceConfig;
use flashpath_core::host::HostConfig;

/// (file name, text) of every shipped preset.
pub const SHIPPED: &[(&str, &str)] = &[
    (
        "devices/emmc51-hs400-32g.toml",
        include_str!("../../../presets/devices/emmc51-hs400-32g.toml"),
    ),
    (
        "hosts/sprd-sc9863a.toml",
        include_str!("../../../presets/hosts/sprd-sc9863a.toml"),
    ),
    (
        "devices/ufs21-64g.toml",
        include_str!("../../../presets/devices/ufs21-64g.toml"),
    ),
    (
        "hosts/sd835-phone.toml",
        include_str!("../../../presets/hosts/sd835-phone.toml"),
    ),
    (
        "hosts/sprd-sc9863a-cqe.toml",
        include_str!("../../../presets/hosts/sprd-sc9863a-cqe.toml"),
    ),
    (
        "devices/sd-samsung-pro-plus-128g.toml",
        include_str!("../../../presets/devices/sd-samsung-pro-plus-128g.toml"),
    ),
    (
        "hosts/x86-laptop-rtsx.toml",
        include_str!("../../../presets/hosts/x86-laptop-rtsx.toml"),
    ),
    (
        "devices/emmc51-hs400-8g.toml",
        include_str!("../../../presets/devices/emmc51-hs400-8g.toml"),
    ),
    (
        "devices/emmc51-hs400-32g-mlc.toml",
        include_str!("../../../presets/devices/emmc51-hs400-32g-mlc.toml"),
    ),
    (
        "hosts/jetson-tx1.toml",
        include_str!("../../../presets/hosts/jetson-tx1.toml"),
    ),
    (
        "hosts/cortex-a9-sdma.toml",
        include_str!("../../../presets/hosts/cortex-a9-sdma.toml"),
    ),
    (
        "devices/emmc441-2011-au-8g.toml",
        include_str!("../../../presets/devices/emmc441-2011-au-8g.toml"),
    ),
    (
        "devices/sd-flashbench-readme-4g.toml",
        include_str!("../../../presets/devices/sd-flashbench-readme-4g.toml"),
    ),
    (
        "devices/microsd-lexar-633x-32g.toml",
        include_str!("../../../presets/devices/microsd-lexar-633x-32g.toml"),
    ),
    (
        "devices/ufs31-512g.toml",
        include_str!("../../../presets/devices/ufs31-512g.toml"),
    ),
    (
        "devices/ufs40-512g.toml",
        include_str!("../../../presets/devices/ufs40-512g.toml"),
    ),
    (
        "hosts/sm8650-phone.toml",
        include_str!("../../../presets/hosts/sm8650-phone.toml"),
    ),
];

pub const DEFAULT_DEVICE: &str = "emmc51-hs400-32g";
pub const DEFAULT_HOST: &str = "sprd-sc9863a";

/// Finds a shipped preset of `kind` by name.
fn shipped(kind: &str, name: &str) -> Option<&'static str> {
    SHIPPED
        .iter()
        .map(|(_, t)| *t)
        .find(|t| preset::header(t).is_some_and(|(k, n, _)| k == kind && n == name))
}

/// The text and origin (for errors) of a preset given by name or path.
pub(crate) fn text_of(kind: &str, spec: &str) -> Result<(String, String)> {
    if let Some(t) = shipped(kind, spec) {
        return Ok((t.to_string(), format!("preset '{spec}'")));
    }
    let looks_like_path = spec.ends_with(".toml") || spec.contains('/');
    if looks_like_path {
        let text = std::fs::read_to_string(spec)
            .with_context(|| format!("{spec}: cannot read preset file"))?;
        return Ok((text, spec.to_string()));
    }
    bail!(
        "unknown {kind} preset '{spec}' (shipped: {}; or give a path to a .toml file)",
        shipped_names(kind).join(", ")
    )
}

/// The names of the shipped presets of `kind` ("device" or "host"), in the order the
/// repository lists them (the fuzz targets pick from these).
pub fn shipped_names(kind: &str) -> Vec<String> {
    SHIPPED
        .iter()
        .filter_map(|(_, t)| preset::header(t))
        .filter(|(k, _, _)| k == kind)
        .map(|(_, n, _)| n)
        .collect()
}

fn preset_err(e: PresetError) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

pub fn load_device(spec: &str, overrides: &[(String, String)]) -> Result<DeviceConfig> {
    let (text, origin) = text_of("device", spec)?;
    preset::load_device(&text, &origin, overrides).map_err(preset_err)
}

pub fn load_host(spec: &str, overrides: &[(String, String)]) -> Result<HostConfig> {
    let (text, origin) = text_of("host", spec)?;
    preset::load_host(&text, &origin, overrides).map_err(preset_err)
}

/// `flashpath presets [NAME]`.
pub fn command(args: &[String]) -> Result<()> {
    match args {
        [] => crate::emit(&list()),
        [flag] if flag == "--json" => crate::emit(&format!("{}\n", list_json())),
        [flag, spec] if flag == "--estimates" => crate::emit(&estimates(spec)?),
        [flag] if flag == "--estimates" => {
            bail!("presets: --estimates needs a preset name or file (usage: flashpath presets --estimates NAME)")
        }
        [name] => {
            let text = SHIPPED
                .iter()
                .map(|(_, t)| *t)
                .find(|t| preset::header(t).is_some_and(|(_, n, _)| &n == name));
            match text {
                Some(t) => crate::emit(t),
                None => {
                    bail!("presets: no shipped preset '{name}' (`flashpath presets` lists them)")
                }
            }
        }
        _ => bail!(
            "presets: expected at most one preset name (usage: flashpath presets [NAME] | --json)"
        ),
    }
}

/// The text and origin of a shipped preset of either kind, or of a file (whose read
/// error is its own).
fn any_text(spec: &str) -> Result<(String, String)> {
    if spec.ends_with(".toml") || spec.contains('/') {
        return text_of("device", spec);
    }
    text_of("device", spec)
        .or_else(|_| text_of("host", spec))
        .map_err(|_| {
            anyhow::anyhow!(
                "presets: no shipped preset '{spec}' (`flashpath presets` lists them; or give a path to a .toml file)"
            )
        })
}

/// `flashpath presets --estimates NAME`: a table of the preset's declared estimates.
pub fn estimates(spec: &str) -> Result<String> {
    let (text, origin) = any_text(spec)?;
    // The whole preset is loaded first: a broken one gets its own error, not a table.
    match preset::header(&text) {
        Some((kind, _, _)) if kind == "host" => {
            preset::load_host(&text, &origin, &[]).map_err(preset_err)?;
        }
        _ => {
            preset::load_device(&text, &origin, &[]).map_err(preset_err)?;
        }
    }
    let list = flashpath_core::config::estimates::declared(&text, &origin).map_err(preset_err)?;
    let name = preset::header(&text)
        .map(|(_, n, _)| n)
        .unwrap_or(origin.clone());
    if list.is_empty() {
        return Ok(format!(
            "{name}: no declared estimates (an [estimates] table declares them)\n"
        ));
    }
    let rows: Vec<[String; 5]> = list
        .iter()
        .map(|e| {
            [
                e.line.to_string(),
                e.field.clone(),
                match (e.inside(), e.calibrated.is_some()) {
                    (true, false) => e.value.clone(),
                    (true, true) => format!("{} (calibrated)", e.value),
                    (false, _) => format!("{} (outside)", e.value),
                },
                e.bounds.show(),
                match &e.calibrated {
                    Some(c) => format!("{}; calibrated: {c}", e.why),
                    None => e.why.clone(),
                },
            ]
        })
        .collect();
    let head = ["line", "field", "value", "may be", "why"];
    let w: Vec<usize> = (0..4)
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .chain([head[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = format!(
        "{name}: {} declared estimates, what calibration may fit within their ranges; every other value is sourced\n",
        list.len()
    );
    for r in std::iter::once(head.map(String::from)).chain(rows) {
        out.push_str(&format!(
            "{:>w0$}  {:<w1$}  {:<w2$}  {:<w3$}  {}\n",
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2],
            w3 = w[3]
        ));
    }
    Ok(out)
}

/// The shipped presets' (kind, name, description), sorted.
fn headers() -> Vec<(String, String, String)> {
    let mut rows: Vec<(String, String, String)> = SHIPPED
        .iter()
        .filter_map(|(_, t)| preset::header(t))
        .collect();
    rows.sort();
    rows
}

/// `flashpath presets --json`: the list as a JSON array of objects (kind, name,
/// description; a device's hosts and drivers too).
pub fn list_json() -> String {
    use serde_json::{json, Value};
    let v: Vec<Value> = headers()
        .into_iter()
        .map(|(kind, name, description)| {
            let mut o = json!({"kind": kind, "name": name, "description": description});
            if kind == "device" {
                if let Ok(dev) = load_device(&name, &[]) {
                    o["hosts"] = json!(dev.hosts);
                    o["drivers"] = json!(dev.drivers);
                }
            }
            o
        })
        .collect();
    serde_json::to_string_pretty(&v).expect("JSON of plain values")
}

/// `flashpath presets`: one line each: kind, name, description; under each device, the
/// hosts and drivers its preset names.
pub fn list() -> String {
    let rows = headers();
    let w = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (k, n, d) in &rows {
        out.push_str(&format!("{k:<6}  {n:<w$}  {d}\n"));
        if k == "device" {
            if let Ok(dev) = load_device(n, &[]) {
                if !dev.hosts.is_empty() {
                    out.push_str(&format!(
                        "{:<6}  {:<w$}  goes with host {}; drivers {}\n",
                        "",
                        "",
                        dev.hosts.join(", "),
                        dev.drivers.join(", ")
                    ));
                }
            }
        }
    }
    out.push_str(
        "\n`--device NAME` alone runs on the first host named, with the host's default driver\n\
         where it fits the device, else the first driver named that fits.\n\
         `flashpath presets NAME` prints a preset, its values and their sources.\n",
    );
    out
}
