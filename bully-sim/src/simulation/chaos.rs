//! Fault injection: a vocabulary of actions on a [`Simulation`], seeded random
//! schedules of them, and the liveness measurement that follows a schedule (heal
//! everything, then time how long the cluster takes to agree and whether it stays
//! agreed).
//!
//! Some faults keep to the timing model of docs/correctness.md (A1, bounded
//! delay; A2, bounded drift; section 3) and some leave it: reordering within
//! `T_M`, the message time, the longest a message takes ([`Action::Reorder`]) and clocks drifting within the configuration's ρ
//! ([`Action::Drift`]) keep to it, so every check stays on; jitter past `T_M`
//! ([`Action::Jitter`]), loss, partitions, wrong detector reports, restarts and
//! a running member's clock stepping ([`Action::ClockStep`]) leave it, and the
//! simulation says so ([`Simulation::has_faulted`], [`Simulation::clock_stepped`]).

use std::time::Duration;

use bully_core::{Config, NodeId};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{LinkConfig, SimError, Simulation};

/// One thing that can happen to a simulated cluster.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[non_exhaustive]
pub enum Action {
    /// Let simulated time pass.
    Advance(Duration),
    /// A member crashes.
    Crash(NodeId),
    /// A crashed member comes back with fresh state.
    Restart(NodeId),
    /// A crashed member comes back with its persisted term.
    RestartDurable(NodeId),
    /// The cluster splits in two: members whose bit is set in `mask` (bit `i` is
    /// the `i`-th member in id order) on one side, the rest on the other.
    Partition {
        /// Which members are on the first side.
        mask: u64,
    },
    /// One direction of one link stops working.
    Cut {
        /// Sender side.
        from: NodeId,
        /// Receiver side.
        to: NodeId,
    },
    /// Both directions of one link stop working (while both ends still reach the
    /// others: an intersecting partition).
    CutBoth {
        /// One end.
        a: NodeId,
        /// The other end.
        b: NodeId,
    },
    /// Every message is lost with this probability, in percent.
    Loss(u8),
    /// Every message is duplicated with this probability, in percent.
    Duplicate(u8),
    /// Every message takes the link delay plus up to this much more (with the
    /// link delay at `max_message_delay`, as [`Simulation::new`] sets it, any
    /// jitter takes some messages past it: a timing fault).
    Jitter(Duration),
    /// Every message takes between the [message delay](Simulation::message_delay)
    /// less this much (at most all of it) and the message delay: messages
    /// overtake each other but none is late, so the run stays in the timing
    /// model.
    Reorder(Duration),
    /// From now on a member's clock runs this many parts per million fast
    /// (negative: slow); see [`Simulation::set_clock_drift`] (clamped to what
    /// it accepts).
    Drift {
        /// The member.
        node: NodeId,
        /// Parts per million.
        ppm: i32,
    },
    /// A member's clock jumps forward (see [`Simulation::step_clock`]).
    ClockStep {
        /// The member.
        node: NodeId,
        /// How far.
        by: Duration,
    },
    /// A member's failure detector wrongly (or rightly) reports another as failed.
    Suspect {
        /// The member whose detector reports.
        node: NodeId,
        /// The member reported.
        suspect: NodeId,
    },
    /// A member starts an election.
    StartElection(NodeId),
    /// A member steps down if it leads.
    StepDown(NodeId),
    /// A member hands its leadership over if it leads
    /// ([`Node::hand_over`](bully_core::Node::hand_over)); a hand-over the
    /// node refuses changes nothing.
    HandOver {
        /// The member (a leader, or nothing happens).
        node: NodeId,
        /// The member named, or the next highest.
        to: Option<NodeId>,
        /// How long the old leader abstains.
        abstain: Duration,
    },
    /// Every partition and cut is removed and links become reliable again.
    Heal,
}

