//! A nemesis schedule: the cluster size, the commands' stop times, and the
//! faults, heals and waits one run inflicts on a cluster of real agents, all
//! drawn from one seed, so that printing the seed is enough to run the same
//! schedule again.
//!
//! [`Model`] is what the schedule knows of the cluster at each step: which
//! agents are down, which are paused (alone, or with their whole process
//! tree), and which relay links are cut. From it comes the *majority side*,
//! the members that may lead ([`Model::side`]), and so the member a fault
//! most often hits: the one expected to lead, the highest of that side (the
//! design's L3: with a quorum, the highest quorum-connected member leads).

use std::collections::BTreeSet;
use std::fmt;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The cluster sizes a schedule draws from.
pub(crate) const SIZES: [u64; 6] = [1, 2, 3, 4, 5, 7];

/// The most [`Action::KillJob`] steps in one schedule: fewer than the agent's
/// `child.failure_limit` (3), which the nemesis configures.
pub(crate) const MAX_JOBS_KILLED: usize = 2;

/// A link fault at the relay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cut {
    /// `from` can no longer reach `to`; `to` still reaches `from`.
    OneWay { from: u64, to: u64 },
    /// `a` and `b` no longer reach each other.
    BothWays { a: u64, b: u64 },
    /// Nobody reaches the member and it reaches nobody.
    Isolate(u64),
}

impl Cut {
    /// The directed links it cuts, in a cluster of members `1..=size`.
    pub(crate) fn links(self, size: u64) -> Vec<(u64, u64)> {
        match self {
            Cut::OneWay { from, to } => vec![(from, to)],
            Cut::BothWays { a, b } => vec![(a, b), (b, a)],
            Cut::Isolate(id) => (1..=size)
                .filter(|&peer| peer != id)
                .flat_map(|peer| [(id, peer), (peer, id)])
                .collect(),
        }
    }
}

impl fmt::Display for Cut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cut::OneWay { from, to } => write!(f, "{from} -> {to} (one way)"),
            Cut::BothWays { a, b } => write!(f, "{a} <-> {b} (both ways)"),
            Cut::Isolate(id) => write!(f, "every link of {id} (isolated)"),
        }
    }
}

/// In which order a whole-tree pause ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resume {
    /// The command's group first, its agent (and supervisor) `gap_ms` later:
    /// the command writes before anything can tell it its leadership is over.
    JobFirst { gap_ms: u64 },
    /// The agent and supervisor first, the command `gap_ms` later.
    AgentFirst { gap_ms: u64 },
    /// Every group at once.
    Together,
}

/// What kills the leader's command from outside the agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JobSignal {
    /// SIGKILL to its process group: it dies at once.
    Kill,
    /// SIGTERM to its process group: it finishes (its stop time) and exits 0.
    Term,
}

