// The crate root: its documentation is the README; below, the modules and what they export.
#![doc = include_str!("../README.md")]
// docs.rs builds with `--cfg docsrs` on nightly: items behind a feature
// show which one.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod builder;
mod driver;
mod error;
mod events;
mod handle;
mod mem;
mod permit;
mod sync;
mod transport;
mod udp;
mod watch;

pub use builder::{Builder, spawn, spawn_persisting};
pub use error::{ChangeError, DriverError};
pub use events::{Events, RecvError};
pub use handle::Handle;
pub use mem::{MemNetwork, MemStats, MemTransport};
pub use permit::Permit;

/// The driver's and the node's counters (bully-tokio's too: written once, in
/// `bully_driver`).
#[doc(no_inline)]
pub use bully_driver::DriverStats;
pub use transport::Transport;
pub use udp::{UdpSetupError, UdpTransport};

/// The wire format [`UdpTransport`] speaks: [`Codec`](wire::Codec), keys, cluster
/// ids, incarnations (re-exported from `bully-core`, so no feature flag is needed).
#[doc(no_inline)]
pub use bully_core::wire;
pub use watch::LeaderWatch;

#[cfg(all(test, not(loom)))]
mod tests {
    /// What the docs promise about sharing.
    #[test]
    fn the_public_types_can_be_shared_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<crate::Handle>();
        send_sync::<crate::LeaderWatch>();
        send_sync::<crate::Events>();
        send_sync::<crate::Permit>();
        send_sync::<crate::UdpTransport>();
        send_sync::<crate::MemTransport>();
        send_sync::<crate::MemNetwork>();
    }
}
