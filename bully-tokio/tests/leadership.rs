//! The leadership signal in paused time, counted against the node's own lease:
//! it stays current while a quorum renews the lease, fires the lease margin before
//! the lease runs out when the leader is cut off (while the node still leads), and
//! fires at once on a step-down. Without a quorum it only follows the role.

use std::time::Duration;

use bully_core::{Config, Event, NodeId, Quorum};
use bully_tokio::{Builder, MemNetwork};
use tokio::time::Instant;

mod support;
use support::mem::MemCluster;

fn config(quorum: Quorum) -> Config {
    support::config::patient().with_quorum(quorum)
}

/// Three members whose leaderships end `margin` before their lease.
fn cluster(quorum: Quorum, margin: Duration) -> MemCluster {
    let config = config(quorum).with_lease_margin(margin);
    let mut cluster = MemCluster::stopped(MemNetwork::new(), 3, config);
    for id in 1..=3 {
        cluster.start_with(id, |node, transport| Builder::new().spawn(node, transport));
    }
    cluster
}

#[tokio::test(start_paused = true)]
async fn a_cut_off_leaders_signal_fires_a_margin_before_its_lease_runs_out() {
    let margin = Duration::from_millis(60);
    let lease = config(Quorum::Majority).leader_lease();
    let cluster = cluster(Quorum::Majority, margin);
    let three = cluster.handle(3);
    let leadership = three.permit(Duration::MAX).await.unwrap();
    assert_eq!(leadership.token().leader, NodeId(3));
    assert_eq!(
        three.current_permit().map(|current| current.token()),
        Some(leadership.token())
    );
    assert!(cluster.handle(1).current_permit().is_none(), "1 follows");

    // Renewed by every acknowledged heartbeat round: current for ten leases, and
    // its deadline moves later with each renewal, never more than a lease ahead.
    let first_deadline = leadership
        .deadline()
        .expect("a quorum leadership has a deadline");
    let deadlines = leadership.deadlines();
    tokio::time::sleep(lease * 10).await;
    assert!(
        leadership.is_current(),
        "the guard was not moved by renewals"
    );
    assert!(deadlines.has_changed().unwrap(), "no renewal was published");
    let renewed = leadership.deadline().unwrap();
    assert!(
        renewed >= first_deadline + lease * 9,
        "{renewed:?} vs {first_deadline:?}"
    );
    assert!(renewed <= Instant::now().into_std() + lease);
    assert_eq!(three.stats().await.unwrap().node.times_leader, 1);

    // 3 is cut off: no renewal from now on.
    let mut events = three.events();
    cluster.cut(&[3], &[1, 2]);
    let cut = Instant::now();
    let last_deadline = leadership.deadline().unwrap();
    leadership.ended().await;
    let ended = Instant::now();
    // A watchdog handed the last deadline would have stopped the work on time.
    assert!(ended.into_std() >= last_deadline);
    assert!(ended.into_std() <= last_deadline + Duration::from_millis(1));
    assert_eq!(
        leadership.deadline(),
        None,
        "an ended leadership has no deadline"
    );
    // The node still leads: the signal is the driver's own deadline, not the
    // step-down.
    assert_eq!(
        three.leader().map(|l| l.id),
        Some(NodeId(3)),
        "the signal waited for the step-down"
    );
    let expired = loop {
        match events.recv().await.unwrap() {
            Event::LeaseExpired { term } => {
                assert_eq!(term, leadership.token().term);
                break Instant::now();
            }
            Event::SteppedDown { .. } => panic!("stepped down before the lease expired"),
            _ => {}
        }
    };
    // At most a lease after the cut; the margin (to the millisecond tokio's timer
    // has) before the lease ran out.
    assert!(ended - cut <= lease, "{:?} after the cut", ended - cut);
    let ahead = expired - ended;
    assert!(
        ahead + Duration::from_millis(1) >= margin && ahead <= margin + Duration::from_millis(1),
        "the signal fired {ahead:?} before the lease ran out, margin {margin:?}"
    );
    // No new leadership opens on the cut-off side.
    assert!(three.permit(lease * 4).await.is_err());
}

#[tokio::test(start_paused = true)]
async fn a_step_down_fires_the_signal_and_the_next_win_opens_a_new_leadership() {
    let cluster = cluster(Quorum::None, Duration::from_millis(60));
    let three = cluster.handle(3);
    let first = three.permit(Duration::MAX).await.unwrap();
    // Without a quorum there is no lease: it stays current as long as 3 leads.
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(first.is_current());

    assert!(three.step_down().await.unwrap());
    assert!(
        !first.is_current(),
        "step_down returned with the work not told"
    );
    // Preemption: 3 takes the leadership back, in a new term.
    let second = three.permit(Duration::MAX).await.unwrap();
    assert!(second.token() > first.token());
    assert!(second.is_current());
}
