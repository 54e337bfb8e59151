//! When a member stands for election, told one node at a time: what it sends
//! after an election of its own came to nothing.
//!
//! The fault sweeps check that the right member ends up leading; these stories
//! pin the steps on the way, which a sweep cannot tell apart (a member that
//! elects at once instead of probing first still ends up agreed on, after more
//! messages).

use std::time::Instant;

use bully_core::{Algorithm, Config, Message, Node, NodeId, Transmit};

fn ids(range: std::ops::RangeInclusive<u64>) -> Vec<NodeId> {
    range.map(NodeId).collect()
}

fn drain(node: &mut Node) -> Vec<Transmit> {
    std::iter::from_fn(|| node.poll_transmit()).collect()
}

/// Fires the node's next timer, returning when it fell due and what it sent.
fn next_timer(node: &mut Node) -> (Instant, Vec<Transmit>) {
    let due = node.poll_timeout().expect("a timer is armed");
    node.handle_timeout(due);
    (due, drain(node))
}

fn kinds(sent: &[Transmit]) -> Vec<(u64, &'static str)> {
    sent.iter()
        .map(|t| {
            let kind = match t.message {
                Message::Election { .. } => "election",
                Message::Answer { .. } => "answer",
                Message::Coordinator { .. } => "coordinator",
                Message::Probe { .. } => "probe",
                Message::ProbeReply { .. } => "probe-reply",
                Message::Heartbeat { .. } => "heartbeat",
                Message::Ack { .. } => "ack",
                _ => "other",
            };
            (t.to.0, kind)
        })
        .collect()
}

#[test]
fn process_2_whose_election_came_to_nothing_probes_before_it_stands_again() {
    // Without a quorum: 2 elects, 3 answers ("I am alive and higher"), and no
    // Coordinator ever comes (3 crashed mid-election, or a partial partition
    // keeps 3's announcement from 2). 2 does not start over blindly in a new
    // term: it first asks everyone whether it should.
    for algorithm in [Algorithm::Classic, Algorithm::Modified] {
        let config = Config::default().with_algorithm(algorithm);
        let t0 = Instant::now();
        let mut node = Node::new(NodeId(2), ids(1..=3), config).unwrap();
        node.start_election(t0);
        let term = node.term();
        let elections = drain(&mut node);
        assert!(
            kinds(&elections).contains(&(3, "election")),
            "{algorithm:?}: {elections:?}"
        );
        node.handle_message(t0, NodeId(3), Message::Answer { term });
        drain(&mut node);
        // Modified Bully: 2 then tells 3 to take over, and waits for it.
        let mut sent = Vec::new();
        for _ in 0..4 {
            let (_, out) = next_timer(&mut node);
            if !out.is_empty() {
                sent = out;
                break;
            }
        }
        assert_eq!(
            kinds(&sent),
            vec![(1, "probe"), (3, "probe")],
            "{algorithm:?}: after its own election failed, 2 probes first"
        );
        assert_eq!(node.term(), term, "{algorithm:?}: a probe raises no term");
    }
}
