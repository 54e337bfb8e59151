//! Runs the sources' scenarios (README.md, "Sources") in the deterministic
//! simulator, and reproduces Table 1, the equations, logs and Figure 8 of
//! Soundarabai et al., "Improved Bully Election Algorithm for Distributed
//! Systems"; the best and worst cases of the lecture notes "Election Algorithm in
//! Distributed Systems"; and the experiments of the course exercise "Bully
//! Algorithm Dance".
//!
//! With no arguments: the lecture notes' seven-process example, as a timeline and
//! a Mermaid sequence diagram. `simulate help` lists the other commands.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use bully_core::{Algorithm, Config, NodeId, Quorum};
use bully_examples::costs::{self, COST_NODES};
use bully_examples::measure::{self, CASE_NODES, FAILOVER_NODES, TABLE_1_NODES};
use bully_examples::{leaders, plot, report, scale, timeline};
use bully_sim::Simulation;
use bully_sim::partial::{self, PartialOptions, QuorumChoice, Scenario};
use bully_sim::scenario;
use bully_sim::{paper, paper_log};
use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(about = "Bully elections in the deterministic simulator")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

/// How a measurement is printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
enum Format {
    /// Aligned columns and notes, for people.
    #[default]
    Text,
    /// A header line, then one comma-separated line per row.
    Csv,
}

/// An algorithm, as named on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum AlgorithmArg {
    /// Garcia-Molina's Bully (the tutorial, the lecture notes, Wikipedia, the
    /// Bully Algorithm Dance).
    Classic,
    /// Soundarabai et al.'s modified Bully.
    Modified,
    /// The ring algorithm (the lecture notes).
    Ring,
}

impl From<AlgorithmArg> for Algorithm {
    fn from(algorithm: AlgorithmArg) -> Algorithm {
        match algorithm {
            AlgorithmArg::Classic => Algorithm::Classic,
            AlgorithmArg::Modified => Algorithm::Modified,
            AlgorithmArg::Ring => Algorithm::Ring,
        }
    }
}

/// With a quorum, without one, or both, as named on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum QuorumArg {
    /// `Quorum::Majority`.
    Majority,
    /// `Quorum::None` (the sources' semantics).
    None,
    /// Both, majority first.
    Both,
}

impl QuorumArg {
    fn choices(self) -> Vec<QuorumChoice> {
        match self {
            QuorumArg::Majority => vec![QuorumChoice::Majority],
            QuorumArg::None => vec![QuorumChoice::None],
            QuorumArg::Both => QuorumChoice::BOTH.to_vec(),
        }
    }
}

/// A partial-connectivity scenario, as named on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ScenarioArg {
    /// Every link cut except the hub's; the leader reaches only the hub.
    QuorumLoss,
    /// The leader cut off; the others reach only the hub.
    Constrained,
    /// Three in a line: the leader reaches only the middle.
    #[value(name = "chained-3")]
    Chained3,
    /// The leader reaches only the hub; the hub reaches all.
    #[value(name = "chained-5")]
    Chained5,
    /// The leader cut off from everyone, both ways.
    LeaderIsolated,
    /// The leader can send but hears nobody.
    LeaderSendOnly,
    /// The leader hears everybody but can send to nobody.
    LeaderReceiveOnly,
}

impl From<ScenarioArg> for Scenario {
    fn from(scenario: ScenarioArg) -> Scenario {
        match scenario {
            ScenarioArg::QuorumLoss => Scenario::QuorumLoss,
            ScenarioArg::Constrained => Scenario::Constrained,
            ScenarioArg::Chained3 => Scenario::Chained3,
            ScenarioArg::Chained5 => Scenario::Chained5,
            ScenarioArg::LeaderIsolated => Scenario::LeaderIsolated,
            ScenarioArg::LeaderSendOnly => Scenario::LeaderSendOnly,
            ScenarioArg::LeaderReceiveOnly => Scenario::LeaderReceiveOnly,
        }
    }
}

/// The quorum of `costs`, as named on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum CostQuorumArg {
    /// Classic Bully: no quorum.
    None,
    /// A strict majority of the members.
    Majority,
}

