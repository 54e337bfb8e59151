//! The wire format's cost per message kind: encode + authenticate on the sender,
//! verify + decode on the receiver, and each kind's frame size.
//!
//! `cargo bench -p bully-core --features wire --bench wire`

use std::hint::black_box;
use std::time::Duration;

use bully_core::wire::{Auth, ClusterId, Codec, Incarnation, Key, KeyId};
use bully_core::{Message, NodeId, Term};
use criterion::{BatchSize, Criterion};

const MEMBERS: [NodeId; 5] = [NodeId(1), NodeId(2), NodeId(3), NodeId(4), NodeId(5)];

fn codec(id: u64) -> Codec {
    let key = Key::new(KeyId(1), b"a benchmark secret of 32 bytes!!").expect("long enough");
    Codec::new(
        ClusterId(1),
        NodeId(id),
        Incarnation(1),
        MEMBERS,
        Auth::hmac(key),
    )
    .expect("valid setup")
}

/// One message of each kind with realistic values: a term past the one-byte varint
/// range, and ring lists naming the whole five-member cluster.
fn messages() -> Vec<Message> {
    let term = Term(1_000);
    let active = MEMBERS.to_vec();
    vec![
        Message::Election { term },
        Message::Answer { term },
        Message::Coordinator { term, round: 0 },
        Message::Heartbeat { term, round: 1 },
        Message::Ack { term, round: 1 },
        Message::Resign {
            term,
            successor: None,
        },
        Message::Takeover { term },
        Message::RingElection {
            term,
            initiator: NodeId(2),
            active: active.clone(),
        },
        Message::RingCoordinator {
            term,
            leader: NodeId(5),
            initiator: NodeId(2),
            active,
        },
    ]
}

fn print_sizes() {
    let mut sender = codec(5);
    let mut frame = Vec::new();
    println!("encoded frame sizes (term 1000, ring lists of 5 ids):");
    for message in messages() {
        sender
            .encode(NodeId(1), &message, &mut frame)
            .expect("encodes");
        println!("  {:<16} {:>3} bytes", message.kind().name(), frame.len());
    }
}

fn bench(c: &mut Criterion) {
    let mut encode = c.benchmark_group("encode+authenticate");
    for message in messages() {
        let mut sender = codec(5);
        let mut frame = Vec::with_capacity(256);
        encode.bench_function(message.kind().name(), |b| {
            b.iter(|| {
                sender
                    .encode(NodeId(1), black_box(&message), &mut frame)
                    .expect("encodes");
                black_box(frame.len())
            })
        });
    }
    encode.finish();

    let mut decode = c.benchmark_group("verify+decode");
    for message in messages() {
        let mut frame = Vec::new();
        codec(5)
            .encode(NodeId(1), &message, &mut frame)
            .expect("encodes");
        // A frame decodes once per receiver (the second time is a replay), so each
        // iteration gets a fresh receiver, built outside the timed part.
        let receiver = codec(1);
        decode.bench_function(message.kind().name(), |b| {
            b.iter_batched_ref(
                || receiver.clone(),
                |receiver| receiver.decode(black_box(&frame)).expect("accepted"),
                BatchSize::SmallInput,
            )
        });
    }
    decode.finish();
}

fn main() {
    print_sizes();
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
}
