//! A resigning leader names the member that elects first (`Resign`'s
//! `successor`): the highest member whose acknowledgements still reached it.
//! Under Omni-Paxos's quorum-loss partition that is the hub, which then stands
//! at once instead of after every higher member found out by itself that it
//! is cut off.

use crate::support;
use std::time::{Duration, Instant};

use crate::support::shortest_leader_timeout;
use bully_core::{
    Algorithm, Config, DropReason, Event, Message, Node, NodeId, Quorum, Term, Transmit,
};
use bully_sim::chaos::Action;
use bully_sim::partial::{PartialRun, Placement, Scenario};
use bully_sim::{Simulation, TraceEntry, scenario};

fn majority(algorithm: Algorithm) -> Config {
    Config::default()
        .with_algorithm(algorithm)
        .with_quorum(Quorum::Majority)
}

/// A majority quorum at Omni-Paxos's heartbeat traffic (N = 5, 100 ms rounds):
/// a heartbeat every 20 ms and the shortest leader timeout the checks accept,
/// as `peers/` runs it.
fn at_bles_traffic(algorithm: Algorithm) -> Config {
    let config = majority(algorithm).with_heartbeat_interval(Duration::from_millis(20));
    let leader_timeout = shortest_leader_timeout(&config);
    config.with_leader_timeout(leader_timeout)
}

/// The successors named in every `Resign` that `from` sent, in order.
fn successors_named_by(sim: &Simulation, from: NodeId) -> Vec<Option<NodeId>> {
    let mut named = Vec::new();
    for record in sim.trace() {
        if let TraceEntry::Send {
            from: sender,
            message: Message::Resign { successor, .. },
            ..
        } = &record.entry
        {
            if *sender == from {
                named.push(*successor);
            }
        }
    }
    named
}

#[test]
fn leader_5_whose_lease_runs_out_names_the_hub_that_still_acknowledges_it() {
    // Quorum-loss with the hub lowest: every link but the hub's is cut, so 5
    // hears only 1. Its lease runs out and it resigns to everyone; only 1's
    // acknowledgements were still arriving, so 1 is the one it names.
    for algorithm in [Algorithm::Classic, Algorithm::Modified] {
        let config = majority(algorithm);
        let mut sim = scenario::settled(&config, 5, 1).unwrap();
        assert_eq!(sim.agreed_leader(), Some(NodeId(5)));
        sim.enable_trace();
        let run = PartialRun::new(Scenario::QuorumLoss, Placement::Lowest);
        assert_eq!(run.hub(), Some(NodeId(1)));
        run.cut(&mut sim).unwrap();
        sim.run_for(config.leader_timeout() * 2);
        let named = successors_named_by(&sim, NodeId(5));
        assert_eq!(
            named.first(),
            Some(&Some(NodeId(1))),
            "{algorithm:?}: {named:?}"
        );
    }
}

#[test]
fn a_leader_that_steps_down_in_a_connected_cluster_names_the_highest_member() {
    // Everyone still acknowledges 5: it names 4, which the stagger puts first
    // anyway, so nothing changes where every link works. 4 leads next (and 5,
    // under `Preemption::Always`, takes the leadership back once it hears it).
    // With a resign delay too: the `Resign` goes once the work has had that
    // long to stop, and names the successor all the same.
    let delayed = |algorithm| majority(algorithm).with_resign_delay(Duration::from_millis(300));
    for algorithm in [Algorithm::Classic, Algorithm::Modified] {
        for config in [majority(algorithm), delayed(algorithm)] {
            let mut sim = scenario::settled(&config, 5, 2).unwrap();
            sim.enable_trace();
            sim.apply(&Action::StepDown(NodeId(5))).unwrap();
            sim.run_for(Duration::from_secs(2));
            assert_eq!(
                successors_named_by(&sim, NodeId(5)),
                vec![Some(NodeId(4)); 4],
                "{algorithm:?}: one Resign to each of the four others"
            );
            let next = sim.trace().iter().find_map(|record| match record.entry {
                TraceEntry::Event {
                    node,
                    event: Event::BecameLeader { .. },
                } => Some(node),
                _ => None,
            });
            assert_eq!(next, Some(NodeId(4)), "{algorithm:?}");
        }
    }
}

#[test]
fn without_a_quorum_and_under_the_ring_a_resignation_names_nobody() {
    // Without a quorum there are no acknowledgements to go by; the ring keeps
    // its stagger (see `succession.rs` for why).
    for config in [Config::default(), majority(Algorithm::Ring)] {
        let mut sim = scenario::settled(&config, 5, 3).unwrap();
        sim.enable_trace();
        sim.apply(&Action::StepDown(NodeId(5))).unwrap();
        sim.run_for(Duration::from_secs(2));
        let named = successors_named_by(&sim, NodeId(5));
        assert_eq!(named, vec![None; 4], "{config:?}");
    }
}

