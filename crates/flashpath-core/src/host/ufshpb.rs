//! The UFS Host Performance Booster driver's host side (linux drivers/scsi/ufs/ufshpb.c,
//! 5.15–6.4; docs/ufs-hpb.md): the map cache of the device's L2P entries in host memory,
//! regions and subregions with their states, the LRU of active regions, dirty marks,
//! the eligibility rules of HPB READ, device hints (device control mode) and read
//! counters, thresholds and the cold timer (host control mode).
//!
//! ```text
//!  ufshpb_prep (every READ/WRITE/DISCARD, in queuecommand)
//!     write/discard ─▶ dirty bits of VALID subregions (HCM: read counters reset)
//!     read ─▶ too long? ─▶ plain READ           (not a miss)
//!            HCM: count per subregion; == activation_thld ─▶ activation list
//!            region INACTIVE / subregion not VALID / a dirty bit ─▶ plain READ (miss)
//!            else ─▶ HPB READ carrying the first block's entry (hit)
//!  response with HPB_UPDATE_ALERT (≤ 2 act + 2 inact) ─▶ lists ─▶ map_work queued
//!  map_work (ufshpb-wq): inactivation list (evict: free map; HCM: WRITE BUFFER 01h),
//!     then activation list: region to the LRU tail (evict the LRU head when full),
//!     READ BUFFER per subregion (HCM: at most inflight_map_req in flight)
//!  READ BUFFER done ─▶ entries copied, dirty bitmap cleared, subregion VALID
//! ```
//!
//! This is a state machine with no notion of time or resources: the UFS driver
//! (`driver/ufs/hpb.rs`) calls it and books the CPU, tag, link and device work its answers
//! imply. Host memory is allocated per subregion on activation and freed on eviction;
//! `ufshpb_host_map_kbytes` is a mempool reserve in front of the page allocator, not a
//! cap (mempool_alloc asks the page allocator first): what bounds the memory is the
//! LU's active regions (`wLUMaxActiveHPBRegions`), which this tracks (`map_bytes_peak`).
//! Leaves out: more than one HPB LU, device reset (hpb_op 2), suspend/resume, the
//! removed HPB 2.0 pre-request (WRITE BUFFER 02h), and the 5.15-only WRITE BUFFER 03h
//! sent once at init (a fresh device has no active region anyway).
//! Units: 4 KiB logical blocks (LPNs), ns.

use crate::device::hpb::{HpbControl, HpbDeviceConfig, HpbHints, HPB_ENTRY_BYTES};
use std::collections::VecDeque;

const NONE: u32 = u32::MAX;

/// Host control mode parameters (sysfs `hpb_params/`, ufshpb.c defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HcmParams {
    pub activation_thld: u32,
    pub normalization_factor: u32,
    pub eviction_thld_enter: u32,
    pub eviction_thld_exit: u32,
    pub read_timeout_ns: u64,
    pub read_timeout_expiries: u32,
    pub timeout_polling_interval_ns: u64,
    pub inflight_map_req: u32,
}

