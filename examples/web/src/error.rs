//! What the page can get wrong: every bad input is an error the page shows in
//! plain words, never a panic of the module. The texts are written for a student
//! at the page: what was wrong and what to do instead, without parser jargon.

use bully_sim::SimError;

use crate::clock::{MAX_TIME_TM, MAX_TIME_US};
use crate::limits::MAX_MEMBERS;

/// A request the simulator could not carry out.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum WebError {
    /// The page offers 2 to 64 members.
    #[error("N = {0}: this page draws 2 to {MAX_MEMBERS} processes")]
    Members(u64),
    /// A loss rate above 100 %.
    #[error("a loss of {0} %: choose 0 to 100")]
    Loss(u64),
    /// A seed the browser cannot keep exactly (JavaScript's numbers are doubles).
    #[error(
        "seed {0} is too large: choose 0 to 9007199254740991, the largest whole number a browser keeps exactly"
    )]
    Seed(u64),
    /// A scenario (link, pasted text or file) that cannot be loaded: where in it,
    /// and what is wrong there.
    #[error("{}", placed(.place, .problem))]
    Scenario {
        /// Where: "settings.n", "action 3", ...; empty for the whole text.
        place: String,
        /// What is wrong, and what would be right.
        problem: String,
    },
    /// Nothing to load.
    #[error("there is no scenario to load: paste one, choose a file, or Save one first")]
    Empty,
    /// A member id outside `1..=n`.
    #[error("there is no process {id}: this cluster has processes 1 to {n}")]
    NoSuchProcess {
        /// The id asked for.
        id: u64,
        /// The cluster's size.
        n: u64,
    },
    /// A command to a crashed member.
    #[error("process {0} is down: recover it first (choose \"crash / recover\" and click it)")]
    Down(u64),
    /// A link from a member to itself.
    #[error("a link joins two different processes: pick a second one other than {0}")]
    SameProcess(u64),
    /// An isolated group of nobody or of everybody.
    #[error("a group to isolate needs some processes but not all {0}: pick them first")]
    Group(u64),
    /// The initiators box.
    #[error("initiators: {0}")]
    Initiators(String),
    /// The page's clock ends here, so that a saved scenario always replays quickly
    /// (in T_M: message times, the longest a message takes).
    #[error(
        "the page's clock stops at {MAX_TIME_TM} T_M ({} s of simulated time): Save the scenario or start a new cluster",
        MAX_TIME_US / 1_000_000
    )]
    TimeLimit,
    /// The "Bully Algorithm Dance" has experiments 1 to 5.
    #[error("the \"Bully Algorithm Dance\" has experiments 1 to 5, not {0}")]
    Preset(u8),
    /// The simulator refused (a bad config; the checks above catch the rest first).
    #[error(transparent)]
    Sim(#[from] SimError),
}

/// "place: problem", or the problem alone when it concerns the whole text.
fn placed(place: &str, problem: &str) -> String {
    if place.is_empty() {
        problem.to_owned()
    } else {
        format!("{place}: {problem}")
    }
}

impl WebError {
    /// A scenario error at `place`.
    pub(crate) fn scenario(place: impl Into<String>, problem: impl Into<String>) -> WebError {
        WebError::Scenario {
            place: place.into(),
            problem: problem.into(),
        }
    }
}
