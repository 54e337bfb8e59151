//! The safety core's invariants (docs/protocol.md, "The safety core"), as
//! checks a test harness runs after every input: the simulator's checker, the
//! fuzz targets and the model check all call these, so each invariant is
//! written once.
//!
//! Exclusive leadership (no two members lead at overlapping times, with a
//! quorum) and W1 follow from the invariants below; a rule that breaks one
//! fails the check at the input that broke it, on any schedule that exercises
//! the rule, not only on the rare one that turns it into two leaders.
//!
//! - **I1** a node's term and highest accepted fencing token never decrease.
//! - **I2** one vote per term: the term of a node's vote never decreases, and
//!   within a term the vote never changes.
//! - **I3** no vote against a promise: a node casts a vote only when, before
//!   the input, no promise to another member ran, it did not vote for nobody
//!   after coming back, and, for a vote for another member, no resign delay
//!   held its votes.
//! - **I4** every acknowledgement is a promise: after a node sends `Ack` to
//!   `L`, it is promised to `L` (for the acknowledged term or a later one) for
//!   at least a follower lease from the input.
//! - **I5** a member that may have forgotten a promise votes for nobody, itself
//!   included, for a follower lease after it came back (its first input, or
//!   its start), unless it was declared a first boot.
//! - **I6** a leader's own vote is in its leadership's term.
//! - **I7** every lease is covered: while a member leads with a lease ending
//!   at `U` (in real time), a quorum of voters are the leader itself, are
//!   down, or hold a promise to the leader, or vote for nobody after coming
//!   back, until `U` or later (in real time). A member covering a lease cannot vote for anyone
//!   else until the lease has ended, so no other member can be elected before.
//!
//! I1 to I6 read one node before and after one input ([`check_input`]); I7
//! reads every member at one instant ([`check_leases`]), its instants
//! converted to real time by the caller, who knows the members' clocks.
//!
//! Both checks read [`SafetyState`], which
//! [`Node::safety`](bully_core::Node::safety) gives after any input.

use core::fmt;
use std::time::Duration;

use bully_core::{FencingToken, Instant, Message, NodeId, Promise, SafetyState, Term, Transmit};

/// A broken invariant of the safety core.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Broken {
    /// I1: the term went down.
    TermDecreased {
        /// The member.
        node: NodeId,
        /// Before the input.
        from: Term,
        /// After it.
        to: Term,
    },
    /// I1: the highest accepted token went down.
    TokenDecreased {
        /// The member.
        node: NodeId,
        /// Before the input.
        from: Option<FencingToken>,
        /// After it.
        to: Option<FencingToken>,
    },
    /// I2: the vote moved to an older term, or to another candidate in the
    /// same term.
    SecondVote {
        /// The member.
        node: NodeId,
        /// The vote before the input.
        from: (Term, NodeId),
        /// The vote after it.
        to: Option<(Term, NodeId)>,
    },
    /// I3: a vote cast while a promise to another member ran.
    VotedAgainstPromise {
        /// The member.
        node: NodeId,
        /// The vote cast.
        vote: (Term, NodeId),
        /// The promise that ran.
        promise: Promise,
    },
    /// I3: a vote cast while the member voted for nobody after coming back.
    VotedForNobodyYetVoted {
        /// The member.
        node: NodeId,
        /// The vote cast.
        vote: (Term, NodeId),
    },
    /// I3: a vote for another member cast while a resign delay held its votes.
    VotedDuringHold {
        /// The member.
        node: NodeId,
        /// The vote cast.
        vote: (Term, NodeId),
    },
    /// I4: an acknowledgement sent without the promise it stands for.
    AckWithoutPromise {
        /// The member.
        node: NodeId,
        /// The leader acknowledged.
        to: NodeId,
        /// The term acknowledged.
        term: Term,
        /// The promise it held after the input.
        promise: Option<Promise>,
    },
    /// I5: a vote cast within a follower lease of coming back, by a member
    /// not declared a first boot.
    VotedAfterRestart {
        /// The member.
        node: NodeId,
        /// The vote cast.
        vote: (Term, NodeId),
        /// How long after it came back.
        after: Duration,
    },
    /// I6: a leader whose vote in its term is not its own.
    LeaderWithoutOwnVote {
        /// The member.
        node: NodeId,
        /// Its leadership's term.
        term: Term,
        /// Its vote.
        vote: Option<(Term, NodeId)>,
    },
    /// I7: a leader's lease outlasts what a quorum of voters promised.
    LeaseNotCovered {
        /// The leader.
        leader: NodeId,
        /// The voters that cover the lease, the leader included.
        covered: usize,
        /// The quorum.
        quorum: usize,
    },
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Broken::TermDecreased { node, from, to } => {
                write!(f, "I1: {node}'s term went from {from} to {to}")
            }
            Broken::TokenDecreased { node, from, to } => {
                write!(f, "I1: {node}'s highest token went from {from:?} to {to:?}")
            }
            Broken::SecondVote { node, from, to } => {
                write!(f, "I2: {node}'s vote went from {from:?} to {to:?}")
            }
            Broken::VotedAgainstPromise {
                node,
                vote,
                promise,
            } => write!(f, "I3: {node} voted {vote:?} while {promise:?} ran"),
            Broken::VotedForNobodyYetVoted { node, vote } => write!(
                f,
                "I3: {node} voted {vote:?} while it votes for nobody after coming back"
            ),
            Broken::VotedDuringHold { node, vote } => {
                write!(
                    f,
                    "I3: {node} voted {vote:?} while its resign delay held its votes"
                )
            }
            Broken::AckWithoutPromise {
                node,
                to,
                term,
                promise,
            } => write!(
                f,
                "I4: {node} acknowledged {to}'s term {term} holding {promise:?}"
            ),
            Broken::VotedAfterRestart { node, vote, after } => write!(
                f,
                "I5: {node} voted {vote:?} {after:?} after it came back, within a follower lease"
            ),
            Broken::LeaderWithoutOwnVote { node, term, vote } => {
                write!(f, "I6: {node} leads term {term} with its vote {vote:?}")
            }
            Broken::LeaseNotCovered {
                leader,
                covered,
                quorum,
            } => write!(
                f,
                "I7: {leader}'s lease is covered by {covered} voters, fewer than the quorum of {quorum}"
            ),
        }
    }
}

