//! `flashpath serve`: the simulated device as an NBD server that real tools drive in
//! real time (fio's nbd engine, nbdcopy, nbdinfo, qemu-img and qemu-io; the kernel's
//! nbd client speaks the same protocol, untested).
//!
//! Each NBD request enters the simulated host as a block request (sim/external.rs) and
//! runs through its block layer, host driver, bus and device; what is above the block
//! layer (the system call, the page cache, a file system) is the real client's own and
//! costs nothing here. A reply goes out when the wall clock reaches the request's
//! simulated completion (serve/server.rs). The data is kept in a sparse file
//! (serve/store.rs); the protocol is in serve/nbd.rs.

pub mod nbd;
mod server;
mod store;

use crate::run;
use anyhow::{anyhow, bail, Context, Result};
use flashpath_core::sim::{Precondition, Sim, SimConfig};
use server::{Shared, Stream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Instant;

/// Where the server listens.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Listen {
    Unix(PathBuf),
    Tcp(String),
}

/// `serve`'s own options.
#[derive(Debug)]
struct ServeOptions {
    listen: Listen,
    data: Option<PathBuf>,
    once: bool,
    /// `--no-busy-poll`: readers always wait in the kernel.
    no_busy_poll: bool,
}

fn parse_listen(v: &str) -> Result<Listen> {
    if let Some(p) = v.strip_prefix("unix:") {
        if p.is_empty() {
            bail!("--nbd {v}: the Unix socket's path is empty");
        }
        return Ok(Listen::Unix(PathBuf::from(p)));
    }
    if let Some(a) = v.strip_prefix("tcp:") {
        let (host, port) = a
            .rsplit_once(':')
            .ok_or_else(|| anyhow!("--nbd {v}: expected tcp:HOST:PORT"))?;
        port.parse::<u16>()
            .map_err(|_| anyhow!("--nbd {v}: the port '{port}' is not a number from 0 to 65535"))?;
        if host.is_empty() {
            bail!("--nbd {v}: the host is empty (tcp:127.0.0.1:PORT)");
        }
        return Ok(Listen::Tcp(a.to_string()));
    }
    bail!("--nbd {v}: expected unix:PATH or tcp:HOST:PORT")
}

fn parse_serve_options(rest: &[String]) -> Result<ServeOptions> {
    let mut listen = None;
    let mut data = None;
    let mut once = false;
    let mut no_busy_poll = false;
    let mut i = 0;
    while i < rest.len() {
        if let Some(v) = run::option_value(rest, &mut i, "--nbd")? {
            listen = Some(parse_listen(&v)?);
        } else if let Some(v) = run::option_value(rest, &mut i, "--data")? {
            if v.is_empty() {
                bail!("--data: the file name is empty");
            }
            data = Some(PathBuf::from(v));
        } else if rest[i] == "--once" {
            once = true;
        } else if rest[i] == "--no-busy-poll" {
            no_busy_poll = true;
        } else {
            bail!(
                "serve: unknown argument '{}' (serve takes --nbd, --data, --once, --no-busy-poll and the flashpath options; `flashpath serve --help`)",
                rest[i]
            );
        }
        i += 1;
    }
    let listen =
        listen.ok_or_else(|| anyhow!("serve: --nbd unix:PATH or --nbd tcp:HOST:PORT is needed"))?;
    Ok(ServeOptions {
        listen,
        data,
        once,
        no_busy_poll,
    })
}

