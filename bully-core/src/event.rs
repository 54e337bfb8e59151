//! What a node tells its application: events, the current leader, its role.

use core::fmt;

use crate::message::{NodeId, Term};

/// The leader a node has accepted, and the term of that leadership: whom it
/// follows, as [`Node::leader`](crate::Node::leader) and the drivers' leader
/// watches publish it, for routing requests and for display ("3 (term 2)").
///
/// It holds the same pair as a [`FencingToken`] but has another job: it is
/// not ordered, since "who leads" is read, not compared. To fence work, take
/// [`Leader::token`], which storage compares.
///
/// ```
/// use bully_core::{FencingToken, Leader, NodeId, Term};
/// let leader = Leader { id: NodeId(3), term: Term(2) };
/// assert_eq!(leader.to_string(), "3 (term 2)");
/// let token: FencingToken = leader.token();
/// assert!(token > FencingToken { term: Term(1), leader: NodeId(7) }, "a later term wins");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Leader {
    /// The coordinator.
    pub id: NodeId,
    /// The term it was elected in.
    pub term: Term,
}

impl Leader {
    /// The fencing token of this leadership, to hand to a storage layer.
    pub fn token(self) -> FencingToken {
        FencingToken {
            term: self.term,
            leader: self.id,
        }
    }
}

impl fmt::Display for Leader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (term {})", self.id, self.term)
    }
}

/// `(term, leader id)`: totally ordered, unique per leadership: the value a
/// storage layer compares to refuse a deposed leader's writes, and what the
/// node compares to refuse stale leaders ([`Node::highest_token`](crate::Node::highest_token)).
/// A [`Permit`](crate::Permit) carries one, and a
/// [`FencingGuard`](crate::FencingGuard) checks it. For whom a node follows,
/// read [`Leader`] instead.
///
/// Terms order leaderships in time; the id breaks ties between two leaders of one
/// term, which can only happen without a quorum when they were out of contact (a
/// partition, lost messages, or a restart with a stale term). The higher token wins
/// everywhere: a node never acts on a token below the highest it has accepted, so a
/// storage layer that does the same rejects a deposed leader's writes.
///
/// ```
/// use bully_core::{FencingToken, NodeId, Term};
/// let old = FencingToken { term: Term(3), leader: NodeId(9) };
/// let new = FencingToken { term: Term(4), leader: NodeId(2) };
/// assert!(new > old, "a later term wins whatever the ids");
/// let tie = FencingToken { term: Term(4), leader: NodeId(5) };
/// assert!(tie > new, "within a term the higher id wins");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FencingToken {
    /// The leadership's term (compared first).
    pub term: Term,
    /// The leader's id (breaks ties).
    pub leader: NodeId,
}

impl fmt::Display for FencingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {})", self.term, self.leader)
    }
}

/// What a node is doing in the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Role {
    /// Following a leader, or waiting to hear of one.
    Follower,
    /// Running an election: waiting for answers, or for the winner's announcement.
    Candidate,
    /// The coordinator.
    Leader,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Follower => "follower",
            Role::Candidate => "candidate",
            Role::Leader => "leader",
        })
    }
}

/// An edge in a node's view of the leadership: drained with
/// [`Node::poll_event`](crate::Node::poll_event).
///
/// Events are edge-triggered: each is emitted once, when the change happens. Within
/// one input the order is fixed:
///
/// 1. `LeaseExpired` (with a quorum: this node's guarantee of exclusive
///    leadership ran out before a quorum renewed it),
/// 2. `SteppedDown` (this node was leader and no longer is),
/// 3. `LeaderLost` (the accepted leader is gone),
/// 4. `ElectionStarted`,
/// 5. `BecameLeader`,
/// 6. `LeaderElected` (a new fencing token was accepted, this node's own included).
///
/// Drain them with [`Node::poll_event`](crate::Node::poll_event) after the
/// transmits. A lone member elects itself at once:
///
/// ```
/// use std::time::Instant;
/// use bully_core::{Config, Event, Node, NodeId, Term};
/// let mut node = Node::new(NodeId(1), [NodeId(1)], Config::default())?;
/// node.start(Instant::now());
/// let events: Vec<Event> = std::iter::from_fn(|| node.poll_event()).collect();
/// assert!(events.contains(&Event::BecameLeader { term: node.term() }));
/// assert!(events.contains(&Event::LeaderElected { leader: NodeId(1), term: node.term() }));
/// # let _ = Term(0);
/// # Ok::<(), bully_core::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Event {
    /// This node started (or joined) an election in `term`.
    ElectionStarted {
        /// The election's term.
        term: Term,
    },
    /// A leadership was accepted: a new leader, or the same leader in a later term.
    /// Emitted on every node, the leader itself included.
    LeaderElected {
        /// The coordinator.
        leader: NodeId,
        /// The term of its leadership; `(term, leader)` is the fencing token.
        term: Term,
    },
    /// The accepted leader is no longer trusted: its heartbeats stopped, or a newer
    /// election began.
    LeaderLost {
        /// The leader that was lost.
        leader: NodeId,
        /// The term of the lost leadership.
        term: Term,
    },
    /// This node became the coordinator in `term`.
    BecameLeader {
        /// The term of the new leadership.
        term: Term,
    },
    /// With a quorum: this node's lease (see
    /// [`Node::lease_until`](crate::Node::lease_until)) ran out before a
    /// quorum acknowledged a newer heartbeat round, so it can no longer be sure that
    /// nobody else leads. `SteppedDown` follows in the same input. Work tied to the
    /// leadership should have stopped before this instant, not at it.
    LeaseExpired {
        /// The term of the leadership whose lease ran out.
        term: Term,
    },
    /// This node was the coordinator and no longer is.
    SteppedDown {
        /// The term of the leadership that ended.
        term: Term,
    },
}
