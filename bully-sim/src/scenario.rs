//! The sources' scenarios (README.md, "Sources"), measured: the election that
//! Table 1 of Soundarabai et al. ("Improved Bully Election Algorithm for
//! Distributed Systems") counts, the best and worst cases of the lecture notes
//! "Election Algorithm in Distributed Systems", a failover that every member
//! detects by timeout, and the experiments of the course exercise "Bully
//! Algorithm Dance". Tests assert on these and the `simulate` program prints
//! them, so both report the same runs.

use std::time::Duration;

use bully_core::{Config, MessageCounts, MessageKind, NodeId};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::{SimError, Simulation};

/// What one measured election cost.
#[derive(Clone, Debug, PartialEq)]
pub struct ElectionReport {
    /// Messages sent from the trigger until the election's last message, by kind.
    /// Heartbeats are left out: they are the detector's steady state, not the
    /// election's cost.
    pub messages: MessageCounts,
    /// Time from the trigger until every live member named the same leader, in
    /// message delays (T_M, the message time: the longest a message takes).
    pub delays: f64,
    /// The longest chain of dependent messages (the Bully Algorithm Dance's
    /// "elapsed time" measure).
    pub depth: u64,
    /// The leader everyone agreed on, if they did.
    pub leader: Option<NodeId>,
    /// Leader changes the cluster saw: leaderships followed by at least one member
    /// other than the leader.
    pub leader_changes: u64,
}

impl ElectionReport {
    /// All messages of the election.
    pub fn total(&self) -> u64 {
        self.messages.total()
    }
}

/// Members `1..=n`.
pub fn members(n: u64) -> impl Iterator<Item = NodeId> {
    (1..=n).map(NodeId)
}

/// The setting of Soundarabai et al.'s Table 1: `n` live members `1..=n` with no leader (the crashed
/// former coordinator is outside the set), and member `initiator` alone starts an
/// election.
pub fn one_initiator(
    config: &Config,
    n: u64,
    initiator: NodeId,
) -> Result<ElectionReport, SimError> {
    one_initiator_run(config, n, initiator, false).map(|(report, _)| report)
}

/// [`one_initiator`] with the trace on, handing back the simulation too: its trace
/// is the election's message log (Soundarabai et al.'s figures 3, 4 and 6 are
/// such logs).
pub fn one_initiator_traced(
    config: &Config,
    n: u64,
    initiator: NodeId,
) -> Result<(ElectionReport, Simulation), SimError> {
    one_initiator_run(config, n, initiator, true)
}

fn one_initiator_run(
    config: &Config,
    n: u64,
    initiator: NodeId,
    traced: bool,
) -> Result<(ElectionReport, Simulation), SimError> {
    let mut sim = Simulation::new(0, members(n), config.clone())?;
    if traced {
        sim.enable_trace();
    }
    // Up and idle: running processes that know of no leader.
    sim.wake_all();
    let report = measure(&mut sim, config, |sim| {
        sim.command(initiator, |node, now| node.start_election(now))
            .map(|_| ())
    })?;
    Ok((report, sim))
}

/// A settled cluster of `1..=n` led by `n`: started together and run until they
/// agree.
pub fn settled(config: &Config, n: u64, seed: u64) -> Result<Simulation, SimError> {
    let mut sim = Simulation::new(seed, members(n), config.clone())?;
    sim.start_all();
    let bound = sim.settle_bound();
    sim.run_until_true(bound, |sim| sim.agreed_leader().is_some());
    // Let the start-up election's stragglers land before anything is measured:
    // late answers, and the rest of a ring's second pass, which goes on after
    // every member has learnt the leader from its heartbeats. Quiet is the first
    // instant with nothing in flight (heartbeats land between two beats).
    sim.run_for(config.coordinator_timeout());
    sim.run_until_true(bound, |sim| sim.in_flight() == 0);
    Ok(sim)
}

