//! `bully-peers`: the side-by-side tables (see README.md).
#![forbid(unsafe_code)]

use clap::{Parser, Subcommand};

use bully_peers::scenario::Partition;
use bully_peers::system::System;
use bully_peers::tables;

#[derive(Parser)]
#[command(about = "bully-core, raft-rs and omnipaxos's BLE in one deterministic event loop")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Every member boots at once: time and messages to agreement and to quiet.
    Cold {
        #[arg(long, value_delimiter = ',', default_value = "5,10,25,100,1000")]
        nodes: Vec<u64>,
        #[arg(long, value_delimiter = ',')]
        systems: Vec<System>,
        /// Seeds per size up to 25 (half as many at 100, one above).
        #[arg(long, default_value_t = 10)]
        seeds: u64,
    },
    /// The agreed leader crashes; everyone detects it by its own timeout.
    Crash {
        #[arg(long, value_delimiter = ',', default_value = "5,10,25,100")]
        nodes: Vec<u64>,
        #[arg(long, value_delimiter = ',')]
        systems: Vec<System>,
        #[arg(long, default_value_t = 10)]
        seeds: u64,
    },
    /// Issue 12's partial partitions for 20 s, then healed.
    Partitions {
        #[arg(long, value_delimiter = ',')]
        scenarios: Vec<Partition>,
        #[arg(long, value_delimiter = ',')]
        systems: Vec<System>,
        #[arg(long, default_value_t = 20)]
        seeds: u64,
    },
}

fn or_all<T: Copy>(chosen: Vec<T>, all: &[T]) -> Vec<T> {
    if chosen.is_empty() { all.to_vec() } else { chosen }
}

fn main() {
    match Cli::parse().command {
        Command::Cold {
            nodes,
            systems,
            seeds,
        } => print!(
            "{}",
            tables::elections(false, &nodes, &or_all(systems, &System::ALL), seeds)
        ),
        Command::Crash {
            nodes,
            systems,
            seeds,
        } => print!(
            "{}",
            tables::elections(true, &nodes, &or_all(systems, &System::ALL), seeds)
        ),
        Command::Partitions {
            scenarios,
            systems,
            seeds,
        } => print!(
            "{}",
            tables::partitions(
                &or_all(scenarios, &Partition::ALL),
                &or_all(systems, &System::ALL),
                seeds
            )
        ),
    }
}