pub fn command(args: &[String]) -> Result<()> {
    let (opts, rest) = run::split_options(args)?;
    let so = parse_serve_options(&rest)?;
    let (host, device, driver) = run::system_announced(&opts)?;
    // A request source's simulation is mapped in address order or not at all; `auto`
    // (and random, which would run jobs first) is the sequential layout.
    let precondition = match opts.precondition {
        Some(Precondition::Off) => Precondition::Off,
        Some(Precondition::Random) => bail!(
            "serve: --precondition random runs fio jobs before the requests; serve's device is mapped sequentially (sequential, the default) or never written (off)"
        ),
        _ => Precondition::Sequential,
    };
    let cores = host.cores;
    let size = device.capacity_bytes;
    let cfg = SimConfig {
        host,
        device,
        driver,
        jobs: vec![],
        precondition,
    };
    let device_name = cfg.device.name.clone();
    let mut sim = Sim::for_external(cfg).map_err(|e| anyhow!("serve: {e}"))?;
    let mut traces = crate::trace_out::TraceOutputs::open(&opts)?.start(&mut sim, driver, cores)?;
    let store = store::Store::open(so.data.as_deref(), size)?;

    let listener: Box<dyn Fn() -> std::io::Result<Box<dyn Stream>> + Send> = match &so.listen {
        Listen::Unix(p) => {
            if let Ok(m) = std::fs::symlink_metadata(p) {
                use std::os::unix::fs::FileTypeExt;
                if !m.file_type().is_socket() {
                    bail!(
                        "--nbd unix:{}: the path exists and is not a socket",
                        p.display()
                    );
                }
                // A socket left by a server that was killed: nothing listens on it.
                if std::os::unix::net::UnixStream::connect(p).is_ok() {
                    bail!(
                        "--nbd unix:{}: another server is listening there",
                        p.display()
                    );
                }
                std::fs::remove_file(p).with_context(|| format!("--nbd unix:{}", p.display()))?;
            }
            let l = std::os::unix::net::UnixListener::bind(p)
                .with_context(|| format!("--nbd unix:{}", p.display()))?;
            Box::new(move || l.accept().map(|(s, _)| Box::new(s) as Box<dyn Stream>))
        }
        Listen::Tcp(a) => {
            let l = std::net::TcpListener::bind(a).with_context(|| format!("--nbd tcp:{a}"))?;
            Box::new(move || {
                let (s, _) = l.accept()?;
                // Replies are small and each one is awaited: no Nagle delay.
                let _ = s.set_nodelay(true);
                Ok(Box::new(s) as Box<dyn Stream>)
            })
        }
    };
    crate::signals::install()?;

    let flags = nbd::TF_HAS_FLAGS
        | nbd::TF_SEND_FLUSH
        | nbd::TF_SEND_FUA
        | nbd::TF_SEND_TRIM
        | nbd::TF_SEND_WRITE_ZEROES
        | nbd::TF_CAN_MULTI_CONN;
    let shared = Arc::new(Shared {
        export: nbd::Export {
            name: device_name.clone(),
            description: format!("flashpath: simulated {device_name}"),
            size,
            flags,
        },
        store,
        t0: Instant::now(),
        seen: Mutex::new(server::Seen::default()),
        pollers: server::Pollers::new(if so.no_busy_poll {
            0
        } else {
            server::busy_poll_slots()
        }),
    });
    let where_ = match &so.listen {
        Listen::Unix(p) => format!("nbd+unix:///?socket={}", p.display()),
        Listen::Tcp(a) => format!("nbd://{a}/"),
    };
    eprintln!(
        "flashpath serve: {device_name} ({size} bytes) on {where_}; {}. Simulated from the block layer down (block layer, {} driver, bus, device); the client's own system calls are real and not simulated again. Replies go out at each request's simulated completion. Ctrl-C ends it with a report.",
        shared.store.describe(),
        driver.name(),
    );

    let (tx, rx) = mpsc::channel();
    {
        let shared = shared.clone();
        std::thread::spawn(move || {
            let mut conn = 0usize;
            let live = Arc::new(AtomicUsize::new(0));
            loop {
                let Ok(stream) = listener() else {
                    if crate::signals::caught().is_some() {
                        return;
                    }
                    // Out of file descriptors, say: not a busy loop.
                    std::thread::sleep(std::time::Duration::from_millis(10));
                    continue;
                };
                if live.load(Ordering::SeqCst) >= server::MAX_CONNECTIONS {
                    eprintln!(
                        "flashpath serve: {} connections are open; refusing another",
                        server::MAX_CONNECTIONS
                    );
                    stream.shutdown_both();
                    continue;
                }
                live.fetch_add(1, Ordering::SeqCst);
                let (shared, tx, live) = (shared.clone(), tx.clone(), live.clone());
                std::thread::spawn(move || {
                    server::serve_connection(conn, stream, shared, tx);
                    live.fetch_sub(1, Ordering::SeqCst);
                });
                conn += 1;
            }
        });
    }
    let (mut sim, traced) = server::simulate(sim, rx, &shared, so.once, cores, traces.as_mut());
    let traced = traced.and_then(|()| traces.map_or(Ok(()), |t| t.finish_sim(&mut sim)));
    let result = sim.finish();
    if let Listen::Unix(p) = &so.listen {
        let _ = std::fs::remove_file(p);
    }
    if shared.store.kept() {
        // A clean end leaves a kept data file whole; the temporary one is dropped
        // (syncing it would only write it out to be deleted).
        let _ = shared.store.sync();
    }
    let seen = shared.seen.lock().unwrap_or_else(|e| e.into_inner());
    crate::emit(&report(
        &seen,
        &result,
        shared.t0.elapsed(),
        shared.store.allocated(),
    ))?;
    traced
}

