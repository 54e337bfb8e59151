//! A scenario: the cluster's settings and what the user did to it, when. Saved as
//! JSON (and in the page's URL), it replays to the same state, because the
//! simulator is deterministic for a seed.

use std::time::Duration;

use bully_core::{Algorithm, Config, NodeId, Preemption, Quorum};
use bully_sim::LinkConfig;
use serde::{Deserialize, Serialize};

use crate::error::WebError;
use crate::limits::{MAX_MEMBERS, MAX_SEED};

/// The scenario format this page writes and reads (see `SCENARIO-FORMAT.md`).
pub const SCENARIO_VERSION: u64 = 1;

/// How the cluster is built: what the page's settings panel chooses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Members `1..=n`, 2 to 64.
    pub n: u64,
    /// Which election the members run.
    pub algorithm: AlgorithmChoice,
    /// Whether a leader needs a majority.
    #[serde(default)]
    pub quorum: QuorumChoice,
    /// Whether a returning higher member takes over.
    #[serde(default)]
    pub preemption: PreemptionChoice,
    /// The simulator's seed: it decides losses, when links lose messages.
    #[serde(default)]
    pub seed: u64,
    /// The share of messages every link loses, in percent (0 to 100).
    #[serde(default)]
    pub loss_percent: u64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            n: 10,
            algorithm: AlgorithmChoice::Classic,
            quorum: QuorumChoice::None,
            preemption: PreemptionChoice::Always,
            seed: 0,
            loss_percent: 0,
        }
    }
}

impl Settings {
    /// Checks the ranges the page offers.
    pub fn validate(&self) -> Result<(), WebError> {
        if !(2..=MAX_MEMBERS).contains(&self.n) {
            return Err(WebError::Members(self.n));
        }
        if self.loss_percent > 100 {
            return Err(WebError::Loss(self.loss_percent));
        }
        if self.seed > MAX_SEED {
            return Err(WebError::Seed(self.seed));
        }
        Ok(())
    }

    /// Every member's configuration: the defaults the `simulate` program measures
    /// Table 1 with, and the chosen policies.
    pub fn config(&self) -> Config {
        // The sources' model: a process that boots or recovers elects at once,
        // and the clocks are exact (ρ = 0: the answer timeout is the bare round
        // trip, so times come out in whole and half message times, as the
        // papers count them, and as `simulate` measures Table 1).
        Config::default()
            .with_staggered_start(false)
            .with_clock_drift(0.0)
            .with_algorithm(self.algorithm.into())
            .with_quorum(self.quorum.into())
            .with_preemption(self.preemption.into())
    }

    /// The members, `1..=n`.
    pub fn members(&self) -> impl Iterator<Item = NodeId> + use<> {
        (1..=self.n).map(NodeId)
    }

    /// Every link: reliable with one message time of delay, lossy if asked.
    pub fn link(&self, delay: Duration) -> LinkConfig {
        LinkConfig {
            // At most 100: exact in an f64.
            loss: self.loss_percent as f64 / 100.0,
            ..LinkConfig::reliable(delay)
        }
    }
}

/// [`Algorithm`], as the page names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlgorithmChoice {
    /// Garcia-Molina's Bully (the tutorial "What is Bully Algorithm", Wikipedia's
    /// "Bully algorithm", the "Bully Algorithm Dance").
    #[default]
    Classic,
    /// Soundarabai et al.'s modified Bully.
    Modified,
    /// The ring of the lecture notes "Election Algorithm in Distributed Systems".
    Ring,
}

impl From<AlgorithmChoice> for Algorithm {
    fn from(choice: AlgorithmChoice) -> Algorithm {
        match choice {
            AlgorithmChoice::Classic => Algorithm::Classic,
            AlgorithmChoice::Modified => Algorithm::Modified,
            AlgorithmChoice::Ring => Algorithm::Ring,
        }
    }
}

/// [`Quorum`], as the page names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuorumChoice {
    /// Bully as published: no quorum.
    #[default]
    None,
    /// No leader without a majority reachable.
    Majority,
}

impl From<QuorumChoice> for Quorum {
    fn from(choice: QuorumChoice) -> Quorum {
        match choice {
            QuorumChoice::None => Quorum::None,
            QuorumChoice::Majority => Quorum::Majority,
        }
    }
}

/// [`Preemption`], as the page names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PreemptionChoice {
    /// A returning higher member takes over at once (Bully as published).
    #[default]
    Always,
    /// The sitting leader stays until it fails.
    Never,
}

impl From<PreemptionChoice> for Preemption {
    fn from(choice: PreemptionChoice) -> Preemption {
        match choice {
            PreemptionChoice::Always => Preemption::Always,
            PreemptionChoice::Never => Preemption::Never,
        }
    }
}

/// One thing the user (or a preset) did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "do", rename_all = "snake_case")]
pub enum Action {
    /// Boot every live member at once (the "Bully Algorithm Dance"'s experiment 2).
    StartAll,
    /// A member calls an election (`Node::start_election`): the initiator of seed
    /// 003's Table 1, drawn green.
    Elect {
        /// The initiator.
        node: u64,
    },
    /// A member notices that its leader is gone (`Node::suspect`), or calls an
    /// election if it follows nobody.
    Notice {
        /// The member that notices.
        node: u64,
    },
    /// A member crashes.
    Crash {
        /// The member.
        node: u64,
    },
    /// A crashed member comes back with its term (as if persisted) and starts.
    Recover {
        /// The member.
        node: u64,
    },
    /// The link `from -> to` stops carrying messages (one way).
    CutOneWay {
        /// Sender side.
        from: u64,
        /// Receiver side.
        to: u64,
    },
    /// Both directions between `a` and `b` stop. Cutting `a`–`c` while both still
    /// reach `b` is the intersecting partition.
    CutBoth {
        /// One end.
        a: u64,
        /// The other end.
        b: u64,
    },
    /// The members listed are cut off from everyone else (a group).
    Isolate {
        /// The group.
        group: Vec<u64>,
    },
    /// Every cut and partition is removed.
    Heal,
}

/// An action at an instant of simulated time.
// (serde cannot refuse unknown fields next to a flattened one.)
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timed {
    /// Simulated microseconds since the scenario began.
    pub at_us: u64,
    /// How many simulator events had been handled when it happened, when the
    /// user stepped into the middle of an instant; a preset's actions leave it
    /// out and happen after every event of their instant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<u64>,
    /// What happens then.
    #[serde(flatten)]
    pub action: Action,
}

/// Settings, actions, and how far the run had got: everything needed to rebuild a
/// page's state. `SCENARIO-FORMAT.md` documents it field by field.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scenario {
    /// The format's version: [`SCENARIO_VERSION`]. Links saved before it existed
    /// leave it out and read as version 1.
    pub version: u64,
    /// The cluster.
    pub settings: Settings,
    /// What was done, in order (`at_us` never decreases). Actions later than
    /// `now_us` are still to come when it loads (a preset's script).
    pub actions: Vec<Timed>,
    /// The simulated time the run had reached.
    pub now_us: u64,
}

impl Scenario {
    /// The scenario as compact JSON (for links).
    pub fn to_json(&self) -> String {
        // Plain data with string keys always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The scenario as indented JSON (for files people read).
    pub fn to_pretty_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}
