//! What happened in a simulation, as records, JSON lines, and a Mermaid diagram.

use core::fmt::Write as _;

use bully_core::{Event, Message, MessageKind, NodeId};

use crate::network::SendOutcome;

/// One thing that happened, at `at_us` microseconds of simulated time.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TraceRecord {
    /// Simulated microseconds since the simulation began.
    pub at_us: u64,
    /// What happened.
    #[serde(flatten)]
    pub entry: TraceEntry,
}

/// The kinds of [`TraceRecord`].
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TraceEntry {
    /// A node sent a message; `outcome` says what the network did with it.
    Send {
        /// Sender.
        from: NodeId,
        /// Addressee.
        to: NodeId,
        /// The message.
        message: Message,
        /// Causal depth: the longest chain of messages leading to this one.
        depth: u64,
        /// In flight, lost or blocked.
        outcome: SendOutcome,
    },
    /// A message reached a live node.
    Deliver {
        /// Sender.
        from: NodeId,
        /// Addressee.
        to: NodeId,
        /// The message.
        message: Message,
    },
    /// A message arrived at a crashed node and vanished.
    Undeliverable {
        /// Sender.
        from: NodeId,
        /// Addressee.
        to: NodeId,
        /// The message.
        message: Message,
    },
    /// A node's timer fired.
    Timeout {
        /// The node.
        node: NodeId,
    },
    /// A node emitted an event.
    Event {
        /// The node.
        node: NodeId,
        /// The event.
        event: Event,
    },
    /// A node was started (`Node::start`).
    Start {
        /// The node.
        node: NodeId,
    },
    /// A node crashed.
    Crash {
        /// The node.
        node: NodeId,
    },
    /// A crashed node came back with a new incarnation.
    Restart {
        /// The node.
        node: NodeId,
        /// Whether it kept its term (as if persisted).
        durable: bool,
    },
    /// A command was applied to a node.
    Command {
        /// The node.
        node: NodeId,
    },
    /// The network changed.
    Fault {
        /// What changed, in words.
        description: String,
    },
}

/// Renders records as JSON lines, one record per line.
pub fn to_json_lines(records: &[TraceRecord]) -> String {
    let mut out = String::new();
    for record in records {
        // Serializing plain data with string keys cannot fail.
        if let Ok(line) = serde_json::to_string(record) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// Renders records as a Mermaid `sequenceDiagram`: a solid arrow for each message
/// sent, a crossed one for each lost or blocked, and notes for leadership changes,
/// crashes and restarts. Heartbeats are left out unless asked for.
pub fn to_mermaid(records: &[TraceRecord], members: &[NodeId], heartbeats: bool) -> String {
    let mut out = String::from("sequenceDiagram\n");
    for id in members {
        let _ = writeln!(out, "    participant P{id} as {id}");
    }
    for record in records {
        match &record.entry {
            TraceEntry::Send {
                from,
                to,
                message,
                outcome,
                ..
            } => {
                if !heartbeats && message.kind() == MessageKind::Heartbeat {
                    continue;
                }
                let arrow = match outcome {
                    SendOutcome::InFlight => "->>",
                    SendOutcome::Lost | SendOutcome::Blocked => "-x",
                };
                let _ = writeln!(out, "    P{from}{arrow}P{to}: {message}");
            }
            TraceEntry::Event {
                node,
                event: Event::BecameLeader { term },
            } => {
                let _ = writeln!(out, "    Note over P{node}: coordinator, term {term}");
            }
            TraceEntry::Crash { node } => {
                let _ = writeln!(out, "    Note over P{node}: crashed");
            }
            TraceEntry::Restart { node, .. } => {
                let _ = writeln!(out, "    Note over P{node}: restarted");
            }
            _ => {}
        }
    }
    out
}
