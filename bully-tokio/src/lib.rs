//! Tokio driver for [`bully_core`]: the crate a tokio service adds to know who leads.
//!
//! [`spawn`] starts a task that owns a [`Node`](bully_core::Node) and drives it
//! over a [`Transport`]; the returned [`Handle`] tells the application who leads
//! ([`Handle::leader`], or a `watch` of it), streams [`Event`](bully_core::Event)s,
//! and steps down or shuts down on request. A leader that shuts down gracefully
//! tells the others, so the next leader is elected at once instead of after
//! `leader_timeout` (like client-go's `ReleaseOnCancel`). [`spawn_persisting`]
//! also hands the node's durable state to the application whenever it changes.
//!
//! ```
//! use bully_core::{Config, Node, NodeId};
//! use bully_tokio::MemNetwork;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let members = [NodeId(1), NodeId(2), NodeId(3)];
//! let network = MemNetwork::new();
//! let mut handles = Vec::new();
//! for id in members {
//!     let node = Node::new(id, members, Config::default())?;
//!     handles.push(bully_tokio::spawn(node, network.endpoint(id)));
//! }
//! // Every node names the highest member.
//! for handle in &handles {
//!     let elected = handle.wait_for_leader(std::time::Duration::from_secs(5)).await?;
//!     assert_eq!(elected.id, NodeId(3));
//! }
//! // The leader leaves gracefully; 2 takes over at once.
//! let mut leader = handles[0].leader_watch();
//! handles.pop().unwrap().shutdown().await?;
//! leader.wait_for(|leader| leader.map(|l| l.id) == Some(NodeId(2))).await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Work only the leader may do
//!
//! [`Handle::permit`] waits until this node leads and returns a
//! [`Permit`]: the node's permit to work as a scope, with the fencing token
//! and a signal that fires when the node says the permit ended: when the
//! leadership ends or, with a quorum, the lease margin
//! ([`Config::with_lease_margin`](bully_core::Config::with_lease_margin)) before
//! its lease ([`Node::lease_until`](bully_core::Node::lease_until)) runs out, so
//! the work stops before any other member can be elected.
//! [`Handle::run_while_leader`] runs a job in each leadership and cancels it at
//! the signal. Without a quorum there is no such guarantee: a leader cut off from
//! the others keeps leading, and working, while they elect another.
//!
//! # Transports
//!
//! - [`UdpTransport`]: authenticated datagrams (`bully_core::wire`) over a tokio
//!   UDP socket, or over any [`DatagramSocket`] (turmoil's, in tests).
//! - [`MemTransport`]: an in-process [`MemNetwork`] with drop, delay and partition
//!   controls, for tests and demos.
//! - Your own: implement [`Transport`] (see the `custom_transport` example).
//!
//! # The driver
//!
//! One task owns the node. It waits, in one `tokio::select!`, for the next
//! message, the next command from the [`Handle`], or one `sleep_until` at the
//! node's `poll_timeout`, re-armed only when that deadline changes. Before it
//! waits it compares the deadline with the clock, so a deadline that passed while
//! the task was busy is served at once. After every input it sends the node's
//! transmits (a failed send is counted and logged, never fatal), publishes its
//! events, and reads the deadline again. The node reads tokio's clock only, so
//! the driver runs in virtual time under `tokio::time::pause` and turmoil.
//!
//! # Tracing
//!
//! Each task runs in a span `bully{node=<id>}`; elections, leader changes and
//! shutdowns are `debug` events, every message `trace`. Nothing is printed unless
//! the application installs a subscriber.
// docs.rs builds with `--cfg docsrs` on nightly: items behind a feature
// show which one.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod builder;
mod driver;
mod error;
mod handle;
mod mem;
mod permit;
mod transport;
mod udp;

pub use builder::{Builder, spawn, spawn_persisting};
pub use driver::RECV_ERROR_BURST;
pub use error::{ChangeError, DriverError};
pub use handle::Handle;
pub use permit::Permit;

/// The driver's and the node's counters (bully-std's too: written once, in
/// `bully_driver`).
#[doc(no_inline)]
pub use bully_driver::DriverStats;
pub use mem::{MemNetwork, MemStats, MemTransport};
pub use transport::{Transport, TransportError};
pub use udp::{DatagramSocket, MAX_REFUSED_PER_RECV, UdpTransport};

/// The wire format [`UdpTransport`] speaks: [`Codec`](wire::Codec), keys, cluster
/// ids, incarnations (re-exported from `bully-core`, so no feature flag is needed).
#[doc(no_inline)]
pub use bully_core::wire;

/// The `#[async_trait]` attribute [`Transport`] and [`DatagramSocket`] are
/// declared with, so a custom transport needs no extra dependency:
/// `#[bully_tokio::async_trait]`.
pub use async_trait::async_trait;

/// `CancellationToken`, which [`Permit::cancellation_token`] returns
/// (re-exported from `tokio-util`).
#[doc(no_inline)]
pub use tokio_util::sync::CancellationToken;
