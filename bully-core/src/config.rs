//! The protocol's settings: [`Config`], built with its `with_*` methods, and
//! the values a user reads back. The policies, the errors, the derived timings,
//! the bounds they imply and the validation each live in a file of their own
//! beside this one.

mod bounds;
mod error;
mod loss_allowance;
mod policy;
mod timings;
mod validate;

use core::time::Duration;

use crate::message::NodeId;

pub use error::ConfigError;
pub use policy::{Algorithm, Preemption, Quorum};
pub(crate) use timings::Timings;

/// The protocol's settings. Build one from [`Config::default`] with the `with_*`
/// methods; [`Node::new`](crate::Node::new) validates it.
///
/// The timing model is the synchronous system of the lecture notes "Election
/// Algorithm in Distributed Systems": every message arrives within
/// `max_message_delay` (the message time, T_M) and a reply leaves within
/// `max_processing_time` (the processing time, P_p)
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
    loss_adaptive_detection: bool,
    staggered_start: bool,
    max_term_lead: u64,
    quorum: Quorum,
    observers: Vec<NodeId>,
    observers_vote: bool,
    clock_drift: f64,
    resign_delay: Duration,
    /// `None`: [`Config::default_lease_margin`], which follows the lease.
    lease_margin: Option<Duration>,
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
            loss_adaptive_detection: true,
            staggered_start: true,
            max_term_lead: 1 << 20,
            quorum: Quorum::None,
            observers: Vec::new(),
            observers_vote: false,
            clock_drift: 0.001,
            resign_delay: Duration::ZERO,
            lease_margin: None,
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
    /// the `O(N^2)` worst case of the lecture notes. With staggering, a follower's
    /// leader timeout grows by a step, `answer_timeout + T_M`, for every eligible
    /// member above it (the leader excepted), so the highest survivor suspects
    /// first and its Coordinator reaches the others before their timers fire: the
    /// lecture notes' best case, `N - 2` messages. The price is a later detection when the higher members are dead too.
    #[must_use]
    pub fn with_stagger_detection(mut self, on: bool) -> Self {
        self.stagger_detection = on;
        self
    }

    /// Turns the loss-adaptive failure detector on or off (default on).
    ///
    /// A follower suspects its leader once every heartbeat the leader timeout
    /// covers went missing. On a lossy link that happens to a live leader: at
    /// the defaults under 30 % loss, about 200 false suspicions an hour in a
    /// five-member cluster, each an election. So a follower counts the rounds it
    /// missed among the leader's last 64 heartbeats (each carries its round's
    /// number) and, when it missed any, waits for as many heartbeats in a row as
    /// make a false suspicion rarer than once per thirty hours at the loss
    /// measured: at 30 % loss and the defaults twelve, 1.22 s, instead of 500 ms.
    /// The configured timeout is the floor: with no heartbeat missed in the last
    /// 64 rounds, or light loss it already covers, nothing changes, so
    /// [`Config::failover_bound`] holds on a clean link; four times the
    /// configured timeout is the ceiling, which [`Config::settle_bound`] allows
    /// for (a lossy stretch leaves followers waiting longer for a while). The
    /// price is a later detection of a crash on a lossy link. Turn it off for a
    /// leader timeout that never moves.
    ///
    /// ```
    /// use bully_core::Config;
    ///
    /// assert!(Config::default().loss_adaptive_detection());
    /// let fixed = Config::default().with_loss_adaptive_detection(false);
    /// assert!(!fixed.loss_adaptive_detection());
    /// ```
    #[must_use]
    pub fn with_loss_adaptive_detection(mut self, on: bool) -> Self {
        self.loss_adaptive_detection = on;
        self
    }

    /// Whether the leader timeout grows with the heartbeats a follower missed
    /// (see [`Config::with_loss_adaptive_detection`]).
    pub fn loss_adaptive_detection(&self) -> bool {
        self.loss_adaptive_detection
    }

    /// Turns the staggered start-up on or off (default on).
    ///
    /// When every member boots at once (a deploy) and each started an election,
    /// classic Bully would pay its worst case, `N^2 - 1` messages. With the
    /// staggered start, under `Preemption::Always`, a member with `r` candidates
    /// above it first listens: `r` detection steps (`answer_timeout + T_M` each),
    /// after a heartbeat interval and a message time (with a quorum, after two
    /// answer timeouts and a message time, and a follower lease more if it
    /// starts owing promises: [`Node::restore`](crate::Node::restore)). The
    /// highest starts at once and announces, and the others hear it before
    /// their turn, so a cold start costs `N - 1` messages (with a quorum, the
    /// probe, the claim and its votes: `4(N - 1)`). Without a quorum the
    /// highest (classic or modified Bully; the ring listens first) leads once
    /// the answer timeout passed with no sitting leader objecting that it leads
    /// the announced term, so a cold start agrees within three message delays
    /// (2.5 at the defaults); with a majority, within six (five). Turn it off
    /// for the model of the sources, in which every process that boots holds an
    /// election (the Bully Algorithm Dance's experiment 2).
    #[must_use]
    pub fn with_staggered_start(mut self, on: bool) -> Self {
        self.staggered_start = on;
        self
    }

    /// Whether the start-up is staggered (see [`Config::with_staggered_start`]).
    pub fn staggered_start(&self) -> bool {
        self.staggered_start
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

    /// With a quorum, how long before the end of its lease
    /// ([`Node::lease_until`](crate::Node::lease_until)) a leader's permit to
    /// work ends ([`Node::permit`](crate::Node::permit)): the time the work
    /// needs to notice and stop, plus the driver's own lateness. The node takes
    /// the longer of this and the resign delay ([`Config::with_resign_delay`]),
    /// the time work told to stop is given to stop: a shorter margin would let
    /// the work run past the lease, into a successor's.
    ///
    /// Default: [`Config::default_lease_margin`], a quarter of the lease. Keep
    /// it below the lease less a heartbeat interval and a round trip, or the
    /// permit ends between two renewals; [`Config::validate`] refuses one that
    /// is not shorter than the lease, since no permit could then start.
    /// Without a quorum it has no effect: the permit ends only with the
    /// leadership.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bully_core::{Config, ConfigError, Quorum};
    ///
    /// let config = Config::default().with_quorum(Quorum::Majority);
    /// assert_eq!(config.lease_margin(), config.default_lease_margin());
    /// let config = config.with_lease_margin(Duration::from_millis(100));
    /// assert_eq!(config.lease_margin(), Duration::from_millis(100));
    /// assert!(config.validate().is_ok());
    /// let lease = config.leader_lease();
    /// assert!(matches!(
    ///     config.with_lease_margin(lease).validate(),
    ///     Err(ConfigError::LeaseMarginTooLong { .. })
    /// ));
    /// ```
    #[must_use]
    pub fn with_lease_margin(mut self, margin: Duration) -> Self {
        self.lease_margin = Some(margin);
        self
    }

    /// The lease margin (see [`Config::with_lease_margin`]): the one set, or
    /// else [`Config::default_lease_margin`].
    pub fn lease_margin(&self) -> Duration {
        self.lease_margin
            .unwrap_or_else(|| self.default_lease_margin())
    }

    /// The lease margin when none is set: a quarter of the leader's lease,
    /// which leaves the steady state's renewals (a heartbeat interval and a
    /// round trip apart) room while giving the work that much time to notice.
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

    /// With a quorum: how long a member, after acknowledging a leader's heartbeat,
    /// refuses to vote for another Coordinator: `leader_timeout - T_M`, so that once
    /// the first member suspects a crashed leader every member's promise from the
    /// same heartbeat round (received at most T_M apart) has run out.
    pub fn follower_lease(&self) -> Duration {
        Timings::new(self).follower_lease
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
        Timings::new(self).leader_lease
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

    /// A round trip under the timing model of the lecture notes "Election
    /// Algorithm in Distributed Systems": `2*T_M + P_p`, twice the message time
    /// and the processing time.
    pub fn round_trip(&self) -> Duration {
        Timings::new(self).round_trip
    }

    /// How long an election waits for answers: the override, or
    /// [`Config::round_trip`] measured on a clock that may run ρ fast,
    /// `(2*T_M + P_p) * (1+ρ)` rounded up: with the default ρ (0.001) and
    /// timings, 50.05 ms.
    pub fn answer_timeout(&self) -> Duration {
        Timings::new(self).answer_timeout
    }

    /// How long a member that was answered waits for the Coordinator before it
    /// restarts its election: the override, or `2 * answer_timeout + T_M`, enough
    /// for the highest member to wait out its own answers and announce.
    pub fn coordinator_timeout(&self) -> Duration {
        Timings::new(self).coordinator_timeout
    }
}
