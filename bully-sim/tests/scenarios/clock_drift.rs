//! A2, the bounded-drift assumption (docs/correctness.md, section 3): clocks
//! drifting apart within the bound the configuration states (ρ,
//! `Config::with_clock_drift`) keep the lease argument sound, and a drift beyond
//! it breaks exclusive leadership and W1 (a leader's work stops before another
//! member can be elected; docs/correctness.md, section 1), so the checks can fail.
//!
//! The simulator gives each member its own clock (`Simulation::set_clock_drift`)
//! and compares leaderships and work in real time. The random sweeps
//! (`quorum.rs`, `properties.rs`) draw every member's drift within ρ,
//! but their timings leave so much room between an old lease's end and a new
//! leadership's start (a message delay, a probe, an election, a claim's round
//! trip: about 110 ms with the default timings) that a wrong drift factor would
//! pass them. These runs take the room away: messages take 1 ms, so a majority
//! elects a new leader a few milliseconds after the last promise to the old one
//! ran out, and what is left between the two leaderships is the drift margin.

use std::time::Duration;

use bully_core::{Algorithm, Config, Event, Message, NodeId, Quorum};
use bully_sim::{Simulation, TraceEntry, Violation};

const ALGORITHMS: [Algorithm; 3] = [Algorithm::Classic, Algorithm::Modified, Algorithm::Ring];

/// A majority quorum on a fast network: `T_M` (the message time, the longest a
/// message takes) 1 ms and `P_p` (the processing time) 1 ms, the rest the
/// defaults (heartbeats every 100 ms, the leader suspected after 500 ms).
fn fast_network(algorithm: Algorithm, rho: f64) -> Config {
    Config::default()
        .with_algorithm(algorithm)
        .with_quorum(Quorum::Majority)
        .with_max_message_delay(Duration::from_millis(1))
        .with_max_processing_time(Duration::from_millis(1))
        .with_clock_drift(rho)
}

/// `n` members whose clocks run at `drifts` (member `i + 1` at `drifts[i]`),
/// settled under `n`; then `n` is cut off from the rest and the majority
/// elects. Returns the simulation and the real time from the old leader's
/// lease running out to the new leader's first leadership (negative: the new
/// one led first).
fn cut_off_the_leader(config: &Config, drifts: &[f64], seed: u64) -> (Simulation, i64) {
    let n = drifts.len() as u64;
    let mut sim = Simulation::new(seed, (1..=n).map(NodeId), config.clone()).unwrap();
    sim.enable_trace();
    for (id, &drift) in (1..=n).zip(drifts) {
        sim.set_clock_drift(NodeId(id), drift).unwrap();
    }
    sim.start_all();
    // Seeds spread the cut over the heartbeat interval's phases.
    sim.run_for(sim.settle_bound() + Duration::from_millis(seed * 13 % 100));
    assert_eq!(sim.agreed_leader(), Some(NodeId(n)), "{drifts:?}");
    let from = sim.trace().len();
    sim.isolate(NodeId(n)).unwrap();
    sim.run_for(config.leader_timeout() * 4);
    let mut lease_ran_out = None;
    let mut successor_led = None;
    for record in &sim.trace()[from..] {
        let TraceEntry::Event { node, event } = record.entry else {
            continue;
        };
        let at = record.at_us as i64;
        match event {
            Event::LeaseExpired { .. } if node == NodeId(n) => {
                lease_ran_out.get_or_insert(at);
            }
            Event::BecameLeader { .. } if node != NodeId(n) => {
                successor_led.get_or_insert(at);
            }
            _ => {}
        }
    }
    let (Some(ran_out), Some(led)) = (lease_ran_out, successor_led) else {
        panic!(
            "{drifts:?}: the lease ran out at {lease_ran_out:?}, the successor led at {successor_led:?}"
        );
    };
    (sim, led - ran_out)
}

