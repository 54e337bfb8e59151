//! Protocol configuration: the algorithm, the policies, the timeouts, their
//! validation, and the failover bound they imply.

use core::time::Duration;

use crate::message::NodeId;

/// Which election algorithm a node runs. Every member of a cluster must run the same one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[non_exhaustive]
pub enum Algorithm {
    /// Garcia-Molina's Bully (seeds 000, 001, 002, 004): Election to higher ids,
    /// every answering member runs its own election, the highest announces.
    /// `N^2 - 1` messages when the lowest of `N` starts.
    #[default]
    Classic,
    /// Soundarabai et al.'s modified Bully (seed 003): one election at a time, the
    /// initiator hands over to the highest member that answered. `3N - 2` messages
    /// when the lowest of `N` starts.
    Modified,
    /// The ring algorithm (seed 001): a token circles the live members, collecting
    /// their ids; a second pass announces the highest.
    Ring,
}

/// What happens when a member with a higher id than the sitting leader comes back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[non_exhaustive]
pub enum Preemption {
    /// Classic Bully: it takes over at once.
    #[default]
    Always,
    /// Sticky leadership: it follows the sitting leader; only a leader failure
    /// starts an election (what users of client-go and etcd elections expect).
    Never,
    /// It takes over only after it has been up and hearing the leader for this long,
    /// so a member that restarts repeatedly does not flap the leadership.
    AfterStable(Duration),
}

/// Split-brain protection: how many members must stand behind a leader.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[non_exhaustive]
pub enum Quorum {
    /// Classic Bully: a candidate with nobody live above it leads. Two sides of a
    /// partition each elect a leader; the fencing token orders them.
    #[default]
    None,
    /// A strict majority of the voting members.
    Majority,
    /// At least this many voting members (itself included). Values of half the
    /// voters or fewer let two sides of a partition both elect: the setting
    /// Elasticsearch's `minimum_master_nodes` warned about.
    AtLeast(usize),
}

/// Why a [`Config`] or a membership was rejected.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The member list is empty.
    #[error("the membership is empty")]
    EmptyMembership,
    /// The node's own id is not in the member list.
    #[error("node {0} is not in its own member list")]
    MissingSelf(NodeId),
    /// An id appears twice in the member list.
    #[error("node {0} appears more than once in the member list")]
    DuplicateMember(NodeId),
    /// A duration that must be positive is zero.
    #[error("{field} must be greater than zero")]
    ZeroDuration {
        /// The setting's name.
        field: &'static str,
    },
    /// A duration is longer than [`Config::MAX_DURATION`].
    #[error("{field} is {value:?}, longer than the maximum of {max:?}")]
    DurationTooLong {
        /// The setting's name.
        field: &'static str,
        /// Its value.
        value: Duration,
        /// The largest value accepted.
        max: Duration,
    },
    /// `leader_timeout` would suspect a healthy leader: it must exceed the heartbeat
    /// interval plus the largest message delay.
    #[error(
        "leader_timeout {leader_timeout:?} must exceed heartbeat_interval + max_message_delay = {min:?}"
    )]
    LeaderTimeoutTooShort {
        /// The configured leader timeout.
        leader_timeout: Duration,
        /// The smallest value that does not suspect a healthy leader (exclusive).
        min: Duration,
    },
    /// `answer_timeout` is shorter than a round trip, `2 * max_message_delay +
    /// max_processing_time` (seed 001), so live members would be taken for dead.
    #[error("answer_timeout {answer_timeout:?} is shorter than a round trip of {min:?}")]
    AnswerTimeoutTooShort {
        /// The configured answer timeout.
        answer_timeout: Duration,
        /// `2 * max_message_delay + max_processing_time`.
        min: Duration,
    },
    /// `coordinator_timeout` is shorter than the time a higher member needs to
    /// finish its own election and announce.
    #[error(
        "coordinator_timeout {coordinator_timeout:?} is shorter than answer_timeout + a round trip = {min:?}"
    )]
    CoordinatorTimeoutTooShort {
        /// The configured coordinator timeout.
        coordinator_timeout: Duration,
        /// `answer_timeout + 2 * max_message_delay + max_processing_time`.
        min: Duration,
    },
    /// `max_term_lead` is zero, which would drop every election.
    #[error("max_term_lead must be at least 1")]
    ZeroTermLead,
    /// `Preemption::AfterStable` with a zero duration (use `Preemption::Always`).
    #[error("Preemption::AfterStable needs a positive duration; use Preemption::Always")]
    ZeroStablePeriod,
    /// `Quorum::AtLeast(n)` with `n` zero or above the number of voting members.
    #[error("a quorum of {quorum} cannot be met by {voters} voting members")]
    ImpossibleQuorum {
        /// The quorum asked for.
        quorum: usize,
        /// The voting members.
        voters: usize,
    },
    /// Every member is an observer: nobody can lead.
    #[error("every member is an observer: nobody can stand")]
    NoCandidates,
    /// The clock drift bound is not in `[0, 0.1]`.
    #[error("clock drift {0} is outside [0, 0.1]")]
    ClockDrift(f64),
    /// With a quorum, the leader could not renew its lease before it runs out: the
    /// lease must exceed the heartbeat interval plus a round trip.
    #[error(
        "the leader's lease of {lease:?} does not outlast a heartbeat interval plus a round trip, {min:?}"
    )]
    LeaseTooShort {
        /// The leader's lease, derived from the leader timeout.
        lease: Duration,
        /// `heartbeat_interval + 2*T_M + P_p`.
        min: Duration,
    },
}

