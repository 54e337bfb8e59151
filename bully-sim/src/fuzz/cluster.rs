//! [`cluster`]: a simulated cluster under faults and commands read from the
//! bytes, checked for safety after every step and for convergence after the
//! faults heal.

mod step;

use std::time::Duration;

use arbitrary::{Arbitrary, Result, Unstructured};
use bully_core::{Algorithm, Config, NodeId, Preemption, Quorum};

use self::step::{Step, apply, step};
use super::tracing;
use crate::Simulation;
use crate::chaos::Settle;

/// Steps one run applies before the quiet period.
const MAX_ACTIONS: usize = 48;

/// Fuzzes a simulated cluster of `members`, each built with `config`: the
/// bytes choose the simulation's seed and up to 48 steps (faults, commands,
/// late replays and forgeries; see [the module](crate::fuzz)). The
/// simulator's checks must hold after every step; then every fault heals and
/// the live members must agree on the right leader within
/// [`Config::settle_bound`]. Running out of bytes ends the steps; a broken
/// promise panics with a message that names it and the steps that led there.
///
/// # Panics
///
/// At once, whatever `data` holds, if [`Simulation::new`] refuses `config` for
/// `members` (the message carries the error), or if `config` has a
/// [`Quorum::AtLeast`] of half its voters or fewer (such a quorum promises no
/// exclusive leadership, which the simulator checks). Otherwise only on a
/// broken promise.
///
/// # Examples
///
/// ```
/// use bully_core::{Config, NodeId, Quorum};
///
/// let config = Config::default().with_quorum(Quorum::Majority);
/// let members = [NodeId(1), NodeId(2), NodeId(3)];
/// bully_sim::fuzz::cluster(&config, &members, b"any bytes at all: a fuzzer's input");
/// ```
pub fn cluster(config: &Config, members: &[NodeId], data: &[u8]) {
    if let Err(error) = Simulation::new(0, members.iter().copied(), config.clone()) {
        panic!(
            "bully_sim::fuzz::cluster: this configuration is refused for members \
             {members:?}: {error} ({config:?})"
        );
    }
    let electorate = Electorate::of(config, members);
    if let (Quorum::AtLeast(quorum), voters) = (config.quorum(), electorate.voters.len()) {
        assert!(
            quorum > voters / 2,
            "bully_sim::fuzz::cluster: Quorum::AtLeast({quorum}) of {voters} voters lets two \
             sides of a partition both elect, which the simulator checks; fuzz it with \
             bully_sim::fuzz::node, or take a quorum above half the voters"
        );
    }
    let _ = drive_cluster(&mut Unstructured::new(data), members, config);
}

/// Fuzzes a simulated cluster whose size and configuration the bytes choose
/// (the `cluster` target of this project's own fuzz crate): 2 to 6 members,
/// each algorithm, with or without a majority quorum, each preemption policy
/// (`AfterStable` of 800 ms), with or without staggered detection; then the
/// run of [`cluster`].
///
/// # Examples
///
/// ```
/// bully_sim::fuzz::cluster_with_arbitrary_config(b"any bytes at all: a fuzzer's input");
/// ```
pub fn cluster_with_arbitrary_config(data: &[u8]) {
    let _ = arbitrary_cluster(&mut Unstructured::new(data));
}

/// The setup of [`cluster_with_arbitrary_config`], then the run: the order in
/// which the bytes are read is the committed corpus's (`fuzz/corpus/cluster`).
fn arbitrary_cluster(u: &mut Unstructured<'_>) -> Result<()> {
    let n = u.int_in_range(2..=6u64)?;
    let algorithm = Algorithm::arbitrary(u)?;
    let quorum = bool::arbitrary(u)?;
    let preemption = match u.int_in_range(0..=3)? {
        0 => Preemption::Never,
        1 => Preemption::AfterStable(Duration::from_millis(800)),
        _ => Preemption::Always,
    };
    let config = Config::default()
        .with_algorithm(algorithm)
        .with_preemption(preemption)
        .with_quorum(if quorum {
            Quorum::Majority
        } else {
            Quorum::None
        })
        .with_stagger_detection(u.ratio(3, 4)?);
    let members: Vec<NodeId> = (1..=n).map(NodeId).collect();
    drive_cluster(u, &members, &config)
}

