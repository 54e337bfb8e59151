//! Bugs the fuzzers found, each as the smallest input that shows it, with the
//! trace it took. (A bug in the protocol core found and not yet fixed is
//! committed here marked `#[ignore]` until it is.) The whole fault schedules
//! with which the quorum sweeps found three of them run in the simulator, in
//! bully-sim's `tests/scenarios/regressions.rs`.

use std::time::{Duration, Instant};

use bully_core::{Config, DurableState, Event, Message, Node, NodeId, Term};

mod support;

/// Found by the `node` fuzz target (`fuzz/corpus/node/regression-nan-clock-drift`):
/// `Config::leader_lease` on a configuration with a NaN clock drift (which
/// `validate` refuses) panicked converting NaN seconds to a `Duration`. It now
/// counts NaN as the largest drift, giving the shortest lease.
#[test]
fn a_nan_clock_drift_gives_the_shortest_lease_instead_of_a_panic() {
    let config = Config::default();
    let nan = config.clone().with_clock_drift(f64::NAN);
    let widest = config.with_clock_drift(0.1);
    assert!(nan.validate().is_err());
    assert_eq!(nan.leader_lease(), widest.leader_lease());
    assert!(nan.leader_lease() < nan.follower_lease() - Duration::from_millis(80));
}

fn events(node: &mut Node) -> Vec<Event> {
    while node.poll_transmit().is_some() {}
    std::iter::from_fn(|| node.poll_event()).collect()
}

/// Found by the `node` fuzz target: the term space has an end, and `Term::next`
/// saturates there. A node whose term is `u64::MAX` (restored from a persisted
/// state, or pushed there by peers when `max_term_lead` allows it) wins an
/// election of that term, leads with the token `(MAX, 1)`, and when it runs
/// another election, `begin_election(term.next())` is the same term again: it
/// "wins" `(MAX, 1)` a second time. In a debug build `Node::lead`'s assertion
/// that a new leadership's token is above the highest accepted panics
/// (`leadership.rs`, "(18446744073709551615, 1) is not above ..."); in a release
/// build the node announces the same fencing token for a second leadership, so a
/// storage layer cannot tell the two apart.
///
/// The trace (one member, classic, default configuration):
/// restored with the term `MAX` and no vote; `start(t)`: it elects itself, BecameLeader(MAX);
/// `start_election(t + 1ms)`: it steps down, opens the election of `MAX.next()`,
/// which is MAX again, and wins it: the debug assertion.
///
/// Expected: at the end of the range a node refuses to start an election it
/// cannot number (and says so, e.g. in its stats), rather than re-win a term.
#[test]
fn a_node_at_the_last_term_never_leads_twice_with_one_token() {
    let now = Instant::now();
    let last = Term(u64::MAX);
    let state = DurableState {
        term: last,
        vote: None,
        first_boot: false,
    };
    let mut node =
        Node::with_durable_state(NodeId(1), [NodeId(1)], Config::default(), state).unwrap();
    node.start(now);
    assert!(events(&mut node).contains(&Event::BecameLeader { term: last }));
    node.start_election(now + Duration::from_millis(1));
    assert!(
        !events(&mut node).contains(&Event::BecameLeader { term: last }),
        "a second leadership with the token (MAX, 1)"
    );
}

/// The start's announcement (without a quorum, the highest member announces
/// the next term at once) at the end of the term space: process 3, the highest,
/// announced the last term at its start and leads it. Started again (its
/// driver restarted it without a new node), the next term is that same last
/// term: a second announcement would open a second leadership with the token
/// it already used, which storage could not tell apart. The start refuses, as
/// the ordinary election does, and 3 goes on leading the one it has.
#[test]
fn the_highest_member_at_the_last_term_does_not_announce_it_twice() {
    let now = Instant::now();
    let last = Term(u64::MAX);
    let state = DurableState {
        term: Term(u64::MAX - 1),
        vote: None,
        first_boot: false,
    };
    let members = [NodeId(1), NodeId(2), NodeId(3)];
    let mut three = Node::with_durable_state(NodeId(3), members, Config::default(), state).unwrap();
    three.start(now);
    let coordinators = |node: &mut Node| {
        std::iter::from_fn(|| node.poll_transmit())
            .filter(|transmit| matches!(transmit.message, Message::Coordinator { .. }))
            .count()
    };
    assert_eq!(
        coordinators(&mut three),
        2,
        "3 announces the last term to 1 and 2"
    );
    // Nobody objects within the wait: 3 leads the last term.
    let waited = three.poll_timeout().expect("the wait for an objection");
    three.handle_timeout(waited);
    assert!(events(&mut three).contains(&Event::BecameLeader { term: last }));
    three.start(waited + Duration::from_millis(1));
    assert_eq!(
        coordinators(&mut three),
        0,
        "a second announcement of the last term"
    );
    assert!(!events(&mut three).contains(&Event::BecameLeader { term: last }));
    assert_eq!(
        three.stats().elections_refused,
        1,
        "the start's election is refused"
    );
}

