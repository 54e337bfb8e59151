//! A user's fuzz target: the state machine under the configuration this
//! service runs with, checked by `bully_sim::fuzz` against every promise the
//! documentation makes (docs/guides/fuzz-your-config.md walks through it).
//! `fuzz_targets/my_config.rs` hands it libFuzzer's bytes; `tests/stable.rs`
//! hands it mutated inputs on a stable toolchain.
#![forbid(unsafe_code)]

use std::time::Duration;

use bully_core::{Config, NodeId, Preemption, Quorum};

/// One node, then a simulated cluster, of five members, all with my
/// configuration: a majority quorum, and a higher member takes over only
/// after two stable seconds.
pub fn my_config(data: &[u8]) {
    let config = Config::default()
        .with_quorum(Quorum::Majority)
        .with_preemption(Preemption::AfterStable(Duration::from_secs(2)));
    let members: Vec<NodeId> = (1..=5).map(NodeId).collect();
    bully_sim::fuzz::node(&config, &members, data);
    bully_sim::fuzz::cluster(&config, &members, data);
}
