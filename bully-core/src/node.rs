//! [`Node`]: one member's election state machine.
//!
//! How it reads, for someone about to change the protocol
//! (docs/protocol.md numbers the rules; each is tagged once, in its home):
//!
//! - **An input's path.** `step.rs` takes every message and timer, applies
//!   the guards all inputs share (G1), and `dispatch.rs` hands it to the
//!   table of the node's phase (`step_leader`, `step_claimant`,
//!   `step_candidate`, `step_follower`), as raft-rs's `step` does. Every
//!   change of phase is in `phase.rs` (the phases themselves, `Phase`, are
//!   declared here, with the state they belong to).
//! - **The safety core, as types that own their state:** `votes.rs`
//!   (`Votes`: the vote, promises, the hold, coming back, the first boot:
//!   G3 to G5, G8 to G10, G12), `requests.rs` (`Requests`: numbered requests
//!   and the lease, G6), `durable.rs` (`DurableState`, G12) and
//!   `persistence.rs` (reading it out and back, G11); the node's rules that use
//!   them: `claim.rs` (votes for a claim, G14, R13 to R18), `lease.rs`
//!   (acknowledgements, G7, R19), `quorum.rs` (the hold's length, coming
//!   back), `leadership.rs` (following and fencing, G2, G13, R9, R10, R20
//!   to R25), `succession.rs` (resigning, R17, R21), `permit.rs` (what a
//!   leadership allows: the lease's end, the permit to work and its output,
//!   G9; `published.rs`, what was told of it).
//! - **Connectivity** (R4 to R12): `Connectivity` owns the probe and its
//!   verdict (`connectivity.rs`, `connectivity/verdict.rs`); the node sends,
//!   replies and acts on a conclusion in `probe.rs`, and stands in
//!   `standing.rs`.
//! - **Detection:** `FailureDetector` (`failure_detector.rs`, R26, over
//!   `heartbeat_loss.rs`) says how long the leader timeout is; `detector.rs`
//!   arms it, acts when it fires, and sends the leader's rounds (R1, R27).
//! - **The sources' algorithms** differ in one place, `algorithm.rs`, which
//!   hands an input to `classic.rs`, `modified.rs` (R31, over its
//!   `collection.rs`) or `ring.rs` (R32, over its `ring_state.rs`);
//!   what they share is `election.rs` and, without a quorum, the start's
//!   announcement in `announcement.rs` (R3, G15).
//! - **Commands and policies:** `commands.rs` (start, elect, step down, hand
//!   over: R33, work stopped, suspect), `membership.rs`, `eligibility.rs` (R29).
//! - **Copies:** `equality.rs`, when two nodes are one state (`Eq`, `Hash`).

mod algorithm;
mod announcement;
mod claim;
mod classic;
mod collection;
mod commands;
mod connectivity;
mod detector;
mod dispatch;
mod durable;
mod election;
mod eligibility;
mod equality;
mod failure_detector;
mod heartbeat_loss;
mod leadership;
mod lease;
mod membership;
mod modified;
mod permit;
mod persistence;
mod phase;
mod probe;
mod published;
mod quorum;
mod requests;
mod ring;
mod ring_state;
mod standing;
mod step;
mod succession;
#[cfg(test)]
mod takeover_tests;
mod votes;

use std::collections::VecDeque;
use std::time::Duration;

use crate::config::{Config, ConfigError, Timings};
use crate::event::{Event, FencingToken, Leader, Role};
use crate::members::{Members, Membership};
use crate::message::{NodeId, Term, Transmit};
use crate::stats::Stats;
use crate::time::Instant;
use crate::timer::TimerTable;

pub use durable::DurableState;

/// Where a node is in the protocol. `Role` is the public summary of this.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Phase {
    /// Following `Node::leader`, or waiting to hear of one.
    Idle,
    /// Sent Election in `term`, waiting for answers.
    Electing { term: Term },
    /// Answered by a higher member in `term`, waiting for its Coordinator.
    AwaitingCoordinator { term: Term },
    /// With a quorum: won `term`'s election, waiting for enough acknowledgements.
    /// Without one: announced `term` at start, waiting a round trip for a sitting
    /// leader to object (`announcement.rs`).
    Claiming { term: Term },
    /// The coordinator.
    Leading,
}

