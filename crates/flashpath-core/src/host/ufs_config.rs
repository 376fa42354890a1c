//! The optional `[ufs]` section of a host preset: the UFS host controller driver's CPU
//! costs (ufshcd), interrupt aggregation, and the M-PHY/UniPro link between host
//! controller and device.
//!
//! Link: M-PHY HS-Gear × rate series × lanes, 8b/10b coded (docs/kernel-behaviour.md §7;
//! at HS-G5 too: an assumption, since no primary text on HS-G5's coding was read, and
//! the UFS 4.0 parts' published reads, 4.2-4.4 GB/s, stay under its 4.66 GB/s), full
//! duplex: each direction is its own resource. Every UPIU carries a 32-byte header
//! (JEDEC UFS 2.1 §10.6: COMMAND, RESPONSE, DATA IN/OUT and READY_TO_TRANSFER are 32
//! bytes before any data segment); UniPro then cuts it into L2 frames of at most
//! `frame_payload` bytes with `frame_overhead` bytes each. Leaves out: the
//! acknowledgement/flow-control frames flowing back, link power states (hibern8),
//! clock scaling. Units: ns of CPU time, bytes, bytes/s.

use super::{cost, Kernel};
use crate::config::{bytes_field, ns_field, ConfigError};
use serde::Deserialize;

/// Bytes of every UPIU before its data segment (JEDEC JESD220C, UFS 2.1, §10.6).
pub const UPIU_HEADER_BYTES: u64 = 32;

/// UFS host controller driver and link, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct UfsHostConfig {
    /// UTP transfer request slots (the controller's NUTRS; the SCSI host's can_queue).
    pub nutrs: u32,
    /// `ufshcd_queuecommand` up to the doorbell: tag, UTRD, COMMAND UPIU, PRDT.
    pub queuecommand_ns: u64,
    /// DMA map and one PRDT entry per 4 KiB.
    pub queuecommand_per_4k_ns: u64,
    /// `ufshcd_send_command`: the MMIO write of the doorbell (UTRLDBR), one per command.
    pub doorbell_ns: u64,
    /// Host controller time from the doorbell to the COMMAND UPIU on the link (UTRD and
    /// command descriptor fetched by DMA); not CPU time.
    pub hc_fetch_ns: u64,
    /// Completion of one request in the interrupt handler (`__ufshcd_transfer_req_compl`:
    /// OCS and response check, `scsi_dma_unmap`, `scsi_done` → block completion).
    pub completion_ns: u64,
    pub completion_per_4k_ns: u64,
    /// Cores per last-level-cache domain (consecutive cores): blk-mq completes a request
    /// inline on the interrupt's core when the submitting core shares its cache
    /// (`cpus_share_cache`), else on the submitting core through an IPI.
    pub llc_cores: u32,
    /// Interrupt aggregation (UTRIACR): one interrupt per `intr_aggr_counter` completions
    /// or `intr_aggr_timeout_ns` after the first; `None` = one interrupt per completion.
    pub intr_aggr: Option<(u32, u64)>,
    /// Most READY_TO_TRANSFERs outstanding in the device (bMaxNumOfRTT): write data
    /// phases the device grants at once.
    pub max_rtt: u32,
    /// Largest data segment of one DATA IN / DATA OUT UPIU (bMaxDataIn/OutSize).
    pub max_data_segment_bytes: u64,
    /// M-PHY HS gear, rate series (A/B) and lanes, for reports.
    pub gear: u32,
    pub rate_b: bool,
    pub lanes: u32,
    /// Payload bytes per direction per second after 8b/10b coding.
    pub link_bytes_per_s: u64,
    /// UniPro L2 frame: most UPIU bytes per frame and the framing bytes per frame.
    pub frame_payload_bytes: u64,
    pub frame_overhead_bytes: u64,
    /// The HPB driver's costs and memory reserve (`hpb_*` fields), if the preset has them.
    pub hpb: Option<UfsHpbHostConfig>,
    /// What the driver sets for WriteBooster and auto-hibern8 (`wb_*`, `auto_hibern8`).
    pub wb: UfsWbHostConfig,
    /// MCQ: the controller's MAC, most commands outstanding over all its queues
    /// (`mcq_mac`; required by `ufs-mcq`).
    pub mcq_mac: Option<u32>,
}

