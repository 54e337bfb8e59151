//! The quorum gate: no split brain under any partition, and what it costs.
//!
//! `BULLY_QUORUM_SEEDS` sets how many seeded fault schedules the sweep runs per
//! algorithm (2,000 by default; CI runs 10,000; 100,000 for CONTRIBUTING.md's full
//! claim), taking the sweep's 69 configurations (members, quorum, preemption)
//! in turn.
//!
//! S1 to S3, W1, L1 and L2 below are the properties of docs/correctness.md,
//! section 1: at most one coordinator per term; terms and accepted tokens never
//! decrease; no token below the highest accepted is followed; a leader's work
//! stops before another member can be elected; once the faults stop the highest
//! live member leads, within the settle bound. A2 is its bounded-drift
//! assumption (section 3), and `T_M` the message time, the longest a message
//! takes.

use std::time::Duration;

use crate::support::golden::GoldenTraces;
use crate::support::{ALGORITHMS, shortest_leader_timeout};
use bully_core::{Algorithm, Config, MessageKind, NodeId, Preemption, Quorum, Role};
use bully_sim::Simulation;
use bully_sim::chaos::{FaultMix, random_schedule};
use bully_sim::scenario;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn quorum_seeds() -> u64 {
    std::env::var("BULLY_QUORUM_SEEDS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(2_000)
}

fn majority(algorithm: Algorithm) -> Config {
    Config::default()
        .with_algorithm(algorithm)
        .with_quorum(Quorum::Majority)
}

#[test]
fn five_members_elect_the_highest_once_a_majority_acknowledges() {
    for algorithm in ALGORITHMS {
        let sim = scenario::settled(&majority(algorithm), 5, 1).unwrap();
        assert_eq!(sim.agreed_leader(), Some(NodeId(5)), "{algorithm:?}");
        assert!(sim.violations().is_empty(), "{:?}", sim.violations());
    }
}

#[test]
fn the_leader_cut_off_in_a_minority_steps_down_before_the_majority_elects() {
    for algorithm in ALGORITHMS {
        let config = majority(algorithm);
        let mut sim = scenario::settled(&config, 5, 2).unwrap();
        sim.reset_counts();
        // 4 and 5 on one side, 1, 2, 3 on the other.
        sim.partition(&[&[NodeId(4), NodeId(5)]]).unwrap();
        let lease = config.leader_lease();
        sim.run_for(lease + config.heartbeat_interval());
        assert_ne!(
            sim.node(NodeId(5)).unwrap().role(),
            Role::Leader,
            "{algorithm:?}: 5 gave up once its lease ran out"
        );
        sim.run_for(sim.settle_bound());
        assert_eq!(
            sim.leaders(),
            [NodeId(3)],
            "{algorithm:?}: only the majority side leads"
        );
        for id in [4, 5] {
            assert_eq!(
                sim.node(NodeId(id)).unwrap().leader(),
                None,
                "{algorithm:?}: {id} names no leader"
            );
        }
        assert_eq!(sim.overlapping_leaderships(), 0);
        assert!(
            sim.violations().is_empty(),
            "{algorithm:?}: {:?}",
            sim.violations()
        );

        let settle = sim.heal_and_settle();
        assert_eq!(
            settle.leader,
            Some(NodeId(5)),
            "{algorithm:?}: healed, 5 leads again"
        );
        assert!(settle.within_bound(), "{algorithm:?}: {settle:?}");
        assert!(
            sim.violations().is_empty(),
            "{algorithm:?}: {:?}",
            sim.violations()
        );
    }
}

#[test]
fn an_intersecting_partition_never_yields_two_leaders() {
    // Elasticsearch's split: 3 sees 1 and 5, but 1 and 5 do not see each other.
    for algorithm in ALGORITHMS {
        for (quorum, expect_overlap_free) in [(Quorum::Majority, true), (Quorum::None, false)] {
            let config = Config::default()
                .with_algorithm(algorithm)
                .with_quorum(quorum);
            let mut sim = scenario::settled(&config, 5, 3).unwrap();
            sim.cut_both(NodeId(1), NodeId(5)).unwrap();
            sim.cut_both(NodeId(2), NodeId(5)).unwrap();
            sim.run_for(sim.settle_bound() * 2);
            if expect_overlap_free {
                assert_eq!(sim.overlapping_leaderships(), 0, "{algorithm:?}");
                assert!(
                    sim.leaders().len() <= 1,
                    "{algorithm:?}: {:?}",
                    sim.leaders()
                );
                assert!(
                    sim.violations().is_empty(),
                    "{algorithm:?}: {:?}",
                    sim.violations()
                );
            }
        }
    }
}

/// The quorums the sweep covers for `n` members: a majority, and every
/// `AtLeast(k)` above half of them (two such quorums always share a member,
/// which is what the claim rests on).
fn quorums(n: u64) -> Vec<Quorum> {
    let mut quorums = vec![Quorum::Majority];
    quorums.extend((n as usize / 2 + 1..=n as usize).map(Quorum::AtLeast));
    quorums
}

/// Every `(members, quorum, preemption)` the sweep covers: 3 to 9 members,
/// each quorum of [`quorums`], each preemption policy.
fn setups() -> Vec<(u64, Quorum, Preemption)> {
    let mut setups = Vec::new();
    for n in 3..=9 {
        for quorum in quorums(n) {
            for preemption in [
                Preemption::Always,
                Preemption::Never,
                Preemption::AfterStable(Duration::from_millis(800)),
            ] {
                setups.push((n, quorum, preemption));
            }
        }
    }
    setups
}

/// What one algorithm's sweep saw.
#[derive(Default)]
struct Tally {
    schedules: u64,
    /// Schedules in which no running member's clock stepped: exclusive
    /// leadership and W1 were enforced after every input to the end.
    leases_strict: u64,
    /// Schedules in which, besides, no member restarted without its state: S1
    /// too was enforced to the end.
    strict: u64,
    /// Leaderships and work that overlapped after a running member's clock
    /// stepped (outside A2: counted, not flagged).
    overlaps_after_steps: u64,
    /// Schedules in which a running member's clock stepped.
    clock_steps: u64,
    /// The same schedules without a quorum: how many stayed in the timing model
    /// (S1 enforced to the end), and how many times two members led at once.
    plain_in_model: u64,
    overlaps_without: u64,
    /// Schedules under `Preemption::Never` with a sitting leader when the
    /// faults stopped (which then kept leading).
    sitting_kept: u64,
}

/// The claim, over seeded schedules with every fault: partitions
/// (symmetric, one-way, intersecting), loss, duplication, reordering within
/// `T_M` and jitter past it, crashes, restarts with and without state, wrong
/// detector reports, elections, step-downs and hand-overs on command, clocks drifting
/// within the configuration's ρ (a third of the members at each extreme) and
/// stepping forward. Schedule `s` runs configuration `s mod 69` of
/// [`setups`] (3 to 9 members; a majority or `AtLeast(k)`; `Always`, `Never`
/// or `AfterStable`), with ρ of 0.001 (the default), 0.01 or 0.1 and, one in
/// four, a resign delay.
///
/// After every step: no violation (S1 to S3, exclusive leadership, W1). Once
/// the faults stop: L1, the highest live member leads if a quorum is up (under
/// `Never`, the leader every member named when the faults stopped, if they
/// named one; else some member), nobody otherwise; L2, within the settle
/// bound. The same schedule then runs without a quorum: S1 to S3 hold where
/// the run stays in the timing model, and the overlaps are counted.
#[test]
fn no_two_members_ever_lead_at_once_under_any_fault_schedule() {
    let seeds = quorum_seeds();
    let setups = setups();
    let mut failures = Vec::new();
    let mut goldens = Vec::new();
    for algorithm in ALGORITHMS {
        let mut tally = Tally::default();
        let mut golden = GoldenTraces::new(&format!(
            "quorum-{}",
            format!("{algorithm:?}").to_lowercase()
        ));
        for seed in 0..seeds {
            let (n, quorum, preemption) = setups[(seed % setups.len() as u64) as usize];
            let mut dice = ChaCha8Rng::seed_from_u64(seed ^ 0x7175_6f72_756d);
            let rho = [0.001, 0.01, 0.1][dice.random_range(0..3)];
            let mut config = Config::default()
                .with_algorithm(algorithm)
                .with_quorum(quorum)
                .with_preemption(preemption)
                .with_clock_drift(rho);
            if dice.random_range(0..4) == 3 {
                // bully-agent's setting: a yielding leader frees its followers'
                // promises only later.
                config = config.with_resign_delay(Duration::from_millis(150));
            }
            // One schedule in four steps running members' clocks forward,
            // which leaves A2 (the lease checks then count, not flag).
            let mix = if dice.random_range(0..4) == 0 {
                FaultMix::ALL
            } else {
                FaultMix {
                    clock_steps: false,
                    ..FaultMix::ALL
                }
            };
            let context =
                format!("{algorithm:?} seed {seed} n {n} {quorum:?} {preemption:?} rho {rho}");
            tally.schedules += 1;
            if let Err(broken) = check_schedule(seed, n, &config, mix, &mut tally, &mut golden) {
                failures.push(format!("{context}: {broken}"));
            }
        }
        eprintln!(
            "{algorithm:?}: {} schedules with a quorum; exclusive leadership and \
             W1 enforced to the end in {} (no running member's clock stepped, and no \
             member that lost its state met a message past T_M; {} overlaps counted \
             otherwise), S1 as well in {} (nobody restarted without its state); \
             under Never a sitting leader kept leading in {}; without a quorum {} stayed in \
             the timing model (S1 enforced) and {} times two members led at once",
            tally.schedules,
            tally.leases_strict,
            tally.overlaps_after_steps,
            tally.strict,
            tally.sitting_kept,
            tally.plain_in_model,
            tally.overlaps_without
        );
        assert_eq!(tally.schedules, seeds);
        goldens.push(golden);
        assert!(
            tally.leases_strict * 3 >= tally.schedules * 2,
            "{algorithm:?}: most schedules keep the lease checks on"
        );
    }
    // Every broken schedule, not only the first: a long run tells them all.
    for failure in &failures {
        eprintln!("{failure}\n");
    }
    assert!(
        failures.is_empty(),
        "{} of {} schedules broke a property (listed above)",
        failures.len(),
        seeds * ALGORITHMS.len() as u64
    );
    for golden in goldens {
        golden.finish();
    }
}

/// The heartbeat intervals the short-lease checks cover: shorter than a round
/// trip (where a claim's votes bound the lease), near it, and the default
/// (where renewing it does).
const SHORT_LEASE_HEARTBEATS_MS: [u64; 4] = [10, 20, 50, 100];

#[test]
fn with_the_shortest_lease_allowed_the_third_leads_once_the_leader_and_the_next_crash() {
    // Omni-Paxos's election at its 100 ms rounds sends as many messages as a
    // bully leader heartbeating every 20 ms in five members: at that interval
    // and a leader timeout of 100 ms, 5 and 4 crashed and 3 claimed again and
    // again, its lease too short to outlast its own votes, and nobody led.
    // `validate` now refuses that lease; the shortest it accepts elects 3.
    for algorithm in ALGORITHMS {
        for heartbeat in SHORT_LEASE_HEARTBEATS_MS.map(Duration::from_millis) {
            let config = majority(algorithm).with_heartbeat_interval(heartbeat);
            let config = config
                .clone()
                .with_leader_timeout(shortest_leader_timeout(&config));
            let context = format!(
                "{algorithm:?}, heartbeat {heartbeat:?}, leader timeout {:?}",
                config.leader_timeout()
            );
            let mut sim = scenario::settled(&config, 5, 1).unwrap();
            sim.crash(NodeId(5)).unwrap();
            sim.crash(NodeId(4)).unwrap();
            sim.reset_counts();
            let bound = sim.settle_bound();
            assert!(
                sim.run_until_true(bound, |sim| sim.agreed_leader() == Some(NodeId(3))),
                "{context}: no leader within {bound:?}, {} Coordinators sent",
                sim.sent()[MessageKind::Coordinator]
            );
            assert!(
                sim.violations().is_empty(),
                "{context}: {:?}",
                sim.violations()
            );
        }
    }
}

#[test]
fn with_the_shortest_lease_allowed_no_fault_schedule_leaves_a_quorum_leaderless() {
    // The sweep above at the default timings, here at the edge of `validate`:
    // each heartbeat interval of [`SHORT_LEASE_HEARTBEATS_MS`] with the
    // shortest leader timeout accepted for it, a tenth of the sweep's seeds.
    let seeds = quorum_seeds() / 10;
    let setups = setups();
    let mut failures = Vec::new();
    let mut goldens = Vec::new();
    for algorithm in ALGORITHMS {
        let mut tally = Tally::default();
        let mut golden = GoldenTraces::new(&format!(
            "quorum-short-lease-{}",
            format!("{algorithm:?}").to_lowercase()
        ));
        for seed in 0..seeds {
            let (n, quorum, preemption) = setups[(seed % setups.len() as u64) as usize];
            let mut dice = ChaCha8Rng::seed_from_u64(seed ^ 0x006c_6561_7365);
            let heartbeat =
                SHORT_LEASE_HEARTBEATS_MS[dice.random_range(0..SHORT_LEASE_HEARTBEATS_MS.len())];
            let rho = [0.001, 0.01, 0.1][dice.random_range(0..3)];
            let config = Config::default()
                .with_algorithm(algorithm)
                .with_quorum(quorum)
                .with_preemption(preemption)
                .with_clock_drift(rho)
                .with_heartbeat_interval(Duration::from_millis(heartbeat));
            let config = config
                .clone()
                .with_leader_timeout(shortest_leader_timeout(&config));
            let mix = FaultMix {
                clock_steps: false,
                ..FaultMix::ALL
            };
            tally.schedules += 1;
            if let Err(broken) = check_schedule(seed, n, &config, mix, &mut tally, &mut golden) {
                failures.push(format!(
                    "{algorithm:?} seed {seed} n {n} {quorum:?} {preemption:?} rho {rho} \
                     heartbeat {heartbeat} ms leader timeout {:?}: {broken}",
                    config.leader_timeout()
                ));
            }
        }
        assert_eq!(tally.clock_steps, 0, "no clock steps here");
        // The checks stay on but where a member that lost its state met a
        // message past the timing model.
        assert!(
            tally.leases_strict * 10 >= seeds * 9,
            "{algorithm:?}: the lease checks stayed on in only {} of {seeds}",
            tally.leases_strict
        );
        goldens.push(golden);
    }
    for failure in &failures {
        eprintln!("{failure}\n");
    }
    assert!(
        failures.is_empty(),
        "{} of {} schedules broke a property (listed above)",
        failures.len(),
        seeds * ALGORITHMS.len() as u64
    );
    for golden in goldens {
        golden.finish();
    }
}

/// Fails the schedule with a message unless `$cond` holds.
macro_rules! ensure {
    ($cond:expr, $($message:tt)+) => {
        if !$cond {
            return Err(format!($($message)+));
        }
    };
}

/// Runs one seeded schedule with `config`, then without a quorum, and checks
/// what [`no_two_members_ever_lead_at_once_under_any_fault_schedule`] says; the
/// error names what broke, with the schedule. Both runs' traces go into
/// `golden`.
fn check_schedule(
    seed: u64,
    n: u64,
    config: &Config,
    mix: FaultMix,
    tally: &mut Tally,
    golden: &mut GoldenTraces,
) -> Result<(), String> {
    let members: Vec<NodeId> = (1..=n).map(NodeId).collect();
    let schedule = random_schedule(seed, &members, 16, Duration::from_millis(400), config, mix);
    let mut sim = Simulation::new(seed, members.iter().copied(), config.clone()).unwrap();
    golden.trace(&mut sim);
    sim.start_all();
    for action in &schedule {
        sim.apply(action).unwrap();
        ensure!(
            sim.violations().is_empty(),
            "{:?} after {action:?}\n{schedule:?}",
            sim.violations()
        );
    }
    let settle = sim.heal_and_settle();
    ensure!(
        sim.violations().is_empty(),
        "{:?} while settling\n{schedule:?}",
        sim.violations()
    );
    let quorum = match config.quorum() {
        Quorum::Majority => members.len() / 2 + 1,
        Quorum::AtLeast(n) => n,
        other => panic!("the sweep runs with a quorum, not {other:?}"),
    };
    let live = members.iter().filter(|&&id| sim.is_up(id)).count();
    if live >= quorum {
        let expected = match config.preemption() {
            // Sticky: the sitting leader keeps leading; with none, any member.
            Preemption::Never => {
                tally.sitting_kept += u64::from(settle.sitting.is_some());
                settle.sitting.or(settle.leader)
            }
            _ => sim.highest_live(),
        };
        ensure!(expected.is_some(), "L1, no leader\n{schedule:?}");
        ensure!(
            settle.leader == expected,
            "L1: {settle:?}, expected {expected:?}\n{schedule:?}"
        );
        ensure!(settle.within_bound(), "L2: {settle:?}\n{schedule:?}");
    } else {
        ensure!(
            settle.leader.is_none() && sim.leaders().is_empty(),
            "L1: a minority led: {settle:?}\n{schedule:?}"
        );
    }
    if sim.lease_checks_enforced() {
        tally.leases_strict += 1;
        if !sim.restarted_without_state() {
            tally.strict += 1;
        }
    }
    tally.clock_steps += u64::from(sim.clock_stepped());
    if !sim.lease_checks_enforced() {
        tally.overlaps_after_steps += sim.overlapping_leaderships() + sim.work_overlaps();
    }
    golden.add(&sim);
    // The same schedule without a quorum, to show what the gate prevents.
    let plain = config.clone().with_quorum(Quorum::None);
    let mut sim = Simulation::new(seed, members.iter().copied(), plain).unwrap();
    golden.trace(&mut sim);
    sim.start_all();
    for action in &schedule {
        sim.apply(action).unwrap();
        ensure!(
            sim.violations().is_empty(),
            "no quorum: {:?} after {action:?}\n{schedule:?}",
            sim.violations()
        );
    }
    if !sim.has_faulted() {
        tally.plain_in_model += 1;
    }
    tally.overlaps_without += sim.overlapping_leaderships();
    golden.add(&sim);
    Ok(())
}

#[test]
fn the_gate_costs_an_ack_per_member_and_two_message_delays() {
    for algorithm in ALGORITHMS {
        let n = 10;
        let plain =
            scenario::one_initiator(&Config::default().with_algorithm(algorithm), n, NodeId(1))
                .unwrap();
        let gated = scenario::one_initiator(&majority(algorithm), n, NodeId(1)).unwrap();
        assert_eq!(gated.leader, Some(NodeId(n)));
        let acks = gated.messages[MessageKind::Ack];
        assert!(
            acks >= n - 1,
            "{algorithm:?}: every member acknowledges: {}",
            gated.messages
        );
        eprintln!(
            "{algorithm:?} n={n}: {} messages, {:.1} delays without a quorum; {} messages ({}), {:.1} delays with a majority",
            plain.total(),
            plain.delays,
            gated.total(),
            gated.messages,
            gated.delays
        );
        assert!(
            gated.delays >= plain.delays + 2.0,
            "{algorithm:?}: acknowledgements, then confirmation"
        );
    }
}
