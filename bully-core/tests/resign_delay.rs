//! W1 (DESIGN.md) when the old leader resigns instead of letting its lease run
//! out: under `Preemption::Always` a leader yields to a higher claimant and
//! resigns, which frees its followers' promises. With a resign delay it says so
//! only that long after its leadership ended, so the claimant cannot lead before
//! the old leader's work has had that long to stop.
#![cfg(feature = "sim")]

use std::time::Duration;

use bully_core::sim::{Simulation, TraceEntry, scenario};
use bully_core::{Config, Event, NodeId, Quorum};

/// Five settled under 5; 5 crashes and 4 takes over; 5 comes back and preempts 4.
/// Returns the time from 4's step-down to 5's leadership, in the last hand-over.
fn hand_over(config: &Config) -> (Simulation, Duration) {
    let mut sim = scenario::settled(config, 5, 0).unwrap();
    sim.crash(NodeId(5)).unwrap();
    sim.run_for(sim.settle_bound());
    assert_eq!(sim.agreed_leader(), Some(NodeId(4)), "4 took over from 5");
    sim.enable_trace();
    sim.restart_durable(NodeId(5)).unwrap();
    sim.run_for(sim.settle_bound() * 2);
    assert_eq!(
        sim.agreed_leader(),
        Some(NodeId(5)),
        "5 took the leadership back"
    );
    let at = |wanted: NodeId, stepped: bool| {
        sim.trace()
            .iter()
            .rev()
            .find_map(|record| match record.entry {
                TraceEntry::Event {
                    node,
                    event: Event::SteppedDown { .. },
                } if stepped && node == wanted => Some(record.at_us),
                TraceEntry::Event {
                    node,
                    event: Event::BecameLeader { .. },
                } if !stepped && node == wanted => Some(record.at_us),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no event of {wanted}"))
    };
    let (four_stepped_down, five_led) = (at(NodeId(4), true), at(NodeId(5), false));
    assert!(five_led >= four_stepped_down, "5 led before 4 stepped down");
    let gap = Duration::from_micros(five_led - four_stepped_down);
    (sim, gap)
}

fn majority() -> Config {
    Config::default().with_quorum(Quorum::Majority)
}

#[test]
fn four_yields_to_five_and_resigns_at_once_by_default() {
    let (sim, gap) = hand_over(&majority());
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
    // The claim's round trip and the deferred votes: well under the delay below.
    assert!(gap < Duration::from_millis(300), "{gap:?}");
}

#[test]
fn with_a_resign_delay_five_leads_only_that_long_after_four_stepped_down() {
    let delay = Duration::from_millis(300);
    let (sim, gap) = hand_over(&majority().with_resign_delay(delay));
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
    assert!(gap >= delay, "5 led {gap:?} after 4 stepped down");
    // And not much later: the claimant waited for the delayed resignation rather
    // than giving up and starting over after a leader timeout.
    let config = majority();
    assert!(
        gap <= delay + config.answer_timeout() * 2 + config.round_trip() * 2,
        "{gap:?}"
    );
    assert_eq!(sim.overlapping_leaderships(), 0);
}

#[test]
fn a_resign_delay_beyond_a_day_is_refused() {
    let config = majority().with_resign_delay(Config::MAX_DURATION * 2);
    assert!(config.validate().is_err());
}
