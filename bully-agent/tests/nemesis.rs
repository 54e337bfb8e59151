//! The nemesis: randomized fault schedules against clusters of real
//! `bully-agent` processes on 127.0.0.1, as Jepsen's nemesis runs them, and a
//! search for counterexamples to what the agent promises.
//!
//! Each schedule, drawn from a seed (`support/nemesis/schedule.rs`), picks a
//! cluster of 1, 2, 3, 4, 5 or 7 agents (majority quorum, the process tests'
//! fast timings, every link through the test's UDP relay), a stop time for
//! each command from 0 to the grace period (`support/child.sh` goes on
//! writing that long after SIGTERM), and two to five faults, healed later and
//! interleaved with waits: `kill -9` of an agent, Ctrl-C (SIGINT), a restart of
//! the highest member with its data directory kept, a member's machine crashed
//! and its data directory lost (started again soon, without `bully-agent
//! init`: it may have backed the sitting leader's lease and forgotten), SIGSTOP
//! of an agent alone or of its whole tree (agent, supervisor and command), the
//! command killed or told to stop from outside, a planned hand-over
//! (`bully-agent handover` on the member expected to lead, which then stays
//! out of the elections for 1 to 3 s), a link cut one way, both ways, or a
//! member cut off. The cluster boots as a new one (every member declared
//! with `bully-agent init`). The run and its checks are in `support/nemesis/run.rs` and
//! `support/nemesis/verdict.rs`: never two commands at once (outside a
//! whole-tree pause, whose late writes must carry the older token and be
//! refused by a `FencingGuard`), tokens only grow, a command on the majority
//! side within the failover bound (plus the step's own time and an allowance
//! for starting processes) after every step, none without a quorum once the
//! leases ran out, the highest member leading at the end, every agent leaving
//! with status 0 on SIGTERM, and nothing left running.
//!
//! - `BULLY_NEMESIS_SCHEDULES`: how many schedules (20 by default).
//! - `BULLY_NEMESIS_SEED`: run only the schedule of this seed, as a failure
//!   prints it.
//! - `BULLY_NEMESIS_SIZE`: every schedule for a cluster of this size (1, 2, 3,
//!   4, 5 or 7) instead of the size its seed draws, to search one size
//!   as long as the others; a failure's replay line names it.
//! - `BULLY_NEMESIS_LANES`: schedules run at once, each on its own cluster,
//!   ports and directory (2 by default, for two cores).
//!
//! The seeds are drawn from the clock and printed, so every run searches new
//! schedules. A failing schedule keeps its directory (configurations, the
//! agents' logs, the child log); `BULLY_KEEP_TEST_DIR=1` keeps every one, and
//! `BULLY_AGENT_TEST_LOG=info,bully_tokio=debug` adds the elections to the
//! agents' logs.

mod support;

use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use support::cluster::Timing;
use support::nemesis::run::{Outcome, run};
use support::nemesis::schedule::{SIZES, Schedule};

/// A variable's value, or `default` when it is not set; a value that is not a
/// number is a mistake worth stopping for.
fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(text) => text
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={text:?} is not a number")),
        Err(_) => default,
    }
}

/// How a schedule ended: its outcome, or the panic that cut it short.
enum Ran {
    Done(Box<Outcome>),
    Panicked(Schedule, String),
}

impl Ran {
    fn failed(&self) -> bool {
        match self {
            Ran::Done(outcome) => !outcome.failures.is_empty(),
            Ran::Panicked(..) => true,
        }
    }

    fn report(&self) -> String {
        let (schedule, what, rest) = match self {
            Ran::Done(outcome) => (
                &outcome.schedule,
                outcome
                    .failures
                    .iter()
                    .map(|failure| format!("  - {failure}\n"))
                    .collect::<String>(),
                format!("what happened:\n{}\n{}", outcome.timeline, outcome.details),
            ),
            Ran::Panicked(schedule, message) => (
                schedule,
                format!("  - the run panicked: {message}\n"),
                String::new(),
            ),
        };
        format!(
            "==== counterexample: seed {seed}, {size} agent(s)\n\
             replay: BULLY_NEMESIS_SEED={seed}{sized} cargo test -p bully-agent --test nemesis -- --nocapture\n\
             the schedule: {schedule}\
             what broke:\n{what}{rest}",
            seed = schedule.seed,
            size = schedule.size,
            sized = match std::env::var("BULLY_NEMESIS_SIZE") {
                Ok(_) => format!(" BULLY_NEMESIS_SIZE={}", schedule.size),
                Err(_) => String::new(),
            },
        )
    }
}

