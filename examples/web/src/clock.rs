//! The page's clock: simulated time in whole microseconds, one message time
//! (T_M, the longest a message takes), and where the clock stops.

use std::time::Duration;

/// One message time (T_M, the longest a message takes) in microseconds: the
/// simulator's link delay, bully-core's default `Config::max_message_delay` (20 ms).
pub const MESSAGE_DELAY_US: u64 = 20_000;

/// The page's clock stops here, in message times: 400 s of simulated time. A
/// scenario at the limit with 64 processes replays some 700,000 simulator events,
/// which the page runs in slices between frames, and its trace stays within tens
/// of megabytes.
pub const MAX_TIME_TM: u64 = 20_000;

/// [`MAX_TIME_TM`] in microseconds.
pub const MAX_TIME_US: u64 = MAX_TIME_TM * MESSAGE_DELAY_US;

/// Microseconds, saturating (a run of 584,000 years).
pub(crate) fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}
