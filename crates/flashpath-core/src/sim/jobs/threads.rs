//! fio's job threads: when each starts (startdelay, stonewall, wait_for), the loop
//! that reaps completions and issues I/Os (fio's do_io: think time, rate, depth,
//! batching), the system call that submits them and the kernel's bios it builds, the
//! completion of an I/O and the thread's end. Each thread is one fio job (or clone of
//! numjobs) on its own core; its statistics are fio's. Units: ns, bytes.

use crate::sim::*;

impl Sim {
    pub(in crate::sim) fn thread_start(&mut self, t: u32) {
        let now = self.now;
        let waits = &self.cfg.jobs[self.threads[t as usize].cfg].wait_for;
        if waits
            .iter()
            .any(|&w| self.threads[w].state != ThreadState::Finished)
        {
            // wait_for: started by the last of its waitees' ends (`thread_finish`).
            self.threads[t as usize].state = ThreadState::Waiting;
            return;
        }
        let cfg = &self.cfg.jobs[self.threads[t as usize].cfg];
        let ramp = cfg.ramp_ns;
        let th = &mut self.threads[t as usize];
        th.state = ThreadState::Running;
        th.start = now;
        th.measure_start = now.saturating_add(ramp);
        th.last_change = now;
        th.stats.start_ns = now;
        if cfg.lat_target.is_some() {
            self.lat_target_start(t);
        }
        self.occupancy_start(t);
        if self.verify.is_some() {
            self.verify_dry_run(t);
        }
        if t as usize >= self.prefill {
            let job = t as usize - self.prefill;
            for o in &mut self.observers {
                o.job_started(job, now, now + ramp);
            }
            self.ss_thread_started(t as usize);
        }
        if t as usize == self.prefill {
            self.dev.age_data();
        }
        if t as usize == self.prefill && self.trace.is_some() {
            if let Some(tr) = &mut self.trace {
                tr.start = now;
                tr.started = true;
            }
            if self.prefill > 0 {
                self.record_work();
            }
        }
        self.thread_run(t);
    }

    /// fio's disk statistics samples: once preconditioning is over, and at the end.
    pub(in crate::sim) fn disk_sample(&mut self, t: u32) {
        let now = self.now;
        if (t as usize) < self.prefill
            && self.threads[..self.prefill]
                .iter()
                .all(|x| x.state == ThreadState::Finished)
        {
            self.sys.disk_start = self.block.disk_stats(now);
        }
        if self.unfinished == 0 {
            self.sys.disk_end = self.block.disk_stats(now);
        }
    }

    /// fio's exitall (td_exitall → fio_terminate_threads): the threads `exit_what`
    /// names stop issuing: `group`, those of `t`'s reporting group; `stonewall`, those
    /// running now; `all`, every one, those not started yet too. A thread asleep in
    /// think time or a rate limit ends when it wakes (fio's signal would end the sleep at
    /// once: an approximation).
    pub(in crate::sim) fn exit_group(&mut self, t: usize) {
        let (what, group) = (self.cfg.jobs[t].exit_what, self.cfg.jobs[t].group_id);
        for i in self.prefill..self.threads.len() {
            let th = &mut self.threads[i];
            let named = match what {
                ExitWhat::Group => self.cfg.jobs[i].group_id == group,
                ExitWhat::Stonewall => matches!(
                    th.state,
                    ThreadState::Running | ThreadState::Sleeping | ThreadState::Delayed
                ),
                ExitWhat::All => true,
            };
            if i == t || !named || th.state == ThreadState::Finished {
                continue;
            }
            th.terminated = true;
        }
    }

    pub(in crate::sim) fn job_done_issuing(&self, t: u32) -> bool {
        let th = &self.threads[t as usize];
        let cfg = &self.cfg.jobs[th.cfg];
        if let Some(rt) = cfg.runtime_ns {
            if self.now >= th.start.saturating_add(cfg.ramp_ns).saturating_add(rt) {
                return true;
            }
        }
        let src_done = th.src.done();
        if src_done && cfg.fill_enospc {
            // The free space is written: the next write fails (sim/jobs/fill_device.rs), and
            // fio then skips the job's verify phase (td->terminate).
            return true;
        }
        if let Some(j) = self
            .verify
            .as_ref()
            .and_then(|v| v.jobs[t as usize].as_ref())
        {
            return th.terminated || j.done(src_done);
        }
        th.terminated || src_done
    }