/// One thing the nemesis does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// `kill -9` of the agent process alone (its supervisor sees it die).
    Kill9(u64),
    /// SIGINT to the agent (Ctrl-C): it stops its command, resigns and leaves.
    Interrupt(u64),
    /// The agent starts again (after [`Action::Kill9`] or [`Action::Interrupt`]),
    /// with its data directory as it was; its command stops in `stop_ms`.
    Start { id: u64, stop_ms: u64 },
    /// The highest member is restarted: SIGTERM, `down_ms` down, started again
    /// with its data directory kept; its command then stops in `stop_ms`.
    RestartHighest { id: u64, down_ms: u64, stop_ms: u64 },
    /// The member's machine dies and its disk is lost: agent, supervisor and
    /// command are killed at once (SIGKILL), its data directory is deleted,
    /// and `down_ms` later its agent starts again without `bully-agent init`
    /// (as a pod rescheduled without its volume); its command then stops in
    /// `stop_ms`. It may have backed the leader's lease in acknowledgements
    /// it no longer knows of: it must wait a follower lease before it votes.
    LoseData { id: u64, down_ms: u64, stop_ms: u64 },
    /// SIGSTOP to the agent process alone: its supervisor and command run on.
    PauseAgent(u64),
    /// SIGCONT to the agent process.
    ResumeAgent(u64),
    /// SIGSTOP to the agent's whole tree: agent, supervisor and command, as
    /// when a machine pauses.
    PauseTree(u64),
    /// SIGCONT to that tree, in an order.
    ResumeTree { id: u64, resume: Resume },
    /// The leader's command is killed (or told to stop) from outside, as if it
    /// exited by itself: the agent starts it again in the same leadership.
    KillJob(JobSignal),
    /// `bully-agent handover` on the member the model expects to lead: its
    /// command stops, the next highest member elects at once, and it stays
    /// out of the elections for `abstain_ms` (then, under `preemption =
    /// "always"`, it takes the leadership back). Not the leader after all
    /// (a schedule often acts while leaders still change): refused, and
    /// nothing changes.
    HandOver { id: u64, abstain_ms: u64 },
    /// A link fault at the relay.
    Cut(Cut),
    /// The links of that fault forward again.
    Heal(Cut),
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Kill9(id) => write!(f, "kill -9 agent {id}"),
            Action::Interrupt(id) => write!(f, "Ctrl-C (SIGINT) agent {id}"),
            Action::Start { id, stop_ms } => {
                write!(
                    f,
                    "start agent {id} again (its command stops in {stop_ms} ms)"
                )
            }
            Action::RestartHighest {
                id,
                down_ms,
                stop_ms,
            } => write!(
                f,
                "restart the highest, {id}: SIGTERM, {down_ms} ms down, start (its command \
                 stops in {stop_ms} ms)"
            ),
            Action::LoseData {
                id,
                down_ms,
                stop_ms,
            } => write!(
                f,
                "crash {id} and lose its data directory: SIGKILL to its agent, supervisor and \
                 command, the directory deleted, {down_ms} ms down, start without init (its \
                 command stops in {stop_ms} ms)"
            ),
            Action::PauseAgent(id) => write!(f, "SIGSTOP agent {id} alone"),
            Action::ResumeAgent(id) => write!(f, "SIGCONT agent {id}"),
            Action::PauseTree(id) => {
                write!(
                    f,
                    "SIGSTOP agent {id}'s whole tree (agent, supervisor, command)"
                )
            }
            Action::ResumeTree { id, resume } => match resume {
                Resume::JobFirst { gap_ms } => {
                    write!(
                        f,
                        "SIGCONT {id}'s tree: its command first, the agent {gap_ms} ms later"
                    )
                }
                Resume::AgentFirst { gap_ms } => {
                    write!(
                        f,
                        "SIGCONT {id}'s tree: the agent first, its command {gap_ms} ms later"
                    )
                }
                Resume::Together => write!(f, "SIGCONT {id}'s tree, all at once"),
            },
            Action::KillJob(JobSignal::Kill) => write!(f, "SIGKILL the leader's command"),
            Action::KillJob(JobSignal::Term) => {
                write!(f, "SIGTERM the leader's command (it finishes and exits)")
            }
            Action::HandOver { id, abstain_ms } => {
                write!(
                    f,
                    "bully-agent handover on {id}, staying out {abstain_ms} ms"
                )
            }
            Action::Cut(cut) => write!(f, "cut {cut}"),
            Action::Heal(cut) => write!(f, "heal {cut}"),
        }
    }
}

/// One step: an action, then a wait before the next (once a command runs on
/// the majority side, if there is one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    /// What the nemesis does.
    pub(crate) action: Action,
    /// How long it waits afterwards.
    pub(crate) hold_ms: u64,
}

/// What the schedule knows of the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Model {
    /// Members `1..=size`.
    pub(crate) size: u64,
    /// Agents not running (killed, or left on SIGINT).
    pub(crate) down: BTreeSet<u64>,
    /// Agents stopped alone.
    pub(crate) agent_paused: BTreeSet<u64>,
    /// Agents stopped with their whole tree.
    pub(crate) tree_paused: BTreeSet<u64>,
    /// The link fault in force, if any.
    pub(crate) cut: Option<Cut>,
    /// Members that lost their data directory and may not have learned the
    /// term since: until nothing is in force, they may still be out of reach
    /// of every member that kept it.
    pub(crate) forgotten: BTreeSet<u64>,
}

