//! S4 (DESIGN.md): a term identifies one leadership inside a connected component,
//! also after a restart that restored `DurableState` and during a one-at-a-time
//! boot. The simulator's checker stops enforcing S1 once a member restarted, so
//! these runs check it themselves, from the `BecameLeader` events of the trace.
//!
//! With a quorum it holds: a member votes once per term. Without one, the
//! staggered start (on by default) has every starting member listen for a
//! heartbeat interval first, so a member that comes back hears the sitting
//! leader's term and stands above it.
#![cfg(feature = "sim")]

use std::collections::BTreeMap;

use bully_core::sim::{Simulation, TraceEntry, scenario};
use bully_core::{Config, Event, NodeId, Quorum, Term};

/// Every `(term, member)` that became leader, in order, from the trace.
fn leaderships(sim: &Simulation) -> Vec<(Term, NodeId)> {
    sim.trace()
        .iter()
        .filter_map(|record| match record.entry {
            TraceEntry::Event {
                node,
                event: Event::BecameLeader { term },
            } => Some((term, node)),
            _ => None,
        })
        .collect()
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

/// Seed 004's experiment 1 with the die's order 2, 3, 1, 6, 5, 4: six dancers
/// stand up one at a time, each once the others agree.
fn one_at_a_time(config: &Config) -> Simulation {
    let order = [2, 3, 1, 6, 5, 4].map(NodeId);
    let mut sim = Simulation::new(1, scenario::members(6), config.clone()).unwrap();
    sim.enable_trace();
    for id in order {
        sim.crash(id).unwrap();
    }
    for id in order {
        sim.restart_durable(id).unwrap();
        sim.run_for(sim.settle_bound());
    }
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

#[test]
fn with_a_quorum_dancers_standing_up_one_at_a_time_never_share_a_term() {
    let sim = one_at_a_time(&majority());
    let led = leaderships(&sim);
    assert!(!led.is_empty(), "somebody leads");
    assert_eq!(shared_terms(&led), [], "{led:?}");
    assert_eq!(sim.agreed_leader(), Some(NodeId(6)));
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

#[test]
fn with_a_quorum_a_leader_back_with_its_durable_state_leads_a_term_of_its_own() {
    let sim = durable_restart_of_the_leader(&majority());
    let led = leaderships(&sim);
    assert!(
        led.iter().any(|&(_, id)| id == NodeId(4)),
        "4 took over: {led:?}"
    );
    assert_eq!(shared_terms(&led), [], "{led:?}");
    assert_eq!(sim.agreed_leader(), Some(NodeId(5)));
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

#[test]
fn without_a_quorum_dancers_standing_up_one_at_a_time_never_share_a_term() {
    let sim = one_at_a_time(&Config::default());
    let led = leaderships(&sim);
    assert_eq!(shared_terms(&led), [], "{led:?}");
}

#[test]
fn without_a_quorum_a_leader_back_with_its_durable_state_leads_a_term_of_its_own() {
    let sim = durable_restart_of_the_leader(&Config::default());
    let led = leaderships(&sim);
    assert_eq!(shared_terms(&led), [], "{led:?}");
}