    #[inline(always)]
    pub(in crate::sim) fn account_outstanding(&mut self, t: u32) {
        let now = self.now;
        let th = &mut self.threads[t as usize];
        if now > th.last_change {
            let from = th.last_change.max(th.measure_start);
            if now > from {
                th.stats.outstanding_area += th.outstanding as u128 * (now - from) as u128;
            }
            th.last_change = now;
        }
    }

    /// The thread runs: it reaps what completed, then issues as its engine allows.
    pub(in crate::sim) fn thread_run(&mut self, t: u32) {
        if self.threads[t as usize].offload.is_some() {
            return self.offload_run(t);
        }
        let now = self.now;
        // Reap completions (their completion latency ends now, when fio sees them), at
        // most iodepth_batch_complete_max of them (the rest wait for the next reap).
        let mut done = std::mem::take(&mut self.threads[t as usize].completed);
        let reap_max = self.cfg.jobs[self.threads[t as usize].cfg].reap_max as usize;
        if reap_max > 0 && done.len() > reap_max {
            self.threads[t as usize].completed = done.split_off(reap_max);
        }
        if !done.is_empty() {
            self.account_outstanding(t);
        }
        if !done.is_empty() {
            let b = batch_bucket(done.len() as u32);
            self.threads[t as usize].stats.complete_hist[b] += 1;
        }
        // An O_SYNC direct write's system call goes on with its fsync (synchronous
        // engines: one I/O at a time).
        if let [io] = done[..] {
            if self.ios[io as usize].sync_after {
                done.clear();
                self.threads[t as usize].completed = done;
                return self.o_sync_direct_fsync(t, io);
            }
        }
        if !done.is_empty() && self.threads[t as usize].lat.is_some() {
            self.lat_target_reaped(t, &done);
        }
        let mut verified_4k = 0;
        for &io in &done {
            if self.verify.is_some() {
                verified_4k += self.verify_reaped(t, io);
            }
            self.record_io(t, io);
        }
        if !done.is_empty() && self.threads[t as usize].min_rate.is_some() {
            self.check_min_rate(t);
        }
        done.clear();
        let rest = std::mem::replace(&mut self.threads[t as usize].completed, done);
        self.threads[t as usize].completed.extend(rest);
        if verified_4k > 0 {
            // fio checks what it read in the completion path, on the reaping thread's
            // core, before it goes on.
            return self.verify_cpu(t, verified_4k);
        }
        if self.buf_sync_due(t) {
            return;
        }

        if self.job_done_issuing(t) {
            if self.fill_enospc(t) {
                return;
            }
            if self.threads[t as usize].inflight == 0 && self.threads[t as usize].held > 0 {
                // verify_async: the verify threads still hold io_us.
                return self.verify_async_block(t);
            }
            if self.threads[t as usize].inflight == 0 {
                if self.buf_end_fsync(t) {
                    return;
                }
                self.thread_finish(t);
            } else {
                self.wait_for_completions(t);
            }
            return;
        }
        if self.threads[t as usize].lat.is_some() && self.lat_target_check(t) {
            // The latency profile quiesces the queue before it moves on.
            self.wait_for_completions(t);
            return;
        }
        let th = &mut self.threads[t as usize];
        if let Some(len) = th.pause {
            // Quiesced for a think-time or rate sleep: then the sleep, on a timer
            // (completions wait for the thread to wake).
            if th.inflight > 0 {
                self.wait_for_completions(t);
            } else {
                th.pause = None;
                th.state = ThreadState::Delayed;
                self.q.push(now + len, Ev::ThreadRun(t));
            }
            return;
        }
        if th.held > 0 && th.inflight + th.held >= th.depth {
            // verify_async: every io_u is in flight or with a verify thread.
            return self.verify_async_block(t);
        }
        if th.inflight >= th.depth {
            self.wait_for_completions(t);
            return;
        }
        if th.flow.is_some() && self.flow_stalled(t) {
            return;
        }
        let th = &self.threads[t as usize];
        if th.replay.is_some() {
            if !self.replay_step(t) {
                return;
            }
            if self.threads[t as usize].terminated {
                // The replay's trace is over.
                return self.thread_run(t);
            }
        }
        let th = &self.threads[t as usize];
        let cfg = &self.cfg.jobs[th.cfg];
        let submission = cfg.submission;
        // Think time every `thinktime_blocks` I/Os, and rate limits.
        let mut gate = now;
        let think = cfg.thinktime_ns > 0 && th.ios_since_think >= cfg.thinktime_blocks.max(1);
        if think {
            gate = now.saturating_add(cfg.thinktime_ns);
        }
        let th = &mut self.threads[t as usize];
        if let Some(p) = &mut th.poisson {
            // rate_process=poisson (workload/rate.rs): each issue draws the next gap.
            for i in 0..2 {
                let iops = if cfg.rate_iops[i] > 0 {
                    cfg.rate_iops[i]
                } else {
                    cfg.rate_bytes_per_s[i] / cfg.bs[i].min().max(1)
                };
                if iops > 0 {
                    let at = p.next_issue_ns(i, th.src.issued_per_dir[i], iops);
                    gate = gate.max(th.start + at);
                }
            }
        }
        let th = &self.threads[t as usize];
        for d in [Dir::Read, Dir::Write] {
            let i = d.index();
            if th.poisson.is_none() && (cfg.rate_bytes_per_s[i] > 0 || cfg.rate_iops[i] > 0) {
                // fio's clock counts what was issued (usec_for_io: rate_io_issue_bytes).
                let s = &th.src;
                let g = rate_gate(
                    th.start,
                    s.issued_bytes_per_dir[i],
                    s.issued_per_dir[i],
                    cfg.rate_bytes_per_s[i],
                    cfg.rate_iops[i],
                );
                gate = gate.max(g);
            }
        }
        if think {
            self.threads[t as usize].ios_since_think = 0;
        }
        if gate > now {
            // fio quiesces before it sleeps (io_u_quiesce in handle_thinktime and
            // rate_ddir), then sleeps the time it computed before.
            let th = &mut self.threads[t as usize];
            if th.inflight > 0 {
                th.pause = Some(gate - now);
                self.wait_for_completions(t);
            } else {
                th.state = ThreadState::Delayed;
                self.q.push(gate, Ev::ThreadRun(t));
            }
            return;
        }
        // Choose the I/Os of this system call and book its CPU work.
        let batch = match submission {
            Submission::Sync => 1,
            Submission::Async { batch_submit, .. } => batch_submit.max(1),
        };
        let costs = &self.cfg.host.costs;
        let (c_syscall, c_aio, c_pin, c_pin_read, c_block) = (
            costs.syscall_ns,
            costs.aio_submit_ns,
            costs.pin_per_4k_ns,
            costs.pin_per_4k_read_ns,
            costs.block_submit_ns,
        );
        let null = cfg.null_engine;
        let mut cost = match submission {
            _ if null => 0,
            Submission::Sync => c_syscall,
            Submission::Async { .. } => c_aio,
        };
        let max_bytes = self.cfg.host.block.max_request_bytes;
        let splits = self.cfg.host.kernel.splits_bios();
        let max_discard_bytes = (self.block.max_discard_sectors() as u64 * 512).max(512);
        let direct = cfg.direct;
        let trim_errno = cfg.trim_errno;
        let mut trim_failed = None;
        let mut picked = std::mem::take(&mut self.threads[t as usize].submitting);
        for _ in 0..batch {
            let th = &mut self.threads[t as usize];
            if th.inflight + th.held + picked.len() as u32 >= th.depth {
                break;
            }
            let src_done = th.src.done();
            let mut verify_of = None;
            let spec = match self
                .verify
                .as_mut()
                .and_then(|v| v.jobs[t as usize].as_mut())
            {
                None if src_done => break,
                None => match th.src.next_io() {
                    Some(spec) => spec,
                    None => break,
                },
                Some(j) => {
                    let next = j.next(
                        &mut th.src,
                        src_done,
                        th.inflight + picked.len() as u32,
                        now,
                    );
                    // verify_only: a later run's dry run, counted as issued.
                    let (ios, bytes) = j.take_dry_pending();
                    th.stats.dirs[1].ios += ios;
                    th.stats.dirs[1].bytes += bytes;
                    th.stats.depth_hist[0] += ios;
                    match next {
                        verify::Next::Io { spec, verify } => {
                            verify_of = verify;
                            spec
                        }
                        verify::Next::Wait | verify::Next::Done => break,
                    }
                }
            };
            if spec.trim && trim_errno.is_some() {
                // fio's os_trim: ioctl(BLKDISCARD) on a regular file fails in the system
                // call (a trim job runs one at a time: nothing else is picked).
                trim_failed = trim_errno;
                break;
            }
            let nbios = if spec.trim {
                // __blkdev_issue_discard and blk_bio_discard_split: pieces of at most
                // max_discard_sectors, granularity-aligned.
                self.block
                    .discard_pieces(spec.offset, spec.len, max_discard_bytes)
            } else {
                rw_pieces(spec.len, max_bytes, splits)
            };
            if null {
                cost += null_engine::per_io_cost(&self.cfg.host.costs);
            } else if let Submission::Async { .. } = submission {
                cost += c_syscall;
            }
            if null {
                // No kernel work.
            } else if spec.trim {
                // ioctl(BLKDISCARD): no pages to pin; the discard bios.
                cost += c_block * nbios as u64;
            } else if direct {
                // Buffered I/O books its page cache work in sim/kernel/buffered.rs.
                let pin = match spec.dir {
                    Dir::Read => c_pin_read,
                    _ => c_pin,
                };
                cost += pin * spec.len.div_ceil(4096) + c_block * nbios as u64;
            }
            let io = self.alloc_io(Io::direct(t, &spec, nbios, now));
            if direct && !null && !spec.trim && spec.dir == Dir::Write {
                self.o_sync_direct(t, io);
            }
            if let Some(v) = &mut self.verify {
                verify::issued(v, t as usize, io, &spec, verify_of);
            }
            self.observe_queued(t, &spec);
            picked.push(io);
        }
        if let Some(errno) = trim_failed {
            self.threads[t as usize].submitting = picked;
            return self.trim_failed(t, errno, c_syscall);
        }
        if picked.is_empty() && self.threads[t as usize].src.exhausted() {
            // The job's last pass ended: it issues nothing more (job_done_issuing).
            self.threads[t as usize].submitting = picked;
            return self.thread_run(t);
        }
        if picked.is_empty() {
            // A verifying job waits for a write it must verify next, or for the write
            // phase to end: a completion wakes it.
            self.threads[t as usize].submitting = picked;
            self.threads[t as usize].state = ThreadState::Sleeping;
            return;
        }
        self.account_outstanding(t);
        if self.threads[t as usize].flow.is_some() {
            self.flow_issued(t, picked.len() as u64);
        }
        let th = &mut self.threads[t as usize];
        th.outstanding += picked.len() as u32;
        th.stats.submit_hist[batch_bucket(picked.len() as u32)] += 1;
        th.submitting = picked;
        th.state = ThreadState::Running;
        if null {
            th.stats.usr_ns += cost;
        } else {
            th.stats.sys_ns += cost;
        }
        let core = th.core;
        let end = self.cpu.run_l(core, now, cost, "syscall submit");
        self.q.push(end, Ev::Submitted(t));
    }