impl Simulation {
    /// Applies one action. Actions on crashed members, or that do not fit (a restart
    /// of a live member), do nothing.
    pub fn apply(&mut self, action: &Action) -> Result<(), SimError> {
        match *action {
            Action::Advance(duration) => self.run_for(duration),
            Action::Crash(id) => self.crash(id)?,
            Action::Restart(id) => self.restart(id)?,
            Action::RestartDurable(id) => self.restart_durable(id)?,
            Action::Partition { mask } => {
                let side: Vec<NodeId> = self
                    .members()
                    .iter()
                    .enumerate()
                    .filter(|&(index, _)| index < 64 && mask & (1 << index) != 0)
                    .map(|(_, &id)| id)
                    .collect();
                self.partition(&[&side])?;
            }
            Action::Cut { from, to } => self.cut(from, to)?,
            Action::CutBoth { a, b } => self.cut_both(a, b)?,
            Action::Loss(percent) => self.update_default_link(|link| {
                link.loss = f64::from(percent.min(100)) / 100.0;
            }),
            Action::Duplicate(percent) => self.update_default_link(|link| {
                link.duplicate = f64::from(percent.min(100)) / 100.0;
            }),
            Action::Jitter(jitter) => self.update_default_link(|link| link.jitter = jitter),
            Action::Reorder(spread) => {
                let nominal = self.message_delay();
                let spread = spread.min(nominal);
                self.update_default_link(|link| {
                    link.delay = nominal - spread;
                    link.jitter = spread;
                });
            }
            Action::Drift { node, ppm } => {
                let ppm = ppm.clamp(-900_000, 1_000_000);
                self.set_clock_drift(node, f64::from(ppm) / 1e6)?;
            }
            Action::ClockStep { node, by } => {
                // At most a day, as any timeout (`Config::MAX_DURATION`).
                self.step_clock(node, by.min(bully_core::Config::MAX_DURATION))?;
            }
            Action::Suspect { node, suspect } => {
                if self.is_up(node) && node != suspect {
                    // Marked first: the wrong report's consequences are checked
                    // outside the synchronous model.
                    self.mark_faulted();
                    self.command(node, |n, now| n.suspect(now, suspect))??;
                }
            }
            Action::StartElection(id) => {
                if self.is_up(id) {
                    self.command(id, |node, now| node.start_election(now))?;
                }
            }
            Action::StepDown(id) => {
                let leads = self
                    .node(id)
                    .is_some_and(|node| node.role() == bully_core::Role::Leader);
                if leads {
                    // The resigner leaves the elections and may come back into one
                    // that no longer asks it, as a restarted member does.
                    self.mark_faulted();
                    self.command(id, |node, now| node.step_down(now))?;
                }
            }
            Action::HandOver { node, to, abstain } => {
                let leads = self
                    .node(node)
                    .is_some_and(|leader| leader.role() == bully_core::Role::Leader);
                if leads {
                    // As a step-down: the old leader leaves the elections.
                    self.mark_faulted();
                    let _ =
                        self.command(node, |leader, now| leader.hand_over(now, to, now + abstain))?;
                }
            }
            Action::Heal => self.heal_all(),
        }
        Ok(())
    }

    fn update_default_link(&mut self, update: impl FnOnce(&mut LinkConfig)) {
        let mut link = self.network.default_link();
        update(&mut link);
        self.change_default_link(link);
    }

    /// Removes every partition and cut and makes the default link reliable again,
    /// with the [message delay](Self::message_delay). Clocks keep their drift.
    pub fn heal_all(&mut self) {
        self.heal();
        let delay = self.message_delay();
        self.change_default_link(LinkConfig::reliable(delay));
    }

    /// Heals everything, then runs until every live member has agreed on one
    /// leader and stayed agreed for a whole [`settle_bound`](Self::settle_bound),
    /// or `2 * settle_bound` passes. Measures from the moment the last message sent
    /// under the faults has landed, or the last abstention of a live member
    /// ended ([`Node::abstain_until`](bully_core::Node::abstain_until)), whichever is later.
    pub fn heal_and_settle(&mut self) -> Settle {
        let slowest = self.network.default_link().max_delay();
        self.heal_all();
        // Messages already in flight keep the delay they were sent with.
        self.run_for(slowest);
        // A member that abstains (a hand-over, `Node::abstain_until`) stays
        // out by its owner's choice, not by a fault: the bound counts from
        // the end of the last abstention.
        let abstaining_until = self
            .members()
            .iter()
            .filter_map(|&id| self.node(id).filter(|_| self.is_up(id)))
            .filter_map(bully_core::Node::abstaining_until)
            .max();
        if let Some(until) = abstaining_until.filter(|&until| until > self.now) {
            self.run_for(until - self.now);
        }
        let healed_at = self.now;
        let bound = self.settle_bound();
        let give_up = healed_at + bound * 2;
        let sitting = self.sitting_leader();
        let mut agreed_since = self.agreed_leader().map(|_| self.now);
        let mut leader = self.agreed_leader();
        while self.now < give_up {
            let Some(next) = self.next_instant().filter(|&next| next <= give_up) else {
                self.now = give_up;
                break;
            };
            self.now = self.now.max(next);
            self.run_instant(next);
            let now_agreed = self.agreed_leader();
            if now_agreed != leader {
                leader = now_agreed;
                agreed_since = now_agreed.map(|_| self.now);
            }
            if agreed_since.is_some_and(|since| self.now >= since + bound) {
                break;
            }
        }
        Settle {
            sitting,
            leader,
            converged_after: agreed_since.map(|since| since - healed_at),
            bound,
        }
    }
}

