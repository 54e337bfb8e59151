//! Probes seen from one node: a probe asked for twice (the second request's
//! purposes join the first's), the order of the Elections that waited for one,
//! the start's quick re-probe, and how long a failed probe's verdict holds;
//! then `Connectivity` on its own: news that forgets a verdict, abstaining,
//! and what ends a takeover.

use std::time::Duration;

use super::{Connectivity, Verdict};
use crate::config::{Config, Preemption, Quorum};
use crate::message::{Message, NodeId, Term};
use crate::node::Node;
use crate::node::Phase;
use crate::stats::DropReason;
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

#[test]
fn the_newest_waiting_election_is_handled_even_by_a_claiming_node() {
    // The Elections that waited for a probe are answered newest first; once the
    // node claims, the older ones are outdated (its claim tells them more), but
    // the newest is always handled as any Election would be.
    let config = Config::default().with_quorum(Quorum::Majority);
    let mut node = Node::new(NodeId(3), (1..=4).map(NodeId), config).unwrap();
    let now = Instant::now();
    node.term = Term(2);
    node.phase = Phase::Claiming { term: Term(2) };
    let waiting = [(NodeId(1), Term(3)), (NodeId(2), Term(1))]
        .into_iter()
        .collect();
    node.answer_waiting(now, waiting);
    // 1's Election (term 3) goes through as any would: 3 has no fresh verdict
    // on its reach, so it waits for a probe. 2's older one is outdated.
    let sent: Vec<_> = std::iter::from_fn(|| node.poll_transmit()).collect();
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert!(
        sent.iter()
            .all(|t| matches!(t.message, Message::Probe { .. }))
    );
    assert_eq!(node.stats().dropped[DropReason::Outdated], 1);
}

#[test]
fn the_highest_started_alone_asks_again_every_answer_timeout_for_a_leader_timeout() {
    // 4 of 1..=4 starts before the others listen: nobody replies to its probes.
    // For a leader timeout after its start it asks again an answer timeout
    // after each probe concludes; the probe that concludes as the leader
    // timeout ends (5 answer timeouts, so one concludes exactly then) backs off
    // as any failed probe does, a leader timeout at the least.
    let answer = Duration::from_millis(100);
    let config = Config::default()
        .with_quorum(Quorum::Majority)
        .with_answer_timeout(answer)
        .with_leader_timeout(answer * 5);
    let mut node = Node::new(NodeId(4), (1..=4).map(NodeId), config).unwrap();
    node.restore(crate::node::DurableState::first_boot());
    let start = Instant::now();
    node.start(start);
    let mut probed_at = Vec::new();
    let mut now = start;
    while now <= start + answer * 12 {
        let probes = std::iter::from_fn(|| node.poll_transmit())
            .filter(|t| matches!(t.message, Message::Probe { .. }))
            .count();
        if probes > 0 {
            assert_eq!(probes, 3, "a probe asks every other member");
            probed_at.push((now - start).as_millis());
        }
        let Some(next) = node.poll_timeout() else {
            break;
        };
        now = next;
        node.handle_timeout(now);
    }
    assert_eq!(
        probed_at,
        [0, 200, 400, 1_000],
        "probes at its start, an answer timeout after each failed one, then a back-off"
    );
}

/// 3 of 1..=5 (a majority is 3) probes to stand and hears only 1: the probe
/// fails. Returns the node, its configuration, when the probe concluded and
/// when 3 will probe again.
fn cut_off_3_of_5() -> (Node, Config, Instant, Instant) {
    let config = Config::default().with_quorum(Quorum::Majority);
    let mut node = Node::new(NodeId(3), (1..=5).map(NodeId), config.clone()).unwrap();
    // A member of a new cluster: it has promised nothing it forgot.
    node.restore(crate::node::DurableState::first_boot());
    let start = Instant::now();
    node.start_probe(start, true);
    while node.poll_transmit().is_some() {}
    let reply = Message::ProbeReply {
        term: Term(0),
        leader: None,
        cut_off: false,
    };
    node.handle_message(start + Duration::from_millis(20), NodeId(1), reply);
    let concluded = node.poll_timeout().unwrap();
    node.handle_timeout(concluded);
    assert!(node.connectivity.probe.is_none(), "the probe concluded");
    let next_probe = node.poll_timeout().unwrap();
    (node, config, concluded, next_probe)
}

#[test]
fn a_member_cut_off_from_a_quorum_votes_for_a_lower_claim_until_its_next_probe() {
    // 3 of 1..=5 (a majority is 3) hears only 1: its probe to stand fails. It
    // learns nothing new of its links before its next probe, so 1's probe and
    // claim, which come a leader timeout later but before that probe, are told
    // that 3 is cut off and get its vote: not a second probe that would fail
    // as the first did while 1's election waited for 3 and lost its vote.
    let (mut node, config, concluded, next_probe) = cut_off_3_of_5();
    let asked = concluded + config.leader_timeout() + Duration::from_millis(1);
    assert!(asked < next_probe, "3 ranks below 4 and 5: it waits longer");
    node.handle_message(asked, NodeId(1), Message::Probe { term: Term(0) });
    node.handle_message(
        asked,
        NodeId(1),
        Message::Coordinator {
            term: Term(1),
            round: 0,
        },
    );
    let sent: Vec<_> = std::iter::from_fn(|| node.poll_transmit())
        .map(|t| (t.to, t.message))
        .collect();
    assert_eq!(
        sent,
        [
            (
                NodeId(1),
                Message::ProbeReply {
                    term: Term(0),
                    leader: None,
                    cut_off: true
                }
            ),
            (
                NodeId(1),
                Message::Ack {
                    term: Term(1),
                    round: 0
                }
            )
        ]
    );
}

