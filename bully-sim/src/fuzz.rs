//! A fuzz harness for your own configuration: bytes from a fuzzer (cargo-fuzz,
//! or any source of inputs) become a sequence of inputs to nodes built with
//! your [`Config`](bully_core::Config), and every promise the documentation makes about one node
//! and about a cluster is checked after every input. A broken promise panics
//! with a message that names it, which is what a fuzzer reports as a crash.
//!
//! A fuzz target of your own is a few lines (the guide
//! `docs/guides/fuzz-your-config.md` goes from `cargo fuzz init` to a running
//! target, and on stable):
//!
//! ```no_run
//! // fuzz/fuzz_targets/my_config.rs, with `#![no_main]` and
//! // `libfuzzer_sys::fuzz_target!(|data: &[u8]| my_config(data));`
//! use bully_core::{Config, NodeId, Preemption, Quorum};
//! use std::time::Duration;
//!
//! fn my_config(data: &[u8]) {
//!     let config = Config::default()
//!         .with_quorum(Quorum::Majority)
//!         .with_preemption(Preemption::AfterStable(Duration::from_secs(2)));
//!     let members: Vec<NodeId> = (1..=5).map(NodeId).collect();
//!     bully_sim::fuzz::node(&config, &members, data);
//!     bully_sim::fuzz::cluster(&config, &members, data);
//! }
//! ```
//!
//! # What [`node`] checks
//!
//! One [`Node`](bully_core::Node), a member of `members` chosen by the bytes,
//! takes up to 512 inputs: messages from members, from itself and from
//! strangers, with terms near its own or near `u64::MAX`; timeouts when due,
//! early, late or in the past; time running backwards; every command
//! (`start`, `start_election`, `step_down`, `suspect`, `add_member`,
//! `remove_member`); restarts with and without its durable state, and
//! `restore`. After every input, each check below panics with a message that
//! starts as shown:
//!
//! - `S2:` its term and its highest accepted fencing token never go back
//!   (within one incarnation; a restart with the durable state keeps the term).
//! - `S3:` it accepts no leadership, and follows no leader, below the highest
//!   token it had accepted.
//! - `sent to itself`, `sent to a non-member`: every transmit goes to another
//!   member.
//! - `one input queued`: one input queues at most one message per member, and
//!   `handle_timeout` at most that many per timer that had expired
//!   ([`Node::expired_timers`](bully_core::Node::expired_timers)); with none
//!   expired, `handle_timeout with no timer expired` it sends and tells nothing.
//! - `deadline:`: [`Node::poll_timeout`](bully_core::Node::poll_timeout) is
//!   due exactly when a timer is or the permit's end has come, and after
//!   `handle_timeout(now)` it lies after `now`.
//! - `lease_until`, `G6:`: a lease only on a leader with a quorum, never past
//!   the send time of the latest request (claim or heartbeat round) a quorum
//!   acknowledged plus [`Config::leader_lease`](bully_core::Config::leader_lease), and never moving back within
//!   one leadership.
//! - `permit:`: the permit's changes come in order (started before renewed or
//!   ended, under one token), a permit whose end came is ended first, a
//!   permit ends the larger of the lease margin and the resign delay before the
//!   lease (`G9:`; no end without a quorum), and what was told is
//!   [`Node::permit`](bully_core::Node::permit).
//! - `I1:` to `I6:`: the safety core's invariants, as
//!   [`invariants::check_input`](crate::invariants::check_input) checks them.
//! - `command:`, `restart:`: `step_down` reports whether it stepped down,
//!   `suspect` refuses exactly itself and non-members, a restart with the
//!   durable state keeps it, and one with a membership changed at runtime is
//!   refused exactly as the rules say.
//!
//! # What [`cluster`] checks
//!
//! A [`Simulation`](crate::Simulation) of `members`, every one built with your
//! configuration, takes up to 48 steps: single deliveries, crashes, restarts
//! with and without the durable state, partitions, cut links, loss,
//! duplication, jitter, time passing, wrong failure-detector reports,
//! elections and step-downs on command, sent messages replayed late, and
//! forgeries from strangers. After every step the simulator's own checks
//! ([`Simulation::violations`](crate::Simulation::violations): S1 to S3, and
//! with a quorum exclusive leadership, W1 and the lease cover I7) must be
//! clean; then every fault heals, and `L1:` every live member names the
//! highest live candidate (any one leader under
//! [`Preemption::Never`](bully_core::Preemption::Never); none unless a quorum
//! of voters is live), and `L2:` within
//! [`Config::settle_bound`](bully_core::Config::settle_bound) of the faults
//! stopping.
//!
//! The rules are docs/protocol.md's, the properties docs/correctness.md's.
//!
//! # A configuration the harness refuses
//!
//! [`node`] and [`cluster`] check your configuration before they read a byte:
//! one that [`Node::new`](bully_core::Node::new) refuses for `members` panics
//! at once with the [`ConfigError`](bully_core::ConfigError), on every input,
//! so the first run of the fuzzer says what is wrong. [`cluster`] also refuses
//! a [`Quorum::AtLeast`](bully_core::Quorum::AtLeast) of half the voters or
//! fewer, which promises no exclusive leadership (two sides of a partition may
//! both elect), while the simulator checks it; [`node`] takes it.
//!
//! Set `BULLY_FUZZ_TRACE` to see what a run does (use it with one input).

mod cluster;
mod node;

pub use cluster::{cluster, cluster_with_arbitrary_config};
pub use node::{node, node_with_arbitrary_config};

#[cfg(test)]
mod tests;

/// Whether `BULLY_FUZZ_TRACE` is set: the harness then prints what it does.
fn tracing() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("BULLY_FUZZ_TRACE").is_some())
}
