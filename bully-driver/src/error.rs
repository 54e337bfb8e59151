//! The drivers' errors: [`DriverError`], why a handle's call did not do what was
//! asked, and [`ChangeError`], why a membership or key change changed nothing.

use bully_core::CommandError;

/// Why a call on a driver's handle did not do what was asked: the driver
/// stopped, or a wait ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DriverError {
    /// The driver has stopped (shut down, aborted, its runtime stopped, or it
    /// panicked): there is no node to ask any more.
    #[error("the driver has stopped")]
    Stopped,
    /// The driver panicked (a bug: please report it). Whatever else the handle
    /// started was still stopped.
    #[error("the driver panicked")]
    Panicked,
    /// What was waited for did not happen in time.
    #[error("timed out")]
    Timeout,
}

/// Why a membership or key change through a driver's handle (`add_member`,
/// `remove_member`, `set_member_address`, `set_auth`) changed nothing. `E` is
/// the driver's transport error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChangeError<E> {
    /// The node refused the change (already a member, not a member, this node
    /// itself, or a membership its quorum could not run on).
    #[error(transparent)]
    Node(#[from] CommandError),
    /// The transport refused it (the codec's membership disagrees, a key setup is
    /// invalid, or the transport does not support the change).
    #[error(transparent)]
    Transport(E),
    /// The driver has stopped.
    #[error(transparent)]
    Driver(#[from] DriverError),
}
