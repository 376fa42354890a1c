//! Scratch files: a file in the temporary directory (`TMPDIR`) that only this process
//! can reach, made under a name of its own (O_EXCL) and unlinked at once, so it goes
//! when the process ends however it ends. The FTL's reverse maps (device/reverse_map.rs)
//! and `flashpath serve`'s data store keep what grows with a run in such files.

use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};

/// A new scratch file, already unlinked; `tag` names what it is for in its short-lived
/// name (`flashpath-TAG-PID-N`).
pub fn file(tag: &str) -> std::io::Result<File> {
    static N: AtomicU64 = AtomicU64::new(0);
    let path = std::env::temp_dir().join(format!(
        "flashpath-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    std::fs::remove_file(&path)?;
    Ok(f)
}
