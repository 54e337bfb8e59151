//! [`Node`]: one member's election state machine.

mod classic;
mod connectivity;
mod eligibility;
mod leadership;
mod membership;
mod modified;
mod quorum;
mod ring;
#[cfg(test)]
mod takeover_tests;

use std::collections::VecDeque;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use crate::config::{Algorithm, Config, ConfigError, Preemption, Quorum};
use crate::driver::WorkPermit;
use crate::error::CommandError;
use crate::event::{Event, FencingToken, Leader, Role};
use crate::members::{Members, Membership};
use crate::message::{Message, NodeId, Term, Transmit};
use crate::stats::{DropReason, Stats};
use crate::time::Instant;
use crate::timer::{Timer, TimerTable};

/// What a node must keep across a restart to keep its promises: see
/// [`Node::durable_state`] and [`Node::with_durable_state`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct DurableState {
    /// The highest term seen or started.
    pub term: Term,
    /// With a quorum, the latest vote: `(term, candidate)`.
    pub vote: Option<(Term, NodeId)>,
}

/// Where a node is in the protocol. `Role` is the public summary of this.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// Following `Node::leader`, or waiting to hear of one.
    Idle,
    /// Sent Election in `term`, waiting for answers.
    Electing { term: Term },
    /// Answered by a higher member in `term`, waiting for its Coordinator.
    AwaitingCoordinator { term: Term },
    /// With a quorum: won `term`'s election, waiting for enough acknowledgements.
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
/// - **Outputs**: [`poll_transmit`](Node::poll_transmit),
///   [`poll_event`](Node::poll_event), [`poll_timeout`](Node::poll_timeout).
///
/// **The rule**: after any input or command, drain `poll_transmit` until `None`,
/// then `poll_event` until `None`, then read `poll_timeout` and call
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
/// nothing, and caches of what the configuration implies. A model checker uses this to recognise a state it has already
/// explored (`tests/model.rs`).
#[derive(Clone, Debug)]
pub struct Node {
    id: NodeId,
    config: Config,
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
    /// Set by `step_down`: the members were told this node resigned and treat it as
    /// absent from elections, so it neither answers nor joins one until it accepts
    /// a new leader or its own leader timeout fires.
    abstaining: bool,
    /// When this node last announced its leadership (to tell a member that missed
    /// the announcement from one whose Election crossed it).
    announced_at: Option<Instant>,
    /// An election this node takes part in without running it: modified Bully's
    /// raised flag, or a ring token it passed on. Lowered by a leadership.
    pending_election: Option<Term>,
    /// Modified Bully: its collection of answers.
    modified: modified::Collection,
    /// Ring: the token in its hands.
    ring: ring::RingState,
    /// The quorum gate: votes, promises, claims and the lease.
    gate: quorum::QuorumGate,
    /// The number of the last heartbeat round sent in the current leadership.
    round: u64,
    /// The leader timeout last armed and the rank it was computed for, so that
    /// re-arming the detector on every heartbeat costs a comparison rather than
    /// `Config::leader_timeout_at_rank`'s arithmetic (the config never changes).
    leader_timeout_memo: Option<(usize, Duration)>,
    /// Quorum: what this node knows of its own connectivity, and its probe.
    connectivity: connectivity::Connectivity,
}

impl Node {
    /// The protocol state: every field but `stats`, as one tuple of references,
    /// so that `Eq` and `Hash` agree. Destructured without `..`, so a new field
    /// must be placed here or explicitly left out.
    fn protocol_state(&self) -> impl PartialEq + Hash + '_ {
        let Node {
            id,
            config: _,
            members,
            term,
            leader,
            highest,
            phase,
            timers,
            transmits,
            events,
            stats: _,
            latest,
            abstaining,
            announced_at,
            pending_election,
            modified,
            ring,
            gate,
            round,
            // A cache of what the configuration gives for a rank.
            leader_timeout_memo: _,
            connectivity,
        } = self;
        (
            (id, members, term, leader, highest, phase, timers, transmits),
            (events, latest, abstaining, announced_at, pending_election),
            (modified, ring, gate, round, connectivity),
        )
    }
}