impl Default for HcmParams {
    /// ufshpb.c `ufshpb_hcm_param_init`: ACTIVATION_THRESHOLD 8, normalization factor 1,
    /// EVICTION_THRESHOLD 8 << 5 / 8 << 4, READ_TO_MS 1000, READ_TO_EXPIRIES 100,
    /// POLLING_INTERVAL_MS 200, THROTTLE_MAP_REQ_DEFAULT 1.
    fn default() -> Self {
        HcmParams {
            activation_thld: 8,
            normalization_factor: 1,
            eviction_thld_enter: 8 << 5,
            eviction_thld_exit: 8 << 4,
            read_timeout_ns: 1_000_000_000,
            read_timeout_expiries: 100,
            timeout_polling_interval_ns: 200_000_000,
            inflight_map_req: 1,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RgnState {
    Inactive,
    Active,
    Pinned,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SrgnState {
    /// No map memory.
    Unused,
    /// Memory, not usable (being reloaded, or hinted for reload).
    Invalid,
    Valid,
    /// READ BUFFER in flight.
    Issued,
}

/// Why a read went as a plain READ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Miss {
    /// Longer than the HPB READ limit (not counted as a miss by the driver).
    TooLong,
    /// A block in an inactive region.
    Inactive,
    /// A subregion not VALID (never loaded, or its reload pending).
    Invalid,
    /// A block written or discarded since its subregion was loaded.
    Dirty,
}

/// What `ufshpb_prep` did to a READ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prep {
    /// HPB READ with the first block's entry.
    Hpb {
        entry: u32,
    },
    Plain(Miss),
}

/// A command `map_work` wants issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapWork {
    /// READ BUFFER of subregion `srgn` (global index): blocks `first..first + n`.
    Load { srgn: u32, first: u32, n: u32 },
    /// WRITE BUFFER 01h inactivating region `rgn` (host control mode).
    Unmap { rgn: u32 },
}

/// sysfs `hpb_stats/` and more.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HpbHostStats {
    /// HPB READs sent (`hit_cnt`).
    pub hits: u64,
    /// Plain READs by reason (`miss_cnt` is inactive + invalid + dirty).
    pub miss_inactive: u64,
    pub miss_invalid: u64,
    pub miss_dirty: u64,
    pub too_long: u64,
    /// Responses with hints (`rb_noti_cnt`), subregion activations and region
    /// inactivations they asked for (`rb_active_cnt`, `rb_inactive_cnt`).
    pub rb_noti: u64,
    pub rb_active: u64,
    pub rb_inactive: u64,
    /// READ BUFFERs (`map_req_cnt`) and WRITE BUFFERs (`umap_req_cnt`) issued.
    pub map_req: u64,
    pub umap_req: u64,
    /// Regions made active (joined the LRU) and evicted from it.
    pub activations: u64,
    pub inactivations: u64,
    /// Activations that failed (host mode: the entering region has fewer reads than
    /// eviction_thld_enter, or no LRU region can be evicted); each waits at the head
    /// of the list and stops map_work until its next run.
    pub activation_refused: u64,
    /// Largest host memory held by subregion maps (entries × 8 bytes).
    pub map_bytes_peak: u64,
}

pub struct UfsHpb {
    pub mode: HpbControl,
    pub hcm: HcmParams,
    eps: u32,
    eps_shift: u32,
    srgns_per_rgn: u32,
    lpns: u32,
    max_tr: u32,
    lru_cap: u32,
    pinned: (u32, u32),
    rgn_state: Vec<RgnState>,
    rgn_reads: Vec<u32>,
    rgn_dirty: Vec<bool>,
    rgn_timeout: Vec<u64>,
    rgn_expiries: Vec<u32>,
    lru_prev: Vec<u32>,
    lru_next: Vec<u32>,
    lru_head: u32,
    lru_tail: u32,
    lru_n: u32,
    srgn_state: Vec<SrgnState>,
    srgn_slot: Vec<u32>,
    srgn_reads: Vec<u32>,
    /// Map memory: `eps` entries and a dirty bitmap per slot.
    entries: Vec<u32>,
    dirty: Vec<u64>,
    free_slots: Vec<u32>,
    slots_used: u32,
    act_list: VecDeque<u32>,
    in_act: Vec<bool>,
    inact_list: VecDeque<u32>,
    in_inact: Vec<bool>,
    inflight_map: u32,
    pub stats: HpbHostStats,
}

