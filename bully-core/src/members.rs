//! The member list and what this node knows about each member: whether the
//! failure detector suspects it, whether it may stand and vote, and what it has
//! acknowledged of this node's claim and heartbeats.

use crate::config::{Config, ConfigError};
use crate::message::NodeId;

/// Members sorted by id (ascending), stored once, with per-member state in
/// vectors of the same order.
///
/// Sorted storage is what makes every iteration deterministic: peers are always
/// visited in ascending id order.
#[derive(Clone, Debug)]
pub(crate) struct Members {
    ids: Vec<NodeId>,
    suspected: Vec<bool>,
    /// Resigned (`Resign`): not asked in elections until heard from again, but
    /// still told the result.
    resigned: Vec<bool>,
    /// May stand in elections (not an observer).
    candidate: Vec<bool>,
    /// Counts toward a quorum.
    voter: Vec<bool>,
    /// Acknowledged this node's current claim.
    claim_acked: Vec<bool>,
    /// The highest heartbeat round of this node's current leadership it acknowledged.
    acked_round: Vec<u64>,
    own: usize,
}

impl Members {
    pub(crate) fn new(
        own_id: NodeId,
        ids: impl IntoIterator<Item = NodeId>,
        config: &Config,
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
        config.validate_for(&ids)?;
        let n = ids.len();
        let mut members = Members {
            ids,
            suspected: vec![false; n],
            resigned: vec![false; n],
            candidate: vec![true; n],
            voter: vec![true; n],
            claim_acked: vec![false; n],
            acked_round: vec![0; n],
            own,
        };
        members.apply_roles(config);
        Ok(members)
    }

    fn apply_roles(&mut self, config: &Config) {
        for (index, &id) in self.ids.iter().enumerate() {
            let observer = config.is_observer(id);
            self.candidate[index] = !observer;
            self.voter[index] = !observer || config.observers_vote();
        }
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

    /// Whether `id` may stand and be asked in elections: a candidate the failure
    /// detector does not suspect.
    pub(crate) fn is_live_candidate(&self, id: NodeId) -> bool {
        self.index_of(id).is_some_and(|index| {
            self.candidate[index] && !self.suspected[index] && !self.resigned[index]
        })
    }

    pub(crate) fn is_candidate(&self, id: NodeId) -> bool {
        self.index_of(id).is_some_and(|index| self.candidate[index])
    }

    pub(crate) fn is_voter(&self, id: NodeId) -> bool {
        self.index_of(id).is_some_and(|index| self.voter[index])
    }

    pub(crate) fn voters(&self) -> usize {
        self.voter.iter().filter(|&&voter| voter).count()
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

    /// Heard from the member at `index`: it is alive, and back in the elections.
    pub(crate) fn clear_suspicion(&mut self, index: usize) {
        self.suspected[index] = false;
        self.resigned[index] = false;
    }

    pub(crate) fn mark_resigned(&mut self, id: NodeId) {
        if let Some(index) = self.index_of(id) {
            self.resigned[index] = true;
        }
    }

    /// How many candidates rank above this node, not counting `leader`: the
    /// staggering rank of its leader timeout.
    pub(crate) fn rank_below(&self, leader: Option<NodeId>) -> usize {
        self.ids[self.own + 1..]
            .iter()
            .zip(&self.candidate[self.own + 1..])
            .filter(|&(&id, &candidate)| candidate && Some(id) != leader)
            .count()
    }

    // ----- quorum bookkeeping -----

    /// Forgets every acknowledgement (a new claim or leadership).
    pub(crate) fn reset_acks(&mut self) {
        self.claim_acked.iter_mut().for_each(|acked| *acked = false);
        self.acked_round.iter_mut().for_each(|round| *round = 0);
    }

    /// Records `id`'s acknowledgement of the claim; whether it is a new vote.
    pub(crate) fn ack_claim(&mut self, id: NodeId) -> bool {
        match self.index_of(id) {
            Some(index) if self.voter[index] && !self.claim_acked[index] => {
                self.claim_acked[index] = true;
                true
            }
            _ => false,
        }
    }

    /// Records `id`'s acknowledgement of heartbeat `round`; returns the round it
    /// had acknowledged before, if this one is newer and `id` votes.
    pub(crate) fn ack_round(&mut self, id: NodeId, round: u64) -> Option<u64> {
        let index = self.index_of(id)?;
        let before = self.acked_round[index];
        (self.voter[index] && round > before).then(|| {
            self.acked_round[index] = round;
            before
        })
    }

    // ----- membership changes -----

    /// Adds a member; `false` if it already is one.
    pub(crate) fn insert(&mut self, id: NodeId, config: &Config) -> bool {
        let Err(index) = self.ids.binary_search(&id) else {
            return false;
        };
        self.ids.insert(index, id);
        self.suspected.insert(index, false);
        self.resigned.insert(index, false);
        self.candidate.insert(index, true);
        self.voter.insert(index, true);
        self.claim_acked.insert(index, false);
        self.acked_round.insert(index, 0);
        if index <= self.own {
            self.own += 1;
        }
        self.apply_roles(config);
        true
    }

    /// Removes a member other than this node; `false` if it is not one.
    pub(crate) fn remove(&mut self, id: NodeId) -> bool {
        let Ok(index) = self.ids.binary_search(&id) else {
            return false;
        };
        if index == self.own {
            return false;
        }
        self.ids.remove(index);
        self.suspected.remove(index);
        self.resigned.remove(index);
        self.candidate.remove(index);
        self.voter.remove(index);
        self.claim_acked.remove(index);
        self.acked_round.remove(index);
        if index < self.own {
            self.own -= 1;
        }
        true
    }
}
