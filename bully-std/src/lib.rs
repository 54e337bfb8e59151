#![doc = include_str!("../README.md")]
// docs.rs builds with `--cfg docsrs` on nightly: items behind a feature
// show which one.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod change;
mod channel;
mod driver;
mod error;
mod events;
mod handle;
mod leadership;
mod sync;
mod transport;
mod udp;
mod watch;

pub use change::ChangeError;
pub use channel::{ChannelNetwork, ChannelStats, ChannelTransport};
pub use error::DriverError;
pub use events::{Events, RecvError};
pub use handle::{Builder, DriverStats, Handle, spawn, spawn_persisting};
pub use leadership::Leadership;
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
        send_sync::<crate::Leadership>();
        send_sync::<crate::UdpTransport>();
        send_sync::<crate::ChannelTransport>();
        send_sync::<crate::ChannelNetwork>();
    }
}
