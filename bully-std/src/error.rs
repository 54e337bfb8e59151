//! [`DriverError`]: why a [`Handle`](crate::Handle) call did not do what was asked.

/// Why a call on a [`Handle`](crate::Handle) or a [`LeaderWatch`](crate::LeaderWatch)
/// failed. (The same name and the same first variants as bully-tokio's.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DriverError {
    /// The driver thread has stopped (after a shutdown, an abort, or a panic):
    /// there is no node to ask any more.
    #[error("the driver thread has stopped")]
    Stopped,
    /// One of the threads the handle started panicked (a bug: please report it).
    /// The others were still stopped and joined.
    #[error("a bully-std thread panicked")]
    Panicked,
    /// A wait ran out before its condition held.
    #[error("timed out")]
    Timeout,
}
