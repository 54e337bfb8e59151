//! Exhaustive model checking (stateright, breadth first) of three members, for
//! each algorithm, without and with a quorum: every interleaving of deliveries,
//! losses, timer firings, boots, crashes and restarts, on a network that delays
//! each message by one or two ticks (so messages overtake each other), may lose
//! it, and in some checks delays an acknowledgement past the timing model.
//!
//! # The model
//!
//! Each member is a real [`Node`], driven as a driver would drive it; the state is
//! the nodes themselves (`Node` is `Clone + Eq + Hash` over its protocol state),
//! what each persisted, the messages in flight, the clock, and what the
//! properties remember.
//!
//! Time is discrete and shared, with one fixed base instant, so that two paths to
//! the same situation reach equal states: every input at tick `k` is given
//! `base + k * TICK` on the member's own clock, which runs `1 + drift` times as
//! fast as the model's. stateright's own actor model fires timers whenever it
//! likes, which is the asynchronous model in which Bully promises nothing; here
//! time is part of the state instead, as in the simulator:
//!
//! - a message sent at tick `k` arrives at tick `k + 1` or `k + 2` (`T_M`, the
//!   message time, the longest a message takes, is two ticks), or is lost; at one instant, messages are delivered before timers
//!   fire (a message arriving exactly at a deadline is in time); in the checks
//!   with [`Bounds::lates`], up to that many acknowledgements are held past
//!   `T_M`, by [`Bounds::late_by`] ticks more (A1 broken);
//! - a timer fires at the first tick at which its member's clock has reached
//!   the deadline, never later: time does not pass while a timer is due or a
//!   message must arrive;
//! - with a quorum the configuration allows clocks to drift apart by ρ = 0.05
//!   (`BULLY_MODEL_DRIFT`), and they do: the highest member's clock, the first
//!   leader's, runs ρ slow and the others' ρ fast, the case in which a lease
//!   measured on the leader's clock and promises measured on the followers'
//!   are closest (A2, bounded drift; docs/correctness.md, section 3). Without a quorum the clocks are exact;
//! - each member boots (`Node::start`) at a tick of its choosing within
//!   [`Bounds::boot_window`]; up to [`Bounds::crashes`] members crash for
//!   good; up to [`Bounds::restarts`] times a member crashes and comes back at
//!   once, as [`Bounds::restart`] says: with the durable state it persisted
//!   after its last input (persist before send), or with it lost (a missing
//!   state file: [`DurableState::default`]); up to [`Bounds::losses`] messages
//!   are lost; in the partial-partition checks, up to [`Bounds::cuts`] links
//!   are cut for good, one way or both, at any tick (`BULLY_MODEL_CUTS`);
//! - the clock stops at [`Bounds::horizon`] ticks, which bounds the exploration;
//! - the members are not declared a first boot ([`Setup::first_boot`]), so
//!   each votes for nobody for a follower lease after its start, as a member
//!   that may have run before does; one check declares them, and they vote at
//!   once.
//!
//! Beside the default policies, checks run a resign delay, `Preemption::Never`
//! and `AfterStable`, and `Quorum::AtLeast`.
//!
//! # The properties
//!
//! (docs/correctness.md, section 1, states them for the code as a whole.)
//!
//! - **S1** per connected component: two members never both announce the same
//!   term unless a message between the two of them was lost (without a quorum
//!   Bully's promise holds between members in contact; a lost message, a cut
//!   or a restart is what breaks contact in this model). With a quorum, or with no loss at all,
//!   globally.
//! - **S2** a node's term and highest accepted token never decrease.
//! - **S3** a node never accepts, or follows, a token below the highest it had
//!   accepted.
//! - With a quorum, exclusive leadership: no member becomes leader while another
//!   is leading, in the model's time (each member's lease and promises on its own
//!   drifting clock). A test with the leader's clock ten times ρ slow shows the
//!   check failing, and one that declares a member that lost its state a first
//!   boot again shows the invariants failing.
//! - With a quorum, the safety core's invariants I1 to I7 (docs/protocol.md;
//!   `bully_sim::invariants`) after every input: I1 to I6 on the node that
//!   took it, I7 (every lease covered by a quorum's promises, in real time)
//!   across all members.
//! - sometimes: a leader is elected (every live, booted member follows it);
//!   and a second leadership begins (two `(term, member)` announcements): the
//!   state in which "never two leaders at once" and S1 could fail is reached,
//!   so neither holds vacuously.
//!
//! Every check here takes minutes without optimizations: they are ignored in
//! a debug build and run with `cargo test --release -p bully-sim
//! --all-features --test model` (the README's test command runs both).
//!
//! `BULLY_MODEL_MEMBERS=4` checks four members instead, depth first (minutes per
//! algorithm, and a few GB).
//! `BULLY_MODEL_HORIZON`, `BULLY_MODEL_LOSSES`, `BULLY_MODEL_BOOT_WINDOW` change
//! the bounds.

use std::collections::BTreeSet;
use std::fmt;
use std::time::{Duration, Instant};

use bully_core::SafetyState;
use bully_core::{
    Algorithm, Config, DurableState, Event, FencingToken, Message, MessageKind, Node, NodeId,
    Preemption, Quorum, Role, Term,
};
use bully_sim::invariants::{self, Member as Seen};
use stateright::{Checker, Model, Property};

/// The model's unit of time.
const TICK: Duration = Duration::from_millis(10);

