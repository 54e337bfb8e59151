//! The timings a node derives from its configuration, computed once when the
//! node is built (its configuration never changes), so that no input pays for
//! the arithmetic again. Crate-private: a user needs only the bounds
//! [`Config`] publishes (`failover_bound`, `settle_bound`, `leader_lease`).
//!
//! The timing model is the one of the lecture notes "Election Algorithm in
//! Distributed Systems": every message arrives within the message time `T_M`
//! (`Config::with_max_message_delay`) and a reply leaves within the processing
//! time `P_p` (`Config::with_max_processing_time`), so a member that has not
//! answered within a round trip, `2*T_M + P_p`, is taken for dead. Every clock
//! may drift from real time by up to ρ (`Config::with_clock_drift`).

use core::time::Duration;

use crate::config::{Config, Quorum};

/// Every timing a node derives from its [`Config`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Timings {
    /// ρ as the timings use it: a drift outside `[0, 0.1]` counts as its
    /// nearest bound and NaN as 0.1, so that no timing panics on settings
    /// [`Config::validate`] refuses.
    drift: f64,
    /// Whether a leader needs a quorum (the starting member's wait differs).
    quorum: bool,
    /// Whether the leader timeout grows with the rank.
    stagger_detection: bool,
    /// Whether the leader timeout grows with the heartbeats a follower missed.
    pub(crate) adapt_to_loss: bool,
    /// How often the leader sends heartbeats.
    pub(crate) heartbeat_interval: Duration,
    /// The highest follower's leader timeout.
    pub(crate) leader_timeout: Duration,
    /// `T_M`, the message time.
    pub(crate) max_message_delay: Duration,
    /// `P_p`, the processing time.
    pub(crate) max_processing_time: Duration,
    /// A round trip in the timing model, `2*T_M + P_p`.
    pub(crate) round_trip: Duration,
    /// How long an election waits for answers: the override, or the round trip
    /// on a clock that may run ρ fast, `(2*T_M + P_p) * (1+ρ)`, rounded up.
    pub(crate) answer_timeout: Duration,
    /// How long a member that was answered waits for the Coordinator: the
    /// override, or `2 * answer_timeout + T_M`, enough for the highest member to
    /// wait out its own answers and announce.
    pub(crate) coordinator_timeout: Duration,
    /// Soundarabai et al.'s fail-safe: how long a member keeps its election flag
    /// up without hearing a Coordinator before it elects itself (before the
    /// rank's stagger): the initiator's collection, the handover, the chosen
    /// member's check and its announcement, `coordinator_timeout +
    /// answer_timeout`.
    pub(crate) flag_timeout: Duration,
    /// How much later a follower suspects the leader than the member just above
    /// it, `answer_timeout + T_M`: the member above may hear the last heartbeat
    /// up to `T_M` later, and its Coordinator needs a round trip to arrive.
    pub(crate) stagger_step: Duration,
    /// With a quorum, how long a member that acknowledged a leader's heartbeat
    /// refuses to vote for another: `leader_timeout - T_M`, so that once the
    /// first member suspects a crashed leader, every member's promise from the
    /// same round (received at most `T_M` apart) has run out.
    pub(crate) follower_lease: Duration,
    /// With a quorum, the leader's lease from the send time of the last round a
    /// quorum acknowledged: `follower_lease * (1-ρ)/(1+ρ)`, so it ends, in real
    /// time, no later than the earliest promise of any follower of that round.
    pub(crate) leader_lease: Duration,
    /// With a quorum, how long before the lease's end the permit to work ends:
    /// the lease margin (a quarter of the lease unless set), or the resign
    /// delay if that is longer, since work told to stop is given that long.
    pub(crate) permit_margin: Duration,
}

impl Timings {
    /// Derives every timing from `config`. Never panics, even for settings
    /// [`Config::validate`] refuses: every sum saturates, and a lease too long
    /// to compute in `f64` is capped at the follower lease.
    pub(crate) fn new(config: &Config) -> Timings {
        let drift = if config.clock_drift.is_nan() {
            0.1
        } else {
            config.clock_drift.clamp(0.0, 0.1)
        };
        let t_m = config.max_message_delay;
        let round_trip = t_m
            .saturating_mul(2)
            .saturating_add(config.max_processing_time);
        let answer_timeout = config
            .answer_timeout
            .unwrap_or_else(|| scaled(round_trip, 1.0 + drift));
        let coordinator_timeout = config
            .coordinator_timeout
            .unwrap_or_else(|| answer_timeout.saturating_mul(2).saturating_add(t_m));
        let follower_lease = config.leader_timeout.saturating_sub(t_m);
        // The factor is at most 1, but near the end of `Duration`'s range the f64
        // product can round above it.
        let leader_lease = Duration::try_from_secs_f64(
            follower_lease.as_secs_f64() * (1.0 - drift) / (1.0 + drift),
        )
        .map_or(follower_lease, |lease| lease.min(follower_lease));
        Timings {
            drift,
            quorum: config.quorum != Quorum::None,
            stagger_detection: config.stagger_detection,
            adapt_to_loss: config.loss_adaptive_detection,
            heartbeat_interval: config.heartbeat_interval,
            leader_timeout: config.leader_timeout,
            max_message_delay: t_m,
            max_processing_time: config.max_processing_time,
            round_trip,
            answer_timeout,
            coordinator_timeout,
            flag_timeout: coordinator_timeout.saturating_add(answer_timeout),
            stagger_step: answer_timeout.saturating_add(t_m),
            follower_lease,
            leader_lease,
            // `Config::default_lease_margin`, from the lease just derived.
            permit_margin: config
                .lease_margin
                .unwrap_or(leader_lease / 4)
                .max(config.resign_delay),
        }
    }

