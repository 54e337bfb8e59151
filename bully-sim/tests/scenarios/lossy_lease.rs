//! Under 30 % loss on every link, both ways, with `bully-agent`'s default
//! timings, the leader's work (its lease less the agent's margin) restarts at
//! most once a minute.
//!
//! Found by trying the agent: with its fast test timings, the leader's command
//! was stopped and started again 15 to 21 times in 20 s under 30 % loss (a lease
//! that lapses and is won again). With the defaults then (a 2 s leader
//! timeout), this test measured about four restarts a minute among three
//! members: the lease outlasted the 1.25 s margin by 0.7 s, three heartbeat
//! rounds, and three rounds without any acknowledgement are not rare at 30 %
//! loss. Now a round that goes unacknowledged is followed by the next a round
//! trip later (not a whole heartbeat interval), and the agent's leader timeout
//! is 3 s.
//!
//! The count comes from the simulator: the work runs while the node's permit
//! (`Node::permit`, at its latest input) lasts past the sample, taken every
//! 10 ms; a start
//! is a member gaining the permission when it (or nobody) lacked it at the
//! sample before. The first start of each run is not a restart.

use std::time::Duration;

use crate::support::{ALGORITHMS, agent_timings};
use bully_core::{Config, NodeId, Quorum};
use bully_sim::{LinkConfig, Simulation};

/// Work restarts in `minutes` of 30 % loss after the cluster settled.
fn restarts(config: &Config, n: u64, seed: u64, minutes: u64) -> u64 {
    let mut sim = Simulation::new(seed, (1..=n).map(NodeId), config.clone()).unwrap();
    sim.start_all();
    sim.run_for(sim.settle_bound() * 2);
    let mut lossy = LinkConfig::reliable(config.max_message_delay());
    lossy.loss = 0.3;
    sim.set_default_link(lossy);
    let step = Duration::from_millis(10);
    let mut working = None;
    let mut starts = 0u64;
    for _ in 0..minutes * 60_000 / 10 {
        sim.run_for(step);
        let now = sim.now();
        let worker = (1..=n).map(NodeId).find(|&id| {
            sim.node(id)
                .and_then(|node| node.permit())
                .is_some_and(|permit| permit.until.is_none_or(|until| now < until))
        });
        if worker.is_some() && worker != working {
            starts += 1;
        }
        working = worker;
    }
    starts.saturating_sub(1)
}

#[test]
fn under_thirty_percent_loss_the_work_restarts_at_most_once_a_minute() {
    // Simulated minutes per algorithm and size: 30 (3 seeds of 10) by default.
    let runs: u64 = std::env::var("BULLY_SIM_SEEDS")
        .ok()
        .and_then(|value| value.parse::<u64>().ok())
        .map_or(3, |seeds| (seeds / 256).clamp(3, 40));
    let minutes = 10;
    for algorithm in ALGORITHMS {
        let config = agent_timings(algorithm);
        for n in [3, 5, 7] {
            let total: u64 = (0..runs)
                .map(|seed| restarts(&config, n, seed, minutes))
                .sum();
            let per_minute = total as f64 / (runs * minutes) as f64;
            eprintln!(
                "{algorithm:?}, {n} members: {total} restarts in {} simulated minutes ({per_minute:.2} a minute)",
                runs * minutes
            );
            assert!(
                per_minute <= 1.0,
                "{algorithm:?}, {n} members: {per_minute:.2} restarts a minute"
            );
        }
    }
    // The agent's fast test timings (50 ms heartbeats, 600 ms leader timeout,
    // a 200 ms grace period): the lease outlasts the 450 ms margin by about
    // 130 ms, under three heartbeat intervals, so loss stops the work often.
    // Reported, not bounded: docs/reproducing.md quotes this line.
    let fast = Config::default()
        .with_quorum(Quorum::Majority)
        .with_heartbeat_interval(Duration::from_millis(50))
        .with_leader_timeout(Duration::from_millis(600))
        .with_max_message_delay(Duration::from_millis(20))
        .with_max_processing_time(Duration::from_millis(20))
        .with_lease_margin(Duration::from_millis(450))
        .with_resign_delay(Duration::from_millis(450));
    let total: u64 = (0..runs)
        .map(|seed| restarts(&fast, 3, seed, minutes))
        .sum();
    eprintln!(
        "fast timings, 3 members: {:.1} restarts a minute",
        total as f64 / (runs * minutes) as f64
    );
}
