//! [`Error`]: why a [`Handle`](crate::Handle) call did not do what was asked.

/// Why a call on a [`Handle`](crate::Handle) or a [`LeaderWatch`](crate::LeaderWatch)
/// failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The driver thread has stopped (after a shutdown, or a panic): there is no
    /// node to ask any more.
    #[error("the election driver has stopped")]
    Stopped,
    /// The wait ran out before the condition held.
    #[error("timed out")]
    Timeout,
    /// One of the threads the handle started panicked (a bug: please report it).
    /// The others were still stopped and joined.
    #[error("a bully-std thread panicked")]
    Panicked,
}