/// The configuration every member runs ([`Setup::config`]): the default's shape on a coarser clock.
/// `T_M` is two ticks, processing takes no time, heartbeats go every three ticks
/// and a leader is suspected after six (staggered by rank); an answer is waited
/// for `2 T_M` (four ticks). With a majority quorum the leader timeout is
/// twelve ticks, the shortest [`Config::validate`] accepts: the leader's lease
/// (shortened for the drift bound ρ of [`Bounds::rho`]) must outlast two round
/// trips, the claim's votes and the first heartbeat round's acknowledgements.
///
/// The loss-adaptive detector is off: the heartbeats a follower missed are part
/// of its state, and counting them multiplies the states (about three times
/// as many for classic with a quorum, when it was measured). It
/// only ever makes a follower wait longer than the leader timeout, as a slower
/// detector would; the randomized sweeps (`tests/properties.rs`,
/// `tests/quorum.rs`) run it under loss.
/// One configuration the model checks: an algorithm and the policies around it.
#[derive(Clone, Copy, Debug)]
struct Setup {
    algorithm: Algorithm,
    quorum: Quorum,
    preemption: Preemption,
    /// The resign delay, in ticks.
    resign_delay: u32,
    /// Whether the members are declared a first boot (they vote as soon as
    /// they start), or not (they wait a follower lease first, as a member that
    /// may have run before does).
    first_boot: bool,
}

impl Setup {
    /// `algorithm` with a majority quorum or none, the default policies.
    fn new(algorithm: Algorithm, quorum: bool) -> Setup {
        Setup {
            algorithm,
            quorum: if quorum {
                Quorum::Majority
            } else {
                Quorum::None
            },
            preemption: Preemption::Always,
            resign_delay: 0,
            first_boot: false,
        }
    }

    fn has_quorum(&self) -> bool {
        self.quorum != Quorum::None
    }

    fn config(&self) -> Config {
        let config = Config::default()
            .with_loss_adaptive_detection(false)
            .with_algorithm(self.algorithm)
            .with_preemption(self.preemption)
            .with_max_message_delay(TICK * 2)
            .with_max_processing_time(Duration::ZERO)
            .with_heartbeat_interval(TICK * 3)
            .with_resign_delay(TICK * self.resign_delay);
        if self.has_quorum() {
            config
                .with_leader_timeout(TICK * 12)
                .with_quorum(self.quorum)
        } else {
            config.with_leader_timeout(TICK * 6)
        }
    }
}

/// How a restarted member comes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Restart {
    /// With the durable state it persisted (A3).
    Durable,
    /// With its state lost (a missing state file: `DurableState::default()`).
    Lost,
    /// With its state lost and declared a first boot again: an operator's
    /// mistake, which the invariants must catch.
    DeclaredNewAgain,
}

/// What bounds the exploration.
#[derive(Clone, Copy, Debug)]
struct Bounds {
    members: usize,
    /// The last tick.
    horizon: u32,
    /// Members boot at a tick in `0..=boot_window`.
    boot_window: u32,
    /// Messages that may be lost in one run.
    losses: u8,
    /// Members that may crash in one run (for good).
    crashes: u8,
    /// Restarts in one run (a member crashes and comes back at once), and how
    /// it comes back.
    restarts: u8,
    restart: Restart,
    /// Acknowledgements that may be held past `T_M` in one run, and by how
    /// many ticks more.
    lates: u8,
    late_by: u32,
    /// Links that may be cut in one run (one direction, or both), for good.
    cuts: u8,
    /// With a quorum: ρ, the drift bound the configuration states, and the
    /// drift of the clocks (the highest member's `-ρ`, the others' `+ρ`).
    rho: f64,
}

impl Bounds {
    fn from_env(setup: Setup) -> Bounds {
        let (algorithm, quorum) = (setup.algorithm, setup.has_quorum());
        let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u32>().ok());
        let members = env("BULLY_MODEL_MEMBERS").unwrap_or(3) as usize;
        // Long enough for the leader to crash and every member to learn the next
        // one; the ring's two passes and longer timeouts take more time, and its
        // hop-by-hop tokens more states: it is checked with one loss, the others
        // with two. With a quorum every stand is preceded by a probe, whose
        // messages multiply the interleavings, and its longer leader timeout
        // (twelve ticks, not six) stretches every failover: two losses within 36
        // ticks is 863,712 unique states for classic Bully (40 ticks would be
        // tens of millions; `BULLY_MODEL_HORIZON=40 BULLY_MODEL_LOSSES=1` checks
        // the longer runs with one loss).
        let (horizon, losses) = match (algorithm, quorum) {
            (Algorithm::Ring, false) => (40, 1),
            (_, false) => (30, 2),
            (Algorithm::Ring, true) => (50, 1),
            (_, true) => (36, 2),
        };
        let rho = std::env::var("BULLY_MODEL_DRIFT")
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.05);
        Bounds {
            members,
            horizon: env("BULLY_MODEL_HORIZON").unwrap_or(horizon),
            boot_window: env("BULLY_MODEL_BOOT_WINDOW").unwrap_or(0),
            losses: env("BULLY_MODEL_LOSSES").unwrap_or(losses) as u8,
            crashes: 1,
            restarts: 0,
            restart: Restart::Durable,
            lates: 0,
            late_by: 0,
            cuts: 0,
            rho: if quorum { rho } else { 0.0 },
        }
    }

    /// The partial-partition check: no loss, no crash, one link cut (either
    /// direction or both) at any tick, long enough for the cut's consequences.
    /// With a quorum two cuts: one cut link leaves every member a majority
    /// over working links, so no second leader is ever elected and "never two
    /// at once" could not fail; two can cut the leader off.
    fn with_a_cut_link(setup: Setup) -> Bounds {
        let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u32>().ok());
        let bounds = Bounds::from_env(setup);
        // Two cuts multiply the interleavings: the run after them is kept to
        // what the leader's lease and the next election need.
        let (cuts, longer) = if setup.has_quorum() { (2, 10) } else { (1, 20) };
        Bounds {
            losses: 0,
            crashes: 0,
            cuts: env("BULLY_MODEL_CUTS").unwrap_or(cuts) as u8,
            // Without losses there is room for a longer run after the cut.
            horizon: env("BULLY_MODEL_HORIZON").unwrap_or(bounds.horizon + longer),
            ..bounds
        }
    }

    /// One restart, as `restart` says, and no other fault: the restart is the
    /// fault (with a loss too, 8 million unique states).
    fn with_a_restart(setup: Setup, restart: Restart) -> Bounds {
        Bounds {
            crashes: 0,
            restarts: 1,
            restart,
            losses: 0,
            ..Bounds::from_env(setup)
        }
    }

    /// One acknowledgement held `late_by` ticks past `T_M`, one crash, no loss.
    fn with_a_late_acknowledgement(setup: Setup) -> Bounds {
        Bounds {
            losses: 0,
            lates: 1,
            late_by: 6,
            ..Bounds::from_env(setup)
        }
    }
}

