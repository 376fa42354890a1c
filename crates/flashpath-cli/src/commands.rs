//! Every subcommand's synopsis, summary and options, in one table: `flashpath help`,
//! `flashpath help COMMAND` and `flashpath COMMAND --help` are all printed from it, so
//! the overview and each command's own help cannot disagree.
//!
//! The parsers stay each front end's own (fio's, iozone's and flashbench's grammars are
//! theirs, not a general option parser's), so this table describes them and does not
//! drive them; `tests/front_door.rs` checks that every command answers `--help` from it.

/// One subcommand.
pub struct Command {
    pub name: &'static str,
    /// What follows `flashpath NAME` in the usage line.
    pub synopsis: &'static str,
    /// What it does, a few lines.
    pub summary: &'static str,
    /// Its own options: (option as typed, what it does).
    pub options: &'static [(&'static str, &'static str)],
    /// Whether it takes the flashpath options (the simulated system's).
    pub system_options: bool,
}

/// flashpath's options for the simulated system, taken anywhere among the fio, iozone
/// or flashbench arguments of the commands that run a simulation.
pub const SYSTEM_OPTIONS: &[(&str, &str)] = &[
    (
        "--device NAME|FILE.toml",
        "device preset (default: emmc51-hs400-32g); `flashpath presets` lists them with \
         the hosts and drivers each goes with",
    ),
    (
        "--host NAME|FILE.toml",
        "host board preset (default: the first host the device's preset names; \
         sprd-sc9863a for the default device)",
    ),
    (
        "--driver NAME",
        "host driver (default: the host's own where it fits the device, else the first \
         the device's preset names that fits): mmc-legacy, mmc-hsq, mmc-hsq-v6, \
         mmc-hsq-limit2, mmc-hsq-dynamic, mmc-cqe, mmc-cqe-oldest-first, ufs, ufs-hpb, \
         ufs-hpb-hcm, ufs-mcq, sd-rtsx, sd-rtsx-multiseq",
    ),
    (
        "--set FIELD=VALUE",
        "set a preset field for this run, e.g. --set device.nand.t_read=60us; a field the \
         preset leaves out (an optional one) is added; --set device.ideal=true makes the \
         storage instant (no device or bus time)",
    ),
    (
        "--costs-above-block zero|simulated",
        "zero: take out the host's CPU costs above the block layer (system call entry \
         and return, direct I/O's page pinning, the asynchronous engines' submit and reap, \
         waking fio's thread, fio's verify), so that a direct I/O's latency is the block \
         request's, from submission to its end: what `flashpath serve` simulates under a \
         real client. Direct I/O only (direct=1). Default: simulated",
    ),
    (
        "--precondition auto|random|sequential|off",
        "the data layout the jobs find on the device. random: every block written once \
         in random 4 KiB order through the whole simulated path before the jobs (not \
         reported), a device in use, with its map scattered; sequential: mapped in \
         address order at once, as a file written sequentially leaves it; off: never \
         written; auto (default): random, but sequential on SD cards (sd-rtsx), where \
         random preconditioning takes hours of simulated time. It changes reads (map \
         cache misses) and writes (garbage collection) a lot",
    ),
    (
        "--blktrace DIR",
        "also write the run's block-layer events as blktrace binary files \
         DIR/<dev>.blktrace.<cpu> (dev: mmcblk0, or sda for UFS), for `blkparse -i <dev> \
         -D DIR` and btt",
    ),
    (
        "--trace FILE.json",
        "also write a Chrome trace-event timeline (Perfetto, chrome://tracing): a track \
         per core, bus, NAND die and channel, and each block request's spans",
    ),
];