    #[inline(always)]
    pub(in crate::sim) fn alloc_io(&mut self, io: Io) -> u32 {
        match self.free_ios.pop() {
            Some(i) => {
                self.ios[i as usize] = io;
                i
            }
            None => {
                self.ios.push(io);
                (self.ios.len() - 1) as u32
            }
        }
    }

    /// The system call's work is done: the bios enter the block layer (one plug: they
    /// are inserted together and the queue is run once).
    pub(in crate::sim) fn submitted(&mut self, t: u32) {
        let job = &self.cfg.jobs[self.threads[t as usize].cfg];
        if job.null_engine {
            return self.null_submitted(t);
        }
        if !job.direct {
            return self.buf_submitted(t);
        }
        let picked = std::mem::take(&mut self.threads[t as usize].submitting);
        let core = self.threads[t as usize].core;
        self.submit_direct(t, core, &picked);
        let mut picked = picked;
        picked.clear();
        self.threads[t as usize].submitting = picked;
        self.after_submit(t);
    }

    /// The direct I/Os `picked` of thread `t` leave their system call on `core` now:
    /// their bios enter the block layer (one plug: inserted together, the queue run once).
    pub(in crate::sim) fn submit_direct(&mut self, t: u32, core: u32, picked: &[u32]) {
        let now = self.now;
        self.account_outstanding(t);
        let max_rw_sectors = self.block.max_sectors() as u64;
        let max_discard_sectors = self.block.max_discard_sectors() as u64;
        let kernel_bio = kernel_bio_sectors(max_rw_sectors, self.cfg.host.kernel.splits_bios());
        let tracing = self.trace.is_some();
        let made = self.block.requests_made;
        if tracing {
            self.blk_syscall_start(t, picked.len());
        }
        for &io in picked {
            let (_, _, len) = self.note_issued(t, io);
            if tracing {
                self.blk_io_start(t, picked.len(), len);
            }
            let pieces =
                self.submit_io_bios(io, core, kernel_bio, max_rw_sectors, max_discard_sectors);
            // The system call booked (and `parts_left` counts) as many bios as went in.
            debug_assert_eq!(pieces, self.ios[io as usize].parts_left, "bios of I/O {io}");
            if tracing {
                self.blk_io_end(now, t);
            }
        }
        if tracing {
            self.blk_syscall_end(now, t);
        }
        // Inserting a new request runs the hardware queue (asynchronously, from kblockd);
        // a bio merged into a queued request runs nothing (blk_mq_make_request).
        if self.block.requests_made != made {
            self.kick(core);
        }
    }

