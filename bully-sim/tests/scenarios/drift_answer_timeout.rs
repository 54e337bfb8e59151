//! Counterexamples found by giving the simulator's members clocks of their own:
//! the answer timeout, `2*T_M + P_p` (`T_M` the message time, the
//! longest a message takes, `P_p` the processing time, the longest before a reply
//! leaves; `Config::answer_timeout`, the lecture notes' rule), is measured on the
//! waiting member's clock and has no drift margin. A member whose clock runs fast
//! by ρ, the bound the configuration allows (A2, bounded drift), waits
//! `(2*T_M + P_p) / (1 + ρ)` of real time, less than a round trip the timing
//! model allows (A1, bounded delay). An answer that keeps to both assumptions
//! (docs/correctness.md, section 3) then arrives after the wait.
//!
//! The simulator reacts at once, so the round trip is `2*T_M` and `P_p` is all
//! the room there is: with the default `P_p` (10 ms) and `T_M` (20 ms) a drift up
//! to 25 % fits in it, and the sweeps pass. With `P_p` zero (as the stateright
//! model has it) any drift is too much; with a real `P_p` spent on processing, so
//! is any fast clock. Fixed: the default answer timeout is `(2*T_M + P_p) *
//! (1 + ρ)`, rounded up, and so is every wait on an answer (the probe's, the
//! Election's, the claim's); both tests fail on the code before that.

use std::time::Duration;

use bully_core::{Config, NodeId, Quorum};
use bully_sim::Simulation;

/// Messages within 1 ms, no processing time (the stateright model's `P_p`), and
/// clocks that may drift 10 % apart.
fn no_room(quorum: Quorum) -> Config {
    Config::default()
        .with_quorum(quorum)
        .with_max_message_delay(Duration::from_millis(1))
        .with_max_processing_time(Duration::ZERO)
        .with_clock_drift(0.1)
}

/// Without a quorum, S1 (at most one coordinator per term; docs/correctness.md,
/// section 1) in the timing model. Three members boot together;
/// member 1's clock runs 10 % fast, 2's and 3's 10 % slow. Member 1 asks 2
/// and 3 in term 1 and waits 2 ms on its clock, 1.82 ms of real time; their
/// answers take 2 ms (1 ms each way) and arrive after it has announced
/// itself in term 1, which 3, the highest, announces too.
#[test]
fn a_fast_clock_must_not_give_up_on_answers_that_keep_to_the_timing_model() {
    let mut sim = Simulation::new(1, (1..=3).map(NodeId), no_room(Quorum::None)).unwrap();
    sim.set_clock_drift(NodeId(1), 0.1).unwrap();
    sim.set_clock_drift(NodeId(2), -0.1).unwrap();
    sim.set_clock_drift(NodeId(3), -0.1).unwrap();
    sim.start_all();
    sim.run_for(sim.settle_bound());
    assert!(!sim.has_faulted(), "the run keeps to A1 and A2");
    assert_eq!(sim.agreed_leader(), Some(NodeId(3)));
    // Today: [TwoLeadersInTerm { term: Term(1), first: NodeId(3), second: NodeId(1), .. }]
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}

/// With a majority, L1 and L2 (the highest live member leads, within the
/// failover bound; docs/correctness.md, section 1). Three members settle under 3 (clock 10 %
/// slow); 1's and 2's clocks run 10 % fast. 3 is cut off, and 1 and 2, a
/// majority, should elect 2 within the failover bound. Each probes the other
/// and waits 2 ms on its clock, 1.82 ms of real time; every reply takes 2 ms,
/// so each concludes it is cut off, and neither ever stands.
#[test]
fn a_majority_of_fast_clocks_must_elect_when_the_leader_is_cut_off() {
    let config = no_room(Quorum::Majority);
    let mut sim = Simulation::new(1, (1..=3).map(NodeId), config.clone()).unwrap();
    sim.set_clock_drift(NodeId(1), 0.1).unwrap();
    sim.set_clock_drift(NodeId(2), 0.1).unwrap();
    sim.set_clock_drift(NodeId(3), -0.1).unwrap();
    sim.start_all();
    sim.run_for(sim.settle_bound());
    assert_eq!(sim.agreed_leader(), Some(NodeId(3)));
    sim.isolate(NodeId(3)).unwrap();
    let bound = sim.failover_bound();
    let elected = sim.run_until_true(bound * 2, |sim| sim.leaders() == [NodeId(2)]);
    // Today: nobody leads, for good (2's probes time out before 1's replies).
    assert!(elected, "no leader {:?} after the cut", bound * 2);
    assert!(sim.violations().is_empty(), "{:?}", sim.violations());
}
