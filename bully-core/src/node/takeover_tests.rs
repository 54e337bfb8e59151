//! The bookkeeping behind a takeover and a probe's clearance, tested through
//! the helpers that keep it: the stories that reach these states (a takeover
//! refused, then a leader above or the node's own leadership; a stand exactly
//! when a clearance ends) take dozens of steps, and the fault sweeps cannot
//! tell their outcomes apart, since the right member still ends up leading.

use std::time::Duration;

use super::Node;
use crate::config::{Config, Preemption, Quorum};
use crate::message::{Message, NodeId, Term};
use crate::time::Instant;

fn after_stable(id: u64) -> Node {
    let config = Config::default()
        .with_quorum(Quorum::Majority)
        .with_preemption(Preemption::AfterStable(Duration::from_millis(800)));
    Node::new(NodeId(id), (1..=4).map(NodeId), config).unwrap()
}

#[test]
fn a_takeover_ends_when_the_node_follows_a_leader_above_it_and_not_one_below() {
    let now = Instant::now();
    let mut node = after_stable(3);
    node.stand_over(now);
    assert!(node.connectivity.is_taking_over());
    // 2, below 3: the takeover of a lower leader goes on.
    node.connectivity.leader_accepted(NodeId(2), NodeId(3));
    assert!(node.connectivity.is_taking_over());
    // 4, above 3: nothing left to take over.
    node.connectivity.leader_accepted(NodeId(4), NodeId(3));
    assert!(!node.connectivity.is_taking_over());
}

#[test]
fn a_takeover_ends_when_the_node_leads() {
    let now = Instant::now();
    let mut node = after_stable(3);
    node.stand_over(now);
    assert!(node.connectivity.is_taking_over());
    node.connectivity.leading();
    assert!(!node.connectivity.is_taking_over());
}

#[test]
fn a_probe_that_lets_the_node_stand_clears_it_for_a_follower_lease_and_two_answer_timeouts() {
    // 4 of 1..=4 probes at its start; 1, 2 and 3 back it: it stands, and
    // may stand again without a probe until the clearance ends, exactly.
    let mut node = after_stable(4);
    let start = Instant::now();
    node.start(start);
    let now = node.poll_timeout().unwrap();
    node.handle_timeout(now);
    let term = node.term();
    for from in 1..=3 {
        let reply = Message::ProbeReply {
            term,
            leader: None,
            cut_off: false,
        };
        node.handle_message(now, NodeId(from), reply);
    }
    assert_eq!(node.term(), Term(term.0 + 1), "4 stood");
    let config = node.config().clone();
    let until = now + config.follower_lease() + config.answer_timeout() * 2;
    assert!(
        node.connectivity
            .is_cleared(until - Duration::from_nanos(1))
    );
    assert!(!node.connectivity.is_cleared(until));
}