/// From a settled cluster of `1..=n`: the members in `crashed` (the leader `n`
/// among them, or not) crash, and at the same instant each member in `noticers`
/// notices that the leader is down (an external failure detector's report).
pub fn detection(
    config: &Config,
    n: u64,
    crashed: &[NodeId],
    noticers: &[NodeId],
) -> Result<ElectionReport, SimError> {
    detection_run(config, n, crashed, noticers).map(|(report, _)| report)
}

/// [`detection`], handing back the simulation too, to re-check the run.
pub fn detection_run(
    config: &Config,
    n: u64,
    crashed: &[NodeId],
    noticers: &[NodeId],
) -> Result<(ElectionReport, Simulation), SimError> {
    let mut sim = settled(config, n, 0)?;
    let leader = NodeId(n);
    let report = measure(&mut sim, config, |sim| {
        for &id in crashed {
            sim.crash(id)?;
        }
        for &id in noticers {
            sim.command(id, |node, now| node.suspect(now, leader))??;
        }
        Ok(())
    })?;
    Ok((report, sim))
}

/// The lecture notes' best case: the second-highest member notices that the
/// leader crashed. The notes expect `N - 2` Coordinator messages in one message
/// time.
pub fn best_case(config: &Config, n: u64) -> Result<ElectionReport, SimError> {
    detection(config, n, &[NodeId(n)], &[NodeId(n - 1)])
}

/// The lecture notes' worst case: the lowest member notices that the leader
/// crashed. The notes expect `O(N^2)` messages and "approximately 5 message
/// transmission times".
pub fn worst_case(config: &Config, n: u64) -> Result<ElectionReport, SimError> {
    detection(config, n, &[NodeId(n)], &[NodeId(1)])
}

/// Failover as it happens in a real cluster: the leader of a settled `1..=n`
/// crashes, nobody is told, and every member finds out from its own leader
/// timeout. Staggering (`Config::with_stagger_detection`) decides whether that is
/// the best case or the `O(N^2)` one.
pub fn failover(config: &Config, n: u64, seed: u64) -> Result<ElectionReport, SimError> {
    failover_run(config, n, seed, false).map(|(report, _)| report)
}

/// [`failover`] with the trace on from the crash, handing back the simulation too,
/// so a caller can see when the first member noticed (its first
/// `Event::LeaderLost`) and split the time into detection and election.
pub fn failover_traced(
    config: &Config,
    n: u64,
    seed: u64,
) -> Result<(ElectionReport, Simulation), SimError> {
    failover_run(config, n, seed, true)
}

fn failover_run(
    config: &Config,
    n: u64,
    seed: u64,
    traced: bool,
) -> Result<(ElectionReport, Simulation), SimError> {
    let mut sim = settled(config, n, seed)?;
    if traced {
        sim.enable_trace();
    }
    let report = measure(&mut sim, config, |sim| sim.crash(NodeId(n)))?;
    Ok((report, sim))
}

/// One run of an experiment of the Bully Algorithm Dance: what it cost, whom the die picked, and the
/// simulation itself, so a run can be re-checked (its trace, its nodes).
#[derive(Debug)]
#[non_exhaustive]
pub struct DanceRun {
    /// What the election cost.
    pub report: ElectionReport,
    /// Experiment 1: the order in which the dancers stood up; empty otherwise.
    pub order: Vec<NodeId>,
    /// The dancers that sat down (crashed): the leader, and in experiment 5 one
    /// more. Empty in experiments 1 and 2.
    pub crashed: Vec<NodeId>,
    /// The dancers that noticed the leader was gone (experiments 3 to 5).
    pub noticers: Vec<NodeId>,
    /// The simulation, after the run.
    pub sim: Simulation,
}

