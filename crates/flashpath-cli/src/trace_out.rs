//! `--blktrace DIR` and `--trace FILE`: the run's block events as blktrace's per-CPU
//! files and its timeline as Chrome trace-event JSON, written as the run goes.
//!
//! Between steps of the run the CLI takes what the simulator's trace recorded
//! (`Sim::drain_trace`) and feeds it to the core's streaming encoders
//! (`blktrace::BlktraceStream`, `timeline::ChromeStream`), which hand back the bytes
//! of everything older than the current simulated time and keep only what is booked
//! ahead; the bytes go to buffered files. The timeline's metadata (which NAND dies and
//! channels appear) is known only at the end, so its sections are streamed to part
//! files beside the output and joined behind the metadata when the run is over. The
//! files are the same bytes `blktrace::encode` and `timeline::chrome_json` give for the
//! whole trace.

use anyhow::{Context, Result};
use flashpath_core::blktrace::{BlkDevice, BlktraceStream};
use flashpath_core::host::DriverKind;
use flashpath_core::timeline::{ChromeStream, SECTIONS};
use flashpath_core::trace::{Trace, TraceChunk};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

/// Where `--blktrace` and `--trace` write, checked (and created) before the run.
pub(crate) struct TraceOutputs {
    blktrace: Option<PathBuf>,
    timeline: Option<(PathBuf, File)>,
}

fn buffered(p: &PathBuf, what: &str) -> Result<BufWriter<File>> {
    let f = File::create(p).with_context(|| format!("{what}: cannot create {}", p.display()))?;
    Ok(BufWriter::with_capacity(256 << 10, f))
}

impl TraceOutputs {
    pub(crate) fn open(o: &crate::run::Options) -> Result<TraceOutputs> {
        let blktrace = match &o.blktrace {
            Some(d) => {
                let p = PathBuf::from(d);
                std::fs::create_dir_all(&p)
                    .with_context(|| format!("--blktrace {d}: cannot create the directory"))?;
                Some(p)
            }
            None => None,
        };
        let timeline = match &o.trace {
            Some(f) => {
                let file = File::create(f)
                    .with_context(|| format!("--trace {f}: cannot create the file"))?;
                Some((PathBuf::from(f), file))
            }
            None => None,
        };
        Ok(TraceOutputs { blktrace, timeline })
    }

    pub(crate) fn wanted(&self) -> bool {
        self.blktrace.is_some() || self.timeline.is_some()
    }

    /// Starts writing: the per-CPU files of `cores` and the timeline's part files.
    pub(crate) fn stream(
        self,
        driver: DriverKind,
        cores: u32,
        tasks: Vec<(u32, String)>,
    ) -> Result<TraceStreamer> {
        let blk = match self.blktrace {
            Some(dir) => {
                let dev = BlkDevice::for_driver(driver);
                let enc = BlktraceStream::new(dev, cores, tasks);
                let mut files = Vec::new();
                for cpu in 0..enc.out.len() {
                    let p = dir.join(dev.file_name(cpu as u32));
                    files.push((buffered(&p, "--blktrace")?, p));
                }
                Some((enc, files))
            }
            None => None,
        };
        let json = match self.timeline {
            Some((path, file)) => {
                let mut parts = Vec::new();
                let mut cleanup = PartFiles(Vec::new());
                for i in 0..SECTIONS {
                    let p = PathBuf::from(format!("{}.flashpath-part{i}", path.display()));
                    let f = buffered(&p, "--trace")?;
                    cleanup.0.push(p.clone());
                    parts.push((f, p));
                }
                Some(Timeline {
                    enc: ChromeStream::new(cores),
                    path,
                    file,
                    parts,
                    _cleanup: cleanup,
                })
            }
            None => None,
        };
        Ok(TraceStreamer { blk, json })
    }

    /// Turns `sim`'s trace on and starts writing, if an output was asked for: what
    /// `flashpath fio` and `flashpath serve` do before their runs.
    pub(crate) fn start(
        self,
        sim: &mut flashpath_core::sim::Sim,
        driver: DriverKind,
        cores: u32,
    ) -> Result<Option<TraceStreamer>> {
        if !self.wanted() {
            return Ok(None);
        }
        sim.enable_trace();
        let tasks = sim.trace().map(|t| t.tasks.clone()).unwrap_or_default();
        self.stream(driver, cores, tasks).map(Some)
    }

