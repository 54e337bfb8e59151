//! [`ChangeError`]: why a membership or key change through the handle failed.

use bully_core::CommandError;

use crate::driver::DriverError;
use crate::transport::TransportError;

/// Why [`Handle::add_member`](crate::Handle::add_member),
/// [`remove_member`](crate::Handle::remove_member) or
/// [`set_auth`](crate::Handle::set_auth) changed nothing.
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
    Transport(#[from] TransportError),
    /// The driver has stopped.
    #[error(transparent)]
    Driver(#[from] DriverError),
}