/// A message on its way.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Packet {
    from: usize,
    to: usize,
    message: Message,
    /// The first tick it may arrive at.
    earliest: u32,
    /// The last: it must be delivered (or lost) by then.
    deadline: u32,
    /// Held past `T_M` already.
    late: bool,
}

impl Packet {
    /// An order on packets, so the multiset in flight has one representation.
    fn key(&self) -> impl Ord + '_ {
        let (kind, term, round): (MessageKind, Term, u64) = match self.message {
            Message::Heartbeat { term, round }
            | Message::Ack { term, round }
            | Message::Coordinator { term, round } => (self.message.kind(), term, round),
            ref other => (other.kind(), other.term(), 0),
        };
        let ring: &[NodeId] = match &self.message {
            Message::RingElection { active, .. } | Message::RingCoordinator { active, .. } => {
                active
            }
            _ => &[],
        };
        let extra = match self.message {
            Message::RingElection { initiator, .. } => (initiator, initiator),
            Message::RingCoordinator {
                initiator, leader, ..
            } => (initiator, leader),
            _ => (NodeId(0), NodeId(0)),
        };
        (
            (self.deadline, self.earliest, self.from, self.to, self.late),
            (kind, term, round, extra, ring),
        )
    }
}

/// A broken property, and where.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Broken {
    /// S1: two members in contact announced one term.
    TwoLeadersInTerm {
        term: Term,
        first: NodeId,
        second: NodeId,
        /// Whether any message had been lost at all.
        after_loss: bool,
    },
    /// S2: a term or token went down.
    Decreased { node: NodeId },
    /// With a quorum: a member became leader while another was leading.
    OverlappingLeaders { leading: NodeId, second: NodeId },
    /// S3: a token below the floor was accepted or followed.
    BelowFloor {
        node: NodeId,
        floor: FencingToken,
        accepted: FencingToken,
    },
    /// With a quorum: one of the safety core's invariants I1 to I7.
    Invariant(String),
}

/// One member: its node, whether it has booted, what it persisted, and when
/// it came back if it may have forgotten a promise (I5); `None` once crashed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Member {
    node: Node,
    booted: bool,
    persisted: DurableState,
    back: Option<Instant>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    tick: u32,
    members: Vec<Option<Member>>,
    in_flight: Vec<Packet>,
    /// Whether a timer has fired at this tick (deliveries come first).
    fired: bool,
    losses: u8,
    crashes: u8,
    restarts: u8,
    lates: u8,
    /// Directed links `(from, to)` cut for good, and how many cuts were made.
    cut: BTreeSet<(usize, usize)>,
    cuts: u8,
    /// Pairs `(low, high)` of member indices between which a message was lost.
    out_of_contact: BTreeSet<(usize, usize)>,
    /// Every `(term, member)` that announced its own leadership.
    announced: BTreeSet<(Term, NodeId)>,
    broken: Option<Broken>,
}

#[derive(Clone, Debug, PartialEq)]
enum Action {
    Boot(usize),
    Deliver(usize),
    Lose(usize),
    Fire(usize),
    Crash(usize),
    /// The member crashes and comes back at once ([`Bounds::restart`]).
    Restart(usize),
    /// The acknowledgement in flight is held past `T_M`.
    Hold(usize),
    /// Cut the link `from -> to`, and `to -> from` too if `both`.
    Cut {
        from: usize,
        to: usize,
        both: bool,
    },
    Tick,
}

struct BullyModel {
    setup: Setup,
    quorum: bool,
    bounds: Bounds,
    config: Config,
    ids: Vec<NodeId>,
    base: Instant,
    /// Each member's clock drift, in parts per million.
    drift_ppm: Vec<i64>,
}