    /// The bios of direct I/O `io` enter the block layer now from `core`: reads and
    /// writes cut at `kernel_bio` sectors (`kernel_bio_sectors`), discards as
    /// `sim/kernel/discard.rs` splits them, each split again at the queue's limit
    /// (`submit_kernel_bio`). Returns how many bios went in. The caller runs the queue.
    #[inline]
    pub(in crate::sim) fn submit_io_bios(
        &mut self,
        io: u32,
        core: u32,
        kernel_bio: u64,
        max_rw_sectors: u64,
        max_discard_sectors: u64,
    ) -> u32 {
        let now = self.now;
        let x = &self.ios[io as usize];
        let (dir, discard, fua) = (x.dir, x.trim, x.fua);
        let max_sectors = if discard {
            max_discard_sectors
        } else {
            max_rw_sectors
        };
        let mut sector = x.offset / 512;
        let end = (x.offset + x.len) / 512;
        let mut pieces = 0;
        while sector < end {
            let n = if discard {
                self.block.discard_split(sector, end - sector, max_sectors)
            } else {
                (end - sector).min(kernel_bio)
            } as u32;
            let bio = Bio {
                io,
                dir,
                sector,
                sectors: n,
                cpu: core,
                queued_at: now,
                discard,
                // REQ_FUA is one of REQ_NOMERGE_FLAGS.
                nomerge: fua,
            };
            pieces += self.submit_kernel_bio(bio, max_sectors as u32);
            sector += n as u64;
        }
        pieces
    }

