//! The timings the tests run with: shorter than the defaults, so that a story
//! takes little (virtual or real) time, each chosen for the network it runs on.

use std::time::Duration;

use bully_core::Config;

fn timings(heartbeat: u64, leader_timeout: u64, message_delay: u64, processing: u64) -> Config {
    let ms = Duration::from_millis;
    Config::default()
        .with_heartbeat_interval(ms(heartbeat))
        .with_leader_timeout(ms(leader_timeout))
        .with_max_message_delay(ms(message_delay))
        .with_max_processing_time(ms(processing))
}

/// The in-memory network in paused time, where a message arrives at once:
/// heartbeat 50 ms, leader timeout 150 ms, messages within 5 ms.
pub(crate) fn instant() -> Config {
    timings(50, 150, 5, 2)
}

/// Real UDP on 127.0.0.1 on a shared machine: heartbeat 50 ms, leader timeout
/// 200 ms, messages within 10 ms.
pub(crate) fn loopback() -> Config {
    timings(50, 200, 10, 5)
}

/// Room for a lease margin beside the heartbeats (the leadership tests), or for
/// a real network with a quorum: heartbeat 50 ms, leader timeout 300 ms,
/// messages within 10 ms.
pub(crate) fn patient() -> Config {
    timings(50, 300, 10, 5)
}

/// The timer tests', whose counts are per heartbeat: heartbeat 100 ms, leader
/// timeout 300 ms, messages within 10 ms.
pub(crate) fn ticking() -> Config {
    timings(100, 300, 10, 5)
}