/// 1 of 1..=5, with a majority quorum, follows 5's leadership of term 1.
fn following_5(now: Instant) -> Node {
    member_following_5(NodeId(1), now)
}

/// `id` of 1..=5, with a majority quorum, follows 5's leadership of term 1.
fn member_following_5(id: NodeId, now: Instant) -> Node {
    let members = [1, 2, 3, 4, 5].map(NodeId);
    let mut node = support::first_boot(id.0, members, majority(Algorithm::Classic));
    node.handle_message(
        now,
        NodeId(5),
        Message::Coordinator {
            term: Term(1),
            round: 0,
        },
    );
    node.handle_message(
        now,
        NodeId(5),
        Message::Heartbeat {
            term: Term(1),
            round: 1,
        },
    );
    sent(&mut node);
    assert_eq!(node.leader().map(|leader| leader.id), Some(NodeId(5)));
    node
}

/// Leader 5 tells `node` it resigns term 1, naming `successor`.
fn five_resigns_term_1(node: &mut Node, now: Instant, successor: Option<NodeId>) {
    node.handle_message(
        now,
        NodeId(5),
        Message::Resign {
            term: Term(1),
            successor,
        },
    );
}

fn sent(node: &mut Node) -> Vec<Transmit> {
    std::iter::from_fn(|| node.poll_transmit()).collect()
}

#[test]
fn process_1_named_successor_probes_at_once_and_otherwise_waits_its_rank() {
    let config = majority(Algorithm::Classic);
    // Named: it elects at once, which with a quorum starts with a probe of
    // every member.
    let now = Instant::now();
    let mut named = following_5(now);
    five_resigns_term_1(&mut named, now, Some(NodeId(1)));
    assert_eq!(named.poll_timeout(), Some(now));
    named.handle_timeout(now);
    let probes = sent(&mut named)
        .into_iter()
        .filter(|t| matches!(t.message, Message::Probe { .. }))
        .count();
    assert_eq!(probes, 4, "a probe to each other member");
    // Not named (4 was), or nobody named: it waits the staggered part of its
    // leader timeout, as the lowest of four three steps behind 4, less than a
    // whole leader timeout.
    let mut waits = Vec::new();
    for successor in [Some(NodeId(4)), None] {
        let mut not_named = following_5(now);
        five_resigns_term_1(&mut not_named, now, successor);
        assert!(sent(&mut not_named).is_empty());
        let at = not_named.poll_timeout().expect("it elects later");
        waits.push(at - now);
    }
    assert_eq!(waits[0], waits[1], "naming another is as naming nobody");
    assert!(waits[0] > Duration::ZERO && waits[0] < config.leader_timeout());
}

#[test]
fn a_heartbeat_overtaken_by_the_resignation_does_not_bring_leader_5_back() {
    // 5 sent a heartbeat of term 1, then resigned; the links reordered them.
    // 1, named, is probing when the heartbeat arrives: it is stale (5 leads
    // term 1 no more), so 1 does not follow 5 again, and the probe's replies,
    // which still name 5, back 1's election.
    let now = Instant::now();
    let mut node = following_5(now);
    five_resigns_term_1(&mut node, now, Some(NodeId(1)));
    node.handle_timeout(now);
    sent(&mut node);
    let late = now + Duration::from_millis(2);
    node.handle_message(
        late,
        NodeId(5),
        Message::Heartbeat {
            term: Term(1),
            round: 2,
        },
    );
    assert_eq!(node.leader(), None, "1 does not follow 5 again");
    assert_eq!(node.stats().dropped[DropReason::StaleLeader], 1);
    for member in [2, 3, 4] {
        node.handle_message(
            late,
            NodeId(member),
            Message::ProbeReply {
                term: Term(1),
                leader: Some(NodeId(5)),
                cut_off: false,
            },
        );
    }
    node.handle_message(
        late,
        NodeId(5),
        Message::ProbeReply {
            term: Term(1),
            leader: None,
            cut_off: true,
        },
    );
    let elections: Vec<NodeId> = sent(&mut node)
        .into_iter()
        .filter(|t| t.message == Message::Election { term: Term(2) })
        .map(|t| t.to)
        .collect();
    assert_eq!(
        elections,
        [2, 3, 4].map(NodeId),
        "1 stands, asking those above it"
    );
}

#[test]
fn a_resignation_from_another_member_than_the_leader_names_nobody_that_counts() {
    // 3 does not lead 1: its resignation, whoever it names, is stale news and
    // leaves 1 following 5 with its leader timeout where it was.
    let now = Instant::now();
    let mut node = following_5(now);
    let timeout = node.poll_timeout();
    node.handle_message(
        now,
        NodeId(3),
        Message::Resign {
            term: Term(1),
            successor: Some(NodeId(1)),
        },
    );
    assert_eq!(node.leader().map(|leader| leader.id), Some(NodeId(5)));
    assert_eq!(node.poll_timeout(), timeout);
    assert!(sent(&mut node).is_empty());
}