/// The end report: what the device saw per direction, the emulator's lateness, the
/// device's counters.
fn report(
    seen: &server::Seen,
    result: &flashpath_core::stats::RunResult,
    wall: std::time::Duration,
    stored: u64,
) -> String {
    let mut s = String::new();
    let secs = wall.as_secs_f64().max(1e-9);
    s.push_str(&format!(
        "flashpath serve: {:.3} s of wall (and simulated) time, {} connections, {} requests refused with an error\n",
        secs, seen.connections, seen.refused
    ));
    for (k, name) in ["read", "write", "trim", "flush"].iter().enumerate() {
        if seen.ios[k] == 0 {
            continue;
        }
        let h = &seen.lat[k];
        let p = h.percentiles(&[50.0, 99.0, 99.9]);
        s.push_str(&format!(
            "  {name:5}: {} requests, {} bytes ({:.1} MB/s over the whole time); latency (block layer to completion, simulated) mean {:.1} us, p50 {:.1} us, p99 {:.1} us, p99.9 {:.1} us, max {:.1} us\n",
            seen.ios[k],
            seen.bytes[k],
            seen.bytes[k] as f64 / secs / 1e6,
            h.mean() / 1e3,
            p[0] as f64 / 1e3,
            p[1] as f64 / 1e3,
            p[2] as f64 / 1e3,
            h.max() as f64 / 1e3,
        ));
    }
    let (l, w) = (&seen.lateness, &seen.written);
    if l.count() > 0 {
        let p = l.percentiles(&[50.0, 99.0]);
        let q = w.percentiles(&[50.0, 99.0]);
        s.push_str(&format!(
            "  lateness of replies against their simulated completion: p50 {:.1} us, p99 {:.1} us, max {:.1} us ({} replies); their socket writes returned p50 {:.1} us, p99 {:.1} us after it\n",
            p[0] as f64 / 1e3,
            p[1] as f64 / 1e3,
            l.max() as f64 / 1e3,
            l.count(),
            q[0] as f64 / 1e3,
            q[1] as f64 / 1e3,
        ));
    }
    if seen.status_queries > 0 {
        s.push_str(&format!(
            "  block status: {} queries, answered from the data file at once (not simulated)\n",
            seen.status_queries
        ));
    }
    let d = &result.system;
    s.push_str(&format!(
        "  device: {} bytes read and {} written by the host; data file holds {} bytes\n",
        d.device_host_read_bytes, d.device_host_write_bytes, stored
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses() {
        assert_eq!(
            parse_listen("unix:/tmp/s").unwrap(),
            Listen::Unix("/tmp/s".into())
        );
        assert_eq!(
            parse_listen("tcp:127.0.0.1:10809").unwrap(),
            Listen::Tcp("127.0.0.1:10809".into())
        );
        for bad in [
            "unix:",
            "tcp:1.2.3.4",
            "tcp::80",
            "tcp:h:99999",
            "udp:x",
            "/tmp/s",
        ] {
            assert!(parse_listen(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn serve_options() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let o = parse_serve_options(&a(&["--nbd", "unix:/x", "--data=/d", "--once"])).unwrap();
        assert_eq!(o.listen, Listen::Unix("/x".into()));
        assert_eq!(o.data, Some(PathBuf::from("/d")));
        assert!(o.once);
        assert!(!o.no_busy_poll);
        let o = parse_serve_options(&a(&["--no-busy-poll", "--nbd=tcp:127.0.0.1:1"])).unwrap();
        assert!(o.no_busy_poll);
        assert!(parse_serve_options(&a(&[]))
            .unwrap_err()
            .to_string()
            .contains("--nbd"));
        assert!(parse_serve_options(&a(&["--nbd", "unix:/x", "--bogus"]))
            .unwrap_err()
            .to_string()
            .contains("unknown argument '--bogus'"));
        assert!(parse_serve_options(&a(&["--nbd"])).is_err());
    }
}