impl std::error::Error for Broken {}

/// What a harness saw of one input, beside the states before and after it.
#[derive(Clone, Copy, Debug)]
pub struct Input<'a> {
    /// The instant the node took the input at, on its own clock (time never
    /// runs backwards inside a node: the later of the instant given and the
    /// latest it had seen).
    pub now: Instant,
    /// What the input made it send.
    pub sent: &'a [Transmit],
    /// When this incarnation came back (its first input or its start, the
    /// later), if it was not declared a first boot: it may have forgotten a
    /// promise made before.
    pub back_since: Option<Instant>,
}

/// Checks I1 to I6 on one node across one input: `before` and `after` are
/// [`Node::safety`](bully_core::Node::safety) read before and after it.
///
/// ```
/// use std::time::Instant;
/// use bully_sim::invariants::{self, Input};
/// use bully_core::{Config, DurableState, Message, Node, NodeId, Quorum, Term};
/// let config = Config::default().with_quorum(Quorum::Majority);
/// let members = [NodeId(1), NodeId(2), NodeId(3)];
/// let mut node = Node::with_durable_state(NodeId(1), members, config, DurableState::first_boot())?;
/// let now = Instant::now();
/// let before = node.safety();
/// node.handle_message(now, NodeId(3), Message::Coordinator { term: Term(1), round: 0 });
/// let sent: Vec<_> = std::iter::from_fn(|| node.poll_transmit()).collect();
/// let input = Input { now, sent: &sent, back_since: None };
/// assert_eq!(invariants::check_input(&before, &node.safety(), &input), Ok(()));
/// # Ok::<(), bully_core::ConfigError>(())
/// ```
pub fn check_input(
    before: &SafetyState,
    after: &SafetyState,
    input: &Input<'_>,
) -> Result<(), Broken> {
    let node = after.id;
    if after.term < before.term {
        return Err(Broken::TermDecreased {
            node,
            from: before.term,
            to: after.term,
        });
    }
    if after.highest < before.highest {
        return Err(Broken::TokenDecreased {
            node,
            from: before.highest,
            to: after.highest,
        });
    }
    if let Some(from) = before.vote {
        let kept = after
            .vote
            .is_some_and(|(term, whom)| term > from.0 || (term == from.0 && whom == from.1));
        if !kept {
            return Err(Broken::SecondVote {
                node,
                from,
                to: after.vote,
            });
        }
    }
    if let Some(vote) = after.vote.filter(|&vote| before.vote != Some(vote)) {
        check_vote(before, vote, input)?;
    }
    for transmit in input.sent {
        if let Message::Ack { term, .. } = transmit.message {
            let promised = after.promise.is_some_and(|promise| {
                promise.to == transmit.to
                    && promise.term >= term
                    && promise.until >= input.now + after.follower_lease
            });
            if !promised {
                return Err(Broken::AckWithoutPromise {
                    node,
                    to: transmit.to,
                    term,
                    promise: after.promise,
                });
            }
        }
    }
    if let (Some(term), Some(_)) = (after.leading, after.quorum) {
        if after.voter && after.vote != Some((term, node)) {
            return Err(Broken::LeaderWithoutOwnVote {
                node,
                term,
                vote: after.vote,
            });
        }
    }
    Ok(())
}