/// The protocol's settings. Build one from [`Config::default`] with the `with_*`
/// methods; [`Node::new`](crate::Node::new) validates it.
///
/// The timing model is seed 001's synchronous system: every message arrives within
/// `max_message_delay` (T_M) and a reply leaves within `max_processing_time` (P_p)
/// of its cause, so a member that has not answered within `2*T_M + P_p` is taken
/// for dead: within that round trip as the waiting member's clock measures it,
/// which may run ρ fast, so the wait is `(2*T_M + P_p) * (1+ρ)`.
///
/// ```
/// use std::time::Duration;
/// use bully_core::{Algorithm, Config};
///
/// let config = Config::default()
///     .with_algorithm(Algorithm::Modified)
///     .with_heartbeat_interval(Duration::from_millis(50))
///     .with_leader_timeout(Duration::from_millis(150))
///     .with_max_message_delay(Duration::from_millis(5))
///     .with_max_processing_time(Duration::from_millis(1));
/// config.validate().unwrap();
/// // "Elections in a Distributed Computing System": wait 2*T_M + P_p for an
/// // answer, 11 ms, here on a clock that may run ρ = 0.001 fast.
/// assert_eq!(config.answer_timeout(), Duration::from_micros(11_011));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    algorithm: Algorithm,
    preemption: Preemption,
    heartbeat_interval: Duration,
    leader_timeout: Duration,
    max_message_delay: Duration,
    max_processing_time: Duration,
    answer_timeout: Option<Duration>,
    coordinator_timeout: Option<Duration>,
    stagger_detection: bool,
    staggered_start: bool,
    max_term_lead: u64,
    quorum: Quorum,
    observers: Vec<NodeId>,
    observers_vote: bool,
    clock_drift: f64,
    resign_delay: Duration,
}

impl Default for Config {
    /// Timings for a LAN: heartbeat every 100 ms, leader suspected after 500 ms,
    /// messages within 20 ms, replies within 10 ms; classic Bully, preemption on,
    /// detection staggered.
    fn default() -> Self {
        Config {
            algorithm: Algorithm::Classic,
            preemption: Preemption::Always,
            heartbeat_interval: Duration::from_millis(100),
            leader_timeout: Duration::from_millis(500),
            max_message_delay: Duration::from_millis(20),
            max_processing_time: Duration::from_millis(10),
            answer_timeout: None,
            coordinator_timeout: None,
            stagger_detection: true,
            staggered_start: true,
            max_term_lead: 1 << 20,
            quorum: Quorum::None,
            observers: Vec::new(),
            observers_vote: false,
            clock_drift: 0.001,
            resign_delay: Duration::ZERO,
        }
    }
}

impl Config {
    /// The longest duration any setting accepts. Keeps `now + timeout` far from the
    /// end of `Instant`'s range, so arming a timer can never overflow.
    pub const MAX_DURATION: Duration = Duration::from_secs(24 * 60 * 60);

    /// Sets the election algorithm.
    #[must_use]
    pub fn with_algorithm(mut self, algorithm: Algorithm) -> Self {
        self.algorithm = algorithm;
        self
    }

