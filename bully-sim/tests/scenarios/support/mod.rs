//! What the scenario tests share: the timings the claims are stated for, and
//! the golden digests of the sweeps' traces.
#![allow(dead_code)]

use std::time::Duration;

pub(crate) mod golden;

use bully_core::{Algorithm, Config, Quorum};

/// The shortest leader timeout [`Config::validate`] accepts with `config`'s
/// other settings, to a tenth of a millisecond: the edge of what the checks
/// promise works.
pub(crate) fn shortest_leader_timeout(config: &Config) -> Duration {
    let step = Duration::from_micros(100);
    let mut leader_timeout = config.heartbeat_interval() + config.max_message_delay() + step;
    while config
        .clone()
        .with_leader_timeout(leader_timeout)
        .validate()
        .is_err()
    {
        leader_timeout += step;
    }
    leader_timeout
}

/// The three algorithms, in the order the tests report them.
pub(crate) const ALGORITHMS: [Algorithm; 3] =
    [Algorithm::Classic, Algorithm::Modified, Algorithm::Ring];

/// `bully-agent`'s default margin before the lease: its 1 s grace period and
/// 250 ms (`bully-agent/src/config.rs`); also its resign delay.
pub(crate) const AGENT_MARGIN: Duration = Duration::from_millis(1_250);

/// `algorithm` with a majority quorum and `bully-agent`'s default timings:
/// 200 ms heartbeats, a 3 s leader timeout, 50 ms message delay, 20 ms
/// processing, and its lease margin and resign delay.
pub(crate) fn agent_timings(algorithm: Algorithm) -> Config {
    Config::default()
        .with_algorithm(algorithm)
        .with_quorum(Quorum::Majority)
        .with_heartbeat_interval(Duration::from_millis(200))
        .with_leader_timeout(Duration::from_millis(3_000))
        .with_max_message_delay(Duration::from_millis(50))
        .with_max_processing_time(Duration::from_millis(20))
        .with_lease_margin(AGENT_MARGIN)
        .with_resign_delay(AGENT_MARGIN)
}

/// The library's default timings and the agent's, each with a majority quorum
/// and named for the tests' messages.
pub(crate) fn both_timings(algorithm: Algorithm) -> [(&'static str, Config); 2] {
    let library = Config::default()
        .with_algorithm(algorithm)
        .with_quorum(Quorum::Majority);
    [
        ("library timings", library),
        ("agent timings", agent_timings(algorithm)),
    ]
}

/// Every `(term, member)` that became leader, in order, from the simulation's
/// trace (S4: no term may appear twice with two members).
pub(crate) fn leaderships(
    sim: &bully_sim::Simulation,
) -> Vec<(bully_core::Term, bully_core::NodeId)> {
    use bully_core::Event;
    use bully_sim::TraceEntry;
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

/// Member `id` of a cluster created now, declared so
/// ([`bully_core::DurableState::first_boot`]): it has promised nothing, so
/// with a quorum it votes as soon as it is asked. A member built with
/// `Node::new` may have forgotten a promise, and votes for nobody for a
/// follower lease from its first input.
pub(crate) fn first_boot(
    id: u64,
    members: impl IntoIterator<Item = bully_core::NodeId>,
    config: Config,
) -> bully_core::Node {
    bully_core::Node::with_durable_state(
        bully_core::NodeId(id),
        members,
        config,
        bully_core::DurableState::first_boot(),
    )
    .expect("a valid test configuration")
}
