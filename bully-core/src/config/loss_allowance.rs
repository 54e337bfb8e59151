//! The leader timeout on a lossy link: how many heartbeats in a row must go
//! missing before a follower suspects its leader, given how many of the last 64
//! it missed (`Config::with_loss_adaptive_detection`).
//!
//! A fixed leader timeout suspects a live leader whenever the network loses
//! every heartbeat it covers: at the default 500 ms over 100 ms heartbeats and
//! 30 % loss, four or five in a row, about 200 times an hour in a five-member
//! cluster (BENCHMARKS.md, "The failure detector under loss and jitter"). The
//! only evidence under random loss is how many heartbeats in a row went
//! missing, so the timeout grows until that many in a row is rare enough.

use core::time::Duration;

use super::Timings;

/// The chance of a false suspicion a follower accepts per heartbeat interval,
/// as the interval over this: one per thirty hours per follower on a link
/// whose loss stays what was measured. The loss is measured over 64 rounds
/// only, so it is often read low; measured in the simulator under 30 % loss
/// (`tests/lossy_detection.rs`), thirty hours keeps a 25-member cluster below
/// one false suspicion an hour where ten did not.
const HOURS_PER_FALSE_SUSPICION: f64 = 30.0 * 3600.0;

/// The window the loss is measured over, in heartbeat rounds.
const WINDOW: f64 = 64.0;

/// The longest the adaptation lengthens a timeout, in configured leader
/// timeouts: a follower waits at most four times as long as configured. At
/// 30 % loss the wait it asks for (twelve heartbeats, 1.22 s at the defaults)
/// is well within; the cap keeps `Config::settle_bound`, which must allow for
/// the longest wait faults can leave behind, within three leader timeouts of
/// what it would be with a fixed timeout.
const MAX_STRETCH: u32 = 3;

impl Timings {
    /// The leader timeout of a follower with `rank` members above it that
    /// missed `missed` of the leader's last 64 heartbeats: the configured one
    /// (staggered by rank) while nothing was missed or the adaptation is off;
    /// else long enough that, at the loss measured, that many heartbeats in a
    /// row go missing at most once per thirty hours, never shorter than the
    /// configured one and at most four times as long.
    pub(crate) fn leader_timeout_after_loss(&self, rank: usize, missed: u32) -> Duration {
        let configured = self.leader_timeout_at_rank(rank);
        if missed == 0 || !self.adapt_to_loss {
            return configured;
        }
        configured.saturating_add(self.loss_allowance(missed))
    }

    /// The longest leader timeout a follower with `rank` members above it may
    /// wait after a lossy stretch: what the bounds that start from any state
    /// faults leave behind must allow for.
    pub(crate) fn longest_leader_timeout_at_rank(&self, rank: usize) -> Duration {
        let configured = self.leader_timeout_at_rank(rank);
        if !self.adapt_to_loss {
            return configured;
        }
        configured.saturating_add(self.longest_allowance())
    }

    fn longest_allowance(&self) -> Duration {
        self.leader_timeout.saturating_mul(MAX_STRETCH)
    }

    /// How much longer than the configured timeout a follower waits: the time
    /// `n` heartbeats and the last one's delay take on a clock that may run ρ
    /// fast, past the configured timeout, for the least `n` with `p^n` within
    /// the budget. The loss `p` is estimated as `(missed + 1) / 65`, a little
    /// above the share missed, so a short lucky stretch does not read as none.
    fn loss_allowance(&self, missed: u32) -> Duration {
        let loss = (f64::from(missed) + 1.0) / (WINDOW + 1.0);
        let budget = self.heartbeat_interval.as_secs_f64() / HOURS_PER_FALSE_SUSPICION;
        // Multiplication only (no logarithm), so every platform computes the
        // same count; at most the window's 64 heartbeats.
        let mut chance = 1.0;
        let mut heartbeats = 0u32;
        while chance > budget && heartbeats < 64 {
            chance *= loss;
            heartbeats += 1;
        }
        let needed = self
            .covering(self.heartbeat_interval.saturating_mul(heartbeats))
            .saturating_add(self.max_message_delay);
        needed
            .saturating_sub(self.leader_timeout)
            .min(self.longest_allowance())
    }
}

#[cfg(test)]
mod tests {
    use core::time::Duration;

    use crate::config::{Config, Timings};

    fn timings(config: &Config) -> Timings {
        Timings::new(config)
    }

    #[test]
    fn nothing_missed_leaves_the_configured_timeout() {
        let timings = timings(&Config::default());
        assert_eq!(
            timings.leader_timeout_after_loss(2, 0),
            timings.leader_timeout_at_rank(2)
        );
    }

    #[test]
    fn thirty_percent_loss_waits_for_twelve_heartbeats_at_the_defaults() {
        // 19 of 64 missed: loss estimated at 20/65 = 0.31; 0.31^12 = 7.1e-7 is
        // the first power within 0.1 s / 30 h = 9.3e-7.
        let timings = timings(&Config::default());
        let twelve = Duration::from_millis(1_200).mul_f64(1.001) + Duration::from_millis(20);
        let rounded = timings.leader_timeout_after_loss(0, 19);
        assert!(
            rounded >= twelve && rounded <= twelve + Duration::from_nanos(1),
            "{rounded:?}"
        );
        assert_eq!(
            timings.leader_timeout_after_loss(3, 19) - timings.leader_timeout_after_loss(0, 19),
            timings.leader_timeout_at_rank(3) - timings.leader_timeout_at_rank(0),
            "the stagger is kept"
        );
    }

    #[test]
    fn light_loss_within_the_configured_timeout_changes_nothing() {
        // 1 of 64 missed: 2/65 = 0.031, four heartbeats in a row suffice
        // (9.0e-7), 420 ms with the last one's delay, within the configured
        // 500 ms.
        let timings = timings(&Config::default());
        assert_eq!(
            timings.leader_timeout_after_loss(0, 1),
            timings.leader_timeout_at_rank(0)
        );
    }

    #[test]
    fn switched_off_the_timeout_stays_fixed() {
        let timings = timings(&Config::default().with_loss_adaptive_detection(false));
        assert_eq!(
            timings.leader_timeout_after_loss(0, 30),
            timings.leader_timeout_at_rank(0)
        );
    }

    #[test]
    fn the_allowance_grows_with_the_loss_and_stops_at_the_window() {
        let timings = timings(&Config::default());
        let mut previous = Duration::ZERO;
        for missed in 0..=63 {
            let timeout = timings.leader_timeout_after_loss(0, missed);
            assert!(timeout >= previous, "{missed}: {timeout:?} < {previous:?}");
            previous = timeout;
        }
        assert_eq!(
            previous,
            timings.longest_leader_timeout_at_rank(0),
            "63 missed of 64 asks for more than the cap"
        );
        assert_eq!(previous, Duration::from_millis(2_000));
    }
}