#[test]
fn a_leader_whose_clock_runs_ten_percent_slow_sends_its_heartbeats_every_111_ms_of_real_time() {
    let config = Config::default().with_clock_drift(0.1);
    let mut sim = Simulation::new(1, (1..=3).map(NodeId), config.clone()).unwrap();
    sim.set_clock_drift(NodeId(3), -0.1).unwrap();
    sim.enable_trace();
    sim.start_all();
    sim.run_for(Duration::from_secs(3));
    assert_eq!(sim.agreed_leader(), Some(NodeId(3)));
    let sent: Vec<u64> = sim
        .trace()
        .iter()
        .filter_map(|record| match record.entry {
            TraceEntry::Send {
                from: NodeId(3),
                to: NodeId(1),
                message: Message::Heartbeat { .. },
                ..
            } => Some(record.at_us),
            _ => None,
        })
        .collect();
    assert!(sent.len() > 20, "{sent:?}");
    // 100 ms on a clock that reads 0.9 s a second: 111.111 ms, to the microsecond.
    for pair in sent.windows(2) {
        let gap = pair[1] - pair[0];
        assert!((111_110..=111_112).contains(&gap), "{gap} µs: {sent:?}");
    }
    // The same seconds on member 1's exact clock and on 3's slow one.
    let real = sim.now() - sim.local_now(NodeId(1)).unwrap();
    assert_eq!(real, Duration::ZERO);
    let behind = sim.local_now(NodeId(1)).unwrap() - sim.local_now(NodeId(3)).unwrap();
    assert_eq!(behind, sim.elapsed() / 10, "3's clock fell a tenth behind");
}

/// Every member's clock at one extreme of the bound or the other, in every
/// combination, for ρ of 0.001, 0.01 and 0.1, three and five members, each
/// algorithm, without and with a resign delay: the cut-off leader's lease runs
/// out before the majority's new leader leads, and no work overlaps.
#[test]
fn with_every_clock_at_an_extreme_of_the_bound_the_old_lease_ends_before_the_new_leadership() {
    for rho in [0.001, 0.01, 0.1] {
        for algorithm in ALGORITHMS {
            for resign in [Duration::ZERO, Duration::from_millis(150)] {
                let config = fast_network(algorithm, rho).with_resign_delay(resign);
                let mut closest = i64::MAX;
                for n in [3usize, 5] {
                    for signs in 0..1u32 << n {
                        let drifts: Vec<f64> = (0..n)
                            .map(|i| if signs & 1 << i == 0 { -rho } else { rho })
                            .collect();
                        let (sim, gap) = cut_off_the_leader(&config, &drifts, u64::from(signs));
                        let what = format!("{algorithm:?} rho {rho} resign {resign:?} {drifts:?}");
                        assert!(
                            sim.violations().is_empty(),
                            "{what}: {:?}",
                            sim.violations()
                        );
                        assert_eq!(sim.overlapping_leaderships(), 0, "{what}");
                        assert_eq!(sim.work_overlaps(), 0, "{what}");
                        assert!(gap > 0, "{what}: the successor led {gap} µs early");
                        assert_eq!(sim.leaders(), [NodeId(n as u64 - 1)], "{what}");
                        closest = closest.min(gap);
                    }
                }
                eprintln!(
                    "{algorithm:?}, rho {rho}, resign delay {resign:?}: the new leadership \
                     began at least {closest} µs after the old lease ran out"
                );
            }
        }
    }
}

/// Past the bound the same story breaks: the leader's clock runs three times ρ
/// slow (the others ρ fast), so its lease, which allows for a drift of ρ, lasts
/// past the promises its followers made, and the majority elects while it
/// still leads. With a resign delay the old leader's work is still stopping
/// when the new leader's starts.
#[test]
fn a_leader_whose_clock_runs_three_times_the_bound_slow_still_leads_when_its_successor_does() {
    let rho = 0.01;
    for algorithm in ALGORITHMS {
        let config = fast_network(algorithm, rho).with_resign_delay(Duration::from_millis(150));
        let (sim, gap) = cut_off_the_leader(&config, &[rho, rho, -3.0 * rho], 0);
        assert!(gap < 0, "{algorithm:?}: the successor led {gap} µs after");
        let overlapping = sim.violations().iter().any(|violation| {
            matches!(
                violation,
                Violation::OverlappingLeaders {
                    leading: NodeId(3),
                    second: NodeId(2),
                    ..
                }
            )
        });
        let work = sim.violations().iter().any(|violation| {
            matches!(
                violation,
                Violation::WorkOverlap {
                    running: NodeId(3),
                    second: NodeId(2),
                    ..
                }
            )
        });
        assert!(overlapping, "{algorithm:?}: {:?}", sim.violations());
        assert!(work, "{algorithm:?}: {:?}", sim.violations());
        eprintln!(
            "{algorithm:?}, leader 3 rho slow: the new leadership began {} µs before the old \
             lease ran out; {:?}",
            -gap,
            sim.violations()
        );
    }
}
