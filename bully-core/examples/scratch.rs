//! scratch
use bully_core::sim::{Simulation, TraceEntry, chaos::{random_schedule, FaultMix}};
use bully_core::{Algorithm, Config, NodeId, MessageKind, Quorum};
use std::time::Duration;
fn main() {
    let c = Config::default().with_algorithm(Algorithm::Modified).with_quorum(Quorum::Majority);
    let seed = 47412; let n = 5;
    let members: Vec<NodeId> = (1..=n).map(NodeId).collect();
    let sched = random_schedule(seed, &members, 16, Duration::from_millis(400), c.max_message_delay(), FaultMix::ALL);
    println!("{sched:?}");
    let mut sim = Simulation::new(seed, members.iter().copied(), c).unwrap();
    sim.enable_trace();
    sim.start_all();
    for a in &sched { sim.apply(a).unwrap(); if !sim.violations().is_empty() { println!("after {a:?}: {:?}", sim.violations()); break; } }
    for r in sim.trace() {
        if r.at_us < 300_000 { continue; }
        match &r.entry {
            TraceEntry::Send{from,to,message,outcome,..} if message.kind()!=MessageKind::Heartbeat && !(matches!(message, bully_core::Message::Ack{round,..} if *round>0)) => println!("{:>8} {from}->{to} {message} {outcome:?}", r.at_us/1000),
            TraceEntry::Deliver{from,to,message} if matches!(message.kind(), MessageKind::Coordinator | MessageKind::Takeover | MessageKind::Election) || matches!(message, bully_core::Message::Ack{round:0,..}) => println!("{:>8}   deliver {from}->{to} {message}", r.at_us/1000),
            TraceEntry::Event{node,event} => println!("{:>8} {node}: {event:?}", r.at_us/1000),
            TraceEntry::Crash{node} => println!("{:>8} crash {node}", r.at_us/1000),
            TraceEntry::Restart{node,durable} => println!("{:>8} restart {node} durable={durable}", r.at_us/1000),
            TraceEntry::Fault{description} => println!("{:>8} {description}", r.at_us/1000),
            TraceEntry::Command{node} => println!("{:>8} command {node}", r.at_us/1000),
            _ => {}
        }
        if r.at_us > 1_070_000 { break; }
    }
}
