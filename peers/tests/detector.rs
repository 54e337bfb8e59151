//! The detector comparison checks itself: loss drops the share of messages it says,
//! jitter makes the share of messages late it says, a clean network gives no false
//! suspicion, 30 % loss does under a fixed timeout (fewer under the default
//! loss-adaptive one), and φ grows with the silence.

use std::time::Duration;

use bully_peers::detector::{Condition, config, steady_run};
use bully_peers::suspicion::{Detector, Monitor, phi_normal, replay};

const MINUTES: u64 = 10;

fn observe(condition: Condition) -> bully_peers::detector::SteadyRun {
    observe_with(condition, &config(Duration::from_millis(500)))
}

fn observe_with(
    condition: Condition,
    cfg: &bully_core::Config,
) -> bully_peers::detector::SteadyRun {
    steady_run(5, condition, cfg, Duration::from_secs(60 * MINUTES), 11)
}

#[test]
fn without_loss_the_default_timeout_never_suspects_the_live_leader() {
    let run = observe(Condition::Clean);
    assert!(run.agreed);
    assert_eq!(
        run.suspicions,
        vec![0; 5],
        "bully-core suspected a live leader"
    );
    assert_eq!(run.lost, 0);
    assert_eq!(run.traces.len(), 4);
    for trace in &run.traces {
        // One heartbeat every 100 ms, each within the 15 to 20 ms delay range.
        let expected = (MINUTES * 600) as usize;
        assert!(
            trace.len().abs_diff(expected) <= 1,
            "{} arrivals",
            trace.len()
        );
        assert!(trace.iter().all(|a| {
            let d = a.at - a.sent;
            d >= Duration::from_millis(15) && d <= Duration::from_millis(20)
        }));
        let r = replay(
            Detector::Fixed(Duration::from_millis(500)),
            trace,
            run.to,
            &[],
        );
        assert_eq!(r.suspicions, 0);
    }
}

#[test]
fn thirty_percent_loss_drops_thirty_percent_and_makes_false_suspicions_under_a_fixed_timeout() {
    // bully-core's default detector adapts to the loss it measures (below); a
    // fixed 500 ms timeout is what makes the false suspicions.
    let fixed = config(Duration::from_millis(500)).with_loss_adaptive_detection(false);
    let run = observe_with(Condition::Loss, &fixed);
    let share = run.lost as f64 / run.offered as f64;
    // Four heartbeats every 100 ms (no acknowledgements without a quorum).
    assert!(run.offered > 20_000, "{} messages", run.offered);
    assert!((share - 0.3).abs() < 0.01, "lost {share}");
    // Four lost heartbeats in a row happen ~100 times an hour at the highest
    // follower: ten minutes cannot go without one.
    let total: u64 = run.suspicions.iter().sum();
    assert!(total > 0, "no false suspicion under 30 % loss");
    assert_eq!(run.suspicions[4], 0, "the leader suspects nobody");
    for trace in &run.traces {
        let share = trace.len() as f64 / (MINUTES * 600) as f64;
        assert!(
            (share - 0.7).abs() < 0.03,
            "{share} of the heartbeats arrived"
        );
    }
    // The same loss with the loss-adaptive detector (the default): fewer.
    let adaptive: u64 = observe(Condition::Loss).suspicions.iter().sum();
    assert!(
        adaptive < total,
        "{adaptive} against {total} with a fixed timeout"
    );
}

#[test]
fn jitter_makes_a_tenth_of_the_messages_late() {
    let run = observe(Condition::Jitter);
    assert_eq!(run.lost, 0);
    let arrivals: Vec<_> = run.traces.iter().flatten().collect();
    let late = arrivals
        .iter()
        .filter(|a| a.at - a.sent > Duration::from_millis(20))
        .count() as f64
        / arrivals.len() as f64;
    assert!((late - 0.1).abs() < 0.01, "{late} late");
    let very_late = arrivals
        .iter()
        .filter(|a| a.at - a.sent > Duration::from_millis(220))
        .count() as f64
        / arrivals.len() as f64;
    // 0.1 * exp(-2): about 1.35 %.
    assert!((very_late - 0.0135).abs() < 0.004, "{very_late} very late");
}

#[test]
fn phi_grows_with_the_silence() {
    assert!((phi_normal(0.0) - 2f64.log10()).abs() < 1e-6);
    // P(Y > 3) = 1.3499e-3.
    assert!((phi_normal(3.0) - 2.8697).abs() < 1e-3);
    let ms = Duration::from_millis;
    for detector in [
        Detector::PhiNormal {
            threshold: 8.0,
            min_std: ms(10),
        },
        Detector::PhiExp { threshold: 3.0 },
    ] {
        let mut m = Monitor::new(detector, ms(100));
        let mut t = Duration::ZERO;
        for i in 0..200u64 {
            t += ms(95 + (i % 11));
            m.heartbeat(t);
        }
        let phis: Vec<f64> = [50, 100, 150, 200, 400, 1000]
            .iter()
            .map(|&s| m.phi(ms(s)))
            .collect();
        assert!(
            phis.windows(2).all(|w| w[0] < w[1]),
            "{detector:?}: {phis:?}"
        );
        assert!(!m.suspects(t + ms(50)));
        assert!(m.suspects(t + ms(3000)));
        // The deadline is where φ crosses the threshold.
        let d = m.deadline();
        let threshold = match detector {
            Detector::PhiNormal { threshold, .. } | Detector::PhiExp { threshold } => threshold,
            Detector::Fixed(_) => unreachable!(),
        };
        assert!(m.phi(d - ms(1)) < threshold && m.phi(d + ms(1)) > threshold);
    }
}
