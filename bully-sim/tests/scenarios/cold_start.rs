//! A cold start: every member boots at the same instant (a deploy). With the
//! staggered start (on by default) the highest announces and the others hear it
//! before their turn: `N - 1` messages without a quorum, `4(N - 1)` with one
//! (the probe, its replies, the claim and its votes), heartbeats and their
//! acknowledgements aside.

use bully_core::{Algorithm, Config, Message, NodeId, Quorum};
use bully_sim::scenario::members;
use bully_sim::{Simulation, TraceEntry};

fn cold_start(config: &Config, n: u64) -> (u64, Option<NodeId>) {
    let mut sim = Simulation::new(1, members(n), config.clone()).unwrap();
    sim.enable_trace();
    sim.start_all();
    let bound = sim.settle_bound();
    sim.run_until_true(bound, |sim| sim.agreed_leader().is_some());
    let leader = sim.agreed_leader();
    // Anything still to come (a lower member's turn) would come within the bound.
    sim.run_for(bound);
    let elections = sim
        .trace()
        .iter()
        .filter(|record| match &record.entry {
            TraceEntry::Send { message, .. } => match message {
                Message::Heartbeat { .. } => false,
                // Round 0 is a vote; the others acknowledge heartbeats.
                Message::Ack { round, .. } => *round == 0,
                _ => true,
            },
            _ => false,
        })
        .count() as u64;
    (elections, leader)
}

#[test]
fn everyone_booting_at_once_costs_n_minus_1_messages() {
    for algorithm in [Algorithm::Classic, Algorithm::Modified] {
        for n in [5, 10, 25, 100, 1000] {
            let config = Config::default().with_algorithm(algorithm);
            let (messages, leader) = cold_start(&config, n);
            assert_eq!(leader, Some(NodeId(n)), "{algorithm:?} n={n}");
            assert_eq!(messages, n - 1, "{algorithm:?} n={n}");
        }
    }
}

#[test]
fn with_a_quorum_a_cold_start_costs_four_messages_per_member() {
    for n in [5, 10, 25, 100] {
        let config = Config::default().with_quorum(Quorum::Majority);
        let (messages, leader) = cold_start(&config, n);
        assert_eq!(leader, Some(NodeId(n)), "n={n}");
        assert_eq!(messages, 4 * (n - 1), "n={n}");
    }
}

#[test]
fn without_the_staggered_start_the_classic_worst_case_returns() {
    let config = Config::default().with_staggered_start(false);
    let (messages, leader) = cold_start(&config, 10);
    assert_eq!(leader, Some(NodeId(10)));
    assert_eq!(messages, 10 * 10 - 1, "classic Bully's N^2 - 1");
}

/// Time from the boot to the first instant every member names the leader and
/// the leader leads, in message delays.
fn delays_to_agreement(config: &Config, n: u64) -> f64 {
    let mut sim = Simulation::new(1, members(n), config.clone()).unwrap();
    let booted = sim.now();
    sim.start_all();
    let bound = sim.settle_bound();
    assert!(
        sim.run_until_true(bound, |sim| sim.agreed_leader().is_some()),
        "n={n}: no agreement within the settle bound"
    );
    assert_eq!(sim.agreed_leader(), Some(NodeId(n)));
    let delays = sim.in_delays(sim.now() - booted);
    eprintln!(
        "{:?} {:?} n={n}: agreed after {delays:.2} message delays",
        config.algorithm(),
        config.quorum()
    );
    delays
}

/// The highest member announces as it boots and leads once the answer timeout
/// (two message delays and a processing time) passed without an objection: the
/// others name it after one message delay, and it leads before the third.
#[test]
fn without_a_quorum_everyone_booting_at_once_agrees_within_three_message_delays() {
    for algorithm in [Algorithm::Classic, Algorithm::Modified] {
        for n in [2, 3, 5, 10, 25, 100] {
            let config = Config::default().with_algorithm(algorithm);
            let delays = delays_to_agreement(&config, n);
            assert!(
                delays <= 3.0,
                "{algorithm:?} n={n}: {delays} message delays"
            );
            // It does wait for objections: not before a round trip.
            assert!(
                delays >= 2.0,
                "{algorithm:?} n={n}: {delays} message delays"
            );
        }
    }
}

/// With a majority: the highest probes (a round trip), claims and gathers its
/// votes (a round trip), and its first heartbeat round shows the members its
/// quorum (a message delay): five message delays and the processing times,
/// within six. Members that persist their state and start for the first time
/// owe no promise, so nobody waits out a follower lease first.
#[test]
fn with_a_quorum_everyone_booting_at_once_agrees_within_six_message_delays() {
    for algorithm in [Algorithm::Classic, Algorithm::Modified] {
        for n in [2, 3, 5, 10, 25, 100] {
            let config = Config::default()
                .with_algorithm(algorithm)
                .with_quorum(Quorum::Majority);
            let delays = delays_to_agreement(&config, n);
            assert!(
                delays <= 6.0,
                "{algorithm:?} n={n}: {delays} message delays"
            );
        }
    }
}

/// Who became leader, in order, over the whole trace.
fn leaderships(sim: &Simulation) -> Vec<NodeId> {
    sim.trace()
        .iter()
        .filter_map(|record| match &record.entry {
            TraceEntry::Event {
                node,
                event: bully_core::Event::BecameLeader { .. },
            } => Some(*node),
            _ => None,
        })
        .collect()
}

/// Processes started by hand or by a deploy tool come up a little apart: the
/// highest boots with the second-highest, and its probe reaches only that one,
/// the others are not listening yet. It asks again an answer timeout later
/// rather than backing off for a leader timeout, so it still claims before the
/// second-highest's turn comes round: nobody else leads first, and no job runs
/// only to be taken back. (Found by the agent's take-back test: four agents
/// started together, and 3 led first.)
#[test]
fn with_a_quorum_the_highest_leads_first_though_its_first_probe_found_the_others_down() {
    for algorithm in [Algorithm::Classic, Algorithm::Modified] {
        for n in [2, 3, 4, 5, 10] {
            let config = Config::default()
                .with_algorithm(algorithm)
                .with_quorum(Quorum::Majority);
            let mut sim = Simulation::new(1, members(n), config.clone()).unwrap();
            sim.enable_trace();
            sim.start(NodeId(n - 1)).unwrap();
            sim.start(NodeId(n)).unwrap();
            // Its probes to the others arrive while they are still down, and
            // vanish: it does not reach a quorum (with two members, it does).
            sim.run_for(config.max_message_delay() * 2);
            for id in 1..n - 1 {
                sim.start(NodeId(id)).unwrap();
            }
            let bound = sim.settle_bound();
            assert!(
                sim.run_until_true(bound, |sim| sim.agreed_leader().is_some()),
                "{algorithm:?} n={n}: no agreement within the settle bound"
            );
            assert_eq!(
                leaderships(&sim),
                [NodeId(n)],
                "{algorithm:?} n={n}: only the highest ever leads"
            );
        }
    }
}
