//! A leadership older than the one a member follows: from its own leader, the
//! leader restarted without its state and the leadership followed is gone; from
//! anyone else, it is stale news and changes nothing.

use std::time::{Duration, Instant};

use bully_core::{
    Config, DropReason, DurableState, Event, Message, Node, NodeId, Quorum, Role, Term, Transmit,
};

mod support;

fn following_3_in_term_5() -> (Node, Instant) {
    let now = Instant::now();
    let mut node = Node::new(NodeId(1), [1, 2, 3].map(NodeId), Config::default()).unwrap();
    node.handle_message(
        now,
        NodeId(3),
        Message::Coordinator {
            term: Term(5),
            round: 0,
        },
    );
    while node.poll_transmit().is_some() {}
    while node.poll_event().is_some() {}
    assert_eq!(node.leader().map(|leader| leader.id), Some(NodeId(3)));
    assert_eq!(node.stats().leaders_seen, 1);
    (node, now)
}

#[test]
fn process_1_elects_soon_when_its_leader_3_announces_an_older_leadership() {
    // 3 restarted without its state and announces term 1: the leadership of
    // term 5 that 1 follows is gone. 1 lets it go and elects within the
    // staggered part of its leader timeout, not after a whole one.
    let (mut node, now) = following_3_in_term_5();
    let heard = now + Duration::from_millis(10);
    node.handle_message(
        heard,
        NodeId(3),
        Message::Coordinator {
            term: Term(1),
            round: 0,
        },
    );
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
    node.handle_message(
        now,
        NodeId(2),
        Message::Coordinator {
            term: Term(1),
            round: 0,
        },
    );
    assert_eq!(node.stats().dropped[DropReason::StaleLeader], 1);
    assert_eq!(node.leader().map(|leader| leader.id), Some(NodeId(3)));
    assert_eq!(node.poll_event(), None);
    assert_eq!(node.poll_timeout(), timeout);
}

fn quorum_config() -> Config {
    Config::default().with_quorum(Quorum::Majority)
}

/// `id` of 1..=3, with a majority quorum, votes for 3's claim of `term` at
/// `now` and follows it from its first heartbeat: a promise not to vote
/// against 3 runs from then.
fn following_3(id: NodeId, term: Term, now: Instant) -> Node {
    let mut node = support::first_boot(id.0, [1, 2, 3].map(NodeId), quorum_config());
    node.handle_message(now, NodeId(3), Message::Coordinator { term, round: 0 });
    node.handle_message(now, NodeId(3), heartbeat(term.0));
    sent(&mut node);
    assert_eq!(node.leader().map(|leader| leader.id), Some(NodeId(3)));
    node
}

fn heartbeat(term: u64) -> Message {
    Message::Heartbeat {
        term: Term(term),
        round: 1,
    }
}

fn sent(node: &mut Node) -> Vec<Transmit> {
    std::iter::from_fn(|| node.poll_transmit()).collect()
}

/// 3 of 1..=4 with a majority quorum wins term 1 (4 says it is cut off, 1 and
/// 2 vote), then hears nobody until its lease runs out: leaderless, its
/// highest token is its own leadership of term 1.
fn lapsed_leader_3() -> (Node, Instant) {
    let mut node = Node::new(NodeId(3), [1, 2, 3, 4].map(NodeId), quorum_config()).unwrap();
    let mut now = Instant::now();
    node.start(now);
    while !sent(&mut node)
        .iter()
        .any(|t| matches!(t.message, Message::Probe { .. }))
    {
        now = node.poll_timeout().unwrap();
        node.handle_timeout(now);
    }
    // 4 replies that it is cut off from a quorum: 3 does not wait for it.
    for (from, cut_off) in [(1, false), (2, false), (4, true)] {
        let reply = Message::ProbeReply {
            term: Term(0),
            leader: None,
            cut_off,
        };
        node.handle_message(now, NodeId(from), reply);
    }
    sent(&mut node);
    for from in [1, 2] {
        let ack = Message::Ack {
            term: Term(1),
            round: 0,
        };
        node.handle_message(now, NodeId(from), ack);
    }
    assert_eq!(node.role(), Role::Leader);
    while node.role() == Role::Leader {
        now = node.poll_timeout().unwrap();
        node.handle_timeout(now);
        sent(&mut node);
    }
    assert_eq!(node.leader(), None);
    (node, now)
}

#[test]
fn a_leaderless_member_whose_own_leadership_shares_a_term_with_a_lower_ones_names_it_to_that_one() {
    // 3's leadership of term 1 lapsed; 2 announces a leadership of term 1 too
    // (possible only after a restart without state). 3 can never follow it,
    // so it tells 2 of its own, to 2 alone.
    let (mut node, now) = lapsed_leader_3();
    node.handle_message(now, NodeId(2), heartbeat(1));
    let out = sent(&mut node);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].to, NodeId(2));
    assert_eq!(
        out[0].message,
        Message::Coordinator {
            term: Term(1),
            round: 0
        }
    );
}