impl UfsHpb {
    /// The driver after init: geometry from the device's descriptors (`dev`), the LU's
    /// `lpns` blocks, pinned subregions waiting on the activation list.
    pub fn new(dev: &HpbDeviceConfig, lpns: u32, hcm: HcmParams) -> UfsHpb {
        let eps = dev.entries_per_subregion();
        let rgns = dev.regions(lpns) as usize;
        let srgns = dev.subregions(lpns) as usize;
        let mut h = UfsHpb {
            mode: dev.control,
            hcm,
            eps,
            eps_shift: eps.trailing_zeros(),
            srgns_per_rgn: dev.subregions_per_region(),
            lpns,
            max_tr: dev.max_read_blocks,
            lru_cap: dev.max_active_regions - dev.pinned_count,
            pinned: (dev.pinned_start, dev.pinned_start + dev.pinned_count),
            rgn_state: vec![RgnState::Inactive; rgns],
            rgn_reads: vec![0; rgns],
            rgn_dirty: vec![false; rgns],
            rgn_timeout: vec![0; rgns],
            rgn_expiries: vec![0; rgns],
            lru_prev: vec![NONE; rgns],
            lru_next: vec![NONE; rgns],
            lru_head: NONE,
            lru_tail: NONE,
            lru_n: 0,
            srgn_state: vec![SrgnState::Unused; srgns],
            srgn_slot: vec![NONE; srgns],
            srgn_reads: vec![0; srgns],
            entries: Vec::new(),
            dirty: Vec::new(),
            free_slots: Vec::new(),
            slots_used: 0,
            act_list: VecDeque::new(),
            in_act: vec![false; srgns],
            inact_list: VecDeque::new(),
            in_inact: vec![false; rgns],
            inflight_map: 0,
            stats: HpbHostStats::default(),
        };
        // ufshpb_init_pinned_active_region: memory now, subregions INVALID, queued.
        for r in h.pinned.0..h.pinned.1 {
            h.rgn_state[r as usize] = RgnState::Pinned;
            for s in h.srgns_of(r) {
                h.alloc_slot(s);
                h.srgn_state[s as usize] = SrgnState::Invalid;
                h.queue_act(s);
            }
        }
        h
    }

    fn srgns_of(&self, rgn: u32) -> std::ops::Range<u32> {
        let a = rgn * self.srgns_per_rgn;
        a..(a + self.srgns_per_rgn).min(self.srgn_state.len() as u32)
    }

    fn rgn_of(&self, srgn: u32) -> u32 {
        srgn / self.srgns_per_rgn
    }

    /// Blocks of subregion `srgn`: first and count (the last may be short).
    pub fn srgn_blocks(&self, srgn: u32) -> (u32, u32) {
        let first = srgn * self.eps;
        (first, self.eps.min(self.lpns - first))
    }

    /// Bytes one READ BUFFER of `srgn` moves (`srgn_mem_size`, or the short last one's).
    pub fn map_bytes(&self, srgn: u32) -> u64 {
        self.srgn_blocks(srgn).1 as u64 * HPB_ENTRY_BYTES
    }

    pub fn srgn_state(&self, srgn: u32) -> SrgnState {
        self.srgn_state[srgn as usize]
    }
    pub fn rgn_state(&self, rgn: u32) -> RgnState {
        self.rgn_state[rgn as usize]
    }
    /// Active regions on the LRU (pinned ones apart).
    pub fn lru_len(&self) -> u32 {
        self.lru_n
    }
    /// Work waiting for `map_work`.
    pub fn work_pending(&self) -> bool {
        !self.act_list.is_empty() || !self.inact_list.is_empty()
    }
    /// The host's copy of `lpn`'s entry, if its subregion has map memory.
    pub fn entry(&self, lpn: u32) -> Option<u32> {
        let s = self.srgn_slot[(lpn >> self.eps_shift) as usize];
        (s != NONE).then(|| self.entries[(s * self.eps + (lpn & (self.eps - 1))) as usize])
    }

    // ------------------------------------------------------------ map memory

