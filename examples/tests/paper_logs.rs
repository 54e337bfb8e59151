//! Golden tests: the simulator's elections against the logs printed in
//! Soundarabai et al., "Improved Bully Election Algorithm for Distributed
//! Systems", message by message.
//!
//! The paper's simulator runs one election after another and logs sends and
//! receipts in its own order, so the logs are compared as multisets of (kind,
//! sender, receiver), and then in order within each sender. The fixtures under
//! `tests/fixtures/` are the paper's lines, copied verbatim.

use std::collections::BTreeMap;
use std::process::Command;

use bully_core::{Algorithm, Config, MessageKind, NodeId};
use bully_sim::paper_log::{self, LogMessage};
use bully_sim::scenario;

const FIGURE_6: &str = include_str!("fixtures/figure6.log");
const FIGURES_3_4: &str = include_str!("fixtures/figures3-4.log");
const FIGURES_3_4_SECOND_COPY: &str = include_str!("fixtures/figures3-4-second-copy.log");

fn message(kind: MessageKind, from: u64, to: u64) -> LogMessage {
    LogMessage {
        kind,
        from: NodeId(from),
        to: NodeId(to),
    }
}

/// The messages as a multiset: how many of each (kind, sender, receiver).
fn multiset(messages: &[LogMessage]) -> BTreeMap<LogMessage, usize> {
    let mut counts = BTreeMap::new();
    for &message in messages {
        *counts.entry(message).or_insert(0) += 1;
    }
    counts
}

/// Each sender's messages in the order it sent them: (kind, receiver).
fn per_sender(messages: &[LogMessage]) -> BTreeMap<NodeId, Vec<(MessageKind, NodeId)>> {
    let mut senders: BTreeMap<NodeId, Vec<(MessageKind, NodeId)>> = BTreeMap::new();
    for message in messages {
        senders
            .entry(message.from)
            .or_default()
            .push((message.kind, message.to));
    }
    senders
}

/// Each sender's messages of each kind, in order: the receivers.
fn per_sender_and_kind(messages: &[LogMessage]) -> BTreeMap<(NodeId, MessageKind), Vec<NodeId>> {
    let mut lists: BTreeMap<(NodeId, MessageKind), Vec<NodeId>> = BTreeMap::new();
    for message in messages {
        lists
            .entry((message.from, message.kind))
            .or_default()
            .push(message.to);
    }
    lists
}

fn count(messages: &[LogMessage], kind: MessageKind) -> usize {
    messages
        .iter()
        .filter(|message| message.kind == kind)
        .count()
}

/// What the simulator sent when `initiator` of `1..=n` alone started an election.
fn simulated(algorithm: Algorithm, n: u64, initiator: u64) -> Vec<LogMessage> {
    let config = Config::default().with_algorithm(algorithm);
    let (_, sim) = scenario::one_initiator_traced(&config, n, NodeId(initiator)).unwrap();
    paper_log::sends(sim.trace())
}

