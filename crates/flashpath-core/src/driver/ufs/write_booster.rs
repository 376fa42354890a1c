//! WriteBooster as the host's UFS driver sets it up (ufshcd_configure_wb): at probe the
//! driver writes the device's flags from the host's knobs (the `wb_*` fields of the
//! host preset's `[ufs]`: the kernel's `wb_on` and its flush policies). What the device
//! does with them (the SLC buffer, its flushes, writes past it at TLC speed) is
//! `device::write_booster`; the link's hibern8, which the flush during hibernate waits
//! for, is `auto_hibern8`.

use crate::device::DeviceConfig;
use crate::host::HostConfig;

/// The driver sets the device's WriteBooster flags as the host's kernel does
/// (ufshcd_configure_wb), or leaves them at their power-on 0 for a driver that does not.
pub(crate) fn configure_device(host: &HostConfig, device: &mut DeviceConfig) {
    let Some(w) = &mut device.write_booster else {
        return;
    };
    let wb = host.ufs.as_ref().map(|u| u.wb);
    w.enabled = wb.is_some_and(|h| h.on);
    w.flush_explicit = w.enabled && wb.is_some_and(|h| h.buf_flush);
    w.flush_hibern8 = w.enabled && wb.is_some_and(|h| h.flush_during_h8);
}
