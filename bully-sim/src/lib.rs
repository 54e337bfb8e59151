#![doc = include_str!("../README.md")]
// docs.rs builds with `--cfg docsrs` on nightly: items behind a feature
// show which one.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

// What the drivers' in-memory transports and their tests need, and the safety
// core's invariants, always built.
pub mod invariants;
mod mem;
mod work_log;

// The simulator and what runs on it (feature `simulator`, on by default).
#[cfg(feature = "simulator")]
mod error;
#[cfg(feature = "fuzz")]
#[cfg_attr(docsrs, doc(cfg(feature = "fuzz")))]
pub mod fuzz;
#[cfg(feature = "simulator")]
mod network;
#[cfg(feature = "simulator")]
#[cfg_attr(docsrs, doc(cfg(feature = "simulator")))]
pub mod paper;
#[cfg(feature = "simulator")]
#[cfg_attr(docsrs, doc(cfg(feature = "simulator")))]
pub mod paper_log;
#[cfg(feature = "simulator")]
#[cfg_attr(docsrs, doc(cfg(feature = "simulator")))]
pub mod partial;
#[cfg(feature = "simulator")]
#[cfg_attr(docsrs, doc(cfg(feature = "simulator")))]
pub mod scenario;
#[cfg(feature = "simulator")]
mod simulation;
#[cfg(feature = "simulator")]
mod trace;

pub use mem::{MemEndpoint, MemNetwork, MemStats};
pub use work_log::{
    Interval, W1Violation, WorkLog, check_w1, closest_hand_over, overlapping, tokens_going_back,
};

#[cfg(feature = "simulator")]
pub use error::SimError;
#[cfg(feature = "simulator")]
pub use network::{LinkConfig, SendOutcome};
#[cfg(feature = "simulator")]
#[cfg_attr(docsrs, doc(cfg(feature = "simulator")))]
pub use simulation::chaos;
#[cfg(feature = "simulator")]
pub use simulation::{InFlightMessage, Simulation, Violation};
#[cfg(feature = "simulator")]
pub use trace::{TraceEntry, TraceRecord, to_json_lines, to_mermaid};
