//! The link's power mode as the driver sets it: ufshcd_get_max_pwr_mode reads the
//! fastest HS gear both ends support (the device's PA_MaxRxHSGear) and
//! ufshcd_config_pwr_mode runs the link at the slower of the host's and the device's.
//!
//! A device whose fastest gear is HS-G4 or below is a UniPro 1.8 (or older) device: its
//! L2 frames carry at most 272 bytes of payload, where UniPro 2.0 (HS-G5) carries 1144
//! (MIPI, "UniPro v2.0 Doubles Peak Data Rate", Aug 2022), so a host preset's larger
//! frame payload is cut to 272 bytes on such a link.

use crate::device::DeviceConfig;
use crate::host::ufs_config::UfsHostConfig;

/// The largest L2 frame payload of UniPro 1.8 (and the HS-G4 generation).
pub const UNIPRO_18_L2_PAYLOAD: u64 = 272;

/// The host's link settings as they run with `device` (the device preset's `bus_mode`).
pub fn negotiate(cfg: &mut UfsHostConfig, device: &DeviceConfig) {
    let Some(g) = device.ufs_max_gear else {
        return;
    };
    if g < cfg.gear {
        cfg.gear = g;
        let rate = UfsHostConfig::link_rate(g, cfg.rate_b, cfg.lanes).expect("gear 1..=5");
        cfg.link_bytes_per_s = cfg.link_bytes_per_s.min(rate);
    }
    if g <= 4 {
        cfg.frame_payload_bytes = cfg.frame_payload_bytes.min(UNIPRO_18_L2_PAYLOAD);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hs_g4_device_on_a_hs_g5_host_runs_hs_g4_with_unipro_1_8_frames() {
        let mut host = UfsHostConfig::ideal();
        host.gear = 5;
        host.link_bytes_per_s = UfsHostConfig::link_rate(5, true, 2).unwrap();
        host.frame_payload_bytes = 1144;
        let mut dev = DeviceConfig::ideal(1 << 30, 0);
        dev.ufs_max_gear = Some(4);
        let mut h = host.clone();
        negotiate(&mut h, &dev);
        assert_eq!(h.gear, 4);
        assert_eq!(h.link_bytes_per_s, 2_332_160_000);
        assert_eq!(h.frame_payload_bytes, 272);
        // A HS-G5 device keeps the host's settings.
        dev.ufs_max_gear = Some(5);
        let mut h = host.clone();
        negotiate(&mut h, &dev);
        assert_eq!(h, host);
    }
}