impl BullyModel {
    fn new(setup: Setup, bounds: Bounds) -> BullyModel {
        let quorum = setup.has_quorum();
        let ppm = (bounds.rho * 1e6).round() as i64;
        // The highest member, the first leader, slow; the others fast.
        let drift_ppm = (0..bounds.members)
            .map(|index| {
                if index + 1 == bounds.members {
                    -ppm
                } else {
                    ppm
                }
            })
            .collect();
        BullyModel {
            setup,
            quorum,
            bounds,
            config: setup.config().with_clock_drift(bounds.rho),
            ids: (1..=bounds.members as u64).map(NodeId).collect(),
            base: Instant::now(),
            drift_ppm,
        }
    }

    /// What member `index`'s clock reads at `tick`.
    fn at(&self, tick: u32, index: usize) -> Instant {
        let nanos = TICK.as_nanos() as i64 * i64::from(tick);
        let drifted = nanos + nanos * self.drift_ppm[index] / 1_000_000;
        self.base + Duration::from_nanos(drifted.max(0) as u64)
    }

    /// The real (model) time of `at`, an instant of member `index`'s clock, in
    /// nanoseconds since the base.
    fn real(&self, index: usize, at: Instant) -> i128 {
        let local = at.saturating_duration_since(self.base).as_nanos() as i128;
        local * 1_000_000 / (1_000_000 + i128::from(self.drift_ppm[index]))
    }

    fn index(&self, id: NodeId) -> usize {
        self.ids.binary_search(&id).expect("a member")
    }

    /// Whether member `index` has a timer due now.
    fn due(&self, state: &State, index: usize) -> bool {
        let now = self.at(state.tick, index);
        state.members[index]
            .as_ref()
            .and_then(|member| member.node.poll_timeout())
            .is_some_and(|at| at <= now)
    }

    /// Feeds one input to member `index` at the current tick, then routes what it
    /// sent and checks S1 to S3 on what it did.
    fn input(&self, state: &mut State, index: usize, input: impl FnOnce(&mut Node, Instant)) {
        let now = self.at(state.tick, index);
        let tick = state.tick;
        let Some(member) = state.members[index].as_mut() else {
            return;
        };
        let node = &mut member.node;
        let id = node.id();
        let (term, floor) = (node.term(), node.highest_token());
        let before = node.safety();
        input(node, now);
        let sent: Vec<_> = std::iter::from_fn(|| node.poll_transmit()).collect();
        member.persisted = node.durable_state();
        if self.quorum {
            let checked = invariants::Input {
                now,
                sent: &sent,
                back_since: member.back,
            };
            if let Err(broken) = invariants::check_input(&before, &node.safety(), &checked) {
                state
                    .broken
                    .get_or_insert(Broken::Invariant(broken.to_string()));
            }
        }
        let node = &mut member.node;
        let mut announced = Vec::new();
        let mut accepted = Vec::new();
        while let Some(event) = node.poll_event() {
            if let Event::LeaderElected { leader, term } = event {
                accepted.push(FencingToken { term, leader });
                if leader == id {
                    announced.push(term);
                }
            }
        }
        if node.term() < term || node.highest_token() < floor {
            state.broken.get_or_insert(Broken::Decreased { node: id });
        }
        if let Some(floor) = floor {
            let followed = node.leader().map(|leader| leader.token());
            for token in accepted.into_iter().chain(followed) {
                if token < floor {
                    state.broken.get_or_insert(Broken::BelowFloor {
                        node: id,
                        floor,
                        accepted: token,
                    });
                }
            }
        }
        if self.quorum && node.role() == Role::Leader {
            let others = state
                .members
                .iter()
                .enumerate()
                .filter(|&(other, _)| other != index);
            for (_, other) in others {
                if let Some(other) = other.as_ref().filter(|m| m.node.role() == Role::Leader) {
                    state.broken.get_or_insert(Broken::OverlappingLeaders {
                        leading: other.node.id(),
                        second: id,
                    });
                }
            }
        }
        for term in announced {
            let rivals = state
                .announced
                .range((term, NodeId(0))..=(term, NodeId(u64::MAX)))
                .map(|&(_, other)| other)
                .filter(|&other| other != id);
            for other in rivals {
                let pair = (index.min(self.index(other)), index.max(self.index(other)));
                // With a quorum, S1 holds globally, whatever was lost.
                if self.quorum || !state.out_of_contact.contains(&pair) {
                    state.broken.get_or_insert(Broken::TwoLeadersInTerm {
                        term,
                        first: other,
                        second: id,
                        after_loss: state.losses > 0,
                    });
                }
            }
            state.announced.insert((term, id));
        }
        for transmit in sent {
            let to = self.index(transmit.to);
            // A message to a crashed member, or over a cut link, vanishes.
            if state.members[to].is_some() && !state.cut.contains(&(index, to)) {
                state.in_flight.push(Packet {
                    from: index,
                    to,
                    message: transmit.message,
                    earliest: tick + 1,
                    deadline: tick + 2,
                    late: false,
                });
            }
        }
        state.in_flight.sort_by(|a, b| a.key().cmp(&b.key()));
        if self.quorum {
            self.check_leases(state);
        }
    }