fn summary(outcome: &Outcome) -> String {
    format!(
        "seed {:>20}: {} agent(s), {:>2} steps, {:>3} commands, {:>2} tokens, worst gap {:>4} ms of \
         {:>4} allowed, {:>5.1} s{}",
        outcome.schedule.seed,
        outcome.schedule.size,
        outcome.schedule.steps.len(),
        outcome.commands,
        outcome.tokens,
        outcome.worst_gap.0,
        outcome.worst_gap.1,
        outcome.elapsed.as_secs_f64(),
        if outcome.failures.is_empty() {
            String::new()
        } else {
            format!(": {} FAILURE(S)", outcome.failures.len())
        }
    )
}

#[test]
fn randomized_fault_schedules_never_run_two_commands_at_once() {
    let timing = Timing::FAST;
    let seeds: Vec<u64> = match std::env::var("BULLY_NEMESIS_SEED") {
        Ok(_) => vec![env_number("BULLY_NEMESIS_SEED", 0)],
        Err(_) => {
            let count = env_number("BULLY_NEMESIS_SCHEDULES", 20);
            let base = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| {
                    u64::try_from(since.as_nanos() % u128::from(u64::MAX)).unwrap_or(0)
                });
            (0..count).map(|i| base.wrapping_add(i)).collect()
        }
    };
    let lanes = usize::try_from(env_number("BULLY_NEMESIS_LANES", 2).max(1)).unwrap_or(1);
    let size = std::env::var("BULLY_NEMESIS_SIZE").ok().map(|_| {
        let size = env_number("BULLY_NEMESIS_SIZE", 0);
        assert!(
            SIZES.contains(&size),
            "BULLY_NEMESIS_SIZE={size}: the nemesis runs clusters of {SIZES:?}"
        );
        size
    });
    println!(
        "nemesis: {} schedule(s), {lanes} at a time; seeds {}..; {}",
        seeds.len(),
        seeds[0],
        size.map_or_else(
            || "sizes as drawn".to_owned(),
            |size| format!("{size} agent(s) each")
        )
    );
    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Ran>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..lanes.min(seeds.len()) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::SeqCst);
                    let Some(&seed) = seeds.get(index) else {
                        return;
                    };
                    let schedule = Schedule::draw_sized(seed, timing.grace_ms, size);
                    let ran =
                        match std::panic::catch_unwind(AssertUnwindSafe(|| run(&schedule, timing)))
                        {
                            Ok(outcome) => {
                                // One print per schedule, so that lanes do not
                                // interleave; shown with --nocapture.
                                println!(
                                    "{}\n{}{}",
                                    summary(&outcome),
                                    outcome.schedule,
                                    outcome.timeline
                                );
                                Ran::Done(Box::new(outcome))
                            }
                            Err(payload) => {
                                let message = payload
                                    .downcast_ref::<String>()
                                    .cloned()
                                    .or_else(|| {
                                        payload.downcast_ref::<&str>().map(|s| (*s).to_owned())
                                    })
                                    .unwrap_or_else(|| "(no message)".to_owned());
                                println!("seed {seed}: the run panicked");
                                Ran::Panicked(schedule, message)
                            }
                        };
                    results
                        .lock()
                        .unwrap_or_else(|poison| poison.into_inner())
                        .push(ran);
                }
            });
        }
    });
    let results = results
        .into_inner()
        .unwrap_or_else(|poison| poison.into_inner());
    let failed: Vec<&Ran> = results.iter().filter(|ran| ran.failed()).collect();
    println!(
        "nemesis: {} schedule(s) in {:.0} s, {} counterexample(s)",
        results.len(),
        started.elapsed().as_secs_f64(),
        failed.len()
    );
    assert_eq!(results.len(), seeds.len(), "every schedule ran");
    assert!(
        failed.is_empty(),
        "{} of {} schedules found a counterexample:\n\n{}",
        failed.len(),
        results.len(),
        failed
            .iter()
            .map(|ran| ran.report())
            .collect::<Vec<_>>()
            .join("\n\n")
    );
    // Guard against a harness that checks nothing: every schedule that ran to
    // its end saw commands start.
    for ran in &results {
        if let Ran::Done(outcome) = ran {
            assert!(
                outcome.commands > 0,
                "seed {}: no command ever ran",
                outcome.schedule.seed
            );
        }
    }
}