/// Found by the `node` fuzz target: `Node`'s documented output bound, "one input
/// makes a node queue at most `members().len()` transmits", does not hold when
/// the node is its own quorum (`Quorum::AtLeast(1)`, or `Quorum::Majority` with a
/// single voter, the other members being observers). Winning the election, its
/// claim is met at once: in the same input it broadcasts `Coordinator` to every
/// other member and then its confirming `Heartbeat` round, `2 * (N - 1)`
/// transmits.
///
/// The trace (modified Bully, members 0, 1, 3, 7, observer 1,
/// `Quorum::AtLeast(1)`; the algorithm does not matter): node 7,
/// `start_election(t)`: Coordinator(1) to 0, 1, 3; Heartbeat(1, round 1) to 0, 1,
/// 3: six transmits for four members.
///
/// Expected: at most `members().len()` transmits per input (for example, a claim
/// met at once announces with its first heartbeat round, or the round waits for
/// the heartbeat timer), or the documented bound names this case.
#[test]
fn a_node_that_is_its_own_quorum_sends_at_most_one_message_per_member_per_input() {
    use bully_core::{Algorithm, Quorum};
    let now = Instant::now();
    for algorithm in [Algorithm::Classic, Algorithm::Modified, Algorithm::Ring] {
        let config = Config::default()
            .with_algorithm(algorithm)
            .with_quorum(Quorum::AtLeast(1));
        let members = [NodeId(1), NodeId(2), NodeId(3)];
        let mut node = Node::new(NodeId(3), members, config).unwrap();
        node.start_election(now);
        let sent = std::iter::from_fn(|| node.poll_transmit()).count();
        assert!(sent <= members.len(), "{algorithm:?}: {sent} transmits");
    }
}

/// Found by the `node` fuzz target (`fuzz/corpus/node/regression-huge-leader-timeout`):
/// `Config::leader_lease` with a leader timeout near `Duration::MAX` (which
/// `validate` refuses) panicked: the lease is computed in `f64` seconds, and the
/// product rounded above what a `Duration` holds. It is now capped at the
/// follower lease.
#[test]
fn a_leader_lease_too_long_for_f64_is_capped_instead_of_a_panic() {
    for drift in [0.0, 0.001, 0.1] {
        let config = Config::default()
            .with_leader_timeout(Duration::MAX)
            .with_clock_drift(drift);
        assert!(config.validate().is_err());
        assert!(config.leader_lease() <= config.follower_lease());
        assert!(config.leader_lease() > Duration::from_secs(u64::MAX / 2));
    }
}

/// Found by the `node` fuzz target: the same documented bound fails for the ring
/// with a quorum in an ordinary election. The winner, handed the second pass
/// (`RingCoordinator` naming it), acknowledges the hop (`Answer`), claims the
/// leadership (`Coordinator` to every other member) and passes the token on:
/// `N + 1` transmits for one input.
///
/// The trace (ring, members 1, 2, 3, `Quorum::Majority`): node 3 receives from 2
/// `RingCoordinator { term 0, leader 3, initiator 2, active [2, 3, 1] }` and
/// queues Answer(0) to 2, Coordinator(0) to 1 and 2, RingCoordinator to 1: four
/// transmits for three members.
#[test]
fn a_ring_winner_with_a_quorum_sends_at_most_one_message_per_member_per_input() {
    use bully_core::{Algorithm, Message, Quorum};
    let config = Config::default()
        .with_algorithm(Algorithm::Ring)
        .with_quorum(Quorum::Majority);
    let members = [NodeId(1), NodeId(2), NodeId(3)];
    let mut node = Node::new(NodeId(3), members, config).unwrap();
    let second_pass = Message::RingCoordinator {
        term: Term(0),
        leader: NodeId(3),
        initiator: NodeId(2),
        active: vec![NodeId(2), NodeId(3), NodeId(1)],
    };
    node.handle_message(Instant::now(), NodeId(2), second_pass);
    let sent = std::iter::from_fn(|| node.poll_transmit()).count();
    assert!(sent <= members.len(), "{sent} transmits");
}

