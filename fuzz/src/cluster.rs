//! The `cluster` target: a simulated cluster (`bully_sim`) under arbitrary
//! faults and commands, checked for safety after every step and for convergence
//! after the faults heal.

use std::time::Duration;

use arbitrary::{Arbitrary, Result, Unstructured};
use bully_core::{Algorithm, Config, Message, NodeId, Preemption, Quorum};
use bully_sim::chaos::{Action, Settle};
use bully_sim::{Simulation, TraceEntry};

use super::tracing;

/// Actions one `cluster` run applies before the quiet period.
const MAX_ACTIONS: usize = 48;

/// A simulated cluster of 2 to 6 members, for each algorithm, with or without a
/// majority quorum, under every preemption policy, fed an arbitrary sequence of
/// steps: deliveries one at a time, crashes, restarts with and without state,
/// partitions, cut links, loss, duplication, jitter, time passing, wrong failure
/// detector reports, elections and step-downs on command, messages replayed
/// later (duplicated and delayed past the timing model), and forgeries from
/// strangers. S1 to S3 (docs/correctness.md, section 1: at most one coordinator
/// per term; terms and accepted tokens never decrease; no token below the
/// highest accepted is followed) and, with a quorum, exclusive leadership hold
/// after every step; then every fault is healed, a quiet period passes, and L1 holds: every
/// live member names the highest live member (a majority of them, with a quorum;
/// under `Preemption::Never`, any one leader), and L2: they agreed within
/// `Config::settle_bound` of the faults stopping.
pub fn cluster(data: &[u8]) {
    let _ = drive_cluster(&mut Unstructured::new(data));
}

fn drive_cluster(u: &mut Unstructured<'_>) -> Result<()> {
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
    let seed = u64::arbitrary(u)?;
    let mut sim = Simulation::new(seed, members.iter().copied(), config.clone())
        .expect("a valid configuration");
    sim.enable_trace();
    sim.start_all();
    let context = |sim: &Simulation, done: &[Step]| {
        format!(
            "{algorithm:?}, quorum {quorum}, {preemption:?}, n {n}, seed {seed}: {:?}\nsteps: {done:?}",
            sim.violations()
        )
    };
    let mut done = Vec::new();
    for _ in 0..MAX_ACTIONS {
        if u.is_empty() {
            break;
        }
        let step = step(u, &members)?;
        apply(&mut sim, &step);
        done.push(step);
        if tracing() && !sim.violations().is_empty() {
            for record in sim.trace() {
                eprintln!("{:>9} us {:?}", record.at_us, record.entry);
            }
        }
        assert!(sim.violations().is_empty(), "{}", context(&sim, &done));
    }
    if tracing() {
        eprintln!(
            "cluster {algorithm:?}, quorum {quorum}, {preemption:?}, n {n}: {} steps {done:?}",
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
        "while settling: {}",
        context(&sim, &done)
    );
    let live = members.iter().filter(|&&id| sim.is_up(id)).count() as u64;
    let electable = live > 0 && (!quorum || live > n / 2);
    let expected = match preemption {
        Preemption::Never => settle.leader.filter(|_| electable),
        _ => sim.highest_live().filter(|_| electable),
    };
    assert!(
        settle.leader == expected && (settle.leader.is_some() == electable),
        "L1: agreed on {:?}, expected {expected:?} ({live} of {n} live): {}",
        settle.leader,
        context(&sim, &done)
    );
    assert_eq!(settle.bound, config.settle_bound(members.len()));
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

/// One thing the `cluster` target does to the simulation.
#[derive(Clone, Debug)]
enum Step {
    /// A fault or command of the simulator's own vocabulary.
    Act(Action),
    /// Deliver the next message or fire the next timer.
    Deliver,
    /// Send again the `index`-th message sent so far (counted from the latest),
    /// as a duplicate delayed beyond the timing model.
    Replay(usize),
    /// A message from someone outside the cluster.
    Forge {
        from: NodeId,
        to: NodeId,
        message: Message,
    },
}

fn step(u: &mut Unstructured<'_>, members: &[NodeId]) -> Result<Step> {
    let member = |u: &mut Unstructured<'_>| -> Result<NodeId> {
        Ok(if u.ratio(1, 32)? {
            NodeId(members.len() as u64 + 1)
        } else {
            *u.choose(members)?
        })
    };
    let millis = |u: &mut Unstructured<'_>, max: u16| -> Result<Duration> {
        Ok(Duration::from_millis(u64::from(u.int_in_range(0..=max)?)))
    };
    Ok(match u.int_in_range(0..=19)? {
        0..=3 => Step::Act(Action::Advance(millis(u, 600)?)),
        4..=6 => Step::Deliver,
        7 => Step::Act(Action::Crash(member(u)?)),
        8 => Step::Act(if bool::arbitrary(u)? {
            Action::Restart(member(u)?)
        } else {
            Action::RestartDurable(member(u)?)
        }),
        9 => Step::Act(Action::Partition {
            mask: u64::arbitrary(u)?,
        }),
        10 => Step::Act(if bool::arbitrary(u)? {
            Action::Cut {
                from: member(u)?,
                to: member(u)?,
            }
        } else {
            Action::CutBoth {
                a: member(u)?,
                b: member(u)?,
            }
        }),
        11 => Step::Act(Action::Loss(u.int_in_range(0..=100)?)),
        12 => Step::Act(Action::Duplicate(u.int_in_range(0..=100)?)),
        13 => Step::Act(Action::Jitter(millis(u, 80)?)),
        14 => Step::Act(Action::Heal),
        15 => Step::Act(Action::Suspect {
            node: member(u)?,
            suspect: member(u)?,
        }),
        16 => Step::Act(if bool::arbitrary(u)? {
            Action::StartElection(member(u)?)
        } else {
            Action::StepDown(member(u)?)
        }),
        17 | 18 => Step::Replay(usize::from(u8::arbitrary(u)?)),
        _ => Step::Forge {
            from: NodeId(members.len() as u64 + 1 + u64::from(u8::arbitrary(u)?)),
            to: member(u)?,
            message: Message::arbitrary(u)?,
        },
    })
}

fn apply(sim: &mut Simulation, step: &Step) {
    match step {
        // An action naming a non-member is refused, and changes nothing.
        Step::Act(action) => {
            let _ = sim.apply(action);
        }
        Step::Deliver => {
            sim.step();
        }
        Step::Replay(back) => {
            let sent: Vec<(NodeId, NodeId, &Message)> = sim
                .trace()
                .iter()
                .rev()
                .filter_map(|record| match &record.entry {
                    TraceEntry::Send {
                        from, to, message, ..
                    } => Some((*from, *to, message)),
                    _ => None,
                })
                .collect();
            if sent.is_empty() {
                return;
            }
            let (from, to, message) = sent[back % sent.len()];
            let message = message.clone();
            if !sim.has_faulted() {
                // A copy delivered this late is a timing fault: switching loss on
                // and off tells the simulator the run left the synchronous model,
                // as a lossy link would. (Loss is 0 until then: any loss would
                // have left it already.)
                let _ = sim.apply(&Action::Loss(1));
                let _ = sim.apply(&Action::Loss(0));
            }
            let _ = sim.inject(from, to, message);
        }
        Step::Forge { from, to, message } => {
            let _ = sim.inject(*from, *to, message.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    //! The L2 oracle fails on hand-built settlements that break it.

    use super::*;

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
}