    fn alloc_slot(&mut self, srgn: u32) {
        debug_assert_eq!(self.srgn_slot[srgn as usize], NONE);
        let words = self.eps.div_ceil(64) as usize;
        let slot = match self.free_slots.pop() {
            Some(s) => s,
            None => {
                let s = (self.entries.len() / self.eps as usize) as u32;
                self.entries
                    .resize(self.entries.len() + self.eps as usize, 0);
                self.dirty.resize(self.dirty.len() + words, 0);
                s
            }
        };
        self.srgn_slot[srgn as usize] = slot;
        self.slots_used += 1;
        let bytes = self.slots_used as u64 * self.eps as u64 * HPB_ENTRY_BYTES;
        self.stats.map_bytes_peak = self.stats.map_bytes_peak.max(bytes);
    }

    fn free_slot(&mut self, srgn: u32) {
        let s = std::mem::replace(&mut self.srgn_slot[srgn as usize], NONE);
        if s != NONE {
            self.free_slots.push(s);
            self.slots_used -= 1;
        }
    }

    fn slot_dirty(&mut self, slot: u32) -> &mut [u64] {
        let words = self.eps.div_ceil(64) as usize;
        let a = slot as usize * words;
        &mut self.dirty[a..a + words]
    }

    // ------------------------------------------------------------ LRU

    fn lru_unlink(&mut self, r: u32) {
        let (p, n) = (self.lru_prev[r as usize], self.lru_next[r as usize]);
        if p != NONE {
            self.lru_next[p as usize] = n;
        } else {
            self.lru_head = n;
        }
        if n != NONE {
            self.lru_prev[n as usize] = p;
        } else {
            self.lru_tail = p;
        }
        self.lru_prev[r as usize] = NONE;
        self.lru_next[r as usize] = NONE;
    }

    fn lru_push_tail(&mut self, r: u32) {
        self.lru_prev[r as usize] = self.lru_tail;
        self.lru_next[r as usize] = NONE;
        if self.lru_tail != NONE {
            self.lru_next[self.lru_tail as usize] = r;
        } else {
            self.lru_head = r;
        }
        self.lru_tail = r;
    }

    // ------------------------------------------------------------ prep

    /// `ufshpb_prep` for a READ of `n` blocks from `lpn`, at `now`.
    pub fn prep_read(&mut self, now: u64, lpn: u32, n: u32) -> Prep {
        if n == 0 || n > self.max_tr {
            self.stats.too_long += 1;
            return Prep::Plain(Miss::TooLong);
        }
        let (s0, s1) = (lpn >> self.eps_shift, (lpn + n - 1) >> self.eps_shift);
        if self.mode == HpbControl::Host {
            self.hcm_count_reads(now, s0, s1);
        }
        // ufshpb_test_ppn_dirty: every subregion touched, every block's dirty bit.
        for s in s0..=s1 {
            let r = self.rgn_of(s);
            if self.rgn_state[r as usize] == RgnState::Inactive {
                self.stats.miss_inactive += 1;
                return Prep::Plain(Miss::Inactive);
            }
            if self.srgn_state[s as usize] != SrgnState::Valid {
                self.stats.miss_invalid += 1;
                return Prep::Plain(Miss::Invalid);
            }
            let slot = self.srgn_slot[s as usize];
            let a = lpn.max(s << self.eps_shift) & (self.eps - 1);
            let b = (lpn + n - 1).min(((s + 1) << self.eps_shift) - 1) & (self.eps - 1);
            let bits = self.slot_dirty(slot);
            if (a..=b).any(|i| bits[(i / 64) as usize] >> (i % 64) & 1 != 0) {
                self.stats.miss_dirty += 1;
                return Prep::Plain(Miss::Dirty);
            }
        }
        self.stats.hits += 1;
        Prep::Hpb {
            entry: self.entry(lpn).expect("a VALID subregion has map memory"),
        }
    }

