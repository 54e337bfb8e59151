//! [`Simulation`]: the simulated cluster, its virtual clock and its run loop.
//! What it offers beyond running is written beside it, one concern a file:
//! commands on members (`commands.rs`), network faults (`faults.rs`), clocks
//! of their own (`clock.rs`), fault schedules (`chaos.rs`), what it measures
//! (`measure.rs`), the safety checks after every input (`check.rs`) and the
//! model of a leader's work they check W1 with (`work.rs`).
//!
//! The clock is virtual: it jumps to the next delivery or deadline, so a minute of
//! cluster time costs what its messages cost. Every random choice (loss,
//! duplication, jitter) comes from one ChaCha generator seeded by the caller, and
//! ties break by send order then member order, so the same seed gives the same run,
//! byte for byte.
//!
//! That clock is real time. Each member also has a clock of its own, which may
//! drift and step ([`Simulation::set_clock_drift`], [`Simulation::step_clock`]):
//! its node is given that clock's readings, its timers fire when that clock reads
//! their deadlines, and the checker compares leaderships and work in real time.
//! Unless a test sets them, every member's clock reads the real time.
//!
//! The one clock read in the crate is here: [`Simulation::new`] takes
//! `Instant::now()` once as the epoch, because an [`Instant`] cannot be made
//! any other way. Nothing depends on its value; traces record offsets from it.

pub mod chaos;
mod check;
pub(crate) mod clock;
mod commands;
mod faults;
mod measure;
mod work;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::time::Duration;

use bully_core::{
    Config, ConfigError, DurableState, Event, FencingToken, Instant, Membership, Message,
    MessageCounts, MessageKind, Node, NodeId, Quorum, Transmit,
};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub use check::Violation;

use crate::error::SimError;
use crate::network::{LinkConfig, Network, SendOutcome};
use crate::trace::{TraceEntry, TraceRecord, to_json_lines, to_mermaid};
use check::Checker;
use clock::Clock;

/// A message on its way, as [`Simulation::messages_in_flight`] shows it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InFlightMessage<'a> {
    /// The sender (forged traffic may name a non-member).
    pub from: NodeId,
    /// The addressee.
    pub to: NodeId,
    /// The message.
    pub message: &'a Message,
    /// When it was sent, in simulated microseconds since the simulation began (as
    /// [`TraceRecord::at_us`]).
    pub sent_us: u64,
    /// When it will be delivered, likewise.
    pub arrives_us: u64,
}

/// One member's place in the simulation.
#[derive(Debug)]
struct Slot {
    id: NodeId,
    config: Config,
    /// `None` while crashed.
    node: Option<Node>,
    /// Whether it is up: started (or woken) and not crashed since. A member that
    /// was never started is down: it answers nothing.
    up: bool,
    /// The state it had when it crashed, for durable restarts.
    last_state: DurableState,
    /// When the current incarnation came up.
    up_since: Instant,
    /// The longest causal chain of messages this node has seen since the last reset.
    depth: u64,
    /// The deadline its node asked for last (`Node::poll_timeout`), on its own
    /// clock.
    timer_at: Option<Instant>,
    /// When that deadline comes in real time: the key queued in the timer heap.
    timer_real: Option<Instant>,
    /// The member's clock (see `clock.rs`); it keeps running while the member is
    /// down.
    clock: Clock,
    /// The leadership it followed after its last input (`None` while crashed).
    follows: Option<FencingToken>,
}

