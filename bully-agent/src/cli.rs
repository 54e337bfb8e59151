//! The command line: `run`, `init`, `status`, `check`, `reload`, and the two hidden
//! commands the agent starts itself with (`supervise`, `exec-child`). Its
//! `--help` is the manual, and `doc/bully-agent.1` is rendered from it
//! (`tests/manual.rs` keeps the two in step).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// The manual's sections after the options: `--help` prints them, and the
/// man page renders them.
pub const MANUAL: &str = "\
CONFIGURATION
  A TOML file (see /etc/bully-agent/cluster.toml, or `cluster.example.toml` in
  the sources): cluster, id, data_dir, the key (secret_file, secret_env,
  secret_credential, or a [[keys]] list), algorithm, quorum, preemption,
  listen, bind, [timing], [child], [names], and one [[members]] entry (id,
  address) per member, this node included. An address is IP:PORT,
  [IPv6]:PORT, or HOST:PORT: names are resolved at start (a name that does not
  resolve counts as an unreachable member) and again every names.refresh_ms
  (5 s), every names.retry_ms (1 s) while unresolved, and when the leader is
  lost. `bully-agent check` checks a file.

FIRST BOOT AND LOST STATE
  A member without a state file cannot tell a first boot from a lost data
  directory, and one that lost its state may have promised a leader not to
  vote against it: so `run` without a state file logs it and votes for
  nobody, itself included, for a follower lease (about
  timing.leader_timeout_ms) after it starts. On a new cluster's first deploy,
  `bully-agent init` on each member before its first start declares it new
  (it writes DATA_DIR/state.json), and it votes at once; or start without
  init and accept the wait. After a lost volume or a replaced disk never run
  init: start the member, which waits the follower lease. init refuses a
  data directory that holds a state file. A command, not a setting or a
  flag on run: either would stay in place and declare the member new again
  after a later loss.

RELOAD
  SIGHUP (systemctl reload bully-agent, or bully-agent reload) reads the file
  again. It may add or remove one member per reload (every member reloads one
  change before the next), change other members' addresses, the keys, the
  [child] settings but containment and cgroup_parent (from the command's next
  run), and [names]. Anything else is refused by name, as is a file that does
  not load: one `error:` line in the log, the running configuration kept,
  nothing restarted.

KEYS
  One secret is key 1. To rotate: list [[keys]] with id and secret_file (or
  secret_env, secret_credential); the first signs, both are accepted. Reload
  every member with [old, new], then every member with [new, old], then with
  [new]: no frame is refused on the way.

THE COMMAND
  It runs while this node leads (with a quorum: while its lease holds), with
  BULLY_FENCING_TOKEN, BULLY_TERM, BULLY_LEADER, BULLY_NODE and BULLY_CLUSTER
  in its environment. It is stopped with SIGTERM, and SIGKILL child.grace_ms
  later, before the lease can run out; its whole process tree is held in a
  cgroup or under a subreaper (child.containment).

SIGNALS
  SIGTERM, SIGINT: stop the command, resign naming the next highest member
  (which elects at once: a hand-over), exit 0. SIGHUP: reload. SIGUSR1:
  hand over (bully-agent handover).

FILES
  /etc/bully-agent/cluster.toml   the configuration (Debian package)
  DATA_DIR/state.json             term, vote, incarnation, a declared first
                                  boot (never edit it; init writes the first)
  DATA_DIR/agent.pid              the running agent's pid (bully-agent reload)
  DATA_DIR/handover.request       a hand-over's target (bully-agent handover)
  DATA_DIR/lock                   keeps a second agent out
  DATA_DIR/job-cgroup             the job's cgroup while it runs

ENDPOINT (listen)
  GET /leader (JSON, `bully-agent status`), GET /healthz, GET /metrics
  (Prometheus: bully_is_leader, bully_term, bully_frames_refused_total,
  bully_member_last_heard_seconds, bully_config_reloads_total, ...).

ENVIRONMENT
  BULLY_AGENT_ID          this node's id (as --id)
  CREDENTIALS_DIRECTORY   systemd's credentials (secret_credential)
  NOTIFY_SOCKET           systemd's readiness socket (Type=notify)

EXIT STATUS
  0 after SIGTERM or SIGINT; 1 for an error at start (one `error:` line) or
  when the members' frames keep failing authentication; 74 when the state
  cannot be written; the command's status under child.on_exit = \"exit\".

EXAMPLES
  bully-agent check --config /etc/bully-agent/cluster.toml
  bully-agent init --config /etc/bully-agent/cluster.toml   # new cluster only
  bully-agent run --config cluster.toml -- /usr/local/bin/nightly-report
  bully-agent status --config cluster.toml
  bully-agent reload --config cluster.toml";

