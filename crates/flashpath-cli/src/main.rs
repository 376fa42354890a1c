//! `flashpath`: run fio jobs on a simulated host and flash device.
//!
//! Errors in what the user gave (job files, presets, arguments) print one line and exit
//! with status 1; nothing here panics on input. `flashpath flashbench` ends as flashbench
//! does where flashbench itself refuses its arguments (its messages, its exit status).

mod analyze;
mod compare;
mod errmap;
mod files;
mod fiologs;
mod flashbench;
mod iolog_writer;
mod iozone;
mod jobmap;
mod measure;
mod presets;
mod replay;
mod report;
mod repro;
mod run;
mod trace_out;
mod validate;
mod verifymap;

use std::process::ExitCode;

const USAGE: &str = "\
flashpath — a simulator of the Linux I/O path to mobile flash storage

usage:
  flashpath fio [flashpath options] [fio arguments and job files]
      Runs fio jobs on the simulated system and prints fio's output formats
      (--output-format=normal|json|json+|terse, --output=FILE, --parse-only, ...).
  flashpath analyze [flashpath options] fio-args
      Runs the job, prints where the time of its I/Os went (mean pre, hw and post
      spans) and the white paper's limits computed from them: size/(pre+hw+post),
      size/(pre+post) beside a run with instant storage (--set device.ideal=true),
      and size/max(span).
  flashpath compare --vary KEY=V1,V2 [--vary ...] [--json FILE|-] [flashpath options] fio-args
      Runs one job across a grid of configurations (KEY: driver, device, host, or a
      preset field such as device.write_buffer.size) and prints bandwidth, IOPS, mean
      and p99 completion latency per configuration, with the change from the first,
      and the published figures where the job is a shipped reproduction.
  flashpath iozone [flashpath options] iozone-args
      Runs an iozone throughput test (-t/-l/-u with -i 0, 1, 2, -r, -s, -F, -I, -e,
      -c, -w, -x, -C, -T, -+n) on the simulated system, one job thread per process,
      with iozone's stonewalling, and prints iozone 3.508's report.
  flashpath flashbench [flashpath options] flashbench-args DEVICE
      Runs flashbench's tests (-a, -O, -f, -s, -i, -p; -A: -a with writes) on the
      simulated device, all accesses in one run, and prints flashbench 62's output.
  flashpath validate [--jobs DIR] [--only TEXT]
      Runs every shipped reproduction (jobs/*/reproductions.toml) and prints simulated
      against published figures; exits 1 if any leaves its tolerance.
  flashpath presets
      Lists the shipped presets: kind, name, description.
  flashpath --version
  flashpath help

flashpath options (anywhere among the fio, iozone or flashbench arguments):
  --device NAME|FILE.toml   device preset (default: emmc51-hs400-32g)
  --host NAME|FILE.toml     host board preset (default: sprd-sc9863a)
  --driver NAME             host driver (default: the host preset's): mmc-legacy,
                            mmc-hsq, mmc-hsq-v6, mmc-hsq-limit2,
                            mmc-hsq-dynamic, mmc-cqe, mmc-cqe-oldest-first,
                            ufs, ufs-hpb, ufs-hpb-hcm, sd-rtsx, sd-rtsx-multiseq
  --set FIELD=VALUE         override a preset field for this run, e.g.
                            --set device.nand.t_read=60us --set host.costs.wakeup=10us;
                            --set device.ideal=true makes the storage instant (no
                            device or bus time: the paper's infinitely fast device)
  --blktrace DIR            also write the run's block-layer events as blktrace binary
                            files DIR/<dev>.blktrace.<cpu> (dev: mmcblk0, or sda for
                            UFS), for `blkparse -i <dev> -D DIR` and btt
  --trace FILE.json         also write a Chrome trace-event timeline (Perfetto,
                            chrome://tracing): a track per core, bus, NAND die and
                            channel, and each block request's spans
";

/// A message as one line of plain text: control characters (a newline in a `--set`
/// field, the raw bytes of a binary job file) are shown escaped, never sent to the
/// terminal.
pub fn one_line(msg: &str) -> String {
    msg.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

fn main() -> ExitCode {
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
    let result = match args.first().map(String::as_str) {
        Some("fio") => run::fio_command(&args[1..]),
        Some("iozone") => iozone::command(&args[1..]),
        Some("flashbench") => flashbench::command(&args[1..]),
        Some("compare") => compare::command(&args[1..]),
        Some("analyze") => analyze::command(&args[1..]),
        Some("validate") => validate::command(&args[1..]),
        Some("presets") => {
            print!("{}", presets::list());
            Ok(())
        }
        Some("--version") | Some("version") | Some("-V") => {
            println!(
                "flashpath {} (fio 3.33, iozone 3.508 and flashbench 62 front ends)",
                env!("CARGO_PKG_VERSION")
            );
            Ok(())
        }
        Some("help") | Some("--help") | Some("-h") | None => {
            print!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(anyhow::anyhow!(
            "unknown command '{other}' (commands: fio, iozone, flashbench, analyze, compare, validate, presets, help)"
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // flashbench's own failures have printed what flashbench prints.
            if let Some(s) = e.downcast_ref::<flashbench::ExitStatus>() {
                return ExitCode::from(s.0);
            }
            // One line: the chain of causes, outermost first.
            let msg: Vec<String> = e.chain().map(|c| c.to_string()).collect();
            eprintln!("flashpath: error: {}", one_line(&msg.join(": ")));
            ExitCode::from(1)
        }
    }
}