    /// A bio enters the block layer now (blktrace's Q, then its fate: merged or a new
    /// request, when tracing).
    pub(in crate::sim) fn submit_bio(&mut self, bio: Bio) {
        if self.trace.is_some() {
            self.blk_queue(self.now, &bio);
        }
        self.enter_bio(bio);
    }

    /// A bio the kernel built as large as it could (`kernel_bio_sectors`) enters the
    /// block layer now; one larger than `max_sectors` is split there (blk_queue_split):
    /// Q of the whole, then for each piece cut off the front an X and the Q of the
    /// rest, the piece itself going on as REQ_NOMERGE; the last piece is mergeable.
    /// Returns how many bios entered the block layer.
    pub(in crate::sim) fn submit_kernel_bio(&mut self, bio: Bio, max_sectors: u32) -> u32 {
        if bio.sectors <= max_sectors {
            self.submit_bio(bio);
            return 1;
        }
        let mut pieces = 1;
        let now = self.now;
        let tracing = self.trace.is_some();
        if tracing {
            self.blk_queue(now, &bio);
        }
        let mut rest = bio;
        while rest.sectors > max_sectors {
            let front = Bio {
                sectors: max_sectors,
                nomerge: true,
                ..rest
            };
            rest.sector += max_sectors as u64;
            rest.sectors -= max_sectors;
            if tracing {
                self.blk_split(now, &front, rest.sector);
                self.blk_queue(now, &rest);
            }
            self.enter_bio(front);
            pieces += 1;
        }
        self.enter_bio(rest);
        pieces
    }

