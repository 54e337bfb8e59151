//! What the harness's tests share: a user's configuration and inputs made
//! from a seed, as a fuzzer's first inputs would be, without one.

use std::time::Duration;

use bully_core::{Config, NodeId, Preemption, Quorum};

/// The configuration of the guide's example: five members, a majority
/// quorum, and a higher member takes over only after two stable seconds.
pub(super) fn users_config() -> Config {
    Config::default()
        .with_quorum(Quorum::Majority)
        .with_preemption(Preemption::AfterStable(Duration::from_secs(2)))
}

pub(super) fn five_members() -> Vec<NodeId> {
    (1..=5).map(NodeId).collect()
}

/// `len` bytes from `seed` (SplitMix64, Steele, Lea and Flood, "Fast
/// splittable pseudorandom number generators"): deterministic, so a failure
/// repeats.
pub(super) fn pseudo_random(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed;
    let mut bytes = Vec::with_capacity(len + 8);
    while bytes.len() < len {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        bytes.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}