impl From<CostQuorumArg> for Quorum {
    fn from(quorum: CostQuorumArg) -> Quorum {
        match quorum {
            CostQuorumArg::None => Quorum::None,
            CostQuorumArg::Majority => Quorum::Majority,
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// The lecture notes' example: 7 crashes, 4 notices, 6 wins, 7 recovers and
    /// takes over.
    Example {
        /// Simulator seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Soundarabai et al.'s Table 1, measured per algorithm against the paper's.
    ///
    /// N live processes, the lowest initiates, the crashed former coordinator is
    /// outside the set. Messages per algorithm against the paper's, and the time to
    /// agree in message delays. Exits non-zero if a measured classic or modified
    /// count differs from the paper's at an N the paper lists.
    Table {
        /// Process counts, comma-separated (the paper's columns stay empty for N
        /// that Table 1 does not list).
        #[arg(long, value_delimiter = ',', default_values_t = TABLE_1_NODES,
              value_parser = clap::value_parser!(u64).range(2..=2000))]
        nodes: Vec<u64>,
        /// Output format. CSV columns: n, classic, paper_classic, modified,
        /// paper_modified, ring, classic_delays, modified_delays, ring_delays.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Every N and initiator P against Soundarabai et al.'s equations (1) and (3).
    ///
    /// Every N up to --max-n and every initiator P: measured counts against the
    /// paper's equations (1) and (3), and the list of places where the sources
    /// disagree and what the code does.
    Formulas {
        /// The largest N.
        #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(2..=200))]
        max_n: u64,
        /// The N whose every P is listed in the text output.
        #[arg(long, default_value_t = 10)]
        sample: u64,
        /// Output format. CSV: one line per (n, p) with classic, equation_3,
        /// modified, equation_1, modified_implementation.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// The lecture notes' best and worst cases, per algorithm.
    ///
    /// Best: the second-highest notices the coordinator's crash. Worst: the lowest
    /// notices.
    Cases {
        /// Process counts (the crashed coordinator included), comma-separated.
        #[arg(long, value_delimiter = ',', default_values_t = CASE_NODES,
              value_parser = clap::value_parser!(u64).range(3..=2000))]
        nodes: Vec<u64>,
        /// Output format. CSV columns: case, n, algorithm, messages, delays, depth,
        /// leader.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// The Bully Algorithm Dance's experiments 1 to 5 with six dancers, per
    /// algorithm.
    Experiments {
        /// Seed of the die (who stands up when, who notices).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Output format. CSV columns: experiment, algorithm, messages, delays,
        /// depth, leader, leader_changes.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Failover by timeout, with and without staggered detection, per algorithm.
    ///
    /// The leader of a settled cluster crashes and every member notices by its own
    /// leader timeout; nobody is told.
    Failover {
        /// Process counts (the crashed leader included), comma-separated.
        #[arg(long, value_delimiter = ',', default_values_t = FAILOVER_NODES,
              value_parser = clap::value_parser!(u64).range(3..=2000))]
        nodes: Vec<u64>,
        /// Output format. CSV, long form, one line per (n, algorithm, stagger):
        /// n, algorithm, stagger (true/false), messages, delays (crash to
        /// agreement), detection_delays (crash to first detection),
        /// election_delays (first detection to agreement), leader.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Partial connectivity: every scenario, hub placement, algorithm and quorum.
    ///
    /// A settled cluster of five (three for chained-3) is cut as the scenario
    /// says for 20 s, then healed. Per row, over the seeds: time to a stable
    /// leader, availability, term growth, election messages, time after the heal,
    /// the expected leader (the highest quorum-connected member) and how many
    /// seeds ended with it, overlapping and same-term leaderships.
    Partial {
        /// Seeds per row (1..=N); each also shifts the cut's phase.
        #[arg(long, default_value_t = partial::DEFAULT_SEEDS,
              value_parser = clap::value_parser!(u64).range(1..=10_000))]
        seeds: u64,
        /// Only these algorithms, comma-separated (default: all three).
        #[arg(long, value_enum, value_delimiter = ',')]
        algorithm: Vec<AlgorithmArg>,
        /// With a majority quorum, without one, or both.
        #[arg(long, value_enum, default_value_t = QuorumArg::Both)]
        quorum: QuorumArg,
        /// Only these scenarios, comma-separated (default: all).
        #[arg(long, value_enum, value_delimiter = ',')]
        scenario: Vec<ScenarioArg>,
        /// Output format. CSV: one line per (scenario, placement, algorithm,
        /// quorum); see `bully_examples::partial::PARTIAL_CSV_HEADER`.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// Draws messages against N as an SVG, like Soundarabai et al.'s Figure 8.
    ///
    /// N from 5 to 100 in steps of 5, the three algorithms, Table 1's values marked;
    /// a linear and a logarithmic panel.
    Plot {
        /// Where to write the SVG.
        file: PathBuf,
    },
    /// One election's message log, like Soundarabai et al.'s Figures 3, 4 and 6.
    ///
    /// The paper's log format by default; --mermaid for a Mermaid sequence
    /// diagram, --timeline for the messages with their times in message delays.
    Trace {
        /// The algorithm.
        #[arg(long, value_enum, default_value_t = AlgorithmArg::Modified)]
        algorithm: AlgorithmArg,
        /// Live processes, 1..=N.
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1000))]
        nodes: u64,
        /// The process that initiates.
        #[arg(long, default_value_t = 4)]
        initiator: u64,
        /// Print a Mermaid sequence diagram instead of the paper-style log.
        #[arg(long, conflicts_with = "timeline")]
        mermaid: bool,
        /// Print a timeline with times in message delays instead.
        #[arg(long)]
        timeline: bool,
    },
    /// What one election costs, per algorithm, with or without a quorum.
    ///
    /// Messages and message delays over every initiator of the setting of
    /// Soundarabai et al.'s Table 1 (fewest, mean, most, slowest), the lecture
    /// notes' best and worst cases, a failover
    /// by timeout and a cold start. `docs/correctness.md` quotes it.
    Costs {
        /// Process counts, comma-separated.
        #[arg(long, value_delimiter = ',', default_values_t = COST_NODES,
              value_parser = clap::value_parser!(u64).range(3..=200))]
        nodes: Vec<u64>,
        /// The quorum every member runs with.
        #[arg(long, value_enum, default_value_t = CostQuorumArg::None)]
        quorum: CostQuorumArg,
        /// Output format. CSV columns: quorum, algorithm, n, case, initiator,
        /// messages, delays, depth, bound (the failover bound, on timeout
        /// lines), leader.
        #[arg(long, value_enum, default_value_t)]
        format: Format,
    },
    /// One whole election at scale, timed on the wall clock.
    ///
    /// Members 1..=N, idle with no leader; member 1 alone starts an election. The
    /// time covers building the cluster, the election and its last messages. The
    /// last line is `messages=<m> elapsed_ms=<t>`. Build with --release.
    Scale {
        /// The algorithm.
        #[arg(long, value_enum, default_value_t = AlgorithmArg::Classic)]
        algorithm: AlgorithmArg,
        /// Members, 1..=N.
        #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(2..=1_000_000))]
        nodes: u64,
    },
}

