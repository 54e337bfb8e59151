//! bully-core, raft-rs and omnipaxos's Ballot Leader Election driven side by side
//! through one deterministic discrete-event loop ([`sim::Sim`]): the same link
//! delays, the same per-directed-link faults, the same 100 ms ticks, seeded
//! randomness everywhere, one definition of agreement and of an effective leader.
//!
//! `cargo run --release -- all` writes every table (see README.md).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bully;
pub mod callgrind;
pub mod cpu;
pub mod detector;
pub mod matching;
pub mod members;
pub mod memory;
pub mod omni;
pub mod peer;
pub mod raft_peer;
pub mod report;
pub mod scenario;
pub mod sim;
pub mod steady;
pub mod suspicion;
pub mod system;
pub mod tables;
pub mod traffic;
pub mod watch;
