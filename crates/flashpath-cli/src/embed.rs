//! flashpath inside another program (the Python package, `python/`): a command runs
//! in the caller's thread as `flashpath ARGS` would run in a process of its own, with
//! three differences, each held by this thread's [`Embedded`]:
//!
//! - what the command writes on standard output is kept and returned;
//! - what it says on standard error (the device's pairing, fio's warnings, a job's
//!   error) is kept, a line each, and returned;
//! - SIGINT and SIGTERM stay the caller's: no handler is installed, and the run stops
//!   where it is (its report marked interrupted, as fio's on a signal) when the
//!   caller's `stop` says so. No progress line is drawn.
//!
//! Outside [`run`] (the `flashpath` binary) none of this applies. The state is per
//! thread, so runs in several threads of one process are independent. A command that
//! simulates in worker threads (compare, validate, calibrate: `measure::parallel`)
//! hands them its stop ([`share`], [`inherit`]) and keeps asking the caller while they
//! work.

use std::cell::RefCell;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

struct Embedded {
    out: Vec<u8>,
    notes: Vec<String>,
    stop: Box<dyn FnMut() -> bool>,
    /// `stop` said so once: the run stays stopped, as a caught signal stays caught;
    /// shared with the command's worker threads.
    stopped: Arc<AtomicBool>,
    /// The caller's progress display: (phase, share done 0..=1) of a simulation run in
    /// this thread (`flashpath fio`'s), now and then.
    progress: Option<Progress>,
}

/// A caller's progress display: called with the phase (`precondition`, `jobs`) and the
/// share of it done.
pub type Progress = Box<dyn FnMut(&str, f64)>;

thread_local! {
    static EMBEDDED: RefCell<Option<Embedded>> = const { RefCell::new(None) };
    /// In a worker thread of an embedded command: its stop.
    static INHERITED: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// What an embedded command ended with.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The exit status `flashpath ARGS` would give: 0, fio's count of failed jobs,
    /// 128 for an interrupted run.
    pub status: u8,
    /// The error line `flashpath ARGS` would print (without `flashpath: error: `), for
    /// a command refused or failed; `None` otherwise.
    pub error: Option<String>,
    pub stdout: Vec<u8>,
    /// Standard error's lines.
    pub notes: Vec<String>,
}

/// Runs the `flashpath` command `args` (the arguments after the program's name) in
/// this thread; `stop` is asked, between steps of a simulation, whether to stop it.
/// `serve`, which runs until a signal, is refused.
pub fn run(args: &[String], stop: impl FnMut() -> bool + 'static) -> Outcome {
    run_with_progress(args, stop, None)
}

/// [`run`], showing a simulation's progress through `progress` (every 100 ms of wall
/// time and at its end).
pub fn run_with_progress(
    args: &[String],
    stop: impl FnMut() -> bool + 'static,
    progress: Option<Progress>,
) -> Outcome {
    if args.first().map(String::as_str) == Some("serve") {
        return Outcome {
            status: 1,
            error: Some(
                "serve runs as a process of its own (the `flashpath serve` command), not \
                 embedded"
                    .into(),
            ),
            ..Outcome::default()
        };
    }
    let previous = EMBEDDED.with(|e| {
        e.borrow_mut().replace(Embedded {
            out: Vec::new(),
            notes: Vec::new(),
            stop: Box::new(stop),
            stopped: Arc::new(AtomicBool::new(false)),
            progress,
        })
    });
    let (status, error) = crate::command_status(args);
    let e = EMBEDDED
        .with(|e| std::mem::replace(&mut *e.borrow_mut(), previous))
        .expect("set above");
    Outcome {
        status,
        error,
        stdout: e.out,
        notes: e.notes,
    }
}

/// Whether this thread runs an embedded command.
pub fn active() -> bool {
    EMBEDDED.with(|e| e.borrow().is_some())
}

/// Whether this thread's embedded caller shows a simulation's progress.
pub fn wants_progress() -> bool {
    EMBEDDED.with(|e| e.borrow().as_ref().is_some_and(|e| e.progress.is_some()))
}

/// Shows the caller the progress of the simulation this thread runs: `share` (0..=1) of
/// `phase` done.
pub fn progress(phase: &str, share: f64) {
    EMBEDDED.with(|e| {
        if let Some(f) = e.borrow_mut().as_mut().and_then(|e| e.progress.as_mut()) {
            f(phase, share);
        }
    });
}

/// Whether this thread runs an embedded command or works for one.
pub fn within() -> bool {
    active() || INHERITED.with(|i| i.borrow().is_some())
}

/// Keeps `bytes` as the command's standard output if embedded; else gives them back.
pub fn write_out(bytes: &[u8]) -> bool {
    EMBEDDED.with(|e| match e.borrow_mut().as_mut() {
        Some(e) => {
            e.out.extend_from_slice(bytes);
            true
        }
        None => false,
    })
}

/// A line for standard error: kept if embedded, else printed.
pub fn note(line: &str) {
    let kept = EMBEDDED.with(|e| match e.borrow_mut().as_mut() {
        Some(e) => {
            e.notes.push(line.to_string());
            true
        }
        None => false,
    });
    if !kept {
        eprintln!("{line}");
    }
}

/// Whether the embedding caller asks the run to stop, or has asked once (never outside
/// an embedded run): in the caller's thread, the caller's `stop` is asked; in a worker
/// thread given the command's stop ([`inherit`]), that is looked at.
pub fn stop_requested() -> bool {
    let own = EMBEDDED.with(|e| {
        e.borrow_mut().as_mut().map(|e| {
            if !e.stopped.load(Ordering::Relaxed) && (e.stop)() {
                e.stopped.store(true, Ordering::Relaxed);
            }
            e.stopped.load(Ordering::Relaxed)
        })
    });
    own.unwrap_or_else(|| {
        INHERITED.with(|i| {
            i.borrow()
                .as_ref()
                .is_some_and(|f| f.load(Ordering::Relaxed))
        })
    })
}

