//! How many of the followed leader's recent heartbeats went missing: the
//! evidence the failure detector lengthens its leader timeout with on a lossy
//! link (`Config::with_loss_adaptive_detection`).
//!
//! Every heartbeat carries its round's number, and a leader sends every round
//! to every member, so a gap in the numbers a follower hears is heartbeats the
//! network lost. A window of the last 64 rounds, one bit each, keeps the count
//! without allocating: the steady state shifts in one bit.

/// The window over the last 64 heartbeat rounds of the followed leadership.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct HeartbeatLoss {
    /// The latest round heard, 0 before the leadership's first heartbeat.
    last_round: u64,
    /// Bit `k` is set when round `last_round - k` was heard. Rounds before the
    /// window filled count as heard: a new leadership starts with no evidence
    /// of loss.
    heard: u64,
    /// The unset bits of `heard`, kept in step so the steady state never counts.
    missed: u32,
}

impl Default for HeartbeatLoss {
    fn default() -> Self {
        HeartbeatLoss {
            last_round: 0,
            heard: u64::MAX,
            missed: 0,
        }
    }
}

impl HeartbeatLoss {
    /// How many of the last 64 rounds went unheard (at most 63: the latest was
    /// heard).
    pub(super) fn missed(&self) -> u32 {
        self.missed
    }

    /// Round `round` of the followed leadership arrived. The next round in
    /// order is the steady state; [`heard_out_of_order`](Self::heard_out_of_order)
    /// handles every other case (this returns `false` for those).
    #[inline]
    pub(super) fn heard_in_order(&mut self, round: u64) -> bool {
        if round != self.last_round.wrapping_add(1) {
            return false;
        }
        self.last_round = round;
        if self.heard == u64::MAX {
            // Nothing missed in the window (a clean link): shifting in one
            // more heard round changes nothing else.
            return true;
        }
        // The round leaving the window was missed: it no longer counts.
        self.missed -= u32::from(self.heard >> 63 == 0);
        self.heard = (self.heard << 1) | 1;
        true
    }

    /// Round `round` arrived out of order: after a gap, late, or again.
    /// `longest_loss` is how many rounds in a row the current leader timeout
    /// lets go missing: a longer silence was an outage (the detector fired, or
    /// this node was cut off), not evidence of the link's random loss, so only
    /// the round heard counts, as it does for the first round heard of a
    /// leadership.
    pub(super) fn heard_out_of_order(&mut self, round: u64, longest_loss: u64) {
        if round > self.last_round {
            let gap = round - self.last_round - 1;
            if self.last_round == 0 || gap >= longest_loss.min(63) {
                self.missed -= u32::from(self.heard >> 63 == 0);
                self.heard = (self.heard << 1) | 1;
            } else {
                self.heard = (self.heard << (gap + 1)) | 1;
                self.missed = self.heard.count_zeros();
            }
            self.last_round = round;
            return;
        }
        // A late round within the window was delayed, not lost.
        let back = self.last_round - round;
        if back < 64 && self.heard & (1 << back) == 0 {
            self.heard |= 1 << back;
            self.missed -= 1;
        }
    }

    /// A new leadership numbers its rounds from 1 again. What was missed of the
    /// last one stays as evidence of how lossy the network is: a false
    /// suspicion is followed by a new term, and forgetting the loss then would
    /// make the next one likelier.
    pub(super) fn new_leadership(&mut self) {
        self.last_round = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::HeartbeatLoss;

    fn hear(loss: &mut HeartbeatLoss, round: u64) {
        if !loss.heard_in_order(round) {
            loss.heard_out_of_order(round, 10);
        }
    }

    #[test]
    fn every_round_heard_is_no_loss() {
        let mut loss = HeartbeatLoss::default();
        for round in 1..=1_000 {
            hear(&mut loss, round);
        }
        assert_eq!(loss.missed(), 0);
    }

    #[test]
    fn a_gap_counts_its_rounds_until_they_leave_the_window() {
        let mut loss = HeartbeatLoss::default();
        for round in (1..=10).chain(13..=20) {
            hear(&mut loss, round);
        }
        assert_eq!(loss.missed(), 2, "rounds 11 and 12");
        // The window holds rounds 11 to 74 at round 74; round 11 leaves it at
        // round 75, round 12 at 76.
        for round in 21..=74 {
            hear(&mut loss, round);
        }
        assert_eq!(loss.missed(), 2);
        hear(&mut loss, 75);
        assert_eq!(loss.missed(), 1);
        hear(&mut loss, 76);
        assert_eq!(loss.missed(), 0);
    }

    #[test]
    fn a_late_round_was_delayed_not_lost_and_a_repeat_changes_nothing() {
        let mut loss = HeartbeatLoss::default();
        for round in [1, 2, 4, 5] {
            hear(&mut loss, round);
        }
        assert_eq!(loss.missed(), 1);
        hear(&mut loss, 3);
        assert_eq!(loss.missed(), 0);
        hear(&mut loss, 3);
        hear(&mut loss, 5);
        assert_eq!(loss.missed(), 0);
        for round in 6..=100 {
            hear(&mut loss, round);
        }
        hear(&mut loss, 2);
        assert_eq!(loss.missed(), 0, "a round older than the window is ignored");
    }

    #[test]
    fn a_silence_the_timeout_does_not_cover_is_an_outage_not_loss() {
        let mut loss = HeartbeatLoss::default();
        for round in [1, 2, 4, 5] {
            hear(&mut loss, round);
        }
        assert_eq!(loss.missed(), 1);
        // Ten rounds missing: as many as the timeout lets go (10 in `hear`).
        hear(&mut loss, 16);
        assert_eq!(loss.missed(), 1, "round 3 only");
        hear(&mut loss, 17);
        assert_eq!(loss.missed(), 1);
    }

    #[test]
    fn the_first_heartbeat_heard_of_a_leadership_counts_no_earlier_round_as_lost() {
        let mut loss = HeartbeatLoss::default();
        hear(&mut loss, 7);
        hear(&mut loss, 9);
        assert_eq!(loss.missed(), 1, "round 8, not rounds 1 to 6");
    }

    #[test]
    fn a_new_leadership_keeps_what_the_last_one_missed() {
        let mut loss = HeartbeatLoss::default();
        for round in [1, 2, 5, 6] {
            hear(&mut loss, round);
        }
        assert_eq!(loss.missed(), 2);
        loss.new_leadership();
        hear(&mut loss, 3);
        assert_eq!(
            loss.missed(),
            2,
            "rounds 1 and 2 of the new term were not missed"
        );
        hear(&mut loss, 4);
        hear(&mut loss, 6);
        assert_eq!(loss.missed(), 3);
    }

    #[test]
    fn the_window_holds_at_most_63_missed_rounds() {
        let mut loss = HeartbeatLoss::default();
        hear(&mut loss, 1);
        let mut round = 1;
        for _ in 0..40 {
            round += 9; // eight missed each time, under the timeout's ten
            if !loss.heard_in_order(round) {
                loss.heard_out_of_order(round, 10);
            }
        }
        assert_eq!(
            loss.missed(),
            64 - 8,
            "7 heard rounds in the last 64 and the latest"
        );
    }
}
