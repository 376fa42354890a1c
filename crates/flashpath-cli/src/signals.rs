//! SIGINT and SIGTERM during `flashpath fio`, as fio takes them: the first stops the
//! simulation where it is and the report of the simulated time run so far is printed,
//! marked as interrupted, and the exit status is fio's (128). A signal that comes a
//! second or more after the first ends the process at once (128 + its number), the way
//! out of a report that does not end. Signals within that second count as the first:
//! `timeout` and a terminal's Ctrl-C can deliver one SIGINT twice (to the process and
//! to its group), and that must not cost the report.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// Later signals within this time of the first are the same request to stop.
const GRACE_NS: u64 = 1_000_000_000;

struct Caught {
    any: AtomicBool,
    which: AtomicUsize,
    /// Nanoseconds from `epoch` to the first signal.
    first_ns: AtomicU64,
    epoch: Instant,
}

static CAUGHT: OnceLock<Caught> = OnceLock::new();

/// Takes SIGINT and SIGTERM from now on (once a process); not in an embedded run,
/// whose signals stay its caller's (crate::embed).
pub fn install() -> anyhow::Result<()> {
    if crate::embed::active() {
        return Ok(());
    }
    use signal_hook::consts::{SIGINT, SIGTERM};
    CAUGHT.get_or_init(|| Caught {
        any: AtomicBool::new(false),
        which: AtomicUsize::new(0),
        first_ns: AtomicU64::new(0),
        epoch: Instant::now(),
    });
    for sig in [SIGINT, SIGTERM] {
        // SAFETY: the handler only reads the monotonic clock (clock_gettime is
        // async-signal-safe), touches atomics and may call _exit: all allowed in a
        // signal handler.
        unsafe { signal_hook::low_level::register(sig, move || on_signal(sig)) }?;
    }
    Ok(())
}

fn on_signal(sig: i32) {
    let Some(c) = CAUGHT.get() else { return };
    let now = c.epoch.elapsed().as_nanos() as u64;
    if c.any.load(Ordering::SeqCst) {
        if now.saturating_sub(c.first_ns.load(Ordering::SeqCst)) >= GRACE_NS {
            signal_hook::low_level::exit(128 + sig);
        }
        return;
    }
    c.first_ns.store(now, Ordering::SeqCst);
    c.which.store(sig as usize, Ordering::SeqCst);
    c.any.store(true, Ordering::SeqCst);
}

/// The signal caught, if one was; in an embedded run, SIGINT once its caller asks the
/// run to stop.
pub fn caught() -> Option<i32> {
    if crate::embed::stop_requested() {
        return Some(signal_hook::consts::SIGINT);
    }
    let c = CAUGHT.get()?;
    if !c.any.load(Ordering::SeqCst) {
        return None;
    }
    Some(c.which.load(Ordering::SeqCst) as i32)
}
