//! What `Node::safety` reads out, the state the safety core's invariants are
//! checked against after every input (bully-sim's `invariants`): a harness
//! that read less (no wait after a restart, no hold after a leadership)
//! would check every vote against less than the node keeps.

use std::time::{Duration, Instant};

use bully_core::{Config, DurableState, Node, NodeId, Quorum};

fn three() -> [NodeId; 3] {
    [NodeId(1), NodeId(2), NodeId(3)]
}

/// Process 2 comes back without a declared first boot: it may have forgotten
/// a promise, and the state says it votes for nobody for a follower lease.
#[test]
fn a_member_that_came_back_reads_out_its_wait() {
    let config = Config::default().with_quorum(Quorum::Majority);
    let mut two = Node::new(NodeId(2), three(), config.clone()).unwrap();
    let now = Instant::now();
    two.start(now);
    let safety = two.safety();
    assert_eq!(
        safety.votes_for_nobody_until,
        Some(now + config.follower_lease())
    );
    assert_eq!(safety.hold_until, None);
    assert!(!safety.first_boot);
}

/// Process 3 leads alone among three (a quorum of one, a resign delay of a
/// second) and steps down: its state says it leads no more and holds its
/// vote for others until the delay ends.
#[test]
fn a_leader_that_stepped_down_reads_out_its_hold() {
    let delay = Duration::from_secs(1);
    let config = Config::default()
        .with_quorum(Quorum::AtLeast(1))
        .with_resign_delay(delay);
    let mut leader =
        Node::with_durable_state(NodeId(3), three(), config, DurableState::first_boot()).unwrap();
    let now = Instant::now();
    leader.start_election(now);
    let leading = leader.safety();
    assert!(leading.leading.is_some() && leading.lease_until.is_some());
    let later = now + Duration::from_millis(10);
    assert!(leader.step_down(later));
    let safety = leader.safety();
    assert_eq!(safety.leading, None);
    assert_eq!(safety.hold_until, Some(later + delay));
}
