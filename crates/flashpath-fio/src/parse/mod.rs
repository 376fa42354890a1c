//! fio 3.33's job-file grammar and command line, parsed into typed jobs.
//!
//! ```text
//!  argv ──► cmdline (getopt_long_only rules) ──┐
//!                                              ├─► Section ─► options (table + value
//!  job file ─► ini (lines, [sections], include)┘    rules + callbacks) ─► Job (clones,
//!                                                                          groups)
//! ```
//!
//! What it models: everything fio does between reading its arguments and starting
//! the first job: comments, `[global]` inheritance in file order, `include`, `${VAR}`
//! and the `$pagesize`/`$mb_memory`/`$ncpus` keywords (with `bc` arithmetic),
//! every option fio 3.33 knows (generated table, engine options included), fio's
//! number/size/time conversions, per-direction lists, numjobs clones and reporting
//! groups. Every option a job sets is kept with its canonical name, value text and
//! origin, so a consumer can refuse what it does not model.
//!
//! What it leaves out: running anything; `--client`/`--server`; external engines.
//! Callbacks whose checks need the real system (CPU masks, files) accept any value.
//!
//! Units: sizes in bytes, times in nanoseconds (see [`JobOptions`]).
//!
//! Refusing what a consumer does not model, with the place it was set:
//!
//! ```
//! use flashpath_fio::parse::{parse_job_file_text, Env};
//! use std::path::Path;
//!
//! let jobs = parse_job_file_text("[a]\nrw=randread\nzonemode=zbd\n", Path::new("jobs/x.fio"),
//!                                &Env::fixed()).unwrap();
//! let modelled = |name: &str| matches!(name, "rw" | "bs" | "size" | "iodepth");
//! let msgs: Vec<String> = jobs[0]
//!     .unmodelled(&modelled)
//!     .iter()
//!     .map(|o| format!("option '{}' ({}) is not modelled by flashpath", o.name, o.origin))
//!     .collect();
//! assert_eq!(msgs, ["option 'zonemode' (jobs/x.fio:3) is not modelled by flashpath"]);
//! ```

pub mod blktrace;
mod cmdline;
mod expand;
mod ini;
pub use ini::{read_bounded, too_large, JOB_FILE_LIMIT};
pub mod iolog;
mod options;
pub mod table;
mod types;
pub mod value;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

pub use options::{JobOptions, SteadyStateOpt, DEFAULT_PERCENTILES};
pub use types::*;

/// What the parser takes from the environment: variables for `${VAR}`, the working
/// directory for relative paths, and the values of fio's keywords. Passing it in keeps
/// tests deterministic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Env {
    pub vars: BTreeMap<String, String>,
    pub cwd: PathBuf,
    /// `$ncpus`.
    pub ncpus: u32,
    /// `$mb_memory`: MiB of RAM.
    pub mb_memory: u64,
    /// `$pagesize`: bytes.
    pub pagesize: u64,
}

impl Env {
    /// The real environment of this process.
    pub fn from_process() -> Env {
        let vars = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        // fio uses sysconf(_SC_NPROCESSORS_ONLN): the online CPUs, not the affinity
        // mask available_parallelism() reports.
        let ncpus = std::fs::read_to_string("/sys/devices/system/cpu/online")
            .ok()
            .and_then(|s| count_cpu_list(s.trim()))
            .or_else(|| {
                std::thread::available_parallelism()
                    .ok()
                    .map(|n| n.get() as u32)
            })
            .unwrap_or(1);
        // /proc/meminfo's MemTotal is what sysconf(_SC_PHYS_PAGES) * pagesize gives.
        let mb_memory = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("MemTotal:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|kb| kb.parse::<u64>().ok())
            })
            .map(|kb| kb / 1024)
            .unwrap_or(1024);
        Env {
            vars,
            cwd,
            ncpus,
            mb_memory,
            pagesize: 4096,
        }
    }

    /// A fixed environment for tests: no variables, cwd `/`, 4 CPUs, 16 GiB, 4 KiB pages.
    pub fn fixed() -> Env {
        Env {
            vars: BTreeMap::new(),
            cwd: PathBuf::from("/"),
            ncpus: 4,
            mb_memory: 16384,
            pagesize: 4096,
        }
    }

    fn resolve(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.cwd.join(p)
        }
    }
}

/// Counts a sysfs CPU list such as `0-3,8,10-11`.
fn count_cpu_list(s: &str) -> Option<u32> {
    let mut n = 0u32;
    for part in s.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                n += b.checked_sub(a)? + 1;
            }
            None => {
                part.parse::<u32>().ok()?;
                n += 1;
            }
        }
    }
    Some(n)
}

/// Where an option was set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A job file (or a file it includes) and 1-based line.
    File { path: PathBuf, line: u32 },
    /// A command-line argument; `index` is its 1-based position in argv (argv[0] is
    /// the program).
    Arg { index: usize },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line } => write!(f, "{}:{}", path.display(), line),
            Origin::Arg { index } => write!(f, "argument {index}"),
        }
    }
}

/// One option a job sets, as fio records it for JSON "job options".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetOption {
    /// Canonical name (an alias such as `blocksize` is recorded as `bs`).
    pub name: String,
    /// Value text after `${}` expansion; `None` for a bare flag (fio omits those
    /// from JSON "job options").
    pub value: Option<String>,
    pub origin: Origin,
    /// Set in a global section (or before the first `--name`) and inherited.
    pub inherited: bool,
    /// `Some(engine)` for an engine-specific option.
    pub engine: Option<String>,
}

