//! The member list and what this node knows about each member: whether the
//! failure detector suspects it, whether it resigned, whether it may stand and
//! vote, and what it has acknowledged of this node's claim and heartbeats.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::config::{Config, ConfigError};
use crate::message::NodeId;

/// A validated member list: sorted, without repeats, cheap to clone.
///
/// [`Node::new`](crate::Node::new) builds one from any list of ids; build one
/// yourself to share it between many nodes of one process (a simulation of
/// 100,000 members holds the list once, not 100,000 times).
///
/// ```
/// use bully_core::{Membership, NodeId};
/// let members = Membership::new([NodeId(3), NodeId(1), NodeId(2)]).unwrap();
/// assert_eq!(members.ids(), [NodeId(1), NodeId(2), NodeId(3)]);
/// assert!(Membership::new([NodeId(1), NodeId(1)]).is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Membership {
    ids: Arc<[NodeId]>,
}

impl Membership {
    /// Sorts and checks `ids`: not empty, no id twice.
    pub fn new(ids: impl IntoIterator<Item = NodeId>) -> Result<Membership, ConfigError> {
        let mut ids: Vec<NodeId> = ids.into_iter().collect();
        if ids.is_empty() {
            return Err(ConfigError::EmptyMembership);
        }
        ids.sort_unstable();
        if let Some(pair) = ids.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(ConfigError::DuplicateMember(pair[0]));
        }
        Ok(Membership { ids: ids.into() })
    }

    /// The members, ascending.
    pub fn ids(&self) -> &[NodeId] {
        &self.ids
    }

    /// How many members.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Always `false`: a membership has at least one member.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// This node's view of the membership. The list is shared; everything known
/// about individual members is sparse, so a member costs memory only while it is
/// suspected, resigned, or acknowledging this node's claim or leadership.
///
/// Sorted storage is what makes every iteration deterministic: peers are always
/// visited in ascending id order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Members {
    list: Membership,
    own: usize,
    suspected: BTreeSet<NodeId>,
    /// Resigned (`Resign`): not asked in elections until heard from again, but
    /// still told the result.
    resigned: BTreeSet<NodeId>,
    /// Observers, from the configuration: never candidates; voters only if
    /// observers vote.
    observers: Arc<[NodeId]>,
    observers_vote: bool,
    /// This node abstains for now (`Node::abstain_until`): like an observer, it
    /// neither stands nor answers, and it still votes.
    own_abstains: bool,
    /// The highest request (a claim's ask or a heartbeat round) of this node's
    /// current claim and leadership each member acknowledged.
    acked_round: BTreeMap<NodeId, u64>,
}

impl Members {
    pub(crate) fn new(
        own_id: NodeId,
        list: Membership,
        config: &Config,
    ) -> Result<Members, ConfigError> {
        let own = list
            .ids
            .binary_search(&own_id)
            .map_err(|_| ConfigError::MissingSelf(own_id))?;
        config.validate_for(&list.ids)?;
        Ok(Members {
            list,
            own,
            suspected: BTreeSet::new(),
            resigned: BTreeSet::new(),
            observers: config.observers().into(),
            observers_vote: config.observers_vote(),
            own_abstains: false,
            acked_round: BTreeMap::new(),
        })
    }

    pub(crate) fn ids(&self) -> &[NodeId] {
        &self.list.ids
    }

    pub(crate) fn membership(&self) -> &Membership {
        &self.list
    }

    pub(crate) fn len(&self) -> usize {
        self.list.ids.len()
    }

    pub(crate) fn index_of(&self, id: NodeId) -> Option<usize> {
        self.list.ids.binary_search(&id).ok()
    }

    fn is_observer(&self, id: NodeId) -> bool {
        !self.observers.is_empty() && self.observers.binary_search(&id).is_ok()
    }

    /// The members above this node, ascending.
    pub(crate) fn higher(&self) -> &[NodeId] {
        &self.list.ids[self.own + 1..]
    }

    /// Whether `id` may stand and be asked in elections: a candidate the failure
    /// detector does not suspect and that has not resigned.
    ///
    /// `id` is a member: every caller reads it from the member list, so the
    /// membership is not searched again (the check runs once per member asked in
    /// an election).
    pub(crate) fn is_live_candidate(&self, id: NodeId) -> bool {
        debug_assert!(self.index_of(id).is_some(), "{id} is a member");
        !self.is_observer(id) && !self.suspected.contains(&id) && !self.resigned.contains(&id)
    }

    /// Whether `id` may stand: a member that is no observer and, for this node
    /// itself, does not abstain for now.
    pub(crate) fn is_candidate(&self, id: NodeId) -> bool {
        self.is_member(id)
            && !self.is_observer(id)
            && !(self.own_abstains && self.list.ids[self.own] == id)
    }

    /// This node abstains from standing (`true`) or may stand again (`false`).
    pub(crate) fn set_own_abstention(&mut self, abstains: bool) {
        self.own_abstains = abstains;
    }