    /// I7 across every member: each leader's lease covered by a quorum's
    /// promises, in the model's time.
    fn check_leases(&self, state: &mut State) {
        let safety: Vec<Option<SafetyState>> = state
            .members
            .iter()
            .map(|member| member.as_ref().map(|member| member.node.safety()))
            .collect();
        let seen: Vec<Seen<'_>> = safety
            .iter()
            .map(|safety| match safety {
                Some(safety) => Seen::Up(safety),
                None => Seen::Down { voter: true },
            })
            .collect();
        let now = i128::from(state.tick) * TICK.as_nanos() as i128;
        if let Err(broken) = invariants::check_leases(&seen, now, |index, at| self.real(index, at))
        {
            state
                .broken
                .get_or_insert(Broken::Invariant(broken.to_string()));
        }
    }
}

impl Model for BullyModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let members = self
            .ids
            .iter()
            .map(|&id| {
                // Declared a first boot, a member votes at once; otherwise
                // it votes for nobody for a follower lease after its start.
                let state = if self.setup.first_boot {
                    DurableState::first_boot()
                } else {
                    DurableState::default()
                };
                let node = Node::with_durable_state(
                    id,
                    self.ids.iter().copied(),
                    self.config.clone(),
                    state,
                )
                .expect("a valid configuration");
                Some(Member {
                    node,
                    booted: false,
                    persisted: state,
                    back: None,
                })
            })
            .collect();
        vec![State {
            tick: 0,
            members,
            in_flight: Vec::new(),
            fired: false,
            losses: 0,
            crashes: 0,
            restarts: 0,
            lates: 0,
            cut: BTreeSet::new(),
            cuts: 0,
            out_of_contact: BTreeSet::new(),
            announced: BTreeSet::new(),
            broken: None,
        }]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        if state.broken.is_some() {
            return;
        }
        let must_deliver = state
            .in_flight
            .iter()
            .any(|packet| packet.deadline <= state.tick);
        for (index, packet) in state.in_flight.iter().enumerate() {
            if index > 0 && state.in_flight[index - 1] == *packet {
                continue; // the same copy: one choice
            }
            if !state.fired && packet.earliest <= state.tick {
                actions.push(Action::Deliver(index));
            }
            if state.losses < self.bounds.losses {
                actions.push(Action::Lose(index));
            }
            let ack = packet.message.kind() == MessageKind::Ack;
            if ack && !packet.late && state.lates < self.bounds.lates {
                actions.push(Action::Hold(index));
            }
        }
        let mut timers_due = false;
        for (index, member) in state.members.iter().enumerate() {
            let Some(member) = member else { continue };
            if !member.booted {
                if state.tick <= self.bounds.boot_window {
                    actions.push(Action::Boot(index));
                }
                continue;
            }
            if self.due(state, index) {
                timers_due = true;
                if !must_deliver {
                    actions.push(Action::Fire(index));
                }
            }
            if state.crashes < self.bounds.crashes {
                actions.push(Action::Crash(index));
            }
            if state.restarts < self.bounds.restarts {
                actions.push(Action::Restart(index));
            }
        }
        if state.cuts < self.bounds.cuts {
            let members = self.ids.len();
            for from in 0..members {
                for to in 0..members {
                    if from != to {
                        actions.push(Action::Cut {
                            from,
                            to,
                            both: false,
                        });
                        if from < to {
                            actions.push(Action::Cut {
                                from,
                                to,
                                both: true,
                            });
                        }
                    }
                }
            }
        }
        let unbooted = state
            .members
            .iter()
            .flatten()
            .any(|member| !member.booted && state.tick >= self.bounds.boot_window);
        if state.tick < self.bounds.horizon && !must_deliver && !timers_due && !unbooted {
            actions.push(Action::Tick);
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut state = last.clone();
        match action {
            Action::Boot(index) => {
                state.members[index].as_mut()?.booted = true;
                if state.tick > 0 {
                    // A member that comes up after the others is one that comes
                    // back, as after a restart: its term dates from before it was
                    // in contact, so it may announce a term whose election did not
                    // ask it (docs/correctness.md, section 2; the simulator's
                    // checker makes the same exception).
                    for other in 0..self.ids.len() {
                        if other != index {
                            state
                                .out_of_contact
                                .insert((index.min(other), index.max(other)));
                        }
                    }
                }
                if !self.setup.first_boot {
                    let now = self.at(state.tick, index);
                    state.members[index].as_mut()?.back = Some(now);
                }
                self.input(&mut state, index, |node, now| node.start(now));
            }
            Action::Deliver(index) => {
                let packet = state.in_flight.remove(index);
                let from = self.ids[packet.from];
                if !state.members[packet.to].as_ref()?.booted {
                    // Not running yet: the message is not received.
                    return Some(state);
                }
                self.input(&mut state, packet.to, |node, now| {
                    node.handle_message(now, from, packet.message)
                });
            }
            Action::Lose(index) => {
                let packet = state.in_flight.remove(index);
                state.losses += 1;
                let pair = (packet.from.min(packet.to), packet.from.max(packet.to));
                state.out_of_contact.insert(pair);
            }
            Action::Fire(index) => {
                state.fired = true;
                self.input(&mut state, index, |node, now| node.handle_timeout(now));
            }
            Action::Crash(index) => {
                state.members[index] = None;
                state.crashes += 1;
                // What was on its way to it vanishes; what it sent still arrives.
                state.in_flight.retain(|packet| packet.to != index);
            }
            Action::Restart(index) => {
                let persisted = state.members[index].as_ref()?.persisted;
                let restored = match self.bounds.restart {
                    Restart::Durable => persisted,
                    Restart::Lost => DurableState::default(),
                    Restart::DeclaredNewAgain => DurableState::first_boot(),
                };
                let node = Node::with_durable_state(
                    self.ids[index],
                    self.ids.iter().copied(),
                    self.config.clone(),
                    restored,
                )
                .expect("a valid configuration");
                let now = self.at(state.tick, index);
                let back = (!node.durable_state().first_boot).then_some(now);
                state.members[index] = Some(Member {
                    persisted: node.durable_state(),
                    node,
                    booted: true,
                    back,
                });
                state.restarts += 1;
                // What was on its way to the old process vanishes with it.
                state.in_flight.retain(|packet| packet.to != index);
                // Back after the others moved on, as a late boot is.
                for other in 0..self.ids.len() {
                    if other != index {
                        state
                            .out_of_contact
                            .insert((index.min(other), index.max(other)));
                    }
                }
                self.input(&mut state, index, |node, now| node.start(now));
            }
            Action::Hold(index) => {
                let packet = &mut state.in_flight[index];
                packet.deadline += self.bounds.late_by;
                packet.late = true;
                state.lates += 1;
                state.in_flight.sort_by(|a, b| a.key().cmp(&b.key()));
            }
            Action::Cut { from, to, both } => {
                state.cut.insert((from, to));
                if both {
                    state.cut.insert((to, from));
                }
                state.cuts += 1;
                // Without a quorum Bully promises S1 only between members in
                // contact: the two ends of a cut link are not.
                state.out_of_contact.insert((from.min(to), from.max(to)));
            }
            Action::Tick => {
                state.tick += 1;
                state.fired = false;
                for (index, member) in state.members.iter_mut().enumerate() {
                    let Some(member) = member else { continue };
                    // Move every node's clock to the new tick, so that nodes that
                    // differ only in when they last heard something compare equal: a
                    // refused command takes `now` and changes nothing else.
                    let own = member.node.id();
                    let _ = member.node.add_member(self.at(state.tick, index), own);
                }
            }
        }
        Some(state)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("S1 per connected component", |_, state: &State| {
                !matches!(state.broken, Some(Broken::TwoLeadersInTerm { .. }))
            }),
            Property::always("S2 terms and tokens never decrease", |_, state: &State| {
                !matches!(state.broken, Some(Broken::Decreased { .. }))
            }),
            Property::always("S3 nothing below the floor", |_, state: &State| {
                !matches!(state.broken, Some(Broken::BelowFloor { .. }))
            }),
            Property::always(
                "with a quorum, never two leaders at once",
                |_, state: &State| !matches!(state.broken, Some(Broken::OverlappingLeaders { .. })),
            ),
            Property::always(
                "with a quorum, the safety core's invariants I1 to I7",
                |_, state: &State| !matches!(state.broken, Some(Broken::Invariant(_))),
            ),
            Property::sometimes("a second leadership begins", |_, state: &State| {
                state.announced.len() >= 2
            }),
            Property::sometimes("a leader is elected", |_, state: &State| {
                let mut live = state.members.iter().flatten();
                let Some(first) = live.next() else {
                    return false;
                };
                let Some(leader) = first.node.leader() else {
                    return false;
                };
                first.booted
                    && live.all(|member| member.booted && member.node.leader() == Some(leader))
            }),
        ]
    }
}

