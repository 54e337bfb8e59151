//! Which run the counts describe: the papers count messages for two settings
//! only, so the page says which one a run is, or why it is neither. Decided when
//! an episode begins (an action while no election runs) and refined while it runs
//! (a process whose own timeout made it join the election turns one election
//! into several).

use bully_core::{Event, NodeId};
use bully_sim::{Simulation, TraceEntry, TraceRecord};

use crate::scenario::Action;

/// What the current episode is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Episode {
    /// Nothing has happened yet.
    Idle,
    /// Soundarabai et al.'s Table 1 setting: a fresh cluster, every process up and
    /// nobody leading, and process `p` calls the election.
    Fresh {
        /// The initiator.
        p: u64,
    },
    /// The highest process led and crashed, every other one is up and still
    /// follows it; `p` noticed by hand, or (`None`) the first whose own leader
    /// timeout ran out notices.
    CoordinatorCrashed {
        /// The process that noticed, when it was told to.
        p: Option<u64>,
        /// Whether `p` knows the coordinator is down (told to notice), rather
        /// than calling an election without knowing it.
        knows: bool,
    },
    /// Neither: the reason, in words.
    Other(&'static str),
}

/// What the session knows as an action comes, as far as the episode goes (the
/// session fills it in, so that this file needs nothing of it).
pub(crate) struct Before<'a> {
    /// The simulator, before the action.
    pub(crate) sim: &'a Simulation,
    /// The cluster's size: its members are `1..=n`.
    pub(crate) n: u64,
    /// Whether no action has been taken and no event handled yet.
    pub(crate) fresh: bool,
    /// Whether no link is cut and no group isolated.
    pub(crate) network_whole: bool,
    /// The episode so far.
    pub(crate) episode: &'a Episode,
    /// The members that joined it through their own timeouts, in order.
    pub(crate) joined: &'a [u64],
}

/// The episode that `action`, applied now, begins or continues.
pub(crate) fn classify(before: &Before<'_>, action: &Action, quiet: bool) -> Episode {
    if !quiet {
        return Episode::Other(
            "another action came while the election ran, so no single election is counted",
        );
    }
    let sim = before.sim;
    let n = before.n;
    let all_up = sim.members().iter().all(|&id| sim.is_up(id));
    match *action {
        Action::Elect { node } | Action::Notice { node } if before.fresh && all_up => {
            Episode::Fresh { p: node }
        }
        Action::Elect { node } | Action::Notice { node }
            if matches!(before.episode, Episode::CoordinatorCrashed { p: None, .. }) =>
        {
            // Nobody has noticed yet: every live process still follows the crashed one.
            let unnoticed = sim.members().iter().all(|&id| match sim.node(id) {
                Some(member) => member.leader().is_some_and(|leader| leader.id == NodeId(n)),
                None => id == NodeId(n),
            });
            if unnoticed && before.joined.is_empty() {
                Episode::CoordinatorCrashed {
                    p: Some(node),
                    knows: matches!(action, Action::Notice { .. }),
                }
            } else {
                Episode::Other(
                    "processes had already noticed the crash before this one was told to, so \
                     the election had begun",
                )
            }
        }
        Action::Crash { node }
            if node == n
                && all_up
                && before.network_whole
                && sim.agreed_leader() == Some(NodeId(n)) =>
        {
            Episode::CoordinatorCrashed {
                p: None,
                knows: true,
            }
        }
        _ => Episode::Other(
            "the papers count two runs only: one process calls an election in a fresh \
             cluster (New cluster, then Call election), or one process notices that the \
             highest, leading process crashed (crash it, then notice)",
        ),
    }
}

/// The processes that joined the episode on their own: a leader timeout or an
/// election timer of theirs ran out (the input right before their `LeaderLost` or
/// `ElectionStarted` was their own timeout, not a message or a command). Appends
/// them to `joined` in the order they joined.
pub(crate) fn scan_joined(records: &[TraceRecord], from: usize, joined: &mut Vec<u64>) {
    for index in from..records.len() {
        let TraceEntry::Event { node, event } = &records[index].entry else {
            continue;
        };
        if !matches!(
            event,
            Event::LeaderLost { .. } | Event::ElectionStarted { .. }
        ) || joined.contains(&node.0)
        {
            continue;
        }
        if own_timeout(&records[..index], *node) {
            joined.push(node.0);
        }
    }
}

/// Whether the input that made `node` act at the end of `records` was its timer.
fn own_timeout(records: &[TraceRecord], node: NodeId) -> bool {
    // Walk back over the node's own outputs (what it sent and emitted) to the input.
    for record in records.iter().rev().take(100_000) {
        match &record.entry {
            TraceEntry::Send { from, .. } if *from == node => continue,
            TraceEntry::Event { node: of, .. } if *of == node => continue,
            TraceEntry::Timeout { node: of } => return *of == node,
            _ => return false,
        }
    }
    false
}
