//! The page's limits on what it takes: the largest cluster, scenario and seed.
//! The settings, the form fields, a loaded scenario and the error texts all check
//! or quote them; where the clock stops is `clock.rs`'s.

/// The largest cluster the page draws.
pub const MAX_MEMBERS: u64 = 64;

/// The most actions a scenario may hold.
pub const MAX_ACTIONS: usize = 10_000;

/// The largest scenario text the page reads, in bytes.
pub const MAX_SCENARIO_BYTES: usize = 1 << 20;

/// The largest seed: JavaScript keeps whole numbers exactly up to 2^53 - 1, and
/// the page passes the seed through JavaScript.
pub const MAX_SEED: u64 = (1 << 53) - 1;