    /// HCM: `ufshpb_iterate_rgn` for a read: counters, activation at the threshold,
    /// the region's read timer rewound; normalization when a region's count passes
    /// entries_per_srgn (run inline here; the kernel runs it as a work item).
    fn hcm_count_reads(&mut self, now: u64, s0: u32, s1: u32) {
        let mut normalize = false;
        for s in s0..=s1 {
            let r = self.rgn_of(s);
            self.srgn_reads[s as usize] += 1;
            self.rgn_reads[r as usize] += 1;
            if self.rgn_state[r as usize] != RgnState::Inactive {
                self.rgn_timeout[r as usize] = now + self.hcm.read_timeout_ns;
                self.rgn_expiries[r as usize] = self.hcm.read_timeout_expiries;
            }
            if self.srgn_reads[s as usize] == self.hcm.activation_thld {
                self.queue_act(s);
            }
            normalize |= self.rgn_reads[r as usize] > self.eps;
        }
        if normalize {
            self.hcm_normalize();
        }
    }

    /// `ufshpb_normalization_work_handler`.
    fn hcm_normalize(&mut self) {
        let f = self.hcm.normalization_factor;
        for r in 0..self.rgn_state.len() as u32 {
            let mut sum = 0;
            for s in self.srgns_of(r) {
                self.srgn_reads[s as usize] >>= f;
                sum += self.srgn_reads[s as usize];
            }
            self.rgn_reads[r as usize] = sum;
            if sum == 0 && self.rgn_state[r as usize] == RgnState::Active {
                self.queue_inact(r);
            }
        }
    }

    /// `ufshpb_prep` for a WRITE or DISCARD: dirty bits of VALID subregions of
    /// non-INACTIVE regions (HCM: the subregions' read counts reset, region dirty).
    pub fn prep_write(&mut self, lpn: u32, n: u32) {
        if n == 0 {
            return;
        }
        let end = (lpn + n).min(self.lpns);
        let mut l = lpn;
        while l < end {
            let s = l >> self.eps_shift;
            let r = self.rgn_of(s);
            let seg_end = ((s + 1) << self.eps_shift).min(end);
            if self.rgn_state[r as usize] != RgnState::Inactive
                && self.srgn_state[s as usize] == SrgnState::Valid
            {
                let slot = self.srgn_slot[s as usize];
                let eps = self.eps;
                let bits = self.slot_dirty(slot);
                for i in l & (eps - 1)..=(seg_end - 1) & (eps - 1) {
                    bits[(i / 64) as usize] |= 1 << (i % 64);
                }
            }
            if self.mode == HpbControl::Host {
                self.rgn_reads[r as usize] -= self.srgn_reads[s as usize];
                self.srgn_reads[s as usize] = 0;
                self.rgn_dirty[r as usize] = true;
            }
            l = seg_end;
        }
    }

    // ------------------------------------------------------------ hints

    fn queue_act(&mut self, s: u32) {
        if !self.in_act[s as usize] {
            self.in_act[s as usize] = true;
            self.act_list.push_back(s);
        }
    }

    fn queue_inact(&mut self, r: u32) {
        if !self.in_inact[r as usize] {
            self.in_inact[r as usize] = true;
            self.inact_list.push_back(r);
        }
    }

    /// `ufshpb_rsp_req_region_update`: the hints of one response (the caller then
    /// queues `map_work`, as the driver does after every hint).
    pub fn rsp_hints(&mut self, h: &HpbHints) {
        assert!(
            h.act_n <= 2 && h.inact_n <= 2,
            "a response carries at most 2 + 2 hints"
        );
        self.stats.rb_noti += 1;
        for &(r, s) in h.activations() {
            let (r, s) = (r as u32, s as u32);
            if r as usize >= self.rgn_state.len() || s >= self.srgns_per_rgn {
                continue;
            }
            let g = r * self.srgns_per_rgn + s;
            if g as usize >= self.srgn_state.len() {
                continue;
            }
            if self.mode == HpbControl::Host
                && (self.rgn_state[r as usize] == RgnState::Inactive || self.rgn_dirty[r as usize])
            {
                // HCM honours a hint only for an active, clean region.
                continue;
            }
            self.stats.rb_active += 1;
            if self.srgn_state[g as usize] == SrgnState::Valid {
                self.srgn_state[g as usize] = SrgnState::Invalid;
            }
            self.queue_act(g);
        }
        if self.mode == HpbControl::Device {
            for &r in h.inactivations() {
                let r = r as u32;
                if r as usize >= self.rgn_state.len() {
                    continue;
                }
                self.stats.rb_inactive += 1;
                for s in self.srgns_of(r) {
                    if self.srgn_state[s as usize] == SrgnState::Valid {
                        self.srgn_state[s as usize] = SrgnState::Invalid;
                    }
                }
                self.queue_inact(r);
            }
        }
    }