impl BullyModel {
    /// A counterexample as a story: each step, the inputs it fed and what every
    /// node said.
    fn explain(&self, states: &[State]) -> String {
        let mut story = String::new();
        for pair in states.windows(2) {
            let (before, after) = (&pair[0], &pair[1]);
            let action = self
                .next_steps(before)
                .into_iter()
                .find(|(_, next)| next == after)
                .map(|(action, _)| action);
            let line = match action {
                Some(Action::Deliver(index)) => {
                    let packet = &before.in_flight[index];
                    format!(
                        "deliver {} -> {}: {}",
                        self.ids[packet.from], self.ids[packet.to], packet.message
                    )
                }
                Some(Action::Lose(index)) => {
                    let packet = &before.in_flight[index];
                    format!(
                        "LOSE {} -> {}: {}",
                        self.ids[packet.from], self.ids[packet.to], packet.message
                    )
                }
                Some(Action::Boot(index)) => format!("boot {}", self.ids[index]),
                Some(Action::Fire(index)) => format!("timer of {}", self.ids[index]),
                Some(Action::Crash(index)) => format!("CRASH {}", self.ids[index]),
                Some(Action::Restart(index)) => {
                    format!("RESTART {} ({:?})", self.ids[index], self.bounds.restart)
                }
                Some(Action::Hold(index)) => {
                    let packet = &before.in_flight[index];
                    format!(
                        "HOLD {} -> {}: {} past T_M",
                        self.ids[packet.from], self.ids[packet.to], packet.message
                    )
                }
                Some(Action::Cut { from, to, both }) => format!(
                    "CUT {} {} {}",
                    self.ids[from],
                    if both { "<->" } else { "->" },
                    self.ids[to]
                ),
                Some(Action::Tick) => format!("-- tick {}", after.tick),
                None => "?".to_owned(),
            };
            story.push_str(&format!("t{} {line}\n", before.tick));
            for (index, member) in after.members.iter().enumerate() {
                if let Some(member) = member {
                    let node = &member.node;
                    let was = before.members[index].as_ref().map(|m| &m.node);
                    if was != Some(node) && !matches!(action, Some(Action::Tick)) {
                        story.push_str(&format!(
                            "     {}: term {}, {:?}, leader {:?}\n",
                            node.id(),
                            node.term(),
                            node.role(),
                            node.leader().map(|l| (l.id.0, l.term.0))
                        ));
                    }
                }
            }
        }
        if let Some(last) = states.last() {
            story.push_str(&format!(
                "broken: {:?}; announced {:?}; out of contact {:?}\n",
                last.broken, last.announced, last.out_of_contact
            ));
        }
        story
    }
}

