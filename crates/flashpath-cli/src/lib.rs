//! `flashpath`: run fio jobs on a simulated host and flash device. The binary's
//! `main` is [`main`]; the library exists so the fuzz targets (`fuzz/`) drive the
//! same parsers and checks the command does.
//!
//! Errors in what the user gave (job files, presets, arguments) print one line and exit
//! with status 1; nothing here panics on input. `flashpath flashbench` ends as flashbench
//! does where flashbench itself refuses its arguments (its messages, its exit status).

mod analyze;
mod calibrate;
mod commands;
mod compare;
pub mod embed;
mod errmap;
mod files;
mod fiologs;
pub mod flashbench;
mod iolog_writer;
pub mod iozone;
pub mod jobmap;
mod measure;
mod plot;
mod presets;
pub use presets::shipped_names;
pub mod replay;
mod report;
mod repro;
pub mod run;
pub mod serve;
mod signals;
mod trace_out;
mod validate;
mod verifymap;

use std::process::ExitCode;

/// Writes `text` to standard output and flushes it: a closed pipe or a full disk is an
/// error (one line, exit 1), never a panic as `print!` gives.
pub fn emit(text: &str) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::io::Write;
    if embed::write_out(text.as_bytes()) {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("writing the output")
}

/// A command's table and its `--json FILE|-` data: `-` prints the JSON in place of the
/// table; a file gets the JSON and standard output the table; without `--json`, the
/// table.
pub(crate) fn emit_table_or_json(
    json_to: Option<&str>,
    table: &str,
    json: &str,
) -> anyhow::Result<()> {
    use anyhow::Context;
    match json_to {
        Some("-") => emit(&format!("{json}\n")),
        Some(path) => {
            std::fs::write(path, format!("{json}\n"))
                .with_context(|| format!("{path}: cannot write"))?;
            emit(table)
        }
        None => emit(table),
    }
}

/// A message as one line of plain text: control characters (a newline in a `--set`
/// field, the raw bytes of a binary job file) are shown escaped, never sent to the
/// terminal, and a word longer than [`LONG_WORD`] bytes (a 100 KB value echoed back)
/// is cut to its start and its length.
pub fn one_line(msg: &str) -> String {
    let escaped: String = msg
        .chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect();
    escaped
        .split(' ')
        .map(|w| {
            if w.len() <= LONG_WORD {
                return w.to_string();
            }
            let mut end = KEPT;
            while !w.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}... ({} bytes)", &w[..end], w.len())
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The longest word an error line shows whole, and how much of a longer one it shows.
const LONG_WORD: usize = 256;
const KEPT: usize = 64;

/// The `flashpath` command: arguments from the process, an exit status back.
pub fn main() -> ExitCode {
    // std::env::args() panics on an argument that is not UTF-8: refuse it in one line.
    let mut args: Vec<String> = Vec::new();
    for (i, a) in std::env::args_os().skip(1).enumerate() {
        match a.into_string() {
            Ok(s) => args.push(s),
            Err(a) => {
                eprintln!(
                    "flashpath: error: argument {} ({:?}) is not UTF-8",
                    i + 1,
                    a.to_string_lossy()
                );
                return ExitCode::from(1);
            }
        }
    }
    let (status, error) = command_status(&args);
    if let Some(msg) = error {
        eprintln!("flashpath: error: {msg}");
    }
    ExitCode::from(status)
}

/// Runs the command `args` (after the program's name): its exit status, and the error
/// line to print (as one line: the chain of causes, outermost first), if it failed.
pub(crate) fn command_status(args: &[String]) -> (u8, Option<String>) {
    match dispatch(args) {
        Ok(()) => (0, None),
        Err(e) => {
            // flashbench's own failures have printed what flashbench prints.
            if let Some(s) = e.downcast_ref::<flashbench::ExitStatus>() {
                return (s.0, None);
            }
            let msg: Vec<String> = e.chain().map(|c| c.to_string()).collect();
            (1, Some(one_line(&msg.join(": "))))
        }
    }
}

fn dispatch(args: &[String]) -> anyhow::Result<()> {
    let name = args.first().map(String::as_str);
    let rest = args.get(1..).unwrap_or(&[]);
    // `--help` of a command: its entry of the one table. fio's own --help is the
    // same text (run.rs); flashbench's adds flashbench's usage; fio's, iozone's and
    // flashbench's other switches stay theirs.
    if let Some(c) = name.and_then(commands::find) {
        if c.name != "fio" && commands::wants_help(rest) {
            emit(&commands::help(c))?;
            if c.name == "flashbench" {
                emit(&format!(
                    "\nflashbench's own usage:\n{}",
                    flashbench::own_usage()
                ))?;
            }
            return Ok(());
        }
    }
    match name {
        Some("fio") => run::fio_command(rest),
        Some("iozone") => iozone::command(rest),
        Some("flashbench") => flashbench::command(rest),
        Some("compare") => compare::command(rest),
        Some("analyze") => analyze::command(rest),
        Some("validate") => validate::command(rest),
        Some("calibrate") => calibrate::command(rest),
        Some("presets") => presets::command(rest),
        Some("serve") => serve::command(rest),
        Some(v @ ("--version" | "version" | "-V")) if !rest.is_empty() => Err(anyhow::anyhow!(
            "{v} takes no arguments (got '{}')",
            rest.join(" ")
        )),
        Some("--version") | Some("version") | Some("-V") => emit(&format!(
            "flashpath {} (fio 3.33, iozone 3.508 and flashbench 62 front ends)\n",
            env!("CARGO_PKG_VERSION")
        )),
        Some("help") | Some("--help") | Some("-h") | None => match rest.first() {
            None => emit(&commands::overview()),
            Some(c) => match commands::find(c) {
                Some(c) => emit(&commands::help(c)),
                None => Err(anyhow::anyhow!(
                    "help: unknown command '{c}' (commands: {})",
                    command_names()
                )),
            },
        },
        Some(other) => Err(anyhow::anyhow!(
            "unknown command '{other}' (commands: {})",
            command_names()
        )),
    }
}

fn command_names() -> String {
    commands::COMMANDS
        .iter()
        .map(|c| c.name)
        .filter(|n| !n.starts_with('-'))
        .collect::<Vec<_>>()
        .join(", ")
}
