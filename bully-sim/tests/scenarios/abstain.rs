//! A member that abstains (`Node::abstain_until`) for a while: the leader of five
//! steps aside, the next member leads for the whole abstention, and afterwards
//! the returning member does what the preemption policy says; a member that
//! abstains while following is passed over when the leader crashes. Every
//! algorithm, with and without a quorum, in the deterministic simulator.

use std::time::Duration;

use bully_core::{Algorithm, Config, NodeId, Preemption, Quorum};
use bully_sim::{Simulation, scenario};

const ALGORITHMS: [Algorithm; 3] = [Algorithm::Classic, Algorithm::Modified, Algorithm::Ring];
const QUORUMS: [Quorum; 2] = [Quorum::None, Quorum::Majority];

/// Every configuration the tests run: each algorithm, without and with a quorum.
fn configs(preemption: Preemption) -> Vec<Config> {
    let mut configs = Vec::new();
    for algorithm in ALGORITHMS {
        for quorum in QUORUMS {
            configs.push(
                Config::default()
                    .with_algorithm(algorithm)
                    .with_quorum(quorum)
                    .with_preemption(preemption),
            );
        }
    }
    configs
}

/// How long the leader abstains: several failovers, so that taking the
/// leadership back during it could not go unnoticed.
fn abstention(sim: &Simulation) -> Duration {
    sim.settle_bound() * 4
}

/// Five members, 5 leads; 5 abstains for [`abstention`]. Returns the cluster
/// when 4 leads, and the abstention's end.
fn five_with_five_abstaining(config: &Config) -> (Simulation, std::time::Instant) {
    let mut sim = scenario::settled(config, 5, 7).unwrap();
    assert_eq!(sim.agreed_leader(), Some(NodeId(5)), "{config:?}");
    let until = sim.now() + abstention(&sim);
    let stepped_down = sim
        .command(NodeId(5), |node, now| node.abstain_until(now, until))
        .unwrap();
    assert!(stepped_down, "{config:?}: the leader steps down to abstain");
    assert_eq!(sim.node(NodeId(5)).unwrap().abstaining_until(), Some(until));
    let bound = sim.settle_bound();
    assert!(
        sim.run_until_true(bound, |sim| sim.agreed_leader() == Some(NodeId(4))),
        "{config:?}: 4 does not lead after 5 stepped aside"
    );
    (sim, until)
}

/// Runs to `until`; whether 5 considered itself leader at any instant.
fn five_led_before(sim: &mut Simulation, until: std::time::Instant) -> bool {
    let left = until.saturating_duration_since(sim.now()) - Duration::from_millis(1);
    sim.run_until_true(left, |sim| sim.leaders().contains(&NodeId(5)))
}

#[test]
fn an_abstaining_leader_steps_aside_and_takes_back_after_its_abstention() {
    for config in configs(Preemption::Always) {
        let (mut sim, until) = five_with_five_abstaining(&config);
        assert!(
            !five_led_before(&mut sim, until),
            "{config:?}: 5 led during its abstention"
        );
        assert_eq!(sim.agreed_leader(), Some(NodeId(4)), "{config:?}");
        let bound = sim.settle_bound();
        assert!(
            sim.run_until_true(bound, |sim| sim.agreed_leader() == Some(NodeId(5))),
            "{config:?}: 5 does not take back after its abstention"
        );
        assert_eq!(sim.node(NodeId(5)).unwrap().abstaining_until(), None);
        assert!(sim.violations().is_empty(), "{:?}", sim.violations());
    }
}

#[test]
fn under_never_the_member_that_abstained_keeps_following() {
    for config in configs(Preemption::Never) {
        let (mut sim, until) = five_with_five_abstaining(&config);
        assert!(!five_led_before(&mut sim, until), "{config:?}");
        let bound = sim.settle_bound();
        sim.run_for(bound);
        assert_eq!(sim.agreed_leader(), Some(NodeId(4)), "{config:?}");
        assert!(sim.violations().is_empty(), "{:?}", sim.violations());
    }
}

#[test]
fn an_abstaining_follower_is_passed_over_when_the_leader_crashes() {
    for config in configs(Preemption::Always) {
        let (mut sim, until) = five_with_five_abstaining(&config);
        // 4 crashes while 5 still abstains: 3 leads, with 5's vote.
        sim.crash(NodeId(4)).unwrap();
        let bound = sim.settle_bound();
        assert!(
            sim.run_until_true(bound, |sim| sim.agreed_leader() == Some(NodeId(3))),
            "{config:?}: 3 does not lead after 4 crashed"
        );
        assert!(
            sim.now() < until,
            "{config:?}: the test outran the abstention"
        );
        assert!(!five_led_before(&mut sim, until), "{config:?}");
        assert!(
            sim.run_until_true(bound, |sim| sim.agreed_leader() == Some(NodeId(5))),
            "{config:?}: 5 does not take back after its abstention"
        );
        assert!(sim.violations().is_empty(), "{:?}", sim.violations());
    }
}

#[test]
fn an_instant_already_passed_ends_the_abstention_at_once() {
    let config = Config::default().with_quorum(Quorum::Majority);
    let (mut sim, _) = five_with_five_abstaining(&config);
    let ended = sim
        .command(NodeId(5), |node, now| node.abstain_until(now, now))
        .unwrap();
    assert!(!ended, "a follower does not step down");
    assert_eq!(sim.node(NodeId(5)).unwrap().abstaining_until(), None);
    let bound = sim.settle_bound();
    assert!(sim.run_until_true(bound, |sim| sim.agreed_leader() == Some(NodeId(5))));
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}
