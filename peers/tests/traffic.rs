//! The equal-traffic rule: bully-core's heartbeat interval at a peer's traffic never sends
//! more per second in the steady state than the peer, and the cluster stays steady.

use bully_core::Quorum;
use bully_peers::matching::{
    self, FIT_SEEDS, bully_rate_seeded, fits, matched, steady_rate, with_system,
};
use bully_peers::members::Visit;
use bully_peers::peer::Peer;
use bully_peers::scenario;
use bully_peers::system::System;

#[test]
fn the_chosen_interval_sends_no_more_than_ble_or_raft_at_five_members() {
    let n = 5;
    for (peer, quorum) in [
        (System::Ble, Quorum::None),
        (System::Ble, Quorum::Majority),
        (System::Raft500, Quorum::None),
    ] {
        let limit = steady_rate(peer, n).per_second;
        let m = matched(peer, quorum, n);
        assert_eq!(m.peer, limit);
        // Measured again, from the configuration alone, under every seed.
        for seed in 1..=FIT_SEEDS {
            let again = bully_rate_seeded(&m.config, n, seed);
            assert!(
                again.steady && again.per_second <= limit,
                "{quorum:?} at {:?}, seed {seed}: {} msgs/s against {}'s {limit}",
                m.interval,
                again.per_second,
                peer.label()
            );
        }
        assert_eq!(m.config.heartbeat_interval(), m.interval);
        assert!(m.config.leader_timeout() >= 5 * m.interval);
        assert!(
            m.config.leader_timeout()
                >= m.interval + m.config.answer_timeout() + m.config.max_message_delay()
        );
        // A microsecond shorter would either exceed the peer's rate or not be steady.
        let shorter = matching::at_interval(
            m.config.clone(),
            m.interval - std::time::Duration::from_micros(1),
        );
        assert!(
            !fits(&shorter, n, limit).0,
            "{quorum:?}: a shorter interval fits"
        );
    }
}

#[test]
fn the_equal_traffic_systems_agree_after_a_crash() {
    struct Crash;
    impl Visit for Crash {
        type Out = bool;
        fn visit<P: Peer>(self, build: &dyn Fn(u64, u64, u64) -> P) -> bool {
            scenario::leader_crash(build, 5, 1).is_some_and(|e| e.agreed_after.is_some())
        }
    }
    for system in System::AT_TRAFFIC {
        assert!(with_system(system, Crash), "{}", system.label());
    }
}