/// Found by the `node` fuzz target after `8fe5fc6` ("a candidate that voted for
/// another member in its term stands in a fresh term"): a durable state whose
/// vote is in a term above its term (which `restore` accepts as it is) makes
/// `begin_claim` recurse. A won election finds `vote.0 > term`, stands again in
/// `term + 1` through `begin_election`, wins at once, finds the vote still
/// ahead, and so on, one stack frame and one term per round: with the vote
/// `2^62` terms ahead (the fuzzer's case) the stack overflows and the process
/// aborts.
///
/// The trace (classic, members 1, 2, 3, `Quorum::Majority`; node 3, so it has
/// nobody above it): `restore(DurableState { term: 0, vote: Some((1000, 1)) })`,
/// `start(t)`: ElectionStarted(1), ElectionStarted(2), ..., ElectionStarted(1001),
/// 1,001 elections within that one call, and a claim per term.
///
/// Expected: `restore` (or `begin_claim`) treats a vote ahead of the term as
/// that term having been reached (or drops the vote), and one input starts at
/// most one election.
#[test]
fn a_restored_vote_ahead_of_the_term_starts_one_election_not_one_per_term() {
    use bully_core::{DurableState, Quorum};
    let config = Config::default().with_quorum(Quorum::Majority);
    let members = [NodeId(1), NodeId(2), NodeId(3)];
    let mut node = Node::new(NodeId(3), members, config.clone()).unwrap();
    node.restore(DurableState {
        term: Term(0),
        vote: Some((Term(1_000), NodeId(1))),
        first_boot: false,
    });
    let start = Instant::now();
    node.start(start);
    // After a start it votes for nobody, itself included, for a follower lease,
    // and stands only then.
    let now = start + config.follower_lease();
    node.handle_timeout(now);
    // With a quorum it probes before it stands: 1 and 2 reply that they have
    // no leader, and the last reply lets it stand.
    let probe_term = std::iter::from_fn(|| node.poll_transmit())
        .find_map(|transmit| match transmit.message {
            bully_core::Message::Probe { term } => Some(term),
            _ => None,
        })
        .expect("a probe before standing");
    while node.poll_event().is_some() {}
    let reply = bully_core::Message::ProbeReply {
        term: probe_term,
        leader: None,
        cut_off: false,
    };
    node.handle_message(now, NodeId(1), reply.clone());
    node.handle_message(now, NodeId(2), reply);
    let sent = std::iter::from_fn(|| node.poll_transmit()).count();
    let elections = std::iter::from_fn(|| node.poll_event())
        .filter(|event| matches!(event, Event::ElectionStarted { .. }))
        .count();
    assert_eq!(elections, 1, "elections started by one input");
    assert!(sent <= members.len(), "{sent} transmits");
}

/// Found by the `node` fuzz target on `fbd8e22` (the fixes of the two bugs
/// above): at the last term, a node that voted for another member in that term
/// and has accepted no leadership recurses without end. Its won election's
/// claim finds the vote (`(MAX, 1)`, another member's), jumps past it with
/// `begin_election(MAX.next())`, which is `MAX` again; with no accepted token
/// the end-of-range refusal does not apply, so it wins again, and the claim
/// finds the same vote. The stack overflows and the process aborts (so running
/// this test before the fix aborts the test binary).
///
/// The trace (classic, members 1, 2, 3, `Quorum::Majority`, node 3):
/// `restore(DurableState { term: MAX, vote: Some((MAX, 1)) })`,
/// `start_election(t)`: a stack overflow. A node reaches the same state by
/// acknowledging member 1's Coordinator of term `MAX` (when `max_term_lead`
/// lets a peer's term get there).
///
/// Expected: the end-of-range refusal covers a term the node voted in, not only
/// one it accepted a leader in: the node refuses the election and stays a
/// follower.
#[test]
fn a_node_that_voted_in_the_last_term_refuses_to_stand_instead_of_recursing() {
    use bully_core::{DurableState, Quorum, Role};
    let config = Config::default().with_quorum(Quorum::Majority);
    let members = [NodeId(1), NodeId(2), NodeId(3)];
    let mut node = Node::new(NodeId(3), members, config).unwrap();
    node.restore(DurableState {
        term: Term(u64::MAX),
        vote: Some((Term(u64::MAX), NodeId(1))),
        first_boot: false,
    });
    node.start_election(Instant::now());
    assert_ne!(node.role(), Role::Leader);
    assert_eq!(node.term(), Term(u64::MAX));
}

