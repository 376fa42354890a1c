//! The threads of `flashpath serve`, and how simulated time keeps to the wall clock.
//!
//! ```text
//!  client ──▶ reader thread (one per connection; it polls its socket while the
//!               connection is busy, see [`PollingSocket`]): handshake, request headers,
//!               a write's payload into the store ──ToSim──▶ ┐
//!                                                         ▼
//!             simulation thread (one): the Sim, fed at each request's arrival time,
//!               run up to the wall clock's now and never past it ──Reply──▶ ┐
//!                                                                            ▼
//!  client ◀── the simulation thread itself, for most replies (a read's data from the
//!               store, then the reply); a connection's writer thread for those that
//!               wait for fdatasync (FLUSH, FUA) and for errors answered at once
//! ```
//!
//! Time: simulated time is the wall time since the server started (t0), one to one.
//! A request is stamped when its header has been read (and its payload, for a write)
//! and enters the simulated block layer at that time, or at the simulated time already
//! reached if the simulation thread took it up later (the lag is in the lateness
//! figure). The simulation runs events only up to the wall clock's now, so a
//! completion is known no earlier than it is due, and its reply goes out as soon as it
//! is known: how late, against the simulated completion, is the emulator's own accuracy
//! figure (p50/p99 lateness in the end report). The thread sleeps until the next
//! simulated event or the next request; the last millisecond before an event it spins
//! (see [`SPIN_NS`]).
//!
//! The simulation thread writes a reply itself: handing it to another thread cost a
//! wake-up, 40-50 µs of lateness at the median on this machine. A socket write that
//! blocks longer than [`WRITE_TIMEOUT`] (a client that stopped reading) ends that
//! connection, so one client cannot stall the others for long.
//!
//! Plain threads rather than an async runtime: the work per request is a few system
//! calls and one simulation step, the number of connections is small (one per fio job
//! or per nbdcopy worker), and what matters is the simulation thread's wake-up precision,
//! which a spin on a channel gives directly.
//!
//! Bounded memory: a write's payload goes to the store as it is read; a connection has
//! at most [`MAX_IN_FLIGHT`] requests in flight (its reader waits beyond that); a read's
//! buffer lives only while its reply is written.

use super::nbd::{self, Command, Export, Negotiated, Request};
use super::store::Store;
use flashpath_core::engine::SimTime;
use flashpath_core::sim::{ExternalOp, ExternalRequest, Sim};
use flashpath_hist::LatHist;
use std::collections::HashMap;
use std::io::{BufReader, BufWriter, Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Requests of one connection in flight before its reader waits.
pub const MAX_IN_FLIGHT: usize = 1024;
/// Extents in one block status reply at most (the spec's ceiling is 2^20; the client
/// asks again from where a reply stops).
const MAX_EXTENTS: usize = 4096;
/// The simulation thread spins (instead of sleeping) this close to its next event.
/// A timed sleep on this machine (a KVM guest) ends 90 µs late at the median and
/// 130-240 µs at the 99th percentile, and the thread then runs slowly for a while
/// (a `run_until` of a few events took 9-20 µs just after one): with a 200 µs window, an
/// SD card's 128 KiB reads, whose events come 0.5-1.5 ms apart, had replies 33 µs late
/// at the median; with a 1 ms window, 3.5 µs, as for reads with events closer together.
/// The cost is a busy core for up to a millisecond before each event.
const SPIN_NS: u64 = 1_000_000;
/// It looks for a signal (SIGINT, SIGTERM) at least this often.
const POLL: Duration = Duration::from_millis(50);
/// Connections served at once (each has two threads); more are closed at once.
pub const MAX_CONNECTIONS: usize = 64;
/// A client has this long to finish its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// A reply's write may block this long before its connection is given up.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(2);

/// A byte stream one connection is served over (a Unix or TCP socket).
pub trait Stream: Read + Write + Send + 'static {
    fn try_clone_box(&self) -> std::io::Result<Box<dyn Stream>>;
    fn shutdown_both(&self);
    fn write_timeout(&self, t: Duration);
    fn read_timeout(&self, t: Option<Duration>);
    fn raw_fd(&self) -> std::os::unix::io::RawFd;
}

