//! The leadership lifecycle: observers, stepping down, and membership changes.

use std::time::Duration;

use bully_core::{
    Algorithm, Config, DropReason, Event, MessageKind, NodeId, Preemption, Quorum, Role,
};
use bully_sim::scenario;
use bully_sim::{Simulation, TraceEntry};

const ALGORITHMS: [Algorithm; 3] = [Algorithm::Classic, Algorithm::Modified, Algorithm::Ring];

#[test]
fn observers_follow_and_report_the_leader_but_never_stand_or_answer() {
    for algorithm in ALGORITHMS {
        // 4 and 5 are observers: 3 is the highest that may lead.
        let config = Config::default()
            .with_algorithm(algorithm)
            .with_observers([NodeId(4), NodeId(5)]);
        let mut sim = scenario::settled(&config, 5, 1).unwrap();
        assert_eq!(sim.agreed_leader(), Some(NodeId(3)), "{algorithm:?}");
        for observer in [4, 5] {
            let node = sim.node(NodeId(observer)).unwrap();
            assert_eq!(
                node.leader().map(|l| l.id),
                Some(NodeId(3)),
                "{algorithm:?}: it reports the leader"
            );
            let sent = node.stats().sent;
            for kind in [
                MessageKind::Election,
                MessageKind::Answer,
                MessageKind::Coordinator,
                MessageKind::Takeover,
            ] {
                assert_eq!(
                    sent[kind], 0,
                    "{algorithm:?}: observer {observer} sent {kind}"
                );
            }
            assert_eq!(node.stats().times_leader, 0);
        }
        // The leader dies: another candidate takes over, never an observer.
        sim.crash(NodeId(3)).unwrap();
        sim.run_for(sim.settle_bound());
        assert_eq!(sim.agreed_leader(), Some(NodeId(2)), "{algorithm:?}");
        // With every candidate gone, the observers name no leader.
        sim.crash(NodeId(2)).unwrap();
        sim.crash(NodeId(1)).unwrap();
        sim.run_for(sim.settle_bound());
        assert!(sim.leaders().is_empty(), "{algorithm:?}");
        assert_eq!(sim.node(NodeId(5)).unwrap().leader(), None);
        assert!(sim.violations().is_empty(), "{:?}", sim.violations());
    }
}

#[test]
fn observers_do_not_count_toward_a_quorum_unless_configured_to() {
    for (vote, survives) in [(false, false), (true, true)] {
        let config = Config::default()
            .with_quorum(Quorum::Majority)
            .with_observers([NodeId(4), NodeId(5)])
            .with_observers_vote(vote);
        let mut sim = scenario::settled(&config, 5, 2).unwrap();
        assert_eq!(sim.agreed_leader(), Some(NodeId(3)));
        // 1 and 2 crash: 3 alone is one voter of three, or, if observers vote,
        // three of five.
        sim.crash(NodeId(1)).unwrap();
        sim.crash(NodeId(2)).unwrap();
        sim.run_for(sim.settle_bound());
        let leads = sim.node(NodeId(3)).unwrap().role() == Role::Leader;
        assert_eq!(leads, survives, "observers vote: {vote}");
        assert!(sim.violations().is_empty(), "{:?}", sim.violations());
    }
}

/// The ring's two passes round `n` members (the other algorithms announce at once).
fn ring_passes(config: &Config, n: u32) -> Duration {
    match config.algorithm() {
        Algorithm::Ring => config.round_trip() * 2 * n,
        _ => Duration::ZERO,
    }
}

