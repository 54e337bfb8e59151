//! Heartbeats and the failure detector: the leader's rounds (R27), a
//! follower's leader timeout, staggered by rank (R1) and lengthened by the
//! rounds it missed (R26), and what it does when the timeout fires.

use super::Node;
use crate::message::Message;
use crate::time::Instant;
use crate::timer::Timer;

impl Node {
    /// The leader's heartbeat round: every member, suspected or not.
    ///
    /// docs/protocol.md: R27, a round trip after an unacknowledged round.
    pub(super) fn send_heartbeats(&mut self, now: Instant) {
        let Some(term) = self.leadership_term() else {
            return;
        };
        // With a quorum: was the round before this one acknowledged in time?
        let renewed = self.round_has_quorum(self.latest_round());
        let round = self.record_round(now, term);
        for index in 0..self.members.len() {
            let to = self.members.ids()[index];
            if to != self.id {
                self.send(to, Message::Heartbeat { term, round });
            }
        }
        let mut interval = self.config.heartbeat_interval();
        if !renewed {
            // The last round's acknowledgements were lost (or are late): the
            // lease is no longer renewed every interval, so the next round goes
            // a round trip after this one, until a round is acknowledged again.
            // On a lossy network the lease then lapses far more rarely, at the
            // cost of rounds only while acknowledgements go missing.
            interval = interval.min(self.timings.round_trip);
        }
        self.timers
            .set(Timer::Heartbeat, Self::after(now, interval));
    }

    /// (Re)arms the failure detector: suspect the leader after this node's
    /// staggered leader timeout, lengthened by the heartbeats it missed
    /// lately (`Config::with_loss_adaptive_detection`).
    pub(super) fn arm_leader_timeout(&mut self, now: Instant) {
        let rank = self.members.rank_below(self.leader.map(|leader| leader.id));
        let timeout = self.detector.timeout(&self.timings, rank);
        self.timers
            .set(Timer::LeaderTimeout, Self::after(now, timeout));
    }

    /// The leader has been silent for the whole timeout (or, after a non-preempting
    /// start, no leader was heard at all): suspect it and elect.
    pub(super) fn on_leader_timeout(&mut self, now: Instant) {
        if self.pending_election.is_some() {
            // An election is under way: its own timers decide.
            return;
        }
        if let Some(leader) = self.leader {
            self.members.suspect(leader.id);
            self.stats.leaders_suspected += 1;
        }
        if self.quorum().is_some() {
            // Its heartbeats stopped, whatever the probe will say.
            self.drop_leader();
        }
        self.stand(now);
    }
}