/// Who may vote and who may lead in a cluster of `members` under `config`,
/// and how many voters make a quorum: what L1 expects of the survivors.
struct Electorate {
    candidates: Vec<NodeId>,
    voters: Vec<NodeId>,
    quorum: Option<usize>,
}

impl Electorate {
    fn of(config: &Config, members: &[NodeId]) -> Electorate {
        let candidates: Vec<NodeId> = members
            .iter()
            .copied()
            .filter(|&id| !config.is_observer(id))
            .collect();
        let voters = if config.observers_vote() {
            members.to_vec()
        } else {
            candidates.clone()
        };
        let quorum = match config.quorum() {
            Quorum::None => None,
            Quorum::Majority => Some(voters.len() / 2 + 1),
            Quorum::AtLeast(n) => Some(n),
            // `Quorum` may grow kinds this harness cannot yet count.
            other => panic!("bully_sim::fuzz::cluster: a quorum it does not know: {other:?}"),
        };
        Electorate {
            candidates,
            voters,
            quorum,
        }
    }

    /// Whether the live members can elect a leader: a candidate is live, and
    /// with a quorum, a quorum of voters.
    fn electable(&self, sim: &Simulation) -> bool {
        let live_voters = self.voters.iter().filter(|&&id| sim.is_up(id)).count();
        self.highest_live(sim).is_some() && self.quorum.is_none_or(|quorum| live_voters >= quorum)
    }

    /// The highest live member that may lead.
    fn highest_live(&self, sim: &Simulation) -> Option<NodeId> {
        self.candidates
            .iter()
            .copied()
            .filter(|&id| sim.is_up(id))
            .max()
    }
}

fn drive_cluster(u: &mut Unstructured<'_>, members: &[NodeId], config: &Config) -> Result<()> {
    let seed = u64::arbitrary(u)?;
    let mut sim = Simulation::new(seed, members.iter().copied(), config.clone())
        .expect("a configuration checked before the run");
    let electorate = Electorate::of(config, members);
    sim.enable_trace();
    sim.start_all();
    let n = members.len();
    let preemption = config.preemption();
    let context = |sim: &Simulation, done: &[Step]| {
        format!(
            "{:?}, {:?}, {preemption:?}, n {n}, seed {seed}: {:?}\nsteps: {done:?}",
            config.algorithm(),
            config.quorum(),
            sim.violations()
        )
    };
    let mut done = Vec::new();
    for _ in 0..MAX_ACTIONS {
        if u.is_empty() {
            break;
        }
        let step = step(u, members)?;
        apply(&mut sim, &step);
        done.push(step);
        if tracing() && !sim.violations().is_empty() {
            for record in sim.trace() {
                eprintln!("{:>9} us {:?}", record.at_us, record.entry);
            }
        }
        assert!(
            sim.violations().is_empty(),
            "the simulator's checks: {}",
            context(&sim, &done)
        );
    }
    if tracing() {
        eprintln!(
            "cluster {:?}, {:?}, {preemption:?}, n {n}: {} steps {done:?}",
            config.algorithm(),
            config.quorum(),
            done.len()
        );
    }
    let healed_at = sim.trace().len();
    let settle = sim.heal_and_settle();
    if tracing() {
        eprintln!("{}", settle_story(&sim, healed_at));
    }
    assert!(
        sim.violations().is_empty(),
        "the simulator's checks, while settling: {}",
        context(&sim, &done)
    );
    let electable = electorate.electable(&sim);
    let expected = match preemption {
        Preemption::Never => settle.leader.filter(|_| electable),
        _ => electorate.highest_live(&sim).filter(|_| electable),
    };
    let live = members.iter().filter(|&&id| sim.is_up(id)).count();
    assert!(
        settle.leader == expected && (settle.leader.is_some() == electable),
        "L1: agreed on {:?}, expected {expected:?} ({live} of {n} live): {}",
        settle.leader,
        context(&sim, &done)
    );
    assert_eq!(
        settle.bound,
        config.settle_bound(members.len()),
        "L2: the simulator measures against Config::settle_bound"
    );
    check_l2(&settle, electable, || context(&sim, &done));
    Ok(())
}

