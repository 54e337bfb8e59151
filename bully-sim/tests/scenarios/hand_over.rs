//! A planned hand-over (`Node::hand_over`): the leader of five steps down and
//! names the member that elects first, which leads well within a leader
//! timeout, the time a crash would cost; the old leader abstains meanwhile and
//! does not take the leadership back. A hand-over the Bully rule would not
//! honour (a live member above the one named) is refused and changes nothing.
//! Every algorithm, with and without a quorum, in the deterministic simulator.

use std::time::Duration;

use bully_core::{Algorithm, CommandError, Config, NodeId, Quorum, Role};
use bully_sim::{Simulation, scenario};

const ALGORITHMS: [Algorithm; 3] = [Algorithm::Classic, Algorithm::Modified, Algorithm::Ring];
const QUORUMS: [Quorum; 2] = [Quorum::None, Quorum::Majority];

fn configs() -> Vec<Config> {
    let mut configs = Vec::new();
    for algorithm in ALGORITHMS {
        for quorum in QUORUMS {
            configs.push(
                Config::default()
                    .with_algorithm(algorithm)
                    .with_quorum(quorum),
            );
        }
    }
    configs
}

/// Five members, settled under 5. 5 hands over to `to`; returns how long,
/// in simulated time, until `expected` led with everyone agreeing.
fn hand_over_from_five(
    config: &Config,
    to: Option<NodeId>,
    expected: NodeId,
) -> (Simulation, Duration) {
    let mut sim = scenario::settled(config, 5, 11).unwrap();
    assert_eq!(sim.agreed_leader(), Some(NodeId(5)), "{config:?}");
    let abstention = sim.settle_bound() * 4;
    let until = sim.now() + abstention;
    let handed = sim
        .command(NodeId(5), |node, now| node.hand_over(now, to, until))
        .unwrap();
    assert_eq!(handed, Ok(true), "{config:?}: the leader hands over");
    let started = sim.now();
    let bound = sim.settle_bound();
    assert!(
        sim.run_until_true(bound, |sim| sim.agreed_leader() == Some(expected)),
        "{config:?}: {expected} does not lead after 5 handed over to {to:?}"
    );
    let took = sim.now() - started;
    // 5 keeps out until its abstention ends, whatever the policy says about
    // a higher member following a lower leader.
    let left = until.saturating_duration_since(sim.now()) - Duration::from_millis(1);
    assert!(
        !sim.run_until_true(left, |sim| sim.leaders().contains(&NodeId(5))),
        "{config:?}: 5 took the leadership back during the hand-over's abstention"
    );
    assert!(
        sim.violations().is_empty(),
        "{config:?}: {:?}",
        sim.violations()
    );
    (sim, took)
}

#[test]
fn leader_5_hands_over_to_the_next_highest_well_within_a_leader_timeout() {
    for config in configs() {
        for to in [None, Some(NodeId(4))] {
            let (_, took) = hand_over_from_five(&config, to, NodeId(4));
            // A crash is noticed only after a leader timeout; the hand-over
            // does not wait for one.
            assert!(
                took < config.leader_timeout() / 2,
                "{config:?}, to {to:?}: {took:?} to a new leader"
            );
        }
    }
}

/// After a refused hand-over, 5 still leads, does not abstain, and everyone
/// agrees on it a settle bound later.
fn five_leads_on_after_a_refusal(config: &Config, sim: &mut Simulation) {
    let five = sim.node(NodeId(5)).unwrap();
    assert_eq!(five.role(), Role::Leader, "{config:?}");
    assert_eq!(five.abstaining_until(), None, "{config:?}");
    let bound = sim.settle_bound();
    sim.run_for(bound);
    assert_eq!(sim.agreed_leader(), Some(NodeId(5)), "{config:?}");
}