pub const COMMANDS: &[Command] = &[
    Command {
        name: "fio",
        synopsis: "[flashpath options] [fio options] [job files]",
        summary: "Runs fio 3.33's command line and job files on the simulated host and \
                  device and prints fio's output. Job options are fio's: those flashpath \
                  models run, those with no effect on a simulated run are accepted \
                  (docs/command-line.md), any other is an error naming it.",
        options: &[
            (
                "--output-format=normal|json|json+|terse",
                "fio's output formats (several, comma-separated)",
            ),
            ("--output=FILE", "write the report to FILE"),
            ("--parse-only", "check the jobs and the system, run nothing"),
            (
                "--status-interval=T",
                "fio's periodic reports, every T of simulated time",
            ),
            (
                "--minimal, --terse-version=N, --readonly, --section=NAME, --showcmd, \
                 --version, --warnings-fatal, --bandwidth-log",
                "as fio has them; --eta* are accepted",
            ),
            ("--help", "this text"),
        ],
        system_options: true,
    },
    Command {
        name: "iozone",
        synopsis: "[flashpath options] iozone-args",
        summary: "Runs an iozone throughput test on the simulated system, one job thread \
                  per process, with iozone's stonewalling, and prints iozone 3.508's \
                  report.",
        options: &[
            ("-t N | -l N -u N", "throughput mode with N processes"),
            (
                "-i 0|1|2",
                "tests: write/rewrite, read/reread, random read/write",
            ),
            ("-r SIZE, -s SIZE", "record and file size"),
            ("-F FILE...", "one file per process"),
            (
                "-I, -e, -c, -w, -x, -C, -T, -+n",
                "O_DIRECT, include fsync, include close, keep files, no stonewalling, \
                 per-process counts, threads, no retests",
            ),
            ("--help", "this text"),
        ],
        system_options: true,
    },
    Command {
        name: "flashbench",
        synopsis: "[flashpath options] flashbench-args DEVICE",
        summary: "Runs flashbench's tests on the simulated device, all accesses in one \
                  run, and prints flashbench 62's output.",
        options: &[
            (
                "-a, --align",
                "the alignment test: read timing across block boundaries",
            ),
            (
                "-A",
                "flashpath's extension: the alignment test with writes (destructive)",
            ),
            (
                "-O, --open-au",
                "find the number of open allocation units (destructive)",
            ),
            (
                "-f, --find-fat",
                "analyse the first few erase blocks (destructive)",
            ),
            ("-s, --scatter", "the scatter read test"),
            ("-i, --interval", "the interval read test"),
            (
                "-p",
                "flashbench's built-in program of writes and reads (destructive)",
            ),
            (
                "-b, -c, -e, -o, -r, -v, --offset, --open-au-nr, --fat-nr, --scatter-*",
                "as flashbench has them (docs/flashbench.md)",
            ),
            (
                "-h",
                "flashbench's own usage (all its options, as flashbench prints them)",
            ),
            ("--help", "this text, then flashbench's own usage"),
        ],
        system_options: true,
    },
    Command {
        name: "analyze",
        synopsis: "[flashpath options] [--output-format=normal|json] fio-args | --input \
                   REPORT.json [--output-format=normal|json]",
        summary: "Runs the job (and again with instant storage, --set device.ideal=true) \
                  and prints per job row where the time of its I/Os went: the mean pre, \
                  hw and post spans of the white paper's request pipeline, and the limits \
                  to its throughput. At depth 1 (one I/O in flight), from the spans: \
                  size/(pre+hw+post) one request at a time, size/(pre+post) an infinitely \
                  fast device, size/max(pre,hw,post) pipelined. At any depth, from busy \
                  time over the measured window: size/(busiest core's CPU time per I/O) \
                  the software limit, size/(hardware busy time per I/O) the hardware \
                  limit, and the smaller of the two, an upper bound on the throughput at \
                  that depth.",
        options: &[
            (
                "--input FILE",
                "analyze a saved `flashpath fio --output-format=json` report (a positional \
                 FILE.json too) instead of running; a report of real fio has no spans: its \
                 sizes, bandwidth, latencies and depth are printed, without limits",
            ),
            ("--output-format=F", "normal (text, the default) or json"),
            ("--help, -h", "this text"),
        ],
        system_options: true,
    },
    Command {
        name: "compare",
        synopsis: "--vary KEY=V1,V2[,..] [--vary ...] [--json FILE|-] [--plot FILE] [flashpath options] \
                   fio-args",
        summary: "Runs one job across a grid of configurations and prints bandwidth, \
                  IOPS, mean and p99 completion latency per configuration, with the \
                  change from the first, and the published figures where the job is a \
                  shipped reproduction.",
        options: &[
            (
                "--vary KEY=V1,V2",
                "an axis of the grid; KEY: driver, device, host, or a preset field such \
                 as device.write_buffer.size",
            ),
            ("--json FILE|-", "also write the table as JSON"),
            (
                "--plot FILE.svg|png|pdf",
                "also draw the figures as a bar chart, each bar with its change from the \
                 first configuration (IOPS; needs Python with the flashpath package and \
                 matplotlib: pip install './python[plot]')",
            ),
            ("--help", "this text"),
        ],
        system_options: true,
    },
    Command {
        name: "validate",
        synopsis: "[--jobs DIR] [--only TEXT] [--in-sample] [--json FILE|-] [--plot FILE]",
        summary: "Runs every shipped reproduction (jobs/*/reproductions.toml) and prints \
                  simulated against published figures; exits 1 if any leaves its \
                  tolerance. Then, out of sample: for each before/after set, the \
                  presets' declared estimates are calibrated on the before figures only \
                  and the after figures predicted (reported, not enforced).",
        options: &[
            (
                "--jobs DIR",
                "the reproductions' directory (default: the shipped jobs/)",
            ),
            (
                "--only TEXT",
                "only the reproductions whose name contains TEXT",
            ),
            (
                "--in-sample",
                "skip the out-of-sample calibrations (they take minutes)",
            ),
            (
                "--json FILE|-",
                "also write the report as JSON: a record per figure, range, \
                 prediction, comparison and out-of-sample prediction (simulated, \
                 published, error, verdict, in-sample or not), and the summary lines; \
                 `-` writes it to standard output in place of the table",
            ),
            (
                "--plot FILE.svg|png|pdf",
                "also draw simulated against published, in-sample, predicted and \
                 out-of-sample figures marked apart (needs Python with the flashpath \
                 package and matplotlib: pip install './python[plot]')",
            ),
            ("--help", "this text"),
        ],
        system_options: false,
    },
    Command {
        name: "calibrate",
        synopsis: "MEASUREMENTS... --out FILE.toml [--fit FIELD,...] [--predict JOB.fio]... | \
                   --measure PATH --suite standard --out-dir DIR [--allow-writes] | \
                   --suite standard --write-jobs DIR",
        summary: "Fits the device preset's declared estimates (`presets --estimates`) to \
                  measurements of a real board: fio JSON output files (each job's options \
                  are in them, so the same jobs are simulated) or a TOML of published \
                  figures ([[measurement]] with a workload (job, fio, iozone or flashbench), \
                  metric, value, spread_pct). \
                  Writes the fitted preset (fitted values marked calibrated) and prints \
                  the fit: each figure before and after, which fields the data pin down \
                  and which they leave free, and prediction ranges. Same inputs, same \
                  preset out.",
        options: &[
            ("--out FILE.toml", "where the fitted device preset goes"),
            (
                "--name NAME",
                "the fitted preset's name (default: the --out file's stem)",
            ),
            (
                "--fit FIELD,...",
                "fit these estimates (device.F, host.F or F) instead of the ones the \
                 screening picks",
            ),
            (
                "--max-fields N",
                "fit at most N fields (default 4, and no more than there are figures)",
            ),
            (
                "--max-evals N",
                "the optimiser's budget of evaluations (default 60)",
            ),
            (
                "--metrics LIST",
                "which figures of a fio JSON to fit: bw, p50, p99, clat_mean (default bw,p99)",
            ),
            (
                "--spread PCT",
                "the run-to-run spread of every figure (default 5 % for bandwidth and \
                 means, 15 % for percentiles; a TOML figure's spread_pct wins)",
            ),
            (
                "--predict JOB.fio",
                "also predict this job: its figures at the fit and their range over the \
                 parameter sets that fit within the spread",
            ),
            (
                "--out-host FILE.toml",
                "also fit the host preset's estimates and write the fitted host there",
            ),
            (
                "--json FILE|-",
                "also write the fit as JSON: the fields (preset, fitted, 1-sigma, \
                 verdict), each figure measured, at the preset and at the fit, the \
                 predictions; `-` writes it to standard output in place of the tables",
            ),
            (
                "--plot FILE.svg|png|pdf",
                "also draw each figure measured, at the preset and at the fit (needs \
                 Python with the flashpath package and matplotlib: pip install \
                 './python[plot]')",
            ),
            (
                "--measure PATH",
                "run the standard suite with the real fio on a block device or file \
                 (reads only without --allow-writes) and save its JSON files in --out-dir",
            ),
            (
                "--allow-writes",
                "let --measure run the write jobs (they destroy the data)",
            ),
            (
                "--write-jobs DIR",
                "write the suite's fio job files (--filename PATH names the target; \
                 default /dev/mmcblk0)",
            ),
            (
                "--small SIZE, --large SIZE",
                "the suite's two ranges (default 64MiB, and the device's size up to 4GiB)",
            ),
            ("--scale F", "multiply the suite's amounts of I/O by F"),
            ("--help", "this text"),
        ],
        system_options: true,
    },
    Command {
        name: "serve",
        synopsis: "[flashpath options] --nbd unix:PATH|tcp:HOST:PORT [--data FILE] [--once] [--no-busy-poll]",
        summary: "Serves the simulated device over NBD in real time: real fio (ioengine=nbd), \
                  nbdcopy, nbdinfo, qemu-img and qemu-io drive it, and each reply goes out \
                  when the wall clock reaches the request's simulated completion. Each \
                  request is simulated from the block layer down (block layer, host \
                  driver, bus, device): the client's own system calls are real and not \
                  simulated again (the batch run to set beside it is `flashpath fio \
                  --costs-above-block zero`). Reads return what was written. SIGINT or SIGTERM ends \
                  it with a report: per direction the requests, bytes and simulated \
                  latency, and how late replies went out against their simulated \
                  completions.",
        options: &[
            (
                "--nbd unix:PATH|tcp:HOST:PORT",
                "where to listen: a Unix socket (clients use nbd+unix:///?socket=PATH) or \
                 TCP (nbd://HOST:PORT/; no authentication: keep it on 127.0.0.1)",
            ),
            (
                "--data FILE",
                "keep the data in FILE, a sparse file as large as the device, across \
                 restarts (default: an unnamed temporary file, gone at exit)",
            ),
            (
                "--no-busy-poll",
                "readers wait for requests in the kernel instead of polling their socket \
                 while a client is active: less CPU, and on a virtual machine the requests \
                 start later (30-40 µs on the development machine's KVM guest)",
            ),
            (
                "--once",
                "end, with the report, when the last connection closes after a request \
                 was served",
            ),
            ("--help", "this text"),
        ],
        system_options: true,
    },
    Command {
        name: "presets",
        synopsis: "[NAME] | --json | --estimates NAME|FILE",
        summary: "Lists the shipped presets (kind, name, description) and, for each \
                  device, the hosts and drivers it goes with; with a NAME, prints that \
                  preset's TOML (its values and their sources).",
        options: &[
            (
                "--json",
                "the list as JSON: an array of {kind, name, description}, a device's \
                 with its hosts and drivers",
            ),
            (
                "--estimates NAME|FILE",
                "the preset's declared estimates: the values no public source gives, \
                 each with its physical range and why (what calibration may move); \
                 every other value is sourced",
            ),
            ("--help", "this text"),
        ],
        system_options: false,
    },
    Command {
        name: "help",
        synopsis: "[COMMAND]",
        summary: "Prints this overview, or a command's help.",
        options: &[],
        system_options: false,
    },
    Command {
        name: "--version",
        synopsis: "",
        summary: "Prints flashpath's version and its front ends' versions.",
        options: &[],
        system_options: false,
    },
];

