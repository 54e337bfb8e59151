//! [`ChangeError`]: why a membership or key change through the handle failed.

use std::io;

use bully_core::CommandError;

use crate::error::DriverError;

/// Why [`Handle::add_member`](crate::Handle::add_member),
/// [`remove_member`](crate::Handle::remove_member) or
/// [`set_auth`](crate::Handle::set_auth) changed nothing. (The same name and
/// variants as bully-tokio's.)
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChangeError {
    /// The node refused the change (already a member, not a member, this node
    /// itself, or a membership its quorum could not run on).
    #[error(transparent)]
    Node(#[from] CommandError),
    /// The transport refused it (the codec's membership disagrees, a key setup is
    /// invalid, or the transport does not support the change).
    #[error(transparent)]
    Transport(#[from] io::Error),
    /// The driver has stopped.
    #[error(transparent)]
    Driver(#[from] DriverError),
}
