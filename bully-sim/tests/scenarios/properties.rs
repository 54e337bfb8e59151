//! The properties of docs/correctness.md (section 1) over random fault schedules,
//! for clusters of 2 to 9: S1 to S3 (at most one coordinator per term; terms and
//! accepted tokens never decrease; no token below the highest accepted is
//! followed) after every step (the simulator's checker), then, once the faults
//! stop, L1 (every live member names the highest live member) and L2 (within
//! `Config::settle_bound`).
//!
//! `BULLY_SIM_SEEDS` sets how many seeded schedules run (256 by default; CI runs
//! 10,000). Every member's clock drifts within the configuration's ρ (0.001,
//! 0.01 or 0.1 by seed). S1 is enforced while a run keeps to the timing model:
//! the crash-stop schedules (one in three: crashes, reordering within `T_M`, the
//! message time,
//! drift within ρ) keep to it to the end, and each sweep prints how many
//! schedules did; elsewhere, without a quorum, two members may announce one term
//! out of contact, and the fencing token orders them (see `bully_sim` and
//! docs/correctness.md, section 2).

use std::time::Duration;

use crate::support::ALGORITHMS;
use crate::support::golden::GoldenTraces;
use bully_core::{Algorithm, Config, NodeId, Preemption};
use bully_sim::Simulation;
use bully_sim::chaos::{Action, FaultMix, Settle, random_schedule};
use proptest::prelude::*;

