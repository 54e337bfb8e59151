//! The event loop is deterministic: the same seed gives the same run, message for
//! message, for every library, and the seed is what varies raft-rs's timeouts.

use bully_peers::matching::with_system;
use bully_peers::members::Visit;
use bully_peers::peer::Peer;
use bully_peers::scenario::{self, Partition};
use bully_peers::system::System;

struct ColdTwice {
    n: u64,
    seed: u64,
}

impl Visit for ColdTwice {
    type Out = (String, String);
    fn visit<P: Peer>(self, build: &dyn Fn(u64, u64, u64) -> P) -> Self::Out {
        let a = scenario::cold_start(build, self.n, self.seed);
        let b = scenario::cold_start(build, self.n, self.seed);
        (format!("{a:?}"), format!("{b:?}"))
    }
}

#[test]
fn the_same_seed_boots_every_system_the_same_way() {
    for system in System::ALL {
        for seed in [1, 7] {
            let (a, b) = with_system(system, ColdTwice { n: 10, seed });
            assert_eq!(a, b, "{} with seed {seed} ran two ways", system.label());
        }
    }
}

struct Partitioned {
    partition: Partition,
    seed: u64,
}

impl Visit for Partitioned {
    type Out = (String, String);
    fn visit<P: Peer>(self, build: &dyn Fn(u64, u64, u64) -> P) -> Self::Out {
        let a = scenario::partition_run(build, self.partition, self.seed);
        let b = scenario::partition_run(build, self.partition, self.seed);
        (format!("{a:?}"), format!("{b:?}"))
    }
}

#[test]
fn the_same_seed_replays_a_partial_partition_and_its_heal() {
    for system in System::ALL {
        for partition in [Partition::QuorumLoss, Partition::SendOnlyLeader] {
            let (a, b) = with_system(system, Partitioned { partition, seed: 3 });
            assert_eq!(a, b, "{} under {partition:?} ran two ways", system.label());
        }
    }
}

struct AgreedAfter {
    seeds: u64,
}

impl Visit for AgreedAfter {
    type Out = Vec<Option<std::time::Duration>>;
    fn visit<P: Peer>(self, build: &dyn Fn(u64, u64, u64) -> P) -> Self::Out {
        (1..=self.seeds)
            .map(|seed| scenario::cold_start(build, 5, seed).agreed_after)
            .collect()
    }
}

#[test]
fn raft_timeouts_come_from_the_seed_and_differ_between_seeds() {
    let times = with_system(System::Raft500, AgreedAfter { seeds: 8 });
    assert!(
        times.iter().all(Option::is_some),
        "raft agreed in every run: {times:?}"
    );
    let mut distinct = times.clone();
    distinct.sort();
    distinct.dedup();
    assert!(distinct.len() > 1, "seeds changed nothing: {times:?}");
}

#[test]
fn classic_bully_cold_start_costs_n_minus_one_the_highest_announcing_as_it_boots() {
    struct Cold;
    impl Visit for Cold {
        type Out = u64;
        fn visit<P: Peer>(self, build: &dyn Fn(u64, u64, u64) -> P) -> u64 {
            let e = scenario::cold_start(build, 10, 1);
            e.until_quiet.total_where(|k| !P::is_steady(k))
        }
    }
    // The staggered start and the highest's announcement:
    // one Coordinator to each other member, where the sources' model, every
    // member electing as it boots, costs N^2 - 1 = 99.
    assert_eq!(with_system(System::Bully, Cold), 10 - 1);
}
