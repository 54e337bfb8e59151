//! A probe asked for twice: the second request's purposes join the first's.

use std::time::Duration;

use crate::config::{Config, Preemption, Quorum};
use crate::message::NodeId;
use crate::node::Node;
use crate::time::Instant;

#[test]
fn a_probe_under_way_takes_on_a_later_requests_stand_and_takeover() {
    // 3 of 1..=4 probes only to answer a lower member's Election (it does not
    // mean to stand, nor to take over). Before the replies come it sets out to
    // take over from a lower leader and asks to stand: the probe under way
    // serves both, and decides them when it concludes.
    let config = Config::default()
        .with_quorum(Quorum::Majority)
        .with_preemption(Preemption::AfterStable(Duration::from_millis(800)));
    let mut node = Node::new(NodeId(3), (1..=4).map(NodeId), config).unwrap();
    let now = Instant::now();
    node.start_probe(now, false);
    let probe = node.connectivity.probe.as_ref().unwrap();
    assert!(!probe.stand && !probe.takeover);
    node.connectivity.taking_over = true;
    node.start_probe(now, true);
    let probe = node.connectivity.probe.as_ref().unwrap();
    assert!(probe.stand, "it now means to stand");
    assert!(probe.takeover, "and to take over");
}