/// What `simulate trace` prints, read back with the same parser as the paper's logs.
fn trace_command(algorithm: &str) -> Vec<LogMessage> {
    let output = Command::new(env!("CARGO_BIN_EXE_simulate"))
        .args([
            "trace",
            "--algorithm",
            algorithm,
            "--nodes",
            "10",
            "--initiator",
            "4",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.starts_with("Election Algorithm Simulator Started !!!!\n"));
    paper_log::parse(&stdout).unwrap()
}

/// Figures 3 and 4 as printed, plus the one line lost between the figures.
fn figures_3_and_4_completed() -> Vec<LogMessage> {
    let mut paper = paper_log::parse(FIGURES_3_4).unwrap();
    // Figure 3 ends with 8's answer to 5 and Figure 4 opens with 9's answer to 5:
    // 5's Election to 9 fell between them, in both copies of the paper.
    let at = paper
        .iter()
        .position(|&m| m == message(MessageKind::Answer, 9, 5))
        .unwrap();
    paper.insert(at, message(MessageKind::Election, 5, 9));
    paper
}

#[test]
fn the_parser_reads_both_copies_of_the_papers_punctuation() {
    let colon = paper_log::parse("Message sent : ElectionMessage : 4:4->5").unwrap();
    let dash = paper_log::parse("Message sent : ElectionMessage : 4-4->5").unwrap();
    assert_eq!(colon, dash);
    assert_eq!(colon, vec![message(MessageKind::Election, 4, 5)]);
    let three = paper_log::parse("Message Received : ElectionMessageResponse : 5...5->4");
    let five = paper_log::parse("Message Received : ElectionMessageResponse : 5.....5->4");
    assert_eq!(three, five);
    assert_eq!(five.unwrap(), vec![message(MessageKind::Answer, 5, 4)]);
    for name in ["CoordinatingMsg", "CoordinatordMsg", "Coordinating"] {
        let line = format!("Message sent : {name} : 10-10->1");
        assert_eq!(
            paper_log::parse(&line).unwrap(),
            vec![message(MessageKind::Coordinator, 10, 1)]
        );
    }
    assert_eq!(
        paper_log::parse("Message sent : ElectedAsCoordinator : 4-4->10").unwrap(),
        vec![message(MessageKind::Takeover, 4, 10)]
    );
    assert!(paper_log::parse("Message sent : Gossip : 4-4->10").is_err());
    // Headings, captions and "Largest coordID" lines are not messages.
    assert!(
        paper_log::parse("Node 10 is elected as the Coordinator\nLargest coordID : 10\n")
            .unwrap()
            .is_empty()
    );
}

#[test]
fn figure_6_the_modified_election_of_process_4_among_10() {
    let paper = paper_log::parse(FIGURE_6).unwrap();
    // Figure 6: Elections to all nine others (the lower 1, 2, 3 included), answers
    // from the six higher, 4 tells 10 to take over, 10 announces to the nine others.
    assert_eq!(count(&paper, MessageKind::Election), 9);
    assert_eq!(count(&paper, MessageKind::Answer), 6);
    assert_eq!(count(&paper, MessageKind::Takeover), 1);
    assert_eq!(count(&paper, MessageKind::Coordinator), 9);
    assert_eq!(paper.len(), 25, "equation (1) says 2(N-P)+N = 22");

    let sim = simulated(Algorithm::Modified, 10, 4);
    assert_eq!(
        multiset(&sim),
        multiset(&paper),
        "the same messages, senders and receivers"
    );
    assert_eq!(
        per_sender(&sim),
        per_sender(&paper),
        "and each process sends them in the paper's order"
    );
}

#[test]
fn figures_3_and_4_the_classic_election_of_process_4_among_10() {
    let first = paper_log::parse(FIGURES_3_4).unwrap();
    let second = paper_log::parse(FIGURES_3_4_SECOND_COPY).unwrap();
    assert_eq!(
        first, second,
        "the paper's two copies log the same messages"
    );

    // Every answer follows an Election the other way, except 9's answer to 5.
    let unasked: Vec<&LogMessage> = first
        .iter()
        .filter(|m| m.kind == MessageKind::Answer)
        .filter(|m| !first.contains(&message(MessageKind::Election, m.to.0, m.from.0)))
        .collect();
    assert_eq!(unasked, vec![&message(MessageKind::Answer, 9, 5)]);
    assert_eq!(count(&first, MessageKind::Election), 20, "as printed");

    let paper = figures_3_and_4_completed();
    assert_eq!(count(&paper, MessageKind::Election), 21);
    assert_eq!(count(&paper, MessageKind::Answer), 21);
    assert_eq!(count(&paper, MessageKind::Coordinator), 9);
    assert_eq!(paper.len(), 51, "equation (3): (N-P+1)(N-P)+N-1 = 51");

    let sim = simulated(Algorithm::Classic, 10, 4);
    assert_eq!(
        multiset(&sim),
        multiset(&paper),
        "the same messages, senders and receivers"
    );
    assert_eq!(
        per_sender_and_kind(&sim),
        per_sender_and_kind(&paper),
        "each process sends each kind in the paper's order"
    );

    // Across kinds the order differs, because here the elections run at once:
    // each process answers an Election when it arrives. 6 answers 4 and holds its
    // own election a message time before 5's Election reaches it (the paper logs
    // 6's answer to 5 first), and 10 hears 4's Election one message time in and,
    // with nobody above it, announces at once, answering 5..9 afterwards.
    let (sim_order, paper_order) = (per_sender(&sim), per_sender(&paper));
    let answer = |to| (MessageKind::Answer, NodeId(to));
    let election = |to| (MessageKind::Election, NodeId(to));
    let coordinator = |to| (MessageKind::Coordinator, NodeId(to));
    assert_eq!(
        sim_order[&NodeId(6)],
        [
            answer(4),
            election(7),
            election(8),
            election(9),
            election(10),
            answer(5)
        ]
    );
    assert_eq!(
        paper_order[&NodeId(6)],
        [
            answer(4),
            answer(5),
            election(7),
            election(8),
            election(9),
            election(10)
        ]
    );
    let mut ten = vec![answer(4)];
    ten.extend((1..=9).map(coordinator));
    ten.extend((5..=9).map(answer));
    assert_eq!(sim_order[&NodeId(10)], ten);
    let mut ten_in_paper: Vec<_> = (4..=9).map(answer).collect();
    ten_in_paper.extend((1..=9).map(coordinator));
    assert_eq!(paper_order[&NodeId(10)], ten_in_paper);
    // 4 only sends Elections, so its whole order is the paper's.
    assert_eq!(sim_order[&NodeId(4)], paper_order[&NodeId(4)]);
}

#[test]
fn the_trace_command_prints_figure_6() {
    let printed = trace_command("modified");
    let paper = paper_log::parse(FIGURE_6).unwrap();
    assert_eq!(multiset(&printed), multiset(&paper));
    assert_eq!(per_sender(&printed), per_sender(&paper));
}

#[test]
fn the_trace_command_prints_figures_3_and_4() {
    let printed = trace_command("classic");
    let paper = figures_3_and_4_completed();
    assert_eq!(multiset(&printed), multiset(&paper));
    assert_eq!(per_sender_and_kind(&printed), per_sender_and_kind(&paper));
}

#[test]
fn the_trace_command_draws_the_same_election_in_mermaid() {
    let output = Command::new(env!("CARGO_BIN_EXE_simulate"))
        .args([
            "trace",
            "--algorithm",
            "modified",
            "--nodes",
            "10",
            "--initiator",
            "4",
        ])
        .arg("--mermaid")
        .output()
        .unwrap();
    assert!(output.status.success());
    let diagram = String::from_utf8(output.stdout).unwrap();
    assert!(diagram.starts_with("sequenceDiagram\n"));
    let arrows = diagram.lines().filter(|line| line.contains("->>")).count();
    assert_eq!(arrows, 25, "one arrow per message, heartbeats left out");
    assert!(diagram.contains("P4->>P10: Takeover(t1)"));
    assert!(diagram.contains("P10->>P1: Coordinator(t1)"));
}
