//! `flashpath._native`: the `flashpath` command, run in the calling Python thread with
//! the GIL released (`flashpath_cli::embed`). The Python package (`flashpath/`) builds
//! the arguments and reads the output; the figures are the command's own.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

create_exception!(
    _native,
    FlashpathError,
    PyException,
    "A command flashpath refused or could not finish; the message is the line `flashpath` prints after `flashpath: error: `."
);

/// A command's end as Python gets it: exit status, standard output, standard error's
/// lines, error line.
type Ended = (u8, Py<PyBytes>, Vec<String>, Option<String>);

/// How often a running simulation lets Python look for a signal (Ctrl-C).
const SIGNAL_CHECK: Duration = Duration::from_millis(50);

/// Runs `flashpath ARGS` in this thread: returns (exit status, standard output as bytes,
/// standard error's lines, the error line of a refused or failed command or None; the
/// Python side raises FlashpathError with it). Ctrl-C (a Python signal handler
/// raising, in the main thread) or `stop()` returning true (any thread) stops a
/// simulation at its next step, each looked at every 50 ms; a signal's exception is
/// raised once the command has ended.
/// `progress(phase, share)`, if given, is called every 100 ms of a simulation and at
/// its end (an exception it raises stops the run and is raised).
#[pyfunction]
#[pyo3(signature = (args, stop=None, progress=None))]
fn command(
    py: Python<'_>,
    args: Vec<String>,
    stop: Option<PyObject>,
    progress: Option<PyObject>,
) -> PyResult<Ended> {
    let raised: Arc<Mutex<Option<PyErr>>> = Arc::new(Mutex::new(None));
    let seen = raised.clone();
    let shown = raised.clone();
    let outcome = py.allow_threads(move || {
        let mut last = Instant::now();
        let progress = progress.map(|f| -> flashpath_cli::embed::Progress {
            Box::new(move |phase: &str, share: f64| {
                Python::with_gil(|py| {
                    if let Err(e) = f.call1(py, (phase, share)) {
                        shown
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .get_or_insert(e);
                    }
                })
            })
        });
        let failed = already_raised(&seen);
        flashpath_cli::embed::run_with_progress(
            &args,
            move || {
                if failed() {
                    return true;
                }
                if last.elapsed() < SIGNAL_CHECK {
                    return false;
                }
                last = Instant::now();
                let asked = Python::with_gil(|py| {
                    py.check_signals()?;
                    match &stop {
                        Some(f) => f.call0(py)?.is_truthy(py),
                        None => Ok(false),
                    }
                });
                match asked {
                    Ok(asked) => asked,
                    Err(e) => {
                        *seen.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                        true
                    }
                }
            },
            progress,
        )
    });
    if let Some(e) = raised.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(e);
    }
    Ok((
        outcome.status,
        PyBytes::new(py, &outcome.stdout).unbind(),
        outcome.notes,
        outcome.error,
    ))
}

/// Whether an exception was raised during the run (by a signal handler, `stop` or
/// `progress`): it is kept to be raised, and the run stops.
fn already_raised(raised: &Arc<Mutex<Option<PyErr>>>) -> impl Fn() -> bool {
    let raised = raised.clone();
    move || raised.lock().unwrap_or_else(|p| p.into_inner()).is_some()
}

/// The version of the crates this module was built from.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(command, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add("FlashpathError", m.py().get_type::<FlashpathError>())?;
    Ok(())
}
