//! Replays, reordering and restarts.

use super::*;

fn frames_from_5(sender: &mut Codec, count: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|n| {
            let mut frame = Vec::new();
            let term = Term(n as u64);
            sender
                .encode(
                    NodeId(1),
                    &Message::Heartbeat { term, round: 1 },
                    &mut frame,
                )
                .unwrap();
            frame
        })
        .collect()
}

proptest! {
    #[test]
    fn frames_reordered_within_the_window_are_each_accepted_once(
        order in Just((0..40usize).collect::<Vec<_>>()).prop_shuffle()
    ) {
        let frames = frames_from_5(&mut codec(5), 40);
        let mut receiver = codec(1);
        for &n in &order {
            prop_assert!(receiver.decode(&frames[n]).is_ok(), "frame {} arrives late", n);
        }
        for &n in &order {
            let replayed = matches!(receiver.decode(&frames[n]), Err(WireError::Replayed { .. }));
            prop_assert!(replayed, "frame {} comes back", n);
        }
        prop_assert_eq!(receiver.stats().accepted, 40);
        prop_assert_eq!(receiver.stats().replayed, 40);
    }
}

#[test]
fn a_frame_older_than_the_window_is_refused_even_if_never_seen() {
    let frames = frames_from_5(&mut codec(5), REPLAY_WINDOW as usize + 1);
    let mut receiver = codec(1);
    assert!(receiver.decode(&frames[REPLAY_WINDOW as usize]).is_ok());
    assert!(matches!(
        receiver.decode(&frames[0]),
        Err(WireError::Replayed { sequence: 0, .. })
    ));
    assert!(
        receiver.decode(&frames[1]).is_ok(),
        "the oldest still inside"
    );
}

#[test]
fn a_restarted_sender_with_a_higher_incarnation_is_accepted_and_its_old_life_is_not() {
    let mut receiver = codec(1);
    let old_life = frames_from_5(&mut codec_with(5, 1_700_000_000_000, hmac()), 3);
    assert!(receiver.decode(&old_life[0]).is_ok());

    // 5 restarts: sequence numbers start again at 0, under a later incarnation.
    let restarted = Incarnation::from_unix_millis(1_700_000_000_000 + 5_000);
    let mut sender = codec_with(5, restarted.0, hmac());
    let new_life = frames_from_5(&mut sender, 2);
    assert_eq!(
        receiver.decode(&new_life[0]).map(|(from, _)| from),
        Ok(NodeId(5))
    );
    assert_eq!(receiver.peer_incarnation(NodeId(5)), Some(restarted));

    // Frames of the old life, even ones never delivered, are now replays.
    assert!(matches!(
        receiver.decode(&old_life[1]),
        Err(WireError::Replayed { .. })
    ));
    assert!(receiver.decode(&new_life[1]).is_ok());
}

#[test]
fn an_incarnation_from_the_clock_grows_and_saturates() {
    use core::time::Duration;
    let boot = Incarnation::from_duration_since_epoch(Duration::from_millis(1_700_000_000_123));
    assert_eq!(boot, Incarnation::from_unix_millis(1_700_000_000_123));
    assert!(
        Incarnation::from_duration_since_epoch(Duration::from_millis(1_700_000_000_124)) > boot
    );
    assert_eq!(
        Incarnation::from_duration_since_epoch(Duration::MAX),
        Incarnation(u64::MAX)
    );
    assert_eq!(Incarnation(u64::MAX).next(), Incarnation(u64::MAX));
    assert_eq!(Incarnation(4).next(), Incarnation(5));
}