type Result<T = (), E = Box<dyn std::error::Error>> = std::result::Result<T, E>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command.unwrap_or(Command::Example { seed: 1 }) {
        Command::Example { seed } => example(seed),
        Command::Table { nodes, format } => table(&nodes, format),
        Command::Formulas {
            max_n,
            sample,
            format,
        } => formulas(max_n, sample, format),
        Command::Cases { nodes, format } => cases(&nodes, format),
        Command::Experiments { seed, format } => experiments(seed, format),
        Command::Failover { nodes, format } => failover(&nodes, format),
        Command::Partial {
            seeds,
            algorithm,
            quorum,
            scenario,
            format,
        } => partial(seeds, &algorithm, quorum, &scenario, format),
        Command::Plot { file } => plot(&file),
        Command::Trace {
            algorithm,
            nodes,
            initiator,
            mermaid,
            timeline,
        } => trace(algorithm.into(), nodes, initiator, mermaid, timeline),
        Command::Scale { algorithm, nodes } => scale(algorithm.into(), nodes),
        Command::Costs {
            nodes,
            quorum,
            format,
        } => costs(&nodes, quorum.into(), format),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn table(nodes: &[u64], format: Format) -> Result {
    let rows = measure::table(nodes)?;
    match format {
        Format::Text => print!("{}", report::table_text(&rows)),
        Format::Csv => print!("{}", report::table_csv(&rows)),
    }
    let mismatched: Vec<String> = rows
        .iter()
        .filter(|row| !row.matches_paper())
        .map(|row| row.n.to_string())
        .collect();
    if mismatched.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "measured counts differ from Soundarabai et al.'s Table 1 at N = {}",
            mismatched.join(", ")
        )
        .into())
    }
}

fn formulas(max_n: u64, sample: u64, format: Format) -> Result {
    let rows = measure::formulas(max_n)?;
    match format {
        Format::Text => print!("{}", report::formulas_text(&rows, sample)),
        Format::Csv => print!("{}", report::formulas_csv(&rows)),
    }
    Ok(())
}

fn cases(nodes: &[u64], format: Format) -> Result {
    let rows = measure::cases(nodes)?;
    match format {
        Format::Text => print!("{}", report::cases_text(&rows)),
        Format::Csv => print!("{}", report::cases_csv(&rows)),
    }
    Ok(())
}

fn experiments(seed: u64, format: Format) -> Result {
    let rows = measure::experiments(seed)?;
    match format {
        Format::Text => print!("{}", report::experiments_text(&rows, seed)),
        Format::Csv => print!("{}", report::experiments_csv(&rows)),
    }
    Ok(())
}

