//! What the page can get wrong: every bad input is an error the page shows, never
//! a panic of the module.

use bully_core::sim::SimError;

/// A request the simulator could not carry out.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum WebError {
    /// The page offers 2 to 64 members.
    #[error("{0} members: choose 2 to 64")]
    Members(u64),
    /// A loss rate above 100 %.
    #[error("a loss of {0} %: choose 0 to 100")]
    Loss(u8),
    /// A scenario that is not valid JSON of the right shape.
    #[error("not a scenario: {0}")]
    Json(String),
    /// A scenario whose actions go back in time.
    #[error("the scenario's actions go back in time")]
    OutOfOrder,
    /// Seed 004 has experiments 1 to 5.
    #[error("seed 004 describes experiments 1 to 5, not {0}")]
    Preset(u8),
    /// The simulator refused (an unknown member, a crashed one, a bad config).
    #[error(transparent)]
    Sim(#[from] SimError),
}