/// Kind of a parse failure, for mapping to exit codes and for tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// An option fio does not know (`Bad option <...>`, `unrecognized option`).
    UnknownOption,
    /// A known option with a value fio rejects.
    BadValue,
    /// Job-file structure (option outside a section, new section in an include, ...).
    Syntax,
    /// A file could not be read.
    Io,
    /// An include that includes itself.
    IncludeLoop,
    /// A command-line usage error (missing argument, ambiguous abbreviation, ...).
    Usage,
    /// An engine fio 3.33 cannot load was needed for an engine option.
    Engine,
}

/// A parse failure: one line naming where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub kind: ErrorKind,
    pub origin: Option<Origin>,
    pub message: String,
}

impl ParseError {
    fn new(kind: ErrorKind, origin: Option<Origin>, message: impl Into<String>) -> Self {
        ParseError {
            kind,
            origin,
            message: message.into(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let msg = self.message.replace(['\n', '\r'], " ");
        match &self.origin {
            Some(o) => write!(f, "{o}: {msg}"),
            None => write!(f, "{msg}"),
        }
    }
}

impl std::error::Error for ParseError {}

/// One job (one clone of a job section) as fio would start it.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// `name=` if set, else the section name.
    pub name: String,
    /// The section name as written (`[name]` or `--name=`).
    pub section: String,
    /// 1-based over all jobs, clones included, in start order.
    pub thread_number: u32,
    /// fio's `subjob_number`: 0 for the job itself; its clones follow it in thread
    /// order with N-1, N-2, ..., 1 (what `offset_increment` multiplies).
    pub clone_index: u32,
    /// Reporting group (0-based).
    pub group_id: u32,
    pub options: JobOptions,
    /// Every option set for this job: inherited global ones first, then its own, in
    /// the order fio parsed them.
    pub set_options: Vec<SetOption>,
    pub wait_for: Option<String>,
    /// Waits for all earlier jobs (its own `stonewall`, or the implicit one of the first
    /// job of a later job file). Clones never carry it.
    pub stonewall: bool,
    /// Index of the job file (0-based) it came from; `None` for command-line jobs.
    pub file_index: Option<usize>,
}

impl Job {
    /// The options this job sets that `modelled` does not accept, with their origin,
    /// for messages like "option 'zonemode' (jobs/x.fio:12) is not modelled".
    pub fn unmodelled<'a>(&'a self, modelled: &dyn Fn(&str) -> bool) -> Vec<&'a SetOption> {
        self.set_options
            .iter()
            .filter(|o| !modelled(&o.name))
            .collect()
    }
}

/// A whole fio invocation.
#[derive(Debug, Clone, PartialEq)]
pub struct Invocation {
    pub jobs: Vec<Job>,
    /// `--output=FILE`.
    pub output: Option<PathBuf>,
    /// `--output-format` (default `[Normal]`; `--minimal` → `[Terse]`).
    pub formats: Vec<OutputFormat>,
    /// `--terse-version` (default 3).
    pub terse_version: u32,
    pub parse_only: bool,
    /// `--readonly`: jobs given after it may not write or trim.
    pub readonly: bool,
    /// `--section` names (repeatable).
    pub sections: Vec<String>,
    /// Job files in command-line order.
    pub job_files: Vec<PathBuf>,
    /// Options of global sections / before the first `--name` (JSON "global options").
    pub global_options: Vec<SetOption>,
    /// fio switches this parser accepts but does not interpret (`--eta=never`, ...):
    /// (name, value, argument index).
    pub other_switches: Vec<(String, Option<String>, usize)>,
    /// `--showcmd`, `--help`, `--version`, `--cmdhelp[=opt]`, `--enghelp[=engine]`
    /// given (as `name` or `name=value`): fio would print something and exit without
    /// running jobs. For all but `showcmd` fio stops reading its arguments there, and
    /// so does this parser (`jobs` is then empty).
    pub info_request: Option<String>,
    /// Messages fio prints while still accepting the input (deprecated options, a
    /// failing part of a list value, ...).
    pub warnings: Vec<String>,
}

impl Invocation {
    /// Every distinct option name set by any job (for a "not modelled" check).
    pub fn all_set_options(&self) -> Vec<&SetOption> {
        self.jobs
            .iter()
            .flat_map(|j| j.set_options.iter())
            .collect()
    }
}

/// Parses fio's arguments (without argv[0]) and the job files they name.
pub fn parse_command_line(args: &[String], env: &Env) -> Result<Invocation, ParseError> {
    cmdline::parse(args, env)
}

/// [`parse_command_line`] where a job file named `-` is read from `stdin` (fio's
/// `fio -`).
pub fn parse_command_line_with_stdin(
    args: &[String],
    env: &Env,
    stdin: &str,
) -> Result<Invocation, ParseError> {
    cmdline::parse_with_stdin(args, env, Some(stdin))
}

/// Parses one job file's text as the only job file of an invocation. `path` names it
/// in origins and resolves relative includes.
pub fn parse_job_file_text(text: &str, path: &Path, env: &Env) -> Result<Vec<Job>, ParseError> {
    let mut b = ini::Builder::new(env, Vec::new());
    b.parse_file_text(text.as_bytes(), path, 0)?;
    Ok(b.finish().jobs)
}

/// Reads and parses one job file (see [`parse_job_file_text`]).
pub fn parse_job_file(path: &Path, env: &Env) -> Result<Vec<Job>, ParseError> {
    let mut b = ini::Builder::new(env, Vec::new());
    b.parse_file(path, 0)?;
    Ok(b.finish().jobs)
}

#[cfg(test)]
mod tests;