fn failover(nodes: &[u64], format: Format) -> Result {
    let rows = measure::failover(nodes)?;
    match format {
        Format::Text => print!("{}", report::failover_text(&rows)),
        Format::Csv => print!("{}", report::failover_csv(&rows)),
    }
    Ok(())
}

fn partial(
    seeds: u64,
    algorithms: &[AlgorithmArg],
    quorum: QuorumArg,
    scenarios: &[ScenarioArg],
    format: Format,
) -> Result {
    let mut options = PartialOptions {
        seeds,
        quorums: quorum.choices(),
        ..PartialOptions::default()
    };
    if !algorithms.is_empty() {
        options.algorithms = algorithms.iter().map(|&a| a.into()).collect();
    }
    if !scenarios.is_empty() {
        options.scenarios = scenarios.iter().map(|&s| s.into()).collect();
    }
    let rows = partial::measure(&options)?;
    match format {
        Format::Text => print!("{}", bully_examples::partial::text(&rows)),
        Format::Csv => print!("{}", bully_examples::partial::csv(&rows)),
    }
    Ok(())
}

fn plot(file: &std::path::Path) -> Result {
    let nodes = plot::plot_nodes();
    let rows = measure::table(&nodes)?;
    let svg = plot::messages_svg(&rows)?;
    std::fs::write(file, svg)?;
    println!(
        "wrote {} (messages per election for N = {} to {} step 5, three algorithms, Table 1 marked)",
        file.display(),
        nodes.first().copied().unwrap_or(0),
        nodes.last().copied().unwrap_or(0),
    );
    Ok(())
}

fn trace(
    algorithm: Algorithm,
    nodes: u64,
    initiator: u64,
    mermaid: bool,
    show_timeline: bool,
) -> Result {
    if !(1..=nodes).contains(&initiator) {
        return Err(format!("--initiator must be one of 1..={nodes}, not {initiator}").into());
    }
    let config = measure::config(algorithm);
    let (report, sim) = scenario::one_initiator_traced(&config, nodes, NodeId(initiator))?;
    if mermaid {
        print!("{}", sim.mermaid(false));
        return Ok(());
    }
    if show_timeline {
        print!("{}", timeline(&sim, sim.trace(), 0));
    } else {
        print!("{}", paper_log::render(sim.trace(), algorithm));
    }
    let name = measure::algorithm_name(algorithm);
    println!(
        "\n# {name}, N = {nodes}, P = {initiator}: {} messages ({}); every process names {} after {:.1} message delays.",
        report.total(),
        report.messages,
        report
            .leader
            .map_or_else(|| "no common leader".to_owned(), |id| format!("{id}")),
        report.delays,
    );
    match algorithm {
        Algorithm::Classic => println!(
            "# Soundarabai et al.'s equation (3), (N-P+1)(N-P)+N-1 = {}.",
            paper::equation_3(nodes, initiator)
        ),
        Algorithm::Modified => println!(
            "# Soundarabai et al.'s equation (1), 2(N-P)+N = {}; with the P-1 Elections to lower processes its Figure 6 shows: {}.",
            paper::equation_1(nodes, initiator),
            paper::modified_implementation(nodes, initiator),
        ),
        _ => println!(
            "# Ring, every hop acknowledged: 4N-2 = {}.",
            paper::ring_implementation(nodes)
        ),
    }
    Ok(())
}

fn costs(nodes: &[u64], quorum: Quorum, format: Format) -> Result {
    let rows = costs::costs(nodes, quorum)?;
    match format {
        Format::Text => print!("{}", costs::costs_text(&rows, quorum)),
        Format::Csv => print!("{}", costs::costs_csv(&rows, quorum)),
    }
    Ok(())
}

fn scale(algorithm: Algorithm, nodes: u64) -> Result {
    let run = scale::run(algorithm, nodes)?;
    print!("{}", scale::render(&run));
    if run.report.leader != Some(NodeId(nodes)) {
        return Err(format!("the members did not agree on {nodes}").into());
    }
    Ok(())
}

fn example(seed: u64) -> Result<(), Box<dyn std::error::Error>> {
    // The sources' model: "when P recovers, it starts an election" at once, and
    // the clocks are exact (ρ = 0: the answer timeout is the bare round trip).
    let config = Config::default()
        .with_staggered_start(false)
        .with_clock_drift(0.0);
    let mut sim = Simulation::new(seed, (1..=7).map(NodeId), config.clone())?;
    sim.enable_trace();
    println!("The lecture notes' example: processes 1..7, classic Bully.");
    println!(
        "One message time (T_M, the longest a message takes) = {:?}; an unanswered Election is given up after 2*T_M + P_p (P_p: the processing time) = {:?}.\n",
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
