//! Key rotation.

use super::*;

#[test]
fn a_three_step_key_rotation_never_refuses_a_frame() {
    let old = || key(1, SECRET);
    let new = || key(2, OTHER_SECRET);
    let steps = [
        Auth::hmac(old()),
        Auth::Hmac {
            current: old(),
            previous: Some(new()),
        },
        Auth::Hmac {
            current: new(),
            previous: Some(old()),
        },
        Auth::hmac(new()),
    ];
    let mut sender = codec(5);
    let mut receiver = codec(1);
    let mut frame = Vec::new();
    // Each step rolls out to the sender first, then the receiver: between the two,
    // they run adjacent steps, and must still understand each other.
    for pair in steps.windows(2) {
        sender.set_auth(pair[1].clone()).unwrap();
        sender.encode(NodeId(1), &heartbeat(), &mut frame).unwrap();
        assert!(receiver.decode(&frame).is_ok(), "sender one step ahead");
        receiver.set_auth(pair[1].clone()).unwrap();
        sender.set_auth(pair[0].clone()).unwrap();
        sender.encode(NodeId(1), &heartbeat(), &mut frame).unwrap();
        assert!(receiver.decode(&frame).is_ok(), "receiver one step ahead");
        sender.set_auth(pair[1].clone()).unwrap();
    }
    // Once retired, the old key is refused.
    let mut stale = codec(5);
    stale.encode(NodeId(1), &heartbeat(), &mut frame).unwrap();
    assert_eq!(
        receiver.decode(&frame),
        Err(WireError::UnknownKey(KeyId(1)))
    );
}

#[test]
fn a_member_added_at_runtime_is_heard_and_a_removed_one_is_refused() {
    let members = [NodeId(1), NodeId(6)];
    let mut newcomer = Codec::new(CLUSTER, NodeId(6), Incarnation(1), members, hmac()).unwrap();
    let mut receiver = codec(1);
    let mut frame = Vec::new();
    newcomer
        .encode(NodeId(1), &heartbeat(), &mut frame)
        .unwrap();
    // Before it is added, 6 is a stranger.
    assert_eq!(
        receiver.decode(&frame),
        Err(WireError::NotMember(NodeId(6)))
    );
    assert!(
        receiver
            .encode(NodeId(6), &heartbeat(), &mut Vec::new())
            .is_err()
    );

    receiver.add_member(NodeId(6)).unwrap();
    assert_eq!(
        receiver.add_member(NodeId(6)),
        Err(ConfigError::DuplicateMember(NodeId(6)).into())
    );
    newcomer
        .encode(NodeId(1), &heartbeat(), &mut frame)
        .unwrap();
    assert_eq!(receiver.decode(&frame), Ok((NodeId(6), heartbeat())));
    receiver
        .encode(NodeId(6), &heartbeat(), &mut Vec::new())
        .unwrap();

    receiver.remove_member(NodeId(6)).unwrap();
    newcomer
        .encode(NodeId(1), &heartbeat(), &mut frame)
        .unwrap();
    assert_eq!(
        receiver.decode(&frame),
        Err(WireError::NotMember(NodeId(6)))
    );
    assert_eq!(
        receiver.encode(NodeId(6), &heartbeat(), &mut Vec::new()),
        Err(WireError::NotMember(NodeId(6)))
    );
    assert_eq!(
        receiver.remove_member(NodeId(6)),
        Err(SetupError::NotMember(NodeId(6)))
    );
    assert_eq!(
        receiver.remove_member(NodeId(1)),
        Err(ConfigError::MissingSelf(NodeId(1)).into())
    );
    assert_eq!(receiver.members(), &MEMBERS);
}
