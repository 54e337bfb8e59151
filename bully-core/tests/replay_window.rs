//! The replay window as a receiver lives it: frames that arrive late, out of
//! order, fewer than 256 sequence numbers behind the newest, are accepted once;
//! older ones, and any second copy, are refused.
#![cfg(feature = "wire")]

use bully_core::wire::{Auth, ClusterId, Codec, Incarnation, REPLAY_WINDOW, WireError};
use bully_core::{Message, NodeId, Term};

#[test]
fn the_window_is_256_frames_and_a_late_frame_inside_it_is_accepted_once() {
    assert_eq!(REPLAY_WINDOW, 256);
    let members = [NodeId(1), NodeId(2)];
    let mut sender =
        Codec::new(ClusterId(7), NodeId(2), Incarnation(1), members, Auth::None).unwrap();
    let mut receiver =
        Codec::new(ClusterId(7), NodeId(1), Incarnation(1), members, Auth::None).unwrap();
    let heartbeat = Message::Heartbeat {
        term: Term(1),
        round: 1,
    };
    // 300 frames; the receiver gets frame 300 first, then the held-back ones.
    let frames: Vec<Vec<u8>> = (0..=300)
        .map(|_| {
            let mut frame = Vec::new();
            sender.encode(NodeId(1), &heartbeat, &mut frame).unwrap();
            frame
        })
        .collect();
    assert!(receiver.decode(&frames[300]).is_ok());
    // 200 behind the newest: inside the window, accepted once.
    assert!(receiver.decode(&frames[100]).is_ok());
    assert!(matches!(
        receiver.decode(&frames[100]),
        Err(WireError::Replayed { .. })
    ));
    // 255 behind: the window's far edge, accepted; 256 behind: too old.
    assert!(receiver.decode(&frames[45]).is_ok());
    assert!(matches!(
        receiver.decode(&frames[44]),
        Err(WireError::Replayed { .. })
    ));
}