impl Model {
    /// Every member up, every link working.
    pub(crate) fn new(size: u64) -> Model {
        Model {
            size,
            down: BTreeSet::new(),
            agent_paused: BTreeSet::new(),
            tree_paused: BTreeSet::new(),
            cut: None,
            forgotten: BTreeSet::new(),
        }
    }

    /// The majority quorum: more than half of the members.
    pub(crate) fn quorum(&self) -> u64 {
        self.size / 2 + 1
    }

    /// Whether `id`'s agent runs (started, not paused).
    pub(crate) fn runs(&self, id: u64) -> bool {
        !self.down.contains(&id)
            && !self.agent_paused.contains(&id)
            && !self.tree_paused.contains(&id)
    }

    /// Whether `from`'s datagrams reach `to` through the relay.
    pub(crate) fn reaches(&self, from: u64, to: u64) -> bool {
        self.cut
            .is_none_or(|cut| !cut.links(self.size).contains(&(from, to)))
    }

    /// The members that may lead: running, and linked both ways to enough
    /// running members to make a quorum with them. Empty when no member can
    /// reach a quorum (then no command may run once the leases run out).
    pub(crate) fn side(&self) -> BTreeSet<u64> {
        let running: Vec<u64> = (1..=self.size).filter(|&id| self.runs(id)).collect();
        running
            .iter()
            .copied()
            .filter(|&id| {
                let linked = running
                    .iter()
                    .filter(|&&peer| peer != id && self.reaches(id, peer) && self.reaches(peer, id))
                    .count();
                u64::try_from(linked).expect("few members") + 1 >= self.quorum()
            })
            .collect()
    }

    /// The member expected to lead: the highest of the majority side.
    pub(crate) fn expected_leader(&self) -> Option<u64> {
        self.side().last().copied()
    }

    /// How many faults are in force: agents down or paused, and a cut.
    pub(crate) fn faults_in_force(&self) -> usize {
        self.down.len()
            + self.agent_paused.len()
            + self.tree_paused.len()
            + usize::from(self.cut.is_some())
    }

    /// The model after `action`.
    pub(crate) fn apply(&mut self, action: &Action) {
        match *action {
            Action::Kill9(id) | Action::Interrupt(id) => {
                self.down.insert(id);
            }
            Action::Start { id, .. } => {
                self.down.remove(&id);
            }
            Action::PauseAgent(id) => {
                self.agent_paused.insert(id);
            }
            Action::ResumeAgent(id) => {
                self.agent_paused.remove(&id);
            }
            Action::PauseTree(id) => {
                self.tree_paused.insert(id);
            }
            Action::ResumeTree { id, .. } => {
                self.tree_paused.remove(&id);
            }
            Action::Cut(cut) => self.cut = Some(cut),
            Action::Heal(_) => self.cut = None,
            Action::LoseData { id, .. } => {
                self.forgotten.insert(id);
            }
            Action::RestartHighest { .. } | Action::KillJob(_) | Action::HandOver { .. } => {}
        }
        if self.faults_in_force() == 0 {
            // Every member up and linked: the members that lost their data
            // hear the term from those that kept it.
            self.forgotten.clear();
        }
    }
}

/// A fault in force, which a later step heals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Active {
    Down(u64),
    AgentPaused(u64),
    TreePaused(u64),
    Cut(Cut),
}

/// One drawn run: see the module docs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Schedule {
    /// The seed it was drawn from.
    pub(crate) seed: u64,
    /// Members `1..=size`.
    pub(crate) size: u64,
    /// Each member's command's stop time at boot (index: id - 1).
    pub(crate) stop_ms: Vec<u64>,
    /// The steps, in order. Every fault is healed by the last one.
    pub(crate) steps: Vec<Step>,
}

impl Schedule {
    /// Draws a schedule from `seed`: a size from [`SIZES`], stop times from 0 to
    /// `grace_ms`, two to five faults (one or two in force at a time), each
    /// healed later, with waits of up to a second between steps (two while no
    /// member can reach a quorum, so that the leases run out).
    pub(crate) fn draw(seed: u64, grace_ms: u64) -> Schedule {
        Schedule::draw_sized(seed, grace_ms, None)
    }