/// A simulated cluster. See the [crate docs](crate).
#[derive(Debug)]
pub struct Simulation {
    epoch: Instant,
    now: Instant,
    rng: ChaCha8Rng,
    ids: Vec<NodeId>,
    membership: Membership,
    slots: Vec<Slot>,
    network: Network,
    timers: BinaryHeap<Reverse<(Instant, usize)>>,
    checker: Checker,
    /// Whether the run has left the synchronous model (see `check.rs`).
    faulted: bool,
    /// Whether a running member's clock stepped (see `clock.rs`).
    clock_stepped: bool,
    /// The default link's delay as set (`LinkConfig::delay` of `Simulation::new`
    /// or `set_default_link`): jitter within the timing model delivers within it.
    nominal_delay: Duration,
    /// Members up now.
    live: usize,
    /// How many live members follow each leadership: kept after every input, so
    /// that [`agreed_leader`](Simulation::agreed_leader) reads it instead of
    /// every node (checked each instant, it would make a 100,000-member ring's
    /// pass cost `O(N^2)` node reads).
    following: BTreeMap<FencingToken, usize>,
    /// Whether a member has restarted without its durable state.
    amnesia: bool,
    /// Whether a message was delivered past the timing model (later than its
    /// receiver's `max_message_delay` after it was sent, or injected).
    late_delivery: bool,
    /// Whether the cluster runs with a quorum.
    quorum: bool,
    sent: MessageCounts,
    lost: u64,
    max_depth: u64,
    /// Leaderships some member other than the leader followed, since the reset.
    followed: BTreeSet<FencingToken>,
    /// How many of `followed` were already held at the reset.
    baseline: u64,
    measure_from: Instant,
    trace: Option<Vec<TraceRecord>>,
    outbox: Vec<Transmit>,
    event_buf: Vec<Event>,
}

impl Simulation {
    /// A cluster of `members`, all running `config`, none started, every link
    /// reliable with a delay of exactly `config.max_message_delay()` (one "message
    /// transmission time" of the lecture notes).
    ///
    /// Every node is restored from [`DurableState::first_boot`]:
    /// the members of a cluster created now, that persist their state (A3),
    /// before their first start, which with a quorum vote at once
    /// ([`Node::restore`]). A member restarted later keeps its state
    /// ([`restart_durable`](Self::restart_durable)) or loses it
    /// ([`restart`](Self::restart)), and is then no first boot.
    ///
    /// A member is down until it is started ([`start`](Self::start)), as the Bully
    /// Algorithm Dance's seated dancers are: what is sent to it is lost and it fires no timer.
    /// Its node exists already, so [`node`](Self::node) shows it and
    /// [`command`](Self::command) can configure it (a membership change before
    /// the start, say); [`wake`](Self::wake) brings it up without starting it.
    pub fn new(
        seed: u64,
        members: impl IntoIterator<Item = NodeId>,
        config: Config,
    ) -> Result<Simulation, SimError> {
        let members: Vec<NodeId> = members.into_iter().collect();
        let configs = members.iter().map(|&id| (id, config.clone()));
        Simulation::with_configs(seed, configs)
    }

    /// A cluster in which each member runs its own configuration. The default
    /// link delay is the first member's `max_message_delay`.
    pub fn with_configs(
        seed: u64,
        members: impl IntoIterator<Item = (NodeId, Config)>,
    ) -> Result<Simulation, SimError> {
        let mut members: Vec<(NodeId, Config)> = members.into_iter().collect();
        members.sort_by_key(|(id, _)| *id);
        let ids: Vec<NodeId> = members.iter().map(|(id, _)| *id).collect();
        // One list shared by every node: a large cluster holds it once.
        let membership = Membership::new(ids.iter().copied())?;
        // The epoch: the only clock read in the crate (see the module docs).
        let epoch = Instant::now();
        let mut slots = Vec::with_capacity(ids.len());
        for (id, config) in members {
            let mut node = Node::with_membership(id, membership.clone(), config.clone())?;
            // A member of a new cluster, declared so: it has acknowledged
            // nobody, so it votes as soon as it starts.
            node.restore(DurableState::first_boot());
            slots.push(Slot {
                id,
                config,
                node: Some(node),
                up: false,
                last_state: DurableState::first_boot(),
                up_since: epoch,
                depth: 0,
                timer_at: None,
                timer_real: None,
                clock: Clock::exact(epoch),
                follows: None,
            });
        }
        let Some(first) = slots.first() else {
            return Err(SimError::Config(ConfigError::EmptyMembership));
        };
        let link = LinkConfig::reliable(first.config.max_message_delay());
        let quorum = first.config.quorum() != Quorum::None;
        let mut checker = Checker::new(epoch, &ids, quorum);
        for (index, slot) in slots.iter().enumerate() {
            if let Some(node) = slot.node.as_ref() {
                checker.reset(index, node);
            }
        }
        // Nobody is up before it is started.
        let live = 0;
        Ok(Simulation {
            epoch,
            now: epoch,
            rng: ChaCha8Rng::seed_from_u64(seed),
            network: Network::new(ids.len(), link),
            checker,
            ids,
            membership,
            slots,
            timers: BinaryHeap::new(),
            faulted: false,
            clock_stepped: false,
            nominal_delay: link.delay,
            live,
            following: BTreeMap::new(),
            amnesia: false,
            late_delivery: false,
            quorum,
            sent: MessageCounts::default(),
            lost: 0,
            max_depth: 0,
            followed: BTreeSet::new(),
            baseline: 0,
            measure_from: epoch,
            trace: None,
            outbox: Vec::new(),
            event_buf: Vec::new(),
        })
    }

