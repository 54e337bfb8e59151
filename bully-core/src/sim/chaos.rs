//! Fault injection: a vocabulary of actions on a [`Simulation`], seeded random
//! schedules of them, and the liveness measurement that follows a schedule (heal
//! everything, then time how long the cluster takes to agree and whether it stays
//! agreed).

use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{LinkConfig, SimError, Simulation};
use crate::message::NodeId;

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
    /// Every message takes the link delay plus up to this much more (reordering;
    /// beyond the timing model's `max_message_delay` it is a timing fault).
    Jitter(Duration),
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
                    .is_some_and(|node| node.role() == crate::Role::Leader);
                if leads {
                    // The resigner leaves the elections and may come back into one
                    // that no longer asks it, as a restarted member does.
                    self.mark_faulted();
                    self.command(id, |node, now| node.step_down(now))?;
                }
            }
            Action::Heal => self.heal_all(),
        }
        Ok(())
    }

    fn update_default_link(&mut self, update: impl FnOnce(&mut LinkConfig)) {
        let mut link = self.network.default_link();
        update(&mut link);
        self.set_default_link(link);
    }

    /// Removes every partition and cut and makes the default link reliable again
    /// (its delay unchanged).
    pub fn heal_all(&mut self) {
        self.heal();
        let delay = self.network.default_link().delay;
        self.set_default_link(LinkConfig::reliable(delay));
    }

    /// Heals everything, then runs until every live member has agreed on one
    /// leader and stayed agreed for a whole [`settle_bound`](Self::settle_bound),
    /// or `2 * settle_bound` passes. Measures from the moment the last message sent
    /// under the faults has landed.
    pub fn heal_and_settle(&mut self) -> Settle {
        let slowest = self.network.default_link().max_delay();
        self.heal_all();
        // Messages already in flight keep the delay they were sent with.
        self.run_for(slowest);
        let healed_at = self.now;
        let bound = self.settle_bound();
        let give_up = healed_at + bound * 2;
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
            leader,
            converged_after: agreed_since.map(|since| since - healed_at),
            bound,
        }
    }
}

/// How a cluster recovered once the faults stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settle {
    /// The leader everyone agreed on at the end, if they did.
    pub leader: Option<NodeId>,
    /// How long after the faults stopped the final agreement began.
    pub converged_after: Option<Duration>,
    /// The bound it had to meet ([`Simulation::settle_bound`]).
    pub bound: Duration,
}

impl Settle {
    /// Whether agreement came within the bound (the L2 property).
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
    /// Jitter within the timing model (messages overtake each other but arrive
    /// within `max_message_delay`).
    pub reorder: bool,
    /// Partitions, cuts, loss, duplication and jitter beyond the timing model.
    pub network: bool,
    /// Wrong failure-detector reports, elections and step-downs on command.
    pub commands: bool,
}

impl FaultMix {
    /// Everything.
    pub const ALL: FaultMix = FaultMix {
        crashes: true,
        restarts: true,
        reorder: true,
        network: true,
        commands: true,
    };
    /// Crashes (no restarts) and reordering within the timing model: the
    /// synchronous setting in which Bully promises one leader per term.
    pub const CRASH_STOP: FaultMix = FaultMix {
        crashes: true,
        restarts: false,
        reorder: true,
        network: false,
        commands: false,
    };
}

/// A seeded random fault schedule for `members`: `len` actions, separated by
/// random pauses of up to `max_pause`, drawing only the kinds `mix` allows. The
/// same seed always gives the same schedule.
pub fn random_schedule(
    seed: u64,
    members: &[NodeId],
    len: usize,
    max_pause: Duration,
    max_message_delay: Duration,
    mix: FaultMix,
) -> Vec<Action> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut schedule = Vec::with_capacity(len * 2);
    let pick = |rng: &mut ChaCha8Rng| members[rng.random_range(0..members.len())];
    let pause_nanos = u64::try_from(max_pause.as_nanos())
        .unwrap_or(u64::MAX)
        .max(1);
    for _ in 0..len {
        schedule.push(Action::Advance(Duration::from_nanos(
            rng.random_range(0..pause_nanos),
        )));
        let kinds = [
            mix.crashes,
            mix.restarts,
            mix.reorder,
            mix.network,
            mix.commands,
        ];
        let enabled: Vec<usize> = (0..kinds.len()).filter(|&k| kinds[k]).collect();
        if enabled.is_empty() {
            continue;
        }
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let action = match enabled[rng.random_range(0..enabled.len())] {
            0 => Action::Crash(pick(&mut rng)),
            1 => match rng.random_range(0..2) {
                0 => Action::Restart(pick(&mut rng)),
                _ => Action::RestartDurable(pick(&mut rng)),
            },
            2 => Action::Jitter(Duration::from_nanos(
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
                5 => Action::Jitter(Duration::from_nanos(
                    rng.random_range(0..=nanos(max_message_delay) * 3),
                )),
                _ => Action::Heal,
            },
            _ => match rng.random_range(0..3) {
                0 => Action::Suspect {
                    node: pick(&mut rng),
                    suspect: pick(&mut rng),
                },
                1 => Action::StartElection(pick(&mut rng)),
                _ => Action::StepDown(pick(&mut rng)),
            },
        };
        schedule.push(action);
    }
    schedule
}