/// One member's Bully state machine: no I/O, no clock, no threads.
///
/// A `Node` is driven entirely by its caller, like quinn-proto's `Connection`:
///
/// - **Getters**: [`id`](Node::id), [`members`](Node::members),
///   [`leader`](Node::leader), [`role`](Node::role), [`term`](Node::term),
///   [`stats`](Node::stats), [`config`](Node::config).
/// - **Inputs**: [`handle_message`](Node::handle_message) for what a peer sent,
///   [`handle_timeout`](Node::handle_timeout) when the deadline from
///   [`poll_timeout`](Node::poll_timeout) passes.
/// - **Commands**: [`start`](Node::start) at boot or recovery,
///   [`start_election`](Node::start_election).
/// - **Outputs**: [`poll_permit`](Node::poll_permit),
///   [`poll_transmit`](Node::poll_transmit), [`poll_event`](Node::poll_event),
///   [`poll_timeout`](Node::poll_timeout).
///
/// **The rule**: after any input or command, drain `poll_permit` until `None`
/// (work that must stop is told before anything else happens), then
/// `poll_transmit`, then `poll_event`, then read `poll_timeout` and call
/// `handle_timeout` when that instant comes. The crate docs show the loop.
///
/// Every mutating call takes `now`. Time never goes backwards inside a node: an
/// instant earlier than one already seen is treated as that one.
///
/// **Bad input never panics.** A message from a non-member, from itself, with a
/// term too far ahead, from a fenced leader, or that makes no sense in the current
/// state is dropped and counted in [`Stats::dropped`], and changes nothing else.
///
/// **Output bound.** One input makes a node queue at most `members().len()`
/// transmits (one reply plus one message to each other member), and a
/// `handle_timeout` at most that many per expired timer. One Election makes it
/// send at most one Answer, and it starts or joins at most one election per term,
/// so a member that floods `F` Elections over `d` distinct terms at a cluster of
/// `N` makes the others send at most `F + d*N*(N-1)` messages besides heartbeats
/// (tested in `tests/hostile.rs`), and changes no leader.
///
/// **Copies and comparison.** A `Node` is `Clone` (a snapshot, to explore what
/// would happen), and `Eq` and `Hash` compare the protocol state: everything but
/// the counters of [`stats`](Node::stats), which record the past and decide
/// nothing, what [`poll_permit`](Node::poll_permit) last told, derived from the
/// lease and from what was polled, and caches of what the configuration implies. A model checker uses this to recognise a state it has already
/// explored (`bully-sim/tests/model.rs`).
///
/// ```
/// use std::time::Instant;
/// use bully_core::{Config, DropReason, DurableState, Message, Node, NodeId, Role, Term};
///
/// let members = [NodeId(1), NodeId(2)];
/// // A new cluster's first start (any other start waits a follower lease first).
/// let first = DurableState::first_boot();
/// let mut one = Node::with_durable_state(NodeId(1), members, Config::default(), first.clone())?;
/// let mut two = Node::with_durable_state(NodeId(2), members, Config::default(), first)?;
/// let now = Instant::now();
/// one.start(now);
/// two.start(now);
/// // 2, the highest, tells 1 it is the coordinator; the caller carries it over.
/// let claim = two.poll_transmit().expect("a Coordinator to 1");
/// assert_eq!(claim.to, NodeId(1));
/// one.handle_message(now, NodeId(2), claim.message);
/// assert_eq!(one.leader().map(|leader| leader.id), Some(NodeId(2)));
/// assert_eq!(one.role(), Role::Follower);
/// // A message from outside the cluster changes nothing; it is counted.
/// one.handle_message(now, NodeId(9), Message::Election { term: Term(7) });
/// assert_eq!(one.stats().dropped[DropReason::NotMember], 1);
/// assert_eq!(one.leader().map(|leader| leader.id), Some(NodeId(2)));
/// # Ok::<(), bully_core::ConfigError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Node {
    id: NodeId,
    config: Config,
    /// What the configuration implies for the timers, derived once.
    timings: Timings,
    members: Members,
    term: Term,
    leader: Option<Leader>,
    /// The highest fencing token this node has accepted: it never acts on a lower one.
    highest: Option<FencingToken>,
    phase: Phase,
    timers: TimerTable,
    transmits: VecDeque<Transmit>,
    events: VecDeque<Event>,
    stats: Stats,
    /// The latest instant seen, so that time never runs backwards.
    latest: Option<Instant>,
    /// It stepped down (or withdrew its start's announcement) and leaves the
    /// next election to the others: it answers no `Election` and takes no
    /// `Takeover` until it follows a leader or stands again itself (R34).
    standing_aside: bool,
    /// The member a hand-over named, until its `Resign` names it (R33).
    handing_over_to: Option<NodeId>,
    /// When this node last announced its leadership (to tell a member that missed
    /// the announcement from one whose Election crossed it).
    announced_at: Option<Instant>,
    /// An election this node takes part in without running it: modified Bully's
    /// raised flag, or a ring token it passed on. Lowered by a leadership.
    pending_election: Option<Term>,
    /// Modified Bully: its collection of answers.
    modified: collection::Collection,
    /// Ring: the token in its hands.
    ring: ring_state::RingState,
    /// With a quorum: what it voted and promised (`votes.rs`).
    votes: votes::Votes,
    /// Claiming or leading: its numbered requests for acknowledgement and the
    /// lease they give (`requests.rs`).
    requests: requests::Requests,
    /// The failure detector: the leader's missed rounds and the timeout.
    detector: failure_detector::FailureDetector,
    /// Quorum: what this node knows of its own connectivity, and its probe.
    connectivity: connectivity::Connectivity,
    /// The permit to work as `poll_permit` last told it (`permit.rs`).
    published: published::Published,
}