    /// A bio (at most max_sectors, already Q'd) goes into the block layer now: merged
    /// or a new request, traced when tracing.
    pub(in crate::sim) fn enter_bio(&mut self, bio: Bio) {
        let now = self.now;
        if bio.dir == Dir::Write && !bio.discard {
            self.dev.prefetch_write(bio.sector);
        }
        self.block.submit(now, bio);
        if self.trace.is_some() {
            self.blk_fates(now, true);
        }
    }

    /// An I/O of thread `t` leaves its system call for the kernel now: its submission
    /// time, the thread's in-flight count and fio's depth histogram. Returns (direction,
    /// offset, length).
    pub(in crate::sim) fn note_issued(&mut self, t: u32, io: u32) -> (Dir, u64, u64) {
        let x = &mut self.ios[io as usize];
        x.t_issued = self.now;
        let r = (x.dir, x.offset, x.len);
        let th = &mut self.threads[t as usize];
        th.inflight += 1;
        th.ios_since_think += 1;
        th.stats.depth_hist[depth_level_bucket(th.inflight)] += 1;
        r
    }

    /// What the thread does once its system call has returned (or its dispatch loop ended).
    #[inline(always)]
    pub(in crate::sim) fn after_submit(&mut self, t: u32) {
        let now = self.now;
        let th = &self.threads[t as usize];
        let cfg = &self.cfg.jobs[th.cfg];
        match cfg.submission {
            Submission::Sync => {
                // The hardware queue runs from kblockd, so the I/O cannot have finished
                // within the submitting event: the thread sleeps until it does.
                assert!(
                    th.completed.is_empty(),
                    "a sync I/O completed inside its submission"
                );
                self.threads[t as usize].state = ThreadState::Sleeping;
            }
            Submission::Async {
                batch_complete_min, ..
            } => {
                let more = th.inflight < th.depth && !self.job_done_issuing(t);
                let reap =
                    th.completed.len() as u32 >= batch_complete_min.max(1).min(th.inflight.max(1));
                if more || reap {
                    let cost = if reap {
                        self.cfg.host.costs.aio_reap_ns
                    } else {
                        0
                    };
                    let end = self.cpu.run_l(th.core, now, cost, "aio reap");
                    self.q.push(end, Ev::ThreadRun(t));
                } else {
                    self.wait_for_completions(t);
                }
            }
        }
    }

    pub(in crate::sim) fn record_io(&mut self, t: u32, io: u32) {
        let now = self.now;
        let x = &self.ios[io as usize];
        let (dir, len, t_start, t_issued) = (x.dir, x.len, x.t_start, x.t_issued);
        let (t_hw, t_irq, trim, offset) = (x.t_hw, x.t_irq, x.trim, x.offset);
        debug_assert!(x.t_done <= now);
        self.free_ios.push(io);
        if !trim {
            self.buf.note_done(t, dir);
        }
        let th = &mut self.threads[t as usize];
        th.inflight -= 1;
        th.outstanding -= 1;
        let sync = matches!(self.cfg.jobs[th.cfg].submission, Submission::Sync);
        if self.cfg.jobs[th.cfg].script.is_some() {
            th.stats.script_lat_ns.push(now - t_start);
        }
        let (slat, clat) = if sync {
            (None, now - t_start)
        } else if self.cfg.jobs[th.cfg].null_engine {
            // fio's null commit never calls io_u_queued: no slat sample.
            (None, now - t_issued)
        } else {
            (Some(t_issued - t_start), now - t_issued)
        };
        let measured = t_start >= th.measure_start;
        if !self.observers.is_empty() && t as usize >= self.prefill {
            let d = IoDone {
                job: t as usize - self.prefill,
                dir,
                trim,
                offset,
                len,
                t_start,
                t_issued: if sync { now } else { t_issued },
                t_done: now,
                slat,
                clat,
                lat: now - t_start,
                measured,
            };
            for o in &mut self.observers {
                o.done(&d);
            }
        }
        let th = &mut self.threads[t as usize];
        if !measured {
            return;
        }
        let since = now.saturating_sub(th.measure_start);
        let stats = if trim {
            &mut th.stats.trim
        } else {
            &mut th.stats.dirs[dir.index()]
        };
        stats.record(since, len, slat, clat, now - t_start);
        if t_hw != SimTime::MAX && t_irq >= t_hw {
            th.stats.spans_of(ddir_index(dir, trim)).record_io(
                t_hw - t_start,
                t_irq - t_hw,
                now - t_irq,
            );
        }
    }