    /// Sets the preemption policy.
    #[must_use]
    pub fn with_preemption(mut self, preemption: Preemption) -> Self {
        self.preemption = preemption;
        self
    }

    /// Sets how often the leader sends `Heartbeat`.
    #[must_use]
    pub fn with_heartbeat_interval(mut self, interval: Duration) -> Self {
        self.heartbeat_interval = interval;
        self
    }

    /// Sets how long a follower waits without hearing the leader before it suspects
    /// it (for the highest follower; see [`Config::with_stagger_detection`]).
    #[must_use]
    pub fn with_leader_timeout(mut self, timeout: Duration) -> Self {
        self.leader_timeout = timeout;
        self
    }

    /// Sets T_M, the longest a message may take to arrive.
    #[must_use]
    pub fn with_max_message_delay(mut self, delay: Duration) -> Self {
        self.max_message_delay = delay;
        self
    }

    /// Sets P_p, the longest a node may take to react to a message.
    #[must_use]
    pub fn with_max_processing_time(mut self, time: Duration) -> Self {
        self.max_processing_time = time;
        self
    }

    /// Overrides the answer timeout (default `(2*T_M + P_p) * (1+ρ)`: the round
    /// trip of "Elections in a Distributed Computing System", with the clock
    /// drift's margin). An override is taken as it is, without that margin.
    #[must_use]
    pub fn with_answer_timeout(mut self, timeout: Duration) -> Self {
        self.answer_timeout = Some(timeout);
        self
    }

    /// Overrides how long a member that got an Answer waits for the Coordinator
    /// before it restarts its election (default `2 * answer_timeout + T_M`).
    #[must_use]
    pub fn with_coordinator_timeout(mut self, timeout: Duration) -> Self {
        self.coordinator_timeout = Some(timeout);
        self
    }

    /// Turns detection staggering on or off (default on).
    ///
    /// When a leader crashes every follower stops hearing heartbeats at about the
    /// same moment; if all of them started elections at once, the cluster would pay
    /// the seeds' `O(N^2)` worst case. With staggering, a follower's leader timeout
    /// grows by [`Config::stagger_step`] for every eligible member above it (the
    /// leader excepted), so the highest survivor suspects first and its Coordinator
    /// reaches the others before their timers fire: the seeds' best case, `N - 2`
    /// messages. The price is a later detection when the higher members are dead too.
    #[must_use]
    pub fn with_stagger_detection(mut self, on: bool) -> Self {
        self.stagger_detection = on;
        self
    }

    /// Turns the staggered start-up on or off (default on).
    ///
    /// When every member boots at once (a deploy) and each started an election,
    /// classic Bully would pay its worst case, `N^2 - 1` messages. With the
    /// staggered start, under `Preemption::Always`, a member with `r` candidates
    /// above it first listens for [`Config::start_wait`]`(r)`: the highest starts
    /// at once and announces, and the others hear it before their turn, so a cold
    /// start costs `N - 1` messages (with a quorum, the probe, the claim and its
    /// votes: `4(N - 1)`). Turn it off for the seeds' model, in which every
    /// process that boots holds an election (seed 004's experiment 2).
    #[must_use]
    pub fn with_staggered_start(mut self, on: bool) -> Self {
        self.staggered_start = on;
        self
    }

    /// Whether the start-up is staggered (see [`Config::with_staggered_start`]).
    pub fn staggered_start(&self) -> bool {
        self.staggered_start
    }

    /// How long a starting member with `rank` candidates above it listens before
    /// it stands, with the staggered start: [`Config::stagger_step`] per rank.
    ///
    /// Without a quorum, also a heartbeat interval and a message delay, the highest
    /// included: a member that comes back (or boots after the others) hears the
    /// sitting leader first and stands in a term above the leader's, so no two
    /// members lead one term (S4; a vote per term gives this with a quorum). With
    /// a quorum, after a follower lease (the time a start keeps every member from
    /// voting) and the highest member's probe and claim.
    pub fn start_wait(&self, rank: usize) -> Duration {
        let rank = u32::try_from(rank).unwrap_or(u32::MAX);
        let staggered = self.stagger_step().saturating_mul(rank);
        match self.quorum {
            Quorum::None => self
                .heartbeat_interval
                .saturating_add(self.max_message_delay)
                .saturating_add(staggered),
            _ => self
                .follower_lease()
                .saturating_add(self.answer_timeout().saturating_mul(2))
                .saturating_add(self.max_message_delay)
                .saturating_add(staggered),
        }
    }

