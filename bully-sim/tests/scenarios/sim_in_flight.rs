//! What the simulator shows of the messages on their way: who sent each to whom,
//! when it left and when it lands, in delivery order (what a viewer draws).

use bully_core::{Config, MessageKind, NodeId};
use bully_sim::Simulation;

#[test]
fn process_4s_elections_are_seen_on_their_way_to_5_6_and_7_until_each_lands() {
    // The lecture notes' seven processes, nobody leading yet; 4 calls an
    // election.
    let mut sim = Simulation::new(1, (1..=7).map(NodeId), Config::default()).unwrap();
    sim.wake_all();
    let delay_us = sim.message_delay().as_micros() as u64;
    sim.command(NodeId(4), |node, now| node.start_election(now))
        .unwrap();
    let sent_us = sim.elapsed().as_micros() as u64;

    let on_the_way: Vec<(NodeId, NodeId, MessageKind, u64, u64)> = sim
        .messages_in_flight()
        .map(|m| (m.from, m.to, m.message.kind(), m.sent_us, m.arrives_us))
        .collect();
    let elections = |to: &[u64]| -> Vec<_> {
        to.iter()
            .map(|&to| {
                let arrives = sent_us + delay_us;
                (
                    NodeId(4),
                    NodeId(to),
                    MessageKind::Election,
                    sent_us,
                    arrives,
                )
            })
            .collect()
    };
    assert_eq!(on_the_way, elections(&[5, 6, 7]));
    assert_eq!(sim.in_flight(), 3);

    // The first to land is the first sent: 5 has it, 4's to 6 and 7 are still on
    // their way, ahead of the ones 5 sends them now.
    assert!(sim.step());
    let elections: Vec<(NodeId, NodeId)> = sim
        .messages_in_flight()
        .filter(|m| m.message.kind() == MessageKind::Election)
        .map(|m| (m.from, m.to))
        .collect();
    let pairs = [(4, 6), (4, 7), (5, 6), (5, 7)].map(|(a, b)| (NodeId(a), NodeId(b)));
    assert_eq!(elections, pairs);
    // 5 answered at once, and called its own election: they leave now.
    let answer = sim
        .messages_in_flight()
        .find(|m| m.message.kind() == MessageKind::Answer)
        .expect("5 answers 4");
    assert_eq!((answer.from, answer.to), (NodeId(5), NodeId(4)));
    assert_eq!(answer.sent_us, sent_us + delay_us);
    assert!(answer.arrives_us > answer.sent_us);
    assert_eq!(sim.in_flight(), sim.messages_in_flight().count());
}

#[test]
fn the_next_instant_is_when_4s_elections_land_and_then_when_the_answers_do() {
    let mut sim = Simulation::new(1, (1..=7).map(NodeId), Config::default()).unwrap();
    // Up and idle, as in the setting of Soundarabai et al.'s Table 1: nothing is
    // due until 4 calls.
    sim.wake_all();
    assert_eq!(sim.next_instant(), None, "nobody started: nothing is due");
    let delay = sim.message_delay();
    let start = sim.now();
    sim.command(NodeId(4), |node, now| node.start_election(now))
        .unwrap();
    assert_eq!(sim.next_instant(), Some(start + delay));
    // Three Elections land at that instant, one step each.
    for _ in 0..3 {
        assert!(sim.step());
    }
    let next = sim
        .next_instant()
        .expect("answers and elections on their way");
    assert!(next > start + delay);
    let first = sim
        .messages_in_flight()
        .next()
        .expect("something in flight");
    assert_eq!(u128::from(first.arrives_us), (next - start).as_micros());
}
