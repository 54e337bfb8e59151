//! The instant type every `now` argument takes.
//!
//! It is `std::time::Instant` on every target but the browser's
//! (`wasm32-unknown-unknown`), where std has no clock: there `Instant::now()`
//! panics and no other constructor exists, so the simulator could not even take
//! its epoch. On that target it is `web_time::Instant`, which has std's API and
//! reads `performance.now()` (quinn-proto does the same). Natively the two names
//! are the same type, so nothing changes for a native caller.

#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
pub use std::time::Instant;
#[cfg(all(target_family = "wasm", target_os = "unknown"))]
pub use web_time::Instant;
