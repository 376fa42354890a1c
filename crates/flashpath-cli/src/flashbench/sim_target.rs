//! flashbench's accesses on the simulated system: the whole plan as one scripted job
//! (one thread, synchronous pread/pwrite, O_DIRECT|O_SYNC, as dev.c opens the device),
//! so the device carries its state from each access to the next, in one simulation.
//!
//! dev.c reads or writes `pos % size` and loops on short transfers: an access that runs
//! past the end of the device is cut there (the block device's read_iter/write_iter
//! truncate at its size) and goes on at offset 0 (`pos % size` of the advanced
//! position). Each piece is one system call here; an access's time is the sum of its
//! pieces' latencies (system call entry to return, what dev.c's clock_gettime pair
//! measures). Left out: the zero-length pread/pwrite that ends each of dev.c's loops
//! (a system call that returns at once), and the instants between system calls.
//!
//! O_SYNC: each write is what the kernel makes of an O_DIRECT|O_SYNC pwrite (the core's
//! `o_sync` on a direct job): a REQ_FUA write where the queue has a write cache and
//! native FUA (a reliable write on eMMC), then blkdev_fsync's flush; on a queue without
//! a write cache (SD cards) a plain write.

//! O_DIRECT needs whole logical blocks: 512 bytes on eMMC and SD, 4 KiB on a UFS
//! logical unit. An access that is not in whole blocks would fail with EINVAL, which
//! flashbench prints and counts as 0 ns; flashpath refuses the run instead, before it
//! starts.

use super::bench::{Access, Target};
use crate::run;
use flashpath_core::device::config::Interface;
use flashpath_core::device::DeviceConfig;
use flashpath_core::host::{DriverKind, HostConfig};
use flashpath_core::sim::{Precondition, SimConfig};
use flashpath_core::trace::Trace;
use flashpath_core::workload::{Dir, IoSpec, JobConfig};

pub struct SimTarget {
    pub host: HostConfig,
    pub device: DeviceConfig,
    pub driver: DriverKind,
    pub precondition: Precondition,
    /// Record the run's event trace (for `--trace`/`--blktrace`).
    pub traced: bool,
    pub trace: Option<Trace>,
    /// Show the progress display (off where another command shows its own: calibrate).
    pub progress: bool,
}

impl SimTarget {
    /// The logical block size O_DIRECT accesses must be whole multiples of.
    pub fn logical_block(&self) -> u64 {
        match self.device.interface {
            Interface::Ufs => 4096,
            Interface::Emmc | Interface::Sd => 512,
        }
    }

    /// dev.c's loop: the system calls one access makes.
    pub fn pieces(a: &Access, size: u64) -> Vec<IoSpec> {
        let dir = if a.write { Dir::Write } else { Dir::Read };
        let mut out = Vec::new();
        let (mut pos, mut left) = (a.offset, a.len);
        while left > 0 {
            let at = pos % size;
            let n = left.min(size - at);
            out.push(IoSpec {
                dir,
                trim: false,
                offset: at,
                len: n,
            });
            left -= n;
            pos += n;
        }
        out
    }
}

impl Target for SimTarget {
    fn size(&self) -> u64 {
        self.device.capacity_bytes
    }

    fn time(&mut self, plan: &[Access]) -> Result<Vec<u64>, String> {
        let size = self.size();
        let block = self.logical_block();
        let mut ios: Vec<IoSpec> = Vec::with_capacity(plan.len());
        let mut owner: Vec<u32> = Vec::with_capacity(plan.len());
        for (k, a) in plan.iter().enumerate() {
            for io in Self::pieces(a, size) {
                if io.offset % block != 0 || io.len % block != 0 {
                    let what = if a.write { "write" } else { "read" };
                    // Name what to change: the length (the block size the test uses)
                    // or the offset flashbench computed (from --offset, say).
                    let fix = if io.len % block != 0 || a.offset % block == 0 {
                        format!("use a block size that is a multiple of {}", 2 * block)
                    } else {
                        format!("flashbench computed offset {}, not a multiple of {block} (-O starts from --offset)", a.offset)
                    };
                    let wrapped = if a.offset >= size {
                        format!(" (offset {} wrapped at the device's {size} bytes, as flashbench's dev.c does)", a.offset)
                    } else {
                        String::new()
                    };
                    return Err(format!(
                        "a {what} of {} bytes at byte {}{wrapped} is not in whole {block}-byte logical blocks of device '{}': O_DIRECT refuses it (EINVAL) and flashbench would time it as 0 ns; not modelled ({fix})",
                        io.len,
                        io.offset,
                        self.device.name,
                    ));
                }
                ios.push(io);
                owner.push(k as u32);
            }
        }
        let mut job = JobConfig::scripted("flashbench", ios.into());
        // dev.c opens the device O_DIRECT|O_SYNC.
        job.o_sync = true;
        let cfg = SimConfig {
            host: self.host.clone(),
            device: self.device.clone(),
            driver: self.driver,
            jobs: vec![job],
            precondition: self.precondition,
        };
        let what = format!("{} system calls", owner.len());
        if self.progress {
            run::progress::show_step("flashbench", 1, 1, &what);
        }
        let run =
            run::simulate_traced(cfg, self.progress, self.traced).map_err(|e| format!("{e:#}"));
        if self.progress {
            run::progress::end_steps();
        }
        let (result, trace) = run?;
        self.trace = trace;
        let lat = &result
            .jobs
            .first()
            .ok_or("the simulation reported no job")?
            .script_lat_ns;
        if lat.len() != owner.len() {
            return Err(format!(
                "the simulation timed {} of {} system calls",
                lat.len(),
                owner.len()
            ));
        }
        let mut times = vec![0u64; plan.len()];
        for (&k, &t) in owner.iter().zip(lat) {
            times[k as usize] += t;
        }
        Ok(times)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_access_past_the_end_wraps_as_dev_c_loops() {
        let a = Access {
            write: false,
            offset: 10 * 4096 - 1024,
            len: 4096,
            fill: 0,
        };
        let p = SimTarget::pieces(&a, 10 * 4096);
        assert_eq!(
            p.iter().map(|io| (io.offset, io.len)).collect::<Vec<_>>(),
            vec![(40960 - 1024, 1024), (0, 3072)]
        );
        // Past the end entirely: pos % size.
        let a = Access {
            offset: 3 * 40960 + 512,
            ..a
        };
        let p = SimTarget::pieces(&a, 40960);
        assert_eq!((p[0].offset, p[0].len, p.len()), (512, 4096, 1));
        // Larger than the device: around more than once.
        let a = Access {
            offset: 0,
            len: 3 * 1024,
            ..a
        };
        assert_eq!(SimTarget::pieces(&a, 1024).len(), 3);
    }
}
