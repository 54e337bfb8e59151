//! The runtime-independent half of a driver for `bully-core`: what both
//! drivers (`bully-tokio`, `bully-std`) do around a [`Node`] that does
//! not depend on their runtime, written once and called by both: durable
//! state written before any message that depends on it leaves ([`Persister`]), membership and key changes applied to the node and
//! the transport in the safe order ([`Change`], [`ChangeError`]), the driver's
//! counters ([`DriverStats`]), when each member was last heard ([`LastHeard`]),
//! and the settings every driver's `Builder` has ([`Settings`]). What both
//! drivers test with, the in-memory network and the W1 check on a log of work
//! intervals, is in the `bully-sim` crate.
//!
//! [`DriverCore`] puts the first four together: a driver owns one, feeds it what
//! its runtime receives and the clock's readings, and carries out what it and
//! its node ask (start, renew or end this permit to work, send these
//! transmits, wait until this deadline). The drivers differ only in how they
//! wait, send and publish. The permit itself is the node's own output
//! ([`Node::poll_permit`](bully_core::Node::poll_permit)): the core only hands it
//! on, first.
//!
//! Like the rest of `bully-core` it does no I/O and reads no clock: every `now`
//! comes from the caller.
//!
//! ```
//! use std::time::Instant;
//! use bully_driver::DriverCore;
//! use bully_core::{Config, Node, NodeId, PermitChange};
//!
//! let node = Node::new(NodeId(1), [NodeId(1)], Config::default())?;
//! let mut core = DriverCore::new(node, None);
//! let now = Instant::now();
//! core.start(now);
//! // The rule after every input: the permit to work first, then (inside
//! // `before_send`) the durable state, then the transmits, then the events.
//! let mut published = Vec::new();
//! core.before_send(|change| published.push(change));
//! assert!(matches!(published[..], [PermitChange::Started(_)]), "alone, it leads at once");
//! while let Some(transmit) = core.poll_transmit() {
//!     core.sent(true); // hand `transmit` to the transport first
//!     # let _ = transmit;
//! }
//! while let Some(_event) = core.poll_event() {}
//! assert_eq!(core.node().leader().map(|leader| leader.id), Some(NodeId(1)));
//! # Ok::<(), bully_core::ConfigError>(())
//! ```
//!
//! [`Node`]: bully_core::Node

#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod change;
mod core;
mod error;
mod heard;
mod persist;
mod settings;
mod stats;

pub use crate::core::DriverCore;
pub use change::{Change, Peers, apply};
pub use error::{ChangeError, DriverError};
pub use heard::LastHeard;
pub use persist::{Persist, Persister};
pub use settings::{DEFAULT_EVENT_CAPACITY, Settings};
pub use stats::DriverStats;
