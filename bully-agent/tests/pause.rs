//! The pause that no lease can beat: the leader's agent (with its supervisor)
//! and its child are stopped together with SIGSTOP for three leader timeouts,
//! far longer than the lease. The others elect a new leader, whose child starts.
//! Then the old ones are let go (SIGCONT, the child 100 ms before its agent):
//! the old child, which still believes it works for the leader, writes again
//! before anything can tell it otherwise.
//!
//! No timing can prevent that write; the fencing token makes it harmless. The
//! test checks that every write landing after the new leader's child started and
//! not made by it carries the old, lower token; that a store checking tokens
//! with `bully_core::FencingGuard` refuses exactly those writes; and that the old
//! agent, once resumed, stops its child within the grace period.

mod support;

use std::time::Duration;

use support::child_log::{Kind, format_token};
use support::cluster::{Cluster, Options, Ports, Timing, now_millis};
use support::procs::processes;

/// The pause: three leader timeouts, longer than any lease the agent can hold.
fn pause_length(timing: &Timing) -> Duration {
    Duration::from_millis(3 * timing.leader_timeout_ms)
}

/// What the test allows, beyond the grace period, between SIGCONT and the old
/// child's last line: the resumed supervisor must get a CPU, see its deadline
/// passed and signal the child, and the child's shell must run its trap (a
/// `date` fork) and write. All of it is OS scheduling on a loaded two-core
/// machine, so the allowance is generous.
const RESUME_ALLOWANCE: Duration = Duration::from_millis(1_000);

/// How long the child runs before its agent is resumed: two of its 50 ms beats.
const CHILD_AHEAD: Duration = Duration::from_millis(100);

/// How long the test waits for anything before it gives up.
const PATIENCE: Duration = Duration::from_secs(15);

#[test]
fn a_paused_leaders_late_writes_carry_the_old_token_and_are_fenced() {
    let timing = Timing::FAST;
    let cluster = Cluster::start(Options {
        size: 5,
        timing,
        relay: false,
        other_secret: None,
        missing_command: None,
        child_settings: "",
        ports: Ports::Ephemeral,
    });
    cluster.wait_for_start_above(None, PATIENCE);
    let leader = cluster.wait_for_agreement(PATIENCE);
    let log = cluster.child_log();
    let old = log.newest_token().expect("a child runs");
    assert_eq!(old.leader.0, leader);
    let old_child = log
        .intervals()
        .into_iter()
        .rfind(|i| i.token == old)
        .expect("the leader's child")
        .pid;

    // Process 5 and its child freeze: a long GC pause, a VM migration, SIGSTOP.
    cluster.stop_agent_group(leader);
    cluster.stop_group(old_child);
    let paused = now_millis();
    let new_start = cluster.wait_for_start_above(Some(old), PATIENCE);
    let pause = pause_length(&timing);
    let elapsed = Duration::from_millis(now_millis().saturating_sub(paused));
    std::thread::sleep(pause.saturating_sub(elapsed));
    println!(
        "pause: leader {leader} stopped; {} started {} ms into the pause; resumed after {} ms",
        format_token(new_start.token),
        new_start.millis.saturating_sub(paused),
        now_millis().saturating_sub(paused)
    );

    // The child wakes first and, for two of its beats, writes as if it still
    // worked for the leader: nothing has told it otherwise yet. Then the agent
    // and its supervisor wake.
    cluster.continue_group(old_child);
    std::thread::sleep(CHILD_AHEAD);
    let resumed = now_millis();
    cluster.continue_agent_group(leader);

    // The resumed agent stops its child: wait until the child's process is gone.
    let grace = Duration::from_millis(timing.grace_ms);
    let deadline = std::time::Instant::now() + grace + RESUME_ALLOWANCE + PATIENCE;
    while processes()
        .iter()
        .any(|p| p.pid == old_child && !p.cmdline.is_empty())
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the old child {old_child} still runs after the resume\n{}",
            cluster.all_logs()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    cluster.wait_for_agreement(PATIENCE);

    let log = cluster.child_log();
    let old_interval = log
        .intervals()
        .into_iter()
        .find(|i| i.pid == old_child)
        .expect("the old child's lines");
    // Every line after the new child's start that a newer child did not write.
    let late: Vec<_> = log
        .lines()
        .iter()
        .filter(|line| line.index > new_start.index && line.token < new_start.token)
        .copied()
        .collect();
    let refused = log.fenced_writes();
    println!(
        "pause: {} late writes of the old child ({}), {} refused by the FencingGuard; \
         its last line {} ms after its agent resumed ({}); overlaps {}",
        late.len(),
        late.iter()
            .map(|l| format!("{:?}", l.kind).to_lowercase())
            .collect::<Vec<_>>()
            .join(", "),
        refused.len(),
        old_interval.end_millis as i64 - resumed as i64,
        if old_interval.stopped {
            "a stop: it left on SIGTERM"
        } else {
            "killed"
        },
        log.overlaps().len(),
    );

    assert!(
        late.iter()
            .all(|line| line.token == old && line.pid == old_child),
        "a late write came from someone other than the paused child: {late:#?}"
    );
    assert!(
        late.iter().any(|line| line.kind == Kind::Beat),
        "the resumed child did not beat in the {CHILD_AHEAD:?} before its agent woke\n{}",
        cluster.all_logs()
    );
    assert_eq!(
        refused, late,
        "the FencingGuard must refuse exactly the paused child's late writes"
    );
    // Nothing the paused child did overlaps any but the new children: every
    // overlap involves the old token.
    for overlap in log.overlaps() {
        assert!(
            overlap.line.token == old || overlap.during.token == old,
            "an overlap without the paused child: {overlap:?}"
        );
    }
    assert_eq!(
        log.token_regressions(),
        [],
        "a child started under an older token"
    );
    assert!(
        !log.lines()
            .iter()
            .any(|l| l.kind == Kind::Start && l.token == old && l.index > new_start.index),
        "the resumed agent started its old leadership's child again"
    );

    // The agent stopped it within the grace period of its resumption: the
    // child's trap wrote its `stop` (it was not killed).
    assert!(
        old_interval.stopped,
        "the old child was killed, not stopped"
    );
    let allowed = grace + RESUME_ALLOWANCE;
    let took = old_interval.end_millis.saturating_sub(resumed);
    assert!(
        u128::from(took) <= allowed.as_millis(),
        "the old child's last line came {took} ms after the resume, above {} ms \
         (grace {} ms + allowance {} ms)\n{}",
        allowed.as_millis(),
        grace.as_millis(),
        RESUME_ALLOWANCE.as_millis(),
        cluster.all_logs()
    );
}
