//! `bully-agent`: runs a command on exactly one machine of a cluster.
//!
//! ```text
//! bully-agent init --config cluster.toml      # once, before a new cluster's first start
//! bully-agent run --config cluster.toml -- CMD [ARGS...]
//! bully-agent status --config cluster.toml
//! bully-agent check --config cluster.toml
//! bully-agent reload --config cluster.toml
//! bully-agent handover --config cluster.toml [--to ID]
//! ```

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use bully_agent::cli::{Cli, Command};
use bully_agent::{config, run, status, supervisor};
use clap::Parser;
use nix::sys::signal::{SigSet, Signal};
use tracing_subscriber::EnvFilter;

/// The signals `run` handles; blocked from the first instruction until its
/// handlers are in (see `start`).
fn early_signals() -> SigSet {
    SigSet::from_iter([Signal::SIGTERM, Signal::SIGINT])
}

fn main() -> ExitCode {
    // Blocking can only fail for an invalid argument: then they stay unblocked.
    let _ = early_signals().thread_block();
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Run { .. }) {
        let _ = early_signals().thread_unblock();
    }
    let result = match cli.command {
        Command::Run {
            config,
            id,
            log,
            secret,
            command,
        } => start(&config, id, &log, secret, command),
        Command::Init { config, id } => bully_agent::init::init(&config, id),
        Command::Reload { config } => bully_agent::reload::command::reload(&config),
        Command::Handover { config, to, for_ms } => {
            bully_agent::handover::command(&config, to, Duration::from_millis(for_ms))
        }
        Command::Status {
            config,
            endpoint,
            json,
        } => show_status(config, endpoint, json),
        Command::Check { config, id } => config::load_as(&config, id)
            .map(|settings| {
                println!(
                    "{}: node {} of {} members, quorum {:?}, keys {:?}: fine",
                    config.display(),
                    settings.id,
                    settings.members.len(),
                    settings.config.quorum(),
                    settings.keys.iter().map(|key| key.id.0).collect::<Vec<_>>()
                );
                if let Some(witnesses) = bully_agent::witness::describe(&settings) {
                    println!("{witnesses}");
                }
                for member in settings.peers() {
                    if let config::Address::Name { host, port } = &member.address {
                        match std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), *port)) {
                            Ok(mut found) => match found.next() {
                                Some(address) => {
                                    println!("member {}: {} resolves to {address}", member.id, member.address);
                                }
                                None => println!("member {}: {} has no address", member.id, member.address),
                            },
                            Err(error) => println!(
                                "member {}: {} does not resolve now ({error}): the agent would start and count it unreachable until it does",
                                member.id, member.address
                            ),
                        }
                    }
                }
                0
            })
            .map_err(|error| error.to_string()),
        Command::ExecChild {
            parent,
            cgroup,
            command,
        } => {
            let error = supervisor::exec_child(parent, cgroup.as_deref(), &command);
            eprintln!("error: cannot run {:?}: {error}", command[0]);
            return ExitCode::from(127);
        }
        Command::Supervise {
            grace_ms,
            cgroup,
            until,
            command,
        } => {
            init_logging("warn").expect("a fixed filter");
            // One thread: the command's death signal follows the thread that
            // spawned it, which must live as long as the supervisor.
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|error| format!("cannot start the runtime: {error}"))
                .and_then(|runtime| {
                    runtime
                        .block_on(supervisor::supervise(
                            Duration::from_millis(grace_ms),
                            cgroup,
                            until,
                            command,
                        ))
                        .map_err(|error| format!("supervisor: {error}"))
                })
        }
    };
    match result {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn start(
    path: &std::path::Path,
    id: Option<u64>,
    log: &str,
    secret: Option<String>,
    command: Vec<OsString>,
) -> Result<i32, String> {
    if secret.is_some() {
        return Err(
            "--secret: a secret on the command line is visible to every user \
                    (ps, /proc); put it in a file (secret_file) or an environment variable \
                    (secret_env) named in the configuration"
                .to_owned(),
        );
    }
    // SIGTERM and SIGINT wait (blocked since `main` began, pending) until their
    // handlers are in: one that came while the agent starts would otherwise
    // kill it with status 143. The runtime's threads, made below, inherit the
    // mask, so the signals go to this thread, which unblocks them once the
    // handlers are installed (children start with an empty mask: std resets it).
    let early = early_signals();
    init_logging(log)?;
    runtime()?.block_on(async {
        let signals = run::Signals::new().map_err(|error| error.to_string())?;
        early
            .thread_unblock()
            .map_err(|error| format!("cannot unblock signals: {error}"))?;
        let settings = config::load_as(path, id).map_err(|error| error.to_string())?;
        bully_agent::witness::check_command(&settings, &command)?;
        run::run(settings, command, signals).await
    })
}

fn show_status(
    config: Option<PathBuf>,
    endpoint: Option<String>,
    json: bool,
) -> Result<i32, String> {
    let endpoint = match (endpoint, config) {
        (Some(endpoint), _) => endpoint,
        (None, Some(path)) => config::read_listen(&path)
            .map_err(|error| error.to_string())?
            .ok_or_else(|| {
                format!(
                    "{}: `listen` is not set: status asks the agent's HTTP endpoint",
                    path.display()
                )
            })?
            .to_string(),
        (None, None) => return Err("give --config or --endpoint".to_owned()),
    };
    let status = status::fetch(&endpoint)?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&status).map_err(|error| error.to_string())?
        );
    } else {
        println!("{status}");
    }
    Ok(0)
}

fn init_logging(filter: &str) -> Result<(), String> {
    let filter =
        EnvFilter::try_new(filter).map_err(|error| format!("--log {filter:?}: {error}"))?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    Ok(())
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|error| format!("cannot start the runtime: {error}"))
}