    pub(in crate::sim) fn thread_finish(&mut self, t: u32) {
        let now = self.now;
        self.account_outstanding(t);
        let th = &mut self.threads[t as usize];
        th.state = ThreadState::Finished;
        th.end = now;
        th.stats.end_ns = now;
        th.stats.runtime_ns = now.saturating_sub(th.measure_start);
        self.occupancy_finish(t);
        self.unfinished -= 1;
        self.flow_exit(t);
        if t as usize >= self.prefill {
            for o in &mut self.observers {
                o.job_finished(t as usize - self.prefill, now);
            }
        }
        self.disk_sample(t);
        if self.cfg.jobs[t as usize].exitall {
            self.exit_group(t as usize);
        }
        // wait_for: a job whose turn came starts once all it waits for have finished.
        for i in 0..self.threads.len() {
            if self.threads[i].state == ThreadState::Waiting
                && self.cfg.jobs[i]
                    .wait_for
                    .iter()
                    .all(|&w| self.threads[w].state == ThreadState::Finished)
            {
                self.threads[i].state = ThreadState::Running;
                self.q.push(now, Ev::ThreadStart(i as u32));
            }
        }
        // Stonewall: the next group starts when every earlier job has finished.
        let all_before_done = |sim: &Sim, upto: usize| {
            sim.threads[..upto]
                .iter()
                .all(|x| x.state == ThreadState::Finished)
        };
        let n = self.threads.len();
        let mut i = 0;
        while i < n {
            if self.threads[i].state == ThreadState::NotStarted {
                if self.cfg.jobs[i].stonewall && all_before_done(self, i) {
                    // Start this job and the ones after it up to the next stonewall.
                    let mut j = i;
                    while j < n && (j == i || !self.cfg.jobs[j].stonewall) {
                        let d = self.cfg.jobs[j].startdelay_ns;
                        self.threads[j].state = ThreadState::Running;
                        self.q
                            .push(now.saturating_add(d), Ev::ThreadStart(j as u32));
                        j += 1;
                    }
                }
                break;
            }
            i += 1;
        }
    }

    /// The block layer finished a request: its I/Os complete; their threads wake.
    pub(in crate::sim) fn req_end(&mut self, r: ReqId) {
        let now = self.now;
        let mut ios = std::mem::take(&mut self.scratch);
        ios.clear();
        self.tr(now, Some(r), TraceKind::Completed);
        if self.trace.is_some() {
            self.blk_rq(now, r, BlkAction::Complete, 0);
        }
        self.record_request_spans(r);
        if self.verify.is_some() {
            self.verify_read_data(r);
        }
        let (hw_at, irq_at) = {
            let q = self.block.req(r);
            (q.hw_at, q.irq_at)
        };
        // A request that ended without an interrupt leaves the hardware now.
        self.hw_busy.end(r, now, now);
        let admitted = self.block.complete(now, r, &mut ios);
        if self.trace.is_some() {
            // Bios that waited for a tag got their requests (or merged) now.
            self.blk_fates(now, false);
        }
        for &io in &ios {
            let x = &mut self.ios[io as usize];
            x.t_hw = x.t_hw.min(hw_at);
            if irq_at != SimTime::MAX {
                x.t_irq = x.t_irq.max(irq_at);
            }
            x.parts_left -= 1;
            if x.parts_left > 0 {
                continue;
            }
            x.t_done = now;
            let t = x.thread;
            if x.cache != buffered::CacheIo::None {
                if x.cache == buffered::CacheIo::External {
                    self.external_io_done(io);
                    continue;
                }
                if matches!(
                    x.cache,
                    buffered::CacheIo::Fill { .. } | buffered::CacheIo::Writeback { .. }
                ) {
                    // A page cache request's own life: made by the reader or the
                    // flusher (pre), on the hardware, then its pages unlocked or out
                    // of writeback (post), for the job it was done for.
                    let (t_start, t_hw, t_irq) = (x.t_start, x.t_hw, x.t_irq);
                    let th = &self.threads[t as usize];
                    if t_start >= th.measure_start && t_hw != SimTime::MAX && t_irq >= t_hw {
                        self.buf_request_spans(io, t_hw - t_start, t_irq - t_hw, t_irq);
                    }
                }
                self.buf_io_done(io);
                continue;
            }
            self.io_done(t, io);
        }
        self.scratch = ios;
        self.buf_tags_freed();
        if admitted > 0 {
            // Requests that waited for a tag: the completion reruns the queue.
            self.kick(self.cfg.host.irq_core);
        }
    }