    // ------------------------------------------------------------ map_work

    /// One step of `map_work`: the next command to issue, or None when the lists are
    /// done (or a throttled or refused activation waits for the next run). The caller
    /// issues it (taking a tag) before asking for the next.
    pub fn map_work_step(&mut self, now: u64) -> Option<MapWork> {
        // ufshpb_run_inactive_region_list.
        let mut kept = VecDeque::new();
        while let Some(r) = self.inact_list.pop_front() {
            if self.rgn_state[r as usize] == RgnState::Pinned {
                self.in_inact[r as usize] = false;
                continue;
            }
            if self
                .srgns_of(r)
                .any(|s| self.srgn_state[s as usize] == SrgnState::Issued)
            {
                kept.push_back(r); // stays queued until its loads finish
                continue;
            }
            self.in_inact[r as usize] = false;
            if self.rgn_state[r as usize] == RgnState::Active {
                self.evict(r);
                if self.mode == HpbControl::Host {
                    self.inact_list.extend(kept);
                    return Some(self.unmap(r));
                }
            }
        }
        self.inact_list = kept;
        // ufshpb_run_active_subregion_list.
        while let Some(s) = self.act_list.pop_front() {
            self.in_act[s as usize] = false;
            let r = self.rgn_of(s);
            let mut unmap = None;
            match self.rgn_state[r as usize] {
                RgnState::Pinned => {}
                RgnState::Active => {
                    // ufshpb_hit_lru_info: a reactivated region moves to the tail.
                    self.lru_unlink(r);
                    self.lru_push_tail(r);
                }
                RgnState::Inactive => {
                    if self.lru_n >= self.lru_cap {
                        match self.lru_victim(r) {
                            Some(v) => {
                                self.evict(v);
                                if self.mode == HpbControl::Host {
                                    unmap = Some(v);
                                }
                            }
                            None => {
                                // ufshpb_add_region failed (HCM: the entering region
                                // has too few reads; or no victim): active_failed puts
                                // the subregion back at the head and map_work stops,
                                // "will retry" at its next run.
                                self.stats.activation_refused += 1;
                                self.act_list.push_front(s);
                                self.in_act[s as usize] = true;
                                return None;
                            }
                        }
                    }
                    self.rgn_state[r as usize] = RgnState::Active;
                    self.rgn_dirty[r as usize] = false;
                    self.lru_push_tail(r);
                    self.lru_n += 1;
                    self.stats.activations += 1;
                    self.rgn_expiries[r as usize] = self.hcm.read_timeout_expiries;
                    self.rgn_timeout[r as usize] = now + self.hcm.read_timeout_ns;
                }
            }
            if let Some(v) = unmap {
                // The victim's WRITE BUFFER goes first; the load comes on the next step.
                self.act_list.push_front(s);
                self.in_act[s as usize] = true;
                return Some(self.unmap(v));
            }
            // ufshpb_issue_map_req.
            match self.srgn_state[s as usize] {
                SrgnState::Issued => continue,
                _ if self.mode == HpbControl::Host
                    && self.inflight_map >= self.hcm.inflight_map_req =>
                {
                    // Throttled: back to the head; map_work stops until kicked again.
                    if self.srgn_state[s as usize] == SrgnState::Valid {
                        self.srgn_state[s as usize] = SrgnState::Invalid;
                    }
                    if self.srgn_slot[s as usize] == NONE {
                        self.alloc_slot(s);
                        self.srgn_state[s as usize] = SrgnState::Invalid;
                    }
                    self.act_list.push_front(s);
                    self.in_act[s as usize] = true;
                    return None;
                }
                SrgnState::Unused => self.alloc_slot(s),
                _ => {}
            }
            self.srgn_state[s as usize] = SrgnState::Issued;
            self.inflight_map += 1;
            self.stats.map_req += 1;
            let (first, n) = self.srgn_blocks(s);
            return Some(MapWork::Load { srgn: s, first, n });
        }
        None
    }

