//! When to draw: the frame scheduler.
//!
//! What the person does (keys, paste, mouse, resize) calls [`FrameScheduler::mark_dirty`] and is
//! drawn within one frame interval (≤ 60 frames/s). What the agent streams calls
//! [`FrameScheduler::mark_streamed`] and is drawn at most every [`STREAM_INTERVAL`] (30 frames/s):
//! text arriving thousands of tokens a second reads the same, at half the drawing cost. Bursts
//! coalesce into one frame either way. While something animates, the next spinner tick wakes
//! the loop; when idle nothing does, so an idle `pi` uses no CPU.

use std::time::{Duration, Instant};

pub const FRAME_INTERVAL: Duration = Duration::from_millis(16);
pub const STREAM_INTERVAL: Duration = Duration::from_millis(33);
pub const SPINNER_INTERVAL: Duration = Duration::from_millis(80);

#[derive(Debug)]
pub struct FrameScheduler {
    dirty: bool,
    streamed: bool,
    last_draw: Option<Instant>,
}

impl Default for FrameScheduler {
    fn default() -> Self {
        FrameScheduler {
            dirty: true,
            streamed: false,
            last_draw: None,
        }
    }
}

impl FrameScheduler {
    /// The person changed something: draw within one frame interval.
    pub fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    /// The agent changed something: draw within one stream interval.
    pub fn mark_streamed(&mut self) {
        self.streamed = true;
    }

    pub fn is_dirty(&self) -> bool {
        self.dirty || self.streamed
    }

    /// When the next frame is due, given whether an animation is visible.
    pub fn deadline(&self, animating: bool) -> Option<Instant> {
        let last = self.last_draw?;
        if self.dirty {
            Some(last + FRAME_INTERVAL)
        } else if self.streamed {
            Some(last + STREAM_INTERVAL)
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
        self.streamed = false;
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

    #[test]
    fn streamed_changes_wait_longer_than_keys() {
        let mut f = FrameScheduler::default();
        let t0 = Instant::now();
        f.drawn(t0);
        f.mark_streamed();
        assert!(f.is_dirty());
        assert!(!f.due(t0 + FRAME_INTERVAL, true));
        assert!(f.due(t0 + STREAM_INTERVAL, true));
        // A key while a stream is pending: the frame comes at the key's pace.
        f.mark_dirty();
        assert!(f.due(t0 + FRAME_INTERVAL, true));
        f.drawn(t0 + FRAME_INTERVAL);
        assert!(!f.is_dirty());
    }
}
