//! The ring algorithm's state inside a node (the lecture notes "Election
//! Algorithm in Distributed Systems"): the token in hand, awaiting its
//! successor's acknowledgement, and the strongest token passed on. The rules
//! that move the token are `ring.rs`'s.

use crate::message::{Message, NodeId, Term};

/// A token this node passed on and whose acknowledgement it awaits.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct PendingHop {
    to: NodeId,
    message: Message,
}

/// The ring's state inside a [`Node`](super::Node).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct RingState {
    /// The token passed on and not yet acknowledged.
    hop: Option<PendingHop>,
    /// The strongest `(term, initiator)` token passed on.
    best: Option<(Term, NodeId)>,
}

impl RingState {
    /// Whether the token in hand was last passed to `member`.
    pub(super) fn handed_to(&self, member: NodeId) -> bool {
        self.hop.as_ref().is_some_and(|hop| hop.to == member)
    }

    /// Passes `message` on to `to`, awaiting its acknowledgement.
    pub(super) fn hand_to(&mut self, to: NodeId, message: Message) {
        self.hop = Some(PendingHop { to, message });
    }

    /// `from` acknowledged the hop of `term`: it is done with. Whether it was
    /// the hop in hand.
    pub(super) fn acknowledge(&mut self, from: NodeId, term: Term) -> bool {
        let acknowledged = self
            .hop
            .as_ref()
            .is_some_and(|hop| hop.to == from && hop.message.term() == term);
        if acknowledged {
            self.hop = None;
        }
        acknowledged
    }

    /// The hop in hand, `(successor, token)`, which its successor did not
    /// acknowledge in time.
    pub(super) fn take_hop(&mut self) -> Option<(NodeId, Message)> {
        self.hop.take().map(|hop| (hop.to, hop.message))
    }

    /// Notes the token of `(term, initiator)` passed on: the strongest so far.
    pub(super) fn note_pass(&mut self, term: Term, initiator: NodeId) {
        self.best = Some((term, initiator));
    }

    /// Whether a token of `(term, initiator)` is weaker than one already
    /// passed on: a concurrent election that stops here.
    pub(super) fn is_weaker(&self, term: Term, initiator: NodeId) -> bool {
        self.best.is_some_and(|best| (term, initiator) < best)
    }

    /// Drops the token in hand: an election of this node's own starts over.
    pub(super) fn drop_hop(&mut self) {
        self.hop = None;
    }

    /// `member` left the cluster: a token it started will never come back to it,
    /// so the hop in hand is dropped (this node's own timeouts start over), and
    /// otherwise it leaves the token's active list, so that nobody concludes it
    /// leads.
    pub(super) fn forget(&mut self, member: NodeId) {
        let Some(hop) = self.hop.as_mut() else {
            return;
        };
        match &mut hop.message {
            Message::RingElection {
                initiator, active, ..
            } if *initiator != member => active.retain(|&id| id != member),
            Message::RingCoordinator {
                initiator,
                leader,
                active,
                ..
            } if *initiator != member && *leader != member => active.retain(|&id| id != member),
            _ => self.hop = None,
        }
    }
}