    /// [`Schedule::draw`], for a cluster of `size` (one of [`SIZES`]) if given:
    /// the size is drawn all the same, so that a seed whose drawn size is
    /// `size` gives the same schedule either way.
    pub(crate) fn draw_sized(seed: u64, grace_ms: u64, size: Option<u64>) -> Schedule {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let drawn = SIZES[rng.random_range(0..SIZES.len())];
        let size = size.unwrap_or(drawn);
        let stop_ms = (0..size).map(|_| rng.random_range(0..=grace_ms)).collect();
        let faults = rng.random_range(2..=5);
        let at_once = rng.random_range(1..=2);
        let mut model = Model::new(size);
        let mut active: Vec<Active> = Vec::new();
        let mut injected = 0;
        let mut steps = Vec::new();
        while injected < faults || !active.is_empty() {
            let full = active.len() >= at_once;
            let heal = injected >= faults || full || (!active.is_empty() && rng.random_bool(0.4));
            let fault = if heal {
                // A lost data directory puts nothing in force, so it may come
                // while as many faults are as the schedule allows: most often a
                // cut, which can leave the leader's lease resting on the
                // forgotten promise of the member that lost its data.
                (injected < faults && full && rng.random_bool(0.3))
                    .then(|| lose_data(&mut rng, &model, grace_ms))
                    .flatten()
            } else {
                let killed = steps
                    .iter()
                    .filter(|step: &&Step| matches!(step.action, Action::KillJob(_)))
                    .count();
                // A kind this cluster cannot take now (a cut among one member,
                // lost data with too much in force) is drawn again, a few
                // times, rather than cutting the schedule short.
                (0..8).find_map(|_| draw_fault(&mut rng, &model, grace_ms, killed))
            };
            let action = match fault {
                Some((action, new)) => {
                    injected += 1;
                    active.extend(new);
                    action
                }
                None if active.is_empty() => {
                    // Nothing can be done to this cluster now (never expected:
                    // a command can always be killed): end the schedule.
                    injected = faults;
                    continue;
                }
                None => {
                    let healed = active.remove(rng.random_range(0..active.len()));
                    heal_action(&mut rng, healed, grace_ms)
                }
            };
            model.apply(&action);
            let hold_ms = if model.side().is_empty() {
                rng.random_range(0..=2_000)
            } else {
                rng.random_range(0..=1_000)
            };
            steps.push(Step { action, hold_ms });
        }
        Schedule {
            seed,
            size,
            stop_ms,
            steps,
        }
    }
}

/// A member for a process fault: often the expected leader, else any member
/// whose agent runs.
fn target(rng: &mut ChaCha8Rng, model: &Model) -> Option<u64> {
    let running: Vec<u64> = (1..=model.size).filter(|&id| model.runs(id)).collect();
    if running.is_empty() {
        return None;
    }
    match model.expected_leader() {
        Some(leader) if rng.random_bool(0.6) => Some(leader),
        _ => Some(running[rng.random_range(0..running.len())]),
    }
}

