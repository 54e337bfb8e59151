//! What both drivers (`bully-tokio`, `bully-std`) do around a [`Node`] that does
//! not depend on their runtime, written once and called by both: the
//! permission to do the leader's work and its margin ([`WorkPermit`],
//! [`Permission`]), durable state written before any message that depends on it
//! leaves ([`Persister`]), membership and key changes applied to the node and
//! the transport in the safe order ([`Change`], [`ChangeError`]), the driver's
//! counters ([`DriverStats`]), when each member was last heard ([`LastHeard`]),
//! and the settings every driver's `Builder` has ([`Settings`]). What both
//! drivers test with, the in-memory network and the W1 check on a log of work
//! intervals, is in the `bully-sim` crate.
//!
//! [`DriverCore`] puts the first five together: a driver owns one, feeds it what
//! its runtime receives and the clock's readings, and carries out what it asks
//! (send these transmits, open or end this leadership, wait until this
//! deadline). The drivers differ only in how they wait, send and publish.
//!
//! Like the rest of `bully-core` it does no I/O and reads no clock: every `now`
//! comes from the caller.
//!
//! ```
//! use std::time::Instant;
//! use bully_core::driver::{DriverCore, PermitChange};
//! use bully_core::{Config, Node, NodeId};
//!
//! let node = Node::new(NodeId(1), [NodeId(1)], Config::default())?;
//! let mut core = DriverCore::new(node, None, None);
//! let now = Instant::now();
//! core.start(now);
//! // The rule after every input: the leadership first, then (inside
//! // `before_send`) the durable state, then the transmits, then the events.
//! let mut published = PermitChange::Same;
//! core.before_send(now, |change| published = change);
//! assert!(matches!(published, PermitChange::Replace(Some(_))), "alone, it leads at once");
//! while let Some(transmit) = core.poll_transmit() {
//!     core.sent(true); // hand `transmit` to the transport first
//!     # let _ = transmit;
//! }
//! while let Some(_event) = core.poll_event() {}
//! assert_eq!(core.node().leader().map(|leader| leader.id), Some(NodeId(1)));
//! # Ok::<(), bully_core::ConfigError>(())
//! ```
//!
//! [`Node`]: crate::Node

mod change;
mod core;
mod error;
mod heard;
mod permit;
mod persist;
mod settings;
mod stats;
#[cfg(test)]
mod tests;

pub use change::{Change, Peers, apply};
pub use core::DriverCore;
pub use error::{ChangeError, DriverError};
pub use heard::LastHeard;
pub use permit::{Permission, PermitChange, WorkPermit};
pub use persist::{Persist, Persister};
pub use settings::{DEFAULT_EVENT_CAPACITY, Settings};
pub use stats::DriverStats;
