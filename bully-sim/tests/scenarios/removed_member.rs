//! A member removed at runtime is forgotten everywhere: whatever state named it
//! (an Election waiting for a probe, a deferred vote, a ring token, an answer in
//! a modified-Bully collection) never makes a node send to it afterwards, and
//! the rest of the cluster still agrees on a leader.
//!
//! Found by the `node` fuzz target (`fuzz/corpus/node/regression-nonmember-answer`):
//! a node waiting for its probe's verdict before answering a lower member's
//! Election answered it after the application had removed that member.

use crate::support;
use std::time::{Duration, Instant};

use bully_core::{Algorithm, Config, DropReason, Message, Node, NodeId, Quorum, Term, Transmit};
use bully_sim::{Simulation, TraceEntry, Violation};

const ALGORITHMS: [Algorithm; 3] = [Algorithm::Classic, Algorithm::Modified, Algorithm::Ring];

fn ids(range: std::ops::RangeInclusive<u64>) -> Vec<NodeId> {
    range.map(NodeId).collect()
}

fn drain(node: &mut Node) -> Vec<Transmit> {
    std::iter::from_fn(|| node.poll_transmit()).collect()
}

/// Runs every timer of `node` that falls due up to `until`, collecting what it sends.
fn run_timers(node: &mut Node, until: Instant) -> Vec<Transmit> {
    let mut sent = Vec::new();
    while let Some(due) = node.poll_timeout().filter(|&due| due <= until) {
        node.handle_timeout(due);
        sent.extend(drain(node));
    }
    sent
}

#[test]
fn process_4_forgets_the_election_of_3_that_waited_for_its_probe_when_3_is_removed() {
    for algorithm in [Algorithm::Classic, Algorithm::Modified] {
        let config = Config::default()
            .with_algorithm(algorithm)
            .with_quorum(Quorum::Majority);
        let now = Instant::now();
        let mut node = Node::new(NodeId(4), ids(1..=4), config.clone()).unwrap();
        // 3 asks 4 to stand: 4 has no fresh verdict on its own connectivity, so
        // the Election waits while 4 probes.
        node.handle_message(
            now,
            NodeId(3),
            Message::Election {
                term: node.term().next(),
            },
        );
        let probes = drain(&mut node);
        assert!(
            probes
                .iter()
                .all(|t| matches!(t.message, Message::Probe { .. })),
            "{algorithm:?}: {probes:?}"
        );
        node.remove_member(now, NodeId(3)).unwrap();
        assert_eq!(
            node.stats().dropped[DropReason::NotMember],
            1,
            "{algorithm:?}"
        );
        // 1 and 2 reply: 4 reaches a quorum, and answers whatever still waits.
        for from in [1, 2] {
            let reply = Message::ProbeReply {
                term: node.term(),
                leader: None,
                cut_off: false,
            };
            node.handle_message(now, NodeId(from), reply);
        }
        let mut sent = drain(&mut node);
        sent.extend(run_timers(&mut node, now + config.failover_bound(4)));
        assert!(
            sent.iter().all(|t| t.to != NodeId(3)),
            "{algorithm:?}: sent to the removed member: {sent:?}"
        );
    }
}

#[test]
fn a_vote_deferred_for_a_removed_claimant_is_never_cast() {
    let config = Config::default().with_quorum(Quorum::Majority);
    let now = Instant::now();
    let mut node = Node::new(NodeId(1), ids(1..=4), config.clone()).unwrap();
    // 1 follows 2 and promises it not to vote against it.
    node.handle_message(
        now,
        NodeId(2),
        Message::Heartbeat {
            term: node.term().next(),
            round: 1,
        },
    );
    let acks = drain(&mut node);
    assert!(
        acks.iter()
            .any(|t| matches!(t.message, Message::Ack { .. }))
    );
    // 4 claims a later term: the promise defers the vote.
    let claim = node.term().next();
    node.handle_message(
        now,
        NodeId(4),
        Message::Coordinator {
            term: claim,
            round: 0,
        },
    );
    assert!(
        drain(&mut node).is_empty(),
        "no vote while the promise runs"
    );
    node.remove_member(now, NodeId(4)).unwrap();
    let sent = run_timers(&mut node, now + config.follower_lease() * 2);
    assert!(
        sent.iter().all(|t| t.to != NodeId(4)),
        "the deferred vote went to the removed claimant: {sent:?}"
    );
}