impl PartialEq for Node {
    fn eq(&self, other: &Node) -> bool {
        self.config == other.config && self.protocol_state() == other.protocol_state()
    }
}

impl Eq for Node {}

impl Hash for Node {
    /// Hashes the protocol state but the configuration (which `Config`, holding
    /// an `f64`, cannot hash; equal nodes still hash equal).
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.protocol_state().hash(state);
    }
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
            abstaining: false,
            pending_election: None,
            modified: modified::Collection::default(),
            ring: ring::RingState::default(),
            gate: quorum::QuorumGate::default(),
            round: 0,
            leader_timeout_memo: None,
            connectivity: connectivity::Connectivity::default(),
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

    /// Creates a node that resumes from a term it persisted before a restart; the
    /// same as [`Node::with_durable_state`] without a vote.
    pub fn with_term(
        id: NodeId,
        members: impl IntoIterator<Item = NodeId>,
        config: Config,
        term: Term,
    ) -> Result<Node, ConfigError> {
        let state = DurableState { term, vote: None };
        Node::with_durable_state(id, members, config, state)
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

    /// Resumes from persisted state before `start` (as
    /// [`Node::with_durable_state`] does); terms never go backwards, so a state
    /// older than the node's is ignored.
    pub fn restore(&mut self, state: DurableState) {
        // A vote implies its term was seen: a state whose vote is ahead of its
        // term (hand-edited, or corrupt) is read as being at the vote's term.
        let term = state
            .vote
            .map_or(state.term, |(voted, _)| state.term.max(voted));
        if term >= self.term {
            self.term = term;
            self.gate.vote = state.vote;
        }
    }

    /// What to persist to survive a restart: the term, and with a quorum the
    /// latest vote. It is small and `Copy`: a driver can compare it after each
    /// input with what it last wrote and write it when it changed.
    pub fn durable_state(&self) -> DurableState {
        DurableState {
            term: self.term,
            vote: self.gate.vote,
        }
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

    /// Until when this node's own leadership is guaranteed exclusive: with a quorum
    /// gate, while it leads, the end of its lease (dated from the send time of the
    /// latest claim or heartbeat round a quorum acknowledged, shortened by the clock
    /// drift margin of [`Config::leader_lease`]). No other member can be elected
    /// before this instant, so work that only the leader may do is safe until then;
    /// stop it earlier, by at least the time the work needs to notice.
    ///
    /// `None` when this node does not lead, and always without a quorum: the seeds'
    /// algorithm promises nothing about exclusivity, and two members can lead at
    /// once on the two sides of a partition.
    ///
    /// Each acknowledged round moves it later; if it passes without renewal the
    /// node emits [`Event::LeaseExpired`] and steps down.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use bully_core::{Config, Message, Node, NodeId, Quorum};
    /// let config = Config::default().with_quorum(Quorum::Majority);
    /// let mut node = Node::new(NodeId(3), [NodeId(1), NodeId(2), NodeId(3)], config.clone())?;
    /// let now = Instant::now();
    /// node.start(now);
    /// // After a start it votes for nobody (itself included) for a follower
    /// // lease, and stands only then.
    /// assert!(node.poll_transmit().is_none());
    /// let later = now + config.follower_lease() + Duration::from_millis(1);
    /// node.handle_timeout(later);
    /// // It probes before it stands: 1 and 2 reply that they follow nobody.
    /// let probe = node.poll_transmit().unwrap().message;
    /// let reply = Message::ProbeReply { term: probe.term(), leader: None, cut_off: false };
    /// node.handle_message(later, NodeId(1), reply.clone());
    /// node.handle_message(later, NodeId(2), reply);
    /// while let Some(transmit) = node.poll_transmit() {
    ///     // Member 2 votes for the claim: with 3's own vote, a majority.
    ///     if transmit.to == NodeId(2) {
    ///         if let Message::Coordinator { term } = transmit.message {
    ///             node.handle_message(later, NodeId(2), Message::Ack { term, round: 0 });
    ///         }
    ///     }
    /// }
    /// let until = node.exclusive_until().expect("it leads with a quorum");
    /// assert!(until <= later + config.leader_lease());
    /// # Ok::<(), bully_core::ConfigError>(())
    /// ```
    pub fn exclusive_until(&self) -> Option<Instant> {
        self.leadership_term()?;
        self.quorum()?;
        self.gate.lease_until
    }

    /// Whether this node may do work only the leader may do at `now`, stopping
    /// `margin` before its lease runs out: a [`WorkPermit`], the fencing token to
    /// do it under and the instant the permission ends unless a quorum renews the lease (`None`
    /// without a quorum: it ends only when the leadership does). `None` when it
    /// may not. The drivers' `Leadership` is this, re-read after every input.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use bully_core::{Config, Node, NodeId, Quorum};
    ///
    /// let config = Config::default().with_quorum(Quorum::Majority);
    /// let mut node = Node::new(NodeId(1), [NodeId(1)], config.clone())?;
    /// let now = Instant::now();
    /// node.start_election(now);
    /// let margin = config.default_lease_margin();
    /// let permit = node.may_work_until(now, margin).expect("alone, it leads");
    /// assert_eq!(permit.token.leader, NodeId(1));
    /// let until = permit.until.expect("with a quorum the permission has an end");
    /// assert_eq!(until, node.exclusive_until().unwrap() - margin);
    /// assert!(node.may_work_until(until, margin).is_none(), "not at its end");
    /// # Ok::<(), bully_core::ConfigError>(())
    /// ```
    pub fn may_work_until(&self, now: Instant, margin: Duration) -> Option<WorkPermit> {
        let leader = self.leader.filter(|leader| leader.id == self.id)?;
        if self.role() != Role::Leader {
            return None;
        }
        let token = leader.token();
        if self.config.quorum() == Quorum::None {
            return Some(WorkPermit { token, until: None });
        }
        let until = self.exclusive_until()?.checked_sub(margin)?;
        (now < until).then_some(WorkPermit {
            token,
            until: Some(until),
        })
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

    /// Boot or recovery: "when P recovers, it starts an election" (seeds 000, 002).
    ///
    /// With `Preemption::Always` this node starts an election (after the staggered
    /// start's wait, [`Config::with_staggered_start`], unless it is the highest
    /// candidate), and a higher member bullies its way back to the leadership. With the other
    /// policies it first listens for the sitting leader's heartbeats for one
    /// leader timeout, and only elects if it hears none.
    pub fn start(&mut self, now: Instant) {
        let now = self.clock(now);
        self.forget_promises(now);
        match self.config.preemption() {
            Preemption::Always if self.members.is_candidate(self.id) => {
                let rank = self.members.rank_below(None);
                let alone = self.members.len() == 1;
                let listen = rank > 0 || (self.quorum().is_none() && !alone);
                if self.config.staggered_start() && listen {
                    // Listen first: a higher member that boots too announces before
                    // this one's turn, and a sitting leader's heartbeat tells the
                    // current term (`Config::with_staggered_start`); with a quorum
                    // the highest's probe tells it that.
                    let wait = self.config.start_wait(rank);
                    self.timers
                        .set(Timer::LeaderTimeout, Self::after(now, wait));
                } else {
                    self.stand(now);
                }
            }
            _ => self.arm_leader_timeout(now),
        }
    }

    /// Starts an election now, whatever this node believes. A leader that calls it
    /// steps down first and stands again. An observer never stands: for it this
    /// only drops the leader it follows until it hears one again.
    pub fn start_election(&mut self, now: Instant) {
        let now = self.clock(now);
        self.begin_election(now, self.term.next());
    }

    /// Gives up the leadership: the node tells every member (`Resign`), emits
    /// `SteppedDown`, and becomes a follower that waits for the next leader. The
    /// others elect at once, the highest of them first, instead of waiting out the
    /// leader timeout. Use it before a graceful shutdown.
    ///
    /// With a quorum and a resign delay ([`Config::with_resign_delay`]) the
    /// leadership's work is given that long to stop: the node tells the members
    /// only then, or as soon as the caller says the work stopped
    /// ([`work_stopped`](Node::work_stopped)). A caller that stopped its work
    /// before stepping down calls both, one after the other.
    ///
    /// The members treat the resigning node as suspected until they hear from it
    /// again, so it is not asked in the election that follows. Under
    /// `Preemption::Always` it takes the leadership back as soon as it hears a
    /// lower leader, as the classic algorithm demands; under `Never` it stays a
    /// follower. Returns `false`, and does nothing, if this node is not the leader.
    pub fn step_down(&mut self, now: Instant) -> bool {
        let now = self.clock(now);
        if self.phase != Phase::Leading {
            return false;
        }
        let term = self.term;
        let delay = self.config.resign_delay();
        if self.quorum().is_some() && !delay.is_zero() {
            // Nobody to leave out of the resignation: it names itself.
            self.gate.pending_resign = Some((term, self.id));
            self.timers.set(Timer::Resign, Self::after(now, delay));
        } else {
            for index in 0..self.members.len() {
                let to = self.members.ids()[index];
                if to != self.id {
                    self.send(to, Message::Resign { term });
                }
            }
        }
        self.resign_leadership();
        self.abstaining = true;
        self.arm_leader_timeout(now);
        true
    }

    /// Tells the node that the work of its last leadership has stopped: the
    /// resign delay ([`Config::with_resign_delay`]) that gives the work time to
    /// stop is over. A `Resign` it still owes the members goes now, and it may
    /// vote again (a vote it deferred is cast at the next
    /// [`handle_timeout`](Node::handle_timeout), due at once).
    ///
    /// Does nothing while the node leads, or when no delay runs. `bully-agent`
    /// calls it when the command it supervises has exited after a leadership
    /// ended, so a take-back waits for the command's real stop time rather than
    /// its whole grace period.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use bully_core::{Config, Message, Node, NodeId, Quorum};
    ///
    /// let config = Config::default()
    ///     .with_quorum(Quorum::AtLeast(1))
    ///     .with_resign_delay(Duration::from_secs(1));
    /// let mut node = Node::new(NodeId(2), [NodeId(1), NodeId(2)], config)?;
    /// let now = Instant::now();
    /// node.start_election(now);
    /// while node.poll_transmit().is_some() {}
    /// assert!(node.step_down(now));
    /// assert!(node.poll_transmit().is_none(), "the work has a second to stop");
    /// node.work_stopped(now + Duration::from_millis(200));
    /// let resign = node.poll_transmit().expect("told at once when it stopped");
    /// assert!(matches!(resign.message, Message::Resign { .. }));
    /// # Ok::<(), bully_core::ConfigError>(())
    /// ```
    pub fn work_stopped(&mut self, now: Instant) {
        let now = self.clock(now);
        if self.phase != Phase::Leading {
            self.release_after_work(now);
        }
    }

    /// Tells the node that an external failure detector believes `member` has
    /// failed ("process 4 notices 7 is down").
    ///
    /// The member is no longer sent Election or Coordinator until it is heard from
    /// again. If it is the accepted leader, this is the same as its heartbeats
    /// stopping: `LeaderLost`, then an election.
    ///
    /// Errors if `member` is not a member, or is this node.
    pub fn suspect(&mut self, now: Instant, member: NodeId) -> Result<(), CommandError> {
        let now = self.clock(now);
        if member == self.id {
            return Err(CommandError::SelfReference(member));
        }
        if self.members.index_of(member).is_none() {
            return Err(CommandError::UnknownMember(member));
        }
        self.members.suspect(member);
        if self.phase == Phase::Idle && self.leader.is_some_and(|leader| leader.id == member) {
            self.begin_election(now, self.term.next());
        }
        Ok(())
    }

    /// Feeds a message that member `from` sent.
    ///
    /// Never fails: input that is malformed, forged, stale or unexpected is dropped
    /// and counted in [`Stats::dropped`].
    pub fn handle_message(&mut self, now: Instant, from: NodeId, message: Message) {
        let now = self.clock(now);
        if from == self.id {
            self.drop_input(DropReason::FromSelf);
            return;
        }
        if self.members.index_of(from).is_none() {
            self.drop_input(DropReason::NotMember);
            return;
        }
        let limit = self.term.0.saturating_add(self.config.max_term_lead());
        if message.term().0 > limit {
            self.drop_input(DropReason::TermTooFarAhead);
            return;
        }
        self.stats.received[message.kind()] += 1;
        // Whatever it says, the sender is alive.
        self.members.clear_suspicion(from);
        self.note_heard_from(from);
        match message {
            Message::Coordinator { term } => {
                if self.quorum().is_some() {
                    self.on_claim(now, from, term);
                } else {
                    self.on_leadership(now, from, term);
                }
            }
            Message::Heartbeat { term, round } => {
                self.on_leadership(now, from, term);
                if self.quorum().is_some() {
                    self.acknowledge_heartbeat(now, from, term, round);
                }
            }
            Message::Ack { term, round } => {
                if self.quorum().is_some() {
                    self.on_ack(now, from, term, round);
                } else {
                    self.drop_input(DropReason::Unexpected);
                }
            }
            Message::Resign { term } => self.on_resign(now, from, term),
            Message::Election { term } => self.on_election(now, from, term),
            Message::Answer { term } => match self.config.algorithm() {
                Algorithm::Classic => self.classic_on_answer(now, from, term),
                Algorithm::Modified => self.modified_on_answer(now, from, term),
                Algorithm::Ring => self.ring_on_answer(from, term),
            },
            Message::Takeover { term } => match self.config.algorithm() {
                Algorithm::Modified => self.modified_on_takeover(now, from, term),
                _ => self.drop_input(DropReason::Unexpected),
            },
            Message::RingElection {
                term,
                initiator,
                active,
            } => match self.config.algorithm() {
                Algorithm::Ring => self.ring_on_election(now, from, term, initiator, active),
                _ => self.drop_input(DropReason::Unexpected),
            },
            Message::RingCoordinator {
                term,
                leader,
                initiator,
                active,
            } => match self.config.algorithm() {
                Algorithm::Ring => {
                    self.ring_on_coordinator(now, from, (term, leader, initiator), active)
                }
                _ => self.drop_input(DropReason::Unexpected),
            },
            Message::Probe { term } => self.on_probe(now, from, term),
            Message::ProbeReply {
                term,
                leader,
                cut_off,
            } => self.on_probe_reply(now, from, term, (leader, cut_off)),
        }
    }

    /// Does the work of every timer that has expired at `now`. Calling it early is a
    /// harmless no-op.
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.clock(now);
        for timer in Timer::ALL {
            if self.timers.take_expired(timer, now) {
                self.on_timer(now, timer);
            }
        }
    }

    /// The next message to send, until `None`.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    /// The next event, until `None`.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When [`handle_timeout`](Node::handle_timeout) next has work to do: the
    /// earliest armed timer.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next_timeout()
    }

    /// How many timers [`handle_timeout(now)`](Node::handle_timeout) would fire:
    /// those armed for `now` or earlier (an instant before the latest one this
    /// node has seen counts as that one, as every input does). Zero when the call
    /// would be a no-op.
    ///
    /// The output bound is per expired timer (see [`Node`]): a fuzzer or a test
    /// reads this before `handle_timeout` to know what the call may send. The
    /// work of a timer arms timers only for later instants (every delay is
    /// positive), so this is the number of timers the call fires.
    ///
    /// ```
    /// use std::time::Instant;
    /// use bully_core::{Config, Node, NodeId};
    /// let mut node = Node::new(NodeId(1), [NodeId(1), NodeId(2)], Config::default())?;
    /// let now = Instant::now();
    /// node.start(now);
    /// assert_eq!(node.expired_timers(now), 0, "nothing is due yet");
    /// let due = node.poll_timeout().expect("it waits for something");
    /// assert_eq!(node.expired_timers(due), 1);
    /// # Ok::<(), bully_core::ConfigError>(())
    /// ```
    pub fn expired_timers(&self, now: Instant) -> usize {
        let now = self.latest.map_or(now, |latest| latest.max(now));
        self.timers.expired(now)
    }

    fn on_timer(&mut self, now: Instant, timer: Timer) {
        match timer {
            Timer::Heartbeat => self.send_heartbeats(now),
            Timer::LeaderTimeout => self.on_leader_timeout(now),
            Timer::Answer if matches!(self.phase, Phase::Claiming { .. }) => {
                self.on_claim_timeout(now)
            }
            Timer::Answer => match self.config.algorithm() {
                Algorithm::Classic => self.classic_on_answer_timeout(now),
                Algorithm::Modified => self.modified_on_answer_timeout(now),
                Algorithm::Ring => {}
            },
            Timer::Coordinator => self.on_coordinator_timeout(now),
            Timer::RingHop => self.ring_on_hop_timeout(now),
            Timer::Stable => self.on_stable(now),
            Timer::Lease => self.on_lease_timeout(now),
            Timer::Probe => self.conclude_probe(now),
            Timer::DeferredVote => self.cast_deferred_vote(now),
            Timer::Resign => self.send_pending_resign(),
            Timer::Abstain => self.on_abstention_end(now),
        }
    }

    /// Starts (or joins) the election of `term`: the one entry to running an
    /// election, so the events and the term move the same way whatever the cause.
    fn begin_election(&mut self, now: Instant, term: Term) {
        let accepted = self.highest.map(|highest| highest.term);
        let voted_for_another = self
            .gate
            .vote
            .filter(|&(_, whom)| whom != self.id)
            .map(|(voted, _)| voted);
        if accepted
            .max(voted_for_another)
            .is_some_and(|used| term <= used)
        {
            // Only at the end of the term space (`Term::next` saturates): an
            // election there could only win a token this node already accepted, or
            // vote twice in a term, and two leaderships must never share a token.
            self.stats.elections_refused += 1;
            if self.role() == Role::Candidate {
                // Nothing is left to stand in: wait as a follower, not as a
                // candidate that no timer would ever move on.
                self.phase = Phase::Idle;
                self.timers.stop(Timer::Answer);
                self.arm_leader_timeout(now);
            }
            return;
        }
        if !self.members.is_candidate(self.id) {
            // An observer never stands: it lets go of a lost leader and listens.
            self.leave_role();
            self.drop_leader();
            self.arm_leader_timeout(now);
            return;
        }
        self.enter_election(term);
        match self.config.algorithm() {
            Algorithm::Classic => self.classic_open_election(now),
            Algorithm::Modified => self.modified_open_election(now, modified::Ask::Everyone),
            Algorithm::Ring => self.ring_open_election(now),
        }
    }

    /// Modified Bully's chosen member: checks with the members above it in `term`.
    fn begin_check(&mut self, now: Instant, term: Term) {
        self.enter_election(term);
        self.modified_open_election(now, modified::Ask::Higher);
    }

    /// What starting to run an election does whatever the algorithm: leave the
    /// leader role, let go of the leader, move the term, stop the other waits.
    fn enter_election(&mut self, term: Term) {
        self.abstaining = false;
        self.leave_role();
        self.drop_leader();
        self.term = self.term.max(term);
        self.pending_election = None;
        self.ring.hop = None;
        for timer in [
            Timer::LeaderTimeout,
            Timer::Answer,
            Timer::Coordinator,
            Timer::RingHop,
            Timer::Stable,
        ] {
            self.timers.stop(timer);
        }
        self.stats.elections_started += 1;
        self.events
            .push_back(Event::ElectionStarted { term: self.term });
    }

    /// Takes part in another member's election of `term` (modified: the raised
    /// flag; ring: a token passed on) and waits, staggered by rank, for its result.
    fn join_as_participant(&mut self, now: Instant, term: Term) {
        self.drop_leader();
        self.term = self.term.max(term);
        self.pending_election = Some(term);
        self.timers.stop(Timer::LeaderTimeout);
        self.timers.stop(Timer::Stable);
        let rank = self.members.rank_below(None);
        let mut wait = match self.config.algorithm() {
            Algorithm::Ring => self.config.ring_timeout(self.members.len(), rank),
            Algorithm::Classic | Algorithm::Modified => self
                .config
                .flag_timeout()
                .saturating_add(self.config.stagger_step().saturating_mul(rank as u32)),
        };
        if self.quorum().is_some() {
            // The winner's claim may wait for deferred votes: giving up on it
            // sooner would start a newer election over it.
            wait = wait.saturating_add(self.claim_wait());
        }
        self.timers.set(Timer::Coordinator, Self::after(now, wait));
    }

    /// Stops leading, if it does (`SteppedDown`), or running an election of its own.
    fn leave_role(&mut self) {
        match self.phase {
            Phase::Leading => self.resign_leadership(),
            Phase::Electing { .. } | Phase::AwaitingCoordinator { .. } | Phase::Claiming { .. } => {
                self.phase = Phase::Idle;
                self.timers.stop(Timer::Answer);
            }
            Phase::Idle => {}
        }
    }

    /// Forgets the accepted leader (`LeaderLost` if it was another member).
    fn drop_leader(&mut self) {
        if let Some(leader) = self.leader.take() {
            if leader.id != self.id {
                self.events.push_back(Event::LeaderLost {
                    leader: leader.id,
                    term: leader.term,
                });
            }
        }
    }

    /// Nothing came of an election in time (classic: the Coordinator after an
    /// Answer, see `classic.rs` for why this node does not crown itself; modified:
    /// the flag's fail-safe; ring: the token or the second pass): start over, in
    /// a new term, or with a quorum in the same term while nobody has used it
    /// (see `may_retry_in_term`).
    fn on_coordinator_timeout(&mut self, now: Instant) {
        if self.phase == Phase::Leading {
            return;
        }
        self.note_election_failed();
        if self.may_retry_in_term(now) {
            self.begin_election(now, self.term);
        } else {
            self.stand(now);
        }
    }

    fn send(&mut self, to: NodeId, message: Message) {
        debug_assert!(to != self.id, "a node never sends to itself");
        self.stats.sent[message.kind()] += 1;
        self.transmits.push_back(Transmit { to, message });
    }

    fn drop_input(&mut self, reason: DropReason) {
        self.stats.dropped[reason] += 1;
    }

    fn clock(&mut self, now: Instant) -> Instant {
        let now = match self.latest {
            Some(latest) if latest > now => latest,
            _ => now,
        };
        self.latest = Some(now);
        now
    }

    fn after(now: Instant, delay: Duration) -> Instant {
        // `Config::validate` caps every delay far below `Instant`'s range; the
        // fallback only keeps a pathological platform from panicking.
        now.checked_add(delay).unwrap_or(now)
    }
}
