//! The driver's timer handling in paused time, checked by counting: one wakeup per
//! deadline (no busy loop), every deadline served on time (none missed), even
//! when the task was busy as it passed.

use std::time::Duration;

use async_trait::async_trait;
use bully_core::{Config, Event, Message, MessageKind, Node, NodeId};
use bully_tokio::{MemNetwork, Transport, TransportError};
use tokio::time::Instant;

mod support;

/// Timers under test, not the start: a member elects as soon as it starts.
fn config() -> Config {
    support::config::ticking().with_staggered_start(false)
}

#[tokio::test(start_paused = true)]
async fn a_lone_leader_wakes_once_per_heartbeat_and_never_spins() {
    // A one-member cluster elects itself and then only has its heartbeat timer.
    let network = MemNetwork::new();
    let node = Node::new(NodeId(1), [NodeId(1)], config()).unwrap();
    let handle = bully_tokio::spawn(node, network.endpoint(NodeId(1)));
    tokio::time::sleep(Duration::from_millis(1)).await;
    let before = handle.stats().await.unwrap();

    tokio::time::sleep(Duration::from_secs(10)).await;
    let after = handle.stats().await.unwrap();

    // 10 s of 100 ms heartbeats: 100 deadlines, each served by exactly one timer
    // wakeup (the extra wakeup is the stats command itself).
    let timeouts = after.timeouts - before.timeouts;
    let wakeups = after.wakeups - before.wakeups;
    assert!((99..=101).contains(&timeouts), "timeouts {timeouts}");
    assert_eq!(
        wakeups,
        timeouts + 1,
        "a wakeup that served nothing is a busy loop"
    );
    // Re-armed once per new deadline, never more.
    assert_eq!(after.timer_resets - before.timer_resets, timeouts);
}

#[tokio::test(start_paused = true)]
async fn followers_never_fire_while_the_leader_is_heard_and_fire_on_time_when_it_is_not() {
    let members = [NodeId(1), NodeId(2)];
    let network = MemNetwork::new();
    let one = bully_tokio::spawn(
        Node::new(NodeId(1), members, config()).unwrap(),
        network.endpoint(NodeId(1)),
    );
    let two = bully_tokio::spawn(
        Node::new(NodeId(2), members, config()).unwrap(),
        network.endpoint(NodeId(2)),
    );
    let mut leader = one.leader_watch();
    leader
        .wait_for(|l| l.map(|l| l.id) == Some(NodeId(2)))
        .await
        .unwrap();
    let before = one.stats().await.unwrap();

    tokio::time::sleep(Duration::from_secs(10)).await;
    let after = one.stats().await.unwrap();
    // Every heartbeat pushes the follower's leader timeout back, and the pushed
    // deadline is never reached: no timer wakeup at all.
    assert_eq!(after.timeouts, before.timeouts, "a follower's timer fired");
    let heard =
        after.node.received[MessageKind::Heartbeat] - before.node.received[MessageKind::Heartbeat];
    assert!((99..=101).contains(&heard), "heartbeats {heard}");
    assert_eq!(after.wakeups - before.wakeups, heard + 1);

    // The leader crashes just after a heartbeat. The follower's deadline is the
    // last heartbeat plus the leader timeout, to the millisecond.
    let mut events = one.events();
    two.abort().await;
    let crashed = Instant::now();
    loop {
        if let Event::LeaderLost { leader, .. } = events.recv().await.unwrap() {
            assert_eq!(leader, NodeId(2));
            break;
        }
    }
    let noticed = crashed.elapsed();
    let timeout = config().leader_timeout();
    // tokio's timer wheel has millisecond granularity: allow it one.
    let granularity = Duration::from_millis(1);
    assert!(
        noticed <= timeout + granularity && noticed > timeout - config().heartbeat_interval(),
        "noticed after {noticed:?}; the deadline was within {timeout:?}"
    );
}

/// A transport whose every send takes 250 ms: the driver is busy sending when
/// its 100 ms heartbeat deadline passes.
struct SlowTransport;

#[async_trait]
impl Transport for SlowTransport {
    async fn send(&mut self, _to: NodeId, _message: &Message) -> Result<(), TransportError> {
        tokio::time::sleep(Duration::from_millis(250)).await;
        Ok(())
    }
    async fn recv(&mut self) -> Result<(NodeId, Message), TransportError> {
        std::future::pending().await
    }
}

#[tokio::test(start_paused = true)]
async fn a_deadline_that_passes_while_the_task_is_busy_is_served_at_once() {
    // Member 2 of {1, 2}, alone: it elects itself and heartbeats member 1.
    let node = Node::new(NodeId(2), [NodeId(1), NodeId(2)], config()).unwrap();
    let handle = bully_tokio::spawn(node, SlowTransport);
    tokio::time::sleep(Duration::from_secs(10)).await;
    let stats = handle.stats().await.unwrap();

    // Each round's send outlasts the interval, so the next deadline has always
    // passed when the send returns; it is served at once (by the clock check, or
    // by the already-expired sleep). Rounds go out back to back, one per send:
    // none is missed, and no handle_timeout call is wasted.
    let rounds = stats.node.sent[MessageKind::Heartbeat];
    assert!((38..=40).contains(&rounds), "heartbeat rounds {rounds}");
    assert_eq!(stats.timeouts, rounds);
    assert!(stats.wakeups <= rounds + 1, "wakeups {}", stats.wakeups);
    assert_eq!(
        stats.messages_sent,
        rounds + 1,
        "the Coordinator, then heartbeats"
    );
}

/// A transport whose `recv` fails at once, every time.
struct BrokenTransport;

#[async_trait]
impl Transport for BrokenTransport {
    async fn send(&mut self, _to: NodeId, _message: &Message) -> Result<(), TransportError> {
        Ok(())
    }
    async fn recv(&mut self) -> Result<(NodeId, Message), TransportError> {
        Err(TransportError::Io(
            std::io::ErrorKind::ConnectionReset.into(),
        ))
    }
}

#[tokio::test(start_paused = true)]
async fn a_transport_that_always_fails_to_receive_cannot_make_the_driver_spin() {
    let node = Node::new(NodeId(2), [NodeId(1), NodeId(2)], config()).unwrap();
    let handle = bully_tokio::spawn(node, BrokenTransport);
    tokio::time::sleep(Duration::from_secs(10)).await;
    let stats = handle.stats().await.unwrap();

    // It still leads and heartbeats on time...
    let rounds = stats.node.sent[MessageKind::Heartbeat];
    assert!((99..=101).contains(&rounds), "heartbeat rounds {rounds}");
    // ...and tries to receive at most a burst's worth between two timers.
    let burst = u64::from(bully_tokio::RECV_ERROR_BURST);
    assert!(
        stats.recv_errors <= (stats.timeouts + 2) * burst,
        "{} receive errors for {} timers",
        stats.recv_errors,
        stats.timeouts
    );
    assert!(stats.wakeups <= stats.recv_errors + stats.timeouts + 1);
}