/// The experiments of the course exercise "Bully Algorithm Dance" with six
/// dancers (`number` 1 to 5; the name keeps the exercise's old number, 004 in
/// README.md's "Sources"). `seed` plays the die; the run says which dancers it
/// picked.
///
/// 1. Start-up from everyone sitting, one dancer at a time in a random order (a
///    dancer not yet started is down, as a seated dancer is).
/// 2. Start-up with everyone standing up at once.
/// 3. From everyone active, the leader sits down and one random dancer notices.
/// 4. The leader sits down and two random dancers notice at the same moment.
/// 5. The leader and one other dancer sit down and one random dancer notices.
///
/// ```
/// use bully_core::Config;
/// use bully_sim::scenario;
///
/// let run = scenario::dance_experiment(&Config::default(), 5, 7)?;
/// // Re-check the run: the dancers that sat down are down, the others agree.
/// for &id in &run.crashed {
///     assert!(!run.sim.is_up(id));
/// }
/// assert_eq!(run.noticers.len(), 1);
/// assert_eq!(run.sim.agreed_leader(), run.report.leader);
/// # Ok::<(), bully_sim::SimError>(())
/// ```
pub fn dance_experiment(config: &Config, number: u8, seed: u64) -> Result<DanceRun, SimError> {
    const DANCERS: u64 = 6;
    let leader = NodeId(DANCERS);
    let mut die = ChaCha8Rng::seed_from_u64(seed);
    let mut others: Vec<NodeId> = members(DANCERS - 1).collect();
    others.shuffle(&mut die);
    let detect = |crashed: Vec<NodeId>, noticers: Vec<NodeId>| {
        let (report, sim) = detection_run(config, DANCERS, &crashed, &noticers)?;
        Ok(DanceRun {
            report,
            order: Vec::new(),
            crashed,
            noticers,
            sim,
        })
    };
    match number {
        1 => {
            let mut sim = Simulation::new(seed, members(DANCERS), config.clone())?;
            let mut order: Vec<NodeId> = members(DANCERS).collect();
            order.shuffle(&mut die);
            let settle = sim.settle_bound();
            let report = measure(&mut sim, config, |sim| {
                for &id in &order {
                    sim.start(id)?;
                    sim.run_until_true(settle, |sim| sim.agreed_leader().is_some());
                }
                Ok(())
            })?;
            Ok(DanceRun {
                report,
                order,
                crashed: Vec::new(),
                noticers: Vec::new(),
                sim,
            })
        }
        2 => {
            let mut sim = Simulation::new(seed, members(DANCERS), config.clone())?;
            let report = measure(&mut sim, config, |sim| {
                sim.start_all();
                Ok(())
            })?;
            Ok(DanceRun {
                report,
                order: Vec::new(),
                crashed: Vec::new(),
                noticers: Vec::new(),
                sim,
            })
        }
        3 => detect(vec![leader], others[..1].to_vec()),
        4 => detect(vec![leader], others[..2].to_vec()),
        5 => detect(vec![leader, others[0]], others[1..2].to_vec()),
        _ => Err(SimError::UnknownExperiment(number)),
    }
}

/// Runs `trigger`, then the cluster (every member running `config`) until every
/// live member agrees, then long enough for the election's last messages (late
/// answers, restarts) to land.
fn measure(
    sim: &mut Simulation,
    config: &Config,
    trigger: impl FnOnce(&mut Simulation) -> Result<(), SimError>,
) -> Result<ElectionReport, SimError> {
    sim.reset_counts();
    trigger(sim)?;
    let bound = sim.settle_bound();
    sim.run_until_true(bound, |sim| sim.agreed_leader().is_some());
    let delays = sim.in_delays(sim.since_reset());
    let leader = sim.agreed_leader();
    sim.run_for(config.coordinator_timeout() + config.answer_timeout() + tail(config));
    // A ring's second pass can still be going round: members learn the leader
    // from its heartbeats before the pass reaches them. Count it to the end.
    sim.run_until_true(bound, |sim| sim.in_flight() == 0);
    let mut messages = *sim.sent();
    messages[MessageKind::Heartbeat] = 0;
    Ok(ElectionReport {
        messages,
        delays,
        depth: sim.max_depth(),
        leader,
        leader_changes: sim.leader_changes(),
    })
}

/// Extra time for messages still in flight at agreement to land.
fn tail(config: &Config) -> Duration {
    config.max_message_delay() * 2
}