    /// Sets how far ahead of a node's own term a peer's message may be before it is
    /// dropped as hostile (default `2^20`).
    ///
    /// A member cut off from the rest does not run up its term (alone, it elects
    /// itself once and leads itself), so a legitimate gap is a handful of terms per
    /// fault. A gap beyond this is a faulty or malicious peer trying to exhaust the
    /// term space; its messages are dropped and counted, and change nothing.
    #[must_use]
    pub fn with_max_term_lead(mut self, lead: u64) -> Self {
        self.max_term_lead = lead;
        self
    }

    /// Sets the quorum a leader needs (default `Quorum::None`, classic Bully).
    ///
    /// With a quorum, a member that would win claims the leadership instead: it
    /// sends Coordinator and leads only once `q` members, itself included, have
    /// acknowledged it within the answer timeout. A member acknowledges at most one
    /// Coordinator per term (a vote), so one term never has two leaders anywhere.
    /// The leader then holds a lease, renewed by every heartbeat round that `q`
    /// members acknowledge and dated from the round's send time; it steps down when
    /// the lease runs out. A member that acknowledged a round does not vote for
    /// another Coordinator for [`Config::follower_lease`] from then on, which is
    /// longer than the leader's [`Config::leader_lease`] by the clock-drift margin,
    /// so a new leader is never elected while the old one may still act. Members
    /// follow a leader only once its first heartbeat shows it has its quorum, so a
    /// member that cannot see `q` members names no leader.
    ///
    /// The cost, measured in the simulator (`tests/quorum.rs`,
    /// `the_gate_costs_an_ack_per_member_and_two_message_delays`): per election,
    /// `N - 1` Acks of the Coordinator and one confirming heartbeat round; in the
    /// steady state, `N - 1` Acks per heartbeat round; and two message delays more
    /// for classic and modified Bully (at `N = 10`: 2 → 4 and 4 → 6 delays), three
    /// for the ring, whose second pass must now be followed by a claim (19 → 22).
    #[must_use]
    pub fn with_quorum(mut self, quorum: Quorum) -> Self {
        self.quorum = quorum;
        self
    }

    /// Sets the observers: members that follow the leader and report it, but never
    /// stand, answer an Election, or count toward a quorum (unless
    /// [`Config::with_observers_vote`]). Every member must be given the same list.
    #[must_use]
    pub fn with_observers(mut self, observers: impl IntoIterator<Item = NodeId>) -> Self {
        self.observers = observers.into_iter().collect();
        self.observers.sort_unstable();
        self.observers.dedup();
        self
    }

    /// Lets observers acknowledge Coordinators and heartbeats, so they count toward
    /// the quorum (they still never stand).
    #[must_use]
    pub fn with_observers_vote(mut self, vote: bool) -> Self {
        self.observers_vote = vote;
        self
    }

    /// Sets ρ, the largest relative rate at which two members' clocks may drift
    /// apart (default 0.001, that is 1,000 ppm: far above a quartz clock's 100 ppm).
    /// The leader's lease is shortened by that margin relative to the followers'
    /// promise, so that a lease that has run out on the leader's clock has run out
    /// on every follower's. Only the rate matters: clocks need not agree on the
    /// time, since every lease is measured on one clock from one event.
    #[must_use]
    pub fn with_clock_drift(mut self, drift: f64) -> Self {
        self.clock_drift = drift;
        self
    }

    /// With a quorum: how long a leader that yields to a higher claimant (under
    /// `Preemption::Always`) waits before it tells its followers that it resigned
    /// (default zero: at once).
    ///
    /// Its leadership ends at once either way, so a driver stops the leader's
    /// work at once; but the `Resign` frees the followers' promises, which are
    /// what keeps the claimant from winning while that work may still run. Set
    /// it to the time the work needs to stop once told (a child process's grace
    /// period and the time to kill it, as `bully-agent` does), and the claimant
    /// cannot be elected before then: hand-overs take that much longer, and work
    /// of two leaderships never overlaps, also when the old leader resigns rather
    /// than letting its lease run out. Longer than the follower lease it has no
    /// further effect: the promises run out first.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bully_core::{Config, Quorum};
    ///
    /// let config = Config::default()
    ///     .with_quorum(Quorum::Majority)
    ///     .with_resign_delay(Duration::from_millis(300));
    /// assert_eq!(config.resign_delay(), Duration::from_millis(300));
    /// assert!(config.validate().is_ok());
    /// ```
    #[must_use]
    pub fn with_resign_delay(mut self, delay: Duration) -> Self {
        self.resign_delay = delay;
        self
    }