    pub(crate) fn is_voter(&self, id: NodeId) -> bool {
        self.is_member(id) && (self.observers_vote || !self.is_observer(id))
    }

    /// Whether `id` is a member: at once for this node's own id (which the
    /// protocol asks about on most inputs), by binary search for the others.
    fn is_member(&self, id: NodeId) -> bool {
        self.list.ids[self.own] == id || self.index_of(id).is_some()
    }

    pub(crate) fn voters(&self) -> usize {
        if self.observers_vote {
            return self.len();
        }
        let observers = self
            .observers
            .iter()
            .filter(|&&id| self.index_of(id).is_some())
            .count();
        self.len() - observers
    }

    pub(crate) fn is_suspected(&self, id: NodeId) -> bool {
        self.suspected.contains(&id)
    }

    pub(crate) fn suspect(&mut self, id: NodeId) {
        if self.index_of(id).is_some_and(|index| index != self.own) {
            self.suspected.insert(id);
        }
    }

    /// Heard from `id`: it is alive, and back in the elections.
    pub(crate) fn clear_suspicion(&mut self, id: NodeId) {
        if !self.suspected.is_empty() {
            self.suspected.remove(&id);
        }
        if !self.resigned.is_empty() {
            self.resigned.remove(&id);
        }
    }

    pub(crate) fn mark_resigned(&mut self, id: NodeId) {
        if self.index_of(id).is_some() {
            self.resigned.insert(id);
        }
    }

    /// How many candidates rank above this node, not counting `leader`: the
    /// staggering rank of its leader timeout.
    pub(crate) fn rank_below(&self, leader: Option<NodeId>) -> usize {
        let above = self.higher();
        let mut rank = above.len();
        // Read on every heartbeat a follower hears: most clusters have no
        // observers, and skip the search for them.
        if !self.observers.is_empty() {
            rank -= self
                .observers
                .iter()
                .filter(|&&id| above.binary_search(&id).is_ok())
                .count();
        }
        if let Some(leader) = leader {
            if above.binary_search(&leader).is_ok() && !self.is_observer(leader) {
                rank -= 1;
            }
        }
        rank
    }

    // ----- quorum bookkeeping -----

    /// Forgets every acknowledgement (a new claim or leadership).
    pub(crate) fn reset_acks(&mut self) {
        self.acked_round.clear();
    }

    /// Records `id`'s acknowledgement of request `round`; if it is newer than
    /// any `id` acknowledged before and `id` votes, returns the first request
    /// it newly credits: every request from there to `round` had not been
    /// credited to `id` yet (an acknowledgement of a later request promises
    /// from a later instant, so it backs every earlier one too).
    pub(crate) fn ack_round(&mut self, id: NodeId, round: u64) -> Option<u64> {
        if !self.is_voter(id) {
            return None;
        }
        match self.acked_round.get_mut(&id) {
            None => {
                self.acked_round.insert(id, round);
                Some(0)
            }
            Some(acked) if round > *acked => {
                let from = *acked + 1;
                *acked = round;
                Some(from)
            }
            Some(_) => None,
        }
    }

    /// The members that acknowledged a request of this node's current claim or
    /// leadership, ascending.
    pub(crate) fn acknowledging(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.acked_round.keys().copied()
    }

    /// The highest candidate but `own` that acknowledged request `due` of the
    /// current claim and leadership, or a later one: who a resignation names
    /// to elect first (docs/protocol.md, R21).
    pub(crate) fn highest_candidate_acknowledging(&self, own: NodeId, due: u64) -> Option<NodeId> {
        self.ids().iter().rev().copied().find(|&id| {
            id != own
                && self.is_candidate(id)
                && self.acked_round(id).is_some_and(|acked| acked >= due)
        })
    }

    /// The latest request of the current claim and leadership `id`
    /// acknowledged, if any.
    pub(crate) fn acked_round(&self, id: NodeId) -> Option<u64> {
        self.acked_round.get(&id).copied()
    }

    // ----- membership changes -----

    /// Adds a member; `false` if it already is one.
    pub(crate) fn insert(&mut self, id: NodeId) -> bool {
        let Err(index) = self.list.ids.binary_search(&id) else {
            return false;
        };
        let mut ids = self.list.ids.to_vec();
        ids.insert(index, id);
        self.list = Membership { ids: ids.into() };
        if index <= self.own {
            self.own += 1;
        }
        true
    }

    /// Removes a member other than this node; `false` if it is not one.
    pub(crate) fn remove(&mut self, id: NodeId) -> bool {
        let Ok(index) = self.list.ids.binary_search(&id) else {
            return false;
        };
        if index == self.own {
            return false;
        }
        let mut ids = self.list.ids.to_vec();
        ids.remove(index);
        self.list = Membership { ids: ids.into() };
        if index < self.own {
            self.own -= 1;
        }
        self.suspected.remove(&id);
        self.resigned.remove(&id);
        self.acked_round.remove(&id);
        true
    }
}