/// Unix and TCP sockets have the same methods under the same names.
macro_rules! socket_stream {
    ($t:ty) => {
        impl Stream for $t {
            fn try_clone_box(&self) -> std::io::Result<Box<dyn Stream>> {
                Ok(Box::new(self.try_clone()?))
            }
            fn shutdown_both(&self) {
                let _ = self.shutdown(std::net::Shutdown::Both);
            }
            fn write_timeout(&self, t: Duration) {
                let _ = self.set_write_timeout(Some(t));
            }
            fn read_timeout(&self, t: Option<Duration>) {
                let _ = self.set_read_timeout(t);
            }
            fn raw_fd(&self) -> std::os::unix::io::RawFd {
                std::os::unix::io::AsRawFd::as_raw_fd(self)
            }
        }
    };
}
socket_stream!(std::os::unix::net::UnixStream);
socket_stream!(std::net::TcpStream);

/// To the simulation thread.
enum ToSim {
    /// A connection reached transmission: its writer thread's channel, and its socket's
    /// write side with its count of requests in flight.
    Open {
        conn: usize,
        replies: Sender<ToConn>,
        out: Arc<Out>,
    },
    Request {
        conn: usize,
        cookie: u64,
        cmd: Command,
        offset: u64,
        len: u64,
        at: Instant,
    },
    /// The connection's reader ended (DISC, the client closed, or a protocol error):
    /// once its requests in flight are answered, its writer ends.
    Closed { conn: usize },
}

/// To a connection's writer thread.
enum ToConn {
    /// Answer `cookie`: `error` (0: success); for a successful read, `len` bytes at
    /// `offset` from the store. `due`: the simulated completion as a wall-clock instant
    /// (`None`: an error answered at once, not simulated).
    Reply {
        cookie: u64,
        error: u32,
        cmd: Command,
        offset: u64,
        len: u64,
        due: Option<Instant>,
    },
    /// No more replies: the writer ends.
    End,
}

/// What the server saw, for the end report.
#[derive(Default)]
pub struct Seen {
    /// Per direction (read, write, trim, flush): requests, bytes, simulated latency
    /// (block layer to completion).
    pub ios: [u64; 4],
    pub bytes: [u64; 4],
    pub lat: [LatHist; 4],
    /// How late replies went out against their simulated completions: as their socket
    /// write began, and as it returned (the difference is the write, which wakes the
    /// client).
    pub lateness: LatHist,
    pub written: LatHist,
    /// Requests answered with an error at once (not simulated).
    pub refused: u64,
    /// `BLOCK_STATUS` queries, answered from the data file at once (not simulated).
    pub status_queries: u64,
    pub connections: u64,
}

fn dir_index(cmd: Command) -> usize {
    match cmd {
        Command::Read => 0,
        Command::Write { .. } | Command::WriteZeroes { .. } => 1,
        Command::Trim { .. } => 2,
        // (A block status query never reaches the simulation.)
        Command::Flush | Command::Disconnect | Command::BlockStatus { .. } => 3,
    }
}

pub struct Shared {
    pub store: Store,
    pub export: Export,
    pub t0: Instant,
    pub seen: Mutex<Seen>,
    pub pollers: Pollers,
}

/// How long a reader keeps polling its socket after the connection's last request was
/// read or answered, before it waits in the kernel.
const POLL_IDLE: Duration = Duration::from_millis(1);

/// Readers allowed to busy-poll at once ([`busy_poll_slots`]; 0: none).
pub struct Pollers {
    slots: usize,
    taken: AtomicUsize,
}

impl Pollers {
    pub fn new(slots: usize) -> Pollers {
        Pollers {
            slots,
            taken: AtomicUsize::new(0),
        }
    }

    fn take(&self) -> bool {
        self.taken
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.slots).then_some(n + 1)
            })
            .is_ok()
    }

    fn give_back(&self) {
        self.taken.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One busy-polling reader per core beyond the simulation thread's, at least one: on
/// this machine's two cores, one.
pub fn busy_poll_slots() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get().saturating_sub(1))
        .max(1)
}