/// `bully-agent`'s command line.
#[derive(Parser)]
#[command(
    name = "bully-agent",
    version,
    about = "Run a command on exactly one machine of a cluster: the Bully leader",
    long_about = "Run a command on exactly one machine of a cluster: the Bully leader. \
                  The members elect a leader among themselves (no separate store); the leader \
                  runs the command with a fencing token in its environment, and stops it before \
                  its lease can lapse. Every member runs `bully-agent run` with the same \
                  member list and key.",
    after_long_help = MANUAL
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand)]
pub enum Command {
    /// Join the cluster; run CMD while this node leads.
    Run {
        /// The configuration file (TOML).
        #[arg(long, short)]
        config: PathBuf,
        /// This node's id, instead of the file's `id`: one file then serves
        /// every member (a StatefulSet's pods: the pod's index).
        #[arg(long, env = "BULLY_AGENT_ID")]
        id: Option<u64>,
        /// What to log to stderr: a level (error, warn, info, debug, trace) or
        /// tracing directives (`info,bully_tokio=debug`).
        #[arg(long, default_value = "info")]
        log: String,
        /// Refused: a secret on the command line shows in `ps` to every user.
        #[arg(long, hide = true)]
        secret: Option<String>,
        /// The command and its arguments, after `--` (none on a witness,
        /// which never runs one).
        #[arg(last = true, value_name = "CMD")]
        command: Vec<OsString>,
    },
    /// Declare this member's first boot in a new cluster, so that its first
    /// `run` votes at once.
    ///
    /// It writes the member's initial state file in `data_dir`. Run it
    /// once per member, before the cluster's first start, and never after a
    /// member lost its state (a lost volume, a replaced disk): that member may
    /// have promised a leader, in acknowledgements it forgot, not to vote
    /// against it, and `run` without a state file waits a follower lease
    /// before it votes for that reason. Refused (one `error:` line, status 1)
    /// when `data_dir` holds a state file or an agent runs on it. Reads no
    /// secret.
    Init {
        /// The configuration file (TOML): its `cluster`, `id`, `data_dir` and
        /// members.
        #[arg(long, short)]
        config: PathBuf,
        /// This node's id, instead of the file's `id` (as `run --id`).
        #[arg(long, env = "BULLY_AGENT_ID")]
        id: Option<u64>,
    },
    /// Ask a running agent (its `listen` endpoint) who leads.
    Status {
        /// The configuration file: its `listen` address is asked.
        #[arg(
            long,
            short,
            required_unless_present = "endpoint",
            conflicts_with = "endpoint"
        )]
        config: Option<PathBuf>,
        /// The endpoint to ask, HOST:PORT.
        #[arg(long)]
        endpoint: Option<String>,
        /// Print the JSON as served.
        #[arg(long)]
        json: bool,
    },
    /// Check a configuration file (and read its secret) without starting anything.
    Check {
        /// The configuration file (TOML).
        #[arg(long, short)]
        config: PathBuf,
        /// This node's id, instead of the file's `id` (as `run --id`).
        #[arg(long, env = "BULLY_AGENT_ID")]
        id: Option<u64>,
    },
    /// Make the running agent read its configuration again (SIGHUP to the pid
    /// in `data_dir/agent.pid`); with `listen` set, wait for its verdict.
    Reload {
        /// The configuration file the agent runs with.
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Hand the job over: the running agent (this machine's, the leader) stops
    /// it, and the member named, or the next highest, starts it without
    /// waiting for a leader timeout. With `listen` set, waits for the agent's
    /// verdict (status 1 if it refused: it does not lead, a live member
    /// above the one named would lead instead, the one named is not live, or
    /// no other member that may lead is live).
    Handover {
        /// The configuration file the agent runs with.
        #[arg(long, short)]
        config: PathBuf,
        /// The member to hand over to (default: the next highest).
        #[arg(long)]
        to: Option<u64>,
        /// How long this member then stays out of the elections, in
        /// milliseconds (under `preemption = "always"` it takes the job back
        /// afterwards).
        #[arg(long, default_value_t = 600_000)]
        for_ms: u64,
    },
    /// Becomes the command, killed if its supervisor dies (started by `supervise`).
    #[command(hide = true)]
    ExecChild {
        /// The supervisor's pid.
        #[arg(long)]
        parent: u32,
        /// The job's cgroup, to join before the command runs.
        #[arg(long)]
        cgroup: Option<PathBuf>,
        /// The command.
        #[arg(last = true, required = true)]
        command: Vec<OsString>,
    },
    /// The supervisor between the agent and the command (started by `run`).
    #[command(hide = true)]
    Supervise {
        /// Between SIGTERM and SIGKILL, in milliseconds.
        #[arg(long)]
        grace_ms: u64,
        /// The job's cgroup (without one, the supervisor is the subreaper).
        #[arg(long)]
        cgroup: Option<PathBuf>,
        /// The lease deadline as the agent knew it (CLOCK_MONOTONIC
        /// nanoseconds): the command does not start past it.
        #[arg(long)]
        until: Option<u128>,
        /// The command.
        #[arg(last = true, required = true)]
        command: Vec<OsString>,
    },
}