    /// How long a member waits on its own clock to be sure that `real` has
    /// passed: `real * (1+ρ)`, rounded up, since its clock may run ρ fast. A
    /// wait for another member's message is this, not the bare round trip:
    /// otherwise a fast clock gives up on answers that keep to the timing model.
    pub(crate) fn covering(&self, real: Duration) -> Duration {
        scaled(real, 1.0 + self.drift)
    }

    /// The longest real time a wait of `local` on a member's clock can last:
    /// `local / (1-ρ)`, rounded up, its clock running ρ slow.
    pub(crate) fn longest(&self, local: Duration) -> Duration {
        scaled(local, 1.0 / (1.0 - self.drift))
    }

    /// `step` once for every one of `rank` members.
    fn staggered(step: Duration, rank: usize) -> Duration {
        step.saturating_mul(u32::try_from(rank).unwrap_or(u32::MAX))
    }

    /// The leader timeout of a follower with `rank` eligible members above it
    /// (the leader not counted): a stagger step later per rank, so the highest
    /// survivor suspects first and its Coordinator reaches the others before
    /// their timers fire.
    ///
    /// docs/protocol.md: R1, staggered detection.
    pub(crate) fn leader_timeout_at_rank(&self, rank: usize) -> Duration {
        if !self.stagger_detection {
            return self.leader_timeout;
        }
        self.leader_timeout
            .saturating_add(Self::staggered(self.stagger_step, rank))
    }

    /// Soundarabai et al.'s flag timeout of a member with `rank` members above
    /// it: the highest waiting member elects first.
    pub(crate) fn flag_timeout_at_rank(&self, rank: usize) -> Duration {
        self.flag_timeout
            .saturating_add(Self::staggered(self.stagger_step, rank))
    }

    /// The ring: how long the initiator waits for its token to come back, and a
    /// member that passed a token waits for the second pass, before starting
    /// over, for a ring of `members` and a member with `rank` members above it:
    /// two passes round the ring, every hop allowed an acknowledgement timeout,
    /// plus the stagger step per rank so the highest waiting member restarts
    /// first.
    pub(crate) fn ring_timeout(&self, members: usize, rank: usize) -> Duration {
        let hop = self.answer_timeout.saturating_add(self.max_processing_time);
        let hops = u32::try_from(members.saturating_mul(2)).unwrap_or(u32::MAX);
        hop.saturating_mul(hops)
            .saturating_add(Self::staggered(self.stagger_step, rank))
    }

    /// How long a starting member with `rank` candidates above it listens before
    /// it stands, with the staggered start: a stagger step per rank.
    ///
    /// Without a quorum, also a heartbeat interval and a message time, the
    /// highest included: a member that comes back (or boots after the others)
    /// hears the sitting leader first and stands in a term above the leader's,
    /// so no two members lead one term (S4, docs/correctness.md section 1; a
    /// vote per term gives this with a quorum). With a quorum, after a follower
    /// lease (the time a start keeps every member from voting, unless it
    /// `owes_promises` not: `Node::restore`) and the highest member's probe
    /// and claim.
    ///
    /// docs/protocol.md: G16, without a quorum, a late starter listens; R2, the staggered start.
    pub(crate) fn start_wait(&self, rank: usize, owes_promises: bool) -> Duration {
        let staggered = Self::staggered(self.stagger_step, rank);
        if self.quorum {
            let hold = if owes_promises {
                self.follower_lease
            } else {
                Duration::ZERO
            };
            hold.saturating_add(self.answer_timeout.saturating_mul(2))
                .saturating_add(self.max_message_delay)
                .saturating_add(staggered)
        } else {
            self.heartbeat_interval
                .saturating_add(self.max_message_delay)
                .saturating_add(staggered)
        }
    }
}

/// `duration * factor`, rounded up to the nanosecond, saturating.
fn scaled(duration: Duration, factor: f64) -> Duration {
    #[allow(clippy::cast_precision_loss)]
    let nanos = (duration.as_nanos() as f64 * factor).ceil();
    Duration::try_from_secs_f64(nanos / 1e9).unwrap_or(Duration::MAX)
}