/// Draws a fault that `model` allows, with the faults it puts in force; `None`
/// when the one drawn cannot be done now (the caller heals instead).
fn draw_fault(
    rng: &mut ChaCha8Rng,
    model: &Model,
    grace_ms: u64,
    jobs_killed: usize,
) -> Option<(Action, Option<Active>)> {
    // Kinds with weights: process faults, the highest's restart, the command
    // killed, (in clusters with links) a cut, and a member's data lost.
    const KINDS: [(u8, u32); 9] = [
        (0, 2), // kill -9
        (1, 2), // Ctrl-C
        (2, 2), // restart of the highest
        (3, 1), // agent paused alone
        (4, 2), // whole tree paused
        (5, 1), // the command killed
        (6, 3), // a link cut
        (7, 2), // a machine crashed and its data directory lost
        (8, 2), // a planned hand-over
    ];
    let total: u32 = KINDS.iter().map(|&(_, weight)| weight).sum();
    let mut pick = rng.random_range(0..total);
    let kind = KINDS
        .iter()
        .find(|&&(_, weight)| {
            if pick < weight {
                true
            } else {
                pick -= weight;
                false
            }
        })
        .map_or(0, |&(kind, _)| kind);
    match kind {
        0 => target(rng, model).map(|id| (Action::Kill9(id), Some(Active::Down(id)))),
        1 => target(rng, model).map(|id| (Action::Interrupt(id), Some(Active::Down(id)))),
        2 => {
            let id = model.size;
            model.runs(id).then(|| {
                let action = Action::RestartHighest {
                    id,
                    down_ms: rng.random_range(0..=2_500),
                    stop_ms: rng.random_range(0..=grace_ms),
                };
                (action, None)
            })
        }
        3 => target(rng, model).map(|id| (Action::PauseAgent(id), Some(Active::AgentPaused(id)))),
        4 => target(rng, model).map(|id| (Action::PauseTree(id), Some(Active::TreePaused(id)))),
        7 => lose_data(rng, model, grace_ms),
        // On the member expected to lead, which runs (not down, not paused).
        8 => model.expected_leader().map(|id| {
            let abstain_ms = rng.random_range(1_000..=3_000);
            (Action::HandOver { id, abstain_ms }, None)
        }),
        // At most [`MAX_JOBS_KILLED`]: the agent's back-off counts a command
        // that ends by itself within a second as a failure, and steps aside
        // for seconds after three in a row (`child.failure_limit`), which a
        // schedule must not confuse with a failover.
        5 if jobs_killed >= MAX_JOBS_KILLED => None,
        5 => {
            let signal = if rng.random_bool(0.5) {
                JobSignal::Kill
            } else {
                JobSignal::Term
            };
            model
                .expected_leader()
                .map(|_| (Action::KillJob(signal), None))
        }
        _ => {
            if model.size < 2 || model.cut.is_some() {
                return None;
            }
            let cut = draw_cut(rng, model);
            Some((Action::Cut(cut), Some(Active::Cut(cut))))
        }
    }
}

/// A member's machine crashed and its data directory lost ([`Action::LoseData`]),
/// if the cluster can survive it now.
///
/// The lost member learns the term from the others, who kept theirs; it
/// cannot from nobody. Alone, it is its cluster's whole memory, and its terms,
/// so its tokens, start over (the README says so): not a fault the tokens'
/// order can survive. With two faults in force, the members that know the
/// newest term may all be out of the lost member's reach while it elects with
/// one that missed it, which is the same loss (a quorum that forgot); one
/// fault in force still lets a cut leave the leader's lease on the lost
/// member's forgotten promise alone, the case the wait is for. For the same
/// reason a second member loses its data only once the first one could learn
/// the term again (nothing in force since): two members of two, both
/// forgetting while one is cut off, are a cluster that forgot.
fn lose_data(
    rng: &mut ChaCha8Rng,
    model: &Model,
    grace_ms: u64,
) -> Option<(Action, Option<Active>)> {
    if model.size < 2 || model.faults_in_force() > 1 {
        return None;
    }
    let id = lost_member(rng, model)?;
    if model.forgotten.iter().any(|&other| other != id) {
        return None;
    }
    let action = Action::LoseData {
        id,
        // Soon, while a lease the member backed may still run.
        down_ms: rng.random_range(0..=500),
        stop_ms: rng.random_range(0..=grace_ms),
    };
    Some((action, None))
}

/// The member whose data is lost: the expected leader less often than for the
/// other process faults, as the danger is a follower's forgotten promise, on
/// which the sitting leader's lease rests; any member whose agent runs.
fn lost_member(rng: &mut ChaCha8Rng, model: &Model) -> Option<u64> {
    let running: Vec<u64> = (1..=model.size).filter(|&id| model.runs(id)).collect();
    let leader = model.expected_leader();
    let followers: Vec<u64> = running
        .iter()
        .copied()
        .filter(|&id| Some(id) != leader)
        .collect();
    if followers.is_empty() || (leader.is_some() && rng.random_bool(0.3)) {
        return leader.or_else(|| running.first().copied());
    }
    Some(followers[rng.random_range(0..followers.len())])
}

