//! The policies a cluster chooses: which algorithm it runs, whether a returning
//! higher member takes the leadership back, and how many members must stand behind
//! a leader.

use core::time::Duration;

/// Which election algorithm a node runs. Every member of a cluster must run the same one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[non_exhaustive]
pub enum Algorithm {
    /// Garcia-Molina's Bully, as the tutorial "What is Bully Algorithm", the lecture
    /// notes, Wikipedia and the Bully Algorithm Dance give it: Election to higher ids,
    /// every answering member runs its own election, the highest announces.
    /// `N^2 - 1` messages when the lowest of `N` starts.
    #[default]
    Classic,
    /// Soundarabai et al.'s modified Bully ("Improved Bully Election Algorithm for Distributed
    /// Systems"): one election at a time, the
    /// initiator hands over to the highest member that answered. `3N - 2` messages
    /// when the lowest of `N` starts.
    Modified,
    /// The ring algorithm of the lecture notes "Election Algorithm in Distributed
    /// Systems": a token circles the live members, collecting
    /// their ids; a second pass announces the highest.
    Ring,
}

/// What happens when a member with a higher id than the sitting leader comes back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[non_exhaustive]
pub enum Preemption {
    /// Classic Bully: it takes over at once.
    #[default]
    Always,
    /// Sticky leadership: it follows the sitting leader; only a leader failure
    /// starts an election (what users of client-go and etcd elections expect).
    Never,
    /// It takes over only after it has been up and hearing the leader for this long,
    /// so a member that restarts repeatedly does not flap the leadership.
    AfterStable(Duration),
}

/// Split-brain protection: how many members must stand behind a leader.
///
/// Without one the highest member that hears nobody above it leads at once;
/// with one it leads only when enough members stand behind its claim:
///
/// ```
/// use std::time::Instant;
/// use bully_core::{Config, DurableState, Node, NodeId, Quorum, Role};
/// let members = [NodeId(1), NodeId(2), NodeId(3)];
/// let now = Instant::now();
///
/// let mut classic = Node::new(NodeId(3), members, Config::default())?;
/// classic.start_election(now);
/// assert_eq!(classic.role(), Role::Leader, "nobody above: it leads");
///
/// let majority = Config::default().with_quorum(Quorum::Majority);
/// let state = DurableState::first_boot();
/// let mut guarded = Node::with_durable_state(NodeId(3), members, majority, state)?;
/// guarded.start_election(now);
/// assert_ne!(guarded.role(), Role::Leader, "it waits for a second vote");
/// # Ok::<(), bully_core::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[non_exhaustive]
pub enum Quorum {
    /// Classic Bully: a candidate with nobody live above it leads. Two sides of a
    /// partition each elect a leader; the fencing token orders them.
    #[default]
    None,
    /// A strict majority of the voting members.
    Majority,
    /// At least this many voting members (itself included). Values of half the
    /// voters or fewer let two sides of a partition both elect: the setting
    /// Elasticsearch's `minimum_master_nodes` warned about.
    AtLeast(usize),
}

impl Quorum {
    /// How many of `voters` voting members make a quorum, or `None` without
    /// one.
    pub(crate) fn size(self, voters: usize) -> Option<usize> {
        match self {
            Quorum::None => None,
            Quorum::Majority => Some(voters / 2 + 1),
            Quorum::AtLeast(n) => Some(n),
        }
    }
}
