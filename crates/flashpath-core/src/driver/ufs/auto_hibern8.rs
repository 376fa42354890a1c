//! The host controller's auto-hibern8 (UFSHCI AHIT): once no transfer request is
//! outstanding (the doorbell register clear), the controller puts the link into hibern8
//! after the idle timer; the next doorbell brings it out.
//!
//! ```text
//!  RESPONSE clears the last doorbell bit ─▶ AutoHibern8(gen) at + AHIT
//!     still no doorbell (same gen) ─▶ link in hibern8 ─▶ device: Hibern8(true)
//!  a doorbell ─▶ gen + 1; link in hibern8? ─▶ device: Hibern8(false), then the command
//! ```
//!
//! Modelled for what the device does in hibern8: a WriteBooster flush with
//! fWriteBoosterBufferFlushDuringHibernate (`device::write_booster`). So the timer runs
//! only for a device with WriteBooster on and that flag set, and only while jobs run.
//! Leaves out: the hibern8 entry and exit times (UniPro's PA_Hibern8Time, TActivate),
//! which the link's next transfer would wait for; hibern8 entered by the driver
//! (ufshcd_uic_hibern8_enter in clock gating and suspend).

use super::{DriverCtx, Event, Ufs, UfsEv};
use crate::device::{self, DeviceConfig};
use crate::engine::SimTime;
use crate::host::HostConfig;

/// The auto-hibern8 state of the link.
pub struct AutoHibern8 {
    /// The idle timer (AHIT), ns.
    ahit_ns: u64,
    /// Transfer requests whose doorbell bit is set.
    doorbells: u32,
    /// Bumped by every doorbell: a timer of an older generation is void.
    gen: u32,
    /// The link is in hibern8.
    in_h8: bool,
}

impl AutoHibern8 {
    /// The timer, when it matters: the device flushes its WriteBooster buffer in
    /// hibern8, and the host's AHIT is set.
    pub fn new(host: &HostConfig, device: &DeviceConfig) -> Option<AutoHibern8> {
        let ahit_ns = host.ufs.as_ref()?.wb.auto_hibern8_ns;
        let wb = device.write_booster?;
        (ahit_ns > 0 && wb.enabled && wb.flush_hibern8).then_some(AutoHibern8 {
            ahit_ns,
            doorbells: 0,
            gen: 0,
            in_h8: false,
        })
    }
}

impl Ufs {
    /// A doorbell is rung: the idle timer stops; a link in hibern8 leaves it.
    #[inline]
    pub(super) fn ah8_doorbell(&mut self, ctx: &mut impl DriverCtx) {
        let Some(a) = &mut self.ah8 else {
            return;
        };
        a.doorbells += 1;
        a.gen = a.gen.wrapping_add(1);
        if a.in_h8 {
            a.in_h8 = false;
            self.device_now(device::Input::Hibern8(false), ctx);
        }
    }

    /// A RESPONSE cleared a doorbell bit: the last one starts the idle timer.
    #[inline]
    pub(super) fn ah8_response(&mut self, now: SimTime, ctx: &mut impl DriverCtx) {
        let Some(a) = &mut self.ah8 else {
            return;
        };
        a.doorbells -= 1;
        if a.doorbells == 0 && ctx.jobs_running() {
            ctx.schedule(now + a.ahit_ns, Event::Ufs(UfsEv::AutoHibern8(a.gen)));
        }
    }

    /// The idle timer of generation `gen` expired.
    pub(super) fn ah8_expired(&mut self, gen: u32, ctx: &mut impl DriverCtx) {
        let Some(a) = &mut self.ah8 else {
            return;
        };
        if gen != a.gen || a.doorbells != 0 || a.in_h8 || !ctx.jobs_running() {
            return;
        }
        a.in_h8 = true;
        self.device_now(device::Input::Hibern8(true), ctx);
    }
}
