//! Key ids as an operator sees them during a rotation: a key reports the id it
//! was made with, and a refused frame names the key id it came under, so the
//! log says which node still sends with a retired key.
#![cfg(feature = "wire")]

use bully_core::wire::{Auth, ClusterId, Codec, Incarnation, Key, KeyId, SetupError, WireError};
use bully_core::{Message, NodeId, Term};

const CLUSTER: ClusterId = ClusterId(7);
const MEMBERS: [NodeId; 3] = [NodeId(1), NodeId(2), NodeId(3)];
const OLD_SECRET: &[u8; 32] = b"the secret retired last Tuesday!";
const NEW_SECRET: &[u8; 32] = b"the secret every node uses today";

fn codec(id: u64, auth: Auth) -> Codec {
    Codec::new(CLUSTER, NodeId(id), Incarnation(1), MEMBERS, auth).unwrap()
}

#[test]
fn a_key_reports_the_id_it_was_made_with() {
    for id in [1, 2, 41, u32::MAX] {
        let key = Key::new(KeyId(id), NEW_SECRET).unwrap();
        assert_eq!(key.id(), KeyId(id));
    }
}

#[test]
fn a_frame_under_a_retired_key_is_refused_with_that_keys_number_in_the_message() {
    // Node 3 missed the rotation and still sends under key 41; node 1 accepts
    // key 42 only.
    let mut stale = codec(3, Auth::hmac(Key::new(KeyId(41), OLD_SECRET).unwrap()));
    let mut receiver = codec(1, Auth::hmac(Key::new(KeyId(42), NEW_SECRET).unwrap()));
    let mut frame = Vec::new();
    let heartbeat = Message::Heartbeat {
        term: Term(5),
        round: 1,
    };
    stale.encode(NodeId(1), &heartbeat, &mut frame).unwrap();
    let refused = receiver.decode(&frame).unwrap_err();
    assert_eq!(refused, WireError::UnknownKey(KeyId(41)));
    assert_eq!(refused.to_string(), "unknown key id 41");
    assert_eq!(KeyId(41).to_string(), "41");
}

#[test]
fn two_keys_of_one_id_are_refused_naming_the_id() {
    let refused = Codec::new(
        CLUSTER,
        NodeId(1),
        Incarnation(1),
        MEMBERS,
        Auth::Hmac {
            current: Key::new(KeyId(9), NEW_SECRET).unwrap(),
            previous: Some(Key::new(KeyId(9), OLD_SECRET).unwrap()),
        },
    )
    .unwrap_err();
    assert_eq!(refused, SetupError::DuplicateKeyId(KeyId(9)));
    assert_eq!(refused.to_string(), "current and previous keys share id 9");
}

#[test]
fn a_key_shows_its_id_and_never_its_secret() {
    let key = Key::new(KeyId(42), NEW_SECRET).unwrap();
    let shown = format!("{key:?}");
    assert_eq!(shown, "Key { id: KeyId(42), .. }");
    assert!(!shown.contains("secret"));
}

#[test]
fn during_a_rotation_a_frame_under_neither_key_is_refused_naming_its_key() {
    // Node 1 accepts key 42 and, while the rotation runs, key 41. Node 3
    // sends under key 40, retired a rotation ago: refused as unknown, not
    // tried against either key.
    let mut old = codec(3, Auth::hmac(Key::new(KeyId(40), OLD_SECRET).unwrap()));
    let rotating = Auth::Hmac {
        current: Key::new(KeyId(42), NEW_SECRET).unwrap(),
        previous: Some(Key::new(KeyId(41), OLD_SECRET).unwrap()),
    };
    let mut receiver = codec(1, rotating);
    let mut frame = Vec::new();
    let heartbeat = Message::Heartbeat {
        term: Term(5),
        round: 1,
    };
    old.encode(NodeId(1), &heartbeat, &mut frame).unwrap();
    assert_eq!(
        receiver.decode(&frame).unwrap_err(),
        WireError::UnknownKey(KeyId(40))
    );
}