/// The driver's WriteBooster flags and the controller's auto-hibern8 idle timer.
/// Linux (ufshcd_configure_wb, 5.8 and later) sets fWriteBoosterEn and
/// fWriteBoosterBufferFlushDuringHibernate, and fWriteBoosterBufferFlushEn unless the
/// host has UFSHCI_QUIRK_SKIP_MANUAL_WB_FLUSH_CTRL (ufs-mediatek sets it); ufshcd_init
/// sets the auto-hibern8 idle timer (AHIT) to 150 ms where the controller has it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UfsWbHostConfig {
    /// fWriteBoosterEn (sysfs `wb_on`).
    pub on: bool,
    /// fWriteBoosterBufferFlushEn (sysfs `enable_wb_buf_flush`).
    pub buf_flush: bool,
    /// fWriteBoosterBufferFlushDuringHibernate.
    pub flush_during_h8: bool,
    /// Auto-hibern8 idle timer (0: off).
    pub auto_hibern8_ns: u64,
}

/// The first Linux with WriteBooster support (ufshcd.c, "scsi: ufs: Add write booster
/// feature support", v5.8).
pub const WB_KERNEL: Kernel = Kernel::new(5, 8);
/// ufshcd_init's default auto-hibern8 idle timer: AHIT timer 150, scale 3 (1 ms).
pub const AHIT_DEFAULT_NS: u64 = 150_000_000;

/// The ufshpb driver's CPU costs and its map-page reserve (`hpb_*` fields of `[ufs]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UfsHpbHostConfig {
    /// `ufshpb_host_map_kbytes`: pages preallocated in the mempool for subregion maps.
    pub host_map_bytes: u64,
    /// `ufshpb_prep` per READ/WRITE/DISCARD (region lookup, dirty bitmap under
    /// `rgn_state_lock`; the CDB rewrite of a hit).
    pub prep_ns: u64,
    /// `ufshpb_rsp_upiu` for a response carrying hints.
    pub rsp_ns: u64,
    /// One run of `map_work` (a kworker of the unbound `ufshpb-wq`), beside the wake-up.
    pub map_work_ns: u64,
    /// Building and issuing one READ BUFFER or WRITE BUFFER request (request and bio
    /// allocation, map pages, `blk_execute_rq_nowait`).
    pub map_req_ns: u64,
    /// `ufshpb_map_req_compl_fn`: the dirty bitmap cleared, the subregion made VALID.
    pub map_compl_ns: u64,
    /// Host control mode's parameters (sysfs `hpb_params/`).
    pub hcm: crate::host::ufshpb::HcmParams,
}

impl UfsHostConfig {
    /// Link time of one UPIU with a data segment of `data` bytes (header + data, cut
    /// into UniPro frames), rounded up.
    #[inline]
    pub fn upiu_ns(&self, data: u64) -> u64 {
        let bytes = UPIU_HEADER_BYTES + data;
        let frames = bytes.div_ceil(self.frame_payload_bytes);
        crate::engine::transfer_ns(
            bytes + frames * self.frame_overhead_bytes,
            self.link_bytes_per_s,
        )
    }

    /// Line rate of one lane in Mbit/s (M-PHY HS gears, rate series A and B): each gear
    /// doubles the one before. HS-G1..G3 are M-PHY 3.0's (docs/kernel-behaviour.md §7);
    /// HS-G4 (M-PHY 4.0, "11.6 Gbps") and HS-G5 (M-PHY 5.0 with UniPro 2.0, "23.32 Gbps
    /// per lane and per direction", MIPI's UniPro v2.0 announcement, Aug 2022) follow
    /// the doubling; no primary table of their rate A values was read.
    pub fn lane_mbps(gear: u32, rate_b: bool) -> Option<f64> {
        let base = if rate_b { 1457.6 } else { 1248.0 };
        match gear {
            1..=5 => Some(base * (1u32 << (gear - 1)) as f64),
            _ => None,
        }
    }

