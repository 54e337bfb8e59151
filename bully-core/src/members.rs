//! The fixed member list and what the failure detector believes about each member.

use crate::config::ConfigError;
use crate::message::NodeId;

/// Members sorted by id (ascending), stored once, with per-member detector state.
///
/// Sorted storage is what makes every iteration deterministic: peers are always
/// visited in ascending id order.
#[derive(Clone, Debug)]
pub(crate) struct Members {
    ids: Vec<NodeId>,
    suspected: Vec<bool>,
    own: usize,
}

impl Members {
    pub(crate) fn new(
        own_id: NodeId,
        ids: impl IntoIterator<Item = NodeId>,
    ) -> Result<Members, ConfigError> {
        let mut ids: Vec<NodeId> = ids.into_iter().collect();
        if ids.is_empty() {
            return Err(ConfigError::EmptyMembership);
        }
        ids.sort_unstable();
        if let Some(pair) = ids.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(ConfigError::DuplicateMember(pair[0]));
        }
        let own = ids
            .binary_search(&own_id)
            .map_err(|_| ConfigError::MissingSelf(own_id))?;
        let suspected = vec![false; ids.len()];
        Ok(Members {
            ids,
            suspected,
            own,
        })
    }

    pub(crate) fn ids(&self) -> &[NodeId] {
        &self.ids
    }

    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    pub(crate) fn index_of(&self, id: NodeId) -> Option<usize> {
        self.ids.binary_search(&id).ok()
    }

    /// The members above this node, ascending.
    pub(crate) fn higher(&self) -> &[NodeId] {
        &self.ids[self.own + 1..]
    }

    pub(crate) fn is_suspected(&self, id: NodeId) -> bool {
        self.index_of(id).is_some_and(|index| self.suspected[index])
    }

    pub(crate) fn suspect(&mut self, id: NodeId) {
        if let Some(index) = self.index_of(id) {
            if index != self.own {
                self.suspected[index] = true;
            }
        }
    }

    pub(crate) fn clear_suspicion(&mut self, index: usize) {
        self.suspected[index] = false;
    }

    /// How many members rank above this node, not counting `leader`: the
    /// staggering rank of its leader timeout.
    pub(crate) fn rank_below(&self, leader: Option<NodeId>) -> usize {
        let above = self.ids.len() - 1 - self.own;
        match leader {
            Some(leader) if leader > self.ids[self.own] && self.index_of(leader).is_some() => {
                above - 1
            }
            _ => above,
        }
    }
}