#[test]
fn a_leader_that_steps_down_is_replaced_within_one_answer_timeout_and_a_few_delays() {
    for algorithm in ALGORITHMS {
        let config = Config::default()
            .with_algorithm(algorithm)
            .with_preemption(Preemption::Never);
        let mut sim = scenario::settled(&config, 5, 3).unwrap();
        sim.reset_counts();
        assert!(
            sim.command(NodeId(5), |node, now| node.step_down(now))
                .unwrap()
        );
        let elected = sim.run_until_true(sim.settle_bound(), |sim| {
            sim.agreed_leader() == Some(NodeId(4))
        });
        assert!(elected, "{algorithm:?}");
        let took = sim.since_reset();
        let delays = sim.in_delays(took);
        eprintln!(
            "{algorithm:?}: step-down to agreement on 4 in {took:?} ({delays:.1} message delays), {} messages",
            sim.sent().total() - sim.sent()[MessageKind::Heartbeat]
        );
        let limit =
            config.answer_timeout() + config.max_message_delay() * 4 + ring_passes(&config, 5);
        assert!(took <= limit, "{algorithm:?}: {took:?} > {limit:?}");
        // Under Never the resigning member does not win again.
        sim.run_for(Duration::from_secs(5));
        assert_eq!(sim.agreed_leader(), Some(NodeId(4)), "{algorithm:?}");
        assert!(sim.violations().is_empty(), "{:?}", sim.violations());
    }
}

#[test]
fn under_always_the_resigning_highest_member_takes_the_leadership_back() {
    let config = Config::default();
    let mut sim = scenario::settled(&config, 5, 4).unwrap();
    sim.reset_counts();
    sim.command(NodeId(5), |node, now| node.step_down(now))
        .unwrap();
    sim.run_for(sim.settle_bound());
    assert_eq!(sim.agreed_leader(), Some(NodeId(5)));
    assert_eq!(sim.leader_changes(), 2, "4 took over, then 5 took back");
}

#[test]
fn a_removed_leader_is_replaced_at_once_sent_nothing_and_not_listened_to() {
    for algorithm in ALGORITHMS {
        let config = Config::default().with_algorithm(algorithm);
        let mut sim = scenario::settled(&config, 5, 5).unwrap();
        sim.enable_trace();
        let mark = sim.trace().len();
        for id in 1..=4 {
            sim.command(NodeId(id), |node, now| node.remove_member(now, NodeId(5)))
                .unwrap()
                .unwrap();
        }
        // 5 does not know yet and keeps sending heartbeats.
        sim.run_for(sim.settle_bound());
        let leaders_of_the_rest: Vec<_> = (1..=4)
            .map(|id| sim.node(NodeId(id)).unwrap().leader().map(|l| l.id))
            .collect();
        assert_eq!(leaders_of_the_rest, [Some(NodeId(4)); 4], "{algorithm:?}");
        let to_five = sim.trace()[mark..].iter().filter(|record| {
            matches!(&record.entry, TraceEntry::Send { from, to, .. } if *to == NodeId(5) && *from != NodeId(5))
        });
        assert_eq!(
            to_five.count(),
            0,
            "{algorithm:?}: nobody sends to the removed member"
        );
        let dropped: u64 = (1..=4)
            .map(|id| sim.node(NodeId(id)).unwrap().stats().dropped[DropReason::NotMember])
            .sum();
        assert!(
            dropped > 0,
            "{algorithm:?}: its heartbeats are dropped as a stranger's"
        );
    }
}

#[test]
fn an_added_member_joins_and_as_the_highest_takes_over() {
    for algorithm in ALGORITHMS {
        let config = Config::default().with_algorithm(algorithm);
        let mut sim = Simulation::new(6, (1..=5).map(NodeId), config.clone()).unwrap();
        // 5 is not a member yet: the others start without it.
        sim.crash(NodeId(5)).unwrap();
        for id in 1..=4 {
            sim.command(NodeId(id), |node, now| node.remove_member(now, NodeId(5)))
                .unwrap()
                .unwrap();
        }
        sim.start_all();
        sim.run_for(sim.settle_bound());
        assert_eq!(sim.agreed_leader(), Some(NodeId(4)), "{algorithm:?}");
        for id in 1..=4 {
            sim.command(NodeId(id), |node, now| node.add_member(now, NodeId(5)))
                .unwrap()
                .unwrap();
        }
        assert_eq!(
            sim.node(NodeId(1)).unwrap().members(),
            [NodeId(1), NodeId(2), NodeId(3), NodeId(4), NodeId(5)]
        );
        sim.restart(NodeId(5)).unwrap();
        sim.run_for(sim.settle_bound());
        assert_eq!(sim.agreed_leader(), Some(NodeId(5)), "{algorithm:?}");
    }
}

