//! Why a configuration or a membership was refused: [`ConfigError`].

use core::time::Duration;

use crate::message::NodeId;

/// Why a [`Config`](crate::Config) or a membership was rejected.
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
    /// A duration is longer than [`Config::MAX_DURATION`](crate::Config::MAX_DURATION).
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
    /// max_processing_time` (the lecture notes' round trip), so live members would be
    /// taken for dead.
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
    /// With a quorum, the leader could not renew its lease before it runs out,
    /// or a claim's votes would come too late for it to lead: the lease must
    /// exceed a round trip plus the longer of the heartbeat interval and a
    /// round trip on a fast clock.
    #[error(
        "the leader's lease of {lease:?} does not outlast a round trip plus the longer of a heartbeat interval and a round trip, {min:?}"
    )]
    LeaseTooShort {
        /// The leader's lease, derived from the leader timeout.
        lease: Duration,
        /// `max(heartbeat_interval, (2*T_M + P_p)(1+ρ)) + 2*T_M + P_p`.
        min: Duration,
    },
    /// With a quorum, the lease margin
    /// ([`Config::with_lease_margin`](crate::Config::with_lease_margin)) is
    /// not shorter than the leader's lease: no permit to work could ever start.
    #[error(
        "the lease margin of {margin:?} is not shorter than the leader's lease of {lease:?}: no permit to work could start"
    )]
    LeaseMarginTooLong {
        /// The lease margin set.
        margin: Duration,
        /// The leader's lease, derived from the leader timeout.
        lease: Duration,
    },
}