    /// The margin before the end of its lease at which a leader's work should
    /// stop when the application names none ([`Node::may_work_until`](crate::Node::may_work_until)):
    /// a quarter of the leader's lease, which leaves the steady state's renewals
    /// (a heartbeat interval and a round trip apart) room while giving the work
    /// that much time to notice.
    pub fn default_lease_margin(&self) -> Duration {
        self.leader_lease() / 4
    }

    /// The resign delay (see [`Config::with_resign_delay`]).
    pub fn resign_delay(&self) -> Duration {
        self.resign_delay
    }

    /// ρ, the bound on the clocks' relative drift (see [`Config::with_clock_drift`]).
    pub fn clock_drift(&self) -> f64 {
        self.clock_drift
    }

    /// The quorum setting.
    pub fn quorum(&self) -> Quorum {
        self.quorum
    }

    /// The observers, ascending.
    pub fn observers(&self) -> &[NodeId] {
        &self.observers
    }

    /// Whether observers vote.
    pub fn observers_vote(&self) -> bool {
        self.observers_vote
    }

    /// Whether `id` is an observer.
    pub fn is_observer(&self, id: NodeId) -> bool {
        self.observers.binary_search(&id).is_ok()
    }

    /// The quorum size for `voters` voting members, or `None` without a quorum.
    pub fn quorum_size(&self, voters: usize) -> Option<usize> {
        match self.quorum {
            Quorum::None => None,
            Quorum::Majority => Some(voters / 2 + 1),
            Quorum::AtLeast(n) => Some(n),
        }
    }

    /// With a quorum: how long a member, after acknowledging a leader's heartbeat,
    /// refuses to vote for another Coordinator: `leader_timeout - T_M`, so that once
    /// the first member suspects a crashed leader every member's promise from the
    /// same heartbeat round (received at most T_M apart) has run out.
    pub fn follower_lease(&self) -> Duration {
        self.leader_timeout.saturating_sub(self.max_message_delay)
    }

    /// With a quorum: how long a leader's lease lasts from the send time of the last
    /// heartbeat round a quorum acknowledged: `follower_lease * (1-ρ)/(1+ρ)`, so it
    /// ends, in real time, no later than the earliest promise of any follower that
    /// acknowledged that round.
    ///
    /// Never panics, even for settings [`Config::validate`] refuses: a drift
    /// outside `[0, 0.1]` counts as its nearest bound and NaN as 0.1 (the shortest
    /// lease), and a lease too long to compute in `f64` is capped at the follower
    /// lease.
    pub fn leader_lease(&self) -> Duration {
        let drift = self.bounded_drift();
        let follower = self.follower_lease();
        // The factor is at most 1, but near the end of `Duration`'s range the f64
        // product can round above it.
        Duration::try_from_secs_f64(follower.as_secs_f64() * (1.0 - drift) / (1.0 + drift))
            .map_or(follower, |lease| lease.min(follower))
    }

    /// ρ as the timings use it: a drift outside `[0, 0.1]` counts as its nearest
    /// bound and NaN as 0.1, so that no timing panics on settings
    /// [`Config::validate`] refuses.
    fn bounded_drift(&self) -> f64 {
        if self.clock_drift.is_nan() {
            0.1
        } else {
            self.clock_drift.clamp(0.0, 0.1)
        }
    }

    /// How long a member waits on its own clock to be sure that `real` has
    /// passed: `real * (1+ρ)`, rounded up, since its clock may run ρ fast (A2).
    /// A wait for another member's message is this, not the bare round trip:
    /// otherwise a fast clock gives up on answers that keep to the timing model.
    pub(crate) fn covering(&self, real: Duration) -> Duration {
        Self::scaled(real, 1.0 + self.bounded_drift())
    }