fn seeds() -> u64 {
    std::env::var("BULLY_SIM_SEEDS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(256)
}

/// What one schedule showed.
struct Outcome {
    settle: Settle,
    /// Whether the run kept to the timing model to the end (S1 enforced
    /// after every input).
    in_model: bool,
}

/// Runs `schedule` on a started cluster of `1..=n`, heals, and checks every
/// property; the error names what broke. Under `Preemption::Never` the leader
/// every member named when the faults stopped keeps leading
/// ([`Settle::sitting`]); otherwise the highest live member leads. With
/// `golden`, the run's trace goes into that sweep's digest.
fn check_schedule(
    seed: u64,
    n: u64,
    config: &Config,
    schedule: &[Action],
    golden: Option<&mut GoldenTraces>,
) -> Result<Outcome, String> {
    let members: Vec<NodeId> = (1..=n).map(NodeId).collect();
    let mut sim = Simulation::new(seed, members, config.clone()).map_err(|e| e.to_string())?;
    if let Some(golden) = &golden {
        golden.trace(&mut sim);
    }
    sim.start_all();
    for action in schedule {
        sim.apply(action).map_err(|e| e.to_string())?;
        if !sim.violations().is_empty() {
            return Err(format!(
                "safety broken after {action:?}: {:?}",
                sim.violations()
            ));
        }
    }
    let in_model = !sim.has_faulted();
    let settle = sim.heal_and_settle();
    if !sim.violations().is_empty() {
        return Err(format!(
            "safety broken while settling: {:?}",
            sim.violations()
        ));
    }
    let expected = match config.preemption() {
        // Sticky: the leader every live member named when the faults stopped
        // keeps leading; if they named none, whoever they agree on.
        Preemption::Never => settle
            .sitting
            .or(settle.leader)
            .filter(|_| sim.highest_live().is_some()),
        _ => sim.highest_live(),
    };
    if settle.leader != expected || (sim.highest_live().is_some() && settle.leader.is_none()) {
        return Err(format!(
            "L1: agreed on {:?}, highest live is {:?}",
            settle.leader,
            sim.highest_live()
        ));
    }
    if sim.highest_live().is_some() && !settle.within_bound() {
        return Err(format!(
            "L2: agreement after {:?}, bound {:?}",
            settle.converged_after, settle.bound
        ));
    }
    if let Some(golden) = golden {
        golden.add(&sim);
    }
    Ok(Outcome { settle, in_model })
}

#[test]
fn classic_keeps_safety_and_settles_on_the_highest_live_member() {
    sweep(Algorithm::Classic);
}

#[test]
fn modified_keeps_safety_and_settles_on_the_highest_live_member() {
    sweep(Algorithm::Modified);
}

#[test]
fn ring_keeps_safety_and_settles_on_the_highest_live_member() {
    sweep(Algorithm::Ring);
}

#[test]
fn sticky_and_stable_preemption_keep_safety_and_settle() {
    for (index, algorithm) in ALGORITHMS.into_iter().enumerate() {
        for (preemption, policy) in [
            (Preemption::Never, "never"),
            (
                Preemption::AfterStable(Duration::from_millis(800)),
                "after-stable",
            ),
        ] {
            let config = Config::default()
                .with_algorithm(algorithm)
                .with_preemption(preemption);
            let name = format!("properties-{}-{policy}", name(algorithm));
            sweep_config(&name, &config, seeds() / 3, 1_000_000 * (index as u64 + 1));
        }
    }
}

/// Runs `BULLY_SIM_SEEDS` seeded schedules for one algorithm.
fn sweep(algorithm: Algorithm) {
    let name = format!("properties-{}", name(algorithm));
    sweep_config(
        &name,
        &Config::default().with_algorithm(algorithm),
        seeds(),
        0,
    );
}

/// The algorithm's name in the golden files.
fn name(algorithm: Algorithm) -> String {
    format!("{algorithm:?}").to_lowercase()
}

/// Runs `count` seeded schedules, seeds from `first_seed` on, for one
/// configuration; their traces are checked against the golden digests of the
/// sweep `name` (`support::golden`).
fn sweep_config(name: &str, config: &Config, count: u64, first_seed: u64) {
    let mut golden = GoldenTraces::new(name);
    let config = config.clone();
    let algorithm = config.algorithm();
    let (mut crash_stop, mut strict, mut sitting) = (0, 0, 0);
    // Slowest agreement seen per cluster size, against its bound.
    let mut slowest = [(Duration::ZERO, Duration::ZERO); 10];
    for seed in first_seed..first_seed + count {
        let n = 2 + seed % 8;
        let mix = if seed % 3 == 0 {
            crash_stop += 1;
            FaultMix::CRASH_STOP
        } else {
            FaultMix::ALL
        };
        let rho = [0.001, 0.01, 0.1][(seed / 24 % 3) as usize];
        let config = config.clone().with_clock_drift(rho);
        let members: Vec<NodeId> = (1..=n).map(NodeId).collect();
        let schedule =
            random_schedule(seed, &members, 20, Duration::from_millis(300), &config, mix);
        match check_schedule(seed, n, &config, &schedule, Some(&mut golden)) {
            Ok(Outcome { settle, in_model }) => {
                strict += u64::from(in_model);
                sitting += u64::from(settle.sitting.is_some());
                let after = settle.converged_after.unwrap_or_default();
                let entry = &mut slowest[n as usize];
                if after >= entry.0 {
                    *entry = (after, settle.bound);
                }
            }
            Err(broken) => {
                panic!("{algorithm:?} seed {seed}, n {n}: {broken}\nschedule: {schedule:?}")
            }
        }
    }
    eprintln!(
        "{algorithm:?} {:?}: {count} schedules passed; S1 enforced to the end in {strict} \
         ({crash_stop} crash-stop); a sitting leader when the faults stopped in {sitting}",
        config.preemption()
    );
    assert!(
        strict >= crash_stop,
        "every crash-stop schedule keeps to the timing model"
    );
    for (n, (after, bound)) in slowest.iter().enumerate().skip(2) {
        eprintln!(
            "  n={n}: slowest agreement {after:?} after the faults stopped (bound {bound:?})"
        );
    }
    golden.finish();
}

fn action(n: u64) -> impl Strategy<Value = Action> {
    let id = (1..=n).prop_map(NodeId);
    prop_oneof![
        (0u64..600).prop_map(|ms| Action::Advance(Duration::from_millis(ms))),
        id.clone().prop_map(Action::Crash),
        id.clone().prop_map(Action::Restart),
        id.clone().prop_map(Action::RestartDurable),
        any::<u64>().prop_map(|mask| Action::Partition { mask }),
        (id.clone(), id.clone()).prop_map(|(from, to)| Action::Cut { from, to }),
        (id.clone(), id.clone()).prop_map(|(a, b)| Action::CutBoth { a, b }),
        (0u8..50).prop_map(Action::Loss),
        (0u8..30).prop_map(Action::Duplicate),
        (0u64..60).prop_map(|ms| Action::Jitter(Duration::from_millis(ms))),
        (id.clone(), id.clone()).prop_map(|(node, suspect)| Action::Suspect { node, suspect }),
        id.clone().prop_map(Action::StartElection),
        id.clone().prop_map(Action::StepDown),
        (id.clone(), proptest::option::of(id), 0u64..3_000).prop_map(|(node, to, ms)| {
            Action::HandOver {
                node,
                to,
                abstain: Duration::from_millis(ms),
            }
        }),
        Just(Action::Heal),
    ]
}

fn cluster_and_schedule() -> impl Strategy<Value = (Algorithm, u64, Vec<Action>)> {
    (0usize..3, 2u64..=9).prop_flat_map(|(algorithm, n)| {
        (
            Just(ALGORITHMS[algorithm]),
            Just(n),
            proptest::collection::vec(action(n), 0..24),
        )
    })
}

proptest! {
    // PROPTEST_CASES overrides the 256 cases run by default.
    #![proptest_config(ProptestConfig::default())]

    /// The same properties, with schedules proptest can shrink to a minimal
    /// counterexample.
    #[test]
    fn shrinking_fault_schedules_keep_safety_and_settle(
        (algorithm, n, schedule) in cluster_and_schedule()
    ) {
        let config = Config::default().with_algorithm(algorithm);
        let outcome = check_schedule(7, n, &config, &schedule, None);
        prop_assert!(outcome.is_ok(), "{}", outcome.err().unwrap_or_default());
    }
}
