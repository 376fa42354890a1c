//! SIGINT and SIGTERM during `flashpath fio`, as fio takes them: the first stops the
//! simulation where it is and the report of the simulated time run so far is printed,
//! marked as interrupted, and the exit status is fio's (128); a second signal ends the
//! process at once (128 + its number).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

struct Caught {
    any: Arc<AtomicBool>,
    which: Arc<AtomicUsize>,
}

static CAUGHT: OnceLock<Caught> = OnceLock::new();

/// Takes SIGINT and SIGTERM from now on (once a process).
pub fn install() -> anyhow::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let c = CAUGHT.get_or_init(|| Caught {
        any: Arc::new(AtomicBool::new(false)),
        which: Arc::new(AtomicUsize::new(0)),
    });
    for sig in [SIGINT, SIGTERM] {
        // In order: a signal that finds one already caught ends the process; then it
        // is recorded.
        signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, Arc::clone(&c.any))?;
        signal_hook::flag::register_usize(sig, Arc::clone(&c.which), sig as usize)?;
        signal_hook::flag::register(sig, Arc::clone(&c.any))?;
    }
    Ok(())
}

/// The signal caught, if one was.
pub fn caught() -> Option<i32> {
    let c = CAUGHT.get()?;
    if !c.any.load(Ordering::SeqCst) {
        return None;
    }
    Some(c.which.load(Ordering::SeqCst) as i32)
}