    /// Payload bytes per second of `lanes` lanes at `gear` after 8b/10b coding.
    pub fn link_rate(gear: u32, rate_b: bool, lanes: u32) -> Option<u64> {
        // 8b/10b: 8 payload bits per 10 line bits; Mbit/s × 10^6 / 10 = bytes/s.
        Self::lane_mbps(gear, rate_b).map(|m| (m * 100_000.0).round() as u64 * lanes as u64)
    }

    /// A zero-cost UFS host (HS-G3B × 2 link, no framing) for analytic tests.
    pub fn ideal() -> UfsHostConfig {
        UfsHostConfig {
            nutrs: 32,
            queuecommand_ns: 0,
            queuecommand_per_4k_ns: 0,
            doorbell_ns: 0,
            hc_fetch_ns: 0,
            completion_ns: 0,
            completion_per_4k_ns: 0,
            llc_cores: 256,
            intr_aggr: None,
            max_rtt: 2,
            max_data_segment_bytes: 64 * 1024,
            gear: 3,
            rate_b: true,
            lanes: 2,
            link_bytes_per_s: 1_166_080_000,
            frame_payload_bytes: u64::MAX / 2,
            frame_overhead_bytes: 0,
            hpb: None,
            wb: UfsWbHostConfig {
                on: false,
                buf_flush: false,
                flush_during_h8: false,
                auto_hibern8_ns: 0,
            },
            mcq_mac: None,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawUfs {
    pub nutrs: u32,
    pub queuecommand: String,
    pub queuecommand_per_4k: String,
    pub doorbell: String,
    pub hc_fetch: String,
    pub completion: String,
    pub completion_per_4k: String,
    pub llc_cores: u32,
    pub intr_aggr: bool,
    pub intr_aggr_counter: u32,
    pub intr_aggr_timeout: String,
    pub max_rtt: u32,
    pub max_data_segment: String,
    pub gear: u32,
    pub rate: String,
    pub lanes: u32,
    pub frame_payload: String,
    pub frame_overhead: String,
    /// The HPB driver (optional; required by `ufs-hpb` and `ufs-hpb-hcm`): all six or none.
    pub hpb_host_map: Option<String>,
    pub hpb_prep: Option<String>,
    pub hpb_rsp: Option<String>,
    pub hpb_map_work: Option<String>,
    pub hpb_map_req: Option<String>,
    pub hpb_map_compl: Option<String>,
    /// Host control mode (sysfs `hpb_params/`), optional: absent = ufshpb.c's defaults.
    pub hpb_activation_thld: Option<u32>,
    pub hpb_normalization_factor: Option<u32>,
    pub hpb_eviction_thld_enter: Option<u32>,
    pub hpb_eviction_thld_exit: Option<u32>,
    pub hpb_read_timeout: Option<String>,
    pub hpb_read_timeout_expiries: Option<u32>,
    pub hpb_timeout_polling_interval: Option<String>,
    pub hpb_inflight_map_req: Option<u32>,
    /// WriteBooster as the driver sets it (optional): absent = what the kernel does
    /// (`UfsWbHostConfig`); `wb_on = true` needs Linux 5.8 or later.
    pub wb_on: Option<bool>,
    pub wb_buf_flush: Option<bool>,
    pub wb_flush_during_h8: Option<bool>,
    /// Auto-hibern8 idle timer, e.g. "150ms" ("0" = off); absent = 150 ms on kernels
    /// with WriteBooster support, off before.
    pub auto_hibern8: Option<String>,
    /// MCQ: the controller's MAC (1-256), optional; required by `ufs-mcq`.
    pub mcq_mac: Option<u32>,
}

impl RawUfs {
    /// Host control mode's parameters, checked as the sysfs stores check them
    /// (ufshpb.c `activation_thld_store` ... `inflight_map_req_store`).
    fn hcm_params(&self) -> Result<crate::host::ufshpb::HcmParams, ConfigError> {
        let mut p = crate::host::ufshpb::HcmParams::default();
        let bad = |f: &str, why: &str| Err(ConfigError::new(format!("ufs.{f}"), why.to_string()));
        if let Some(v) = self.hpb_activation_thld {
            p.activation_thld = v;
        }
        if let Some(v) = self.hpb_normalization_factor {
            p.normalization_factor = v;
        }
        if let Some(v) = self.hpb_eviction_thld_enter {
            p.eviction_thld_enter = v;
        }
        if let Some(v) = self.hpb_eviction_thld_exit {
            p.eviction_thld_exit = v;
        }
        if let Some(v) = &self.hpb_read_timeout {
            p.read_timeout_ns = ns_field("ufs.hpb_read_timeout", v)?;
        }
        if let Some(v) = self.hpb_read_timeout_expiries {
            p.read_timeout_expiries = v;
        }
        if let Some(v) = &self.hpb_timeout_polling_interval {
            p.timeout_polling_interval_ns = ns_field("ufs.hpb_timeout_polling_interval", v)?;
        }
        if let Some(v) = self.hpb_inflight_map_req {
            p.inflight_map_req = v;
        }
        if p.activation_thld == 0 {
            return bad("hpb_activation_thld", "must be at least 1");
        }
        if p.normalization_factor == 0 {
            return bad("hpb_normalization_factor", "must be at least 1 (a shift)");
        }
        if p.eviction_thld_exit <= p.activation_thld {
            return bad(
                "hpb_eviction_thld_exit",
                "must exceed hpb_activation_thld (eviction_thld_exit_store)",
            );
        }
        if p.eviction_thld_enter <= p.eviction_thld_exit {
            return bad(
                "hpb_eviction_thld_enter",
                "must exceed hpb_eviction_thld_exit (eviction_thld_enter_store)",
            );
        }
        if p.read_timeout_expiries == 0 {
            return bad("hpb_read_timeout_expiries", "must be at least 1");
        }
        if p.timeout_polling_interval_ns == 0
            || 2 * p.timeout_polling_interval_ns > p.read_timeout_ns
        {
            return bad(
                "hpb_timeout_polling_interval",
                "must be positive and at most half of hpb_read_timeout",
            );
        }
        if p.inflight_map_req == 0 || p.inflight_map_req >= self.nutrs {
            return bad(
                "hpb_inflight_map_req",
                "must be 1 .. the queue depth - 1 (inflight_map_req_store)",
            );
        }
        Ok(p)
    }

    /// The driver's WriteBooster flags and auto-hibern8 on `kernel`.
    fn wb(&self, kernel: Kernel) -> Result<UfsWbHostConfig, ConfigError> {
        let has_wb = kernel >= WB_KERNEL;
        if !has_wb {
            for (f, v) in [
                ("wb_on", self.wb_on),
                ("wb_buf_flush", self.wb_buf_flush),
                ("wb_flush_during_h8", self.wb_flush_during_h8),
            ] {
                if v == Some(true) {
                    return Err(ConfigError::new(
                        format!("ufs.{f}"),
                        format!(
                            "Linux {}.{} has no WriteBooster support (ufshcd.c has it from 5.8)",
                            kernel.major, kernel.minor
                        ),
                    ));
                }
            }
        }
        let auto_hibern8_ns = match &self.auto_hibern8 {
            Some(s) => {
                let ns = ns_field("ufs.auto_hibern8", s)?;
                // AHIT: a 10-bit timer in units of 1 us .. 100 ms (scale 0..5).
                if ns > 1023 * 100_000_000 {
                    return Err(ConfigError::new(
                        "ufs.auto_hibern8",
                        "is past AHIT's range (1023 x 100 ms)",
                    ));
                }
                ns
            }
            None if has_wb => AHIT_DEFAULT_NS,
            None => 0,
        };
        Ok(UfsWbHostConfig {
            on: self.wb_on.unwrap_or(has_wb),
            buf_flush: self.wb_buf_flush.unwrap_or(has_wb),
            flush_during_h8: self.wb_flush_during_h8.unwrap_or(has_wb),
            auto_hibern8_ns,
        })
    }

    pub fn validate(&self, kernel: Kernel) -> Result<UfsHostConfig, ConfigError> {
        if !(1..=32).contains(&self.nutrs) {
            return Err(ConfigError::new(
                "ufs.nutrs",
                format!(
                    "{} is not 1..=32 (UFSHCI NUTRS is a 5-bit field + 1)",
                    self.nutrs
                ),
            ));
        }
        if self.llc_cores == 0 {
            return Err(ConfigError::new("ufs.llc_cores", "must be at least 1"));
        }
        let rate_b = match self.rate.as_str() {
            "A" => false,
            "B" => true,
            other => {
                return Err(ConfigError::new(
                    "ufs.rate",
                    format!("'{other}' is not an M-PHY rate series (A, B)"),
                ))
            }
        };
        UfsHostConfig::lane_mbps(self.gear, rate_b).ok_or_else(|| {
            ConfigError::new(
                "ufs.gear",
                format!("HS-G{} does not exist (1..=5)", self.gear),
            )
        })?;
        if !matches!(self.lanes, 1 | 2) {
            return Err(ConfigError::new(
                "ufs.lanes",
                format!("{} lanes: UFS links have 1 or 2", self.lanes),
            ));
        }
        let link_bytes_per_s =
            UfsHostConfig::link_rate(self.gear, rate_b, self.lanes).expect("the gear was checked");
        let intr_aggr = if self.intr_aggr {
            if !(1..=31).contains(&self.intr_aggr_counter) {
                return Err(ConfigError::new(
                    "ufs.intr_aggr_counter",
                    format!("{} is not 1..=31 (UTRIACR IACTH)", self.intr_aggr_counter),
                ));
            }
            let to = ns_field("ufs.intr_aggr_timeout", &self.intr_aggr_timeout)?;
            if to == 0 || to > 255 * 40_000 {
                return Err(ConfigError::new(
                    "ufs.intr_aggr_timeout",
                    "must be 40us..10.2ms (UTRIACR IATOVAL: 1..255 units of 40us)",
                ));
            }
            Some((self.intr_aggr_counter, to))
        } else {
            ns_field("ufs.intr_aggr_timeout", &self.intr_aggr_timeout)?;
            None
        };
        if self.max_rtt == 0 || self.max_rtt > 32 {
            return Err(ConfigError::new("ufs.max_rtt", "must be 1..=32"));
        }
        let seg = bytes_field("ufs.max_data_segment", &self.max_data_segment)?;
        if !(512..=65535).contains(&seg) {
            return Err(ConfigError::new(
                "ufs.max_data_segment",
                format!(
                    "{} must be 512B..65535B (the UPIU data segment length is 16 bits)",
                    self.max_data_segment
                ),
            ));
        }
        let payload = bytes_field("ufs.frame_payload", &self.frame_payload)?;
        if payload == 0 || payload > 65536 {
            return Err(ConfigError::new("ufs.frame_payload", "must be 1B..64KiB"));
        }
        let overhead = bytes_field("ufs.frame_overhead", &self.frame_overhead)?;
        if overhead > payload {
            return Err(ConfigError::new(
                "ufs.frame_overhead",
                "is larger than the frame payload",
            ));
        }
        let hpb_fields = [
            ("hpb_host_map", &self.hpb_host_map),
            ("hpb_prep", &self.hpb_prep),
            ("hpb_rsp", &self.hpb_rsp),
            ("hpb_map_work", &self.hpb_map_work),
            ("hpb_map_req", &self.hpb_map_req),
            ("hpb_map_compl", &self.hpb_map_compl),
        ];
        let hpb = if hpb_fields.iter().all(|(_, v)| v.is_none()) {
            None
        } else {
            let get = |name: &str| -> Result<&String, ConfigError> {
                hpb_fields
                    .iter()
                    .find(|(n, _)| *n == name)
                    .and_then(|(_, v)| v.as_ref())
                    .ok_or_else(|| {
                        ConfigError::new(
                            format!("ufs.{name}"),
                            "is required with the other hpb_* fields",
                        )
                    })
            };
            let host_map_bytes = bytes_field("ufs.hpb_host_map", get("hpb_host_map")?)?;
            Some(UfsHpbHostConfig {
                host_map_bytes,
                prep_ns: cost("ufs.hpb_prep", get("hpb_prep")?)?,
                rsp_ns: cost("ufs.hpb_rsp", get("hpb_rsp")?)?,
                map_work_ns: cost("ufs.hpb_map_work", get("hpb_map_work")?)?,
                map_req_ns: cost("ufs.hpb_map_req", get("hpb_map_req")?)?,
                map_compl_ns: cost("ufs.hpb_map_compl", get("hpb_map_compl")?)?,
                hcm: self.hcm_params()?,
            })
        };
        Ok(UfsHostConfig {
            hpb,
            wb: self.wb(kernel)?,
            mcq_mac: match self.mcq_mac {
                None => None,
                Some(m @ 1..=256) => Some(m),
                Some(m) => {
                    return Err(ConfigError::new(
                        "ufs.mcq_mac",
                        format!("{m} is not 1..=256 (the MCQ capability's MAC field + 1)"),
                    ))
                }
            },
            nutrs: self.nutrs,
            queuecommand_ns: cost("ufs.queuecommand", &self.queuecommand)?,
            queuecommand_per_4k_ns: cost("ufs.queuecommand_per_4k", &self.queuecommand_per_4k)?,
            doorbell_ns: cost("ufs.doorbell", &self.doorbell)?,
            hc_fetch_ns: cost("ufs.hc_fetch", &self.hc_fetch)?,
            completion_ns: cost("ufs.completion", &self.completion)?,
            completion_per_4k_ns: cost("ufs.completion_per_4k", &self.completion_per_4k)?,
            llc_cores: self.llc_cores,
            intr_aggr,
            max_rtt: self.max_rtt,
            max_data_segment_bytes: seg,
            gear: self.gear,
            rate_b,
            lanes: self.lanes,
            link_bytes_per_s,
            frame_payload_bytes: payload,
            frame_overhead_bytes: overhead,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hs_g3b_two_lanes_is_1166_mb_per_s() {
        // docs/kernel-behaviour.md §7: 5830.4 Mb/s per lane, 8b/10b, 2 lanes ≈ 1.17 GB/s.
        let mbps = UfsHostConfig::lane_mbps(3, true).unwrap();
        assert_eq!((mbps * 100_000.0).round() as u64 * 2, 1_166_080_000);
        assert_eq!(UfsHostConfig::lane_mbps(4, true).unwrap(), 11660.8);
        // HS-G5B: MIPI's "23.32 Gbps per lane"; two lanes carry 4.66 GB/s after 8b/10b.
        let g5 = UfsHostConfig::lane_mbps(5, true).unwrap();
        assert_eq!(g5, 23321.6);
        assert_eq!((g5 * 100_000.0).round() as u64 * 2, 4_664_320_000);
        assert_eq!(UfsHostConfig::lane_mbps(6, true), None);
    }

    #[test]
    fn upiu_time_counts_header_and_frames() {
        let mut u = UfsHostConfig::ideal();
        u.link_bytes_per_s = 1_000_000_000;
        u.frame_payload_bytes = 100;
        u.frame_overhead_bytes = 10;
        // 32 + 4096 = 4128 bytes → 42 frames → 4128 + 420 bytes at 1 B/ns.
        assert_eq!(u.upiu_ns(4096), 4548);
        assert_eq!(u.upiu_ns(0), 42);
    }
}