/// Found by the `node` fuzz target on `fbd8e22`: the fix of
/// `a_ring_winner_with_a_quorum_sends_at_most_one_message_per_member_per_input`
/// covers the winner handed the second pass, not an initiator that wins its own
/// pass. When its token comes back and it is the highest in the list, it
/// acknowledges the hop (`Answer`), claims (`Coordinator` to every other member;
/// with a quorum of one, its confirming `Heartbeat` round instead) and starts the
/// second pass (`RingCoordinator`): `N + 1` transmits for one input, in an
/// ordinary election.
///
/// The trace (ring, members 1, 2, 3, `Quorum::Majority`, node 3):
/// `start_election(t)`: RingElection(1, [3]) to 1; from 1, Answer(1); from 2,
/// `RingElection { term 1, initiator 3, active [3, 1, 2] }`: Answer(1) to 2,
/// Coordinator(1) to 1 and 2, RingCoordinator(1, leader 3) to 1: four transmits
/// for three members.
#[test]
fn a_ring_initiator_winning_with_a_quorum_sends_at_most_one_message_per_member_per_input() {
    use bully_core::{Algorithm, Message, Quorum};
    let now = Instant::now();
    for quorum in [Quorum::Majority, Quorum::AtLeast(1)] {
        let config = Config::default()
            .with_algorithm(Algorithm::Ring)
            .with_quorum(quorum);
        let members = [NodeId(1), NodeId(2), NodeId(3)];
        let mut node = Node::new(NodeId(3), members, config).unwrap();
        node.start_election(now);
        while node.poll_transmit().is_some() {}
        node.handle_message(now, NodeId(1), Message::Answer { term: Term(1) });
        let token_back = Message::RingElection {
            term: Term(1),
            initiator: NodeId(3),
            active: vec![NodeId(3), NodeId(1), NodeId(2)],
        };
        node.handle_message(now, NodeId(2), token_back);
        let sent = std::iter::from_fn(|| node.poll_transmit()).count();
        assert!(sent <= members.len(), "{quorum:?}: {sent} transmits");
    }
}

/// Found by the `node` fuzz target (`fuzz/corpus/node/regression-takeover-to-removed-member`):
/// under modified Bully an initiator kept the highest member that answered, and
/// if that member was removed from the membership before the answers were in,
/// still told it to take over: a message to a non-member.
///
/// The trace (modified, members 1 to 4): 1 starts an election, 3 answers, the
/// application removes 3, the answer timeout passes: `Takeover` to 3.
#[test]
fn a_member_removed_after_answering_is_not_told_to_take_over() {
    use bully_core::{Algorithm, Message};
    let now = Instant::now();
    let config = Config::default().with_algorithm(Algorithm::Modified);
    let members = [NodeId(1), NodeId(2), NodeId(3), NodeId(4)];
    let mut node = Node::new(NodeId(1), members, config.clone()).unwrap();
    node.start_election(now);
    while node.poll_transmit().is_some() {}
    node.handle_message(now, NodeId(3), Message::Answer { term: node.term() });
    node.remove_member(now, NodeId(3)).unwrap();
    node.handle_timeout(now + config.answer_timeout());
    let sent: Vec<_> = std::iter::from_fn(|| node.poll_transmit()).collect();
    assert!(
        sent.iter().all(|transmit| transmit.to != NodeId(3)),
        "{sent:?}"
    );
}

