//! What a node keeps across a restart to keep its promises: [`DurableState`],
//! read with [`Node::durable_state`](crate::Node::durable_state) and given back with
//! [`Node::with_durable_state`](crate::Node::with_durable_state) or [`Node::restore`](crate::Node::restore); and the first boot of a
//! new cluster, which is declared, never guessed from a missing state.

use crate::message::{NodeId, Term};

/// What a node must keep across a restart to keep its promises: see
/// [`Node::durable_state`](crate::Node::durable_state) and [`Node::with_durable_state`](crate::Node::with_durable_state).
///
/// [`DurableState::default()`] is what a member that lost its state has (a
/// missing or replaced state file): it may have voted, or promised a leader not
/// to vote against it, and forgotten. With a quorum such a member votes for
/// nobody, itself included, for a follower lease after its start. Only a
/// member of a cluster being created, that has never run, may vote at once;
/// its operator or program says so with [`DurableState::first_boot`], as
/// etcd's `--initial-cluster-state new` does.
///
/// ```
/// use bully_core::{Config, DurableState, Node, NodeId, Quorum};
/// let config = Config::default().with_quorum(Quorum::Majority);
/// let members = [NodeId(1), NodeId(2), NodeId(3)];
/// // The first start of a new cluster: declared, so it votes at once.
/// let new = Node::with_durable_state(NodeId(2), members, config.clone(), DurableState::first_boot())?;
/// assert!(new.durable_state().first_boot);
/// // A state file that went missing reads as the default: not a first boot.
/// let lost = Node::with_durable_state(NodeId(2), members, config, DurableState::default())?;
/// assert!(!lost.durable_state().first_boot);
/// # Ok::<(), bully_core::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct DurableState {
    /// The highest term seen or started.
    pub term: Term,
    /// With a quorum, the latest vote: `(term, candidate)`.
    pub vote: Option<(Term, NodeId)>,
    /// This member has never promised anything: declared by whoever creates
    /// the cluster ([`DurableState::first_boot`]), and false from the first
    /// vote or acknowledgement it sends on. With a quorum it lets the start
    /// vote at once instead of a follower lease later. Read as `false` when
    /// absent (`serde`), so a state written before this field existed is a
    /// restart.
    #[cfg_attr(feature = "serde", serde(default))]
    pub first_boot: bool,
}

impl DurableState {
    /// The state of a member of a cluster being created now, before its first
    /// start: it never voted and never acknowledged a leader, so with a quorum
    /// it votes as soon as it starts and a cold start agrees within a few
    /// message delays. State it only for a member that has truly never run in
    /// this cluster: a member that ran, lost its state and is declared new
    /// again may vote while a lease it backed still runs, and two members can
    /// then lead at once.
    ///
    /// docs/protocol.md: G12, the first boot is declared.
    pub const fn first_boot() -> DurableState {
        DurableState {
            term: Term(0),
            vote: None,
            first_boot: true,
        }
    }
}