#[test]
fn at_bles_traffic_a_low_hub_leads_within_300_ms_of_a_quorum_loss() {
    // Before the leader named its successor, the hub 1 (or 3, in the middle)
    // waited its rank's stagger after 5's resignation, for 4, 3 and 2 to find
    // out one by one that they were cut off: 490 to 510 ms to a stable leader
    // with the hub lowest, 350 to 370 ms in the middle (BLE: 310 ms at the
    // median in `peers/`). Named, the hub probes at once, and its Election
    // makes the members above it probe too: within 300 ms in every seed, one
    // new term, and the hub leads to the end.
    for algorithm in [Algorithm::Classic, Algorithm::Modified] {
        let config = at_bles_traffic(algorithm);
        for placement in [Placement::Lowest, Placement::Middle] {
            let run = PartialRun::new(Scenario::QuorumLoss, placement);
            for seed in 1..=20 {
                let report = run.run(&config, seed).unwrap();
                let what = format!(
                    "{algorithm:?} hub {} seed {seed}: {report:?}",
                    placement.name()
                );
                assert_eq!(report.final_leader, run.hub(), "{what}");
                let stable = report.time_to_stable.expect("a stable leader");
                assert!(stable <= Duration::from_millis(300), "{what}");
                assert_eq!(report.term_growth, 1, "{what}");
                assert_eq!(report.overlapping_leaderships, 0, "{what}");
                assert_eq!(report.violations, 0, "{what}");
            }
        }
    }
}

#[test]
fn under_the_chained_partition_the_named_hub_and_member_4_share_one_new_term() {
    // Chained with five: 5 reaches only the hub, the hub reaches all, and 2, 3
    // and 4 reach each other, so 4 (not the hub) is the one to lead. 5 names
    // the hub, which stands at once; 4's own timeout fires while the hub's
    // Election is on its way, and 4's probe hears the hub stand in term 2. 4
    // waits for that Election and joins the hub's term rather than standing
    // in term 3 over it: one new term, in every seed and placement.
    for algorithm in [Algorithm::Classic, Algorithm::Modified] {
        for config in [majority(algorithm), at_bles_traffic(algorithm)] {
            for placement in [Placement::Lowest, Placement::Middle] {
                let run = PartialRun::new(Scenario::Chained5, placement);
                for seed in 1..=20 {
                    let report = run.run(&config, seed).unwrap();
                    let what = format!(
                        "{algorithm:?} {:?} hub {} seed {seed}: {report:?}",
                        config.heartbeat_interval(),
                        placement.name()
                    );
                    assert_eq!(report.final_leader, Some(NodeId(4)), "{what}");
                    assert_eq!(report.term_growth, 1, "{what}");
                    assert_eq!(report.overlapping_leaderships, 0, "{what}");
                }
            }
        }
    }
}

#[test]
fn member_4_joins_the_election_that_waited_for_its_probe_in_that_elections_term() {
    // Term 2, the next after 4's own; and term 5, further ahead (1 knew of
    // terms 4 never saw): 4 stands in the Election's term either way, neither
    // above it nor below it.
    for term in [Term(2), Term(5)] {
        joins_the_waiting_election(term);
    }
}

fn joins_the_waiting_election(hub_term: Term) {
    // 4 of 1..=5 lost its leader 5 and probes to stand. The hub 1, named by
    // 5, stands at once: its Election of term 2 reaches 4 during the probe
    // and waits for the verdict. The probe's replies say nothing of term 2
    // (they left before 1 stood), yet 4 stands in term 2, joining 1's
    // election as classic Bully does when it answers one, not in term 3 over
    // it: one new term for the fault, not two.
    let mut now = Instant::now();
    let mut node = member_following_5(NodeId(4), now);
    while !sent(&mut node)
        .iter()
        .any(|t| matches!(t.message, Message::Probe { .. }))
    {
        now = node.poll_timeout().expect("its leader timeout");
        node.handle_timeout(now);
    }
    node.handle_message(now, NodeId(1), Message::Election { term: hub_term });
    assert!(
        sent(&mut node).is_empty(),
        "the Election waits for the probe"
    );
    for member in [1, 2, 3] {
        node.handle_message(
            now,
            NodeId(member),
            Message::ProbeReply {
                term: Term(1),
                leader: None,
                cut_off: false,
            },
        );
    }
    let concluded = node.poll_timeout().expect("the probe's answer timeout");
    node.handle_timeout(concluded);
    assert_eq!(node.term(), hub_term, "4 joins 1's election");
    let out = sent(&mut node);
    assert!(!out.is_empty());
    assert!(out.iter().all(|t| t.message.term() == hub_term), "{out:?}");
}

