//! [`Settings`]: what every driver's `Builder` sets, whatever the runtime.

/// How many events a subscriber of a driver's events may fall behind before it
/// misses the oldest, unless the driver's `Builder::event_capacity` says
/// otherwise. Leadership events come a handful per failover, so only a reader
/// that stopped reading falls this far behind.
pub const DEFAULT_EVENT_CAPACITY: usize = 1024;

/// The settings both drivers' `Builder`s share; each keeps its runtime's own
/// beside them.
///
/// The lease margin is not among them: it is the node's own setting
/// ([`Config::with_lease_margin`](bully_core::Config::with_lease_margin)), since the
/// node, not the driver, says when its permit to work ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// How many unread events each subscriber may hold.
    pub event_capacity: usize,
}

impl Default for Settings {
    /// [`DEFAULT_EVENT_CAPACITY`] events.
    fn default() -> Self {
        Settings {
            event_capacity: DEFAULT_EVENT_CAPACITY,
        }
    }
}

impl Settings {
    /// These settings with room for `capacity` events, at least 1 (a channel
    /// of none could hold nothing).
    #[must_use]
    pub fn with_event_capacity(self, capacity: usize) -> Settings {
        Settings {
            event_capacity: capacity.max(1),
        }
    }
}