impl fmt::Display for BullyModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let setup = self.setup;
        write!(
            f,
            "{:?}, {:?}, {:?}, resign delay {} ticks, clocks {:?} ppm, {:?}",
            setup.algorithm,
            setup.quorum,
            setup.preemption,
            setup.resign_delay,
            self.drift_ppm,
            self.bounds
        )
    }
}

fn check(algorithm: Algorithm, quorum: bool) {
    let setup = Setup::new(algorithm, quorum);
    check_within(setup, Bounds::from_env(setup));
}

fn check_within(setup: Setup, bounds: Bounds) {
    let model = BullyModel::new(setup, bounds);
    let name = model.to_string();
    let started = Instant::now();
    let builder = model
        .checker()
        .threads(std::thread::available_parallelism().map_or(1, |n| n.get()));
    // Breadth first finds the shortest counterexample, but holds the whole
    // frontier in memory: beyond three members, depth first, which holds only the
    // visited fingerprints.
    if bounds.members <= 3 {
        report(&name, started, builder.spawn_bfs().join());
    } else {
        report(&name, started, builder.spawn_dfs().join());
    }
}

fn report(name: &str, started: Instant, checker: impl Checker<BullyModel>) {
    eprintln!(
        "{name}: {} states ({} unique), depth {}, in {:.1?}",
        checker.state_count(),
        checker.unique_state_count(),
        checker.max_depth(),
        started.elapsed()
    );
    for property in checker.model().properties() {
        let found = checker.discovery(property.name);
        match (property.expectation, found) {
            (stateright::Expectation::Sometimes, None) => {
                panic!("{name}: never \"{}\"", property.name)
            }
            (stateright::Expectation::Sometimes, Some(_)) | (_, None) => {}
            (_, Some(path)) => {
                let story = checker.model().explain(&path.into_states());
                panic!("{name}: \"{}\" broken:\n{story}", property.name)
            }
        }
    }
}

/// Checks `setup` within `bounds` until the first counterexample, which it
/// returns with the story of how it came about; `None` if there is none.
fn first_failure(
    setup: Setup,
    bounds: Bounds,
    drift: Option<Vec<i64>>,
) -> Option<(Broken, String)> {
    let mut model = BullyModel::new(setup, bounds);
    if let Some(drift) = drift {
        model.drift_ppm = drift;
    }
    let name = model.to_string();
    let started = Instant::now();
    let checker = model
        .checker()
        .threads(std::thread::available_parallelism().map_or(1, |n| n.get()))
        .finish_when(stateright::HasDiscoveries::AnyFailures)
        .spawn_bfs()
        .join();
    eprintln!(
        "{name}: stopped at the first failure after {} states ({} unique), in {:.1?}",
        checker.state_count(),
        checker.unique_state_count(),
        started.elapsed()
    );
    let path = checker
        .model()
        .properties()
        .iter()
        .filter(|property| property.expectation == stateright::Expectation::Always)
        .find_map(|property| checker.discovery(property.name))?;
    let states = path.into_states();
    let broken = states.last()?.broken.clone()?;
    Some((broken, checker.model().explain(&states)))
}

#[test]
#[cfg_attr(debug_assertions, ignore = "minutes: run in release")]
fn classic_bully_keeps_s1_to_s3_in_every_interleaving() {
    check(Algorithm::Classic, false);
}

#[test]
#[cfg_attr(debug_assertions, ignore = "minutes: run in release")]
fn modified_bully_keeps_s1_to_s3_in_every_interleaving() {
    check(Algorithm::Modified, false);
}

#[test]
#[cfg_attr(debug_assertions, ignore = "minutes: run in release")]
fn the_ring_keeps_s1_to_s3_in_every_interleaving() {
    check(Algorithm::Ring, false);
}

#[test]
#[cfg_attr(debug_assertions, ignore = "minutes: run in release")]
fn classic_bully_with_a_majority_quorum_never_has_two_leaders() {
    check(Algorithm::Classic, true);
}

#[test]
#[cfg_attr(debug_assertions, ignore = "minutes: run in release")]
fn modified_bully_with_a_majority_quorum_never_has_two_leaders() {
    check(Algorithm::Modified, true);
}

#[test]
#[cfg_attr(debug_assertions, ignore = "minutes: run in release")]
fn the_ring_with_a_majority_quorum_never_has_two_leaders() {
    check(Algorithm::Ring, true);
}

/// The lease check can fail: the same model with the leader's clock running
/// ten times ρ slow (the others ρ fast), a drift the configuration does not
/// allow for. Its lease, measured on that clock, outlasts the promises its
/// followers made, and a path on which a new leader is elected while it still
/// leads exists; the checker finds it, through I7 before any overlap.
#[test]
#[cfg_attr(debug_assertions, ignore = "minutes: run in release")]
fn a_clock_drifting_beyond_the_bound_breaks_the_lease() {
    // The leader cut off from both others (two cuts), nothing lost or crashed.
    let setup = Setup::new(Algorithm::Classic, true);
    let bounds = Bounds::with_a_cut_link(setup);
    let ppm = (bounds.rho * 1e6).round() as i64;
    let drift = vec![ppm, ppm, -10 * ppm];
    let (broken, story) = first_failure(setup, bounds, Some(drift)).expect("a failure");
    assert!(
        matches!(&broken, Broken::Invariant(text) if text.starts_with("I7"))
            || matches!(broken, Broken::OverlappingLeaders { .. }),
        "{broken:?}"
    );
    eprintln!("{story}");
}