/// Found by the quorum sweep past the seeds CI runs (`tests/quorum.rs`, classic,
/// seed 16270, three members): a member restarted with its durable state never
/// followed the leader a quorum had elected, and L1 (once faults stop, every live
/// connected member names the same leader; docs/correctness.md, section 1)
/// failed for good.
///
/// Member 1 voted for 3's claim of term 2 and persisted `term 2, vote (2, 3)`.
/// Every member crashed; 3 came back without state and, with 2, elected itself
/// in term 1. Member 1 came back with its state. Its term (2) is above the
/// leadership's (1), and `may_follow_older_term` refused to follow an older
/// term's leader because of its vote in a later term for another candidate, so
/// it dropped every heartbeat (`StaleLeader`); its probes found a quorum naming
/// 3, higher than itself, so it never stood either. Nothing would ever move it:
/// a leader and a member that name two different leaders forever.
///
/// The vote stood in the way only through its promise (a member acknowledging a
/// heartbeat promises the leader not to vote against it, and must not do so
/// while it still promises the candidate it voted for). That promise ended a
/// follower lease after the vote, and a restart replaces it by a promise to
/// nobody that ends a follower lease after the start.
///
/// Expected: once no promise binds it, the member follows (and acknowledges)
/// the quorum's leader of the older term, whoever its later vote was for; its
/// term and its vote stay where they were.
#[test]
fn a_member_whose_later_vote_no_longer_binds_follows_a_leader_of_an_older_term() {
    use bully_core::{DurableState, Leader, Message, Quorum};
    let config = Config::default().with_quorum(Quorum::Majority);
    let members = [NodeId(1), NodeId(2), NodeId(3)];
    for candidate in [NodeId(3), NodeId(2)] {
        let mut node = Node::new(NodeId(1), members, config.clone()).unwrap();
        let state = DurableState {
            term: Term(2),
            vote: Some((Term(2), candidate)),
            first_boot: false,
        };
        node.restore(state);
        let start = Instant::now();
        node.start(start);
        // 3 leads term 1 with 2 and sends a heartbeat round every interval; 1
        // is driven as a driver would (its timers fire when they are due; its
        // probes get no replies, so they conclude it may not stand).
        let forgotten = start + config.follower_lease();
        let mut first_ack = None;
        let mut at = start;
        for round in 1..=10 {
            at += config.heartbeat_interval();
            while let Some(due) = node.poll_timeout().filter(|&due| due <= at) {
                node.handle_timeout(due);
            }
            node.handle_message(
                at,
                NodeId(3),
                Message::Heartbeat {
                    term: Term(1),
                    round,
                },
            );
            let acked = std::iter::from_fn(|| node.poll_transmit()).any(|transmit| {
                transmit.to == NodeId(3)
                    && transmit.message
                        == Message::Ack {
                            term: Term(1),
                            round,
                        }
            });
            if acked && first_ack.is_none() {
                first_ack = Some(at);
            }
        }
        assert_eq!(
            node.leader(),
            Some(Leader {
                id: NodeId(3),
                term: Term(1)
            }),
            "voted for {candidate} in term 2"
        );
        let first_ack = first_ack.expect("it acknowledges 3's rounds");
        if candidate != NodeId(3) {
            // Its promise to nobody after the restart covers the one its vote
            // for 2 made: no acknowledgement for 3 before it ran out.
            assert!(first_ack >= forgotten, "voted for {candidate} in term 2");
        }
        assert_eq!(node.durable_state(), state, "the term and vote stay");
    }
}

/// The same, while the promise of the later vote still runs: the member does
/// not follow (nor acknowledge) a leader of an older term than its vote for
/// another candidate until that promise has run out.
#[test]
fn a_member_still_promised_to_a_later_candidate_does_not_follow_an_older_term() {
    use bully_core::{Message, Quorum};
    let config = Config::default().with_quorum(Quorum::Majority);
    let members = [NodeId(1), NodeId(2), NodeId(3)];
    let mut node = support::first_boot(1, members, config.clone());
    let now = Instant::now();
    // 2 claims term 2 and 1 votes for it (it has promised nothing since the
    // cluster was created, so the vote is cast at once).
    node.handle_message(
        now,
        NodeId(2),
        Message::Coordinator {
            term: Term(2),
            round: 0,
        },
    );
    assert_eq!(node.durable_state().vote, Some((Term(2), NodeId(2))));
    while node.poll_transmit().is_some() {}
    // A heartbeat of 3's term-1 leadership: following it would promise 3 while
    // the vote still promises 2.
    let soon = now + config.follower_lease() / 2;
    let heartbeat = Message::Heartbeat {
        term: Term(1),
        round: 1,
    };
    node.handle_message(soon, NodeId(3), heartbeat.clone());
    assert_eq!(node.leader(), None);
    assert!(
        std::iter::from_fn(|| node.poll_transmit())
            .all(|transmit| !matches!(transmit.message, Message::Ack { .. })),
        "no acknowledgement while promised to 2"
    );
}