/// A connection's socket as its reader reads it after the handshake. While the
/// connection is busy (requests in flight, or the last one read or answered within
/// [`POLL_IDLE`]) and a polling slot is free, it polls the socket (`recv` with
/// `MSG_DONTWAIT`, in a loop) instead of sleeping in the kernel; otherwise it waits in
/// `poll(2)`. Why: in this machine's KVM guest, a thread that sleeps in the kernel and
/// is woken by the client's request (and the idle virtual CPU under it) starts 30-40 µs
/// later than one that polls; that was most of the NBD round trip (fio's 4 KiB reads on
/// the eMMC at QD1: 222 µs over NBD with sleeping readers, 188 µs with polling ones,
/// against 178 µs simulated). The cost: a busy core while a client is active.
struct PollingSocket {
    /// Owns the socket `fd` is (the writer has its own handle of it).
    _stream: Box<dyn Stream>,
    fd: std::os::unix::io::RawFd,
    out: Arc<Out>,
    shared: Arc<Shared>,
    last: Instant,
    polling: bool,
}

impl PollingSocket {
    fn stop_polling(&mut self) {
        if self.polling {
            self.polling = false;
            self.shared.pollers.give_back();
        }
    }
}

impl Drop for PollingSocket {
    fn drop(&mut self) {
        self.stop_polling();
    }
}