#[test]
fn a_stale_leadership_from_a_higher_member_is_only_dropped() {
    // 4 announces term 0, below 3's own leadership of term 1: stale news from
    // above, which 3's word would not settle. Dropped, nothing sent.
    let (mut node, now) = lapsed_leader_3();
    node.handle_message(now, NodeId(4), heartbeat(0));
    assert_eq!(node.stats().dropped[DropReason::StaleLeader], 1);
    assert!(sent(&mut node).is_empty());
}

#[test]
fn with_a_quorum_a_stale_leadership_is_only_dropped_by_a_follower_and_by_a_member_fenced_by_another()
 {
    // 1 follows 3 in term 5: 2's term 1 is stale, dropped, nothing sent.
    let now = Instant::now();
    let mut node = following_3(NodeId(1), Term(5), now);
    assert_eq!(node.leader().map(|leader| leader.id), Some(NodeId(3)));
    node.handle_message(now, NodeId(2), heartbeat(1));
    assert!(sent(&mut node).is_empty(), "a follower");
    // 2, leaderless, fenced by 3's term 5 (not its own): 1's term 1 is stale.
    let mut node = Node::new(NodeId(2), [1, 2, 3].map(NodeId), quorum_config()).unwrap();
    node.handle_message(
        now,
        NodeId(3),
        Message::Coordinator {
            term: Term(5),
            round: 0,
        },
    );
    node.handle_message(now, NodeId(3), heartbeat(5));
    node.handle_message(
        now,
        NodeId(3),
        Message::Resign {
            term: Term(5),
            successor: None,
        },
    );
    sent(&mut node);
    assert_eq!(node.leader(), None);
    node.handle_message(now, NodeId(1), heartbeat(1));
    assert!(sent(&mut node).is_empty(), "a member fenced by another");
}

#[test]
fn without_a_quorum_a_lower_leadership_starts_a_new_election_only_if_newer_than_the_one_running() {
    // 2 of 1..=3 runs an election of term 1 (towards 3). 1 announces term 1:
    // 2's own election will out-rank it, nothing to do. 1 announces term 5:
    // 2 elects again, above it, in term 6.
    let now = Instant::now();
    let mut node = Node::new(NodeId(2), [1, 2, 3].map(NodeId), Config::default()).unwrap();
    node.start_election(now);
    assert_eq!(node.term(), Term(1));
    sent(&mut node);
    node.handle_message(
        now,
        NodeId(1),
        Message::Coordinator {
            term: Term(1),
            round: 0,
        },
    );
    assert!(sent(&mut node).is_empty());
    assert_eq!(node.term(), Term(1));
    node.handle_message(
        now,
        NodeId(1),
        Message::Coordinator {
            term: Term(5),
            round: 0,
        },
    );
    let out = sent(&mut node);
    assert_eq!(node.term(), Term(6));
    assert!(
        out.iter()
            .any(|t| t.to == NodeId(3) && t.message == Message::Election { term: Term(6) }),
        "{out:?}"
    );
}

#[test]
fn a_resignation_frees_a_promise_only_when_the_promised_leader_resigns() {
    // 1 of 1..=3 follows 3 and has promised it not to vote against it while
    // 3's lease may run. 2 says it resigns term 1: not 1's leader, so the
    // promise holds, and 2's claim of term 2 gets no vote yet. When 3 itself
    // resigns, the promise is free and the vote goes to 2.
    let now = Instant::now();
    let mut node = following_3(NodeId(1), Term(1), now);
    node.handle_message(
        now,
        NodeId(2),
        Message::Resign {
            term: Term(1),
            successor: None,
        },
    );
    assert_eq!(node.stats().dropped[DropReason::Outdated], 1);
    assert_eq!(node.leader().map(|leader| leader.id), Some(NodeId(3)));
    node.handle_message(
        now,
        NodeId(2),
        Message::Coordinator {
            term: Term(2),
            round: 0,
        },
    );
    assert!(sent(&mut node).is_empty(), "the promise to 3 holds");
    node.handle_message(
        now,
        NodeId(3),
        Message::Resign {
            term: Term(1),
            successor: None,
        },
    );
    assert_eq!(
        node.poll_timeout(),
        Some(now),
        "the deferred vote is due at once"
    );
    node.handle_timeout(now);
    let out = sent(&mut node);
    assert!(
        out.iter().any(|t| t.to == NodeId(2)
            && t.message
                == Message::Ack {
                    term: Term(2),
                    round: 0
                }),
        "3 resigned: the deferred vote goes to 2: {out:?}"
    );
}

