//! Runs the seeds' scenarios in the deterministic simulator.
//!
//! With no arguments: seed 001's seven-process example, as a timeline and a Mermaid
//! sequence diagram.

use std::process::ExitCode;

use bully_core::sim::Simulation;
use bully_core::{Config, NodeId};
use bully_examples::{leaders, timeline};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "Bully elections in the deterministic simulator")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Seed 001's example: 7 crashes, 4 notices, 6 wins, 7 recovers and takes over.
    Example {
        /// Simulator seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command.unwrap_or(Command::Example { seed: 1 }) {
        Command::Example { seed } => example(seed),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn example(seed: u64) -> Result<(), Box<dyn std::error::Error>> {
    let config = Config::default();
    let mut sim = Simulation::new(seed, (1..=7).map(NodeId), config.clone())?;
    sim.enable_trace();
    println!("Seed 001's example: processes 1..7, classic Bully.");
    println!(
        "One message time (T_M) = {:?}; an unanswered Election is given up after 2*T_M + P_p = {:?}.\n",
        sim.message_delay(),
        config.answer_timeout()
    );

    sim.start_all();
    sim.run_for(sim.settle_bound());
    println!(
        "All seven start at once; the highest wins. Leaders: {}\n",
        leaders(&sim)
    );

    let mark = sim.trace().len();
    let from_us = sim.elapsed().as_micros() as u64;
    sim.crash(NodeId(7))?;
    sim.reset_counts();
    sim.command(NodeId(4), |node, now| node.suspect(now, NodeId(7)))??;
    sim.run_for(config.coordinator_timeout());
    println!("Process 4 notices 7 is down and holds an election (time in message delays):");
    print!("{}", timeline(&sim, &sim.trace()[mark..], from_us));
    println!(
        "=> {} messages ({}); leaders: {}\n",
        sim.sent().total(),
        sim.sent(),
        leaders(&sim)
    );

    let mark = sim.trace().len();
    let from_us = sim.elapsed().as_micros() as u64;
    sim.reset_counts();
    sim.restart_durable(NodeId(7))?;
    sim.run_for(config.answer_timeout());
    println!("Process 7 recovers, restarts the election, and bullies its way back:");
    print!("{}", timeline(&sim, &sim.trace()[mark..], from_us));
    println!(
        "=> {} messages ({}); leaders: {}\n",
        sim.sent().total(),
        sim.sent(),
        leaders(&sim)
    );

    println!("Mermaid sequence diagram of the whole run (heartbeats left out):\n");
    println!("```mermaid\n{}```", sim.mermaid(false));
    let leader = sim
        .agreed_leader()
        .ok_or("the cluster did not agree on a leader")?;
    println!("\nfinal leader: {leader}");
    if !sim.violations().is_empty() {
        return Err(format!("safety violations: {:?}", sim.violations()).into());
    }
    Ok(())
}
