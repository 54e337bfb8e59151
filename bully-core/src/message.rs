//! What nodes say to each other: ids, terms, messages and the transmits that carry them.

use core::fmt;

/// A member's identity. A higher id is a stronger candidate: the "bully".
///
/// ```
/// use bully_core::NodeId;
/// assert!(NodeId(7) > NodeId(6));
/// assert_eq!(NodeId(7).to_string(), "7");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(transparent)
)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct NodeId(pub u64);

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl From<u64> for NodeId {
    fn from(id: u64) -> Self {
        NodeId(id)
    }
}

/// An election epoch. A node's term never decreases; every election and every
/// coordinator announcement carries one.
///
/// Together with the leader's id it forms the [`FencingToken`](crate::FencingToken).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(transparent)
)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Term(pub u64);

impl Term {
    /// The term after this one. Saturates rather than wrapping, so a term never
    /// decreases even at the end of the range (which `Config::max_term_lead` keeps
    /// peers from pushing a node towards).
    #[must_use]
    pub fn next(self) -> Term {
        Term(self.0.saturating_add(1))
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A protocol message between members.
///
/// Which variants a node sends depends on [`Algorithm`](crate::Algorithm); every node
/// accepts every variant and counts the ones it cannot use as dropped.
///
/// A transport carries them between [`Node::poll_transmit`](crate::Node::poll_transmit)
/// on one member and [`Node::handle_message`](crate::Node::handle_message) on
/// another (with the `wire` feature, `bully_core::wire::Codec` turns them into
/// authenticated frames and back). Process 4 notices the coordinator is down and
/// asks those above it:
///
/// ```
/// use std::time::Instant;
/// use bully_core::{Config, Message, MessageKind, Node, NodeId, Term};
/// let members = (1..=7).map(NodeId);
/// let mut four = Node::new(NodeId(4), members, Config::default())?;
/// four.start_election(Instant::now());
/// let asked: Vec<NodeId> = std::iter::from_fn(|| four.poll_transmit())
///     .filter(|transmit| transmit.message.kind() == MessageKind::Election)
///     .map(|transmit| transmit.to)
///     .collect();
/// assert_eq!(asked, [NodeId(5), NodeId(6), NodeId(7)]);
/// // 5 is alive: its Answer tells 4 to wait for a coordinator.
/// let answer = Message::Answer { term: four.term() };
/// four.handle_message(Instant::now(), NodeId(5), answer);
/// assert_eq!(four.stats().received[MessageKind::Answer], 1);
/// # let _ = Term(0);
/// # Ok::<(), bully_core::ConfigError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[non_exhaustive]
pub enum Message {
    /// "I am holding an election in `term`": sent to higher members (classic) or to
    /// everyone (modified, where it also raises the receivers' election flag).
    Election {
        /// The election's term.
        term: Term,
    },
    /// "I am alive and higher than you" ("OK" in the tutorial and Wikipedia), in reply to an
    /// [`Message::Election`] of the same term. Also the per-hop acknowledgement of
    /// the ring algorithm.
    Answer {
        /// The term of the election being answered.
        term: Term,
    },
    /// "I am the coordinator for `term`" ("Victory"), sent by the winner. With a
    /// quorum (`Config::with_quorum`) it is a claim: "vote for my leadership of
    /// `term`", answered by an [`Message::Ack`] that names the same `round`.
    Coordinator {
        /// The term of the new leadership.
        term: Term,
        /// With a quorum, this request's number among the sender's requests
        /// for acknowledgement in `term`: its claim's asks first, from 0, then
        /// its heartbeat rounds. A vote counts only for the request it
        /// answers, so a claim asked again never dates its lease from a later
        /// ask than the vote promised from. 0 without a quorum.
        round: u64,
    },
    /// The leader's periodic "still here", the failure detector's input.
    Heartbeat {
        /// The term of the sender's leadership.
        term: Term,
        /// The round's number within the leadership, which an [`Message::Ack`]
        /// names so the leader can date its lease from the round's send time.
        /// Without a quorum the rounds count from 1; with one they continue the
        /// numbers of the claim's asks (see [`Message::Coordinator`]), so they
        /// count from 1 after a claim asked once.
        round: u64,
    },
    /// With a quorum (`Config::with_quorum`): "I acknowledge your request
    /// `round` of `term`": a vote for the claim, if `round` is one of its asks
    /// ([`Message::Coordinator`]), else the heartbeat round. Either way the
    /// sender promises, from the moment it received that request, not to vote
    /// against this leadership for a follower lease.
    Ack {
        /// The term of the leadership acknowledged.
        term: Term,
        /// The number of the request acknowledged: a claim's ask or a
        /// heartbeat round.
        round: u64,
    },
    /// "I am stepping down from the leadership of `term`" (a graceful shutdown,
    /// [`Node::step_down`](crate::Node::step_down), or, with a quorum, a lease
    /// that ran out): the followers elect after the staggered part of their
    /// leader timeout instead of the whole of it, the highest first.
    Resign {
        /// The term of the leadership being given up.
        term: Term,
        /// With a quorum: the highest member whose acknowledgements were still
        /// reaching the resigning leader, which elects at once instead of after
        /// its rank's stagger. When a leader is cut off from all but a few
        /// members, the members above those few stopped acknowledging with it
        /// and are likely cut off too; waiting for each of them to find that
        /// out first is what made a low hub late. `None` without a quorum,
        /// under the ring, from a leader that yields to another member's claim
        /// (which elects already), or when no member acknowledged its rounds.
        successor: Option<NodeId>,
    },
    /// Modified Bully: the initiator tells the highest member that answered to take
    /// over ("ElectedAsCoordinator" in the paper's log).
    Takeover {
        /// The election's term.
        term: Term,
    },
    /// Ring: the election token, collecting the ids of live members as it passes.
    RingElection {
        /// The election's term.
        term: Term,
        /// The member that started this pass.
        initiator: NodeId,
        /// Live members seen so far, in ring order, the initiator first.
        active: Vec<NodeId>,
    },
    /// Ring: the second pass, telling every live member the coordinator and the
    /// active list.
    RingCoordinator {
        /// The term of the new leadership.
        term: Term,
        /// The new coordinator: the highest id in `active`.
        leader: NodeId,
        /// The member that started the election (the pass ends before it).
        initiator: NodeId,
        /// Live members found by the election pass.
        active: Vec<NodeId>,
    },
    /// "Can I stand?", sent to every member before this node starts an election
    /// (a pre-vote, which moves no term): with a quorum, always; without one, after
    /// an election of its own came to nothing. The replies tell it whether it
    /// reaches a quorum over links that work both ways, and whether the others
    /// have lost their leader too.
    Probe {
        /// The sender's term (not a new one: a probe raises no term anywhere).
        term: Term,
    },
    /// The reply to a [`Message::Probe`].
    ProbeReply {
        /// The later of the probe's term and the replier's.
        term: Term,
        /// The leader the replier heard within the last leader timeout (itself,
        /// if it leads), if any: a member that still has a leader backs only an
        /// election that would replace it anyway (a higher member's, under
        /// `Preemption::Always`).
        leader: Option<NodeId>,
        /// With a quorum: the replier's own latest probe found that it does not
        /// reach a quorum (within a leader timeout, or until its next probe if
        /// it has no leader, unless it heard a member it did not reach), so it
        /// will not stand: the prober's election does not ask it.
        cut_off: bool,
    },
}

impl Message {
    /// The term this message carries.
    pub fn term(&self) -> Term {
        match *self {
            Message::Election { term }
            | Message::Answer { term }
            | Message::Coordinator { term, .. }
            | Message::Heartbeat { term, .. }
            | Message::Ack { term, .. }
            | Message::Resign { term, .. }
            | Message::Takeover { term }
            | Message::RingElection { term, .. }
            | Message::RingCoordinator { term, .. }
            | Message::Probe { term }
            | Message::ProbeReply { term, .. } => term,
        }
    }

    /// The message's kind, for counting and display.
    pub fn kind(&self) -> MessageKind {
        match self {
            Message::Election { .. } => MessageKind::Election,
            Message::Answer { .. } => MessageKind::Answer,
            Message::Coordinator { .. } => MessageKind::Coordinator,
            Message::Heartbeat { .. } => MessageKind::Heartbeat,
            Message::Ack { .. } => MessageKind::Ack,
            Message::Resign { .. } => MessageKind::Resign,
            Message::Takeover { .. } => MessageKind::Takeover,
            Message::RingElection { .. } => MessageKind::RingElection,
            Message::RingCoordinator { .. } => MessageKind::RingCoordinator,
            Message::Probe { .. } => MessageKind::Probe,
            Message::ProbeReply { .. } => MessageKind::ProbeReply,
        }
    }
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Message::RingElection {
                term,
                initiator,
                active,
            } => {
                write!(f, "RingElection(t{term}, from {initiator}, {active:?})")
            }
            Message::RingCoordinator {
                term,
                leader,
                active,
                ..
            } => {
                write!(f, "RingCoordinator(t{term}, leader {leader}, {active:?})")
            }
            other => write!(f, "{}(t{})", other.kind(), other.term()),
        }
    }
}