#[test]
fn a_hand_over_to_3_while_4_is_live_is_refused_and_changes_nothing() {
    for config in configs() {
        let mut sim = scenario::settled(&config, 5, 11).unwrap();
        let until = sim.now() + sim.settle_bound();
        let refused = sim
            .command(NodeId(5), |node, now| {
                node.hand_over(now, Some(NodeId(3)), until)
            })
            .unwrap();
        assert_eq!(
            refused,
            Err(CommandError::Outranked {
                to: NodeId(3),
                by: NodeId(4)
            }),
            "{config:?}"
        );
        five_leads_on_after_a_refusal(&config, &mut sim);
    }
}

/// Five members under 5; 4 crashes, and 5 learns it: with a quorum, from
/// 4's acknowledgements stopping; without, told by `suspect` ("process 5
/// notices 4 is down").
fn five_led_by_5_knowing_4_is_down(config: &Config) -> Simulation {
    let mut sim = scenario::settled(config, 5, 11).unwrap();
    sim.crash(NodeId(4)).unwrap();
    if config.quorum() != Quorum::None {
        sim.run_for(config.heartbeat_interval() * 3);
    } else {
        sim.command(NodeId(5), |node, now| node.suspect(now, NodeId(4)))
            .unwrap()
            .unwrap();
    }
    sim
}

/// [`five_led_by_5_knowing_4_is_down`], then 5 leaves the leadership by
/// `leave`; returns how long until 3 leads.
fn three_leads_after(
    config: &Config,
    leave: impl FnOnce(&mut bully_core::Node, std::time::Instant, std::time::Instant) -> bool,
) -> Duration {
    let mut sim = five_led_by_5_knowing_4_is_down(config);
    let until = sim.now() + sim.settle_bound() * 4;
    let left = sim
        .command(NodeId(5), |node, now| leave(node, now, until))
        .unwrap();
    assert!(left, "{config:?}: 5 does not leave its leadership");
    let started = sim.now();
    let bound = sim.settle_bound();
    assert!(
        sim.run_until_true(bound, |sim| sim.agreed_leader() == Some(NodeId(3))),
        "{config:?}: 3 does not lead after 5 left"
    );
    assert!(
        sim.violations().is_empty(),
        "{config:?}: {:?}",
        sim.violations()
    );
    sim.now() - started
}

#[test]
fn once_4_is_gone_5_hands_over_to_3_which_elects_first() {
    for config in configs() {
        let named = three_leads_after(&config, |node, now, until| {
            node.hand_over(now, Some(NodeId(3)), until).unwrap()
        });
        let abstained =
            three_leads_after(&config, |node, now, until| node.abstain_until(now, until));
        if config.quorum() == Quorum::None || config.algorithm() == Algorithm::Ring {
            // 3 is not the highest below 5 by rank (4 is, crashed), and no
            // resignation names it (without a quorum nothing is
            // acknowledged; the ring names nobody): named, it elects at once
            // instead of after its rank's stagger.
            assert!(
                named < abstained,
                "{config:?}: {named:?} named, {abstained:?} not"
            );
        } else {
            // With a quorum 5 names the highest member still acknowledging
            // anyway (docs/protocol.md, R21): 3.
            assert_eq!(named, abstained, "{config:?}");
        }
    }
}

#[test]
fn once_5_knows_4_is_down_a_hand_over_to_4_is_refused_and_changes_nothing() {
    // 4 crashes and 5 learns it. A hand-over to 4 would name a member that never hears it, and the others
    // would elect only after their staggered timeouts: refused, and 5 leads
    // on.
    for config in configs() {
        let mut sim = five_led_by_5_knowing_4_is_down(&config);
        let until = sim.now() + sim.settle_bound();
        let refused = sim
            .command(NodeId(5), |node, now| {
                node.hand_over(now, Some(NodeId(4)), until)
            })
            .unwrap();
        assert_eq!(refused, Err(CommandError::NotLive(NodeId(4))), "{config:?}");
        five_leads_on_after_a_refusal(&config, &mut sim);
        // 3 is live: the hand-over to it goes through.
        let bound = sim.settle_bound();
        let handed = sim
            .command(NodeId(5), |node, now| {
                node.hand_over(now, Some(NodeId(3)), now + bound)
            })
            .unwrap();
        assert_eq!(handed, Ok(true), "{config:?}");
    }
}

