//! [`LastHeard`]: when each member was last heard from, for a status page.

use std::collections::BTreeMap;
use std::time::Duration;

use bully_core::Instant;
use bully_core::Node;
use bully_core::NodeId;

/// When each member last sent this node a message. Only members are kept
/// (anyone can send a datagram, so strangers would make the map unbounded).
#[derive(Clone, Debug, Default)]
pub struct LastHeard {
    heard: BTreeMap<NodeId, Instant>,
}

impl LastHeard {
    /// Nobody heard yet.
    pub fn new() -> LastHeard {
        LastHeard::default()
    }

    /// `from` sent a message at `now`: recorded if it is one of `node`'s members.
    pub fn record(&mut self, node: &Node, from: NodeId, now: Instant) {
        if node.members().binary_search(&from).is_ok() {
            self.heard.insert(from, now);
        }
    }

    /// How long before `now` each member was last heard (members never heard are
    /// absent).
    pub fn ages(&self, now: Instant) -> BTreeMap<NodeId, Duration> {
        self.heard
            .iter()
            .map(|(&member, &at)| (member, now.saturating_duration_since(at)))
            .collect()
    }
}