#[test]
fn membership_commands_refuse_what_makes_no_sense() {
    let mut sim = scenario::settled(&Config::default(), 3, 7).unwrap();
    let errors = sim
        .command(NodeId(1), |node, now| {
            (
                node.add_member(now, NodeId(2)),
                node.remove_member(now, NodeId(1)),
                node.remove_member(now, NodeId(9)),
            )
        })
        .unwrap();
    assert!(errors.0.is_err() && errors.1.is_err() && errors.2.is_err());
}

#[test]
fn a_leader_cut_off_from_its_quorum_sees_its_lease_expire_before_anyone_else_leads() {
    for algorithm in ALGORITHMS {
        let config = Config::default()
            .with_algorithm(algorithm)
            .with_quorum(Quorum::Majority);
        let mut sim = scenario::settled(&config, 3, 1).unwrap();
        let leader = sim.node(NodeId(3)).unwrap();
        let until = leader.lease_until().expect("a quorum leader has a lease");
        assert!(until > sim.now(), "{algorithm:?}: the lease lies ahead");
        assert_eq!(sim.node(NodeId(2)).unwrap().lease_until(), None);

        // 3 is cut off from 1 and 2: nobody acknowledges its rounds any more.
        sim.enable_trace();
        sim.partition(&[&[NodeId(3)], &[NodeId(1), NodeId(2)]])
            .unwrap();
        sim.run_for(sim.failover_bound() * 2);
        let mut expired_at = None;
        let mut elected_at = None;
        let mut three = Vec::new();
        for record in sim.trace() {
            if let TraceEntry::Event { node, event } = &record.entry {
                if *node == NodeId(3) {
                    three.push(*event);
                    if matches!(event, Event::LeaseExpired { .. }) {
                        expired_at.get_or_insert(record.at_us);
                    }
                }
                if *node == NodeId(2) && matches!(event, Event::BecameLeader { .. }) {
                    elected_at.get_or_insert(record.at_us);
                }
            }
        }
        let position = three
            .iter()
            .position(|event| matches!(event, Event::LeaseExpired { .. }))
            .unwrap_or_else(|| panic!("{algorithm:?}: 3's lease never expired: {three:?}"));
        assert!(
            matches!(three.get(position + 1), Some(Event::SteppedDown { .. })),
            "{algorithm:?}: SteppedDown follows LeaseExpired: {three:?}"
        );
        let (expired, elected) = (expired_at.unwrap(), elected_at.unwrap());
        assert!(
            expired < elected,
            "{algorithm:?}: 3's lease ran out at {expired} µs, 2 leads from {elected} µs"
        );
        assert_eq!(sim.node(NodeId(3)).unwrap().lease_until(), None);
        assert!(sim.violations().is_empty(), "{:?}", sim.violations());
    }
}

#[test]
fn a_cluster_of_one_with_a_quorum_keeps_its_leadership() {
    // Its own vote is the majority: each heartbeat round renews its lease
    // without anyone's acknowledgement, so it leads once and for good.
    let config = Config::default().with_quorum(Quorum::Majority);
    let mut sim = bully_sim::Simulation::new(1, [NodeId(1)], config).unwrap();
    sim.start_all();
    sim.run_for(sim.settle_bound());
    let settled = *sim.node(NodeId(1)).unwrap().stats();
    assert_eq!(settled.times_leader, 1);
    sim.run_for(Duration::from_secs(10));
    let node = sim.node(NodeId(1)).unwrap();
    assert_eq!(node.role(), Role::Leader);
    assert_eq!(node.stats().times_leader, 1, "it never lost the leadership");
    assert_eq!(node.stats().elections_started, settled.elections_started);
}
