//! The highest member takes its leadership back within the failover bound
//! (`Config::failover_bound`) after any heal: a chain (each member hears only its
//! neighbours), the highest alone on a side of a partition or with a minority,
//! its links cut one way.
//!
//! Found by trying the agent: after a chain partition (1-2-3-4-5) healed, the
//! highest member led again only 8.1 to 8.4 s later with the default timings,
//! twice the 3.9 s failover bound. It had followed 4 (it could not reach a
//! quorum itself) and backed off between probes up to four leader timeouts;
//! then its own promise to 4, renewed by every acknowledged heartbeat, kept it
//! from voting for itself for a follower lease. Now a member following a lower
//! leader it would replace probes every leader timeout, and asks that leader to
//! yield (a claim to it alone), whose resignation releases the promise.

use std::time::Duration;

use crate::support::{ALGORITHMS, both_timings};
use bully_core::NodeId;
use bully_sim::Simulation;

/// A fault that keeps the highest member from leading.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Each member hears only its neighbours in id order.
    Chain,
    /// The highest alone, both ways.
    Isolated,
    /// The highest with a minority of the others.
    Minority,
    /// The highest hears nobody.
    Deaf,
    /// Nobody hears the highest.
    Mute,
}

const FAULTS: [Fault; 5] = [
    Fault::Chain,
    Fault::Isolated,
    Fault::Minority,
    Fault::Deaf,
    Fault::Mute,
];

fn apply(sim: &mut Simulation, fault: Fault, n: u64) {
    let top = NodeId(n);
    match fault {
        Fault::Chain => {
            for a in 1..=n {
                for b in 1..=n {
                    if a.abs_diff(b) > 1 {
                        sim.cut(NodeId(a), NodeId(b)).unwrap();
                    }
                }
            }
        }
        Fault::Isolated => {
            let rest: Vec<NodeId> = (1..n).map(NodeId).collect();
            sim.partition(&[&[top], &rest]).unwrap();
        }
        Fault::Minority => {
            let small: Vec<NodeId> = (n.div_ceil(2) + 1..=n).map(NodeId).collect();
            let large: Vec<NodeId> = (1..=n.div_ceil(2)).map(NodeId).collect();
            sim.partition(&[&small, &large]).unwrap();
        }
        Fault::Deaf => {
            for id in 1..n {
                sim.cut(NodeId(id), top).unwrap();
            }
        }
        Fault::Mute => {
            for id in 1..n {
                sim.cut(top, NodeId(id)).unwrap();
            }
        }
    }
}

#[test]
fn the_highest_member_leads_again_within_the_failover_bound_after_any_heal() {
    let mut slowest = Duration::ZERO;
    for algorithm in ALGORITHMS {
        for (timings, config) in both_timings(algorithm) {
            for n in 3..=7u64 {
                for fault in FAULTS {
                    let context = format!("{algorithm:?}, {timings}, {n} members, {fault:?}");
                    let mut sim = Simulation::new(n, (1..=n).map(NodeId), config.clone()).unwrap();
                    sim.start_all();
                    sim.run_for(sim.settle_bound() * 2);
                    assert_eq!(sim.agreed_leader(), Some(NodeId(n)), "{context}");
                    apply(&mut sim, fault, n);
                    // Long enough for every back-off to reach its longest.
                    sim.run_for(config.leader_timeout() * 12);
                    sim.heal();
                    let healed = sim.elapsed();
                    let bound = config.failover_bound(n as usize);
                    let back =
                        sim.run_until_true(bound * 2, |sim| sim.agreed_leader() == Some(NodeId(n)));
                    let took = sim.elapsed() - healed;
                    assert!(
                        back,
                        "{context}: no agreement on {n} within {:?}",
                        bound * 2
                    );
                    assert!(took <= bound, "{context}: took {took:?}, bound {bound:?}");
                    assert!(
                        sim.violations().is_empty(),
                        "{context}: {:?}",
                        sim.violations()
                    );
                    slowest = slowest.max(took);
                }
            }
        }
    }
    eprintln!("the slowest take-back after a heal took {slowest:?}");
}