    /// The longest real time a wait of `local` on a member's clock can last:
    /// `local / (1-ρ)`, rounded up, its clock running ρ slow.
    pub(crate) fn longest(&self, local: Duration) -> Duration {
        Self::scaled(local, 1.0 / (1.0 - self.bounded_drift()))
    }

    /// `duration * factor`, rounded up to the nanosecond, saturating.
    fn scaled(duration: Duration, factor: f64) -> Duration {
        #[allow(clippy::cast_precision_loss)]
        let nanos = (duration.as_nanos() as f64 * factor).ceil();
        Duration::try_from_secs_f64(nanos / 1e9).unwrap_or(Duration::MAX)
    }

    /// The election algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The preemption policy.
    pub fn preemption(&self) -> Preemption {
        self.preemption
    }

    /// How often the leader sends `Heartbeat`.
    pub fn heartbeat_interval(&self) -> Duration {
        self.heartbeat_interval
    }

    /// The highest follower's leader timeout.
    pub fn leader_timeout(&self) -> Duration {
        self.leader_timeout
    }

    /// T_M, the longest a message may take to arrive.
    pub fn max_message_delay(&self) -> Duration {
        self.max_message_delay
    }

    /// P_p, the longest a node may take to react to a message.
    pub fn max_processing_time(&self) -> Duration {
        self.max_processing_time
    }

    /// Whether detection staggering is on.
    pub fn stagger_detection(&self) -> bool {
        self.stagger_detection
    }

    /// How far ahead of its own term a peer's message may be.
    pub fn max_term_lead(&self) -> u64 {
        self.max_term_lead
    }

    /// A round trip under the timing model: `2*T_M + P_p` (seed 001).
    pub fn round_trip(&self) -> Duration {
        self.max_message_delay
            .saturating_mul(2)
            .saturating_add(self.max_processing_time)
    }

    /// How long an election waits for answers: the override, or
    /// [`Config::round_trip`] measured on a clock that may run ρ fast,
    /// `(2*T_M + P_p) * (1+ρ)` rounded up: with the default ρ (0.001) and
    /// timings, 50.05 ms.
    pub fn answer_timeout(&self) -> Duration {
        self.answer_timeout
            .unwrap_or_else(|| self.covering(self.round_trip()))
    }

    /// How long a member that was answered waits for the Coordinator before it
    /// restarts its election: the override, or `2 * answer_timeout + T_M`, enough
    /// for the highest member to wait out its own answers and announce.
    pub fn coordinator_timeout(&self) -> Duration {
        self.coordinator_timeout.unwrap_or_else(|| {
            self.answer_timeout()
                .saturating_mul(2)
                .saturating_add(self.max_message_delay)
        })
    }

    /// Modified Bully's fail-safe: how long a member keeps its election flag up
    /// without hearing a Coordinator before it starts an election itself (before
    /// staggering by rank): the initiator's collection, the handover, the chosen
    /// member's check and its announcement, `coordinator_timeout + answer_timeout`.
    pub fn flag_timeout(&self) -> Duration {
        self.coordinator_timeout()
            .saturating_add(self.answer_timeout())
    }

    /// Ring: how long the initiator waits for its token to come back, and a member
    /// that passed a token waits for the second pass, before starting over, for a
    /// ring of `members` and a member with `rank` members above it: two passes
    /// round the ring, every hop allowed an acknowledgement timeout, plus the
    /// staggering step per rank so the highest waiting member restarts first.
    pub fn ring_timeout(&self, members: usize, rank: usize) -> Duration {
        let hop = self
            .answer_timeout()
            .saturating_add(self.max_processing_time);
        let hops = u32::try_from(members.saturating_mul(2)).unwrap_or(u32::MAX);
        let rank = u32::try_from(rank).unwrap_or(u32::MAX);
        hop.saturating_mul(hops)
            .saturating_add(self.stagger_step().saturating_mul(rank))
    }

    /// The staggering step: how much later a follower suspects the leader than the
    /// member just above it. `answer_timeout + T_M`: the member above may hear the
    /// last heartbeat up to T_M later, and its Coordinator needs a round trip to
    /// arrive.
    pub fn stagger_step(&self) -> Duration {
        self.answer_timeout().saturating_add(self.max_message_delay)
    }

