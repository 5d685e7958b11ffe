//! When to draw: the frame scheduler.
//!
//! Anything that changes what is on screen calls [`FrameScheduler::mark_dirty`]. The loop asks
//! [`FrameScheduler::deadline`] when to wake: soon (but never sooner than one frame interval
//! after the last draw, so bursts of events coalesce into one frame, ≤ 60 frames/s) when
//! dirty; at the next spinner tick while something animates; never when idle, so an idle
//! `pi` uses no CPU.

use std::time::{Duration, Instant};

pub const FRAME_INTERVAL: Duration = Duration::from_millis(16);
pub const SPINNER_INTERVAL: Duration = Duration::from_millis(80);

#[derive(Debug)]
pub struct FrameScheduler {
    dirty: bool,
    last_draw: Option<Instant>,
}

impl Default for FrameScheduler {
    fn default() -> Self {
        FrameScheduler {
            dirty: true,
            last_draw: None,
        }
    }
}

impl FrameScheduler {
    pub fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// When the next frame is due, given whether an animation is visible.
    pub fn deadline(&self, animating: bool) -> Option<Instant> {
        let last = self.last_draw?;
        if self.dirty {
            Some(last + FRAME_INTERVAL)
        } else if animating {
            Some(last + SPINNER_INTERVAL)
        } else {
            None
        }
    }

    /// A frame is due now.
    pub fn due(&self, now: Instant, animating: bool) -> bool {
        match self.deadline(animating) {
            Some(d) => now >= d,
            None => self.last_draw.is_none(),
        }
    }

    pub fn drawn(&mut self, now: Instant) {
        self.dirty = false;
        self.last_draw = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalesces_to_one_frame_per_interval_and_sleeps_when_idle() {
        let mut f = FrameScheduler::default();
        let t0 = Instant::now();
        assert!(f.due(t0, false));
        f.drawn(t0);
        assert_eq!(f.deadline(false), None);
        f.mark_dirty();
        f.mark_dirty();
        assert!(!f.due(t0 + Duration::from_millis(5), false));
        assert!(f.due(t0 + FRAME_INTERVAL, false));
        f.drawn(t0 + FRAME_INTERVAL);
        assert_eq!(
            f.deadline(true),
            Some(t0 + FRAME_INTERVAL + SPINNER_INTERVAL)
        );
    }
}