/// Found by the quorum sweep (`tests/quorum.rs`, seed 85270, three members, every
/// algorithm), once the case above was fixed: a member whose accepted fencing
/// token is above the leadership a quorum elected can never follow it, and
/// nothing told the leader.
///
/// 3 led term 2 with 1 and 2; 1 accepted `(2, 3)`. 2 and 3 crashed and came
/// back without state, and 3 was elected with 2 in term 1. 1 stayed up: the
/// token `(1, 3)` is below the `(2, 3)` it accepted, so it dropped every
/// heartbeat (S3, nothing below an accepted token is followed, forbids acting on
/// it), and its probes, in term 2, found a
/// quorum naming 3, above it, so it never stood. 3 answered the probes and
/// changed nothing: no agreed leader, for good.
///
/// Expected: a leader probed by a voter in a later term than its leadership,
/// which does not acknowledge its heartbeats, leads again in a term above the
/// probe's (its followers vote for it at once: their promises are to it).
/// A prober that acknowledges its rounds follows it, and changes nothing.
#[test]
fn a_leader_probed_from_a_later_term_by_a_member_that_does_not_follow_leads_again_above_it() {
    use bully_core::{Message, Quorum, Role};
    let config = Config::default().with_quorum(Quorum::Majority);
    let members = [NodeId(1), NodeId(2), NodeId(3)];
    for one_follows in [false, true] {
        let mut node = Node::new(NodeId(3), members, config.clone()).unwrap();
        let start = Instant::now();
        node.start(start);
        // After its start's promise to nobody it probes before it stands: 1
        // and 2 follow nobody.
        node.handle_timeout(start + config.follower_lease());
        let probe_term = std::iter::from_fn(|| node.poll_transmit())
            .find_map(|transmit| match transmit.message {
                Message::Probe { term } => Some(term),
                _ => None,
            })
            .expect("a probe before standing");
        let reply = Message::ProbeReply {
            term: probe_term,
            leader: None,
            cut_off: false,
        };
        node.handle_message(start, NodeId(1), reply.clone());
        node.handle_message(start, NodeId(2), reply);
        // After its restart's promise to nobody it claims, and 2 votes.
        let mut at = start + config.follower_lease() + Duration::from_millis(1);
        node.handle_timeout(at);
        let claim = std::iter::from_fn(|| node.poll_transmit())
            .find_map(|transmit| match transmit.message {
                Message::Coordinator { term, .. } => Some(term),
                _ => None,
            })
            .expect("a claim");
        node.handle_message(
            at,
            NodeId(2),
            Message::Ack {
                term: claim,
                round: 0,
            },
        );
        assert_eq!(node.role(), Role::Leader);
        // Rounds go out; 2 acknowledges each, 1 only if it follows.
        for _ in 0..4 {
            let rounds: Vec<u64> = std::iter::from_fn(|| node.poll_transmit())
                .filter_map(|transmit| match transmit.message {
                    Message::Heartbeat { round, .. } if transmit.to == NodeId(2) => Some(round),
                    _ => None,
                })
                .collect();
            for round in rounds {
                let ack = Message::Ack { term: claim, round };
                node.handle_message(at, NodeId(2), ack.clone());
                if one_follows {
                    node.handle_message(at, NodeId(1), ack);
                }
            }
            at += config.heartbeat_interval();
            node.handle_timeout(at);
        }
        while node.poll_transmit().is_some() {}
        while node.poll_event().is_some() {}

        // 1 probes in a term two above the leadership's.
        let later = Term(claim.0 + 2);
        node.handle_message(at, NodeId(1), Message::Probe { term: later });
        let sent: Vec<_> = std::iter::from_fn(|| node.poll_transmit()).collect();
        let events: Vec<_> = std::iter::from_fn(|| node.poll_event()).collect();
        let reclaim = Term(later.0 + 1);
        if one_follows {
            assert_eq!(node.role(), Role::Leader, "{events:?}");
            assert_eq!(node.term(), claim);
            assert_eq!(sent.len(), 1, "only the reply: {sent:?}");
            continue;
        }
        assert!(
            events.contains(&Event::SteppedDown { term: claim })
                && events.contains(&Event::ElectionStarted { term: reclaim }),
            "{events:?}"
        );
        for to in [NodeId(1), NodeId(2)] {
            assert!(
                sent.iter().any(|transmit| transmit.to == to
                    && transmit.message
                        == Message::Coordinator {
                            term: reclaim,
                            round: 0
                        }),
                "a claim of term {reclaim} to {to}: {sent:?}"
            );
        }
        assert!(sent.len() <= members.len(), "{sent:?}");
        // 2 follows it, so its promise lets it vote: 3 leads again, above 1's term.
        node.handle_message(
            at,
            NodeId(2),
            Message::Ack {
                term: reclaim,
                round: 0,
            },
        );
        assert_eq!(node.role(), Role::Leader);
        assert_eq!(node.leader().map(|leader| leader.term), Some(reclaim));
    }
}