impl Read for PollingSocket {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            // SAFETY: recv into `buf`, of its length, on the socket this value owns.
            let r = unsafe {
                libc::recv(
                    self.fd,
                    buf.as_mut_ptr().cast::<libc::c_void>(),
                    buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if r >= 0 {
                self.last = Instant::now();
                return Ok(r as usize);
            }
            let e = std::io::Error::last_os_error();
            match e.kind() {
                std::io::ErrorKind::Interrupted => continue,
                std::io::ErrorKind::WouldBlock => {}
                _ => return Err(e),
            }
            // Busy: requests in flight, or the last one read or answered within
            // POLL_IDLE (a client at QD1 sends its next request a round trip after
            // the reply).
            let now = Instant::now();
            if self.out.in_flight.load(Ordering::Acquire) > 0 {
                self.last = now;
            }
            let busy = now.duration_since(self.last) < POLL_IDLE;
            if busy && (self.polling || self.shared.pollers.take()) {
                self.polling = true;
                std::hint::spin_loop();
                continue;
            }
            self.stop_polling();
            let mut p = libc::pollfd {
                fd: self.fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd, valid for the call. The timeout lets a connection
            // that became busy again (a reply went out) take a polling slot.
            let n = unsafe { libc::poll(&mut p, 1, POLL_WAIT_MS) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
}

/// A reader waiting in `poll(2)` looks again this often (ms).
const POLL_WAIT_MS: i32 = 50;

/// Serves one accepted connection: the handshake, then its reader loop; spawns its
/// writer. Returns when the connection's reader is done.
pub fn serve_connection(
    conn: usize,
    stream: Box<dyn Stream>,
    shared: Arc<Shared>,
    to_sim: Sender<ToSimMsg>,
) {
    let Ok(out) = stream.try_clone_box() else {
        return;
    };
    // A client that connects and says nothing does not hold its threads for ever.
    stream.read_timeout(Some(HANDSHAKE_TIMEOUT));
    let mut duplex = Duplex {
        r: BufReader::new(stream),
        w: BufWriter::new(out),
    };
    let session = match nbd::handshake(&mut duplex, &shared.export) {
        Ok(Negotiated::Go(session)) => session,
        Ok(Negotiated::Ended) => return,
        Err(e) => {
            eprintln!("flashpath serve: connection {conn}: handshake: {e}");
            return;
        }
    };
    let Duplex {
        r: reader,
        w: writer,
    } = duplex;
    writer.get_ref().write_timeout(WRITE_TIMEOUT);
    reader.get_ref().read_timeout(None);
    // What the handshake's reader buffered (a client may send its first request at
    // once) comes first, then the socket, polled while the connection is busy.
    let leftover = reader.buffer().to_vec();
    let stream = reader.into_inner();
    let (tx, rx) = mpsc::channel();
    let out = Arc::new(Out {
        conn,
        session,
        w: Mutex::new((writer, false)),
        in_flight: AtomicUsize::new(0),
    });
    let in_flight = &out.in_flight;
    let fd = stream.raw_fd();
    let mut reader = BufReader::new(std::io::Cursor::new(leftover).chain(PollingSocket {
        _stream: stream,
        fd,
        out: out.clone(),
        shared: shared.clone(),
        last: Instant::now(),
        polling: false,
    }));
    let writer_thread = {
        let shared = shared.clone();
        let out = out.clone();
        std::thread::spawn(move || write_replies(rx, &shared, &out))
    };
    shared
        .seen
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .connections += 1;
    let _ = to_sim.send(ToSimMsg(ToSim::Open {
        conn,
        replies: tx.clone(),
        out: out.clone(),
    }));
    let mut payload = Vec::new();
    loop {
        let req = match nbd::read_request(&mut reader) {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => {
                eprintln!("flashpath serve: connection {conn}: {e}; closing it");
                break;
            }
        };
        // A reply that does not go through the simulation: by the writer thread, now.
        let at_once = |cmd: Command, error: u32| {
            in_flight.fetch_add(1, Ordering::SeqCst);
            let _ = tx.send(ToConn::Reply {
                cookie: req.cookie,
                error,
                cmd,
                offset: req.offset,
                len: req.len as u64,
                due: None,
            });
        };
        match read_one(&req, &mut reader, &shared, &session, &mut payload) {
            Err(()) => break,
            Ok(Err(error)) => {
                shared
                    .seen
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .refused += 1;
                // An error reply carries no data and waits for nothing: the command
                // it names does not matter.
                at_once(Command::Disconnect, error);
            }
            Ok(Ok(Command::Disconnect)) => break,
            Ok(Ok(cmd @ Command::BlockStatus { .. })) => {
                // A query of the data file's allocation (as lseek(SEEK_DATA) on a file):
                // no block request, so it is answered at once.
                shared
                    .seen
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .status_queries += 1;
                at_once(cmd, 0);
            }
            Ok(Ok(cmd)) => {
                while in_flight.load(Ordering::SeqCst) >= MAX_IN_FLIGHT {
                    std::thread::sleep(Duration::from_micros(200));
                }
                in_flight.fetch_add(1, Ordering::SeqCst);
                let _ = to_sim.send(ToSimMsg(ToSim::Request {
                    conn,
                    cookie: req.cookie,
                    cmd,
                    offset: req.offset,
                    len: req.len as u64,
                    at: Instant::now(),
                }));
            }
        }
    }
    // Its polling slot goes back now, not once the last replies have gone out.
    drop(reader);
    drop(tx);
    let _ = to_sim.send(ToSimMsg(ToSim::Closed { conn }));
    let _ = writer_thread.join();
}

/// A message to the simulation thread (the type is private to this module).
pub struct ToSimMsg(ToSim);

struct Duplex<R, W> {
    r: R,
    w: W,
}

impl<R: Read, W> Read for Duplex<R, W> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.r.read(buf)
    }
}

impl<R, W: Write> Write for Duplex<R, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.w.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}

/// Takes one request off the stream: its payload (a write's) into the store, zeroes for
/// TRIM and WRITE_ZEROES. `Err(())`: the stream failed (the connection ends);
/// `Ok(Err(e))`: the request is answered with error `e` at once.
fn read_one(
    req: &Request,
    reader: &mut impl Read,
    shared: &Shared,
    session: &nbd::Session,
    payload: &mut Vec<u8>,
) -> Result<Result<Command, u32>, ()> {
    let checked = nbd::check(req, &shared.export, session);
    let carries = req.kind == nbd::CMD_WRITE;
    let cmd = match checked {
        Ok(c) => c,
        Err(e) => {
            if carries {
                // Keep the stream in step: the payload is read and dropped.
                nbd::discard(reader, req.len as u64).map_err(|_| ())?;
            }
            return Ok(Err(e));
        }
    };
    match cmd {
        Command::Write { .. } => {
            payload.resize(req.len as usize, 0);
            reader.read_exact(payload).map_err(|_| ())?;
            if shared.store.write_at(payload, req.offset).is_err() {
                return Ok(Err(nbd::EIO));
            }
            if payload.capacity() > 1 << 20 {
                // A large write's buffer is not kept.
                *payload = Vec::new();
            }
        }
        Command::WriteZeroes { .. } | Command::Trim { .. } => {
            if shared.store.zero(req.offset, req.len as u64).is_err() {
                return Ok(Err(nbd::EIO));
            }
        }
        Command::Read | Command::Flush | Command::Disconnect | Command::BlockStatus { .. } => {}
    }
    Ok(Ok(cmd))
}

/// A connection's write side, shared by its writer thread and the simulation thread:
/// the socket (and whether it broke), and the requests in flight.
pub struct Out {
    conn: usize,
    /// What the connection negotiated: how its replies are framed.
    session: nbd::Session,
    w: Mutex<(BufWriter<Box<dyn Stream>>, bool)>,
    in_flight: AtomicUsize,
}

/// Whether the reply waits for the store's fdatasync (FLUSH, a FUA write).
fn durable(cmd: Command) -> bool {
    match cmd {
        Command::Flush => true,
        Command::Write { fua } | Command::WriteZeroes { fua } | Command::Trim { fua } => fua,
        Command::Read | Command::Disconnect | Command::BlockStatus { .. } => false,
    }
}

/// Sends one reply on `out`: a read's data from the store (through `buf`), after the
/// store's fdatasync for a durable one; records its lateness against `due`.
#[allow(clippy::too_many_arguments)]
fn send_reply(
    out: &Out,
    shared: &Shared,
    buf: &mut Vec<u8>,
    cookie: u64,
    mut error: u32,
    cmd: Command,
    offset: u64,
    len: u64,
    due: Option<Instant>,
) {
    if error == 0 && durable(cmd) && shared.store.sync().is_err() {
        error = nbd::EIO;
    }
    if error == 0 && cmd == Command::Read {
        buf.resize(len as usize, 0);
        if shared.store.read_at(buf, offset).is_err() {
            error = nbd::EIO;
        }
    }
    let session = &out.session;
    let head = match cmd {
        _ if error != 0 => nbd::plain_reply(session, cookie, error),
        Command::Read => nbd::read_reply_header(session, cookie, offset, len as u32),
        Command::BlockStatus { one } => {
            let max = if one { 1 } else { MAX_EXTENTS };
            match shared.store.extents(offset, len as u32, max) {
                Ok(runs) => nbd::block_status_reply(cookie, &runs),
                Err(_) => nbd::plain_reply(session, cookie, nbd::EIO),
            }
        }
        _ => nbd::plain_reply(session, cookie, 0),
    };
    let going = Instant::now();
    {
        let mut g = out.w.lock().unwrap_or_else(|e| e.into_inner());
        let (w, broken) = &mut *g;
        if !*broken {
            let mut r = w.write_all(&head);
            if r.is_ok() && error == 0 && cmd == Command::Read {
                r = w.write_all(buf);
            }
            if r.and_then(|()| w.flush()).is_err() {
                eprintln!(
                    "flashpath serve: connection {}: the client stopped taking replies; closing it",
                    out.conn
                );
                *broken = true;
                w.get_ref().shutdown_both();
            }
        }
    }
    if let Some(due) = due {
        let late = |t: Instant| t.saturating_duration_since(due).as_nanos() as u64;
        let written = late(Instant::now());
        let mut seen = shared.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.lateness.record(late(going));
        seen.written.record(written);
    }
    if buf.capacity() > 1 << 20 {
        *buf = Vec::new();
    }
    out.in_flight.fetch_sub(1, Ordering::SeqCst);
}

/// A connection's writer thread: the replies that wait for fdatasync, and errors
/// answered at once.
fn write_replies(rx: Receiver<ToConn>, shared: &Shared, out: &Out) {
    let mut buf = Vec::new();
    while let Ok(ToConn::Reply {
        cookie,
        error,
        cmd,
        offset,
        len,
        due,
    }) = rx.recv()
    {
        send_reply(out, shared, &mut buf, cookie, error, cmd, offset, len, due);
    }
}

/// A request in the simulation: whose it is and what to answer.
struct InSim {
    conn: usize,
    cookie: u64,
    cmd: Command,
    offset: u64,
    len: u64,
}

/// The simulation thread: runs until SIGINT or SIGTERM (`signals::caught`), or, with `once`,
/// until the last connection has closed after at least one request was served; then
/// answers what is in flight and returns the simulation, drained.
pub fn simulate(
    mut sim: Sim,
    rx: Receiver<ToSimMsg>,
    shared: &Shared,
    once: bool,
    cores: u32,
    mut traces: Option<&mut crate::trace_out::TraceStreamer>,
) -> (Sim, anyhow::Result<()>) {
    let mut trace_result = Ok(());
    let mut last_drain = Instant::now();
    let mut conns: HashMap<usize, Conn> = HashMap::new();
    let mut buf = Vec::new();
    let mut pending: HashMap<u64, InSim> = HashMap::new();
    let mut next_id: u64 = 0;
    let mut served = false;
    let now_ns = || shared.t0.elapsed().as_nanos() as SimTime;
    loop {
        let now = now_ns();
        sim.run_until(now);
        for d in sim.take_external_done() {
            complete(&mut conns, &mut pending, shared, &mut buf, d);
        }
        if last_drain.elapsed() >= POLL {
            // What the trace recorded goes to --blktrace/--trace's files as it becomes
            // final; a failed write stops the tracing (the serving goes on) and is the
            // command's error at the end.
            last_drain = Instant::now();
            if let (Some(t), Some(chunk)) = (traces.as_deref_mut(), sim.drain_trace()) {
                if let Err(e) = t.feed(chunk) {
                    eprintln!("flashpath serve: {e:#}; tracing stops here");
                    trace_result = Err(e);
                    traces = None;
                }
            }
        }
        let stopping = crate::signals::caught().is_some()
            || (once && served && conns.is_empty() && pending.is_empty());
        if stopping {
            break;
        }
        // Wait for the next event or the next message.
        let next = sim.next_event_at().unwrap_or(SimTime::MAX);
        let wait = next.saturating_sub(now_ns());
        let msg = if wait <= SPIN_NS {
            match rx.try_recv() {
                Ok(m) => Some(m),
                Err(mpsc::TryRecvError::Empty) => {
                    std::hint::spin_loop();
                    None
                }
                Err(mpsc::TryRecvError::Disconnected) => None,
            }
        } else {
            let sleep = Duration::from_nanos(wait - SPIN_NS).min(POLL);
            match rx.recv_timeout(sleep) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(sleep.min(Duration::from_millis(1)));
                    None
                }
            }
        };
        let Some(ToSimMsg(msg)) = msg else { continue };
        match msg {
            ToSim::Open { conn, replies, out } => {
                conns.insert(
                    conn,
                    Conn {
                        tx: replies,
                        out,
                        pending: 0,
                        closed: false,
                    },
                );
            }
            ToSim::Closed { conn } => {
                if let Some(c) = conns.get_mut(&conn) {
                    c.closed = true;
                    if c.pending == 0 {
                        let c = conns.remove(&conn).expect("present");
                        let _ = c.tx.send(ToConn::End);
                    }
                }
            }
            ToSim::Request {
                conn,
                cookie,
                cmd,
                offset,
                len,
                at,
            } => {
                served = true;
                let at_ns = at.saturating_duration_since(shared.t0).as_nanos() as SimTime;
                let op = match cmd {
                    Command::Read => ExternalOp::Read,
                    Command::Write { fua } | Command::WriteZeroes { fua } => {
                        ExternalOp::Write { fua }
                    }
                    Command::Trim { .. } => ExternalOp::Discard,
                    Command::Flush | Command::Disconnect => ExternalOp::Flush,
                    Command::BlockStatus { .. } => unreachable!("answered by the reader"),
                };
                let (offset_s, len_s) = if op == ExternalOp::Flush {
                    (0, 0)
                } else {
                    (offset, len)
                };
                let id = next_id;
                next_id += 1;
                let req = ExternalRequest {
                    id,
                    op,
                    offset: offset_s,
                    len: len_s,
                    core: (conn as u32) % cores,
                };
                if let Some(c) = conns.get_mut(&conn) {
                    c.pending += 1;
                }
                pending.insert(
                    id,
                    InSim {
                        conn,
                        cookie,
                        cmd,
                        offset,
                        len,
                    },
                );
                if let Err(e) = sim.submit_external(at_ns.max(sim.now()), req) {
                    // Checked before: not expected; answered as an I/O error.
                    eprintln!("flashpath serve: {e}");
                    let p = pending.remove(&id).expect("just put");
                    reply(&mut conns, shared, &mut buf, p, nbd::EIO, None, None);
                }
            }
        }
    }
    // Answer what is in flight: the simulation runs to its end.
    sim.run_until(SimTime::MAX);
    for d in sim.take_external_done() {
        complete(&mut conns, &mut pending, shared, &mut buf, d);
    }
    for (_, c) in conns.drain() {
        let _ = c.tx.send(ToConn::End);
    }
    if trace_result.is_err() {
        // The files stay as far as they were written; nothing more goes to them.
        let _ = sim.take_trace();
    }
    (sim, trace_result)
}

