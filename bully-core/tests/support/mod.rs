//! What bully-core's tests share: a member built as a new cluster's first boot.
//! (The simulator's tests, in bully-sim, have a support module of their own.)

use bully_core::{Config, DurableState, Node, NodeId};

/// Member `id` of a cluster created now, declared so
/// ([`bully_core::DurableState::first_boot`]): it has promised nothing, so
/// with a quorum it votes as soon as it is asked. A member built with
/// `Node::new` may have forgotten a promise, and votes for nobody for a
/// follower lease from its first input.
pub(crate) fn first_boot(
    id: u64,
    members: impl IntoIterator<Item = NodeId>,
    config: Config,
) -> Node {
    Node::with_durable_state(NodeId(id), members, config, DurableState::first_boot())
        .expect("a valid test configuration")
}