/// The invariants can fail on the first of the two schedules found from
/// outside: a member that lost its state and is declared a first boot again
/// votes at once, while a lease its forgotten acknowledgements backed may
/// still run. The checker finds the state in which that lease is no longer
/// covered (I7), whether or not a second leader follows.
#[test]
#[cfg_attr(debug_assertions, ignore = "minutes: run in release")]
fn a_lost_state_declared_a_first_boot_again_breaks_the_invariants() {
    let setup = Setup::new(Algorithm::Classic, true);
    let bounds = Bounds::with_a_restart(setup, Restart::DeclaredNewAgain);
    let (broken, story) = first_failure(setup, bounds, None).expect("a failure");
    assert!(
        matches!(&broken, Broken::Invariant(text) if text.starts_with("I7")),
        "{broken:?}"
    );
    eprintln!("{story}");
}

#[test]
#[cfg_attr(debug_assertions, ignore = "minutes: run in release")]
fn classic_bully_keeps_s1_to_s3_with_a_link_cut_one_way_or_both() {
    let setup = Setup::new(Algorithm::Classic, false);
    check_within(setup, Bounds::with_a_cut_link(setup));
}

#[test]
#[cfg_attr(debug_assertions, ignore = "minutes: run in release")]
fn classic_bully_with_a_quorum_never_has_two_leaders_with_two_links_cut_one_way_or_both() {
    let setup = Setup::new(Algorithm::Classic, true);
    check_within(setup, Bounds::with_a_cut_link(setup));
}

#[test]
#[cfg_attr(debug_assertions, ignore = "minutes: run in release")]
fn modified_bully_with_a_quorum_never_has_two_leaders_with_two_links_cut_one_way_or_both() {
    let setup = Setup::new(Algorithm::Modified, true);
    check_within(setup, Bounds::with_a_cut_link(setup));
}

#[test]
#[cfg_attr(debug_assertions, ignore = "minutes: run in release")]
fn with_a_quorum_a_member_restarted_with_its_durable_state_keeps_every_invariant() {
    let setup = Setup::new(Algorithm::Classic, true);
    check_within(setup, Bounds::with_a_restart(setup, Restart::Durable));
}

#[test]
#[cfg_attr(debug_assertions, ignore = "minutes: run in release")]
fn with_a_quorum_a_member_that_lost_its_state_keeps_every_invariant() {
    let setup = Setup::new(Algorithm::Classic, true);
    check_within(setup, Bounds::with_a_restart(setup, Restart::Lost));
}

#[test]
#[cfg_attr(debug_assertions, ignore = "minutes: run in release")]
fn with_a_quorum_and_a_resign_delay_never_two_leaders() {
    let setup = Setup {
        resign_delay: 3,
        ..Setup::new(Algorithm::Classic, true)
    };
    check_within(setup, Bounds::from_env(setup));
}

#[test]
#[cfg_attr(debug_assertions, ignore = "minutes: run in release")]
fn with_a_quorum_a_sticky_leader_never_has_a_rival() {
    let setup = Setup {
        preemption: Preemption::Never,
        ..Setup::new(Algorithm::Classic, true)
    };
    check_within(setup, Bounds::from_env(setup));
}

#[test]
#[cfg_attr(debug_assertions, ignore = "minutes: run in release")]
fn with_a_quorum_a_takeover_after_a_stable_period_never_overlaps() {
    let setup = Setup {
        preemption: Preemption::AfterStable(TICK * 6),
        ..Setup::new(Algorithm::Classic, true)
    };
    check_within(setup, Bounds::from_env(setup));
}

#[test]
#[cfg_attr(debug_assertions, ignore = "minutes: run in release")]
fn with_a_quorum_of_at_least_two_never_two_leaders() {
    let setup = Setup {
        quorum: Quorum::AtLeast(2),
        ..Setup::new(Algorithm::Classic, true)
    };
    check_within(setup, Bounds::from_env(setup));
}

/// W1 does not rest on A1: an acknowledgement that arrives six ticks past
/// `T_M` only backs a lease from the request it names, which began before it.
#[test]
#[cfg_attr(debug_assertions, ignore = "minutes: run in release")]
fn with_a_quorum_an_acknowledgement_late_past_the_timing_model_only_shortens_a_lease() {
    let setup = Setup::new(Algorithm::Classic, true);
    check_within(setup, Bounds::with_a_late_acknowledgement(setup));
}

/// Members declared a first boot vote at once, so the cluster elects at its
/// first tick rather than a follower lease later: the same checks over a
/// shorter run (24 ticks hold the election, a crash and the next one).
#[test]
#[cfg_attr(debug_assertions, ignore = "minutes: run in release")]
fn with_a_quorum_members_declared_a_first_boot_never_two_leaders() {
    let setup = Setup {
        first_boot: true,
        ..Setup::new(Algorithm::Classic, true)
    };
    let bounds = Bounds {
        horizon: 24,
        ..Bounds::from_env(setup)
    };
    check_within(setup, bounds);
}
