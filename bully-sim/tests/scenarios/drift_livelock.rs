//! A liveness counterexample the quorum sweep found at 100,000 schedules
//! (`BULLY_QUORUM_SEEDS=100000 cargo test --release -p bully-sim
//! --test scenarios quorum::`: classic Bully, seed 14765, three members,
//! `AtLeast(2)`, `AfterStable(800 ms)`, ρ = 0.1): after the faults stop, with every clock
//! within the bound, the two live members never agreed on a leader. Fixed by
//! sizing the waits for answers to a superior's probe on a slow clock
//! (docs/protocol.md, R14); the test fails on the code before that.
//!
//! Member 1's clock runs 10 % fast, 2's 10 % slow (3 is down). The faults (clock
//! steps, wrong detector reports, step-downs) leave 2 following 1 in term 2
//! while 1 leads nothing. Once they stop, the same round repeats for good:
//!
//! - 1 probes, finds no leader and stands (term 4, then 5, 6, ...): `Election`
//!   to 2, and it waits 100 ms on its clock, 90.9 ms of real time, for an
//!   answer.
//! - 2 has no probe younger than a leader timeout, so before it answers it
//!   probes (3.6: it answers only if it reaches a quorum): 50 ms on its slow
//!   clock, 55.6 ms of real time. Its `Answer` and its own claim reach 1 95.6 ms
//!   after 1's `Election`, 4.7 ms after 1 stopped waiting and claimed.
//! - Both claim the same term and each votes for itself: neither wins.
//! - 2 does not stand on its own between the rounds (its probe finds 1 naming
//!   no leader, and still it does not stand), so 1 starts the next round.
//!
//! With exact clocks 2's answer takes 90 ms against 1's 100 ms; the wait has no
//! room for the drift the configuration allows (the same class as
//! `drift_answer_timeout.rs`: waits on another member's timeout measured on
//! another clock). The same schedule passes without the drift, with it halved,
//! without the clock steps, or under `Preemption::Always`.

use std::time::Duration;

use bully_core::{Algorithm, Config, NodeId, Preemption, Quorum};
use bully_sim::Simulation;
use bully_sim::chaos::Action::{
    self, Advance, ClockStep, Crash, Drift, Jitter, Reorder, StartElection, StepDown, Suspect,
};

fn ns(nanos: u64) -> Duration {
    Duration::from_nanos(nanos)
}

/// The sweep's schedule for seed 14765, as it printed it.
fn schedule() -> Vec<Action> {
    vec![
        Drift {
            node: NodeId(1),
            ppm: 100000,
        },
        Drift {
            node: NodeId(2),
            ppm: -100000,
        },
        Drift {
            node: NodeId(3),
            ppm: 100000,
        },
        Advance(ns(291634882)),
        Crash(NodeId(3)),
        Advance(ns(238189106)),
        ClockStep {
            node: NodeId(1),
            by: ns(730969505),
        },
        Advance(ns(123412167)),
        Suspect {
            node: NodeId(2),
            suspect: NodeId(2),
        },
        Advance(ns(108338026)),
        Suspect {
            node: NodeId(1),
            suspect: NodeId(1),
        },
        Advance(ns(309096486)),
        StepDown(NodeId(1)),
        Advance(ns(102502237)),
        ClockStep {
            node: NodeId(2),
            by: ns(453327089),
        },
        Advance(ns(46468505)),
        Reorder(ns(9793718)),
        Advance(ns(33820952)),
        Crash(NodeId(3)),
        Advance(ns(365657229)),
        Suspect {
            node: NodeId(3),
            suspect: NodeId(1),
        },
        Advance(ns(3296618)),
        ClockStep {
            node: NodeId(3),
            by: ns(162242298),
        },
        Advance(ns(217519340)),
        StepDown(NodeId(3)),
        Advance(ns(177850840)),
        Reorder(ns(9796247)),
        Advance(ns(173255352)),
        ClockStep {
            node: NodeId(1),
            by: ns(8206221),
        },
        Advance(ns(124216485)),
        StartElection(NodeId(2)),
        Advance(ns(59731967)),
        Jitter(ns(46903787)),
        Advance(ns(157405016)),
        StartElection(NodeId(3)),
    ]
}

#[test]
fn a_lower_member_that_stops_waiting_too_soon_must_not_keep_the_cluster_leaderless() {
    let config = Config::default()
        .with_algorithm(Algorithm::Classic)
        .with_quorum(Quorum::AtLeast(2))
        .with_preemption(Preemption::AfterStable(Duration::from_millis(800)))
        .with_clock_drift(0.1);
    let mut sim = Simulation::new(14765, (1..=3).map(NodeId), config).unwrap();
    sim.start_all();
    for action in schedule() {
        sim.apply(&action).unwrap();
    }
    let settle = sim.heal_and_settle();
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
    assert_eq!(sim.clock_drift(NodeId(1)), Some(0.1));
    assert_eq!(sim.clock_drift(NodeId(2)), Some(-0.1));
    // Today: Settle { leader: None, converged_after: None, .. } (terms 4, 5, 6, ...).
    // L1: the live members agree on the highest of them; L2: within the settle
    // bound (docs/correctness.md, section 1).
    assert_eq!(settle.leader, Some(NodeId(2)), "L1: {settle:?}");
    assert!(settle.within_bound(), "L2: {settle:?}");
}
