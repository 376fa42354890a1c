//! Fuzzes what `flashpath serve` reads from a client: the bytes are the client's whole
//! stream (client flags, options, then requests with their payloads), taken as the
//! server's reader takes it (`serve::nbd::drain_session`: the handshake, each request
//! header read and checked, a write's payload read and dropped). Nothing a client sends
//! may panic, and no allocation may follow a length the client gave beyond the
//! protocol's limits (libFuzzer's -rss_limit_mb).
#![no_main]

use flashpath_cli::serve::nbd;
use libfuzzer_sys::fuzz_target;
use std::io::{Cursor, Read, Write};

struct Client {
    input: Cursor<Vec<u8>>,
    replies: u64,
}

impl Read for Client {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.input.read(buf)
    }
}

impl Write for Client {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.replies += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let export = nbd::Export {
        name: "emmc51-hs400-32g".into(),
        description: "fuzz".into(),
        size: 31_268_536_320,
        flags: nbd::TF_HAS_FLAGS | nbd::TF_SEND_FLUSH | nbd::TF_SEND_TRIM,
    };
    let mut c = Client {
        input: Cursor::new(data.to_vec()),
        replies: 0,
    };
    // A protocol error or the end of the stream ends the session; neither may panic.
    let _ = nbd::drain_session(&mut c, &export);
});
