//! Hostile members at the protocol level, for every algorithm: strangers, terms
//! far ahead, floods, and the bound on what one input can make a node send.
//!
//! The stated bounds (see `Node`'s docs): one input makes a node queue at most
//! `members().len()` transmits; one Election makes it send at most one Answer,
//! and it starts or joins at most one election per term. So a member that floods
//! `F` Elections over `d` distinct terms at a cluster of `N` makes the others send
//! at most `F` Answers plus, per distinct term, one election each: `F + d*N*(N-1)`
//! messages besides heartbeats.

use bully_core::{
    Algorithm, Config, DropReason, Message, MessageKind, Node, NodeId, Term, Transmit,
};
use bully_sim::scenario;
use std::time::Instant;

const ALGORITHMS: [Algorithm; 3] = [Algorithm::Classic, Algorithm::Modified, Algorithm::Ring];

fn settled(algorithm: Algorithm, n: u64) -> bully_sim::Simulation {
    let config = Config::default().with_algorithm(algorithm);
    let sim = scenario::settled(&config, n, 5).unwrap();
    assert_eq!(sim.agreed_leader(), Some(NodeId(n)));
    sim
}

/// Messages the members sent since the last reset, heartbeats and the injected
/// flood left out.
fn replies(sim: &bully_sim::Simulation, flood_kind: MessageKind, flood: u64) -> u64 {
    let sent = sim.sent();
    sent.total() - sent[MessageKind::Heartbeat] - if sent[flood_kind] >= flood { flood } else { 0 }
}

#[test]
fn a_member_flooding_ten_thousand_elections_of_one_term_changes_nothing_but_the_term() {
    for algorithm in ALGORITHMS {
        let n = 7;
        let mut sim = settled(algorithm, n);
        let term = sim.node(NodeId(1)).unwrap().term();
        sim.reset_counts();
        let flood = 10_000;
        for i in 0..flood {
            let to = NodeId(2 + i % (n - 1));
            let election = Message::Election {
                term: Term(term.0 + 1),
            };
            sim.inject(NodeId(1), to, election).unwrap();
        }
        sim.run_for(sim.settle_bound());
        assert_eq!(
            sim.agreed_leader(),
            Some(NodeId(n)),
            "{algorithm:?}: the leader stays"
        );
        let bound = flood + n * (n - 1);
        let replies = replies(&sim, MessageKind::Election, flood);
        assert!(
            replies <= bound,
            "{algorithm:?}: {replies} replies > {bound}"
        );
        assert!(sim.violations().is_empty(), "{:?}", sim.violations());
    }
}

#[test]
fn a_member_flooding_elections_of_ever_higher_terms_costs_at_most_one_election_per_term() {
    for algorithm in ALGORITHMS {
        let n = 7;
        let mut sim = settled(algorithm, n);
        let term = sim.node(NodeId(1)).unwrap().term();
        sim.reset_counts();
        let terms = 200;
        for t in 1..=terms {
            for to in 2..=n {
                let election = Message::Election {
                    term: Term(term.0 + t),
                };
                sim.inject(NodeId(1), NodeId(to), election).unwrap();
            }
            sim.run_for(sim.message_delay() / 4);
        }
        sim.run_for(sim.settle_bound());
        assert_eq!(
            sim.agreed_leader(),
            Some(NodeId(n)),
            "{algorithm:?}: the leader stays"
        );
        let flood = terms * (n - 1);
        let bound = flood + terms * n * (n - 1);
        let replies = replies(&sim, MessageKind::Election, flood);
        assert!(
            replies <= bound,
            "{algorithm:?}: {replies} replies > {bound}"
        );
    }
}

#[test]
fn a_forged_coordinator_from_a_made_up_high_id_takes_over_nothing() {
    for algorithm in ALGORITHMS {
        let n = 5;
        let mut sim = settled(algorithm, n);
        for to in 1..=n {
            let forged = Message::Coordinator {
                term: Term(1_000),
                round: 0,
            };
            sim.inject(NodeId(99), NodeId(to), forged).unwrap();
        }
        sim.run_for(sim.settle_bound());
        assert_eq!(sim.agreed_leader(), Some(NodeId(n)));
        let refused: u64 = (1..=n)
            .map(|id| sim.node(NodeId(id)).unwrap().stats().dropped[DropReason::NotMember])
            .sum();
        assert_eq!(
            refused, n,
            "{algorithm:?}: every member refused the stranger"
        );
    }
}

#[test]
fn a_term_far_ahead_is_refused_and_cannot_exhaust_the_term_space() {
    for algorithm in ALGORITHMS {
        let n = 5;
        let mut sim = settled(algorithm, n);
        let before: Vec<Term> = (1..=n)
            .map(|id| sim.node(NodeId(id)).unwrap().term())
            .collect();
        for to in 2..=n {
            sim.inject(
                NodeId(1),
                NodeId(to),
                Message::Election {
                    term: Term(u64::MAX - 1),
                },
            )
            .unwrap();
            sim.inject(
                NodeId(1),
                NodeId(to),
                Message::Coordinator {
                    term: Term(u64::MAX),
                    round: 0,
                },
            )
            .unwrap();
        }
        sim.run_for(sim.message_delay() * 2);
        let after: Vec<Term> = (1..=n)
            .map(|id| sim.node(NodeId(id)).unwrap().term())
            .collect();
        assert_eq!(before, after, "{algorithm:?}: no term moved");
        assert_eq!(sim.agreed_leader(), Some(NodeId(n)));
    }
}

fn transmits(node: &mut Node) -> Vec<Transmit> {
    std::iter::from_fn(|| node.poll_transmit()).collect()
}

#[test]
fn no_single_input_makes_any_node_send_more_than_there_are_members() {
    let now = Instant::now();
    let n = 9u64;
    let ring = |term| Message::RingElection {
        term: Term(term),
        initiator: NodeId(3),
        active: vec![NodeId(3), NodeId(4)],
    };
    let ring_coordinator = Message::RingCoordinator {
        term: Term(2),
        leader: NodeId(4),
        initiator: NodeId(3),
        active: vec![NodeId(3), NodeId(4)],
    };
    let inputs = [
        Message::Election { term: Term(1) },
        Message::Election { term: Term(7) },
        Message::Answer { term: Term(1) },
        Message::Coordinator {
            term: Term(3),
            round: 0,
        },
        Message::Heartbeat {
            term: Term(9),
            round: 1,
        },
        Message::Resign {
            term: Term(1),
            successor: None,
        },
        Message::Takeover { term: Term(4) },
        ring(1),
        ring(6),
        ring_coordinator,
    ];
    for algorithm in ALGORITHMS {
        let config = Config::default().with_algorithm(algorithm);
        for id in 1..=n {
            for from in 1..=n {
                for input in &inputs {
                    let members = (1..=n).map(NodeId);
                    let mut node = Node::new(NodeId(id), members, config.clone()).unwrap();
                    node.start(now);
                    transmits(&mut node);
                    node.handle_message(now, NodeId(from), input.clone());
                    let out = transmits(&mut node);
                    assert!(
                        out.len() <= n as usize,
                        "{algorithm:?} {id} <- {from} {input}"
                    );
                    assert!(out.iter().all(|t| t.to != NodeId(id) && t.to.0 <= n));
                    let answers = out
                        .iter()
                        .filter(|t| matches!(t.message, Message::Answer { .. }))
                        .count();
                    assert!(answers <= 1, "{algorithm:?}: one Answer per input at most");
                }
            }
        }
    }
}
