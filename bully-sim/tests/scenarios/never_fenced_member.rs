//! A liveness counterexample the quorum sweep found at 100,000 schedules
//! (`BULLY_QUORUM_SEEDS=100000 cargo test --release -p bully-sim
//! --test scenarios quorum::`: seed 20164, three members, `AtLeast(2)`,
//! `Preemption::Never`, classic and modified Bully alike): after the faults stop, one live member
//! never followed the leader the other two agreed on. Fixed: the member
//! names its own leadership of that term to the leader, which yields, and
//! the election that follows gives all three a newer term.
//!
//! The story (member 1 and 3 cut off from each other at first):
//!
//! - 3 leads term 1 with 2's vote, and accepts its own token `(1, 3)`.
//! - 2 crashes and comes back without its durable state (A3, durable state kept,
//!   broken; docs/correctness.md, section 3): it has
//!   forgotten its vote in term 1. 3 steps down; a partition puts 3 alone.
//! - 2 claims term 1, 1 (which never heard of term 1) votes for it: 2 leads
//!   term 1 again, as `(1, 2)`: S4 (a term identifies one leadership;
//!   docs/correctness.md, section 1) is lost for term 1, as docs/correctness.md
//!   (section 2) allows after a restart without state.
//! - The faults stop. 2 leads with 1's support; its heartbeats reach 3, which
//!   refuses them for good as a leadership older than the one it accepted
//!   (`(1, 2) < (1, 3)`, `DropReason::StaleLeader`). 3's probes find a quorum
//!   naming 2, so it never stood; under `Never` nobody moved 2 either. 3 named
//!   no leader, for good (L1: every live connected member names the same
//!   leader once faults stop). Under `Always` 3 took over and all agreed.
//! - Now 3, refusing a heartbeat of term 1 from a lower member while its own
//!   leadership of term 1 is over, sends 2 its claim of term 1; 2, which has
//!   led term 1 for longer than a round trip, sees two leaderships of one term
//!   and yields; 3, the highest, wins term 2 and all three follow it.
//!
//! The schedule is the sweep's, as it printed it (clock steps included; the
//! run fails the same without them, and without the drift).

use std::time::Duration;

use bully_core::{Algorithm, Config, NodeId, Preemption, Quorum};
use bully_sim::Simulation;
use bully_sim::chaos::Action::{
    self, Advance, ClockStep, Crash, CutBoth, Drift, Partition, Reorder, Restart, StepDown, Suspect,
};

fn ns(nanos: u64) -> Duration {
    Duration::from_nanos(nanos)
}

/// The sweep's schedule for seed 20164, as it printed it.
fn schedule() -> Vec<Action> {
    vec![
        Drift {
            node: NodeId(1),
            ppm: 1000,
        },
        Drift {
            node: NodeId(2),
            ppm: 1000,
        },
        Drift {
            node: NodeId(3),
            ppm: 649,
        },
        Advance(ns(347076055)),
        CutBoth {
            a: NodeId(1),
            b: NodeId(3),
        },
        Advance(ns(193804805)),
        Restart(NodeId(1)),
        Advance(ns(153151942)),
        Suspect {
            node: NodeId(2),
            suspect: NodeId(1),
        },
        Advance(ns(385341859)),
        Crash(NodeId(2)),
        Advance(ns(268004856)),
        ClockStep {
            node: NodeId(2),
            by: ns(491218905),
        },
        Advance(ns(154912851)),
        Reorder(ns(9174155)),
        Advance(ns(13750063)),
        ClockStep {
            node: NodeId(2),
            by: ns(594502530),
        },
        Advance(ns(53144645)),
        Restart(NodeId(2)),
        Advance(ns(115088522)),
        Partition {
            mask: 3507562034117910580,
        },
        Advance(ns(202357819)),
        ClockStep {
            node: NodeId(2),
            by: ns(77788225),
        },
        Advance(ns(238081335)),
        ClockStep {
            node: NodeId(1),
            by: ns(357985623),
        },
        Advance(ns(76960165)),
        Reorder(ns(4483821)),
        Advance(ns(312606524)),
        ClockStep {
            node: NodeId(1),
            by: ns(707146407),
        },
        Advance(ns(178370515)),
        Reorder(ns(5964626)),
        Advance(ns(66198905)),
        StepDown(NodeId(3)),
        Advance(ns(397106380)),
        StepDown(NodeId(3)),
    ]
}

#[test]
fn after_a_restart_without_state_the_member_fenced_by_a_twin_term_gets_its_leader() {
    for algorithm in [Algorithm::Classic, Algorithm::Modified] {
        let config = Config::default()
            .with_algorithm(algorithm)
            .with_quorum(Quorum::AtLeast(2))
            .with_preemption(Preemption::Never)
            .with_clock_drift(0.001);
        let mut sim = Simulation::new(20164, (1..=3).map(NodeId), config).unwrap();
        sim.start_all();
        for action in schedule() {
            sim.apply(&action).unwrap();
        }
        assert!(sim.restarted_without_state());
        let settle = sim.heal_and_settle();
        assert!(sim.violations().is_empty(), "{:?}", sim.violations());
        // Before the fix: 2 led, 1 followed it, 3 named nobody, for good
        // (Settle { leader: None, .. }). Now 3 names its own term-1 leadership
        // to 2, which yields; the election that follows is 3's, the highest,
        // in a term all three can follow.
        println!("{algorithm:?}: {settle:?}");
        assert_eq!(
            settle.leader,
            Some(NodeId(3)),
            "{algorithm:?}: L1 {settle:?}"
        );
    }
}