    fn unmap(&mut self, r: u32) -> MapWork {
        self.stats.umap_req += 1;
        MapWork::Unmap { rgn: r }
    }

    /// The LRU victim: from the head, the first region with no subregion ISSUED (HCM:
    /// and with few reads, while the entering region `new` has many).
    fn lru_victim(&self, new: u32) -> Option<u32> {
        if self.mode == HpbControl::Host
            && self.rgn_reads[new as usize] < self.hcm.eviction_thld_enter
        {
            return None;
        }
        let mut r = self.lru_head;
        while r != NONE {
            let busy = self
                .srgns_of(r)
                .any(|s| self.srgn_state[s as usize] == SrgnState::Issued);
            let cold = self.mode == HpbControl::Device
                || self.rgn_reads[r as usize] <= self.hcm.eviction_thld_exit;
            if !busy && cold {
                return Some(r);
            }
            r = self.lru_next[r as usize];
        }
        None
    }

    /// `__ufshpb_evict_region`: the region leaves the LRU, its map memory is freed.
    fn evict(&mut self, r: u32) {
        debug_assert_eq!(self.rgn_state[r as usize], RgnState::Active);
        self.lru_unlink(r);
        self.lru_n -= 1;
        self.rgn_state[r as usize] = RgnState::Inactive;
        self.stats.inactivations += 1;
        for s in self.srgns_of(r) {
            debug_assert_ne!(self.srgn_state[s as usize], SrgnState::Issued);
            self.free_slot(s);
            self.srgn_state[s as usize] = SrgnState::Unused;
        }
    }

    /// `ufshpb_map_req_compl_fn`: the READ BUFFER of `srgn` returned `entries`.
    pub fn map_done(&mut self, srgn: u32, entries: &[u32]) {
        assert_eq!(self.srgn_state[srgn as usize], SrgnState::Issued);
        self.inflight_map -= 1;
        let slot = self.srgn_slot[srgn as usize];
        let r = self.rgn_of(srgn);
        self.rgn_dirty[r as usize] = false;
        self.slot_dirty(slot).fill(0);
        let a = (slot * self.eps) as usize;
        self.entries[a..a + entries.len()].copy_from_slice(entries);
        self.srgn_state[srgn as usize] = if self.rgn_state[r as usize] == RgnState::Inactive {
            SrgnState::Invalid
        } else {
            SrgnState::Valid
        };
    }

    /// HCM cold timer (`ufshpb_read_to_handler`), run every polling interval at `now`:
    /// an LRU region past its read timeout loses an expiry; dirty or out of expiries,
    /// it is queued for inactivation, else its timeout is re-armed.
    pub fn cold_tick(&mut self, now: u64) {
        let mut r = self.lru_head;
        while r != NONE {
            let next = self.lru_next[r as usize];
            let i = r as usize;
            if now > self.rgn_timeout[i] {
                self.rgn_expiries[i] = self.rgn_expiries[i].saturating_sub(1);
                if self.rgn_dirty[i] || self.rgn_expiries[i] == 0 {
                    self.queue_inact(r);
                } else {
                    self.rgn_timeout[i] = now + self.hcm.read_timeout_ns;
                }
            }
            r = next;
        }
    }
}