/// 5 resigned term 1, lost its state, and leads term 1 again (A3 broken: it
/// forgot it led it). 2 heard the resignation, so 5's heartbeats of term 1
/// read as stale; but 2 votes for 5's new claim of term 1 (it voted for 5 in
/// term 1 already), and from then on 5's heartbeats are those of the
/// leadership it voted for: 2 follows it. Without that, 2 dropped them for
/// good and, under `Preemption::Never`, nobody else stood: found by the
/// `cluster` fuzz target (a cluster that never agreed on a leader after the
/// faults stopped).
#[test]
fn a_member_that_heard_5_resign_follows_5_again_once_it_votes_for_its_new_claim() {
    let now = Instant::now();
    let mut node = member_following_5(NodeId(2), now);
    five_resigns_term_1(&mut node, now, None);
    sent(&mut node);
    let later = now + Duration::from_millis(600);
    let heartbeat = Message::Heartbeat {
        term: Term(1),
        round: 1,
    };
    node.handle_message(later, NodeId(5), heartbeat.clone());
    assert_eq!(
        node.leader(),
        None,
        "a heartbeat after the resignation is stale"
    );
    let claim = Message::Coordinator {
        term: Term(1),
        round: 0,
    };
    node.handle_message(later, NodeId(5), claim);
    assert!(
        sent(&mut node).iter().any(|t| t.to == NodeId(5)
            && t.message
                == Message::Ack {
                    term: Term(1),
                    round: 0
                }),
        "2 votes for 5's new claim"
    );
    node.handle_message(later, NodeId(5), heartbeat);
    assert_eq!(node.leader().map(|leader| leader.id), Some(NodeId(5)));
}

/// Found by the cluster fuzz target under the ring with a quorum: 5 resigned,
/// crashed and came back without its state, and led term 1 again without a
/// claim 4 would vote for anew (4's vote of term 1 was already 5's). 4 took
/// 5's heartbeats for stale ones sent before the resignation, and every probe
/// of 4's found 5 leading, so 4 neither stood nor followed, for good.
#[test]
fn process_4_follows_5_again_once_5_answers_its_probe_sent_after_the_resignation() {
    let now = Instant::now();
    let mut node = member_following_5(NodeId(4), now);
    five_resigns_term_1(&mut node, now, None);
    sent(&mut node);
    let heartbeat = Message::Heartbeat {
        term: Term(1),
        round: 1,
    };
    // 4 elects after its stagger: a probe of every member, 5 included.
    let mut at = now;
    while !sent(&mut node)
        .iter()
        .any(|t| t.to == NodeId(5) && matches!(t.message, Message::Probe { .. }))
    {
        at = node.poll_timeout().expect("4 elects after the resignation");
        node.handle_timeout(at);
    }
    node.handle_message(at, NodeId(5), heartbeat.clone());
    assert_eq!(
        node.leader(),
        None,
        "a heartbeat after the resignation may have been sent before it"
    );
    for from in [1, 2, 3, 5] {
        let reply = Message::ProbeReply {
            term: Term(1),
            leader: Some(NodeId(5)),
            cut_off: false,
        };
        node.handle_message(at, NodeId(from), reply);
    }
    assert!(
        !sent(&mut node).iter().any(|t| matches!(
            t.message,
            Message::Election { .. } | Message::Coordinator { .. }
        )),
        "5 answered it leads: 4 does not stand against it"
    );
    node.handle_message(at, NodeId(5), heartbeat);
    assert_eq!(
        node.leader().map(|leader| leader.id),
        Some(NodeId(5)),
        "5's answer to a probe sent after it resigned says it leads again"
    );
}

#[test]
fn a_reply_of_5_to_a_probe_sent_before_it_resigned_is_not_news() {
    let now = Instant::now();
    let mut node = member_following_5(NodeId(4), now);
    // 4 probes while it follows 5, to know whether to answer 3's election
    // (docs/protocol.md: R7); then 5 resigns, and its reply, sent before,
    // arrives after.
    node.handle_message(now, NodeId(3), Message::Election { term: Term(1) });
    assert!(
        sent(&mut node)
            .iter()
            .any(|t| t.to == NodeId(5) && matches!(t.message, Message::Probe { .. })),
        "4, without a verdict, probes before it answers 3"
    );
    five_resigns_term_1(&mut node, now, None);
    let reply = Message::ProbeReply {
        term: Term(1),
        leader: Some(NodeId(5)),
        cut_off: false,
    };
    node.handle_message(now, NodeId(5), reply);
    node.handle_message(
        now,
        NodeId(5),
        Message::Heartbeat {
            term: Term(1),
            round: 1,
        },
    );
    assert_eq!(node.leader(), None, "a stale heartbeat is not followed");
}