impl Node {
    /// Creates member `id` of the cluster `members` (which must include `id`).
    ///
    /// The new node answers peers at once but takes no initiative until
    /// [`start`](Node::start): call it when the process boots or recovers.
    ///
    /// ```
    /// use bully_core::{Config, ConfigError, Node, NodeId};
    /// let members = [NodeId(1), NodeId(2), NodeId(3)];
    /// let node = Node::new(NodeId(2), members, Config::default())?;
    /// assert_eq!(node.leader(), None);
    /// assert!(matches!(
    ///     Node::new(NodeId(9), members, Config::default()),
    ///     Err(ConfigError::MissingSelf(NodeId(9)))
    /// ));
    /// # Ok::<(), ConfigError>(())
    /// ```
    pub fn new(
        id: NodeId,
        members: impl IntoIterator<Item = NodeId>,
        config: Config,
    ) -> Result<Node, ConfigError> {
        let members = Members::new(id, Membership::new(members)?, &config)?;
        Ok(Node::from_members(id, members, config))
    }

    fn from_members(id: NodeId, members: Members, config: Config) -> Node {
        Node {
            id,
            timings: Timings::new(&config),
            config,
            members,
            term: Term(0),
            leader: None,
            highest: None,
            phase: Phase::Idle,
            timers: TimerTable::default(),
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            stats: Stats::default(),
            latest: None,
            announced_at: None,
            standing_aside: false,
            handing_over_to: None,
            pending_election: None,
            modified: collection::Collection::default(),
            ring: ring_state::RingState::default(),
            votes: votes::Votes::default(),
            requests: requests::Requests::default(),
            detector: failure_detector::FailureDetector::default(),
            connectivity: connectivity::Connectivity::default(),
            published: published::Published::default(),
        }
    }

    /// Like [`Node::new`], with a [`Membership`] that may be shared with other nodes
    /// of the same process.
    pub fn with_membership(
        id: NodeId,
        members: Membership,
        config: Config,
    ) -> Result<Node, ConfigError> {
        let members = Members::new(id, members, &config)?;
        Ok(Node::from_members(id, members, config))
    }

    /// Creates a node that resumes from the state it persisted before a restart
    /// (see [`Node::durable_state`]).
    ///
    /// Without it a restarted node begins at term 0: it still converges (the
    /// leader's heartbeats tell it the current term), but a restarted highest
    /// member may briefly announce a stale leadership that everyone else refuses,
    /// and, with a quorum, its forgotten vote may let two claims of one term both
    /// win, one after the other (never at the same time: the leases see to that).
    pub fn with_durable_state(
        id: NodeId,
        members: impl IntoIterator<Item = NodeId>,
        config: Config,
        state: DurableState,
    ) -> Result<Node, ConfigError> {
        let mut node = Node::new(id, members, config)?;
        node.restore(state);
        Ok(node)
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// Every member, this node included, in ascending id order.
    pub fn members(&self) -> &[NodeId] {
        self.members.ids()
    }

    /// The membership as a shareable list.
    pub fn membership(&self) -> &Membership {
        self.members.membership()
    }

    /// The configuration this node runs.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The leader this node has accepted, if any. On the leader itself, itself.
    pub fn leader(&self) -> Option<Leader> {
        self.leader
    }

    /// The highest fencing token this node has accepted. Unlike `leader()` it stays
    /// set when the leader is lost: it is the floor below which nothing is accepted.
    ///
    /// It lives in memory only: a node made again after a restart, even with
    /// [`with_durable_state`](Node::with_durable_state), starts from `None`.
    /// What the durable state keeps is the term (and the vote), so a restarted
    /// node never goes back to an older term; the token's floor is rebuilt from
    /// the first leadership it accepts. A store that fences writes keeps its
    /// own highest token ([`FencingGuard`](crate::FencingGuard)), which no
    /// restart of a member resets.
    pub fn highest_token(&self) -> Option<FencingToken> {
        self.highest
    }

    /// What this node is doing.
    pub fn role(&self) -> Role {
        match self.phase {
            Phase::Idle => Role::Follower,
            Phase::Electing { .. } | Phase::AwaitingCoordinator { .. } | Phase::Claiming { .. } => {
                Role::Candidate
            }
            Phase::Leading => Role::Leader,
        }
    }

    /// The highest term this node has seen or started. Never decreases.
    pub fn term(&self) -> Term {
        self.term
    }

    /// Counters of traffic and refused input.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// [`Config::failover_bound`] for this node's cluster size.
    pub fn failover_bound(&self) -> Duration {
        self.config.failover_bound(self.members.len())
    }
}