pub fn find(name: &str) -> Option<&'static Command> {
    COMMANDS.iter().find(|c| c.name == name)
}

/// Whether `args` (a subcommand's) ask for its help.
pub fn wants_help(args: &[String]) -> bool {
    args.iter().any(|a| a == "--help")
}

const WIDTH: usize = 88;

/// `text` wrapped at [`WIDTH`], each line indented by `indent`.
fn wrap(text: &str, indent: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for w in text.split_whitespace() {
        if !line.is_empty() && indent + line.len() + 1 + w.len() > WIDTH {
            out.push_str(&format!("{:indent$}{line}\n", ""));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(w);
    }
    if !line.is_empty() {
        out.push_str(&format!("{:indent$}{line}\n", ""));
    }
    out
}

fn options_text(opts: &[(&str, &str)]) -> String {
    let mut s = String::new();
    for (o, what) in opts {
        s.push_str(&wrap(o, 2));
        s.push_str(&wrap(what, 6));
    }
    s
}

/// `flashpath help`: every command's usage and summary, then the flashpath options.
pub fn overview() -> String {
    let mut s = String::from(
        "flashpath — a simulator of the Linux I/O path to mobile flash storage\n\nusage:\n",
    );
    for c in COMMANDS {
        let line = format!("flashpath {} {}", c.name, c.synopsis);
        s.push_str(&wrap(&line, 2));
        s.push_str(&wrap(c.summary, 6));
    }
    s.push_str(
        "\n`flashpath COMMAND --help` gives a command's own options.\n\n\
         flashpath options (anywhere among the fio, iozone or flashbench arguments):\n",
    );
    s.push_str(&options_text(SYSTEM_OPTIONS));
    s
}

/// `flashpath COMMAND --help`.
pub fn help(c: &Command) -> String {
    let mut s = wrap(&format!("usage: flashpath {} {}", c.name, c.synopsis), 0);
    s.push_str(&wrap(c.summary, 0));
    if !c.options.is_empty() {
        s.push_str("\noptions:\n");
        s.push_str(&options_text(c.options));
    }
    if c.system_options {
        s.push_str("\nflashpath options:\n");
        s.push_str(&options_text(SYSTEM_OPTIONS));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lines_fit_the_width_and_name_every_command() {
        let o = overview();
        for c in COMMANDS {
            assert!(o.contains(&format!("flashpath {}", c.name)), "{}", c.name);
            for l in help(c).lines() {
                assert!(l.chars().count() <= WIDTH, "{}: {l}", c.name);
            }
        }
        for l in o.lines() {
            assert!(l.chars().count() <= WIDTH, "{l}");
        }
    }

    #[test]
    fn wrap_keeps_every_word_in_order() {
        let t = "a bb ccc dddd ".repeat(30);
        let w = wrap(&t, 4);
        let words: Vec<&str> = w.split_whitespace().collect();
        assert_eq!(words, t.split_whitespace().collect::<Vec<_>>());
        assert!(w.lines().all(|l| l.starts_with("    ")));
    }
}