/// A connection as the simulation thread sees it: its writer thread's channel, its
/// write side, its requests in the simulation, whether its reader has ended.
struct Conn {
    tx: Sender<ToConn>,
    out: Arc<Out>,
    pending: usize,
    closed: bool,
}

fn complete(
    conns: &mut HashMap<usize, Conn>,
    pending: &mut HashMap<u64, InSim>,
    shared: &Shared,
    buf: &mut Vec<u8>,
    d: flashpath_core::sim::ExternalDone,
) {
    let Some(p) = pending.remove(&d.id) else {
        return;
    };
    let due = shared.t0 + Duration::from_nanos(d.done);
    reply(
        conns,
        shared,
        buf,
        p,
        0,
        Some(due),
        Some(d.done - d.arrived),
    );
}

/// Answers `p`: here, or by its connection's writer thread when the reply waits for
/// fdatasync.
fn reply(
    conns: &mut HashMap<usize, Conn>,
    shared: &Shared,
    buf: &mut Vec<u8>,
    p: InSim,
    error: u32,
    due: Option<Instant>,
    latency: Option<SimTime>,
) {
    if let Some(lat) = latency {
        let mut seen = shared.seen.lock().unwrap_or_else(|e| e.into_inner());
        let k = dir_index(p.cmd);
        seen.ios[k] += 1;
        seen.bytes[k] += if k == 3 { 0 } else { p.len };
        seen.lat[k].record(lat);
    }
    let Some(c) = conns.get_mut(&p.conn) else {
        return;
    };
    if error == 0 && durable(p.cmd) {
        let _ = c.tx.send(ToConn::Reply {
            cookie: p.cookie,
            error,
            cmd: p.cmd,
            offset: p.offset,
            len: p.len,
            due,
        });
    } else {
        send_reply(
            &c.out, shared, buf, p.cookie, error, p.cmd, p.offset, p.len, due,
        );
    }
    c.pending -= 1;
    if c.pending == 0 && c.closed {
        let c = conns.remove(&p.conn).expect("present");
        let _ = c.tx.send(ToConn::End);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polling_slots_are_limited_and_given_back() {
        let p = Pollers::new(2);
        assert!(p.take() && p.take());
        assert!(!p.take(), "two slots");
        p.give_back();
        assert!(p.take());
        let none = Pollers::new(0);
        assert!(!none.take(), "--no-busy-poll");
        assert!(busy_poll_slots() >= 1);
    }
}