/// The embedded command's stop, for the worker threads it starts (`None` outside an
/// embedded run).
pub fn share() -> Option<Arc<AtomicBool>> {
    EMBEDDED.with(|e| e.borrow().as_ref().map(|e| e.stopped.clone()))
}

/// In a worker thread: the stop of the embedded command that started it.
pub fn inherit(stop: Option<Arc<AtomicBool>>) {
    INHERITED.with(|i| *i.borrow_mut() = stop);
}

/// Standard output, or the embedded command's kept output.
pub fn stdout() -> Box<dyn Write> {
    if active() {
        Box::new(Kept)
    } else {
        Box::new(std::io::BufWriter::new(std::io::stdout().lock()))
    }
}

/// A writer into the embedded command's kept output.
struct Kept;

impl Write for Kept {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if write_out(buf) {
            Ok(buf.len())
        } else {
            Err(std::io::Error::other("the embedded run has ended"))
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn output_and_notes_are_kept_and_errors_returned() {
        let o = run(&args(&["--version"]), || false);
        assert_eq!(o.status, 0);
        assert!(String::from_utf8(o.stdout)
            .unwrap()
            .starts_with("flashpath "));
        let o = run(&args(&["nosuch"]), || false);
        assert_eq!(o.status, 1);
        assert!(o.error.unwrap().starts_with("unknown command 'nosuch'"));
        assert!(o.stdout.is_empty());
        let o = run(&args(&["serve", "--nbd", "unix:/tmp/x"]), || false);
        assert_eq!(o.status, 1);
        assert!(!active());
    }

    #[test]
    fn a_run_gives_the_json_report_and_its_pairing_note() {
        let o = run(
            &args(&[
                "fio",
                "--device",
                "emmc51-hs400-32g",
                "--precondition",
                "sequential",
                "--name=r",
                "--rw=randread",
                "--bs=4k",
                "--size=4m",
                "--number_ios=200",
                "--output-format=json",
            ]),
            || false,
        );
        assert_eq!(o.status, 0, "{:?}", o.error);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["jobs"][0]["read"]["total_ios"], 200);
        assert!(
            o.notes.iter().any(|n| n.contains("runs on host")),
            "{:?}",
            o.notes
        );
    }

    #[test]
    fn progress_goes_to_the_caller_and_ends_at_the_whole() {
        let seen = std::rc::Rc::new(RefCell::new(Vec::<(String, f64)>::new()));
        let log = seen.clone();
        let t = std::time::Instant::now();
        let o = run_with_progress(
            &[
                args(&["fio"]),
                args(&RANDREAD),
                args(&[
                    "--ioengine=libaio",
                    "--iodepth=32",
                    "--number_ios=300000",
                    "--output-format=json",
                ]),
            ]
            .concat(),
            || false,
            Some(Box::new(move |phase: &str, share: f64| {
                log.borrow_mut().push((phase.to_string(), share))
            })),
        );
        assert_eq!(o.status, 0, "{:?}", o.error);
        let took = t.elapsed();
        let seen = seen.borrow();
        // Every 100 ms of wall time, and once at the end.
        if took > std::time::Duration::from_millis(350) {
            assert!(seen.len() >= 3, "{took:?}: {seen:?}");
        }
        assert_eq!(seen.last().unwrap(), &("jobs".to_string(), 1.0), "{seen:?}");
        assert!(seen.iter().all(|(_, s)| (0.0..=1.0).contains(s)));
        let phases: Vec<&str> = seen.iter().map(|(p, _)| p.as_str()).collect();
        let first_jobs = phases.iter().position(|&p| p == "jobs").unwrap();
        assert!(
            phases[first_jobs..].iter().all(|&p| p == "jobs"),
            "{phases:?}"
        );
    }

    /// fio arguments of a job of 4 KiB random reads over 1 GiB of a sequentially
    /// preconditioned device (the tests add how long it runs).
    const RANDREAD: [&str; 6] = [
        "--precondition",
        "sequential",
        "--name=r",
        "--rw=randread",
        "--bs=4k",
        "--size=1g",
    ];

    /// [`RANDREAD`] time-based; with `--runtime=100`, far longer than a test waits.
    fn long() -> Vec<String> {
        [args(&RANDREAD), args(&["--time_based"])].concat()
    }

    /// A caller's stop that looks only now and then: it says stop on its third look.
    fn third_look() -> impl FnMut() -> bool {
        let mut asked = 0;
        move || {
            asked += 1;
            asked == 3
        }
    }

    #[test]
    fn stop_reaches_the_worker_threads_of_compare() {
        let t = std::time::Instant::now();
        let mut a = args(&["compare", "--vary", "driver=mmc-legacy,mmc-hsq"]);
        a.extend(long());
        a.push("--runtime=100".into());
        let o = run(&a, third_look());
        assert_eq!(o.status, 1);
        let e = o.error.unwrap();
        assert!(e.contains("interrupted"), "{e}");
        assert!(t.elapsed() < std::time::Duration::from_secs(30));
        assert!(!within());
    }

    #[test]
    fn stop_ends_the_run_early_and_marks_it_interrupted() {
        let mut a = args(&["fio"]);
        a.extend(long());
        a.extend(args(&["--runtime=100", "--output-format=json"]));
        let o = run(&a, third_look());
        assert_eq!(o.status, 128);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(v["flashpath"]["interrupted"].is_object(), "{v}");
    }
}
