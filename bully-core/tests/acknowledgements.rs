//! Acknowledgements under the quorum gate, told one node at a time: which
//! votes and heartbeat acknowledgements a claimant or a leader counts, what a
//! follower promises when it acknowledges, how a leader paces its rounds
//! while acknowledgements go missing, and when a term is spent for a member
//! (it voted in it for another, or led it), so that its next election runs in
//! a new one; and, the other way round, which Elections held for a probe a
//! member answers once its claim speaks for it.
//!
//! The fault sweeps check that no two members lead at once; these stories pin
//! the bookkeeping underneath, which a sweep rarely tells apart (a stale vote
//! that counts, or a promise narrowed a term too far, breaks nothing until the
//! one schedule that needs it).

use std::time::{Duration, Instant};

use bully_core::{
    Algorithm, Config, DropReason, DurableState, Event, Message, Node, NodeId, Quorum, Role, Term,
    Transmit,
};

mod support;

fn ids(range: std::ops::RangeInclusive<u64>) -> Vec<NodeId> {
    range.map(NodeId).collect()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn majority() -> Config {
    Config::default().with_quorum(Quorum::Majority)
}

fn drain(node: &mut Node) -> Vec<Transmit> {
    std::iter::from_fn(|| node.poll_transmit()).collect()
}

fn to(id: u64, message: Message) -> Transmit {
    Transmit {
        to: NodeId(id),
        message,
    }
}

/// `message` to 1 and to 2, in that order.
fn to_1_and_2(message: Message) -> Vec<Transmit> {
    vec![to(1, message.clone()), to(2, message)]
}

fn outdated(node: &Node) -> u64 {
    node.stats().dropped[DropReason::Outdated]
}

/// 3 of 1..=3 with a majority quorum restarts with its durable term 4, probes
/// once its start's promise to nobody has run out, and, backed by 1 and 2,
/// claims term 5. Returns the node and the instant it claimed.
fn claiming_3_in_term_5() -> (Node, Instant) {
    let state = DurableState {
        term: Term(4),
        vote: None,
        first_boot: false,
    };
    let mut node = Node::with_durable_state(NodeId(3), ids(1..=3), majority(), state).unwrap();
    node.start(Instant::now());
    let at = node.poll_timeout().expect("3 stands once its promise ends");
    node.handle_timeout(at);
    let probe = Message::Probe { term: Term(4) };
    assert_eq!(drain(&mut node), to_1_and_2(probe));
    for from in [1, 2] {
        let reply = Message::ProbeReply {
            term: Term(4),
            leader: None,
            cut_off: false,
        };
        node.handle_message(at, NodeId(from), reply);
    }
    let claim = Message::Coordinator {
        term: Term(5),
        round: 0,
    };
    assert_eq!(drain(&mut node), to_1_and_2(claim));
    assert_eq!(node.role(), Role::Candidate);
    (node, at)
}

fn ack(term: u64, round: u64) -> Message {
    Message::Ack {
        term: Term(term),
        round,
    }
}

fn heartbeat(term: u64, round: u64) -> Message {
    Message::Heartbeat {
        term: Term(term),
        round,
    }
}

/// 3's claim of term 5 (see `claiming_3_in_term_5`), which 1 votes for 5 ms
/// later: 3 leads, and sends its first heartbeat round then. Returns the node,
/// when it claimed, and when it began to lead.
fn leading_3_in_term_5() -> (Node, Instant, Instant) {
    let (mut node, claimed) = claiming_3_in_term_5();
    let voted = claimed + ms(5);
    node.handle_message(voted, NodeId(1), ack(5, 0));
    assert_eq!(node.role(), Role::Leader);
    assert_eq!(drain(&mut node), to_1_and_2(heartbeat(5, 1)));
    (node, claimed, voted)
}

/// 3 claims term 5 after a restart. 1's vote for its claim of term 4, sent
/// before the restart, arrives now: it is outdated, and 3, with its own
/// vote alone, does not lead. 1's vote for term 5 makes the quorum.
/// Kills on_ack's `claimed == term && round == 0` -> `||` and its guard ->
/// `true` (424:66, 424:50).
#[test]
fn a_vote_for_an_older_claim_does_not_count_toward_the_newer_one() {
    let (mut node, at) = claiming_3_in_term_5();
    node.handle_message(at, NodeId(1), ack(4, 0));
    assert_eq!(outdated(&node), 1);
    assert_eq!(node.role(), Role::Candidate);
    assert!(drain(&mut node).is_empty());
    node.handle_message(at, NodeId(1), ack(5, 0));
    assert_eq!(node.role(), Role::Leader);
    assert_eq!(drain(&mut node), to_1_and_2(heartbeat(5, 1)));
}

/// 3 leads term 5 from 5 ms after its claim, its lease dated from the
/// claim. 2 acknowledges round 1 of 3's leadership of term 4 (before the
/// restart), late: outdated, the lease stays. 2's acknowledgement of round
/// 1 of term 5 extends it to a lease after that round.
/// Kills on_ack's `leadership_term() == Some(term) && round > 0` -> `||` and
/// its guard -> `true` (430:68, 430:31).
#[test]
fn an_acknowledgement_of_an_older_leaderships_round_does_not_extend_the_lease() {
    let (mut node, claimed, round_1) = leading_3_in_term_5();
    let lease = majority().leader_lease();
    assert_eq!(node.lease_until(), Some(claimed + lease));
    node.handle_message(round_1 + ms(1), NodeId(2), ack(4, 1));
    assert_eq!(outdated(&node), 1);
    assert_eq!(node.lease_until(), Some(claimed + lease));
    node.handle_message(round_1 + ms(2), NodeId(2), ack(5, 1));
    assert_eq!(outdated(&node), 1);
    assert_eq!(node.lease_until(), Some(round_1 + lease));
}

/// 1's vote made 3 leader of term 5; 2's vote for the same claim comes a
/// millisecond later. It names the claim's ask, so it backs a lease dated
/// from the claim only, which 3 has already: nothing changes, and nothing is
/// sent. A vote naming a request 3 never sent is dropped.
#[test]
fn a_vote_that_comes_after_the_quorum_changes_nothing() {
    let (mut node, claimed, voted) = leading_3_in_term_5();
    let lease = majority().leader_lease();
    node.handle_message(voted + ms(1), NodeId(2), ack(5, 0));
    assert_eq!(outdated(&node), 0);
    assert!(drain(&mut node).is_empty());
    assert_eq!(node.lease_until(), Some(claimed + lease));
    node.handle_message(voted + ms(2), NodeId(2), ack(5, 9));
    assert_eq!(outdated(&node), 1, "round 9 was never asked");
    assert_eq!(node.lease_until(), Some(claimed + lease));
}

/// Fires the node's next timer, which must be due at `due`, and returns what
/// it sent.
fn fire_at(node: &mut Node, due: Instant) -> Vec<Transmit> {
    assert_eq!(node.poll_timeout(), Some(due));
    node.handle_timeout(due);
    drain(node)
}

/// 3 leads term 5 and sends round 1 at t. The claim counts as acknowledged,
/// so round 2 follows a heartbeat interval later. 1 acknowledges round 1:
/// with 3's own, a quorum of 2, so round 3 comes a heartbeat interval after
/// round 2. Nobody acknowledges rounds 2 and 3 in time: rounds 4 and 5 come
/// a round trip after the one before (the lease is no longer renewed every
/// interval). 1 then acknowledges round 4: round 6 comes a heartbeat
/// interval after round 5 again.
/// Kills round_has_quorum -> `true` (471:9), `number == 0` -> `!=` (474:19),
/// `slot.number == number` -> `!=` (481:37), `&&` -> `||` (481:47), `acks +
/// own` -> `-` and `*` (481:60), `>=` -> `<` (481:66).
#[test]
fn a_leader_sends_its_next_round_a_round_trip_after_one_a_quorum_did_not_acknowledge() {
    let (mut node, _, t) = leading_3_in_term_5();
    let config = majority();
    let interval = config.heartbeat_interval();
    let round_trip = config.round_trip();
    assert_eq!((interval, round_trip), (ms(100), ms(50)));
    let round = |n| to_1_and_2(heartbeat(5, n));
    // Round 2: the round before it is the claim's.
    let round_2 = t + interval;
    node.handle_message(t + ms(10), NodeId(1), ack(5, 1));
    assert_eq!(fire_at(&mut node, round_2), round(2));
    // Round 3: round 1 was acknowledged by 1 and 3 itself.
    let round_3 = round_2 + interval;
    assert_eq!(fire_at(&mut node, round_3), round(3));
    // Rounds 4 and 5: rounds 2 and 3 were acknowledged by nobody but 3.
    let round_4 = round_3 + round_trip;
    assert_eq!(fire_at(&mut node, round_4), round(4));
    node.handle_message(round_4 + ms(10), NodeId(1), ack(5, 4));
    let round_5 = round_4 + round_trip;
    assert_eq!(fire_at(&mut node, round_5), round(5));
    // Round 6: round 4 was acknowledged by 1.
    assert_eq!(node.poll_timeout(), Some(round_5 + interval));
}

/// 1 of 1..=3 with a majority quorum votes for 3's claim of term 1 at t0 and
/// follows it from its first heartbeat. 3 then steps down (its Resign of
/// term 1 is delayed in the network), is elected again at once, and claims
/// term 2 10 ms after t0: 1 votes again, which promises 3's claim not to vote
/// against it for a follower lease, and it still follows 3's leadership of
/// term 1 until term 2's first heartbeat (the same leader). Returns the node
/// and when it voted for term 2.
fn following_3_and_voted_for_its_term_2() -> (Node, Instant) {
    let t0 = Instant::now();
    let mut node = support::first_boot(1, ids(1..=3), majority());
    node.handle_message(
        t0,
        NodeId(3),
        Message::Coordinator {
            term: Term(1),
            round: 0,
        },
    );
    node.handle_message(t0, NodeId(3), heartbeat(1, 1));
    assert_eq!(drain(&mut node), vec![to(3, ack(1, 0)), to(3, ack(1, 1))]);
    let t1 = t0 + ms(10);
    node.handle_message(
        t1,
        NodeId(3),
        Message::Coordinator {
            term: Term(2),
            round: 0,
        },
    );
    assert_eq!(drain(&mut node), vec![to(3, ack(2, 0))]);
    let leader = node.leader().expect("1 follows 3");
    assert_eq!((leader.id, leader.term), (NodeId(3), Term(1)));
    while node.poll_event().is_some() {}
    (node, t1)
}

/// 3's Resign of its leadership of term 1 (sent when it stepped down, and
/// delayed) reaches 1 at `at`; then 2 claims term 3. Returns what 1 sent 2.
fn resign_of_term_1_then_2_claims(node: &mut Node, at: Instant) -> Vec<Transmit> {
    node.handle_message(
        at,
        NodeId(3),
        Message::Resign {
            term: Term(1),
            successor: None,
        },
    );
    assert_eq!(
        node.poll_event(),
        Some(Event::LeaderLost {
            leader: NodeId(3),
            term: Term(1)
        })
    );
    assert!(drain(node).is_empty());
    node.handle_message(
        at + ms(1),
        NodeId(2),
        Message::Coordinator {
            term: Term(3),
            round: 0,
        },
    );
    drain(node)
}

/// 1 voted for 3's claim of term 2 at t1. 20 ms later a heartbeat of 3's
/// term 1, delayed, arrives: 1 acknowledges it, and its promise stays one
/// to the claim of term 2. So 3's late Resign of term 1 releases nothing,
/// and 1 does not vote for 2's claim of term 3 while that promise runs.
/// Kills acknowledge_heartbeat's `leader == from` -> `!=` (409:23), and
/// `running > now` -> `==` and `<` (409:42).
#[test]
fn a_late_heartbeat_of_the_older_term_keeps_the_promise_to_the_leaders_newer_claim() {
    let (mut node, t1) = following_3_and_voted_for_its_term_2();
    node.handle_message(t1 + ms(20), NodeId(3), heartbeat(1, 2));
    assert_eq!(drain(&mut node), vec![to(3, ack(1, 2))]);
    let refused = node.stats().dropped[DropReason::Refused];
    let sent = resign_of_term_1_then_2_claims(&mut node, t1 + ms(30));
    assert!(sent.is_empty(), "1's vote waits for its promise: {sent:?}");
    assert_eq!(node.stats().dropped[DropReason::Refused], refused + 1);
}

/// 1 voted for 3's claim of term 2 at t1; its promise runs until a follower
/// lease later, and at that very instant a heartbeat of 3's term 1, long
/// delayed, arrives (3 never led term 2). 1 acknowledges it and promises term 1 now: the
/// promise to the claim has run out. So 3's Resign of term 1 releases it,
/// and 1 votes for 2's claim of term 3 at once.
/// Kills acknowledge_heartbeat's `leader == from && running > now` -> `||`
/// (409:31), `running > now` -> `>=` and `==` (409:42).
#[test]
fn a_heartbeat_of_the_older_term_as_the_promise_to_the_newer_claim_ends_promises_the_older_term() {
    let (mut node, t1) = following_3_and_voted_for_its_term_2();
    let promise_ends = t1 + majority().follower_lease();
    assert!(
        node.poll_timeout().is_some_and(|due| due > promise_ends),
        "1 still follows 3 then"
    );
    node.handle_message(promise_ends, NodeId(3), heartbeat(1, 2));
    assert_eq!(drain(&mut node), vec![to(3, ack(1, 2))]);
    let sent = resign_of_term_1_then_2_claims(&mut node, promise_ends + ms(1));
    assert_eq!(sent, vec![to(2, ack(3, 0))]);
}

/// `message` to 1, 2 and 4, in that order.
fn to_1_2_and_4(message: Message) -> Vec<Transmit> {
    vec![
        to(1, message.clone()),
        to(2, message.clone()),
        to(4, message),
    ]
}

fn modified_majority() -> Config {
    majority().with_algorithm(Algorithm::Modified)
}

/// 3 of 1..=4 with a majority quorum, under modified Bully, listens after its
/// start, then probes; 1 and 2 back it, 4 is silent. When the probe's time is
/// up 3 elects in term 1 (its Election goes to every member). Returns the
/// node, when it elected, and the instant until which that probe lets it
/// stand again without probing.
fn modified_3_elects_in_term_1() -> (Node, Instant, Instant) {
    let config = modified_majority();
    let mut node = Node::new(NodeId(3), ids(1..=4), config.clone()).unwrap();
    node.start(Instant::now());
    let asked = node.poll_timeout().expect("3 probes once it has listened");
    node.handle_timeout(asked);
    assert_eq!(
        drain(&mut node),
        to_1_2_and_4(Message::Probe { term: Term(0) })
    );
    for from in [1, 2] {
        let reply = Message::ProbeReply {
            term: Term(0),
            leader: None,
            cut_off: false,
        };
        node.handle_message(asked, NodeId(from), reply);
    }
    let elected = node.poll_timeout().expect("the probe's time");
    assert_eq!(elected, asked + config.answer_timeout());
    node.handle_timeout(elected);
    assert_eq!(
        drain(&mut node),
        to_1_2_and_4(Message::Election { term: Term(1) })
    );
    let clearance = config.follower_lease() + config.answer_timeout() * 2;
    (node, elected, elected + clearance)
}

/// 3 leads term 1 (nobody above answered its Election; 1 and 2 vote for its
/// claim). Then 4, back with an older term, elects in term 1: 3 gives way to
/// it, says so (Resign), and raises its flag for 4's election. 4 never
/// claims. When 3 stops waiting for it, the probe that let 3 stand still
/// holds, so 3 needs no new probe; but 3 led term 1 itself, and an election
/// of term 1 again could only win a token it already held: it elects in
/// term 2.
/// Kills may_retry_in_term's `highest.term < term` -> `<=` (387:63).
#[test]
fn a_member_that_led_a_term_elects_in_a_new_one_when_it_stands_again() {
    let (mut node, _, cleared_until) = modified_3_elects_in_term_1();
    let claimed = node.poll_timeout().expect("nobody above answers");
    node.handle_timeout(claimed);
    assert_eq!(
        drain(&mut node),
        to_1_2_and_4(Message::Coordinator {
            term: Term(1),
            round: 0
        })
    );
    for from in [1, 2] {
        node.handle_message(claimed, NodeId(from), ack(1, 0));
    }
    assert_eq!(node.role(), Role::Leader);
    assert_eq!(drain(&mut node), to_1_2_and_4(heartbeat(1, 1)));
    node.handle_message(claimed, NodeId(4), Message::Election { term: Term(1) });
    assert_eq!(node.role(), Role::Follower);
    assert!(drain(&mut node).is_empty());
    assert_eq!(
        fire_at(&mut node, claimed),
        to_1_2_and_4(Message::Resign {
            term: Term(1),
            successor: None
        })
    );
    let gave_up = node.poll_timeout().expect("3 waits for 4's claim");
    assert!(gave_up < cleared_until, "{:?}", cleared_until - gave_up);
    assert_eq!(
        fire_at(&mut node, gave_up),
        to_1_2_and_4(Message::Election { term: Term(2) })
    );
    assert_eq!(node.stats().elections_refused, 0);
}

/// 3 elects in term 1; 10 ms later, while it still waits for answers from
/// above, 4 claims term 1
/// (4 had elected in term 1 too), and 3 votes for it. 4's claim comes to
/// nothing, and 4 runs its election of term 1 again: 3 raises its flag for
/// it. 4 never claims. When 3 stops waiting for it, the probe that let 3
/// stand still holds; but 3 voted in term 1 for another member, and may not
/// vote for itself in it: it elects in term 2.
/// Kills may_retry_in_term's `voted < term` -> `<=` (391:51) and `whom ==
/// self.id` -> `!=` (391:66).
#[test]
fn a_member_that_voted_for_another_in_a_term_elects_in_a_new_one_when_it_stands_again() {
    let (mut node, elected, cleared_until) = modified_3_elects_in_term_1();
    let claim = elected + ms(10);
    assert!(
        node.poll_timeout()
            .is_some_and(|answers_due| claim < answers_due)
    );
    node.handle_message(
        claim,
        NodeId(4),
        Message::Coordinator {
            term: Term(1),
            round: 0,
        },
    );
    assert_eq!(drain(&mut node), vec![to(4, ack(1, 0))]);
    node.handle_message(claim, NodeId(4), Message::Election { term: Term(1) });
    assert_eq!(node.role(), Role::Follower);
    assert!(drain(&mut node).is_empty());
    let gave_up = node.poll_timeout().expect("3 waits for 4's claim");
    assert!(gave_up < cleared_until, "{:?}", cleared_until - gave_up);
    assert_eq!(
        fire_at(&mut node, gave_up),
        to_1_2_and_4(Message::Election { term: Term(2) })
    );
    assert_eq!(node.stats().elections_refused, 0);
}

/// 4 leads 1..=4 with a majority (it needs two acknowledgements besides its
/// own) and sends round 1; only 3 acknowledges it. 3 is then removed: with
/// three members 4 needs one acknowledgement, and 3's no longer counts, so
/// round 1 was not acknowledged by a quorum and round 2 comes a round trip
/// after it, not a heartbeat interval.
#[test]
fn an_acknowledgement_from_a_member_removed_since_backs_no_round() {
    let t = Instant::now();
    let mut node = support::first_boot(4, ids(1..=4), majority());
    node.start_election(t);
    // Probes and the claim are answered by 1 and 2 until 4 leads.
    let mut rounds = Vec::new();
    while node.role() != Role::Leader {
        let sent = drain(&mut node);
        assert!(!sent.is_empty(), "4 waits for nothing");
        for transmit in sent {
            let reply = match transmit.message {
                Message::Probe { term } => Message::ProbeReply {
                    term,
                    leader: None,
                    cut_off: false,
                },
                Message::Coordinator { term, round } => Message::Ack { term, round },
                _ => continue,
            };
            if transmit.to != NodeId(3) {
                node.handle_message(t, transmit.to, reply);
            }
        }
    }
    for transmit in drain(&mut node) {
        if let Message::Heartbeat { term, round } = transmit.message {
            rounds.push((term, round));
        }
    }
    let (term, round) = rounds[0];
    node.handle_message(t + ms(10), NodeId(3), Message::Ack { term, round });
    node.remove_member(t + ms(10), NodeId(3)).unwrap();
    let config = majority();
    let next = node.poll_timeout().expect("the next round");
    assert_eq!(
        next,
        t + config.heartbeat_interval(),
        "round 2 is due on time"
    );
    node.handle_timeout(next);
    drain(&mut node);
    assert_eq!(
        node.poll_timeout(),
        Some(next + config.round_trip()),
        "round 1 counts 3's acknowledgement, which left with 3"
    );
}

/// 3 claims term 5 at t, and 1's vote comes so late that the lease it gives
/// (a leader lease from t) would end within a round trip: 3 asks again
/// rather than lead. Nothing of that lease may run out while 3 only claims:
/// its next deadline is the new ask's, not the lease's end.
#[test]
fn a_claimant_whose_votes_came_late_keeps_no_lease_timer() {
    let (mut node, claimed) = claiming_3_in_term_5();
    let config = majority();
    let lease_end = claimed + config.leader_lease();
    let late = lease_end - config.round_trip() / 2;
    node.handle_message(late, NodeId(1), ack(5, 0));
    assert_eq!(
        node.role(),
        Role::Candidate,
        "3 does not lead on a lease this short"
    );
    assert_eq!(
        drain(&mut node),
        to_1_and_2(Message::Coordinator {
            term: Term(5),
            round: 1
        }),
        "3 asks again"
    );
    assert!(
        node.poll_timeout().is_some_and(|next| next > lease_end),
        "a deadline at the lease's end while 3 only claims: {:?}",
        node.poll_timeout()
    );
}

/// Process 3 hears Elections from 1 and then 2 while it has no verdict on
/// its connectivity: it probes first, and holds both. The probe says it
/// reaches a quorum: it answers the newest, 2's, and stands itself; its
/// claim, to 1 and 2, tells 1 more than an answer would, so 1's Election
/// gets none (one input, one message per member).
#[test]
fn elections_held_for_a_probe_are_answered_newest_first_and_a_claim_ends_the_answers() {
    let t = Instant::now();
    let mut node = support::first_boot(3, ids(1..=3), majority());
    node.handle_message(t, NodeId(1), Message::Election { term: Term(1) });
    let probes = drain(&mut node);
    assert!(
        probes
            .iter()
            .all(|transmit| matches!(transmit.message, Message::Probe { .. })),
        "3 probes before it answers: {probes:?}"
    );
    node.handle_message(t, NodeId(2), Message::Election { term: Term(1) });
    assert_eq!(drain(&mut node), [], "held, as the first");
    let outdated_before = outdated(&node);
    for from in [1, 2] {
        let reply = Message::ProbeReply {
            term: Term(0),
            leader: None,
            cut_off: false,
        };
        node.handle_message(t + ms(1), NodeId(from), reply);
    }
    let sent = drain(&mut node);
    let answers: Vec<NodeId> = sent
        .iter()
        .filter(|transmit| matches!(transmit.message, Message::Answer { .. }))
        .map(|transmit| transmit.to)
        .collect();
    assert_eq!(answers, [NodeId(2)], "{sent:?}");
    assert!(
        sent.iter().any(|transmit| transmit.to == NodeId(1)
            && matches!(transmit.message, Message::Coordinator { .. })),
        "3 claims: {sent:?}"
    );
    assert_eq!(
        outdated(&node),
        outdated_before + 1,
        "1's Election is left unanswered"
    );
}
