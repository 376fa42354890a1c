//! The NBD protocol as `flashpath serve` speaks it (NetworkBlockDevice's `doc/proto.md`):
//! the fixed newstyle handshake, and the transmission phase's requests and simple
//! replies. No I/O policy lives here: the handshake runs over any `Read + Write`, a
//! request is parsed from a reader, a reply is encoded into bytes; the server
//! (`serve/server.rs`) decides what a request does.
//!
//! What the server offers:
//! - the fixed newstyle handshake with `NO_ZEROES`; options `GO` and `INFO` (the export,
//!   its name and description if asked, and always its block sizes), `LIST`, `ABORT`,
//!   the old `EXPORT_NAME`, `STRUCTURED_REPLY`, and `LIST_META_CONTEXT` /
//!   `SET_META_CONTEXT` with the one context `base:allocation`. `STARTTLS` and any other
//!   option get `ERR_UNSUP`, and negotiation goes on.
//! - commands `READ`, `WRITE`, `FLUSH`, `TRIM`, `WRITE_ZEROES` (with `NO_HOLE`
//!   accepted) and `DISC`; the `FUA` flag on writes; `CAN_MULTI_CONN` (all connections
//!   share one device and one store); with `base:allocation` selected, `BLOCK_STATUS`
//!   (with `REQ_ONE`). Anything else gets `EINVAL`.
//! - replies: simple ones, unless the client negotiated structured replies; then a read
//!   is answered with one `OFFSET_DATA` chunk, a block status with one `BLOCK_STATUS`
//!   chunk, and every error with an `ERROR` chunk (each flagged `DONE`), and the other
//!   commands' successes with simple replies, as the spec allows.
//!
//! Limits: an option's data is at most [`MAX_OPTION_LEN`] bytes (a longer one is
//! refused with `ERR_TOO_BIG` and the connection closed, as the spec allows for a
//! length deemed a denial of service); a read or write carries at most
//! [`MAX_PAYLOAD`] bytes (32 MiB, the size every client keeps to). A longer write's
//! payload is read and dropped, so the stream stays in step, and the request fails
//! with `EINVAL`.

use std::io::{self, Read, Write};

pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
pub const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
const OPT_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
pub const STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;

/// Handshake flags (server) and client flags.
const FLAG_FIXED_NEWSTYLE: u16 = 1;
const FLAG_NO_ZEROES: u16 = 2;
const FLAG_C_FIXED_NEWSTYLE: u32 = 1;
const FLAG_C_NO_ZEROES: u32 = 2;

/// Options.
const OPT_EXPORT_NAME: u32 = 1;
const OPT_ABORT: u32 = 2;
const OPT_LIST: u32 = 3;
const OPT_INFO: u32 = 6;
const OPT_GO: u32 = 7;
const OPT_STRUCTURED_REPLY: u32 = 8;
const OPT_LIST_META_CONTEXT: u32 = 9;
const OPT_SET_META_CONTEXT: u32 = 10;

/// Option reply types.
const REP_ACK: u32 = 1;
const REP_SERVER: u32 = 2;
const REP_INFO: u32 = 3;
const REP_META_CONTEXT: u32 = 4;
const REP_ERR_UNSUP: u32 = (1 << 31) + 1;
const REP_ERR_INVALID: u32 = (1 << 31) + 3;
const REP_ERR_UNKNOWN: u32 = (1 << 31) + 6;
const REP_ERR_TOO_BIG: u32 = (1 << 31) + 9;

/// Information items of `INFO` and `GO`.
const INFO_EXPORT: u16 = 0;
const INFO_NAME: u16 = 1;
const INFO_DESCRIPTION: u16 = 2;
const INFO_BLOCK_SIZE: u16 = 3;

/// Transmission flags.
pub const TF_HAS_FLAGS: u16 = 1;
pub const TF_SEND_FLUSH: u16 = 1 << 2;
pub const TF_SEND_FUA: u16 = 1 << 3;
pub const TF_SEND_TRIM: u16 = 1 << 5;
pub const TF_SEND_WRITE_ZEROES: u16 = 1 << 6;
pub const TF_CAN_MULTI_CONN: u16 = 1 << 8;

/// Commands.
pub const CMD_READ: u16 = 0;
pub const CMD_WRITE: u16 = 1;
pub const CMD_DISC: u16 = 2;
pub const CMD_FLUSH: u16 = 3;
pub const CMD_TRIM: u16 = 4;
pub const CMD_WRITE_ZEROES: u16 = 6;
pub const CMD_BLOCK_STATUS: u16 = 7;

/// Command flags.
pub const CMD_FLAG_FUA: u16 = 1;
pub const CMD_FLAG_NO_HOLE: u16 = 2;
pub const CMD_FLAG_REQ_ONE: u16 = 8;

/// Structured reply chunks: flags and types.
pub const REPLY_FLAG_DONE: u16 = 1;
pub const REPLY_TYPE_OFFSET_DATA: u16 = 1;
pub const REPLY_TYPE_BLOCK_STATUS: u16 = 5;
pub const REPLY_TYPE_ERROR: u16 = (1 << 15) + 1;

/// The one metadata context, its name and the id it is selected with.
pub const BASE_ALLOCATION: &str = "base:allocation";
pub const BASE_ALLOCATION_ID: u32 = 1;
/// `base:allocation`'s status flags: not allocated, reads as zeroes.
pub const STATE_HOLE: u32 = 1;
pub const STATE_ZERO: u32 = 2;

/// Error values of a reply.
pub const EIO: u32 = 5;
pub const EINVAL: u32 = 22;
pub const ENOSPC: u32 = 28;