    /// blktrace's spans of a request that completes now, counted as btt counts them:
    /// Q2G, G2I and I2D once per request (to the job of its first bio); D2C and Q2C once
    /// per bio it carries (btt's `update_d2c` adds a merged request's D2C for each bio),
    /// to each bio's job.
    pub(in crate::sim) fn record_request_spans(&mut self, r: ReqId) {
        let now = self.now;
        let q = self.block.req(r);
        let Some(&first) = q.bios.first() else {
            return;
        };
        let (bq, g, i, d) = (q.bio_queued_at, q.got_at, q.queued_at, q.dispatched_at);
        let x = &self.ios[first as usize];
        if x.thread == external::NO_THREAD {
            return; // a request from outside (sim/external.rs) has no job to count it
        }
        let th = &mut self.threads[x.thread as usize];
        if x.t_start >= th.measure_start {
            th.stats
                .spans_of(ddir_index(x.dir, x.trim))
                .record_request(g - bq, i - g, d - i);
        }
        for k in 0..self.block.req(r).bios.len() {
            let io = self.block.req(r).bios[k];
            let x = &self.ios[io as usize];
            let th = &mut self.threads[x.thread as usize];
            if x.t_start >= th.measure_start {
                let s = th.stats.spans_of(ddir_index(x.dir, x.trim));
                s.record(Span::D2c, now - d);
                s.record(Span::Q2c, now - x.t_issued);
            }
        }
    }

    pub(in crate::sim) fn io_done(&mut self, t: u32, io: u32) {
        if self.threads[t as usize].offload.is_some() {
            return self.offload_done(t, io);
        }
        let now = self.now;
        let costs = &self.cfg.host.costs;
        let (wakeup, ret, reap) = (
            costs.task_wakeup_ns,
            costs.syscall_return_ns,
            costs.aio_reap_ns,
        );
        let th = &mut self.threads[t as usize];
        th.completed.push(io);
        if th.state != ThreadState::Sleeping {
            return; // it will see the completion when it gets back
        }
        let sync = matches!(self.cfg.jobs[th.cfg].submission, Submission::Sync);
        let need = match self.cfg.jobs[th.cfg].submission {
            Submission::Sync => 1,
            Submission::Async {
                batch_complete_min, ..
            } => batch_complete_min.max(1).min(th.inflight),
        };
        if (th.completed.len() as u32) < need {
            return;
        }
        if th.spin.waiting {
            // io_uring's iopoll saw it (sim/kernel/iopoll.rs): no wake-up.
            let end = self.iopoll_seen(t);
            self.q.push(end, Ev::ThreadRun(t));
            return;
        }
        th.state = ThreadState::Running;
        th.stats.ctx += 1;
        // The thread wakes on its own core, not where select_idle_sibling would put it
        // (`wake_thread`, used by the buffered path). Known inaccuracy: without an
        // elevator, placement decides which lockstep threads share a software queue and
        // so how much they merge (with mq-deadline, as on the hsq board, any queued
        // request is a candidate and placement does not matter for merging; see the
        // notes at the top of jobs/hsq/reproductions.toml).
        let cost = wakeup + if sync { ret } else { reap };
        let end = self.cpu.run_l(th.core, now, cost, "wakeup+return");
        self.q.push(end, Ev::ThreadRun(t));
    }
}