    /// Writes the whole trace of a run kept in memory (iozone and flashbench runs).
    pub(crate) fn write(self, trace: &Trace, driver: DriverKind) -> Result<()> {
        let s = self.stream(driver, trace.cores, trace.tasks.clone())?;
        s.finish(trace.clone().into_chunk())
    }
}

struct Timeline {
    enc: ChromeStream,
    path: PathBuf,
    file: File,
    parts: Vec<Sink>,
    /// Removes the part files however the run ends (a failed write included).
    _cleanup: PartFiles,
}

/// The timeline's part files, removed when dropped: joined into the output on
/// success, left behind by nothing on failure.
struct PartFiles(Vec<PathBuf>);

impl Drop for PartFiles {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// A file being written, and its name for errors.
type Sink = (BufWriter<File>, PathBuf);

/// The trace outputs of a run being written.
pub(crate) struct TraceStreamer {
    blk: Option<(BlktraceStream, Vec<Sink>)>,
    json: Option<Timeline>,
}

impl TraceStreamer {
    fn drain(&mut self) -> Result<()> {
        if let Some((enc, files)) = &mut self.blk {
            for (buf, (f, p)) in enc.out.iter_mut().zip(files.iter_mut()) {
                f.write_all(buf)
                    .with_context(|| format!("--blktrace: writing {}", p.display()))?;
                buf.clear();
            }
        }
        if let Some(t) = &mut self.json {
            for (s, (f, p)) in t.enc.sections.iter_mut().zip(t.parts.iter_mut()) {
                f.write_all(s.as_bytes())
                    .with_context(|| format!("--trace: writing {}", p.display()))?;
                s.clear();
            }
        }
        Ok(())
    }

    /// Writes what `chunk` makes final.
    pub(crate) fn feed(&mut self, chunk: TraceChunk) -> Result<()> {
        if let Some((enc, _)) = &mut self.blk {
            enc.feed(&chunk);
        }
        if let Some(t) = &mut self.json {
            t.enc.feed(chunk);
        }
        self.drain()
    }

    /// The run of `sim` is over: what its trace still holds, then the files completed.
    pub(crate) fn finish_sim(self, sim: &mut flashpath_core::sim::Sim) -> Result<()> {
        let rest = sim.take_trace().map(Trace::into_chunk).unwrap_or_default();
        self.finish(rest)
    }

    /// The run is over: `rest` is what the trace still held (`Sim::take_trace`).
    pub(crate) fn finish(mut self, rest: TraceChunk) -> Result<()> {
        if let Some((enc, _)) = &mut self.blk {
            enc.finish(&rest);
        }
        if let Some(t) = &mut self.json {
            t.enc.finish(rest);
        }
        self.drain()?;
        if let Some((_, files)) = &mut self.blk {
            for (f, p) in files.iter_mut() {
                f.flush()
                    .with_context(|| format!("--blktrace: writing {}", p.display()))?;
            }
        }
        if let Some(t) = self.json {
            let Timeline {
                enc,
                path,
                file,
                parts,
                _cleanup,
            } = t;
            let ctx = || format!("--trace: writing {}", path.display());
            let mut out = BufWriter::with_capacity(256 << 10, file);
            out.write_all(enc.head().as_bytes()).with_context(ctx)?;
            for (f, p) in parts {
                drop(
                    f.into_inner()
                        .map_err(|e| e.into_error())
                        .with_context(ctx)?,
                );
                let mut part = File::open(&p).with_context(ctx)?;
                std::io::copy(&mut part, &mut out).with_context(ctx)?;
                std::fs::remove_file(&p).with_context(ctx)?;
            }
            out.write_all(ChromeStream::tail().as_bytes())
                .with_context(ctx)?;
            out.flush().with_context(ctx)?;
        }
        Ok(())
    }
}