impl Simulation {
    /// The leader every live member names now, if it is sure to keep leading
    /// on a healed network (reliable links of the message delay): its next
    /// heartbeat round (a heartbeat interval on its clock, at the latest)
    /// reaches every other live member before any timer of theirs fires, so
    /// none of them suspects it for what the faults did; and, with a quorum,
    /// its lease outlasts that round's acknowledgements. A leader that falls
    /// short may lose its leadership to the faults' after-effects (a lease
    /// lapsing, a follower cut off until the heal timing out on it) whatever
    /// the preemption policy.
    fn sitting_leader(&self) -> Option<NodeId> {
        let id = self.agreed_leader()?;
        let index = self.index(id).ok()?;
        let slot = &self.slots[index];
        let node = slot.node.as_ref()?;
        let config = node.config();
        let local = slot.clock.local(self.now);
        let next_round = slot
            .clock
            .real(local.checked_add(config.heartbeat_interval())?);
        let heard = next_round.checked_add(self.message_delay())?;
        let followers_wait = self.slots.iter().enumerate().all(|(other, slot)| {
            other == index || !slot.up || slot.timer_real.is_none_or(|at| at > heard)
        });
        if !followers_wait {
            return None;
        }
        match node.lease_until() {
            Some(lease) => {
                let renewed = next_round.checked_add(config.round_trip())?;
                (renewed < slot.clock.real(lease)).then_some(id)
            }
            // Without a quorum nothing but a message ends a leadership.
            None if config.quorum() == bully_core::Quorum::None => Some(id),
            None => None,
        }
    }
}

/// How a cluster recovered once the faults stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settle {
    /// The leader every live member named when the faults stopped (once the
    /// messages sent under them had landed), if they named one and nothing the
    /// faults left behind can end its leadership: its next heartbeat round
    /// reaches every member before any of their timers fires and, with a
    /// quorum, its lease outlasts that round's acknowledgements. Under
    /// `Preemption::Never` it is the one that keeps leading (L1: once faults stop,
    /// every live connected member names the same leader; docs/correctness.md,
    /// section 1).
    pub sitting: Option<NodeId>,
    /// The leader everyone agreed on at the end, if they did.
    pub leader: Option<NodeId>,
    /// How long after the faults stopped the final agreement began.
    pub converged_after: Option<Duration>,
    /// The bound it had to meet ([`Simulation::settle_bound`]).
    pub bound: Duration,
}

impl Settle {
    /// Whether agreement came within the bound (the L2 property: L1 within the
    /// bound `Config` computes).
    pub fn within_bound(&self) -> bool {
        self.converged_after
            .is_some_and(|after| after <= self.bound)
    }
}

/// What kinds of fault a random schedule may contain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultMix {
    /// Crashes.
    pub crashes: bool,
    /// Restarts of crashed members, with and without their persisted term.
    pub restarts: bool,
    /// Jitter within the timing model ([`Action::Reorder`]: messages overtake
    /// each other but arrive within `max_message_delay`).
    pub reorder: bool,
    /// Partitions, cuts, loss, duplication and jitter beyond the timing model.
    pub network: bool,
    /// Wrong failure-detector reports, elections, step-downs and hand-overs
    /// on command.
    pub commands: bool,
    /// Each member's clock drifts at its own rate within the configuration's
    /// bound (`Config::clock_drift`), drawn at the start of the schedule: a third
    /// of the members at `-ρ`, a third at `+ρ`, a third in between.
    pub drift: bool,
    /// A member's clock steps forward ([`Action::ClockStep`]: outside A2 while
    /// the member runs).
    pub clock_steps: bool,
}

impl FaultMix {
    /// Everything.
    pub const ALL: FaultMix = FaultMix {
        crashes: true,
        restarts: true,
        reorder: true,
        network: true,
        commands: true,
        drift: true,
        clock_steps: true,
    };
    /// Crashes (no restarts), reordering within the timing model and clocks
    /// drifting within the bound: the synchronous setting in which Bully
    /// promises one leader per term.
    pub const CRASH_STOP: FaultMix = FaultMix {
        crashes: true,
        restarts: false,
        reorder: true,
        network: false,
        commands: false,
        drift: true,
        clock_steps: false,
    };
}

