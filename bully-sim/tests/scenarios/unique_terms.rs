//! S4 (docs/correctness.md, section 1): a term identifies one leadership inside a
//! connected component, also after a restart that restored `DurableState` and
//! during a one-at-a-time boot. The simulator's checker stops enforcing S1 (at
//! most one coordinator per term) once a member restarted, so
//! these runs check it themselves, from the `BecameLeader` events of the trace,
//! and each asserts that a leader emerged: the highest member.
//!
//! With a quorum it holds: a member votes once per term, so the sweeps boot and
//! restart members at any moment. Without one, the staggered start (on by
//! default) has every starting member listen for a heartbeat interval first, so
//! a member that comes back hears the sitting leader's term and stands above
//! it; the sweeps then boot and restart one member at a time, each once the
//! others agree (as the Bully Algorithm Dance's dancers stand up), at a random
//! phase of the heartbeat.
//!
//! `BULLY_SIM_SEEDS` sets the seeds per algorithm and quorum setting: a boot
//! order and its gaps, or a series of crashes and durable restarts (a sixteenth
//! of it, at least 16; CI's 10,000 gives 625).

use std::collections::BTreeMap;
use std::time::Duration;

use bully_core::{Algorithm, Config, NodeId, Quorum, Term};
use bully_sim::{Simulation, scenario};
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::support::leaderships;

const ALGORITHMS: [Algorithm; 3] = [Algorithm::Classic, Algorithm::Modified, Algorithm::Ring];

