//! A leadership older than the one a member follows: from its own leader, the
//! leader restarted without its state and the leadership followed is gone; from
//! anyone else, it is stale news and changes nothing.

use std::time::{Duration, Instant};

use bully_core::{Config, DropReason, Event, Message, Node, NodeId, Term};

fn following_3_in_term_5() -> (Node, Instant) {
    let now = Instant::now();
    let mut node = Node::new(NodeId(1), [1, 2, 3].map(NodeId), Config::default()).unwrap();
    node.handle_message(now, NodeId(3), Message::Coordinator { term: Term(5) });
    while node.poll_transmit().is_some() {}
    while node.poll_event().is_some() {}
    assert_eq!(node.leader().map(|leader| leader.id), Some(NodeId(3)));
    (node, now)
}

#[test]
fn process_1_elects_soon_when_its_leader_3_announces_an_older_leadership() {
    // 3 restarted without its state and announces term 1: the leadership of
    // term 5 that 1 follows is gone. 1 lets it go and elects within the
    // staggered part of its leader timeout, not after a whole one.
    let (mut node, now) = following_3_in_term_5();
    let heard = now + Duration::from_millis(10);
    node.handle_message(heard, NodeId(3), Message::Coordinator { term: Term(1) });
    assert_eq!(node.stats().dropped[DropReason::StaleLeader], 1);
    assert_eq!(node.leader(), None);
    assert_eq!(
        node.poll_event(),
        Some(Event::LeaderLost {
            leader: NodeId(3),
            term: Term(5)
        })
    );
    let elects_at = node.poll_timeout().expect("1 elects soon");
    assert!(
        elects_at < heard + Config::default().leader_timeout(),
        "{:?} after hearing 3",
        elects_at - heard
    );
}

#[test]
fn an_older_leadership_from_another_member_changes_nothing() {
    // 2 announces term 1, older than the term 5 that 1 follows under 3: stale
    // news, dropped; 1 keeps following 3, its leader timeout where it was.
    let (mut node, now) = following_3_in_term_5();
    let timeout = node.poll_timeout();
    node.handle_message(now, NodeId(2), Message::Coordinator { term: Term(1) });
    assert_eq!(node.stats().dropped[DropReason::StaleLeader], 1);
    assert_eq!(node.leader().map(|leader| leader.id), Some(NodeId(3)));
    assert_eq!(node.poll_event(), None);
    assert_eq!(node.poll_timeout(), timeout);
}