    /// The leader timeout of a follower with `rank` eligible members above it (the
    /// leader not counted).
    pub fn leader_timeout_at_rank(&self, rank: usize) -> Duration {
        if !self.stagger_detection {
            return self.leader_timeout;
        }
        let rank = u32::try_from(rank).unwrap_or(u32::MAX);
        self.leader_timeout
            .saturating_add(self.stagger_step().saturating_mul(rank))
    }

    /// The worst-case time from the leader's crash to every live member knowing the
    /// new leader, for a cluster of `members` in which the leader is the only
    /// member to fail and the network keeps to the timing model.
    ///
    /// The last heartbeat may still be in flight (T_M); the highest survivor then
    /// suspects after its leader timeout; it may wait out `answer_timeout` for
    /// members above it that crashed unnoticed; it reacts within P_p and its
    /// Coordinator needs T_M to arrive. The ring algorithm adds two passes round
    /// the ring, each hop a round trip.
    pub fn failover_bound(&self, members: usize) -> Duration {
        let t_m = self.max_message_delay;
        let detection = t_m.saturating_add(self.leader_timeout);
        let announce = self
            .answer_timeout()
            .saturating_add(self.max_processing_time)
            .saturating_add(t_m);
        detection
            .saturating_add(announce)
            .saturating_add(self.election_overhead(members))
            .saturating_add(self.claim_overhead())
    }