    /// Starts recording a trace (off by default: long property runs do not need it).
    pub fn enable_trace(&mut self) {
        self.trace.get_or_insert_with(Vec::new);
    }

    /// The records so far (empty unless [`enable_trace`](Self::enable_trace) was called).
    pub fn trace(&self) -> &[TraceRecord] {
        self.trace.as_deref().unwrap_or(&[])
    }

    /// The trace as JSON lines.
    pub fn trace_json_lines(&self) -> String {
        to_json_lines(self.trace())
    }

    /// The trace as a Mermaid sequence diagram.
    pub fn mermaid(&self, heartbeats: bool) -> String {
        to_mermaid(self.trace(), &self.ids, heartbeats)
    }

    /// The current simulated instant.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Simulated time since the simulation began.
    pub fn elapsed(&self) -> Duration {
        self.now - self.epoch
    }

    /// Every member, ascending.
    pub fn members(&self) -> &[NodeId] {
        &self.ids
    }

    /// A member's node, or `None` if it is unknown or crashed.
    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.index(id)
            .ok()
            .and_then(|index| self.slots[index].node.as_ref())
    }

    /// Whether a member is up: started (or woken), and not crashed since.
    pub fn is_up(&self, id: NodeId) -> bool {
        self.index(id).is_ok_and(|index| self.slots[index].up)
    }

    /// The message-delay unit: the default link's fixed delay as set (by
    /// [`new`](Self::new) or [`set_default_link`](Self::set_default_link));
    /// jitter within the timing model ([`Action::Reorder`](chaos::Action::Reorder))
    /// delivers within it.
    pub fn message_delay(&self) -> Duration {
        self.nominal_delay
    }

    /// [`Config::settle_bound`] of the first member's configuration for this
    /// cluster's size.
    pub fn settle_bound(&self) -> Duration {
        self.slots[0].config.settle_bound(self.ids.len())
    }

    /// [`Config::failover_bound`] of the first member's configuration for this
    /// cluster's size.
    pub fn failover_bound(&self) -> Duration {
        self.slots[0].config.failover_bound(self.ids.len())
    }

    // ----- running -----

    /// Processes the next delivery or timer; `false` when nothing is scheduled.
    /// At equal instants deliveries come first (a message that arrives exactly at a
    /// deadline is in time), then timers in member order.
    pub fn step(&mut self) -> bool {
        let arrival = self.network.next_arrival();
        let timer = self.next_timer();
        match (arrival, timer) {
            (None, None) => false,
            (Some(at), timer) if timer.is_none_or(|(deadline, _)| at <= deadline) => {
                self.deliver();
                true
            }
            (_, Some((deadline, index))) => {
                self.fire(deadline, index);
                true
            }
            (Some(_), None) => unreachable!("covered by the arm above"),
        }
    }

    /// Runs every event up to and including `until`, then sets the clock to it.
    pub fn run_until(&mut self, until: Instant) {
        while self.next_instant().is_some_and(|next| next <= until) {
            self.step();
        }
        self.now = self.now.max(until);
    }

    /// Runs for `duration` of simulated time.
    pub fn run_for(&mut self, duration: Duration) {
        let until = self.now + duration;
        self.run_until(until);
    }

    /// Runs until `done` holds or `limit` passes; returns whether it holds.
    /// `done` is checked each time simulated time moves on (after every event of an
    /// instant has been handled), so an O(N) check stays cheap when one instant
    /// carries a 100,000-member broadcast.
    pub fn run_until_true(
        &mut self,
        limit: Duration,
        mut done: impl FnMut(&Simulation) -> bool,
    ) -> bool {
        let until = self.now + limit;
        loop {
            if done(self) {
                return true;
            }
            match self.next_instant() {
                Some(next) if next <= until => self.run_instant(next),
                _ => {
                    self.now = self.now.max(until);
                    return done(self);
                }
            }
        }
    }

    /// Handles every event scheduled at `instant` (and any that they schedule for
    /// the same instant).
    pub(crate) fn run_instant(&mut self, instant: Instant) {
        while self.next_instant() == Some(instant) {
            self.step();
        }
    }

    /// When the next delivery or timer is due, if anything is scheduled: a driver
    /// that [`step`](Self::step)s one event at a time (the browser simulator) runs
    /// up to an instant with it. Takes `&mut self` to drop timers that were
    /// re-armed since they were queued.
    pub fn next_instant(&mut self) -> Option<Instant> {
        let arrival = self.network.next_arrival();
        let timer = self.next_timer().map(|(at, _)| at);
        match (arrival, timer) {
            (Some(a), Some(t)) => Some(a.min(t)),
            (a, t) => a.or(t),
        }
    }

    /// The earliest valid timer; stale heap entries are discarded on the way.
    fn next_timer(&mut self) -> Option<(Instant, usize)> {
        while let Some(&Reverse((at, index))) = self.timers.peek() {
            if self.slots[index].timer_real == Some(at) {
                return Some((at, index));
            }
            self.timers.pop();
        }
        None
    }

    fn deliver(&mut self) {
        let Some(in_flight) = self.network.pop() else {
            return;
        };
        self.now = self.now.max(in_flight.at);
        let (from, to) = (in_flight.sender, self.ids[in_flight.to]);
        let late = self.now.saturating_duration_since(in_flight.sent)
            > self.slots[in_flight.to].config.max_message_delay();
        if late {
            self.note_late_delivery();
        }
        let slot = &mut self.slots[in_flight.to];
        let now = slot.clock.local(self.now);
        let Some(node) = slot.node.as_mut().filter(|_| slot.up) else {
            self.record(TraceEntry::Undeliverable {
                from,
                to,
                message: in_flight.message,
            });
            return;
        };
        slot.depth = slot.depth.max(in_flight.depth);
        if let Some(trace) = self.trace.as_mut() {
            trace.push(TraceRecord {
                at_us: micros(self.epoch, self.now),
                entry: TraceEntry::Deliver {
                    from,
                    to,
                    message: in_flight.message.clone(),
                },
            });
        }
        node.handle_message(now, from, in_flight.message);
        self.after_input(in_flight.to);
    }

    fn fire(&mut self, deadline: Instant, index: usize) {
        self.timers.pop();
        self.now = self.now.max(deadline);
        let slot = &mut self.slots[index];
        let now = slot.clock.local(self.now);
        slot.timer_at = None;
        slot.timer_real = None;
        let id = slot.id;
        if let Some(node) = slot.node.as_mut().filter(|_| slot.up) {
            node.handle_timeout(now);
            self.record(TraceEntry::Timeout { node: id });
            self.after_input(index);
        }
    }

    /// Routes what a node produced after one input, and checks it.
    fn after_input(&mut self, index: usize) {
        let now = self.now;
        let strict = if self.quorum {
            // A quorum keeps one leader per term whatever the network does, as long
            // as votes survive restarts.
            !self.amnesia
        } else {
            !self.faulted
        };
        let slot = &mut self.slots[index];
        let Some(node) = slot.node.as_mut() else {
            return;
        };
        while let Some(transmit) = node.poll_transmit() {
            self.outbox.push(transmit);
        }
        self.event_buf.clear();
        while let Some(event) = node.poll_event() {
            self.event_buf.push(event);
        }
        let (before, after) = self.checker.after_input(
            now,
            &slot.clock,
            index,
            node,
            (&self.event_buf, &self.outbox),
            strict,
        );
        let check_leases = self.checker.leases_to_check(before.as_ref(), &after);
        // A member that is down follows nobody, whatever its node was told.
        let follows = node
            .leader()
            .map(|leader| leader.token())
            .filter(|_| slot.up);
        if follows != slot.follows {
            if let Some(token) = slot.follows {
                Self::count_down(&mut self.following, token);
            }
            if let Some(token) = follows {
                *self.following.entry(token).or_insert(0) += 1;
            }
            slot.follows = follows;
        }
        let alone = self.live == 1;
        for event in &self.event_buf {
            if let Event::LeaderElected { leader, term } = *event {
                if leader != slot.id || alone {
                    self.followed.insert(FencingToken { term, leader });
                }
            }
        }
        let next = node.poll_timeout();
        if next != slot.timer_at {
            slot.timer_at = next;
            // Due on the node's clock at `at`: in real time, then (never before now).
            slot.timer_real = next.map(|at| slot.clock.real(at).max(now));
            if let Some(at) = slot.timer_real {
                self.timers.push(Reverse((at, index)));
            }
        }
        let id = slot.id;
        let depth = slot.depth + 1;
        if let Some(trace) = self.trace.as_mut() {
            for &event in &self.event_buf {
                trace.push(TraceRecord {
                    at_us: micros(self.epoch, now),
                    entry: TraceEntry::Event { node: id, event },
                });
            }
        }
        let mut outbox = std::mem::take(&mut self.outbox);
        for transmit in outbox.drain(..) {
            self.transmit(index, transmit, depth);
        }
        self.outbox = outbox;
        if check_leases {
            self.check_leases();
        }
    }

    /// A message arrives past the timing model (A1 broken): with a member
    /// that lost its state, the leases' guarantee rests on more than the run
    /// keeps to (`check.rs`).
    pub(crate) fn note_late_delivery(&mut self) {
        self.late_delivery = true;
        if self.amnesia {
            self.checker.left_model();
        }
    }

    /// A member came back without its durable state (A3 broken).
    pub(crate) fn note_amnesia(&mut self) {
        self.amnesia = true;
        if self.late_delivery {
            self.checker.left_model();
        }
    }

    /// I7: every leader's lease covered by a quorum's promises, in real time.
    fn check_leases(&mut self) {
        let members: Vec<(Option<&Node>, &Clock)> = self
            .slots
            .iter()
            .map(|slot| (slot.node.as_ref(), &slot.clock))
            .collect();
        self.checker.check_leases(self.now, &members);
    }

    fn transmit(&mut self, from: usize, transmit: Transmit, depth: u64) {
        let Ok(to) = self.index(transmit.to) else {
            return;
        };
        self.sent[transmit.message.kind()] += 1;
        if transmit.message.kind() != MessageKind::Heartbeat {
            // Heartbeats are the detector's steady state, not part of an election's
            // chain of dependent messages.
            self.max_depth = self.max_depth.max(depth);
        }
        let traced = self.trace.is_some().then(|| transmit.message.clone());
        let sender = (from, self.ids[from]);
        let outcome =
            self.network
                .send(&mut self.rng, self.now, sender, to, transmit.message, depth);
        if outcome != SendOutcome::InFlight {
            self.lost += 1;
        }
        if let Some(message) = traced {
            self.record(TraceEntry::Send {
                from: self.ids[from],
                to: transmit.to,
                message,
                depth,
                outcome,
            });
        }
    }

    fn unfollow(&mut self, follows: Option<FencingToken>) {
        if let Some(token) = follows {
            Self::count_down(&mut self.following, token);
        }
    }

    fn count_down(following: &mut BTreeMap<FencingToken, usize>, token: FencingToken) {
        if let Some(count) = following.get_mut(&token) {
            *count -= 1;
            if *count == 0 {
                following.remove(&token);
            }
        }
    }

    fn index(&self, id: NodeId) -> Result<usize, SimError> {
        self.ids
            .binary_search(&id)
            .map_err(|_| SimError::UnknownNode(id))
    }

    fn record(&mut self, entry: TraceEntry) {
        if let Some(trace) = self.trace.as_mut() {
            trace.push(TraceRecord {
                at_us: micros(self.epoch, self.now),
                entry,
            });
        }
    }
}

fn micros(epoch: Instant, now: Instant) -> u64 {
    u64::try_from(now.duration_since(epoch).as_micros()).unwrap_or(u64::MAX)
}