#[test]
fn a_hand_over_names_a_member_that_may_lead() {
    let config = Config::default()
        .with_quorum(Quorum::Majority)
        .with_observers([NodeId(2)])
        .with_observers_vote(true);
    let mut sim = scenario::settled(&config, 3, 11).unwrap();
    assert_eq!(sim.agreed_leader(), Some(NodeId(3)));
    let until = sim.now() + sim.settle_bound();
    let mut ask = |to: u64| {
        sim.command(NodeId(3), |node, now| {
            node.hand_over(now, Some(NodeId(to)), until)
        })
        .unwrap()
    };
    assert_eq!(ask(3), Err(CommandError::SelfReference(NodeId(3))));
    assert_eq!(ask(9), Err(CommandError::UnknownMember(NodeId(9))));
    assert_eq!(ask(2), Err(CommandError::NotCandidate(NodeId(2))));
    assert_eq!(sim.node(NodeId(3)).unwrap().role(), Role::Leader);
    // A follower has nothing to hand over.
    let follower = sim
        .command(NodeId(1), |node, now| node.hand_over(now, None, until))
        .unwrap();
    assert_eq!(follower, Ok(false));
    assert_eq!(sim.agreed_leader(), Some(NodeId(3)));
}

/// A hand-over to nobody in particular where nobody could take over: `leader`
/// is refused (`NoSuccessor`), keeps leading and does not abstain.
fn refused_for_want_of_a_successor(config: &Config, sim: &mut Simulation, leader: NodeId) {
    let until = sim.now() + sim.settle_bound() * 4;
    let refused = sim
        .command(leader, |node, now| node.hand_over(now, None, until))
        .unwrap();
    assert_eq!(refused, Err(CommandError::NoSuccessor), "{config:?}");
    let node = sim.node(leader).unwrap();
    assert_eq!(node.role(), Role::Leader, "{config:?}");
    assert_eq!(node.abstaining_until(), None, "{config:?}");
    let bound = sim.settle_bound();
    sim.run_for(bound);
    assert!(sim.leaders().contains(&leader), "{config:?}");
    assert!(
        sim.violations().is_empty(),
        "{config:?}: {:?}",
        sim.violations()
    );
}

#[test]
fn a_lone_member_asked_to_hand_over_keeps_its_work() {
    for config in configs() {
        let mut sim = scenario::settled(&config, 1, 11).unwrap();
        assert_eq!(sim.agreed_leader(), Some(NodeId(1)), "{config:?}");
        refused_for_want_of_a_successor(&config, &mut sim, NodeId(1));
    }
}

#[test]
fn a_leader_whose_peers_are_all_gone_keeps_its_work_when_asked_to_hand_over() {
    // Without a quorum: three members, 1 and 2 crash and 3 learns it. With a
    // majority: two machines and a voting witness, 2; 1 crashes and its
    // acknowledgements stop, while the witness keeps 3's quorum.
    for config in configs() {
        let mut sim;
        if config.quorum() == Quorum::None {
            sim = scenario::settled(&config, 3, 11).unwrap();
            for gone in [NodeId(1), NodeId(2)] {
                sim.crash(gone).unwrap();
                sim.command(NodeId(3), |node, now| node.suspect(now, gone))
                    .unwrap()
                    .unwrap();
            }
        } else {
            let config = config
                .clone()
                .with_observers([NodeId(2)])
                .with_observers_vote(true);
            sim = scenario::settled(&config, 3, 11).unwrap();
            sim.crash(NodeId(1)).unwrap();
            sim.run_for(config.heartbeat_interval() * 3);
        }
        assert_eq!(sim.agreed_leader(), Some(NodeId(3)), "{config:?}");
        refused_for_want_of_a_successor(&config, &mut sim, NodeId(3));
    }
}