#[test]
fn a_member_that_voted_for_a_lower_claim_follows_it_from_its_first_heartbeat() {
    // 3 of 1..=5 hears only 1; its probe to stand fails, and it votes for 1's
    // claim while it still knows it is cut off. 1's first heartbeat comes at
    // the very instant 3 would probe again: the finding has run out, but 3
    // voted for this leadership, so it follows it and acknowledges the
    // heartbeat rather than probing first (which would hold the
    // acknowledgement back for an answer timeout). From the next heartbeat it
    // asks whether it may take over, acknowledging all the while.
    let (mut node, config, concluded, next_probe) = cut_off_3_of_5();
    node.handle_message(
        concluded,
        NodeId(1),
        Message::Coordinator {
            term: Term(1),
            round: 0,
        },
    );
    let vote: Vec<_> = std::iter::from_fn(|| node.poll_transmit())
        .map(|t| t.message)
        .collect();
    assert_eq!(
        vote,
        [Message::Ack {
            term: Term(1),
            round: 0
        }]
    );

    let heartbeat = |node: &mut Node, at: Instant, round: u64| {
        node.handle_message(
            at,
            NodeId(1),
            Message::Heartbeat {
                term: Term(1),
                round,
            },
        );
        std::iter::from_fn(|| node.poll_transmit())
            .map(|t| t.message)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        heartbeat(&mut node, next_probe, 1),
        [Message::Ack {
            term: Term(1),
            round: 1
        }],
        "3 follows the leadership it voted for"
    );
    assert_eq!(node.leader().map(|leader| leader.id), Some(NodeId(1)));
    let sent = heartbeat(&mut node, next_probe + config.heartbeat_interval(), 2);
    assert_eq!(
        sent.iter()
            .filter(|m| matches!(m, Message::Probe { .. }))
            .count(),
        4,
        "it asks every other member whether it may take over: {sent:?}"
    );
    assert!(
        sent.contains(&Message::Ack {
            term: Term(1),
            round: 2
        }),
        "{sent:?}"
    );
    assert_eq!(node.leader().map(|leader| leader.id), Some(NodeId(1)));
}

// The owner type on its own: what each of its rules keeps or forgets.

/// A verdict that 3 does not reach a quorum, reached at `at` from 1's reply.
fn cut_off_verdict(at: Instant) -> Connectivity {
    Connectivity {
        verdict: Some(Verdict {
            reaches_quorum: false,
            at,
        }),
        verdict_heard: vec![NodeId(1)],
        failures: 2,
        quiet_until: Some(at + Duration::from_secs(1)),
        ..Connectivity::default()
    }
}

#[test]
fn news_from_a_voter_the_verdict_did_not_hear_forgets_it_and_its_back_off() {
    // 3 concluded, from 1's reply alone, that it does not reach a quorum. 1
    // again, or an observer that does not vote, is no news; 2, a voter it did
    // not hear then, is: a link may have healed, so 3 probes when it next
    // needs to know, without waiting out its back-off.
    let now = Instant::now();
    let voters = |id: NodeId| id != NodeId(4);
    let mut connectivity = cut_off_verdict(now);
    connectivity.heard_from(NodeId(1), voters);
    connectivity.heard_from(NodeId(4), voters);
    assert_eq!(connectivity, cut_off_verdict(now), "no news");
    connectivity.heard_from(NodeId(2), voters);
    assert_eq!(connectivity.verdict, None);
    assert_eq!(connectivity.verdict_heard, []);
    assert_eq!(connectivity.quiet_until, None);
    assert_eq!(connectivity.failures, 0);
}

#[test]
fn a_verdict_that_reaches_a_quorum_is_no_news_to_forget() {
    let now = Instant::now();
    let mut connectivity = cut_off_verdict(now);
    connectivity.verdict = Some(Verdict {
        reaches_quorum: true,
        at: now,
    });
    let before = connectivity.clone();
    connectivity.heard_from(NodeId(2), |_| true);
    assert_eq!(connectivity, before);
}

#[test]
fn abstaining_forgoes_the_probes_stand_its_clearance_and_a_takeover() {
    let now = Instant::now();
    let mut node = Node::new(
        NodeId(3),
        (1..=4).map(NodeId),
        Config::default().with_quorum(Quorum::Majority),
    )
    .unwrap();
    node.connectivity.taking_over = true;
    node.start_probe(now, true);
    node.connectivity.cleared_until = Some(now + Duration::from_secs(1));
    let connectivity = &mut node.connectivity;
    connectivity.forgo_standing();
    let probe = connectivity
        .probe
        .as_ref()
        .expect("the probe goes on, to learn");
    assert!(!probe.stand && !probe.takeover);
    assert_eq!(connectivity.cleared_until, None);
    assert!(!connectivity.is_taking_over());
}

#[test]
fn only_accepting_a_higher_leader_ends_a_takeover() {
    // 3 set out to take over from a lower leader: accepting 2 again (or
    // itself) keeps it at that; accepting 4, above it, ends it.
    let mut connectivity = Connectivity {
        taking_over: true,
        ..Connectivity::default()
    };
    connectivity.leader_accepted(NodeId(2), NodeId(3));
    connectivity.leader_accepted(NodeId(3), NodeId(3));
    assert!(connectivity.is_taking_over());
    connectivity.leader_accepted(NodeId(4), NodeId(3));
    assert!(!connectivity.is_taking_over());
}