#[test]
fn a_stand_waiting_for_the_promise_to_the_leader_goes_ahead_when_that_leader_resigns() {
    // 2 of 1..=3 follows 3, with a promise not to vote against it while 3's
    // lease may run. 2 is told to elect: 3 does not answer, so 2 would claim,
    // but that waits for the promise to 3 to run out. 3 resigns meanwhile:
    // the promise protects nothing now, and 2 goes ahead at once.
    let t0 = Instant::now();
    let mut node = following_3(NodeId(2), Term(1), t0);
    node.start_election(t0);
    sent(&mut node);
    let answer_wait = node.poll_timeout().unwrap();
    node.handle_timeout(answer_wait);
    assert!(sent(&mut node).is_empty(), "the claim waits");
    let promise_end = node.poll_timeout().unwrap();
    assert_eq!(promise_end, t0 + quorum_config().follower_lease());
    let resigned = answer_wait + Duration::from_millis(50);
    node.handle_message(
        resigned,
        NodeId(3),
        Message::Resign {
            term: Term(1),
            successor: None,
        },
    );
    assert_eq!(node.poll_timeout(), Some(resigned), "at once");
    node.handle_timeout(resigned);
    assert!(!sent(&mut node).is_empty(), "2 goes ahead");
}

#[test]
fn a_member_restarted_with_a_vote_follows_an_older_leadership_unless_its_vote_binds_it() {
    // 1 of 1..=3 restarts with its state: term 2, and its vote in term 2.
    // For a follower lease after its start it promises nobody anything (a
    // promise made before the restart may still run). 2 leads term 1. If 1's
    // vote went to itself (its own claim led nowhere) or to 2, following 2
    // breaks no promise: it follows at once. If it went to 3, that vote may
    // be part of 3's quorum: 1 follows 2 only once the promise has run out,
    // to the nanosecond.
    let config = quorum_config();
    let lease = config.follower_lease();
    for (whom, after, follows) in [
        (1, Duration::from_millis(10), true),
        (2, Duration::from_millis(10), true),
        (3, Duration::from_millis(10), false),
        (3, lease - Duration::from_nanos(1), false),
        (3, lease, true),
    ] {
        let state = DurableState {
            term: Term(2),
            vote: Some((Term(2), NodeId(whom))),
            first_boot: false,
        };
        let members = [1, 2, 3].map(NodeId);
        let mut node = Node::with_durable_state(NodeId(1), members, config.clone(), state).unwrap();
        let t0 = Instant::now();
        node.start(t0);
        node.handle_message(t0 + after, NodeId(2), heartbeat(1));
        let out = sent(&mut node);
        assert_eq!(
            node.leader().map(|leader| leader.id) == Some(NodeId(2)),
            follows,
            "voted for {whom}, {after:?} after the start: {out:?}"
        );
    }
}

#[test]
fn a_member_running_an_election_does_not_follow_an_older_terms_leadership() {
    // 1 of 1..=3 runs an election of term 1 (towards 2 and 3). 3 announces a
    // leadership of term 0, older than the election: 1 is not idle, so it does
    // not go back to following an older term; the announcement is stale.
    let now = Instant::now();
    let mut node = Node::new(NodeId(1), [1, 2, 3].map(NodeId), quorum_config()).unwrap();
    node.start_election(now);
    sent(&mut node);
    assert_eq!(node.role(), Role::Candidate);
    node.handle_message(now, NodeId(3), heartbeat(0));
    assert_eq!(node.leader(), None);
    assert_eq!(node.role(), Role::Candidate);
    assert_eq!(node.stats().dropped[DropReason::StaleLeader], 1);
}

#[test]
fn members_that_still_name_a_lapsed_leader_do_not_back_its_return() {
    // 3's lease of term 1 ran out: 1 and 2 did not acknowledge its rounds in
    // time (their replies may not reach it). When 3 probes to stand again and
    // 1 and 2 reply that 3 is still their leader, 3 does not count them as
    // backing: a link it cannot trust for acknowledgements proves nothing
    // about a new term. With only 4 behind it (cut off from a quorum), it
    // does not stand; 1's and 2's own leader timeouts move them on.
    let (mut node, mut now) = lapsed_leader_3();
    while !sent(&mut node)
        .iter()
        .any(|t| matches!(t.message, Message::Probe { .. }))
    {
        now = node.poll_timeout().unwrap();
        node.handle_timeout(now);
    }
    let term = node.term();
    for (from, leader, cut_off) in [(1, Some(3), false), (2, Some(3), false), (4, None, true)] {
        let reply = Message::ProbeReply {
            term,
            leader: leader.map(NodeId),
            cut_off,
        };
        node.handle_message(now, NodeId(from), reply);
    }
    assert!(sent(&mut node).is_empty());
    assert_eq!(node.term(), term);
}
