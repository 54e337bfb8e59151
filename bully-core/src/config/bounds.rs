//! The bounds a configuration implies: how long a failover takes at worst, and
//! how long the cluster takes to agree once faults stop (the L2 property:
//! convergence within the bound `Config` computes; docs/correctness.md,
//! section 1).

use core::time::Duration;

use crate::config::{Algorithm, Config, Preemption, Quorum, Timings};

impl Config {
    /// The worst-case time from the leader's crash to every live member knowing the
    /// new leader, for a cluster of `members` in which the leader is the only
    /// member to fail and the network keeps to the timing model (which loses
    /// nothing: on a lossy link the loss-adaptive detector,
    /// [`Config::with_loss_adaptive_detection`], waits longer).
    ///
    /// The last heartbeat may still be in flight (T_M); the highest survivor then
    /// suspects after its leader timeout; it may wait out `answer_timeout` for
    /// members above it that crashed unnoticed; it reacts within P_p and its
    /// Coordinator needs T_M to arrive. The ring algorithm adds two passes round
    /// the ring, each hop a round trip.
    pub fn failover_bound(&self, members: usize) -> Duration {
        let timings = Timings::new(self);
        let t_m = self.max_message_delay;
        let detection = t_m.saturating_add(self.leader_timeout);
        let announce = timings
            .answer_timeout
            .saturating_add(self.max_processing_time)
            .saturating_add(t_m);
        detection
            .saturating_add(announce)
            .saturating_add(self.election_overhead(&timings, members))
            .saturating_add(self.claim_overhead(&timings))
    }

    /// With a quorum, what an election adds: the probe before it (an answer
    /// timeout at most), the longer wait for answers from higher members that
    /// probe first (another), the claim's acknowledgements (a round trip), the
    /// confirming heartbeat (a message delay), and a yielding leader's resign
    /// delay.
    fn claim_overhead(&self, timings: &Timings) -> Duration {
        match self.quorum {
            Quorum::None => Duration::ZERO,
            _ => timings
                .answer_timeout
                .saturating_mul(2)
                .saturating_add(timings.round_trip)
                .saturating_add(self.max_message_delay)
                .saturating_add(self.max_processing_time)
                .saturating_add(self.resign_delay),
        }
    }

    /// The worst-case time, once faults stop, for every live connected member to
    /// name the same leader, from any state the faults left behind (the L2
    /// property the simulator checks).
    ///
    /// The chain it allows for: the slowest wait that can be pending when the
    /// faults stop (the lowest follower's staggered leader timeout, as long as
    /// the loss-adaptive detector may have made it after lost heartbeats, up to
    /// four times the configured one: [`Config::with_loss_adaptive_detection`];
    /// a stalled candidate's coordinator and answer timeouts, the lowest member's modified
    /// flag or ring timeout); then an election; then a heartbeat interval, for
    /// members the winner wrongly suspects to hear of it from its heartbeats; then,
    /// if one of those outranks the winner, its own election and heartbeat
    /// interval; a few reactions; under `Preemption::AfterStable`, the stable
    /// period; and with a quorum, a claim refused while old promises ran, retried
    /// after a leader timeout.
    pub fn settle_bound(&self, members: usize) -> Duration {
        let timings = Timings::new(self);
        let t_m = self.max_message_delay;
        let reaction = t_m.saturating_add(self.max_processing_time);
        let lowest_rank = members.saturating_sub(1);
        let mut wait = timings
            .longest_leader_timeout_at_rank(members.saturating_sub(2))
            .saturating_add(t_m)
            .max(
                timings
                    .coordinator_timeout
                    .saturating_add(timings.answer_timeout),
            )
            .max(self.heartbeat_interval.saturating_add(t_m));
        match self.algorithm {
            Algorithm::Classic => {}
            Algorithm::Modified => wait = wait.max(timings.flag_timeout_at_rank(lowest_rank)),
            Algorithm::Ring => wait = wait.max(timings.ring_timeout(members, lowest_rank)),
        }
        let election = timings
            .answer_timeout
            .saturating_add(self.election_overhead(&timings, members));
        let round = election.saturating_add(self.heartbeat_interval);
        let stable = match self.preemption {
            Preemption::AfterStable(d) => d.saturating_add(self.heartbeat_interval),
            _ => Duration::ZERO,
        };
        // With a quorum a claim can be refused while promises from before the faults
        // (or a restart's) still run; the claimant tries again after its leader
        // timeout, and every claim costs its acknowledgements and confirmation.
        // A member whose probes failed during the faults backs off for up to four
        // leader timeouts before it probes again.
        let refused_claim = match self.quorum {
            Quorum::None => Duration::ZERO,
            _ => timings
                .longest_leader_timeout_at_rank(members.saturating_sub(1))
                .saturating_add(self.claim_overhead(&timings).saturating_mul(2))
                .saturating_add(self.leader_timeout.saturating_mul(4)),
        };
        wait.saturating_add(round.saturating_mul(2))
            .saturating_add(reaction.saturating_mul(4))
            .saturating_add(stable)
            .saturating_add(refused_claim)
    }

    /// Time an algorithm needs beyond the classic announcement: the ring's two
    /// passes.
    fn election_overhead(&self, timings: &Timings, members: usize) -> Duration {
        match self.algorithm {
            Algorithm::Classic => Duration::ZERO,
            // Takeover to the chosen member, then its check with higher members.
            Algorithm::Modified => self
                .max_message_delay
                .saturating_add(self.max_processing_time)
                .saturating_add(timings.answer_timeout),
            Algorithm::Ring => {
                let hops = u32::try_from(members.saturating_mul(2)).unwrap_or(u32::MAX);
                timings.round_trip.saturating_mul(hops)
            }
        }
    }
}
