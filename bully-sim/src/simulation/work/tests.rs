//! The work model's stories, member by member: when a leader's work is told to
//! stop, when it has stopped, and when another member's work may start.
//!
//! A member alone in a cluster of one, with a quorum, leads as soon as it
//! elects: it stands in for any leader here, since the model reads nothing of
//! a node but its permit to work (`Node::permit`).

use std::time::Duration;

use bully_core::{Config, Instant, Node, NodeId, Quorum};

use super::{Work, WorkModel};
use crate::simulation::clock::Clock;

const NANO: Duration = Duration::from_nanos(1);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A majority quorum and a resign delay of 100 ms: work told to stop has
/// stopped 100 ms later.
fn config() -> Config {
    Config::default()
        .with_quorum(Quorum::Majority)
        .with_resign_delay(ms(100))
}

/// Member `id`, alone in its cluster, elected at `at`: it leads, and may work.
fn leader(id: u64, at: Instant) -> Node {
    let mut node = Node::with_durable_state(
        NodeId(id),
        [NodeId(id)],
        config(),
        bully_core::DurableState::first_boot(),
    )
    .unwrap();
    node.start_election(at);
    node
}

/// Member 2 (index 1), on an exact clock, starts to work at `at`: the member
/// whose work may still run then, if any.
fn member_2_starts(model: &mut WorkModel, epoch: Instant, at: Instant) -> Option<usize> {
    model.after_input(at, &Clock::exact(epoch), 1, &leader(2, at))
}

/// Member 1 (index 0), on an exact clock, leads from `t0` and starts to work
/// then. Returns the model, member 1, and the instant its permission ends.
fn member_1_works_from(t0: Instant) -> (WorkModel, Node, Instant) {
    let mut model = WorkModel::new(2);
    let node = leader(1, t0);
    let permit = node.permit().unwrap();
    let until = permit
        .until
        .expect("with a quorum the permission has an end");
    assert_eq!(model.after_input(t0, &Clock::exact(t0), 0, &node), None);
    (model, node, until)
}

/// 1's permission ends at `until`; its own timer tells its work to stop
/// then, whenever the model notices (here 5 ms later, at 1's next input),
/// and it has stopped by `until` + 100 ms. 2's work may start at that very
/// instant; a nanosecond earlier it would overlap 1's.
/// Kills WorkModel::still_running's `ends > now` -> `>=` (144:19).
#[test]
fn work_told_to_stop_may_run_until_the_resign_delay_has_passed_and_not_a_nanosecond_more() {
    for (before, overlaps) in [(NANO, Some(0)), (Duration::ZERO, None)] {
        let t0 = Instant::now();
        let (mut model, node, until) = member_1_works_from(t0);
        let noticed = until + ms(5);
        assert!(noticed >= until, "the permit has ended by then");
        assert_eq!(
            model.after_input(noticed, &Clock::exact(t0), 0, &node),
            None
        );
        let stopped = until + ms(100);
        assert_eq!(
            member_2_starts(&mut model, t0, stopped - before),
            overlaps,
            "{before:?} before 1's work has stopped"
        );
    }
}

/// 1 works from t0 and crashes 100 ms later, long before its permission
/// ends: its work is told to stop at the crash (as the agent's supervisor
/// stops the job) and has stopped 100 ms after it. 2's work may start then,
/// not a nanosecond earlier; the end of 1's permission is no longer what
/// it waits for.
/// Kills WorkModel::crashed -> `()` (111:9).
#[test]
fn a_crashed_members_work_has_stopped_a_resign_delay_after_the_crash() {
    for (before, overlaps) in [(NANO, Some(0)), (Duration::ZERO, None)] {
        let t0 = Instant::now();
        let (mut model, _, until) = member_1_works_from(t0);
        let crash = t0 + ms(100);
        assert!(crash + ms(100) < until, "{:?}", until - t0);
        model.crashed(crash, &Clock::exact(t0), 0, &config());
        assert_eq!(
            member_2_starts(&mut model, t0, crash + ms(100) - before),
            overlaps,
            "{before:?} before 1's work has stopped"
        );
    }
}

/// 1's clock runs 1 % fast from t0 (the configuration allows for that
/// much drift), and its permission ends when that clock
/// reads t0 + 910 ms: at the real instant t0 + 900.990100 ms, the first at
/// which it reads that much (and by then it reads a nanosecond more). The
/// model notices at exactly that instant. 1's own timer told its work to
/// stop at 910 ms on its clock, so it has stopped at 1010 ms on its clock:
/// the real t0 + 1 s. 2's work may start then. (Reckoned from the reading
/// at the notice, a nanosecond past 910 ms, it would stop a nanosecond
/// later, and 2's start would overlap it.)
/// Kills WorkModel::stop's `now < until` -> `<=` (127:27).
#[test]
fn work_noticed_at_the_very_end_of_its_permission_stops_as_its_own_timer_told_it() {
    let t0 = Instant::now();
    let mut clock = Clock::exact(t0);
    clock.set_rate(t0, 10_000_000);
    let permission_ends = t0 + ms(910);
    let until = clock.real(permission_ends);
    assert_eq!(until, t0 + Duration::from_nanos(900_990_100));
    assert_eq!(clock.local(until), permission_ends + NANO);
    let ends = clock.real(permission_ends + ms(100));
    assert_eq!(ends, t0 + ms(1000));
    let mut model = WorkModel::new(2);
    model.work[0] = Work::Running { until, ends };
    // 1 is a follower now: no permission.
    let config = config().with_clock_drift(0.01);
    let follower = Node::new(NodeId(1), [1, 2, 3].map(NodeId), config).unwrap();
    assert_eq!(model.after_input(until, &clock, 0, &follower), None);
    assert_eq!(member_2_starts(&mut model, t0, t0 + ms(1000)), None);
}