#[test]
fn a_ring_token_started_by_a_removed_member_is_dropped_and_its_active_list_is_scrubbed() {
    let config = Config::default().with_algorithm(Algorithm::Ring);
    let now = Instant::now();
    // Removing the initiator: 2 holds 1's token, passed to 3, when 1 is removed.
    let mut node = Node::new(NodeId(2), ids(1..=4), config.clone()).unwrap();
    let token = Message::RingElection {
        term: node.term().next(),
        initiator: NodeId(1),
        active: vec![NodeId(1)],
    };
    node.handle_message(now, NodeId(1), token);
    let passed = drain(&mut node);
    assert!(passed.iter().any(|t| t.to == NodeId(3)), "{passed:?}");
    node.remove_member(now, NodeId(1)).unwrap();
    let sent = run_timers(&mut node, now + config.answer_timeout());
    assert!(
        sent.iter().all(|t| t.to != NodeId(1)),
        "the token went on towards its removed initiator: {sent:?}"
    );
    let stale = sent.iter().find(|t| {
        matches!(&t.message, Message::RingElection { initiator, .. } if *initiator == NodeId(1))
    });
    assert!(
        stale.is_none(),
        "the dead token was passed again: {stale:?}"
    );

    // Removing a member on the active list: 3 holds 1's token that 2 joined, and
    // 2 is removed before 4 acknowledges the hop; the token 3 passes on again
    // lists 1 and 3 only.
    let mut node = Node::new(NodeId(3), ids(1..=4), config.clone()).unwrap();
    let token = Message::RingElection {
        term: node.term().next(),
        initiator: NodeId(1),
        active: vec![NodeId(1), NodeId(2)],
    };
    node.handle_message(now, NodeId(2), token);
    drain(&mut node);
    node.remove_member(now, NodeId(2)).unwrap();
    // 4 never acknowledges: the hop times out and the token goes round to 1.
    let sent = run_timers(&mut node, now + config.answer_timeout());
    let resent = sent
        .iter()
        .find_map(|t| match &t.message {
            Message::RingElection { active, .. } => Some(active.clone()),
            _ => None,
        })
        .expect("the token is passed on past the silent 4");
    assert_eq!(resent, [NodeId(1), NodeId(3)]);
}

