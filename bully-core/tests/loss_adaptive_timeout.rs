//! The loss-adaptive failure detector, heartbeat by heartbeat: process 4 of
//! five follows 5 and hears (or misses) its heartbeats, one every 100 ms; its
//! leader timeout is armed from each heartbeat it hears. The configured 500 ms
//! is the floor; missed rounds lengthen it from the next heartbeat heard, and
//! a silence the timeout does not cover is an outage, not loss.

use std::time::{Duration, Instant};

use bully_core::{Config, Message, Node, NodeId, Term};

const INTERVAL: Duration = Duration::from_millis(100);

/// Process 4 following 5 in term 1 from `start`.
fn follower_of_5(config: Config, start: Instant) -> Node {
    let mut node = Node::new(NodeId(4), (1..=5).map(NodeId), config).unwrap();
    node.handle_message(
        start,
        NodeId(5),
        Message::Coordinator {
            term: Term(1),
            round: 0,
        },
    );
    while node.poll_transmit().is_some() {}
    while node.poll_event().is_some() {}
    assert_eq!(node.leader().map(|leader| leader.id), Some(NodeId(5)));
    node
}

/// 4 hears the heartbeats of `rounds`, each at its round's time; returns when
/// its leader timeout is due after the last one, counted from that heartbeat.
fn hears(node: &mut Node, start: Instant, rounds: impl IntoIterator<Item = u64>) -> Duration {
    let mut last = start;
    for round in rounds {
        last = start + INTERVAL * u32::try_from(round).unwrap();
        node.handle_message(
            last,
            NodeId(5),
            Message::Heartbeat {
                term: Term(1),
                round,
            },
        );
    }
    node.poll_timeout().expect("the leader timeout") - last
}

#[test]
fn process_4_hearing_every_heartbeat_suspects_5_after_the_configured_timeout() {
    let start = Instant::now();
    let mut node = follower_of_5(Config::default(), start);
    assert_eq!(hears(&mut node, start, 1..=200), Duration::from_millis(500));
}

#[test]
fn process_4_waits_longer_from_the_first_heartbeat_after_two_it_missed() {
    let start = Instant::now();
    let mut node = follower_of_5(Config::default(), start);
    assert_eq!(hears(&mut node, start, 1..=20), Duration::from_millis(500));
    // Rounds 21 and 22 are lost: at a loss of about 3 in 65, five heartbeats
    // in a row must go missing (half a second and the last one's delay).
    let after_two = hears(&mut node, start, [23]);
    assert!(after_two > Duration::from_millis(500), "{after_two:?}");
    // Eight more lost among the next rounds: longer still.
    let after_ten = hears(&mut node, start, (24..=60).filter(|round| round % 4 != 0));
    assert!(
        after_ten > after_two,
        "{after_ten:?} after ten, {after_two:?} after two"
    );
    assert_eq!(
        node.stats().leaders_suspected,
        0,
        "no timeout has fired yet"
    );
}

#[test]
fn once_the_missed_rounds_left_the_window_of_64_the_configured_timeout_is_back() {
    let start = Instant::now();
    let mut node = follower_of_5(Config::default(), start);
    assert!(hears(&mut node, start, (1..=20).chain(23..=84)) > Duration::from_millis(500));
    // Rounds 21 and 22 leave the window of the last 64 rounds at rounds 85
    // and 86.
    assert_eq!(
        hears(&mut node, start, [85, 86]),
        Duration::from_millis(500)
    );
}

#[test]
fn a_silence_longer_than_the_timeout_covers_is_an_outage_not_loss() {
    let start = Instant::now();
    let mut node = follower_of_5(Config::default(), start);
    // Rounds 21 to 25 lost: the 500 ms timeout covers at most five in a row,
    // so this was a cut, not random loss, and teaches nothing about the link.
    assert_eq!(
        hears(&mut node, start, (1..=20).chain(26..=30)),
        Duration::from_millis(500)
    );
}

#[test]
fn with_the_adaptation_off_missed_heartbeats_change_nothing() {
    let start = Instant::now();
    let config = Config::default().with_loss_adaptive_detection(false);
    let mut node = follower_of_5(config, start);
    assert_eq!(
        hears(&mut node, start, (1..=60).filter(|round| round % 3 != 0)),
        Duration::from_millis(500)
    );
}

#[test]
fn process_4_counts_its_suspicion_when_the_timeout_fires() {
    let start = Instant::now();
    let mut node = follower_of_5(Config::default(), start);
    let wait = hears(&mut node, start, 1..=10);
    node.handle_timeout(start + INTERVAL * 10 + wait);
    assert_eq!(node.stats().leaders_suspected, 1);
    // And it elects (5 suspected, it is the highest it counts on).
    assert_eq!(node.stats().elections_started, 1);
}