/// Found by the quorum sweep past 100,000 seeds (`tests/quorum.rs`, ring, seed
/// 163459, seven members; the rule is the same under every algorithm): two
/// leaders at once with a majority quorum.
///
/// 7 led term 3; 6 lost its link to 7 and, its probe backed by 1, 2 and 4 (a
/// ring election of 2's had just made them drop 7), claimed term 5. 2, 3 and 4
/// voted for 6, each promising 6 not to vote against it for a follower lease.
/// Then 7's heartbeats of term 3 reached them again, and each went back to 7
/// ("lost and back": the token `(3, 7)` is the highest they accepted) and
/// acknowledged its rounds, renewing 7's lease, while their votes made 6's
/// quorum: 6 became leader at 2.29 s with 7 still leading.
///
/// Expected: a member that voted for a claimant does not go back to the leader
/// it lost while that vote's promise runs (the same rule as for following any
/// leader of a term below a vote); once it has run out, it may.
#[test]
fn a_member_that_voted_for_a_claimant_does_not_go_back_to_its_lost_leader_while_it_promises() {
    use bully_core::{Leader, Message, Quorum};
    let config = Config::default().with_quorum(Quorum::Majority);
    let members = [NodeId(1), NodeId(2), NodeId(3)];
    let mut node = Node::new(NodeId(1), members, config.clone()).unwrap();
    let start = Instant::now();
    // 1 follows 3's leadership of term 1 and acknowledges it.
    node.handle_message(
        start,
        NodeId(3),
        Message::Heartbeat {
            term: Term(1),
            round: 1,
        },
    );
    assert_eq!(
        node.leader().map(Leader::token).map(|token| token.leader),
        Some(NodeId(3))
    );
    // Its heartbeats stop reaching 1: 1's leader timeout lets 3 go.
    let mut now = start;
    while node.leader().is_some() {
        now = node.poll_timeout().expect("the leader timeout is armed");
        node.handle_timeout(now);
    }
    while node.poll_transmit().is_some() {}
    // 2 claims term 2, and 1 (whose promise to 3 ran out) votes for it.
    node.handle_message(
        now,
        NodeId(2),
        Message::Coordinator {
            term: Term(2),
            round: 0,
        },
    );
    assert_eq!(node.durable_state().vote, Some((Term(2), NodeId(2))));
    while node.poll_transmit().is_some() {}
    // 3's heartbeats come through again while the vote's promise to 2 runs.
    let soon = now + Duration::from_millis(10);
    node.handle_message(
        soon,
        NodeId(3),
        Message::Heartbeat {
            term: Term(1),
            round: 9,
        },
    );
    let sent: Vec<_> = std::iter::from_fn(|| node.poll_transmit()).collect();
    assert_eq!(node.leader(), None, "back to 3 while promised to 2");
    assert!(
        sent.iter()
            .all(|transmit| !matches!(transmit.message, Message::Ack { .. })),
        "an acknowledgement renewing 3's lease: {sent:?}"
    );
    // Once that promise has run out, going back to 3 is safe.
    let later = now + config.follower_lease() + Duration::from_millis(1);
    node.handle_message(
        later,
        NodeId(3),
        Message::Heartbeat {
            term: Term(1),
            round: 13,
        },
    );
    assert_eq!(node.leader().map(|leader| leader.id), Some(NodeId(3)));
    assert!(
        std::iter::from_fn(|| node.poll_transmit()).any(|transmit| transmit.to == NodeId(3)
            && transmit.message
                == Message::Ack {
                    term: Term(1),
                    round: 13
                })
    );
}