/// The longest option data read (an export name is at most 4096 bytes, with room for
/// `INFO`'s header and requests).
pub const MAX_OPTION_LEN: u32 = 16 * 1024;
/// The largest read or write payload (2^25: what the spec says every server should take
/// and every client keeps to).
pub const MAX_PAYLOAD: u32 = 32 * 1024 * 1024;
/// The block sizes advertised: minimum (a sector: the simulated block layer's unit),
/// preferred (a page), maximum payload.
pub const MIN_BLOCK: u32 = 512;
pub const PREFERRED_BLOCK: u32 = 4096;

/// The one export the server offers.
#[derive(Clone, Debug)]
pub struct Export {
    /// Its name; the default export (an empty name) is the same one.
    pub name: String,
    pub description: String,
    /// Bytes.
    pub size: u64,
    /// Transmission flags.
    pub flags: u16,
}

impl Export {
    fn known(&self, name: &[u8]) -> bool {
        name.is_empty() || name == self.name.as_bytes()
    }
}

/// What a connection negotiated for its transmission phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Session {
    /// Structured replies (`STRUCTURED_REPLY` acknowledged).
    pub structured: bool,
    /// `base:allocation` selected (`SET_META_CONTEXT`): `BLOCK_STATUS` may be sent.
    pub allocation: bool,
}

/// How a handshake ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Negotiated {
    /// Transmission begins.
    Go(Session),
    /// The client ended the negotiation (`ABORT`, or closed the connection).
    Ended,
}

/// What went wrong in a handshake that the server answers by closing the connection.
#[derive(Debug)]
pub enum HandshakeError {
    Io(io::Error),
    /// The client broke the protocol; the reason.
    Protocol(String),
}

impl From<io::Error> for HandshakeError {
    fn from(e: io::Error) -> Self {
        HandshakeError::Io(e)
    }
}

impl std::fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HandshakeError::Io(e) => write!(f, "{e}"),
            HandshakeError::Protocol(s) => f.write_str(s),
        }
    }
}

fn read_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