/// A seeded random fault schedule for `members` running `config`: with
/// [`FaultMix::drift`], one [`Action::Drift`] per member first; then `len`
/// actions, separated by random pauses of up to `max_pause`, drawing only the
/// kinds `mix` allows. The configuration gives the timing model: `T_M`
/// (`max_message_delay`) for jitter within and beyond it, ρ (`clock_drift`) for
/// the drifts, the leader timeout for the size of clock steps. The same seed
/// always gives the same schedule.
pub fn random_schedule(
    seed: u64,
    members: &[NodeId],
    len: usize,
    max_pause: Duration,
    config: &Config,
    mix: FaultMix,
) -> Vec<Action> {
    let mut schedule = Vec::with_capacity(len * 2 + members.len());
    if mix.drift {
        schedule.extend(clock_drifts(seed, members, config.clock_drift()));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let pick = |rng: &mut ChaCha8Rng| members[rng.random_range(0..members.len())];
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let pause_nanos = nanos(max_pause).max(1);
    let max_message_delay = config.max_message_delay();
    let kinds = [
        mix.crashes,
        mix.restarts,
        mix.reorder,
        mix.network,
        mix.commands,
        mix.clock_steps,
    ];
    let enabled: Vec<usize> = (0..kinds.len()).filter(|&k| kinds[k]).collect();
    for _ in 0..len {
        schedule.push(Action::Advance(Duration::from_nanos(
            rng.random_range(0..pause_nanos),
        )));
        if enabled.is_empty() {
            continue;
        }
        let action = match enabled[rng.random_range(0..enabled.len())] {
            0 => Action::Crash(pick(&mut rng)),
            1 => match rng.random_range(0..2) {
                0 => Action::Restart(pick(&mut rng)),
                _ => Action::RestartDurable(pick(&mut rng)),
            },
            // Delays between T_M/2 and T_M: reordered, never late.
            2 => Action::Reorder(Duration::from_nanos(
                rng.random_range(0..=nanos(max_message_delay) / 2),
            )),
            3 => match rng.random_range(0..7) {
                0 => Action::Partition {
                    mask: rng.random_range(0..u64::MAX),
                },
                1 => Action::Cut {
                    from: pick(&mut rng),
                    to: pick(&mut rng),
                },
                2 => Action::CutBoth {
                    a: pick(&mut rng),
                    b: pick(&mut rng),
                },
                3 => Action::Loss(rng.random_range(1..=40)),
                4 => Action::Duplicate(rng.random_range(1..=30)),
                // Past T_M: some messages arrive late.
                5 => Action::Jitter(Duration::from_nanos(
                    rng.random_range(1..=nanos(max_message_delay) * 3),
                )),
                _ => Action::Heal,
            },
            4 => match rng.random_range(0..4) {
                0 => Action::Suspect {
                    node: pick(&mut rng),
                    suspect: pick(&mut rng),
                },
                1 => Action::StartElection(pick(&mut rng)),
                2 => Action::StepDown(pick(&mut rng)),
                // Named or not, to a member that may be down: the abstention
                // lasts up to six leader timeouts.
                _ => Action::HandOver {
                    node: pick(&mut rng),
                    to: rng.random_bool(0.5).then(|| pick(&mut rng)),
                    abstain: Duration::from_nanos(
                        rng.random_range(0..=nanos(config.leader_timeout()) * 6),
                    ),
                },
            },
            _ => Action::ClockStep {
                node: pick(&mut rng),
                by: Duration::from_nanos(rng.random_range(1..=nanos(config.leader_timeout()) * 2)),
            },
        };
        schedule.push(action);
    }
    schedule
}

/// Each member's clock rate, within `[-bound, +bound]`: the extremes, where the
/// lease argument is tightest, for two thirds of the members, and a uniform
/// draw between them for the rest. From a generator of its own, so that the
/// rest of a schedule does not depend on whether its clocks drift.
fn clock_drifts(seed: u64, members: &[NodeId], bound: f64) -> Vec<Action> {
    // ρ is at most 0.1 in a valid configuration: 100,000 ppm.
    let bound = (bound.clamp(0.0, 0.1) * 1e6).round() as i32;
    if bound == 0 {
        return Vec::new();
    }
    // "clocks" in ASCII: a stream apart from the schedule's.
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x636c_6f63_6b73);
    members
        .iter()
        .map(|&node| {
            let ppm = match rng.random_range(0..3) {
                0 => -bound,
                1 => bound,
                _ => rng.random_range(-bound..=bound),
            };
            Action::Drift { node, ppm }
        })
        .collect()
}
