//! The wall clock in lowlat's units, and waits precise to a few microseconds.

use lowlat_core::Time;
use std::os::fd::RawFd;
use std::time::Instant;

/// Below this much time to a deadline, spin instead of sleeping in the kernel (a wake-up from
/// `ppoll` costs tens of microseconds on a loaded machine).
pub const SPIN_NS: u64 = 50_000;

/// Nanoseconds since the clock was started, as lowlat [`Time`].
#[derive(Clone, Copy, Debug)]
pub struct WallClock {
    epoch: Instant,
}

impl WallClock {
    /// A clock whose zero is now.
    pub fn start() -> WallClock {
        WallClock { epoch: Instant::now() }
    }

    /// A clock whose zero is `epoch`.
    pub fn from_epoch(epoch: Instant) -> WallClock {
        WallClock { epoch }
    }

    /// The instant zero stands for.
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// Now.
    pub fn now(&self) -> Time {
        Time(self.epoch.elapsed().as_nanos() as u64)
    }

    /// Sleeps until `at` (spinning the last [`SPIN_NS`]).
    pub fn sleep_until(&self, at: Time) {
        loop {
            let now = self.now();
            if now >= at {
                return;
            }
            let left = at.as_nanos() - now.as_nanos();
            if left <= SPIN_NS {
                std::hint::spin_loop();
                continue;
            }
            wait_readable(&[], Some(left - SPIN_NS));
        }
    }
}

/// Asks the kernel to wake this thread's timers within 1 ns of their deadline rather than the
/// default 50 us slack. Harmless if refused.
pub fn precise_timers() {
    // SAFETY: prctl with PR_SET_TIMERSLACK takes one integer argument and touches no memory.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Waits until one of `fds` is readable or `timeout_ns` passed (`None`: no timeout). Returns
/// whether any descriptor is readable (interruptions count as a timeout).
pub fn wait_readable(fds: &[RawFd], timeout_ns: Option<u64>) -> bool {
    let mut polls: [libc::pollfd; 4] = [libc::pollfd { fd: -1, events: 0, revents: 0 }; 4];
    let n = fds.len().min(polls.len());
    for (p, &fd) in polls.iter_mut().zip(fds) {
        p.fd = fd;
        p.events = libc::POLLIN;
    }
    let ts = timeout_ns.map(|ns| libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    });
    let tp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `polls` holds `n` initialised entries and outlives the call; `tp` is null or points
    // at `ts`, alive until the call returns; a null signal mask keeps the thread's.
    let r = unsafe { libc::ppoll(polls.as_mut_ptr(), n as libc::nfds_t, tp, std::ptr::null()) };
    r > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleeps_until_the_deadline_and_not_much_longer() {
        precise_timers();
        let clock = WallClock::start();
        let mut late = Vec::new();
        for _ in 0..20 {
            // Each deadline 1 ms after the last wake-up: one stall of the thread (a loaded
            // machine) spoils one sample, not all that follow.
            let at = clock.now() + lowlat_core::Duration::from_millis(1);
            clock.sleep_until(at);
            let now = clock.now();
            assert!(now >= at, "woke before the deadline");
            late.push(now.as_nanos() - at.as_nanos());
        }
        late.sort_unstable();
        // A quarter of the wake-ups within 1 ms even on a loaded 2-core machine (a starved thread
        // wakes late whatever its timer); a 10 ms-granular sleep would fail.
        assert!(late[5] < 1_000_000, "lateness {late:?} ns");
    }
}
