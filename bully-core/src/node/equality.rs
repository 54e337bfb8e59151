//! When two nodes are one state: `Eq` and `Hash` over the protocol state,
//! leaving out what records the past or was only told (the model checker
//! recognises a state it has explored by them).

use std::hash::{Hash, Hasher};

use super::Node;

impl Node {
    /// The protocol state: every field but `stats`, as one tuple of references,
    /// so that `Eq` and `Hash` agree. Destructured without `..`, so a new field
    /// must be placed here or explicitly left out.
    fn protocol_state(&self) -> impl PartialEq + Hash + '_ {
        let Node {
            id,
            config: _,
            // What the configuration implies: compared through `config`.
            timings: _,
            members,
            term,
            leader,
            highest,
            phase,
            timers,
            transmits,
            events,
            stats: _,
            latest,
            standing_aside,
            handing_over_to,
            announced_at,
            pending_election,
            modified,
            ring,
            votes,
            requests,
            detector,
            connectivity,
            // What the driver was told of the permit: derived from the lease
            // and from what was polled, it decides nothing the protocol does
            // (as `stats` records what happened), so two nodes that differ
            // only in what their drivers read are one state to a model checker.
            published: _,
        } = self;
        (
            (id, members, term, leader, highest, phase, timers, transmits),
            (
                events,
                latest,
                standing_aside,
                handing_over_to,
                announced_at,
            ),
            (pending_election, modified, ring, votes),
            (requests, detector, connectivity),
        )
    }
}

impl PartialEq for Node {
    fn eq(&self, other: &Node) -> bool {
        self.config == other.config && self.protocol_state() == other.protocol_state()
    }
}

impl Eq for Node {}

impl Hash for Node {
    /// Hashes the protocol state but the configuration (which `Config`, holding
    /// an `f64`, cannot hash; equal nodes still hash equal).
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.protocol_state().hash(state);
    }
}
