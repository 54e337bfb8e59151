//! The simulation logs of Soundarabai et al. (their Figures 3, 4 and 6): reading them, and writing
//! a simulator trace in the same style.
//!
//! The paper's lines look like this (the two copies of the paper differ in
//! punctuation: `4:4->5` or `4-4->5`, `5...5->4` or `5.....5->4`):
//!
//! ```text
//! Message sent : ElectionMessage : 4-4->5
//! Message Received : ElectionMessageResponse : 5.....5->4
//! Message sent : ElectedAsCoordinator : 4-4->10
//! Message sent : CoordinatingMsg : 10-10->1
//! ```
//!
//! An `ElectionMessageResponse` line is logged when the initiator receives it, so
//! its pair reads responder `->` initiator: the answer's sender and receiver.

use std::fmt::Write as _;

use bully_core::{Algorithm, Event, Message, MessageKind, NodeId};

use crate::{SendOutcome, TraceEntry, TraceRecord};

/// One message of a log: its kind, sender and receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LogMessage {
    /// Election, Answer, Takeover, Coordinator (or a ring kind, in this crate's logs).
    pub kind: MessageKind,
    /// The sender.
    pub from: NodeId,
    /// The receiver.
    pub to: NodeId,
}

/// The paper's name for a kind, or `None` if the paper's logs never show it.
pub fn paper_name(kind: MessageKind) -> Option<&'static str> {
    match kind {
        MessageKind::Election => Some("ElectionMessage"),
        MessageKind::Answer => Some("ElectionMessageResponse"),
        MessageKind::Takeover => Some("ElectedAsCoordinator"),
        MessageKind::Coordinator => Some("CoordinatingMsg"),
        _ => None,
    }
}

/// The kind a log's name stands for. Accepts the paper's names (with Figure 4's
/// `Coordinating` and `CoordinatordMsg` spellings) and this crate's kind names.
pub fn kind_from_name(name: &str) -> Option<MessageKind> {
    match name {
        "ElectionMessage" => Some(MessageKind::Election),
        "ElectionMessageResponse" => Some(MessageKind::Answer),
        "ElectedAsCoordinator" => Some(MessageKind::Takeover),
        "CoordinatingMsg" | "CoordinatordMsg" | "Coordinating" => Some(MessageKind::Coordinator),
        other => MessageKind::ALL
            .into_iter()
            .find(|kind| kind.name() == other),
    }
}

/// A line that looks like a message line but cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The 1-based line number.
    pub line: usize,
    /// The line.
    pub text: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: cannot read {:?}", self.line, self.text)
    }
}

impl std::error::Error for ParseError {}

/// Reads the message lines of a log (`Message sent : ...` and `Message Received :
/// ...`), in order; every other line (headings, "Node 10 is elected as the
/// Coordinator", "Largest coordID : 10", figure captions) is skipped.
pub fn parse(log: &str) -> Result<Vec<LogMessage>, ParseError> {
    let mut messages = Vec::new();
    for (index, text) in log.lines().enumerate() {
        let text = text.trim();
        if !(text.starts_with("Message sent :") || text.starts_with("Message Received :")) {
            continue;
        }
        let error = || ParseError {
            line: index + 1,
            text: text.to_owned(),
        };
        let mut fields = text.splitn(3, " : ");
        let (_, Some(name), Some(route)) = (fields.next(), fields.next(), fields.next()) else {
            return Err(error());
        };
        let kind = kind_from_name(name.trim()).ok_or_else(error)?;
        // The route is the first word: `4-4->5`, `4:4->5` or `5.....5->4`.
        let route = route.split_whitespace().next().ok_or_else(error)?;
        let (left, right) = route.split_once("->").ok_or_else(error)?;
        let from = left
            .rsplit(['-', ':', '.'])
            .next()
            .and_then(|id| id.parse().ok())
            .ok_or_else(error)?;
        let to = right.parse().map_err(|_| error())?;
        messages.push(LogMessage {
            kind,
            from: NodeId(from),
            to: NodeId(to),
        });
    }
    Ok(messages)
}

/// The messages a trace records as sent (heartbeats left out), in send order: what
/// the golden tests compare with the paper's logs.
pub fn sends(records: &[TraceRecord]) -> Vec<LogMessage> {
    records
        .iter()
        .filter_map(|record| match &record.entry {
            TraceEntry::Send {
                from, to, message, ..
            } if message.kind() != MessageKind::Heartbeat => Some(LogMessage {
                kind: message.kind(),
                from: *from,
                to: *to,
            }),
            _ => None,
        })
        .collect()
}

/// Writes a trace as the paper's simulator logs an election: sends as `Message
/// sent`, answers as `Message Received` when they arrive (as Figures 3, 4 and 6
/// show them), the winner as Figure 4 (`Node 10 is elected as the Coordinator`) or,
/// for modified Bully, as Figure 6 (`Largest coordID ...`). Heartbeats are left
/// out; messages the paper's algorithms do not have use this crate's kind names,
/// and so do the ring's hop acknowledgements (`Answer`), which answer no Election.
pub fn render(records: &[TraceRecord], algorithm: Algorithm) -> String {
    let answer = match algorithm {
        Algorithm::Classic | Algorithm::Modified => "ElectionMessageResponse",
        _ => MessageKind::Answer.name(),
    };
    let mut out = String::from("Election Algorithm Simulator Started !!!!\n");
    for record in records {
        match &record.entry {
            TraceEntry::Send {
                from,
                to,
                message,
                outcome,
                ..
            } => {
                let kind = message.kind();
                if matches!(kind, MessageKind::Heartbeat | MessageKind::Answer) {
                    continue;
                }
                if kind == MessageKind::Takeover {
                    let _ = writeln!(out, "Largest coordID : {to}");
                }
                let name = paper_name(kind).unwrap_or(kind.name());
                let _ = write!(out, "Message sent : {name} : {from}-{from}->{to}");
                write_details(&mut out, message, *outcome);
            }
            TraceEntry::Deliver { from, to, message } if message.kind() == MessageKind::Answer => {
                let _ = writeln!(out, "Message Received : {answer} : {from}.....{from}->{to}");
            }
            TraceEntry::Undeliverable { from, to, message }
                if message.kind() != MessageKind::Heartbeat =>
            {
                let _ = writeln!(out, "({} {from}->{to} lost: {to} is down)", message.kind());
            }
            TraceEntry::Event {
                node,
                event: Event::BecameLeader { .. },
            } => {
                if algorithm == Algorithm::Modified {
                    let _ = writeln!(
                        out,
                        "Largest coordID (after checking for 2nd time) : {node}"
                    );
                } else {
                    let _ = writeln!(out, "Node {node} is elected as the Coordinator");
                }
            }
            _ => {}
        }
    }
    out
}

/// Ends a `Message sent` line: the ring's token lists, and the network's verdict
/// when the message did not go out.
fn write_details(out: &mut String, message: &Message, outcome: SendOutcome) {
    match message {
        Message::RingElection { active, .. } => {
            let ids: Vec<String> = active.iter().map(NodeId::to_string).collect();
            let _ = write!(out, "   active [{}]", ids.join(", "));
        }
        Message::RingCoordinator { leader, .. } => {
            let _ = write!(out, "   leader {leader}");
        }
        _ => {}
    }
    match outcome {
        SendOutcome::InFlight => {}
        SendOutcome::Lost => out.push_str("   (lost)"),
        SendOutcome::Blocked => out.push_str("   (blocked)"),
    }
    out.push('\n');
}