/// A removal at any moment of an election, in every algorithm, with and
/// without a quorum: after it nobody sends to the removed member, and the
/// members that removed it agree on the highest of them that is up.
#[test]
fn a_member_removed_at_any_moment_of_a_failover_is_sent_nothing_and_the_rest_agree() {
    let seeds: u64 = std::env::var("BULLY_SIM_SEEDS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(256)
        .min(2_000);
    for algorithm in ALGORITHMS {
        for quorum in [Quorum::None, Quorum::Majority] {
            let config = Config::default()
                .with_algorithm(algorithm)
                .with_quorum(quorum);
            for seed in 0..seeds / 16 + 1 {
                removal_during_failover(&config, seed);
            }
        }
    }
}

fn removal_during_failover(config: &Config, seed: u64) {
    let context = format!(
        "{:?}, {:?}, seed {seed}",
        config.algorithm(),
        config.quorum()
    );
    let mut sim = Simulation::new(seed, ids(1..=5), config.clone()).unwrap();
    sim.start_all();
    sim.run_for(sim.settle_bound());
    assert_eq!(sim.agreed_leader(), Some(NodeId(5)), "{context}");
    sim.enable_trace();
    // 5 crashes; somewhere in the failover that follows, the others remove 4
    // (or 3, or 2) from their membership, one after the other, and it is shut down.
    sim.crash(NodeId(5)).unwrap();
    let removed = NodeId(2 + seed % 3);
    let delay = sim.failover_bound().mul_f64((seed % 11) as f64 / 10.0);
    sim.run_for(delay);
    let rest: Vec<NodeId> = ids(1..=4).into_iter().filter(|&id| id != removed).collect();
    // Where in the trace each member removed it: it sends it nothing after.
    let mut marks = Vec::new();
    for &id in &rest {
        sim.command(id, |node, now| node.remove_member(now, removed))
            .unwrap()
            .unwrap();
        marks.push((id, sim.trace().len()));
        sim.run_for(Duration::from_millis(seed % 7));
    }
    // Decommissioned: left running, its view (everyone a member) would make it
    // a cluster of its own, which the simulator's checks would count as ours.
    sim.crash(removed).unwrap();
    sim.run_for(sim.settle_bound() * 2);
    for &(member, mark) in &marks {
        let to_removed = sim.trace()[mark..].iter().find(|record| {
            matches!(&record.entry, TraceEntry::Send { from, to, .. } if *to == removed && *from == member)
        });
        assert!(to_removed.is_none(), "{context}: {to_removed:?}");
    }
    let expected = rest.iter().copied().max();
    for &id in &rest {
        let leader = sim.node(id).unwrap().leader().map(|leader| leader.id);
        assert_eq!(leader, expected, "{context}: member {id}");
    }
    // Without a quorum, members whose views of the membership differ (the
    // removal is applied one member after another, during an election) may
    // announce one term twice, as members cut off from each other may: Bully
    // promises one leader per term only among members that agree on who is a
    // member. Every other property holds.
    let violations: Vec<_> = sim
        .violations()
        .iter()
        .filter(|violation| {
            config.quorum() != Quorum::None
                || !matches!(violation, Violation::TwoLeadersInTerm { .. })
        })
        .collect();
    assert!(violations.is_empty(), "{context}: {violations:?}");
}

#[test]
fn a_member_removed_while_3_probes_leaves_the_others_cut_off_word_standing() {
    // 3 of 1..=5 probes at its start; 4 replies that it is cut off from a
    // quorum, so 3's election will not wait for 4. 5 is removed before it
    // replies. 3 stands, and with 4 known cut off and 5 gone, nobody above it
    // is left to ask: it claims at once.
    let config = Config::default().with_quorum(Quorum::Majority);
    let mut node = Node::new(NodeId(3), ids(1..=5), config).unwrap();
    node.start(Instant::now());
    let now = node.poll_timeout().unwrap();
    node.handle_timeout(now);
    let probes = drain(&mut node);
    assert_eq!(probes.len(), 4, "{probes:?}");
    let term = node.term();
    for (from, cut_off) in [(1, false), (2, false), (4, true)] {
        let reply = Message::ProbeReply {
            term,
            leader: None,
            cut_off,
        };
        node.handle_message(now, NodeId(from), reply);
    }
    node.remove_member(now, NodeId(5)).unwrap();
    let mut sent = drain(&mut node);
    sent.extend(run_timers(&mut node, now + Duration::from_millis(60)));
    assert!(
        sent.iter()
            .any(|t| matches!(t.message, Message::Coordinator { .. })),
        "3 claims: {sent:?}"
    );
    assert!(
        sent.iter()
            .all(|t| !matches!(t.message, Message::Election { .. })),
        "nobody above 3 is asked: {sent:?}"
    );
}

#[test]
fn removing_another_member_does_not_make_4_forget_that_its_leader_resigned() {
    // 4 of 1..=5 follows 5, which resigns. 1 is removed meanwhile. When 4
    // probes, 2 and 3 have not heard of the resignation and still name 5:
    // 4 knows better, counts them as backing it, and stands.
    let config = Config::default().with_quorum(Quorum::Majority);
    let now = Instant::now();
    let mut node = support::first_boot(4, ids(1..=5), config.clone());
    let term = Term(3);
    // 4 votes for 5's claim, and follows it from its first heartbeat.
    node.handle_message(now, NodeId(5), Message::Coordinator { term, round: 0 });
    node.handle_message(now, NodeId(5), Message::Heartbeat { term, round: 1 });
    drain(&mut node);
    assert_eq!(node.leader().map(|leader| leader.id), Some(NodeId(5)));
    node.handle_message(
        now,
        NodeId(5),
        Message::Resign {
            term,
            successor: None,
        },
    );
    node.remove_member(now, NodeId(1)).unwrap();
    let mut sent = drain(&mut node);
    let mut at = now;
    while !sent
        .iter()
        .any(|t| matches!(t.message, Message::Probe { .. }))
    {
        at = node.poll_timeout().expect("4 elects soon");
        node.handle_timeout(at);
        sent = drain(&mut node);
    }
    let probe_term = node.term();
    for (from, leader) in [(2, Some(NodeId(5))), (3, Some(NodeId(5))), (5, None)] {
        let reply = Message::ProbeReply {
            term: probe_term,
            leader,
            cut_off: false,
        };
        node.handle_message(at, NodeId(from), reply);
    }
    let sent = drain(&mut node);
    assert!(
        sent.iter().any(|t| matches!(
            t.message,
            Message::Election { .. } | Message::Coordinator { .. }
        )),
        "4 stands, backed by the members that still name its resigned leader: {sent:?}"
    );
}
