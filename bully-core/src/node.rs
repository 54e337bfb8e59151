//! [`Node`]: one member's election state machine.

mod algorithm;
mod announcement;
mod classic;
mod commands;
mod connectivity;
mod durable;
mod election;
mod eligibility;
mod heartbeat_loss;
mod leadership;
mod membership;
mod modified;
mod phase;
mod quorum;
mod requests;
mod ring;
mod succession;
#[cfg(test)]
mod takeover_tests;
mod votes;

use std::collections::VecDeque;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use crate::config::{Config, ConfigError, Quorum, Timings};
use crate::driver::WorkPermit;
use crate::event::{Event, FencingToken, Leader, Role};
use crate::members::{Members, Membership};
use crate::message::{Message, NodeId, Term, Transmit};
use crate::stats::{DropReason, Stats};
use crate::time::Instant;
use crate::timer::{Timer, TimerTable};

use phase::Phase;

pub use durable::DurableState;

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
    /// With a quorum: what it voted and promised (`votes.rs`).
    votes: votes::Votes,
    /// Claiming or leading: its numbered requests for acknowledgement and the
    /// lease they give (`requests.rs`).
    requests: requests::Requests,
    /// The leader timeout last armed and the rank and missed heartbeats it was
    /// computed for, so that re-arming the detector on every heartbeat costs a
    /// comparison rather than `Timings::leader_timeout_after_loss`'s `Duration`
    /// arithmetic: 36 instructions, 8 % of a follower's heartbeat (the
    /// `instructions/` crate's `heartbeat`).
    leader_timeout_memo: Option<(usize, u32, Duration)>,
    /// The followed leader's recent heartbeat rounds that went missing.
    heartbeat_loss: heartbeat_loss::HeartbeatLoss,
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
            // What the configuration implies: compared through `config`.
            timings: _,
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
            votes,
            requests,
            // A cache of what the configuration gives for a rank.
            leader_timeout_memo: _,
            heartbeat_loss,
            connectivity,
        } = self;
        (
            (id, members, term, leader, highest, phase, timers, transmits),
            (events, latest, abstaining, announced_at, pending_election),
            (modified, ring, votes, requests, heartbeat_loss),
            (connectivity,),
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
            abstaining: false,
            pending_election: None,
            modified: modified::Collection::default(),
            ring: ring::RingState::default(),
            votes: votes::Votes::default(),
            requests: requests::Requests::default(),
            leader_timeout_memo: None,
            heartbeat_loss: heartbeat_loss::HeartbeatLoss::default(),
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
    /// `None` when this node does not lead, and always without a quorum: the Bully
    /// algorithm of the sources promises nothing about exclusivity, and two members can lead at
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
    ///         if let Message::Coordinator { term, round } = transmit.message {
    ///             // The vote names the ask it answers.
    ///             node.handle_message(later, NodeId(2), Message::Ack { term, round });
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
        self.requests.lease_until()
    }

    /// Whether this node may do work only the leader may do at `now`, stopping
    /// `margin` before its lease runs out: a [`WorkPermit`], the fencing token to
    /// do it under and the instant the permission ends unless a quorum renews the lease (`None`
    /// without a quorum: it ends only when the leadership does). `None` when it
    /// may not. The drivers' `Leadership` is this, re-read after every input.
    ///
    /// The margin is at least the resign delay
    /// ([`Config::with_resign_delay`](crate::Config::with_resign_delay)), the
    /// time work told to stop is given to stop (the hold): a
    /// shorter one would let work run past the lease, into a successor's.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use bully_core::{Config, DurableState, Node, NodeId, Quorum};
    ///
    /// let config = Config::default().with_quorum(Quorum::Majority);
    /// // A new cluster of one (a first boot: it votes for itself at once).
    /// let state = DurableState::first_boot();
    /// let mut node = Node::with_durable_state(NodeId(1), [NodeId(1)], config.clone(), state)?;
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
        let margin = margin.max(self.config.resign_delay());
        let until = self.exclusive_until()?.checked_sub(margin)?;
        (now < until).then_some(WorkPermit {
            token,
            until: Some(until),
        })
    }

    /// What this node's safety core holds now: its term, vote, promise,
    /// lease and the rest that the invariants of
    /// [`invariants`](crate::invariants) read (docs/protocol.md, "The safety
    /// core").
    pub fn safety(&self) -> crate::invariants::SafetyState {
        crate::invariants::SafetyState {
            id: self.id,
            term: self.term,
            highest: self.highest,
            vote: self.votes.vote(),
            promise: self
                .votes
                .promise()
                .map(|((to, term), until)| crate::invariants::Promise { to, term, until }),
            votes_for_nobody_until: self.votes.votes_for_nobody_until(),
            hold_until: self.votes.hold_until(),
            leading: self.leadership_term(),
            lease_until: self.exclusive_until(),
            first_boot: self.votes.promised_nothing(),
            quorum: self.quorum(),
            voter: self.members.is_voter(self.id),
            follower_lease: self.timings.follower_lease,
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

    /// Feeds a message that member `from` sent.
    ///
    /// Never fails: input that is malformed, forged, stale or unexpected is dropped
    /// and counted in [`Stats::dropped`].
    ///
    /// docs/protocol.md: G1, terms only move up; a message too far ahead is dropped.
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
        self.connectivity
            .heard_from(from, self.members.is_voter(from));
        match message {
            Message::Coordinator { term, round } => {
                if self.quorum().is_some() {
                    self.on_claim(now, from, term, round);
                } else {
                    self.object_to_announcement(from, term);
                    self.on_leadership(now, from, term, 0);
                }
            }
            Message::Heartbeat { term, round } => {
                self.on_leadership(now, from, term, round);
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
            Message::Resign { term, successor } => self.on_resign(now, from, term, successor),
            Message::Election { term } => self.on_election(now, from, term),
            Message::Answer { term } => self.on_answer(now, from, term),
            Message::Takeover { term } => self.on_takeover(now, from, term),
            Message::RingElection {
                term,
                initiator,
                active,
            } => self.on_ring_election(now, from, (term, initiator), active),
            Message::RingCoordinator {
                term,
                leader,
                initiator,
                active,
            } => self.on_ring_coordinator(now, from, (term, leader, initiator), active),
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
                if self.quorum().is_some() {
                    self.on_claim_timeout(now);
                } else {
                    self.on_start_unopposed(now);
                }
            }
            Timer::Answer => self.on_answer_timeout(now),
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
            None => {
                // Its first input: a node not declared a first boot may have
                // promised something before it restarted, and votes for
                // nobody for a follower lease from now, even before its
                // start.
                self.latest = Some(now);
                if !self.votes.promised_nothing() {
                    self.forget_promises(now);
                }
                now
            }
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