/// Found by the `node` fuzz target once its output bound counted the timers
/// that expired (`fuzz/corpus/node/regression-self-quorum-probe-*`): a node
/// that is its own quorum, every other member an observer that does not vote,
/// probed every member before standing, and its probe, which needs no reply,
/// concluded at once: in one input a Probe to every member, an Answer, and the
/// confirming Heartbeat round, two or three messages per member.
///
/// The trace (node 3 of 1 and 3, classic, `Quorum::Majority`, observer 1): an
/// Election from 1: Probe, Answer and Heartbeat, all to 1.
///
/// Now it asks only voters, so a node that is its own quorum asks nobody.
#[test]
fn a_node_that_is_its_own_quorum_among_observers_probes_nobody() {
    use bully_core::{Algorithm, Message, Quorum};
    for algorithm in [Algorithm::Classic, Algorithm::Modified, Algorithm::Ring] {
        let config = Config::default()
            .with_algorithm(algorithm)
            .with_quorum(Quorum::Majority)
            .with_observers([NodeId(1), NodeId(2)]);
        let members = [NodeId(1), NodeId(2), NodeId(3)];
        let now = Instant::now();
        let mut node = Node::new(NodeId(3), members, config).unwrap();
        node.handle_message(now, NodeId(1), Message::Election { term: Term(3) });
        let sent: Vec<_> = std::iter::from_fn(|| node.poll_transmit()).collect();
        assert!(sent.len() <= members.len(), "{algorithm:?}: {sent:?}");
        assert!(
            sent.iter()
                .all(|t| !matches!(t.message, Message::Probe { .. })),
            "{algorithm:?}: {sent:?}"
        );
    }
}

/// Found reading the takeover's code: at the end of the term space, process 3
/// (restored one term below it) hears process 2, a lower member, announce the
/// last term. A takeover must out-rank 2's leadership with a newer term, and
/// there is none: `Term::next` saturates, so 3 stood in the last term too and
/// became its second leader, the tokens `(MAX, 2)` and `(MAX, 3)` both of one
/// term. S4, "a term names one leadership", broken.
///
/// Expected: 3 refuses the takeover (counted in `elections_refused`) and
/// follows 2; nothing that happens later while 2 leads (its heartbeats, 3's
/// timers running out) makes 3 lead the last term, under every algorithm and
/// quorum policy.
#[test]
fn a_higher_member_hearing_the_last_term_announced_follows_rather_than_lead_it_too() {
    use bully_core::{Algorithm, Preemption, Quorum};
    let last = Term(u64::MAX);
    for algorithm in [Algorithm::Classic, Algorithm::Modified, Algorithm::Ring] {
        for quorum in [None, Some(Quorum::Majority)] {
            for preemption in [
                Preemption::Always,
                Preemption::AfterStable(Duration::from_millis(200)),
            ] {
                let case = format!("{algorithm:?}, {quorum:?}, {preemption:?}");
                let mut config = Config::default()
                    .with_algorithm(algorithm)
                    .with_preemption(preemption);
                if let Some(quorum) = quorum {
                    config = config.with_quorum(quorum);
                }
                let state = DurableState {
                    term: Term(u64::MAX - 1),
                    vote: None,
                    first_boot: false,
                };
                let members = [NodeId(1), NodeId(2), NodeId(3)];
                let mut three =
                    Node::with_durable_state(NodeId(3), members, config, state).unwrap();
                let mut now = Instant::now();
                three.handle_message(
                    now,
                    NodeId(2),
                    Message::Coordinator {
                        term: last,
                        round: 0,
                    },
                );
                let mut led = events(&mut three)
                    .into_iter()
                    .any(|event| matches!(event, Event::BecameLeader { .. }));
                // 2 goes on leading: its heartbeats reach 3, and 3's timers run.
                for round in 1..200u64 {
                    now += Duration::from_millis(50);
                    while let Some(deadline) = three.poll_timeout().filter(|at| *at <= now) {
                        three.handle_timeout(deadline);
                    }
                    three.handle_message(now, NodeId(2), Message::Heartbeat { term: last, round });
                    led |= events(&mut three)
                        .into_iter()
                        .any(|event| matches!(event, Event::BecameLeader { .. }));
                }
                assert!(!led, "{case}: 3 led the last term beside 2");
                assert!(
                    three.stats().elections_refused >= 1,
                    "{case}: the takeover was not refused"
                );
                assert_eq!(
                    three.leader().map(|leader| leader.id),
                    Some(NodeId(2)),
                    "{case}: 3 does not follow 2"
                );
            }
        }
    }
}