/// A link fault, most often around the expected leader.
fn draw_cut(rng: &mut ChaCha8Rng, model: &Model) -> Cut {
    let any = |rng: &mut ChaCha8Rng| rng.random_range(1..=model.size);
    let first = match model.expected_leader() {
        Some(leader) if rng.random_bool(0.6) => leader,
        _ => any(rng),
    };
    let other = |rng: &mut ChaCha8Rng| {
        let peer = rng.random_range(1..model.size);
        if peer >= first { peer + 1 } else { peer }
    };
    match rng.random_range(0..3) {
        0 => {
            let peer = other(rng);
            if rng.random_bool(0.5) {
                Cut::OneWay {
                    from: first,
                    to: peer,
                }
            } else {
                Cut::OneWay {
                    from: peer,
                    to: first,
                }
            }
        }
        1 => Cut::BothWays {
            a: first,
            b: other(rng),
        },
        _ => Cut::Isolate(first),
    }
}

/// The step that ends a fault in force.
fn heal_action(rng: &mut ChaCha8Rng, healed: Active, grace_ms: u64) -> Action {
    match healed {
        Active::Down(id) => Action::Start {
            id,
            stop_ms: rng.random_range(0..=grace_ms),
        },
        Active::AgentPaused(id) => Action::ResumeAgent(id),
        Active::TreePaused(id) => {
            let resume = match rng.random_range(0..3) {
                0 => Resume::JobFirst {
                    gap_ms: rng.random_range(0..=150),
                },
                1 => Resume::AgentFirst {
                    gap_ms: rng.random_range(0..=150),
                },
                _ => Resume::Together,
            };
            Action::ResumeTree { id, resume }
        }
        Active::Cut(cut) => Action::Heal(cut),
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "seed {}: {} agent{} (quorum {}); commands stop in {:?} ms after SIGTERM (members 1..={})",
            self.seed,
            self.size,
            if self.size == 1 { "" } else { "s" },
            Model::new(self.size).quorum(),
            self.stop_ms,
            self.size
        )?;
        let mut model = Model::new(self.size);
        for (index, step) in self.steps.iter().enumerate() {
            let expected = model.expected_leader();
            model.apply(&step.action);
            let side = model.side();
            writeln!(
                f,
                "  step {:>2}: {} (expected leader before: {}) -> majority side {}; then {} ms",
                index + 1,
                step.action,
                expected.map_or_else(|| "none".to_owned(), |id| id.to_string()),
                if side.is_empty() {
                    "none".to_owned()
                } else {
                    format!("{side:?}")
                },
                step.hold_ms
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_draws_the_same_schedule_every_time_and_seeds_differ() {
        let a = Schedule::draw(42, 200);
        assert_eq!(a, Schedule::draw(42, 200));
        let differ = (0..20)
            .filter(|&seed| Schedule::draw(seed, 200) != a)
            .count();
        assert!(differ >= 19, "only {differ} of 20 other seeds differ");
    }

    #[test]
    fn a_size_given_replaces_the_drawn_one_and_nothing_else() {
        for seed in 0..50 {
            let drawn = Schedule::draw(seed, 200);
            assert_eq!(Schedule::draw_sized(seed, 200, Some(drawn.size)), drawn);
            let other = if drawn.size == 7 { 1 } else { 7 };
            assert_eq!(Schedule::draw_sized(seed, 200, Some(other)).size, other);
        }
    }

    #[test]
    fn every_schedule_heals_what_it_breaks_and_only_starts_what_is_down() {
        let mut sizes = BTreeSet::new();
        let mut kinds = BTreeSet::new();
        let mut most_killed = 0;
        // Data lost by a follower while a cut is in force: the case in which
        // voting at once could elect a second leader beside the one whose
        // lease rests on the forgotten promise.
        let mut lost_by_a_follower_during_a_cut = 0;
        for seed in 0..2_000 {
            let schedule = Schedule::draw(seed, 200);
            sizes.insert(schedule.size);
            let killed = schedule
                .steps
                .iter()
                .filter(|step| matches!(step.action, Action::KillJob(_)))
                .count();
            most_killed = most_killed.max(killed);
            assert_eq!(
                schedule.stop_ms.len(),
                usize::try_from(schedule.size).unwrap()
            );
            // At least one fault and its heal, at every size.
            assert!(schedule.steps.len() >= 2, "seed {seed}: {schedule}");
            assert!(schedule.stop_ms.iter().all(|&ms| ms <= 200));
            let mut model = Model::new(schedule.size);
            for step in &schedule.steps {
                match step.action {
                    Action::Start { id, stop_ms } => {
                        assert!(model.down.contains(&id), "seed {seed}: {id} is not down");
                        assert!(stop_ms <= 200);
                    }
                    Action::Kill9(id)
                    | Action::Interrupt(id)
                    | Action::PauseAgent(id)
                    | Action::PauseTree(id) => {
                        assert!(model.runs(id), "seed {seed}: {id} does not run");
                    }
                    Action::RestartHighest { id, .. } => {
                        assert_eq!(id, schedule.size);
                        assert!(model.runs(id));
                    }
                    Action::HandOver { id, abstain_ms } => {
                        assert_eq!(model.expected_leader(), Some(id), "seed {seed}");
                        assert!((1_000..=3_000).contains(&abstain_ms));
                    }
                    Action::LoseData {
                        id,
                        down_ms,
                        stop_ms,
                    } => {
                        assert!(model.runs(id), "seed {seed}: {id} does not run");
                        assert!(down_ms <= 500 && stop_ms <= 200);
                        assert!(schedule.size >= 2 && model.faults_in_force() <= 1);
                        assert!(
                            model.forgotten.iter().all(|&other| other == id),
                            "seed {seed}: {id} loses its data while {:?} may not know the term",
                            model.forgotten
                        );
                        if model.cut.is_some() && model.expected_leader() != Some(id) {
                            lost_by_a_follower_during_a_cut += 1;
                        }
                    }
                    Action::ResumeAgent(id) => assert!(model.agent_paused.contains(&id)),
                    Action::ResumeTree { id, .. } => assert!(model.tree_paused.contains(&id)),
                    Action::KillJob(_) => assert!(!model.side().is_empty()),
                    Action::Cut(_) => {
                        assert!(model.cut.is_none() && schedule.size > 1);
                    }
                    Action::Heal(cut) => assert_eq!(model.cut, Some(cut)),
                }
                let debug = format!("{:?}", step.action);
                let name: String = debug
                    .chars()
                    .take_while(char::is_ascii_alphanumeric)
                    .collect();
                kinds.insert(name);
                model.apply(&step.action);
            }
            assert_eq!(
                model,
                Model::new(schedule.size),
                "seed {seed}: not everything was healed"
            );
        }
        assert_eq!(sizes, BTreeSet::from(SIZES));
        assert!(most_killed <= MAX_JOBS_KILLED);
        // 137 with the draws of today.
        assert!(
            lost_by_a_follower_during_a_cut >= 70,
            "2,000 schedules lose a follower's data during a cut only \
             {lost_by_a_follower_during_a_cut} times"
        );
        assert_eq!(kinds.len(), 13, "every kind of step is drawn");
    }

    #[test]
    fn the_majority_side_follows_the_quorum() {
        // Three members: 3 isolated leaves {1, 2}, a quorum of two.
        let mut model = Model::new(3);
        assert_eq!(model.side(), BTreeSet::from([1, 2, 3]));
        model.apply(&Action::Cut(Cut::Isolate(3)));
        assert_eq!(model.side(), BTreeSet::from([1, 2]));
        // With 1 down as well, nobody reaches a quorum.
        model.apply(&Action::Kill9(1));
        assert!(model.side().is_empty());
        // A one-way cut breaks the pair for the side (both ways are needed).
        let mut model = Model::new(2);
        model.apply(&Action::Cut(Cut::OneWay { from: 2, to: 1 }));
        assert!(model.side().is_empty());
        assert!(model.reaches(1, 2) && !model.reaches(2, 1));
        // Five members, 5 paused with its tree and 4 cut from 3 both ways: 4
        // still reaches 1 and 2, a quorum of three with itself.
        let mut model = Model::new(5);
        model.apply(&Action::PauseTree(5));
        model.apply(&Action::Cut(Cut::BothWays { a: 4, b: 3 }));
        assert_eq!(model.side(), BTreeSet::from([1, 2, 3, 4]));
        assert_eq!(model.expected_leader(), Some(4));
        // A lone member is its own quorum.
        let mut model = Model::new(1);
        assert_eq!(model.side(), BTreeSet::from([1]));
        model.apply(&Action::PauseAgent(1));
        assert!(model.side().is_empty());
    }
}
