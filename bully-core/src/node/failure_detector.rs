//! The failure detector's state: the followed leader's missed heartbeat
//! rounds (`heartbeat_loss.rs`) and the leader timeout they give at this
//! node's rank (docs/protocol.md, R1 staggered detection, R26 the
//! loss-adaptive detector). The node arms and acts on the timeout
//! (`detector.rs`); this type says how long it is.

use std::hash::{Hash, Hasher};
use std::time::Duration;

use super::heartbeat_loss::HeartbeatLoss;
use crate::config::Timings;

/// What the detector keeps: the loss window, and its last answer.
#[derive(Clone, Debug, Default)]
pub(super) struct FailureDetector {
    /// The followed leader's recent heartbeat rounds that went missing.
    loss: HeartbeatLoss,
    /// The leader timeout last computed and the rank and missed heartbeats it
    /// was computed for, so that re-arming the detector on every heartbeat
    /// costs a comparison rather than `Timings::leader_timeout_after_loss`'s
    /// `Duration` arithmetic: 36 instructions, 8 % of a follower's heartbeat
    /// (the `instructions/` crate's `heartbeat`). A cache of what the
    /// configuration gives: left out of `Eq` and `Hash`.
    memo: Option<(usize, u32, Duration)>,
}

impl PartialEq for FailureDetector {
    fn eq(&self, other: &FailureDetector) -> bool {
        self.loss == other.loss
    }
}

impl Eq for FailureDetector {}

impl Hash for FailureDetector {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.loss.hash(state);
    }
}

impl FailureDetector {
    /// The leader timeout at `rank` (members able to lead above this one),
    /// lengthened by the rounds missed lately.
    #[inline]
    pub(super) fn timeout(&mut self, timings: &Timings, rank: usize) -> Duration {
        let missed = self.loss.missed();
        match self.memo {
            Some((memo_rank, memo_missed, timeout))
                if memo_rank == rank && memo_missed == missed =>
            {
                timeout
            }
            _ => {
                let timeout = timings.leader_timeout_after_loss(rank, missed);
                self.memo = Some((rank, missed, timeout));
                timeout
            }
        }
    }

    /// Counts heartbeat round `round` of the followed leadership in the window
    /// the loss-adaptive detector reads.
    ///
    /// docs/protocol.md: R26, the loss-adaptive detector.
    #[inline]
    pub(super) fn heard_round(&mut self, timings: &Timings, round: u64) {
        if !timings.adapt_to_loss {
            // Nothing reads the window: keeping it would only tell apart states
            // that behave alike (the model checks' states would triple).
            return;
        }
        if self.loss.heard_in_order(round) {
            return;
        }
        // How many rounds in a row the timeout armed now lets go missing.
        let timeout = self
            .memo
            .map_or(timings.leader_timeout, |(_, _, timeout)| timeout);
        let interval = timings.heartbeat_interval.as_nanos().max(1);
        let longest_loss = u64::try_from(timeout.as_nanos() / interval).unwrap_or(u64::MAX);
        self.loss.heard_out_of_order(round, longest_loss);
    }

    /// A new leadership is followed: its rounds count from its first.
    #[inline]
    pub(super) fn new_leadership(&mut self) {
        self.loss.new_leadership();
    }
}

#[cfg(test)]
mod tests {
    //! What a model checker compares: the loss window, not the memo.

    use std::collections::hash_map::DefaultHasher;

    use super::*;

    fn hash_of(detector: &FailureDetector) -> u64 {
        let mut hasher = DefaultHasher::new();
        detector.hash(&mut hasher);
        hasher.finish()
    }

    #[test]
    fn two_detectors_are_one_state_when_their_windows_match_whatever_they_cached() {
        let cached = FailureDetector {
            memo: Some((1, 0, Duration::from_millis(500))),
            ..FailureDetector::default()
        };
        assert_eq!(cached, FailureDetector::default());
        assert_eq!(hash_of(&cached), hash_of(&FailureDetector::default()));
        // A round heard moves the window: another state.
        let mut heard = FailureDetector::default();
        assert!(heard.loss.heard_in_order(1));
        assert_ne!(heard, FailureDetector::default());
        assert_ne!(hash_of(&heard), hash_of(&FailureDetector::default()));
    }
}