/// What the simulation did from the heal on (trace entry `from`), heartbeats
/// and their acknowledgements left out: the story of a run that did not settle.
fn settle_story(sim: &Simulation, from: usize) -> String {
    let mut story = String::from("after the heal:\n");
    for record in sim.trace().iter().skip(from) {
        let entry = format!("{:?}", record.entry);
        if !entry.contains("Heartbeat") && !entry.contains("Ack {") {
            story.push_str(&format!("{:>9} ms {entry}\n", record.at_us / 1000));
        }
    }
    for &id in sim.members() {
        if let Some(node) = sim.node(id).filter(|_| sim.is_up(id)) {
            story.push_str(&format!("at the end, {node:?}\n"));
        }
    }
    story
}

/// L2: where a leader can be elected, every live member agreed on it within the
/// bound the configuration computes (`Config::settle_bound`), counted as the
/// simulator's `heal_and_settle` counts it: from the moment the last message sent
/// under the faults has landed to the start of the agreement that lasted.
fn check_l2(settle: &Settle, electable: bool, context: impl FnOnce() -> String) {
    if electable && !settle.within_bound() {
        panic!(
            "L2: agreement after {:?}, bound {:?}: {}",
            settle.converged_after,
            settle.bound,
            context()
        );
    }
}

#[cfg(test)]
mod tests {
    //! The L2 oracle fails on hand-built settlements that break it; the
    //! electorate counts observers and quorums as the configuration says;
    //! a user's configuration runs; a refused one panics at once.

    use super::*;
    use crate::fuzz::tests::{five_members, pseudo_random, users_config};

    const BOUND: Duration = Duration::from_millis(4_000);

    fn settled(after: Option<Duration>) -> Settle {
        Settle {
            sitting: None,
            leader: after.map(|_| NodeId(3)),
            converged_after: after,
            bound: BOUND,
        }
    }

    #[test]
    fn agreement_within_the_bound_passes_and_no_leader_to_elect_needs_none() {
        check_l2(&settled(Some(BOUND)), true, String::new);
        check_l2(&settled(None), false, String::new);
    }

    #[test]
    #[should_panic(expected = "L2: agreement after Some(4.001s)")]
    fn agreement_a_millisecond_late_fails() {
        let late = BOUND + Duration::from_millis(1);
        check_l2(&settled(Some(late)), true, String::new);
    }

    #[test]
    #[should_panic(expected = "L2: agreement after None")]
    fn no_agreement_where_a_leader_can_be_elected_fails() {
        check_l2(&settled(None), true, String::new);
    }

    #[test]
    fn observers_that_do_not_vote_neither_lead_nor_count_toward_the_quorum() {
        let config = Config::default()
            .with_quorum(Quorum::Majority)
            .with_observers([NodeId(4), NodeId(5)]);
        let electorate = Electorate::of(&config, &five_members());
        assert_eq!(electorate.candidates, [NodeId(1), NodeId(2), NodeId(3)]);
        assert_eq!(electorate.voters, electorate.candidates);
        assert_eq!(electorate.quorum, Some(2));
        let voting = Electorate::of(&config.with_observers_vote(true), &five_members());
        assert_eq!((voting.voters.len(), voting.quorum), (5, Some(3)));
    }

    #[test]
    fn a_users_configuration_runs_clean() {
        for seed in 0..8 {
            cluster(&users_config(), &five_members(), &pseudo_random(seed, 256));
        }
    }

    #[test]
    fn a_configuration_with_observers_runs_clean() {
        // 5 watches and never leads; with observers_vote it counts toward
        // the quorum, without, the quorum is a majority of 1 to 4.
        let members = five_members();
        for vote in [false, true] {
            let config = users_config()
                .with_observers([NodeId(5)])
                .with_observers_vote(vote);
            for seed in 0..ROUNDS {
                cluster(&config, &members, &pseudo_random(seed, 512));
            }
        }
    }

    /// Inputs per configuration.
    const ROUNDS: u64 = 16;

    #[test]
    #[should_panic(expected = "Quorum::AtLeast(2) of 4 voters lets two sides")]
    fn a_quorum_of_half_the_voters_is_refused_at_once() {
        let members = [NodeId(1), NodeId(2), NodeId(3), NodeId(4)];
        cluster(
            &Config::default().with_quorum(Quorum::AtLeast(2)),
            &members,
            &[],
        );
    }

    #[test]
    #[should_panic(expected = "this configuration is refused for members [NodeId(1)]")]
    fn a_configuration_the_simulator_refuses_panics_at_once() {
        let config = Config::default().with_quorum(Quorum::AtLeast(3));
        cluster(&config, &[NodeId(1)], &[]);
    }
}