    /// With a quorum, what an election adds: the probe before it (an answer
    /// timeout at most), the longer wait for answers from higher members that
    /// probe first (another), the claim's acknowledgements (a round trip), the
    /// confirming heartbeat (a message delay), and a yielding leader's resign
    /// delay.
    fn claim_overhead(&self) -> Duration {
        match self.quorum {
            Quorum::None => Duration::ZERO,
            _ => self
                .answer_timeout()
                .saturating_mul(2)
                .saturating_add(self.round_trip())
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
    /// faults stop (the lowest follower's staggered leader timeout, a stalled
    /// candidate's coordinator and answer timeouts, the lowest member's modified
    /// flag or ring timeout); then an election; then a heartbeat interval, for
    /// members the winner wrongly suspects to hear of it from its heartbeats; then,
    /// if one of those outranks the winner, its own election and heartbeat
    /// interval; a few reactions; under `Preemption::AfterStable`, the stable
    /// period; and with a quorum, a claim refused while old promises ran, retried
    /// after a leader timeout.
    pub fn settle_bound(&self, members: usize) -> Duration {
        let t_m = self.max_message_delay;
        let reaction = t_m.saturating_add(self.max_processing_time);
        let lowest_rank = members.saturating_sub(1);
        let mut wait = self
            .leader_timeout_at_rank(members.saturating_sub(2))
            .saturating_add(t_m)
            .max(
                self.coordinator_timeout()
                    .saturating_add(self.answer_timeout()),
            )
            .max(self.heartbeat_interval.saturating_add(t_m));
        match self.algorithm {
            Algorithm::Classic => {}
            Algorithm::Modified => {
                let rank = u32::try_from(lowest_rank).unwrap_or(u32::MAX);
                let flag = self
                    .flag_timeout()
                    .saturating_add(self.stagger_step().saturating_mul(rank));
                wait = wait.max(flag);
            }
            Algorithm::Ring => wait = wait.max(self.ring_timeout(members, lowest_rank)),
        }
        let election = self
            .answer_timeout()
            .saturating_add(self.election_overhead(members));
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
            _ => self
                .leader_timeout_at_rank(members.saturating_sub(1))
                .saturating_add(self.claim_overhead().saturating_mul(2))
                .saturating_add(self.leader_timeout.saturating_mul(4)),
        };
        wait.saturating_add(round.saturating_mul(2))
            .saturating_add(reaction.saturating_mul(4))
            .saturating_add(stable)
            .saturating_add(refused_claim)
    }

    /// Time an algorithm needs beyond the classic announcement: the ring's two
    /// passes.
    fn election_overhead(&self, members: usize) -> Duration {
        match self.algorithm {
            Algorithm::Classic => Duration::ZERO,
            // Takeover to the chosen member, then its check with higher members.
            Algorithm::Modified => self
                .max_message_delay
                .saturating_add(self.max_processing_time)
                .saturating_add(self.answer_timeout()),
            Algorithm::Ring => {
                let hops = u32::try_from(members.saturating_mul(2)).unwrap_or(u32::MAX);
                self.round_trip().saturating_mul(hops)
            }
        }
    }

    /// Checks every setting and the relations between them.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bully_core::{Config, ConfigError};
    ///
    /// let bad = Config::default()
    ///     .with_heartbeat_interval(Duration::from_millis(500))
    ///     .with_leader_timeout(Duration::from_millis(500));
    /// assert!(matches!(bad.validate(), Err(ConfigError::LeaderTimeoutTooShort { .. })));
    /// ```
    pub fn validate(&self) -> Result<(), ConfigError> {
        let named = [
            ("heartbeat_interval", Some(self.heartbeat_interval)),
            ("leader_timeout", Some(self.leader_timeout)),
            ("max_message_delay", Some(self.max_message_delay)),
            ("answer_timeout", self.answer_timeout),
            ("coordinator_timeout", self.coordinator_timeout),
        ];
        for (field, value) in named {
            let Some(value) = value else { continue };
            if value.is_zero() {
                return Err(ConfigError::ZeroDuration { field });
            }
            if value > Self::MAX_DURATION {
                return Err(ConfigError::DurationTooLong {
                    field,
                    value,
                    max: Self::MAX_DURATION,
                });
            }
        }
        for (field, value) in [
            ("max_processing_time", self.max_processing_time),
            ("resign_delay", self.resign_delay),
        ] {
            if value > Self::MAX_DURATION {
                return Err(ConfigError::DurationTooLong {
                    field,
                    value,
                    max: Self::MAX_DURATION,
                });
            }
        }
        match self.preemption {
            Preemption::AfterStable(d) if d.is_zero() => return Err(ConfigError::ZeroStablePeriod),
            Preemption::AfterStable(d) if d > Self::MAX_DURATION => {
                return Err(ConfigError::DurationTooLong {
                    field: "preemption stable period",
                    value: d,
                    max: Self::MAX_DURATION,
                });
            }
            _ => {}
        }
        let min_leader_timeout = self.heartbeat_interval + self.max_message_delay;
        if self.leader_timeout <= min_leader_timeout {
            return Err(ConfigError::LeaderTimeoutTooShort {
                leader_timeout: self.leader_timeout,
                min: min_leader_timeout,
            });
        }
        if self.answer_timeout() < self.round_trip() {
            return Err(ConfigError::AnswerTimeoutTooShort {
                answer_timeout: self.answer_timeout(),
                min: self.round_trip(),
            });
        }
        let min_coordinator_timeout = self.answer_timeout() + self.round_trip();
        if self.coordinator_timeout() < min_coordinator_timeout {
            return Err(ConfigError::CoordinatorTimeoutTooShort {
                coordinator_timeout: self.coordinator_timeout(),
                min: min_coordinator_timeout,
            });
        }
        if self.max_term_lead == 0 {
            return Err(ConfigError::ZeroTermLead);
        }
        if !(0.0..=0.1).contains(&self.clock_drift) {
            return Err(ConfigError::ClockDrift(self.clock_drift));
        }
        if self.quorum != Quorum::None {
            let min = self.heartbeat_interval + self.round_trip();
            if self.leader_lease() <= min {
                return Err(ConfigError::LeaseTooShort {
                    lease: self.leader_lease(),
                    min,
                });
            }
        }
        Ok(())
    }

    /// Checks the settings that depend on the membership (`members` sorted
    /// ascending): the quorum can be met and somebody can stand.
    pub fn validate_for(&self, members: &[NodeId]) -> Result<(), ConfigError> {
        self.validate()?;
        // `members` is sorted: count the observers in it without walking it, so
        // building a node stays cheap in a very large cluster.
        let observers = self
            .observers
            .iter()
            .filter(|id| members.binary_search(id).is_ok())
            .count();
        let candidates = members.len() - observers;
        if candidates == 0 {
            return Err(ConfigError::NoCandidates);
        }
        let voters = if self.observers_vote {
            members.len()
        } else {
            candidates
        };
        if let Some(quorum) = self.quorum_size(voters) {
            if quorum == 0 || quorum > voters {
                return Err(ConfigError::ImpossibleQuorum { quorum, voters });
            }
        }
        Ok(())
    }
}
