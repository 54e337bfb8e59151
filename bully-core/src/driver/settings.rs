//! [`Settings`]: what every driver's `Builder` sets, whatever the runtime.

use std::time::Duration;

/// How many events a subscriber of a driver's events may fall behind before it
/// misses the oldest, unless the driver's `Builder::event_capacity` says
/// otherwise. Leadership events come a handful per failover, so only a reader
/// that stopped reading falls this far behind.
pub const DEFAULT_EVENT_CAPACITY: usize = 1024;

/// The settings both drivers' `Builder`s share; each keeps its runtime's own
/// beside them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// With a quorum, how long before the end of its lease a leadership ends
    /// (`None`: the node's
    /// [`Config::default_lease_margin`](crate::Config::default_lease_margin)).
    pub lease_margin: Option<Duration>,
    /// How many unread events each subscriber may hold.
    pub event_capacity: usize,
}

impl Default for Settings {
    /// The default lease margin, and [`DEFAULT_EVENT_CAPACITY`] events.
    fn default() -> Self {
        Settings {
            lease_margin: None,
            event_capacity: DEFAULT_EVENT_CAPACITY,
        }
    }
}

impl Settings {
    /// These settings with a lease margin of `margin`.
    #[must_use]
    pub fn with_lease_margin(self, margin: Duration) -> Settings {
        Settings {
            lease_margin: Some(margin),
            ..self
        }
    }

    /// These settings with room for `capacity` events, at least 1 (a channel
    /// of none could hold nothing).
    #[must_use]
    pub fn with_event_capacity(self, capacity: usize) -> Settings {
        Settings {
            event_capacity: capacity.max(1),
            ..self
        }
    }
}