fn seeds() -> u64 {
    let seeds: u64 = std::env::var("BULLY_SIM_SEEDS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(256);
    (seeds / 16).max(16)
}

/// The terms that two different members led.
fn shared_terms(leaderships: &[(Term, NodeId)]) -> Vec<(Term, NodeId, NodeId)> {
    let mut first: BTreeMap<Term, NodeId> = BTreeMap::new();
    let mut shared = Vec::new();
    for &(term, id) in leaderships {
        match first.get(&term) {
            Some(&other) if other != id => shared.push((term, other, id)),
            Some(_) => {}
            None => {
                first.insert(term, id);
            }
        }
    }
    shared
}

/// The Bully Algorithm Dance's experiment 1 with the die's order 2, 3, 1, 6, 5, 4: six dancers
/// stand up one at a time, each once the others agree.
fn one_at_a_time(config: &Config) -> Simulation {
    let order = [2, 3, 1, 6, 5, 4].map(NodeId);
    let gaps = [Duration::ZERO; 6];
    boot(config, 1, &order, &gaps)
}

/// Members `order` stand up in that order (their nodes declared a first boot,
/// as `Simulation::new` builds them), `gaps[i]` after the one before; then the cluster
/// runs for a settle bound.
fn boot(config: &Config, seed: u64, order: &[NodeId], gaps: &[Duration]) -> Simulation {
    let n = order.len() as u64;
    let mut sim = Simulation::new(seed, scenario::members(n), config.clone()).unwrap();
    sim.enable_trace();
    for &id in order {
        sim.crash(id).unwrap();
    }
    for (&id, &gap) in order.iter().zip(gaps) {
        sim.run_for(gap);
        sim.restart_durable(id).unwrap();
    }
    sim.run_for(sim.settle_bound());
    sim
}

/// Five settled under 5; 5 crashes, 4 takes over; 5 comes back with the term and
/// vote it persisted.
fn durable_restart_of_the_leader(config: &Config) -> Simulation {
    let mut sim = scenario::settled(config, 5, 0).unwrap();
    sim.enable_trace();
    sim.crash(NodeId(5)).unwrap();
    sim.run_for(sim.settle_bound());
    sim.restart_durable(NodeId(5)).unwrap();
    sim.run_for(sim.settle_bound());
    sim
}

fn majority() -> Config {
    Config::default().with_quorum(Quorum::Majority)
}

/// Checks S4 and that the highest member leads at the end; `what` names the run.
fn assert_one_leadership_per_term_and_a_leader(sim: &Simulation, what: &str) {
    let led = leaderships(sim);
    assert_eq!(shared_terms(&led), [], "{what}: {led:?}");
    let highest = sim.members().last().copied();
    assert_eq!(sim.agreed_leader(), highest, "{what}: {led:?}");
    assert!(
        sim.violations().is_empty(),
        "{what}: {:?}",
        sim.violations()
    );
}

#[test]
fn with_a_quorum_dancers_standing_up_one_at_a_time_never_share_a_term() {
    let sim = one_at_a_time(&majority());
    assert_one_leadership_per_term_and_a_leader(&sim, "majority");
}

#[test]
fn with_a_quorum_a_leader_back_with_its_durable_state_leads_a_term_of_its_own() {
    let sim = durable_restart_of_the_leader(&majority());
    let led = leaderships(&sim);
    assert!(
        led.iter().any(|&(_, id)| id == NodeId(4)),
        "4 took over: {led:?}"
    );
    assert_one_leadership_per_term_and_a_leader(&sim, "majority");
}

#[test]
fn without_a_quorum_dancers_standing_up_one_at_a_time_never_share_a_term() {
    let sim = one_at_a_time(&Config::default());
    assert_one_leadership_per_term_and_a_leader(&sim, "no quorum");
}

#[test]
fn without_a_quorum_a_leader_back_with_its_durable_state_leads_a_term_of_its_own() {
    let sim = durable_restart_of_the_leader(&Config::default());
    let led = leaderships(&sim);
    assert!(
        led.iter().any(|&(_, id)| id == NodeId(4)),
        "4 took over: {led:?}"
    );
    assert_one_leadership_per_term_and_a_leader(&sim, "no quorum");
}

/// How long to wait before the next boot or restart: without a quorum, until
/// the cluster has surely agreed (a settle bound) and then a random phase of
/// the heartbeat; with one, anything from nothing to a settle bound.
fn gap(rng: &mut ChaCha8Rng, config: &Config, n: u64) -> Duration {
    let settle = config.settle_bound(n as usize);
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    if config.quorum() == Quorum::None {
        settle + Duration::from_nanos(rng.random_range(0..nanos(config.heartbeat_interval())))
    } else {
        Duration::from_nanos(rng.random_range(0..=nanos(settle)))
    }
}

/// Many boot orders: 3 to 7 members stand up in a random order, with random
/// gaps ([`gap`]), for each algorithm, without and with a quorum.
#[test]
fn members_booting_one_at_a_time_in_any_order_never_share_a_term() {
    for algorithm in ALGORITHMS {
        for quorum in [Quorum::None, Quorum::Majority] {
            let config = Config::default()
                .with_algorithm(algorithm)
                .with_quorum(quorum);
            for seed in 0..seeds() {
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let n = 3 + seed % 5;
                let mut order: Vec<NodeId> = scenario::members(n).collect();
                order.shuffle(&mut rng);
                let gaps: Vec<Duration> = order.iter().map(|_| gap(&mut rng, &config, n)).collect();
                let sim = boot(&config, seed, &order, &gaps);
                let what = format!("{algorithm:?} {quorum:?} seed {seed}: order {order:?}");
                assert_one_leadership_per_term_and_a_leader(&sim, &what);
            }
        }
    }
}

/// Many restarts: on a settled cluster of 3 to 7, members crash and come back
/// with their durable state, one after another (the leader half of the time),
/// with random gaps ([`gap`]), for each algorithm, without and with a quorum.
#[test]
fn members_restarting_with_their_durable_state_never_share_a_term() {
    for algorithm in ALGORITHMS {
        for quorum in [Quorum::None, Quorum::Majority] {
            let config = Config::default()
                .with_algorithm(algorithm)
                .with_quorum(quorum);
            for seed in 0..seeds() {
                let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5334);
                let n = 3 + seed % 5;
                let mut sim = scenario::settled(&config, n, seed).unwrap();
                sim.enable_trace();
                let mut story = Vec::new();
                for _ in 0..4 {
                    let id = match (rng.random_range(0..2), sim.leaders().first()) {
                        (0, Some(&leader)) => leader,
                        _ => NodeId(rng.random_range(1..=n)),
                    };
                    sim.crash(id).unwrap();
                    let down = gap(&mut rng, &config, n);
                    sim.run_for(down);
                    sim.restart_durable(id).unwrap();
                    let up = gap(&mut rng, &config, n);
                    sim.run_for(up);
                    story.push((id, down, up));
                }
                sim.run_for(sim.settle_bound());
                let what = format!("{algorithm:?} {quorum:?} seed {seed}: {story:?}");
                assert_one_leadership_per_term_and_a_leader(&sim, &what);
            }
        }
    }
}
