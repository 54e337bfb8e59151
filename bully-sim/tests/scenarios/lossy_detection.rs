//! Under 30 % loss on every link, at the default timings, followers suspect
//! their live leader less than once an hour: the loss-adaptive detector
//! (`Config::with_loss_adaptive_detection`) waits for as many heartbeats in a
//! row as the loss it measured makes rare. With a fixed 500 ms leader timeout
//! the same runs suspect the leader hundreds of times an hour (four or five
//! heartbeats in a row lost), and a leader that does crash is still replaced.
//!
//! A false suspicion is a leader timeout that fires at a follower of a live
//! leader (`Stats::leaders_suspected`), counted over simulated hours once the
//! links turned lossy.

use std::time::Duration;

use crate::support::ALGORITHMS;
use bully_core::{Config, NodeId};
use bully_sim::{LinkConfig, Simulation};

const HOUR: Duration = Duration::from_secs(3_600);

/// Every link loses each message with probability 0.3.
fn lossy(config: &Config) -> LinkConfig {
    let mut link = LinkConfig::reliable(config.max_message_delay());
    link.loss = 0.3;
    link
}

/// A settled cluster of `1..=n` whose links then turn lossy.
fn lossy_cluster(config: &Config, n: u64, seed: u64) -> Simulation {
    let mut sim = Simulation::new(seed, (1..=n).map(NodeId), config.clone()).unwrap();
    sim.start_all();
    sim.run_for(sim.settle_bound() * 2);
    assert_eq!(sim.agreed_leader(), Some(NodeId(n)), "seed {seed}");
    sim.set_default_link(lossy(config));
    sim
}

fn suspicions(sim: &Simulation) -> u64 {
    sim.members()
        .iter()
        .filter_map(|&id| sim.node(id))
        .map(|node| node.stats().leaders_suspected)
        .sum()
}

/// False suspicions in `hours` of 30 % loss with every member alive.
fn suspicions_under_loss(config: &Config, n: u64, seed: u64, hours: u32) -> u64 {
    let mut sim = lossy_cluster(config, n, seed);
    let before = suspicions(&sim);
    sim.run_for(HOUR * hours);
    assert!(sim.is_up(NodeId(n)));
    suspicions(&sim) - before
}

#[test]
fn under_30_percent_loss_followers_suspect_their_live_leader_less_than_once_an_hour() {
    // 20 simulated hours per size and algorithm (about 20 s in all);
    // BULLY_LOSS_HOURS for more.
    let hours: u32 = std::env::var("BULLY_LOSS_HOURS")
        .ok()
        .and_then(|hours| hours.parse().ok())
        .unwrap_or(20);
    for algorithm in ALGORITHMS {
        let config = Config::default().with_algorithm(algorithm);
        for n in [5, 25] {
            let suspicions = suspicions_under_loss(&config, n, u64::from(hours) + n, hours);
            assert!(
                suspicions < u64::from(hours),
                "{algorithm:?}, {n} members: {suspicions} false suspicions in {hours} h of 30 % loss"
            );
        }
    }
}

#[test]
fn with_a_fixed_leader_timeout_the_same_loss_suspects_the_leader_hundreds_of_times_an_hour() {
    let config = Config::default().with_loss_adaptive_detection(false);
    let suspicions = suspicions_under_loss(&config, 5, 1, 1);
    assert!(
        suspicions >= 100,
        "{suspicions} false suspicions in an hour"
    );
}

#[test]
fn under_30_percent_loss_a_crashed_leader_is_still_replaced_by_the_highest_survivor() {
    for algorithm in ALGORITHMS {
        let config = Config::default().with_algorithm(algorithm);
        for seed in 0..8 {
            let mut sim = lossy_cluster(&config, 5, seed);
            // Long enough for every follower to have measured the loss.
            sim.run_for(Duration::from_secs(30));
            sim.crash(NodeId(5)).unwrap();
            let crashed = sim.now();
            let agreed = sim.run_until_true(Duration::from_secs(10), |sim| {
                sim.agreed_leader() == Some(NodeId(4))
            });
            assert!(
                agreed,
                "{algorithm:?}, seed {seed}: no agreement 10 s after the crash"
            );
            // The detector waited for more than the fixed 500 ms would have.
            assert!(
                sim.now() - crashed > config.leader_timeout(),
                "{algorithm:?}, seed {seed}: agreed {:?} after the crash",
                sim.now() - crashed
            );
        }
    }
}
