//! Unit tests of the in-memory network: its partitions, isolations, heals and
//! counters, its delay, and its seeded drops.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bully_core::{Message, NodeId, Term};

use super::{MemEndpoint, MemNetwork, MemStats};

/// An endpoint that keeps what it is handed, with the delay it was asked for.
struct Probe {
    received: Received,
}

type Received = Arc<Mutex<Vec<(NodeId, Duration)>>>;

impl MemEndpoint for Probe {
    type Mailbox = Received;

    fn open(_network: MemNetwork<Probe>, _id: NodeId) -> (Received, Probe) {
        let received = Received::default();
        (received.clone(), Probe { received })
    }

    fn deliver(mailbox: &Received, from: NodeId, _message: Message, delay: Duration) -> bool {
        mailbox.lock().unwrap().push((from, delay));
        true
    }
}

fn stats(delivered: u64, blocked: u64, lost: u64, undeliverable: u64) -> MemStats {
    MemStats {
        delivered,
        blocked,
        lost,
        undeliverable,
    }
}

#[test]
fn the_mem_network_blocks_isolates_heals_and_counts() {
    let network = MemNetwork::<Probe>::new();
    let heartbeat = Message::Heartbeat {
        term: Term(1),
        round: 0,
    };
    let send = |from: u64, to: u64| network.deliver(NodeId(from), NodeId(to), &heartbeat);
    let [one, two, three] = [1, 2, 3].map(|id| network.endpoint(NodeId(id)));
    let _ = (one, two, three);

    network.partition(&[NodeId(1)], &[NodeId(2)]);
    send(1, 2);
    send(2, 1);
    send(1, 3);
    assert_eq!(network.stats(), stats(1, 2, 0, 0));
    network.repair(&[NodeId(2)], &[NodeId(1)]);
    network.partition_oneway(&[NodeId(1)], &[NodeId(2)]);
    send(1, 2);
    send(2, 1);
    assert_eq!(network.stats(), stats(2, 3, 0, 0));

    network.heal();
    network.isolate(NodeId(3));
    let _four = network.endpoint(NodeId(4));
    send(4, 3);
    send(3, 1);
    network.repair(&[NodeId(3)], &[NodeId(1), NodeId(4)]);
    send(3, 4);
    assert_eq!(
        network.stats(),
        stats(2, 6, 0, 0),
        "only heal ends an isolation"
    );
    network.heal();
    send(3, 4);
    network.detach(NodeId(4));
    send(3, 4);
    send(3, 7);
    assert_eq!(network.stats(), stats(3, 6, 0, 2));
}

#[test]
fn the_mem_network_delays_and_drops_repeatably_by_seed() {
    let heartbeat = Message::Heartbeat {
        term: Term(1),
        round: 0,
    };
    let lost = |seed: u64| {
        let network = MemNetwork::<Probe>::with_seed(seed);
        let _two = network.endpoint(NodeId(2));
        network.set_drop_rate(0.25);
        for _ in 0..1000 {
            network.deliver(NodeId(1), NodeId(2), &heartbeat);
        }
        let stats = network.stats();
        assert_eq!(stats.delivered + stats.lost, 1000);
        stats.lost
    };
    assert_eq!(lost(7), lost(7));
    assert_eq!([lost(7), lost(8)], [248, 247]);

    let network = MemNetwork::<Probe>::new();
    let two = network.endpoint(NodeId(2));
    network.deliver(NodeId(1), NodeId(2), &heartbeat);
    network.set_delay(Duration::from_millis(5));
    network.deliver(NodeId(3), NodeId(2), &heartbeat);
    assert_eq!(
        *two.received.lock().unwrap(),
        [
            (NodeId(1), Duration::ZERO),
            (NodeId(3), Duration::from_millis(5))
        ]
    );
    network.set_drop_rate(7.0);
    network.deliver(NodeId(1), NodeId(2), &heartbeat);
    assert_eq!(
        network.stats(),
        stats(2, 0, 1, 0),
        "a rate above 1 loses everything"
    );
}