/// Reads and drops `n` bytes (in pieces: a long payload never sits in memory whole).
pub fn discard(r: &mut impl Read, n: u64) -> io::Result<()> {
    let copied = io::copy(&mut r.take(n), &mut io::sink())?;
    if copied < n {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}

fn option_reply(w: &mut impl Write, opt: u32, kind: u32, data: &[u8]) -> io::Result<()> {
    let mut b = Vec::with_capacity(20 + data.len());
    b.extend_from_slice(&OPT_REPLY_MAGIC.to_be_bytes());
    b.extend_from_slice(&opt.to_be_bytes());
    b.extend_from_slice(&kind.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    w.write_all(&b)
}

/// An error reply with a message for the client's log.
fn option_error(w: &mut impl Write, opt: u32, kind: u32, msg: &str) -> io::Result<()> {
    option_reply(w, opt, kind, msg.as_bytes())
}

/// `ERR_UNKNOWN` for an option naming an export this server does not have.
fn unknown_export(w: &mut impl Write, opt: u32, name: &[u8]) -> io::Result<()> {
    let msg = format!("no export named '{}'", String::from_utf8_lossy(name));
    option_error(w, opt, REP_ERR_UNKNOWN, &msg)
}

/// The data of an `INFO` or `GO` option: the export name and the items asked for.
fn parse_info_request(data: &[u8]) -> Option<(&[u8], Vec<u16>)> {
    let name_len = u32::from_be_bytes(data.get(0..4)?.try_into().ok()?) as usize;
    let name = data.get(4..4usize.checked_add(name_len)?)?;
    let rest = &data[4 + name_len..];
    let count = u16::from_be_bytes(rest.get(0..2)?.try_into().ok()?) as usize;
    let items = rest.get(2..)?;
    if items.len() != 2 * count {
        return None;
    }
    let asked = items
        .chunks_exact(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect();
    Some((name, asked))
}

/// The data of `LIST_META_CONTEXT` / `SET_META_CONTEXT`: the export name and the
/// queries.
fn parse_meta_request(data: &[u8]) -> Option<(&[u8], Vec<&[u8]>)> {
    let u32_at = |i: usize| -> Option<usize> {
        Some(u32::from_be_bytes(data.get(i..i.checked_add(4)?)?.try_into().ok()?) as usize)
    };
    let name_len = u32_at(0)?;
    let name = data.get(4..4usize.checked_add(name_len)?)?;
    let mut at = 4 + name_len;
    let count = u32_at(at)?;
    at += 4;
    let mut queries = Vec::new();
    for _ in 0..count {
        let n = u32_at(at)?;
        queries.push(data.get(at + 4..(at + 4).checked_add(n)?)?);
        at += 4 + n;
    }
    (at == data.len()).then_some((name, queries))
}

/// A `META_CONTEXT` option reply's data.
fn meta_context(id: u32) -> Vec<u8> {
    let mut d = id.to_be_bytes().to_vec();
    d.extend_from_slice(BASE_ALLOCATION.as_bytes());
    d
}

/// The server's side of the fixed newstyle handshake, up to transmission (or the
/// client's end of it). Unknown options are refused and negotiation goes on.
pub fn handshake<S: Read + Write>(
    s: &mut S,
    export: &Export,
) -> Result<Negotiated, HandshakeError> {
    let mut hello = Vec::with_capacity(18);
    hello.extend_from_slice(&NBDMAGIC.to_be_bytes());
    hello.extend_from_slice(&IHAVEOPT.to_be_bytes());
    hello.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    s.write_all(&hello)?;
    s.flush()?;
    let client = read_u32(s)?;
    if client & !(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES) != 0 {
        return Err(HandshakeError::Protocol(format!(
            "client flags {client:#x} have bits this server does not know"
        )));
    }
    if client & FLAG_C_FIXED_NEWSTYLE == 0 {
        return Err(HandshakeError::Protocol(
            "the client does not speak the fixed newstyle handshake".into(),
        ));
    }
    let no_zeroes = client & FLAG_C_NO_ZEROES != 0;
    let mut session = Session::default();
    loop {
        let magic = match read_u64(s) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(Negotiated::Ended),
            Err(e) => return Err(e.into()),
        };
        if magic != IHAVEOPT {
            return Err(HandshakeError::Protocol(format!(
                "an option starts with {magic:#x}, not IHAVEOPT"
            )));
        }
        let opt = read_u32(s)?;
        let len = read_u32(s)?;
        if len > MAX_OPTION_LEN {
            option_error(s, opt, REP_ERR_TOO_BIG, "option data too long")?;
            s.flush()?;
            return Err(HandshakeError::Protocol(format!(
                "option {opt} carries {len} bytes (at most {MAX_OPTION_LEN})"
            )));
        }
        let mut data = vec![0; len as usize];
        s.read_exact(&mut data)?;
        match opt {
            OPT_EXPORT_NAME => {
                if !export.known(&data) {
                    // No error reply exists for this option: the server closes.
                    return Err(HandshakeError::Protocol(format!(
                        "EXPORT_NAME asks for export '{}', which this server does not have",
                        String::from_utf8_lossy(&data)
                    )));
                }
                let mut b = Vec::with_capacity(10 + 124);
                b.extend_from_slice(&export.size.to_be_bytes());
                b.extend_from_slice(&export.flags.to_be_bytes());
                if !no_zeroes {
                    b.extend_from_slice(&[0; 124]);
                }
                s.write_all(&b)?;
                s.flush()?;
                return Ok(Negotiated::Go(session));
            }
            OPT_ABORT => {
                option_reply(s, opt, REP_ACK, &[])?;
                s.flush()?;
                return Ok(Negotiated::Ended);
            }
            OPT_LIST => {
                if !data.is_empty() {
                    option_error(s, opt, REP_ERR_INVALID, "LIST carries no data")?;
                } else {
                    let mut d = Vec::new();
                    d.extend_from_slice(&(export.name.len() as u32).to_be_bytes());
                    d.extend_from_slice(export.name.as_bytes());
                    d.extend_from_slice(export.description.as_bytes());
                    option_reply(s, opt, REP_SERVER, &d)?;
                    option_reply(s, opt, REP_ACK, &[])?;
                }
            }
            OPT_INFO | OPT_GO => match parse_info_request(&data) {
                None => option_error(s, opt, REP_ERR_INVALID, "malformed INFO/GO request")?,
                Some((name, _)) if !export.known(name) => unknown_export(s, opt, name)?,
                Some((_, asked)) => {
                    let mut e = Vec::with_capacity(12);
                    e.extend_from_slice(&INFO_EXPORT.to_be_bytes());
                    e.extend_from_slice(&export.size.to_be_bytes());
                    e.extend_from_slice(&export.flags.to_be_bytes());
                    option_reply(s, opt, REP_INFO, &e)?;
                    let mut b = Vec::with_capacity(14);
                    b.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
                    for v in [MIN_BLOCK, PREFERRED_BLOCK, MAX_PAYLOAD] {
                        b.extend_from_slice(&v.to_be_bytes());
                    }
                    option_reply(s, opt, REP_INFO, &b)?;
                    if asked.contains(&INFO_NAME) {
                        let mut n = INFO_NAME.to_be_bytes().to_vec();
                        n.extend_from_slice(export.name.as_bytes());
                        option_reply(s, opt, REP_INFO, &n)?;
                    }
                    if asked.contains(&INFO_DESCRIPTION) {
                        let mut d = INFO_DESCRIPTION.to_be_bytes().to_vec();
                        d.extend_from_slice(export.description.as_bytes());
                        option_reply(s, opt, REP_INFO, &d)?;
                    }
                    option_reply(s, opt, REP_ACK, &[])?;
                    if opt == OPT_GO {
                        s.flush()?;
                        return Ok(Negotiated::Go(session));
                    }
                }
            },
            OPT_STRUCTURED_REPLY => {
                if !data.is_empty() {
                    option_error(s, opt, REP_ERR_INVALID, "STRUCTURED_REPLY carries no data")?;
                } else {
                    session.structured = true;
                    option_reply(s, opt, REP_ACK, &[])?;
                }
            }
            OPT_LIST_META_CONTEXT | OPT_SET_META_CONTEXT => {
                // SET replaces the selection, even when it fails.
                if opt == OPT_SET_META_CONTEXT {
                    session.allocation = false;
                }
                match parse_meta_request(&data) {
                    _ if !session.structured => option_error(
                        s,
                        opt,
                        REP_ERR_INVALID,
                        "meta contexts need structured replies first",
                    )?,
                    None => {
                        option_error(s, opt, REP_ERR_INVALID, "malformed meta context request")?
                    }
                    Some((name, _)) if !export.known(name) => unknown_export(s, opt, name)?,
                    Some((_, queries)) => {
                        // LIST: no query, `base:` or `base:allocation` lists it; SET:
                        // only `base:allocation` selects it. Other queries are ignored.
                        let hit = if opt == OPT_LIST_META_CONTEXT {
                            queries.is_empty()
                                || queries
                                    .iter()
                                    .any(|q| *q == b"base:" || *q == BASE_ALLOCATION.as_bytes())
                        } else {
                            queries.iter().any(|q| *q == BASE_ALLOCATION.as_bytes())
                        };
                        if hit {
                            let id = if opt == OPT_SET_META_CONTEXT {
                                session.allocation = true;
                                BASE_ALLOCATION_ID
                            } else {
                                0
                            };
                            option_reply(s, opt, REP_META_CONTEXT, &meta_context(id))?;
                        }
                        option_reply(s, opt, REP_ACK, &[])?;
                    }
                }
            }
            _ => option_error(s, opt, REP_ERR_UNSUP, "option not supported")?,
        }
        s.flush()?;
    }
}

/// A transmission request's header (a write's payload follows it on the stream).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub flags: u16,
    pub kind: u16,
    pub cookie: u64,
    pub offset: u64,
    pub len: u32,
}

/// Reads one request header. `Ok(None)`: the client closed the connection between
/// requests. A header that does not start with the request magic is a protocol error
/// (the stream cannot be resynchronised: the server closes).
pub fn read_request(r: &mut impl Read) -> Result<Option<Request>, HandshakeError> {
    let mut b = [0u8; 28];
    let mut got = 0;
    while got < b.len() {
        match r.read(&mut b[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(HandshakeError::Io(io::ErrorKind::UnexpectedEof.into())),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    parse_request(&b).map(Some)
}

/// Parses a 28-byte request header.
pub fn parse_request(b: &[u8; 28]) -> Result<Request, HandshakeError> {
    let magic = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    if magic != REQUEST_MAGIC {
        return Err(HandshakeError::Protocol(format!(
            "a request starts with {magic:#010x}, not the request magic"
        )));
    }
    let u64_at = |i: usize| u64::from_be_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    Ok(Request {
        flags: u16::from_be_bytes([b[4], b[5]]),
        kind: u16::from_be_bytes([b[6], b[7]]),
        cookie: u64_at(8),
        offset: u64_at(16),
        len: u32::from_be_bytes([b[24], b[25], b[26], b[27]]),
    })
}

/// The header of a simple reply (a successful read's data follows it).
pub fn simple_reply(cookie: u64, error: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    b[4..8].copy_from_slice(&error.to_be_bytes());
    b[8..16].copy_from_slice(&cookie.to_be_bytes());
    b
}

/// The header of a structured reply chunk of `len` payload bytes.
pub fn chunk_header(cookie: u64, flags: u16, kind: u16, len: u32) -> [u8; 20] {
    let mut b = [0u8; 20];
    b[0..4].copy_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    b[4..6].copy_from_slice(&flags.to_be_bytes());
    b[6..8].copy_from_slice(&kind.to_be_bytes());
    b[8..16].copy_from_slice(&cookie.to_be_bytes());
    b[16..20].copy_from_slice(&len.to_be_bytes());
    b
}

/// What goes before a successful read's `len` bytes of data at `offset`: a simple
/// reply, or in a structured session one `OFFSET_DATA` chunk flagged `DONE`.
pub fn read_reply_header(session: &Session, cookie: u64, offset: u64, len: u32) -> Vec<u8> {
    if !session.structured {
        return simple_reply(cookie, 0).to_vec();
    }
    let mut b = chunk_header(cookie, REPLY_FLAG_DONE, REPLY_TYPE_OFFSET_DATA, len + 8).to_vec();
    b.extend_from_slice(&offset.to_be_bytes());
    b
}

/// The whole reply to a request without data to return: a simple reply, or in a
/// structured session an `ERROR` chunk for an error.
pub fn plain_reply(session: &Session, cookie: u64, error: u32) -> Vec<u8> {
    if !session.structured || error == 0 {
        return simple_reply(cookie, error).to_vec();
    }
    let mut b = chunk_header(cookie, REPLY_FLAG_DONE, REPLY_TYPE_ERROR, 6).to_vec();
    b.extend_from_slice(&error.to_be_bytes());
    b.extend_from_slice(&0u16.to_be_bytes());
    b
}

/// A `BLOCK_STATUS` reply for `base:allocation`: one chunk of `(length, status)`
/// descriptors, flagged `DONE`.
pub fn block_status_reply(cookie: u64, extents: &[(u32, u32)]) -> Vec<u8> {
    let len = 4 + 8 * extents.len() as u32;
    let mut b = chunk_header(cookie, REPLY_FLAG_DONE, REPLY_TYPE_BLOCK_STATUS, len).to_vec();
    b.extend_from_slice(&BASE_ALLOCATION_ID.to_be_bytes());
    for (l, f) in extents {
        b.extend_from_slice(&l.to_be_bytes());
        b.extend_from_slice(&f.to_be_bytes());
    }
    b
}

/// What the server does with a request, or the error it answers at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    Read,
    Write {
        fua: bool,
    },
    WriteZeroes {
        fua: bool,
    },
    Trim {
        fua: bool,
    },
    Flush,
    Disconnect,
    /// `BLOCK_STATUS` of `base:allocation`; `one`: `REQ_ONE` (one extent).
    BlockStatus {
        one: bool,
    },
}

/// Checks a request against the export: the command it is, or the error its reply
/// carries (the spec's choices: `ENOSPC` for a write past the end, `EINVAL` for a read
/// or trim past it, for a misaligned or oversized request, and for a command or flag
/// not offered, `BLOCK_STATUS` included unless the session selected `base:allocation`).
pub fn check(req: &Request, export: &Export, session: &Session) -> Result<Command, u32> {
    let known_flags = match req.kind {
        CMD_WRITE | CMD_TRIM => CMD_FLAG_FUA,
        CMD_WRITE_ZEROES => CMD_FLAG_FUA | CMD_FLAG_NO_HOLE,
        CMD_BLOCK_STATUS => CMD_FLAG_REQ_ONE,
        _ => 0,
    };
    if req.flags & !known_flags != 0 {
        return Err(EINVAL);
    }
    let fua = req.flags & CMD_FLAG_FUA != 0;
    let cmd = match req.kind {
        CMD_READ => Command::Read,
        CMD_WRITE => Command::Write { fua },
        CMD_WRITE_ZEROES => Command::WriteZeroes { fua },
        CMD_TRIM => Command::Trim { fua },
        CMD_BLOCK_STATUS if session.allocation => Command::BlockStatus {
            one: req.flags & CMD_FLAG_REQ_ONE != 0,
        },
        CMD_FLUSH => return Ok(Command::Flush),
        CMD_DISC => return Ok(Command::Disconnect),
        _ => return Err(EINVAL),
    };
    let len = req.len as u64;
    if len == 0
        || !len.is_multiple_of(MIN_BLOCK as u64)
        || !req.offset.is_multiple_of(MIN_BLOCK as u64)
    {
        return Err(EINVAL);
    }
    if matches!(cmd, Command::Read | Command::Write { .. }) && req.len > MAX_PAYLOAD {
        return Err(EINVAL);
    }
    if req.offset.checked_add(len).is_none_or(|e| e > export.size) {
        return Err(match cmd {
            Command::Write { .. } | Command::WriteZeroes { .. } => ENOSPC,
            _ => EINVAL,
        });
    }
    Ok(cmd)
}

/// A client's whole byte stream taken as the server's reader takes it, with no store
/// and no simulation: the handshake, then each request header read and checked, and a
/// write's payload read and dropped, up to DISC, the end of the stream or a protocol
/// error. Returns the requests taken and how many of them were refused. What the fuzz
/// target `nbd_session` drives: nothing a client sends may panic here.
pub fn drain_session<S: Read + Write>(
    s: &mut S,
    export: &Export,
) -> Result<(u64, u64), HandshakeError> {
    let session = match handshake(s, export)? {
        Negotiated::Ended => return Ok((0, 0)),
        Negotiated::Go(session) => session,
    };
    let (mut taken, mut refused) = (0, 0);
    while let Some(req) = read_request(s)? {
        taken += 1;
        let checked = check(&req, export, &session);
        if req.kind == CMD_WRITE {
            discard(s, req.len as u64)?;
        }
        match checked {
            Err(e) => {
                refused += 1;
                s.write_all(&plain_reply(&session, req.cookie, e))?;
            }
            Ok(Command::Disconnect) => break,
            Ok(_) => {}
        }
    }
    Ok((taken, refused))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A client's bytes in, the server's bytes out.
    struct Duplex {
        input: Cursor<Vec<u8>>,
        output: Vec<u8>,
    }

    impl Read for Duplex {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.input.read(buf)
        }
    }

    impl Write for Duplex {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.output.write(buf)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn export() -> Export {
        Export {
            name: "emmc".into(),
            description: "a simulated eMMC".into(),
            size: 1 << 30,
            flags: TF_HAS_FLAGS | TF_SEND_FLUSH | TF_CAN_MULTI_CONN,
        }
    }

    fn opt(kind: u32, data: &[u8]) -> Vec<u8> {
        let mut b = IHAVEOPT.to_be_bytes().to_vec();
        b.extend_from_slice(&kind.to_be_bytes());
        b.extend_from_slice(&(data.len() as u32).to_be_bytes());
        b.extend_from_slice(data);
        b
    }

    fn go(name: &str, asked: &[u16]) -> Vec<u8> {
        info_or_go(OPT_GO, name, asked)
    }

    fn info_or_go(kind: u32, name: &str, asked: &[u16]) -> Vec<u8> {
        let mut d = (name.len() as u32).to_be_bytes().to_vec();
        d.extend_from_slice(name.as_bytes());
        d.extend_from_slice(&(asked.len() as u16).to_be_bytes());
        for a in asked {
            d.extend_from_slice(&a.to_be_bytes());
        }
        opt(kind, &d)
    }

    /// The option replies in `out` after the 18-byte greeting: (option, type, data).
    fn replies(out: &[u8]) -> Vec<(u32, u32, Vec<u8>)> {
        let mut v = Vec::new();
        let mut i = 18;
        while i + 20 <= out.len() {
            assert_eq!(
                u64::from_be_bytes(out[i..i + 8].try_into().unwrap()),
                OPT_REPLY_MAGIC
            );
            let o = u32::from_be_bytes(out[i + 8..i + 12].try_into().unwrap());
            let t = u32::from_be_bytes(out[i + 12..i + 16].try_into().unwrap());
            let n = u32::from_be_bytes(out[i + 16..i + 20].try_into().unwrap()) as usize;
            v.push((o, t, out[i + 20..i + 20 + n].to_vec()));
            i += 20 + n;
        }
        assert_eq!(i, out.len(), "no bytes after the last reply");
        v
    }

    fn run(client: Vec<u8>) -> (Result<Negotiated, HandshakeError>, Vec<u8>) {
        let mut d = Duplex {
            input: Cursor::new(client),
            output: Vec::new(),
        };
        let r = handshake(&mut d, &export());
        (r, d.output)
    }

    #[test]
    fn greeting_then_unsupported_options_then_go() {
        let mut c = 3u32.to_be_bytes().to_vec();
        c.extend(opt(OPT_STRUCTURED_REPLY, &[]));
        c.extend(opt(5, &[])); // STARTTLS
        c.extend(go("", &[INFO_NAME]));
        let (r, out) = run(c);
        let structured = Session {
            structured: true,
            allocation: false,
        };
        assert_eq!(r.unwrap(), Negotiated::Go(structured));
        assert_eq!(&out[0..16], b"NBDMAGICIHAVEOPT");
        assert_eq!(u16::from_be_bytes([out[16], out[17]]), 3);
        let r = replies(&out);
        assert_eq!((r[0].0, r[0].1), (OPT_STRUCTURED_REPLY, REP_ACK));
        assert_eq!((r[1].0, r[1].1), (5, REP_ERR_UNSUP));
        // GO: the export (size, flags), block sizes, the name asked for, then ACK.
        assert_eq!((r[2].0, r[2].1), (OPT_GO, REP_INFO));
        let e = &r[2].2;
        assert_eq!(u16::from_be_bytes([e[0], e[1]]), INFO_EXPORT);
        assert_eq!(u64::from_be_bytes(e[2..10].try_into().unwrap()), 1 << 30);
        assert_eq!(u16::from_be_bytes([e[10], e[11]]), export().flags);
        let b = &r[3].2;
        assert_eq!(u16::from_be_bytes([b[0], b[1]]), INFO_BLOCK_SIZE);
        assert_eq!(u32::from_be_bytes(b[2..6].try_into().unwrap()), 512);
        assert_eq!(
            u32::from_be_bytes(b[10..14].try_into().unwrap()),
            MAX_PAYLOAD
        );
        assert_eq!(&r[4].2[2..], b"emmc");
        assert_eq!((r[5].0, r[5].1), (OPT_GO, REP_ACK));
        assert_eq!(r.len(), 6);
    }

    #[test]
    fn list_info_and_abort() {
        let mut c = 1u32.to_be_bytes().to_vec();
        c.extend(opt(OPT_LIST, &[]));
        c.extend(info_or_go(OPT_INFO, "emmc", &[]));
        c.extend(opt(OPT_ABORT, &[]));
        let (r, out) = run(c);
        assert_eq!(r.unwrap(), Negotiated::Ended);
        let r = replies(&out);
        assert_eq!((r[0].0, r[0].1), (OPT_LIST, REP_SERVER));
        assert_eq!(&r[0].2[4..8], b"emmc");
        assert_eq!((r[1].0, r[1].1), (OPT_LIST, REP_ACK));
        assert_eq!((r[2].0, r[2].1), (OPT_INFO, REP_INFO));
        assert_eq!((r[4].0, r[4].1), (OPT_INFO, REP_ACK));
        assert_eq!((r[5].0, r[5].1), (OPT_ABORT, REP_ACK));
    }

    #[test]
    fn bad_options_are_refused_and_negotiation_goes_on() {
        let mut c = 1u32.to_be_bytes().to_vec();
        c.extend(go("other", &[]));
        c.extend(opt(OPT_GO, &[0, 0, 0, 9, 1])); // a name longer than the data
        c.extend(opt(OPT_LIST, &[1]));
        c.extend(opt(42, &[1, 2, 3]));
        c.extend(go("", &[]));
        let (r, out) = run(c);
        assert_eq!(r.unwrap(), Negotiated::Go(Session::default()));
        let kinds: Vec<u32> = replies(&out).iter().map(|r| r.1).collect();
        assert_eq!(
            kinds,
            [
                REP_ERR_UNKNOWN,
                REP_ERR_INVALID,
                REP_ERR_INVALID,
                REP_ERR_UNSUP,
                REP_INFO,
                REP_INFO,
                REP_ACK
            ]
        );
    }

    #[test]
    fn broken_handshakes_end_without_panic() {
        // Unknown client flags; no fixed newstyle; a bad option magic; a huge option;
        // a connection closed mid-option.
        for c in [
            8u32.to_be_bytes().to_vec(),
            0u32.to_be_bytes().to_vec(),
            [1u32.to_be_bytes().to_vec(), vec![0; 16]].concat(),
            [
                1u32.to_be_bytes().to_vec(),
                opt(OPT_GO, &[])[..12].to_vec(),
                u32::MAX.to_be_bytes().to_vec(),
            ]
            .concat(),
            [
                1u32.to_be_bytes().to_vec(),
                opt(OPT_GO, &[0; 10])[..20].to_vec(),
            ]
            .concat(),
        ] {
            let (r, _) = run(c);
            assert!(r.is_err());
        }
        // Closed right after the flags: the client went away.
        let (r, _) = run(1u32.to_be_bytes().to_vec());
        assert_eq!(r.unwrap(), Negotiated::Ended);
    }

    #[test]
    fn legacy_export_name_with_and_without_zeroes() {
        for (flags, pad) in [(1u32, 124), (3, 0)] {
            let mut c = flags.to_be_bytes().to_vec();
            c.extend(opt(OPT_EXPORT_NAME, b""));
            let (r, out) = run(c);
            assert_eq!(r.unwrap(), Negotiated::Go(Session::default()));
            assert_eq!(out.len(), 18 + 10 + pad);
            assert_eq!(u64::from_be_bytes(out[18..26].try_into().unwrap()), 1 << 30);
        }
    }

    fn req(kind: u16, flags: u16, offset: u64, len: u32) -> Request {
        Request {
            flags,
            kind,
            cookie: 7,
            offset,
            len,
        }
    }

    #[test]
    fn requests_parse_and_check() {
        let mut b = [0u8; 28];
        b[0..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
        b[4..6].copy_from_slice(&CMD_FLAG_FUA.to_be_bytes());
        b[6..8].copy_from_slice(&CMD_WRITE.to_be_bytes());
        b[8..16].copy_from_slice(&0xdead_beef_u64.to_be_bytes());
        b[16..24].copy_from_slice(&4096u64.to_be_bytes());
        b[24..28].copy_from_slice(&8192u32.to_be_bytes());
        let r = parse_request(&b).unwrap();
        assert_eq!(
            r,
            Request {
                flags: 1,
                kind: 1,
                cookie: 0xdead_beef,
                offset: 4096,
                len: 8192
            }
        );
        assert_eq!(
            check(&r, &export(), &Session::default()),
            Ok(Command::Write { fua: true })
        );
        b[0] = 0;
        assert!(parse_request(&b).is_err());

        let e = export();
        let end = e.size;
        assert_eq!(
            check(&req(CMD_READ, 0, end - 512, 512), &e, &Session::default()),
            Ok(Command::Read)
        );
        assert_eq!(
            check(&req(CMD_READ, 0, end, 512), &e, &Session::default()),
            Err(EINVAL)
        );
        assert_eq!(
            check(&req(CMD_WRITE, 0, end, 512), &e, &Session::default()),
            Err(ENOSPC)
        );
        assert_eq!(
            check(
                &req(CMD_WRITE_ZEROES, 0, end - 512, 1024),
                &e,
                &Session::default()
            ),
            Err(ENOSPC)
        );
        assert_eq!(
            check(&req(CMD_TRIM, 0, end - 512, 1024), &e, &Session::default()),
            Err(EINVAL)
        );
        assert_eq!(
            check(
                &req(CMD_READ, 0, u64::MAX - 511, 512),
                &e,
                &Session::default()
            ),
            Err(EINVAL)
        );
        assert_eq!(
            check(&req(CMD_READ, 0, 100, 512), &e, &Session::default()),
            Err(EINVAL)
        );
        assert_eq!(
            check(&req(CMD_READ, 0, 0, 0), &e, &Session::default()),
            Err(EINVAL)
        );
        assert_eq!(
            check(
                &req(CMD_READ, 0, 0, MAX_PAYLOAD + 512),
                &e,
                &Session::default()
            ),
            Err(EINVAL)
        );
        assert_eq!(
            check(
                &req(CMD_READ, CMD_FLAG_FUA, 0, 512),
                &e,
                &Session::default()
            ),
            Err(EINVAL)
        );
        assert_eq!(
            check(&req(9, 0, 0, 512), &e, &Session::default()),
            Err(EINVAL)
        );
        // Trim and write-zeroes carry no payload: longer than the payload limit is fine.
        assert_eq!(
            check(
                &req(CMD_TRIM, 0, 0, MAX_PAYLOAD + 512),
                &e,
                &Session::default()
            ),
            Ok(Command::Trim { fua: false })
        );
        assert_eq!(
            check(
                &req(CMD_WRITE_ZEROES, CMD_FLAG_NO_HOLE | CMD_FLAG_FUA, 0, 512),
                &e,
                &Session::default()
            ),
            Ok(Command::WriteZeroes { fua: true })
        );
        assert_eq!(
            check(&req(CMD_FLUSH, 0, 0, 0), &e, &Session::default()),
            Ok(Command::Flush)
        );
        assert_eq!(
            check(&req(CMD_DISC, 0, 0, 0), &e, &Session::default()),
            Ok(Command::Disconnect)
        );
    }

    #[test]
    fn a_closed_stream_between_requests_is_not_an_error() {
        assert!(read_request(&mut Cursor::new(Vec::new()))
            .unwrap()
            .is_none());
        assert!(read_request(&mut Cursor::new(vec![0x25, 0x60])).is_err());
    }

    #[test]
    fn a_session_is_drained_to_its_end() {
        let mut c = 1u32.to_be_bytes().to_vec();
        c.extend(go("", &[]));
        let header = |kind: u16, offset: u64, len: u32| {
            let mut b = REQUEST_MAGIC.to_be_bytes().to_vec();
            b.extend_from_slice(&0u16.to_be_bytes());
            b.extend_from_slice(&kind.to_be_bytes());
            b.extend_from_slice(&9u64.to_be_bytes());
            b.extend_from_slice(&offset.to_be_bytes());
            b.extend_from_slice(&len.to_be_bytes());
            b
        };
        c.extend(header(CMD_WRITE, 0, 4096));
        c.extend([0xaa; 4096]);
        c.extend(header(CMD_WRITE, 1 << 30, 512)); // past the end: refused, payload dropped
        c.extend([0xbb; 512]);
        c.extend(header(CMD_READ, 0, 4096));
        c.extend(header(CMD_DISC, 0, 0));
        c.extend(header(CMD_READ, 0, 4096)); // after DISC: not taken
        let mut d = Duplex {
            input: Cursor::new(c),
            output: Vec::new(),
        };
        assert_eq!(drain_session(&mut d, &export()).unwrap(), (4, 1));
    }

    fn meta(kind: u32, name: &str, queries: &[&str]) -> Vec<u8> {
        let mut d = (name.len() as u32).to_be_bytes().to_vec();
        d.extend_from_slice(name.as_bytes());
        d.extend_from_slice(&(queries.len() as u32).to_be_bytes());
        for q in queries {
            d.extend_from_slice(&(q.len() as u32).to_be_bytes());
            d.extend_from_slice(q.as_bytes());
        }
        opt(kind, &d)
    }

    #[test]
    fn meta_contexts_need_structured_replies_and_select_base_allocation() {
        let mut c = 3u32.to_be_bytes().to_vec();
        // Before STRUCTURED_REPLY: refused.
        c.extend(meta(OPT_SET_META_CONTEXT, "", &[BASE_ALLOCATION]));
        c.extend(opt(OPT_STRUCTURED_REPLY, &[1])); // with data: refused
        c.extend(opt(OPT_STRUCTURED_REPLY, &[]));
        // LIST with no query, with `base:`, with an unknown namespace.
        c.extend(meta(OPT_LIST_META_CONTEXT, "emmc", &[]));
        c.extend(meta(OPT_LIST_META_CONTEXT, "", &["base:"]));
        c.extend(meta(OPT_LIST_META_CONTEXT, "", &["qemu:dirty-bitmap:x"]));
        // Malformed (a query longer than the data), an unknown export.
        let mut bad = meta(OPT_SET_META_CONTEXT, "", &[BASE_ALLOCATION]);
        bad.truncate(bad.len() - 2);
        let n = bad.len() as u32 - 16;
        bad[12..16].copy_from_slice(&n.to_be_bytes());
        c.extend(bad);
        c.extend(meta(OPT_SET_META_CONTEXT, "other", &[BASE_ALLOCATION]));
        // `base:` alone selects nothing; `base:allocation` selects it.
        c.extend(meta(OPT_SET_META_CONTEXT, "", &["base:"]));
        c.extend(meta(
            OPT_SET_META_CONTEXT,
            "",
            &["x-other:y", BASE_ALLOCATION],
        ));
        c.extend(go("", &[]));
        let (r, out) = run(c);
        assert_eq!(
            r.unwrap(),
            Negotiated::Go(Session {
                structured: true,
                allocation: true
            })
        );
        let r = replies(&out);
        let kinds: Vec<(u32, u32)> = r.iter().map(|r| (r.0, r.1)).collect();
        let (set, list) = (OPT_SET_META_CONTEXT, OPT_LIST_META_CONTEXT);
        assert_eq!(
            kinds,
            [
                (set, REP_ERR_INVALID),
                (OPT_STRUCTURED_REPLY, REP_ERR_INVALID),
                (OPT_STRUCTURED_REPLY, REP_ACK),
                (list, REP_META_CONTEXT),
                (list, REP_ACK),
                (list, REP_META_CONTEXT),
                (list, REP_ACK),
                (list, REP_ACK),
                (set, REP_ERR_INVALID),
                (set, REP_ERR_UNKNOWN),
                (set, REP_ACK),
                (set, REP_META_CONTEXT),
                (set, REP_ACK),
                (OPT_GO, REP_INFO),
                (OPT_GO, REP_INFO),
                (OPT_GO, REP_ACK),
            ]
        );
        assert_eq!(&r[3].2[4..], BASE_ALLOCATION.as_bytes());
        assert_eq!(&r[11].2[..4], &BASE_ALLOCATION_ID.to_be_bytes());
        assert_eq!(&r[11].2[4..], BASE_ALLOCATION.as_bytes());
    }

    #[test]
    fn block_status_only_where_selected_and_structured_replies_layout() {
        let e = export();
        let selected = Session {
            structured: true,
            allocation: true,
        };
        let plain = Session {
            structured: true,
            allocation: false,
        };
        let bs = req(CMD_BLOCK_STATUS, CMD_FLAG_REQ_ONE, 4096, 1 << 20);
        assert_eq!(
            check(&bs, &e, &selected),
            Ok(Command::BlockStatus { one: true })
        );
        assert_eq!(check(&bs, &e, &plain), Err(EINVAL));
        let past = req(CMD_BLOCK_STATUS, 0, e.size - 512, 1024);
        assert_eq!(check(&past, &e, &selected), Err(EINVAL));
        let fua = req(CMD_BLOCK_STATUS, CMD_FLAG_FUA, 0, 512);
        assert_eq!(check(&fua, &e, &selected), Err(EINVAL));

        // A read: one OFFSET_DATA chunk, DONE, its length counting the offset.
        let h = read_reply_header(&selected, 5, 4096, 512);
        assert_eq!(&h[0..4], &STRUCTURED_REPLY_MAGIC.to_be_bytes());
        assert_eq!(u16::from_be_bytes([h[4], h[5]]), REPLY_FLAG_DONE);
        assert_eq!(u16::from_be_bytes([h[6], h[7]]), REPLY_TYPE_OFFSET_DATA);
        assert_eq!(u64::from_be_bytes(h[8..16].try_into().unwrap()), 5);
        assert_eq!(u32::from_be_bytes(h[16..20].try_into().unwrap()), 520);
        assert_eq!(u64::from_be_bytes(h[20..28].try_into().unwrap()), 4096);
        assert_eq!(
            read_reply_header(&Session::default(), 5, 4096, 512),
            simple_reply(5, 0)
        );
        // An error: an ERROR chunk in a structured session, a simple reply otherwise;
        // a success without data: a simple reply.
        let er = plain_reply(&selected, 6, EINVAL);
        assert_eq!(er.len(), 26);
        assert_eq!(u16::from_be_bytes([er[6], er[7]]), REPLY_TYPE_ERROR);
        assert_eq!(u32::from_be_bytes(er[20..24].try_into().unwrap()), EINVAL);
        assert_eq!(
            plain_reply(&Session::default(), 6, EINVAL),
            simple_reply(6, EINVAL)
        );
        assert_eq!(plain_reply(&selected, 6, 0), simple_reply(6, 0));
        // Block status: context id, then (length, flags) pairs.
        let b = block_status_reply(7, &[(4096, STATE_HOLE | STATE_ZERO), (512, 0)]);
        assert_eq!(u16::from_be_bytes([b[6], b[7]]), REPLY_TYPE_BLOCK_STATUS);
        assert_eq!(u32::from_be_bytes(b[16..20].try_into().unwrap()), 20);
        assert_eq!(
            u32::from_be_bytes(b[20..24].try_into().unwrap()),
            BASE_ALLOCATION_ID
        );
        assert_eq!(u32::from_be_bytes(b[24..28].try_into().unwrap()), 4096);
        assert_eq!(u32::from_be_bytes(b[28..32].try_into().unwrap()), 3);
        assert_eq!(b.len(), 40);
    }

    #[test]
    fn simple_reply_layout() {
        let b = simple_reply(0x0102_0304_0506_0708, ENOSPC);
        assert_eq!(&b[0..4], &SIMPLE_REPLY_MAGIC.to_be_bytes());
        assert_eq!(u32::from_be_bytes(b[4..8].try_into().unwrap()), 28);
        assert_eq!(&b[8..16], &[1, 2, 3, 4, 5, 6, 7, 8]);
    }
}
