//! Errors a caller can get from a command (peer input never errors; it is counted).

use crate::message::NodeId;

/// A command named something the node cannot act on.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// The id is not a member of this node's cluster.
    #[error("node {0} is not a member")]
    UnknownMember(NodeId),
    /// The command names this node itself where only a peer makes sense.
    #[error("the command cannot name node {0} itself")]
    SelfReference(NodeId),
    /// The id is already a member.
    #[error("node {0} is already a member")]
    AlreadyMember(NodeId),
    /// The member named may never lead: an observer (a witness) does not stand.
    #[error("node {0} is an observer and never leads")]
    NotCandidate(NodeId),
    /// A hand-over to `to` would not make it leader: `by`, a live member
    /// above it, would win the election that follows (the highest live
    /// member leads). Hand over to `by`, or with no member named.
    #[error("node {by} is above node {to} and live: it would lead instead")]
    Outranked {
        /// The member the hand-over named.
        to: NodeId,
        /// The live member above it.
        by: NodeId,
    },
    /// A hand-over to a member that is not live as far as this leader
    /// knows (with a quorum, it acknowledged none of the recent heartbeat
    /// rounds; without one, it is suspected): it would not hear the
    /// resignation that names it, and the others would elect only after
    /// their timeouts. Hand over once it is back, or with no member named.
    #[error("node {0} is not live as far as the leader knows: it would not take over")]
    NotLive(NodeId),
    /// A hand-over to no member in particular, when no other member that
    /// may lead is live as far as this leader knows (a lone member, peers
    /// down, only observers besides it): the work would be left to nobody.
    #[error("no other member that may lead is live: nobody would take over")]
    NoSuccessor,
    /// The membership the command would leave is not one the configuration can
    /// run (a quorum it cannot meet, nobody who may stand).
    #[error("the membership would be invalid: {0}")]
    Membership(crate::config::ConfigError),
}
