#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod channel;
mod driver;
mod error;
mod events;
mod handle;
mod sync;
mod transport;
mod watch;

pub use channel::{ChannelNetwork, ChannelTransport};
pub use error::Error;
pub use events::{Events, RecvError};
pub use handle::{Builder, Handle, Status, spawn};
pub use transport::Transport;
pub use watch::LeaderWatch;
