//! `flashpath serve` driven by real NBD clients: fio's nbd engine, nbdinfo, nbdcopy,
//! qemu-img and qemu-io (Debian fio, libnbd-bin, qemu-utils; a test whose tool is
//! missing says so and skips), and by a raw socket for what no client sends on purpose
//! (bad handshakes and requests). The server is the built binary, on a Unix socket in a
//! scratch directory.
mod common;

use common::{have, scratch};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A 64 MiB eMMC: small enough to copy whole, simulated as the shipped 32 GB part.
const SMALL: &[&str] = &["--set", "device.geometry.capacity=64MiB"];

struct Server {
    child: Option<Child>,
    sock: PathBuf,
    dir: PathBuf,
}

impl Server {
    fn start(dir: &Path, extra: &[&str]) -> Server {
        let sock = dir.join("sock");
        let sock_arg = format!("unix:{}", sock.display());
        let child = Command::new(env!("CARGO_BIN_EXE_flashpath"))
            .arg("serve")
            .args(extra)
            .args(["--nbd", &sock_arg])
            .stdout(std::fs::File::create(dir.join("report")).unwrap())
            .stderr(std::fs::File::create(dir.join("stderr")).unwrap())
            .spawn()
            .expect("start flashpath serve");
        let s = Server {
            child: Some(child),
            sock,
            dir: dir.to_path_buf(),
        };
        let t = Instant::now();
        while UnixStream::connect(&s.sock).is_err() {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "the server did not listen: {}",
                std::fs::read_to_string(dir.join("stderr")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        s
    }

    fn uri(&self) -> String {
        format!("nbd+unix:///?socket={}", self.sock.display())
    }

    /// SIGINT, then the end report.
    fn stop(mut self) -> String {
        let mut child = self.child.take().unwrap();
        signal(&child, "INT");
        let st = child.wait().unwrap();
        let err = std::fs::read_to_string(self.dir.join("stderr")).unwrap();
        assert!(st.success(), "serve ended with {st}: {err}");
        std::fs::read_to_string(self.dir.join("report")).unwrap()
    }

    /// SIGKILL: no report, nothing flushed that was not flushed before.
    fn kill(mut self) {
        let mut child = self.child.take().unwrap();
        signal(&child, "KILL");
        let _ = child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn signal(child: &Child, sig: &str) {
    let st = Command::new("kill")
        .args([&format!("-{sig}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}

fn run(cmd: &mut Command) -> Output {
    let o = cmd.stdin(Stdio::null()).output().expect("run the client");
    assert!(
        o.status.success(),
        "{cmd:?}: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn fio_json(o: &Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&o.stdout);
    let start = text.find('{').expect("fio's JSON");
    serde_json::from_str(&text[start..]).expect("fio's JSON parses")
}

/// qemu-io's commands `cmds` (`-c` each) on the raw image at `uri`; its output.
fn qemu_io<S: AsRef<str>>(uri: &str, cmds: &[S]) -> String {
    let mut c = Command::new("qemu-io");
    c.args(["-f", "raw"]);
    for k in cmds {
        c.args(["-c", k.as_ref()]);
    }
    c.arg(uri);
    String::from_utf8(run(&mut c).stdout).unwrap()
}

/// The number after `key` in the report's line for `dir`.
fn report_number(report: &str, dir: &str, key: &str) -> f64 {
    let line = report
        .lines()
        .find(|l| l.trim_start().starts_with(dir))
        .unwrap_or_else(|| panic!("no {dir} line in:\n{report}"));
    let at = line
        .find(key)
        .unwrap_or_else(|| panic!("no {key} in {line}"))
        + key.len();
    line[at..]
        .split_whitespace()
        .next()
        .unwrap()
        .trim_end_matches(',')
        .parse()
        .unwrap()
}

#[test]
fn real_fio_runs_random_and_sequential_jobs_and_verifies_over_nbd() {
    if !have("fio") {
        eprintln!("note: fio is not installed; skipping");
        return;
    }
    let dir = scratch("serve-fio");
    let s = Server::start(&dir, &[]);
    let uri = s.uri();
    let mut total = [0u64; 2];
    for (rw, bs, qd) in [
        ("randread", "4k", "1"),
        ("randwrite", "4k", "8"),
        ("read", "128k", "1"),
        ("write", "128k", "8"),
    ] {
        let o = run(Command::new("fio").args([
            "--name=j",
            "--ioengine=nbd",
            &format!("--uri={uri}"),
            &format!("--rw={rw}"),
            &format!("--bs={bs}"),
            &format!("--iodepth={qd}"),
            "--size=16m",
            "--output-format=json",
        ]));
        let j = fio_json(&o);
        let job = &j["jobs"][0];
        assert_eq!(job["error"], 0, "{rw}");
        let d = if rw.contains("read") { "read" } else { "write" };
        let ios = job[d]["total_ios"].as_u64().unwrap();
        assert!(ios > 10, "{rw} bs={bs} qd={qd}: {ios} I/Os");
        total[usize::from(d == "write")] += ios;
    }
    // Data checked end to end: fio writes with crc32c headers, then reads back and checks
    // (in the scratch directory: fio leaves its verify state file where it runs).
    let o = run(Command::new("fio").current_dir(&dir).args([
        "--name=v",
        "--ioengine=nbd",
        &format!("--uri={uri}"),
        "--rw=randwrite",
        "--bs=16k",
        "--iodepth=4",
        "--size=8m",
        "--verify=crc32c",
        "--do_verify=1",
        "--output-format=json",
    ]));
    let j = fio_json(&o);
    assert_eq!(j["jobs"][0]["error"], 0);
    let verified = j["jobs"][0]["read"]["total_ios"].as_u64().unwrap();
    assert_eq!(
        verified,
        8 * 1024 / 16,
        "every block read back and verified"
    );
    let report = s.stop();
    // The server saw what fio did (fio's counts are those it completed; the server's
    // include the verify phase's reads and writes).
    assert!(
        report_number(&report, "read", ":") as u64 >= total[0] + verified,
        "{report}"
    );
    assert!(
        report_number(&report, "write", ":") as u64 >= total[1],
        "{report}"
    );
    // Lateness as a reply's write began, then as it returned: the second is later.
    let late = report_number(&report, "lateness of replies", "completion: p50");
    let written = report_number(&report, "lateness of replies", "returned p50");
    assert!(late >= 0.0 && written >= late, "{report}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn serve_simulates_what_a_batch_run_without_the_costs_above_the_block_layer_does() {
    if !have("fio") {
        eprintln!("note: fio is not installed; skipping");
        return;
    }
    // 4 KiB random reads at QD1 on the eMMC: the device's work ends with its answer,
    // so the gaps between requests over NBD do not change its latency.
    let dir = scratch("serve-batch");
    let s = Server::start(&dir, &[]);
    let job = ["--rw=randread", "--bs=4k", "--size=1g", "--number_ios=1500"];
    let o = run(Command::new("fio")
        .args([
            "--name=r",
            "--ioengine=nbd",
            "--iodepth=1",
            "--output-format=json",
        ])
        .arg(format!("--uri={}", s.uri()))
        .args(job));
    let over_nbd = fio_json(&o)["jobs"][0]["read"]["lat_ns"]["mean"]
        .as_f64()
        .unwrap()
        / 1e3;
    let report = s.stop();
    let served = report_number(&report, "read", "mean");
    let o = common::flashpath(
        &[
            &[
                "fio",
                "--device",
                "emmc51-hs400-32g",
                "--costs-above-block",
                "zero",
                "--precondition",
                "sequential",
                "--name=r",
                "--direct=1",
                "--ioengine=psync",
                "--output-format=json",
            ][..],
            &job[..],
        ]
        .concat(),
    );
    let j: serde_json::Value = serde_json::from_str(&common::ok(&o)).unwrap();
    let batch = j["jobs"][0]["read"]["lat_ns"]["mean"].as_f64().unwrap() / 1e3;
    assert!(
        (served - batch).abs() < 0.05 * batch,
        "serve simulated {served} us, the batch run {batch} us"
    );
    // Replies never go out before their simulated completion: the real client sees at
    // least the simulated latency (and the transport on top).
    assert!(
        over_nbd > served,
        "fio over NBD {over_nbd} us, simulated {served} us"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nbd_tools_see_the_export_and_copy_data_in_and_out() {
    if !have("nbdinfo") || !have("nbdcopy") {
        eprintln!("note: libnbd-bin (nbdinfo, nbdcopy) is not installed; skipping");
        return;
    }
    let dir = scratch("serve-nbdcopy");
    let s = Server::start(&dir, SMALL);
    let info = String::from_utf8(run(Command::new("nbdinfo").arg(s.uri())).stdout).unwrap();
    for want in [
        "export-size: 67108864",
        "can_flush: true",
        "can_fua: true",
        "can_trim: true",
        "can_zero: true",
        "can_multi_conn: true",
        "block_size_minimum: 512",
    ] {
        assert!(info.contains(want), "{want} in:\n{info}");
    }
    // A 64 MiB file of varied bytes in, the whole export out: the same bytes.
    let src = dir.join("in.img");
    let mut data = vec![0u8; 64 << 20];
    let mut x: u32 = 12345;
    for b in data.iter_mut() {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        *b = (x >> 16) as u8;
    }
    std::fs::write(&src, &data).unwrap();
    run(Command::new("nbdcopy").args([src.to_str().unwrap(), &s.uri()]));
    let out = dir.join("out.img");
    run(Command::new("nbdcopy").args([&s.uri(), out.to_str().unwrap()]));
    run(Command::new("cmp").args([src.to_str().unwrap(), out.to_str().unwrap()]));
    let report = s.stop();
    assert!(report_number(&report, "write", ":") > 0.0, "{report}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn qemu_img_and_qemu_io_read_and_write_it() {
    if !have("qemu-io") || !have("qemu-img") {
        eprintln!("note: qemu-utils is not installed; skipping");
        return;
    }
    let dir = scratch("serve-qemu");
    let s = Server::start(&dir, SMALL);
    let info =
        String::from_utf8(run(Command::new("qemu-img").args(["info", &s.uri()])).stdout).unwrap();
    assert!(info.contains("64 MiB"), "{info}");
    let io = |cmds: &[&str]| qemu_io(&s.uri(), cmds);
    io(&[
        "write -P 0xab 1M 256k",
        "write -z 2M 64k",
        "discard 3M 64k",
        "flush",
    ]);
    let out = io(&[
        "read -P 0xab 1M 256k",
        "read -P 0 2M 64k",
        "read -P 0 3M 64k",
        "read -P 0 5M 4k",
    ]);
    assert!(!out.contains("Pattern verification failed"), "{out}");
    assert_eq!(out.matches("read ").count(), 4, "{out}");
    s.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn structured_replies_and_block_status_map_the_data_and_the_holes() {
    if !have("nbdinfo") || !have("qemu-io") || !have("qemu-img") {
        eprintln!("note: libnbd-bin or qemu-utils is not installed; skipping");
        return;
    }
    let dir = scratch("serve-map");
    let s = Server::start(&dir, SMALL);
    // libnbd and qemu negotiate structured replies and base:allocation.
    run(Command::new("nbdinfo").args(["--can", "structured-reply", &s.uri()]));
    qemu_io(
        &s.uri(),
        &[
            "write -P 0xab 1M 64k",
            "write -P 0xcd 3M 4k",
            "write -P 0x01 8M 64k",
            "write -z 8M 64k",
        ],
    );
    let map = run(Command::new("nbdinfo").args(["--map", "--json", &s.uri()])).stdout;
    let map: serde_json::Value = serde_json::from_slice(&map).unwrap();
    let got: Vec<(u64, u64, u64)> = map
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let n = |k: &str| e[k].as_u64().unwrap();
            (n("offset"), n("length"), n("type"))
        })
        .collect();
    const M: u64 = 1 << 20;
    // type 3: hole and zero; 0: data. The zeroed range at 8M is a hole again.
    assert_eq!(
        got,
        [
            (0, M, 3),
            (M, 64 << 10, 0),
            (M + (64 << 10), 2 * M - (64 << 10), 3),
            (3 * M, 4096, 0),
            (3 * M + 4096, 61 * M - 4096, 3),
        ]
    );
    let qmap =
        run(Command::new("qemu-img").args(["map", "--output=json", "-f", "raw", &s.uri()])).stdout;
    let qmap: serde_json::Value = serde_json::from_slice(&qmap).unwrap();
    let data: Vec<(u64, u64)> = qmap
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["data"] == true)
        .map(|e| (e["start"].as_u64().unwrap(), e["length"].as_u64().unwrap()))
        .collect();
    assert_eq!(data, [(M, 64 << 10), (3 * M, 4096)]);
    // Reads come back in structured replies (qemu-io negotiated them) intact.
    let out = qemu_io(
        &s.uri(),
        &[
            "read -P 0xab 1M 64k",
            "read -P 0xcd 3M 4k",
            "read -P 0 8M 64k",
        ],
    );
    assert!(!out.contains("Pattern verification failed"), "{out}");
    let report = s.stop();
    assert!(
        report_number(&report, "block status", ":") >= 2.0,
        "{report}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_flushed_write_survives_sigkill_and_restart_on_the_data_file() {
    if !have("qemu-io") {
        eprintln!("note: qemu-utils is not installed; skipping");
        return;
    }
    let dir = scratch("serve-durable");
    let data = dir.join("data");
    let data_arg = data.to_str().unwrap().to_string();
    let args: Vec<&str> = [SMALL, &["--data", &data_arg]].concat();
    let s = Server::start(&dir, &args);
    let mut writes: Vec<String> = (0..16)
        .map(|k| format!("write -P {} {}k 4k", 0x40 + k, k * 68))
        .collect();
    writes.push("flush".into());
    qemu_io(&s.uri(), &writes);
    // Killed right after the FLUSH reply: no chance to write anything more.
    s.kill();
    let s = Server::start(&dir, &args);
    let reads: Vec<String> = (0..16)
        .map(|k| format!("read -P {} {}k 4k", 0x40 + k, k * 68))
        .collect();
    let out = qemu_io(&s.uri(), &reads);
    assert!(!out.contains("Pattern verification failed"), "{out}");
    s.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_fio_jobs_on_two_connections_are_served_at_once() {
    if !have("fio") {
        eprintln!("note: fio is not installed; skipping");
        return;
    }
    let dir = scratch("serve-multiconn");
    let s = Server::start(&dir, &[]);
    let o = run(Command::new("fio").args([
        "--name=j",
        "--ioengine=nbd",
        &format!("--uri={}", s.uri()),
        "--rw=randread",
        "--bs=4k",
        "--iodepth=4",
        "--numjobs=2",
        "--size=8m",
        "--output-format=json",
    ]));
    let j = fio_json(&o);
    for k in 0..2 {
        assert_eq!(j["jobs"][k]["error"], 0);
        assert!(j["jobs"][k]["read"]["total_ios"].as_u64().unwrap() > 10);
    }
    let report = s.stop();
    // fio's setup connection and one per job.
    let conns: u64 = report
        .split(" connections")
        .next()
        .unwrap()
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(conns >= 3, "{report}");
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- A raw client, for what the real ones never send ----

fn greeting(s: &mut UnixStream) {
    let mut g = [0u8; 18];
    s.read_exact(&mut g).unwrap();
    assert_eq!(&g[..16], b"NBDMAGICIHAVEOPT");
}

/// The option reply's type.
fn option_reply(s: &mut UnixStream) -> (u32, Vec<u8>) {
    let mut h = [0u8; 20];
    s.read_exact(&mut h).unwrap();
    let kind = u32::from_be_bytes(h[12..16].try_into().unwrap());
    let len = u32::from_be_bytes(h[16..20].try_into().unwrap());
    let mut d = vec![0u8; len as usize];
    s.read_exact(&mut d).unwrap();
    (kind, d)
}

fn option(s: &mut UnixStream, opt: u32, data: &[u8]) {
    let mut b = b"IHAVEOPT".to_vec();
    b.extend_from_slice(&opt.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    s.write_all(&b).unwrap();
}

/// A connection in transmission (GO on the default export).
fn transmission(sock: &Path) -> UnixStream {
    let mut s = UnixStream::connect(sock).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    greeting(&mut s);
    s.write_all(&3u32.to_be_bytes()).unwrap();
    option(&mut s, 7, &[0, 0, 0, 0, 0, 0]);
    loop {
        let (kind, _) = option_reply(&mut s);
        if kind == 1 {
            return s;
        }
        assert_eq!(kind, 3, "INFO replies, then ACK");
    }
}

fn request(s: &mut UnixStream, flags: u16, kind: u16, cookie: u64, offset: u64, len: u32) {
    let mut b = 0x2560_9513u32.to_be_bytes().to_vec();
    b.extend_from_slice(&flags.to_be_bytes());
    b.extend_from_slice(&kind.to_be_bytes());
    b.extend_from_slice(&cookie.to_be_bytes());
    b.extend_from_slice(&offset.to_be_bytes());
    b.extend_from_slice(&len.to_be_bytes());
    s.write_all(&b).unwrap();
}

/// A simple reply: (error, cookie).
fn reply(s: &mut UnixStream) -> (u32, u64) {
    let mut h = [0u8; 16];
    s.read_exact(&mut h).unwrap();
    assert_eq!(&h[..4], &0x6744_6698u32.to_be_bytes());
    (
        u32::from_be_bytes(h[4..8].try_into().unwrap()),
        u64::from_be_bytes(h[8..16].try_into().unwrap()),
    )
}

/// A structured reply chunk: (flags, type, cookie, payload).
fn chunk(s: &mut UnixStream) -> (u16, u16, u64, Vec<u8>) {
    let mut h = [0u8; 20];
    s.read_exact(&mut h).unwrap();
    assert_eq!(&h[..4], &0x668e_33efu32.to_be_bytes());
    let len = u32::from_be_bytes(h[16..20].try_into().unwrap());
    let mut p = vec![0u8; len as usize];
    s.read_exact(&mut p).unwrap();
    (
        u16::from_be_bytes([h[4], h[5]]),
        u16::from_be_bytes([h[6], h[7]]),
        u64::from_be_bytes(h[8..16].try_into().unwrap()),
        p,
    )
}

#[test]
fn bad_handshakes_and_requests_get_the_protocols_errors_and_the_server_goes_on() {
    let dir = scratch("serve-bad");
    let s = Server::start(&dir, SMALL);
    let size = 64u64 << 20;
    // Unknown client flags: the server closes that connection.
    let mut c = UnixStream::connect(&s.sock).unwrap();
    greeting(&mut c);
    c.write_all(&0x80u32.to_be_bytes()).unwrap();
    let mut b = [0u8; 1];
    assert_eq!(c.read(&mut b).unwrap(), 0, "closed");
    // Garbage instead of an option: closed too.
    let mut c = UnixStream::connect(&s.sock).unwrap();
    greeting(&mut c);
    c.write_all(&1u32.to_be_bytes()).unwrap();
    c.write_all(&[0xff; 16]).unwrap();
    assert_eq!(c.read(&mut b).unwrap(), 0, "closed");
    // Unknown and malformed options are refused, and negotiation goes on.
    let mut c = UnixStream::connect(&s.sock).unwrap();
    greeting(&mut c);
    c.write_all(&1u32.to_be_bytes()).unwrap();
    option(&mut c, 99, b"what");
    assert_eq!(option_reply(&mut c).0, (1 << 31) + 1, "ERR_UNSUP");
    option(&mut c, 7, &[0, 0, 1, 0]);
    assert_eq!(option_reply(&mut c).0, (1 << 31) + 3, "ERR_INVALID");
    option(&mut c, 7, &[0, 0, 0, 3, b'n', b'o', b'p', 0, 0]);
    assert_eq!(option_reply(&mut c).0, (1 << 31) + 6, "ERR_UNKNOWN export");
    option(&mut c, 2, &[]);
    assert_eq!(option_reply(&mut c).0, 1, "ABORT acknowledged");

    // Requests: past the end, misaligned, oversized, unknown; then good ones.
    let mut c = transmission(&s.sock);
    request(&mut c, 0, 1, 1, size, 4096); // write past the end (payload follows)
    c.write_all(&[0u8; 4096]).unwrap();
    assert_eq!(reply(&mut c), (28, 1), "ENOSPC");
    request(&mut c, 0, 0, 2, size - 512, 1024); // read past the end
    assert_eq!(reply(&mut c), (22, 2), "EINVAL");
    request(&mut c, 0, 0, 3, 100, 512); // misaligned
    assert_eq!(reply(&mut c), (22, 3));
    request(&mut c, 0, 0, 4, 0, 64 << 20); // a read larger than the maximum payload
    assert_eq!(reply(&mut c), (22, 4));
    request(&mut c, 0, 1, 5, 0, (32 << 20) + 4096); // an oversized write: payload dropped
    c.write_all(&vec![7u8; (32 << 20) + 4096]).unwrap();
    assert_eq!(reply(&mut c), (22, 5));
    request(&mut c, 0, 42, 6, 0, 512); // unknown command
    assert_eq!(reply(&mut c), (22, 6));
    request(&mut c, 0, 4, 7, size - 512, 1024); // trim past the end
    assert_eq!(reply(&mut c), (22, 7));
    // The stream is still in step: a write and a read of it.
    request(&mut c, 1, 1, 8, 8192, 4096);
    c.write_all(&[0x5au8; 4096]).unwrap();
    assert_eq!(reply(&mut c), (0, 8));
    request(&mut c, 0, 0, 9, 8192, 4096);
    assert_eq!(reply(&mut c), (0, 9));
    let mut back = vec![0u8; 4096];
    c.read_exact(&mut back).unwrap();
    assert!(back.iter().all(|&b| b == 0x5a));
    // A bad magic ends this connection only.
    c.write_all(&[0u8; 28]).unwrap();
    assert_eq!(c.read(&mut b).unwrap(), 0, "closed");
    // Another connection is served.
    let mut c = transmission(&s.sock);
    request(&mut c, 0, 3, 10, 0, 0); // FLUSH
    assert_eq!(reply(&mut c), (0, 10));
    request(&mut c, 0, 7, 12, 0, 4096); // BLOCK_STATUS without a meta context
    assert_eq!(reply(&mut c), (22, 12));
    request(&mut c, 0, 2, 11, 0, 0); // DISC

    // A structured session with base:allocation: errors come as ERROR chunks.
    let mut c = UnixStream::connect(&s.sock).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    greeting(&mut c);
    c.write_all(&3u32.to_be_bytes()).unwrap();
    option(&mut c, 10, &[0, 0, 0, 0, 0, 0, 0, 0]); // SET_META_CONTEXT first: refused
    assert_eq!(option_reply(&mut c).0, (1 << 31) + 3, "ERR_INVALID");
    option(&mut c, 8, &[]);
    assert_eq!(option_reply(&mut c).0, 1, "STRUCTURED_REPLY acknowledged");
    let mut q = vec![0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 15];
    q.extend_from_slice(b"base:allocation");
    option(&mut c, 10, &q);
    let (kind, ctx) = option_reply(&mut c);
    assert_eq!(
        (kind, &ctx[4..]),
        (4, &b"base:allocation"[..]),
        "META_CONTEXT"
    );
    assert_eq!(option_reply(&mut c).0, 1);
    option(&mut c, 7, &[0, 0, 0, 0, 0, 0]);
    while option_reply(&mut c).0 != 1 {}
    request(&mut c, 0, 0, 13, size - 512, 1024); // read past the end
    let (flags, kind, cookie, payload) = chunk(&mut c);
    assert_eq!(
        (flags, kind, cookie),
        (1, (1 << 15) + 1, 13),
        "a DONE ERROR chunk"
    );
    assert_eq!(u32::from_be_bytes(payload[..4].try_into().unwrap()), 22);
    request(&mut c, 8, 7, 14, 0, 1 << 20); // BLOCK_STATUS with REQ_ONE
    let (flags, kind, cookie, payload) = chunk(&mut c);
    assert_eq!((flags, kind, cookie, payload.len()), (1, 5, 14, 12));
    let word = |i: usize| u32::from_be_bytes(payload[i..i + 4].try_into().unwrap());
    assert_eq!(
        (word(4), word(8)),
        (8192, 3),
        "the hole before the data written above"
    );
    request(&mut c, 0, 7, 15, 0, 8192 + 4096); // the hole, then the data
    let (_, _, _, payload) = chunk(&mut c);
    let word = |i: usize| u32::from_be_bytes(payload[i..i + 4].try_into().unwrap());
    assert_eq!((word(4), word(8), word(12), word(16)), (8192, 3, 4096, 0));
    request(&mut c, 0, 7, 16, 100, 512); // misaligned
    assert_eq!(chunk(&mut c).1, (1 << 15) + 1);
    request(&mut c, 0, 0, 17, 8192, 4096); // a read: one OFFSET_DATA chunk
    let (flags, kind, cookie, payload) = chunk(&mut c);
    assert_eq!((flags, kind, cookie, payload.len()), (1, 1, 17, 8 + 4096));
    assert_eq!(u64::from_be_bytes(payload[..8].try_into().unwrap()), 8192);
    assert!(payload[8..].iter().all(|&b| b == 0x5a));
    request(&mut c, 0, 2, 18, 0, 0); // DISC
    let report = s.stop();
    assert!(report.contains("10 requests refused"), "{report}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_serve_command_lines_are_one_line_errors() {
    let dir = scratch("serve-cli");
    let not_socket = dir.join("file");
    std::fs::write(&not_socket, "x").unwrap();
    for (args, want) in [
        (
            vec!["serve"],
            "--nbd unix:PATH or --nbd tcp:HOST:PORT is needed",
        ),
        (
            vec!["serve", "--nbd", "udp:x"],
            "expected unix:PATH or tcp:HOST:PORT",
        ),
        (
            vec!["serve", "--nbd", "tcp:127.0.0.1:99999"],
            "not a number",
        ),
        (
            vec!["serve", "--nbd", "unix:/x", "--bogus"],
            "unknown argument '--bogus'",
        ),
        (
            vec!["serve", "--nbd", &format!("unix:{}", not_socket.display())],
            "exists and is not a socket",
        ),
        (
            vec!["serve", "--precondition", "random", "--nbd", "unix:/x"],
            "--precondition random",
        ),
    ] {
        let o = common::flashpath(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn it_serves_over_tcp_too() {
    if !have("nbdinfo") || !have("qemu-io") {
        eprintln!("note: libnbd-bin or qemu-utils is not installed; skipping");
        return;
    }
    let dir = scratch("serve-tcp");
    // A free port: the system's pick, released for the server.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_flashpath"))
        .args(["serve", "--set", "device.geometry.capacity=64MiB"])
        .args(["--nbd", &format!("tcp:{addr}")])
        .stdout(std::fs::File::create(dir.join("report")).unwrap())
        .stderr(std::fs::File::create(dir.join("stderr")).unwrap())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while std::net::TcpStream::connect(&addr).is_err() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the server did not listen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let uri = format!("nbd://{addr}/");
    let info = String::from_utf8(run(Command::new("nbdinfo").arg(&uri)).stdout).unwrap();
    assert!(info.contains("export-size: 67108864"), "{info}");
    let out = qemu_io(&uri, &["write -P 0x3c 0 128k", "read -P 0x3c 0 128k"]);
    assert!(!out.contains("Pattern verification failed"), "{out}");
    signal(&child, "INT");
    assert!(child.wait().unwrap().success());
    let report = std::fs::read_to_string(dir.join("report")).unwrap();
    assert!(report_number(&report, "write", ":") >= 1.0, "{report}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn with_once_the_server_ends_when_its_last_client_leaves() {
    if !have("qemu-io") {
        eprintln!("note: qemu-utils is not installed; skipping");
        return;
    }
    let dir = scratch("serve-once");
    // (Readers that always wait in the kernel, too.)
    let mut s = Server::start(&dir, &[SMALL, &["--once", "--no-busy-poll"]].concat());
    // Connecting to see that it listens was a connection with no request: it ends
    // nothing. A client with requests does.
    qemu_io(&s.uri(), &["write 0 4k"]);
    let mut child = s.child.take().unwrap();
    let t = Instant::now();
    let st = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(t.elapsed() < Duration::from_secs(20), "still serving");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(st.success());
    let report = std::fs::read_to_string(dir.join("report")).unwrap();
    assert!(report_number(&report, "write", ":") >= 1.0, "{report}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn blktrace_and_the_timeline_work_in_serve_mode() {
    if !have("qemu-io") || !have("blkparse") {
        eprintln!("note: qemu-utils or blktrace is not installed; skipping");
        return;
    }
    let dir = scratch("serve-trace");
    let bt = dir.join("bt");
    let json = dir.join("t.json");
    let (bt_arg, json_arg) = (bt.to_str().unwrap(), json.to_str().unwrap());
    let s = Server::start(
        &dir,
        &[SMALL, &["--blktrace", bt_arg, "--trace", json_arg]].concat(),
    );
    qemu_io(&s.uri(), &["write 1M 64k", "read 1M 64k", "flush"]);
    s.stop();
    // blkparse reads the per-CPU files: the write's and the read's requests queued,
    // dispatched and completed, and the flush.
    let o = run(Command::new("blkparse").args(["-i", "mmcblk0", "-D", bt_arg]));
    let text = String::from_utf8_lossy(&o.stdout);
    for (action, rwbs) in [
        ("Q", "W"),
        ("D", "W"),
        ("C", "W"),
        ("Q", "R"),
        ("C", "R"),
        ("Q", "F"),
    ] {
        assert!(
            text.lines().any(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                w.len() > 6 && w[5] == action && w[6].contains(rwbs)
            }),
            "no {action} {rwbs} event in:\n{text}"
        );
    }
    let t: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap())
        .expect("the timeline is JSON");
    assert!(t["traceEvents"].as_array().is_some_and(|e| e.len() > 10));
    let _ = std::fs::remove_dir_all(&dir);
}