/// The kind of a [`Message`], without its payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum MessageKind {
    /// [`Message::Election`].
    Election,
    /// [`Message::Answer`].
    Answer,
    /// [`Message::Coordinator`].
    Coordinator,
    /// [`Message::Heartbeat`].
    Heartbeat,
    /// [`Message::Ack`].
    Ack,
    /// [`Message::Resign`].
    Resign,
    /// [`Message::Takeover`].
    Takeover,
    /// [`Message::RingElection`].
    RingElection,
    /// [`Message::RingCoordinator`].
    RingCoordinator,
    /// [`Message::Probe`].
    Probe,
    /// [`Message::ProbeReply`].
    ProbeReply,
}

impl MessageKind {
    /// Every kind, in a fixed order (the order of the counters in [`crate::MessageCounts`]).
    pub const ALL: [MessageKind; 11] = [
        MessageKind::Election,
        MessageKind::Answer,
        MessageKind::Coordinator,
        MessageKind::Heartbeat,
        MessageKind::Ack,
        MessageKind::Resign,
        MessageKind::Takeover,
        MessageKind::RingElection,
        MessageKind::RingCoordinator,
        MessageKind::Probe,
        MessageKind::ProbeReply,
    ];

    /// The kind's name as the sources write it.
    pub fn name(self) -> &'static str {
        match self {
            MessageKind::Election => "Election",
            MessageKind::Answer => "Answer",
            MessageKind::Coordinator => "Coordinator",
            MessageKind::Heartbeat => "Heartbeat",
            MessageKind::Ack => "Ack",
            MessageKind::Resign => "Resign",
            MessageKind::Takeover => "Takeover",
            MessageKind::RingElection => "RingElection",
            MessageKind::RingCoordinator => "RingCoordinator",
            MessageKind::Probe => "Probe",
            MessageKind::ProbeReply => "ProbeReply",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for MessageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A message the node wants sent: drained with [`Node::poll_transmit`](crate::Node::poll_transmit).
///
/// The node never sends to itself nor to a non-member, and queues at most one
/// message per member for one input. A driver hands each to its transport in
/// the order drained:
///
/// ```
/// use std::time::Instant;
/// use bully_core::{Config, Message, Node, NodeId, Transmit};
/// let mut node = Node::new(NodeId(3), [NodeId(1), NodeId(2), NodeId(3)], Config::default())?;
/// node.start_election(Instant::now());
/// // The highest member announces itself to every other member.
/// let sent: Vec<Transmit> = std::iter::from_fn(|| node.poll_transmit()).collect();
/// assert!(sent.iter().all(|t| matches!(t.message, Message::Coordinator { .. })));
/// assert_eq!(sent.iter().map(|t| t.to).collect::<Vec<_>>(), [NodeId(1), NodeId(2)]);
/// # Ok::<(), bully_core::ConfigError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Transmit {
    /// The member to deliver it to. Never the sender itself, always a member.
    pub to: NodeId,
    /// What to deliver.
    pub message: Message,
}
