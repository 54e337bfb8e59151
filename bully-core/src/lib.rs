#![doc = include_str!("../README.md")]
// docs.rs builds with `--cfg docsrs` on nightly: items behind a feature
// show which one.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod config;
mod error;
mod event;
mod fencing;
mod members;
mod message;
mod node;
mod permit;
mod safety;
mod stats;
mod time;
mod timer;
#[cfg(feature = "wire")]
#[cfg_attr(docsrs, doc(cfg(feature = "wire")))]
pub mod wire;

pub use config::{Algorithm, Config, ConfigError, Preemption, Quorum};
pub use error::CommandError;
pub use event::{Event, FencingToken, Leader, Role};
pub use fencing::{Fenced, FencingGuard};
pub use members::Membership;
pub use message::{Message, MessageKind, NodeId, Term, Transmit};
pub use node::{DurableState, Node};
pub use permit::{Permit, PermitChange};
pub use safety::{Promise, SafetyState};
pub use stats::{DropCounts, DropReason, MessageCounts, Stats};
pub use time::Instant;