/// I3 and I5 for a vote `vote` cast in this input.
fn check_vote(before: &SafetyState, vote: (Term, NodeId), input: &Input<'_>) -> Result<(), Broken> {
    let node = before.id;
    let (_, candidate) = vote;
    if let Some(promise) = before.promise {
        if promise.runs_at(input.now) && promise.to != candidate {
            return Err(Broken::VotedAgainstPromise {
                node,
                vote,
                promise,
            });
        }
    }
    if before
        .votes_for_nobody_until
        .is_some_and(|until| until > input.now)
    {
        return Err(Broken::VotedForNobodyYetVoted { node, vote });
    }
    if candidate != node && before.hold_until.is_some_and(|until| until > input.now) {
        return Err(Broken::VotedDuringHold { node, vote });
    }
    if let Some(back) = input.back_since {
        let after = input.now.saturating_duration_since(back);
        if after < before.follower_lease {
            return Err(Broken::VotedAfterRestart { node, vote, after });
        }
    }
    Ok(())
}

/// One member as [`check_leases`] sees it.
#[derive(Clone, Copy, Debug)]
pub enum Member<'a> {
    /// Running, with its safety core.
    Up(&'a SafetyState),
    /// Crashed and not restarted: it votes for nobody until it comes back,
    /// and then for nobody for a follower lease (I5).
    Down {
        /// Whether its vote counts.
        voter: bool,
    },
}

/// Checks I7 for every member that leads with a lease still running: `members`
/// are all members at the real instant `now`, and `real(index, instant)`
/// converts an instant of member `index`'s clock to real time (any ordered
/// representation, `now`'s too). A lease that has run out protects nothing,
/// even while its leader has not yet noticed.
///
/// ```
/// use std::time::Instant;
/// use bully_sim::invariants::{self, Member};
/// use bully_core::{Config, DurableState, Node, NodeId, Quorum};
/// let config = Config::default().with_quorum(Quorum::Majority);
/// let nodes: Vec<Node> = (1..=3)
///     .map(|id| Node::with_durable_state(NodeId(id), (1..=3).map(NodeId), config.clone(), DurableState::first_boot()))
///     .collect::<Result<_, _>>()?;
/// let states: Vec<_> = nodes.iter().map(Node::safety).collect();
/// let members: Vec<_> = states.iter().map(Member::Up).collect();
/// // Nobody leads: nothing to cover. Every clock is exact here.
/// assert_eq!(invariants::check_leases(&members, Instant::now(), |_, at: Instant| at), Ok(()));
/// # Ok::<(), bully_core::ConfigError>(())
/// ```
pub fn check_leases<T: Ord>(
    members: &[Member<'_>],
    now: T,
    real: impl Fn(usize, Instant) -> T,
) -> Result<(), Broken> {
    for (index, member) in members.iter().enumerate() {
        let Member::Up(leader) = member else {
            continue;
        };
        let (Some(_), Some(lease), Some(quorum)) =
            (leader.leading, leader.lease_until, leader.quorum)
        else {
            continue;
        };
        let end = real(index, lease);
        if end <= now {
            continue;
        }
        let covered = members
            .iter()
            .enumerate()
            .filter(|&(other, member)| match member {
                Member::Down { voter } => *voter,
                Member::Up(state) if other == index => state.voter,
                Member::Up(state) => {
                    let promised = state.promise.is_some_and(|promise| {
                        promise.to == leader.id && real(other, promise.until) >= end
                    });
                    let to_nobody = state
                        .votes_for_nobody_until
                        .is_some_and(|until| real(other, until) >= end);
                    state.voter && (promised || to_nobody)
                }
            })
            .count();
        if covered < quorum {
            return Err(Broken::LeaseNotCovered {
                leader: leader.id,
                covered,
                quorum,
            });
        }
    }
    Ok(())
}
