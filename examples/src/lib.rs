//! Shared helpers for the example programs: printing simulation traces for people,
//! and the measurements, reports and plot behind `simulate`'s reproduction of the
//! sources (README.md, "Sources": Soundarabai et al.'s Table 1, equations and logs,
//! which `bully_sim::paper` and `bully_sim::paper_log` hold; the lecture notes'
//! cases; the Bully Algorithm Dance's experiments), the timed elections of
//! `simulate scale` and the partial-connectivity scenarios of `simulate partial`;
//! and a real cluster on loopback ([`loopback`]), for `cluster` and `failover`.
#![forbid(unsafe_code)]

/// The README's Rust blocks, run as doctests by `cargo test` (the fenced tokio
/// service among them).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

pub mod costs;
#[cfg(doctest)]
mod guides;
pub mod loopback;
pub mod measure;
pub mod partial;
pub mod plot;
pub mod report;
pub mod scale;

use std::fmt::Write as _;

use bully_core::{Event, MessageKind};
use bully_sim::{SendOutcome, Simulation, TraceEntry, TraceRecord};

/// Renders trace records from `from_us` on as a timeline a person can follow: one
/// line per message (heartbeats left out) and per leadership change, with the time
/// in message delays since `from_us`.
pub fn timeline(sim: &Simulation, records: &[TraceRecord], from_us: u64) -> String {
    let delay_us = sim.message_delay().as_micros().max(1) as f64;
    let mut out = String::new();
    for record in records.iter().filter(|record| record.at_us >= from_us) {
        let at = (record.at_us - from_us) as f64 / delay_us;
        let line = match &record.entry {
            TraceEntry::Send {
                from,
                to,
                message,
                outcome,
                ..
            } if message.kind() != MessageKind::Heartbeat => {
                let fate = match outcome {
                    SendOutcome::InFlight => "",
                    SendOutcome::Lost => "   (lost)",
                    SendOutcome::Blocked => "   (blocked)",
                };
                format!("{from} -> {to}  {message}{fate}")
            }
            TraceEntry::Undeliverable { from, to, message } => {
                format!("{from} -> {to}  {message}   (no answer: {to} is down)")
            }
            TraceEntry::Event { node, event } => match event {
                Event::BecameLeader { term } => format!("{node} becomes coordinator (term {term})"),
                Event::LeaderLost { leader, .. } => format!("{node} loses leader {leader}"),
                Event::SteppedDown { term } => format!("{node} steps down (term {term})"),
                _ => continue,
            },
            TraceEntry::Crash { node } => format!("{node} crashes"),
            TraceEntry::Restart { node, .. } => format!("{node} recovers"),
            _ => continue,
        };
        let _ = writeln!(out, "  {at:6.2}  {line}");
    }
    out
}

/// Who each live member names as leader, as `id:leader` pairs.
pub fn leaders(sim: &Simulation) -> String {
    sim.members()
        .iter()
        .map(|&id| match sim.node(id) {
            None => format!("{id}:down"),
            Some(node) => match node.leader() {
                Some(leader) => format!("{id}:{}", leader.id),
                None => format!("{id}:-"),
            },
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Prints the drivers' debug tracing to stderr when `verbose` (the `--verbose`
/// flag of the programs that run real nodes); otherwise they stay silent.
pub fn init_tracing(verbose: bool) {
    if verbose {
        tracing_subscriber::fmt()
            .with_max_level(tracing_subscriber::filter::LevelFilter::DEBUG)
            .with_target(false)
            .init();
    }
}
