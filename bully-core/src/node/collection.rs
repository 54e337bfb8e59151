//! Modified Bully's state inside a node (Soundarabai et al., "Improved Bully
//! Election Algorithm for Distributed Systems"): whom a collecting step asks,
//! and the highest member that answered it. The rules are `modified.rs`'s.

use crate::message::NodeId;

/// Whom a collecting step asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ask {
    /// The initiator: every live member, raising their flags.
    Everyone,
    /// The chosen member's cross-check: only the live members above it.
    Higher,
}

/// Modified Bully's state inside a [`Node`](super::Node): the collection of answers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct Collection {
    /// The highest member that answered the running collection.
    best_responder: Option<NodeId>,
}

impl Collection {
    /// A collecting step opens: nobody has answered it yet.
    pub(super) fn open(&mut self) {
        self.best_responder = None;
    }

    /// `from` answered the running collection.
    pub(super) fn answered_by(&mut self, from: NodeId) {
        self.best_responder = self.best_responder.max(Some(from));
    }

    /// The collection closes: the highest member that answered, if any.
    pub(super) fn close(&mut self) -> Option<NodeId> {
        self.best_responder.take()
    }

    /// `member` left: it will not be told to take over. If nobody else above
    /// answered, this node wins, and the chosen member's cross-check
    /// (Soundarabai et al.) hands the leadership on if needed.
    pub(super) fn forget(&mut self, member: NodeId) {
        if self.best_responder == Some(member) {
            self.best_responder = None;
        }
    }
}
