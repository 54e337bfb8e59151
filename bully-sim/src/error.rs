//! What a simulation call refuses to do.

use bully_core::{ConfigError, NodeId};

/// A simulation call named something it cannot act on.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// The id is not a member of the simulated cluster.
    #[error("node {0} is not in the simulation")]
    UnknownNode(NodeId),
    /// The node is crashed, so it cannot take the command.
    #[error("node {0} is crashed")]
    Crashed(NodeId),
    /// `dance_experiment` was asked for an experiment the Bully Algorithm
    /// Dance does not describe.
    #[error("the Bully Algorithm Dance describes experiments 1 to 5, not {0}")]
    UnknownExperiment(u8),
    /// The node configuration was rejected.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A node refused a command.
    #[error(transparent)]
    Command(#[from] bully_core::CommandError),
    /// A clock drift outside what `Simulation::set_clock_drift` accepts.
    #[error("clock drift {0} is outside [-0.9, 1]: a clock must run forward")]
    ClockDrift(f64),
}
