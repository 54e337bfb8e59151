//! A cluster of real `bully-agent` processes on 127.0.0.1, for the process tests.
//!
//! [`Cluster::start`] writes one configuration per node and a shared secret into
//! a temporary directory, declares each node a member of a new cluster
//! (`bully-agent init`, so that it votes as it starts), and starts `bully-agent run --config nodeN.toml -- bash
//! child.sh child.log` for each node, every agent in a process group of its own
//! (so a test can stop or `kill -9` an agent as a group; its supervisor leads a
//! group of its own, which [`Cluster::crash`] and [`Cluster::stop_agent_group`]
//! signal too). Each agent's stdout and stderr go to `nodeN.log` in that directory
//! (appended across restarts); [`Cluster::node_log`] reads it for failure
//! messages. The children (`support/child.sh`) append to `child.log`, which
//! [`Cluster::child_log`] parses.
//!
//! Ports are picked free at run time, by the OS ([`Ports::Ephemeral`]) or, for
//! clusters that run side by side in one test and restart their agents, from a
//! range below the OS's ephemeral ports ([`Ports::Reserved`]), which no other
//! socket on the machine is handed meanwhile. With [`Options::relay`], every
//! agent reaches its peers through the test's [`Relay`], so a test can cut links.
//!
//! [`Cluster::configure`] writes the files without starting anything, so that a
//! test can give each member's command its own stop time
//! ([`Cluster::set_job_stop_ms`], `child.sh`'s second argument), or give every
//! member a command other than `child.sh` ([`Cluster::set_command`]), before
//! [`Cluster::spawn`]; [`Cluster::start`] configures and spawns at once, with
//! `child.sh` and stop times of 0.
//!
//! Dropping a [`Cluster`] kills everything it started, whatever state the test
//! left it in: the agents' process groups, the supervisors' and the children's
//! (even stopped ones), and the job cgroups the agents recorded.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::OpenOptions;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bully_agent::status::Status;
use bully_core::{Config, FencingToken, Quorum};
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

use super::child_log::{ChildLog, Line};
use super::procs::processes;
use super::relay::Relay;

/// The agent binary under test.
pub(crate) const AGENT: &str = env!("CARGO_BIN_EXE_bully-agent");

/// The cluster id the tests use.
pub(crate) const CLUSTER_ID: u64 = 7;

/// The shared secret the tests use (32 bytes).
pub(crate) const SECRET: &str = "process tests' 32-byte secret!!!";

/// Writes a secret file only its owner may read (the agent refuses one that
/// others may read).
pub(crate) fn write_secret(path: &Path, secret: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, secret).expect("write a secret");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .expect("make the secret private");
}

/// `bully-agent init --config CONFIG`: its exit status and output.
pub(crate) fn init_command(config: &Path) -> Output {
    Command::new(AGENT)
        .arg("init")
        .arg("--config")
        .arg(config)
        .output()
        .expect("run bully-agent init")
}

/// The test child script.
pub(crate) fn child_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/child.sh")
}

/// Wall clock in milliseconds since the epoch: the clock `child.sh` stamps its
/// lines with (`date +%s%3N`).
pub(crate) fn now_millis() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970");
    u64::try_from(since.as_millis()).expect("milliseconds fit in u64")
}

/// A UDP address on 127.0.0.1 that was free a moment ago (the OS picked it).
pub(crate) fn free_udp_address() -> SocketAddr {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind an ephemeral UDP port");
    socket.local_addr().expect("its address")
}

/// A TCP address on 127.0.0.1 that was free a moment ago.
pub(crate) fn free_tcp_address() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral TCP port");
    listener.local_addr().expect("its address")
}

/// Where a cluster's agents get their ports (their member address, UDP, and
/// their endpoint, TCP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ports {
    /// Free ports the OS picks ([`free_udp_address`], [`free_tcp_address`]).
    /// Once the test closes its probe socket, the port may go to the next
    /// socket anyone binds to port 0 (a relay, another test), so this suits one
    /// cluster at a time.
    Ephemeral,
    /// Ports below the OS's ephemeral range ([`reserved_address`]), free for UDP
    /// and TCP when picked: no socket bound to port 0 takes them, so an agent
    /// can be restarted on its port while other clusters start beside it.
    Reserved,
}

/// The next port from 8192 up to the OS's ephemeral range (24,576 ports with
/// Linux's default) that is free for UDP and TCP on 127.0.0.1. Each call moves
/// on (a port handed out is not handed out again by this process until the
/// range wraps); the starting point is drawn from the pid and the clock, so
/// that two test processes running at once rarely walk the same ports.
pub(crate) fn reserved_address() -> SocketAddr {
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let low = ephemeral_range_start().clamp(2_048, 65_535);
    let first = 8_192u32.min(low - 1_024);
    let span = low - first;
    // The first caller seeds the cursor; a race between two first callers only
    // moves it twice.
    if NEXT.load(Ordering::SeqCst) == u32::MAX {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.subsec_nanos());
        let seed = std::process::id().wrapping_mul(7_919).wrapping_add(nanos);
        let _ = NEXT.compare_exchange(u32::MAX, seed % span, Ordering::SeqCst, Ordering::SeqCst);
    }
    for _ in 0..span {
        let offset = NEXT.fetch_add(1, Ordering::SeqCst) % span;
        let port = u16::try_from(first + offset).expect("below the ephemeral range");
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        if is_free(address) {
            return address;
        }
    }
    panic!("no free port in {first}..{low}");
}

/// The first port of the OS's ephemeral range (Linux's default when it cannot
/// be read).
fn ephemeral_range_start() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

/// Whether nothing is bound on `address`, for UDP and for TCP (the agent binds
/// its member address for UDP and its `listen` address for TCP).
pub(crate) fn is_free(address: SocketAddr) -> bool {
    UdpSocket::bind(address).is_ok() && TcpListener::bind(address).is_ok()
}

/// The agent's timings, as the `[timing]` and `[child]` tables of its
/// configuration and as the `bully_core::Config` that states its failover bound.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timing {
    /// `timing.heartbeat_ms`.
    pub(crate) heartbeat_ms: u64,
    /// `timing.leader_timeout_ms`.
    pub(crate) leader_timeout_ms: u64,
    /// `timing.max_message_delay_ms`.
    pub(crate) max_message_delay_ms: u64,
    /// `timing.max_processing_ms`.
    pub(crate) max_processing_ms: u64,
    /// `child.grace_ms`.
    pub(crate) grace_ms: u64,
    /// `child.restart_delay_ms`.
    pub(crate) restart_delay_ms: u64,
}

impl Timing {
    /// The contract's timings for fast tests (the lease margin defaults to
    /// `grace_ms + 250` = 450 ms), with the agent's default processing time
    /// written out, so that the bound the tests compute is the agent's.
    pub(crate) const FAST: Timing = Timing {
        heartbeat_ms: 50,
        leader_timeout_ms: 600,
        max_message_delay_ms: 20,
        max_processing_ms: 20,
        grace_ms: 200,
        restart_delay_ms: 200,
    };

    /// The agent's default grace period of a second, with a leader timeout of
    /// 2.5 s, long enough for the lease to exceed the 1.25 s lease margin the
    /// grace implies: a job told to stop keeps a lease's worth of overlap to
    /// show, if a second leader is elected too soon.
    pub(crate) const GRACE_OF_A_SECOND: Timing = Timing {
        heartbeat_ms: 100,
        leader_timeout_ms: 2_500,
        max_message_delay_ms: 20,
        max_processing_ms: 20,
        grace_ms: 1_000,
        restart_delay_ms: 200,
    };

    /// The core configuration with the same timings and a majority quorum.
    pub(crate) fn core_config(&self) -> Config {
        Config::default()
            .with_heartbeat_interval(Duration::from_millis(self.heartbeat_ms))
            .with_leader_timeout(Duration::from_millis(self.leader_timeout_ms))
            .with_max_message_delay(Duration::from_millis(self.max_message_delay_ms))
            .with_max_processing_time(Duration::from_millis(self.max_processing_ms))
            .with_quorum(Quorum::Majority)
            .with_lease_margin(self.lease_margin())
            .with_resign_delay(self.lease_margin())
    }

    /// The lease margin the agent takes by default: `child.grace_ms` + 250 ms
    /// (its `KILL_ALLOWANCE`). It is also the agent's resign delay: a leader that
    /// yields to a higher member frees its followers' promises only this long
    /// after its child was told to stop, so that the child is gone before the
    /// higher member can lead.
    pub(crate) fn lease_margin(&self) -> Duration {
        Duration::from_millis(self.grace_ms) + bully_agent::config::KILL_ALLOWANCE
    }

    /// `bully_core::Config::failover_bound` for `members` with these timings.
    pub(crate) fn failover_bound(&self, members: usize) -> Duration {
        self.core_config().failover_bound(members)
    }

    /// The `[timing]` and `[child]` tables.
    pub(crate) fn toml(&self) -> String {
        format!(
            "[timing]\nheartbeat_ms = {}\nleader_timeout_ms = {}\nmax_message_delay_ms = {}\n\
             max_processing_ms = {}\n\n\
             [child]\ngrace_ms = {}\non_exit = \"restart\"\nrestart_delay_ms = {}\n",
            self.heartbeat_ms,
            self.leader_timeout_ms,
            self.max_message_delay_ms,
            self.max_processing_ms,
            self.grace_ms,
            self.restart_delay_ms
        )
    }
}

/// Another secret, as long, for the member [`Options::other_secret`] names.
pub(crate) const OTHER_SECRET: &str = "a different 32-byte secret!!!!!!";

/// One node's configuration file, as text. `members` maps every member id to
/// the address this node uses for it (its own: the address it binds);
/// `secret_file` is relative to the configuration's directory.
pub(crate) fn node_config(
    id: u64,
    members: &BTreeMap<u64, SocketAddr>,
    listen: Option<SocketAddr>,
    timing: &Timing,
    secret_file: &str,
) -> String {
    let mut text = format!(
        "cluster = {CLUSTER_ID}\nid = {id}\ndata_dir = \"data/{id}\"\nsecret_file = \"{secret_file}\"\n\
         algorithm = \"classic\"\nquorum = \"majority\"\npreemption = \"always\"\n"
    );
    if let Some(listen) = listen {
        text.push_str(&format!("listen = \"{listen}\"\n"));
    }
    text.push('\n');
    text.push_str(&timing.toml());
    for (member, address) in members {
        text.push_str(&format!(
            "\n[[members]]\nid = {member}\naddress = \"{address}\"\n"
        ));
    }
    text
}

/// How to build a [`Cluster`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Options {
    /// Members 1..=size.
    pub(crate) size: u64,
    /// The timings.
    pub(crate) timing: Timing,
    /// Route every peer link through a [`Relay`].
    pub(crate) relay: bool,
    /// A member configured with [`OTHER_SECRET`] instead of [`SECRET`].
    pub(crate) other_secret: Option<u64>,
    /// A member whose command does not exist until
    /// [`Cluster::install_command`]: its agent runs `DIR/job-ID`, a script
    /// that runs `child.sh` as the others do.
    pub(crate) missing_command: Option<u64>,
    /// More lines for every member's `[child]` table.
    pub(crate) child_settings: &'static str,
    /// Where the agents' ports come from.
    pub(crate) ports: Ports,
}

impl Options {
    /// `size` members with `timing`, and nothing else: no relay, one secret,
    /// every command installed, the `[child]` table as `timing` writes it,
    /// ephemeral ports.
    pub(crate) fn plain(size: u64, timing: Timing) -> Options {
        Options {
            size,
            timing,
            relay: false,
            other_secret: None,
            missing_command: None,
            child_settings: "",
            ports: Ports::Ephemeral,
        }
    }
}

/// One member.
#[derive(Debug)]
struct Node {
    /// Its real UDP address (it binds it).
    udp: SocketAddr,
    /// Its HTTP endpoint.
    http: SocketAddr,
    /// Its configuration file.
    config: PathBuf,
    /// Its agent's stdout and stderr.
    log: PathBuf,
    /// The running agent, if any.
    process: Option<Child>,
    /// How long its command takes to stop after SIGTERM (`child.sh`'s second
    /// argument), from its next start.
    job_stop_ms: u64,
    /// A witness ([`Cluster::make_witness`]): its agent runs no command.
    witness: bool,
}

/// A cluster of real agent processes; see the module docs.
#[derive(Debug)]
pub(crate) struct Cluster {
    dir: tempfile::TempDir,
    nodes: BTreeMap<u64, Node>,
    child_log: PathBuf,
    /// The member whose command is missing (see [`Options::missing_command`]).
    missing_command: Option<u64>,
    /// The command every agent runs instead of `child.sh` ([`Cluster::set_command`]).
    command: Option<Vec<OsString>>,
    /// The process group of every agent ever spawned (its pid), for the cleanup.
    groups: Vec<u32>,
    relay: Option<Relay>,
    timing: Timing,
    /// Keep the directory when dropped ([`Cluster::keep_files`]).
    keep: bool,
    /// The job cgroups named in data directories the test deleted
    /// ([`Cluster::lose_data_dir`]), for the cleanup.
    lost_cgroups: Vec<PathBuf>,
}

impl Cluster {
    /// Writes the files, declares every member new (`bully-agent init`) and
    /// starts every agent, whose commands stop at once on SIGTERM, the highest
    /// first.
    ///
    /// The highest first, so that it is the first to lead however slowly the
    /// others start: it keeps asking for a leader timeout after its start
    /// until a quorum answers. From the lowest up, an agent declared new
    /// votes as it starts, and on a slow machine the lower members could be a
    /// majority, and elect one of them, before the highest has started (it
    /// then takes the job over: `tests/first_boot.rs`). The tests begin from
    /// the highest's leadership.
    pub(crate) fn start(options: Options) -> Cluster {
        let mut cluster = Cluster::configure(options);
        for id in cluster.ids().into_iter().rev() {
            cluster.spawn(id);
        }
        cluster
    }

    /// Writes the files (configurations, secrets), declares every member a
    /// member of a new cluster (`bully-agent init`, as on a first deploy: each
    /// votes as it starts), and starts nothing but the relay, if any. A test
    /// of a member without state removes its data directory
    /// ([`Cluster::lose_data_dir`]).
    pub(crate) fn configure(options: Options) -> Cluster {
        let dir = tempfile::Builder::new()
            .prefix("bully-agent-processes-")
            .tempdir()
            .expect("a temporary directory");
        write_secret(&dir.path().join("secret"), SECRET);
        write_secret(&dir.path().join("other-secret"), OTHER_SECRET);
        let ids: Vec<u64> = (1..=options.size).collect();
        let pick = |free: fn() -> SocketAddr| match options.ports {
            Ports::Ephemeral => free(),
            Ports::Reserved => reserved_address(),
        };
        let udp: BTreeMap<u64, SocketAddr> =
            ids.iter().map(|&id| (id, pick(free_udp_address))).collect();
        let relay = options.relay.then(|| Relay::start(&udp));
        let mut nodes = BTreeMap::new();
        for &id in &ids {
            let members = ids
                .iter()
                .map(|&peer| {
                    let address = match &relay {
                        Some(relay) if peer != id => relay.address(id, peer),
                        _ => udp[&peer],
                    };
                    (peer, address)
                })
                .collect();
            let http = pick(free_tcp_address);
            let config = dir.path().join(format!("node{id}.toml"));
            let text = node_config(
                id,
                &members,
                Some(http),
                &options.timing,
                if options.other_secret == Some(id) {
                    "other-secret"
                } else {
                    "secret"
                },
            )
            .replace(
                "[child]\n",
                &format!("[child]\n{}\n", options.child_settings),
            );
            std::fs::write(&config, text).expect("write a configuration");
            nodes.insert(
                id,
                Node {
                    udp: udp[&id],
                    http,
                    config,
                    log: dir.path().join(format!("node{id}.log")),
                    process: None,
                    job_stop_ms: 0,
                    witness: false,
                },
            );
        }
        let cluster = Cluster {
            child_log: dir.path().join("child.log"),
            missing_command: options.missing_command,
            command: None,
            dir,
            nodes,
            groups: Vec::new(),
            relay,
            timing: options.timing,
            keep: false,
            lost_cgroups: Vec::new(),
        };
        // A new cluster, whose members have never run: each is declared so,
        // as its operator does before the first start, and votes at once.
        for id in cluster.ids() {
            cluster.init(id);
        }
        cluster
    }

    /// `bully-agent init` of `id`'s configuration: its exit status and output.
    pub(crate) fn run_init(&self, id: u64) -> Output {
        init_command(&self.node(id).config)
    }

    /// Declares `id` a member that has never run (`bully-agent init`); panics
    /// if the agent refuses.
    pub(crate) fn init(&self, id: u64) {
        let output = self.run_init(id);
        assert!(
            output.status.success(),
            "bully-agent init of member {id}: {}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// `id`'s data directory (its state file, lock, pid file).
    pub(crate) fn data_dir(&self, id: u64) -> PathBuf {
        self.dir.path().join(format!("data/{id}"))
    }

    /// Deletes `id`'s data directory, as a lost volume or a replaced disk
    /// does (the agent must not run: it holds the directory's lock).
    pub(crate) fn lose_data_dir(&mut self, id: u64) {
        assert!(
            !self.is_running(id),
            "member {id}'s agent runs: stop it first"
        );
        // The job's cgroup, if a run still has one, is left alone (its
        // supervisor may still be stopping the job, as after a real crash),
        // but the record of it goes with the directory: remembered here, so
        // that the cleanup still finds it.
        let record = self.data_dir(id).join(bully_agent::containment::RECORD);
        if let Ok(text) = std::fs::read_to_string(record) {
            self.lost_cgroups.push(PathBuf::from(text.trim_end()));
        }
        std::fs::remove_dir_all(self.data_dir(id))
            .unwrap_or_else(|error| panic!("remove member {id}'s data directory: {error}"));
    }

    /// Keeps the directory (configurations and logs) when the cluster is
    /// dropped, as a failing test's is: for a failure found without a panic.
    pub(crate) fn keep_files(&mut self) {
        self.keep = true;
    }

    /// The temporary directory with the configurations and logs.
    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The member ids.
    pub(crate) fn ids(&self) -> Vec<u64> {
        self.nodes.keys().copied().collect()
    }

    /// The timings the agents run with.
    pub(crate) fn timing(&self) -> Timing {
        self.timing
    }

    /// The relay, if the cluster was built with one.
    pub(crate) fn relay(&self) -> &Relay {
        self.relay
            .as_ref()
            .expect("the cluster was built without a relay")
    }

    fn node(&self, id: u64) -> &Node {
        self.nodes
            .get(&id)
            .unwrap_or_else(|| panic!("no member {id}"))
    }

    fn node_mut(&mut self, id: u64) -> &mut Node {
        self.nodes
            .get_mut(&id)
            .unwrap_or_else(|| panic!("no member {id}"))
    }

    /// From `id`'s next start on, its command takes `ms` milliseconds to stop
    /// after SIGTERM (0: it stops at once).
    pub(crate) fn set_job_stop_ms(&mut self, id: u64, ms: u64) {
        self.node_mut(id).job_stop_ms = ms;
    }

    /// Marks `id` a witness (`witness = true` in its `[[members]]` entry) in
    /// every member's configuration, before any agent starts: its agent then
    /// starts with no command.
    pub(crate) fn make_witness(&mut self, id: u64) {
        let entry = format!("\n[[members]]\nid = {id}\n");
        for node in self.nodes.values() {
            let text = std::fs::read_to_string(&node.config).expect("read a configuration");
            assert_eq!(text.matches(&entry).count(), 1, "member {id} in:\n{text}");
            let text = text.replace(&entry, &format!("{entry}witness = true\n"));
            std::fs::write(&node.config, text).expect("write a configuration");
        }
        self.node_mut(id).witness = true;
    }

    /// `GET path` of `id`'s endpoint: the body; panics if it does not answer.
    pub(crate) fn get(&self, id: u64, path: &str) -> String {
        let url = format!("http://{}{path}", self.node(id).http);
        ureq::get(&url)
            .call()
            .unwrap_or_else(|error| panic!("{url}: {error}"))
            .body_mut()
            .read_to_string()
            .unwrap_or_else(|error| panic!("{url}: {error}"))
    }

    /// From each agent's next start on, it runs `command` instead of `child.sh`
    /// (the child log then stays empty). The cleanup finds a job's processes by
    /// this cluster's directory in their command lines, so `command` must name
    /// a file in it ([`Cluster::dir`]), as a script there that runs the real job
    /// (without `exec`, so that the job's process group is led by the script).
    pub(crate) fn set_command(&mut self, command: Vec<OsString>) {
        let dir = self.dir.path().as_os_str();
        assert!(
            command
                .iter()
                .any(|arg| arg.as_encoded_bytes().starts_with(dir.as_encoded_bytes())),
            "the command {command:?} names nothing in {dir:?}: the cleanup would not find it"
        );
        self.command = Some(command);
    }

    /// Starts `id`'s agent (again), in a process group of its own.
    pub(crate) fn spawn(&mut self, id: u64) {
        self.spawn_wrapped(id, &[]);
    }

    /// Starts `id`'s agent (again) as the last argument of `wrapper` (a
    /// program that ends by executing its arguments, as `unshare` does), in a
    /// process group of its own.
    pub(crate) fn spawn_wrapped(&mut self, id: u64, wrapper: &[&str]) {
        use std::os::unix::process::CommandExt;
        let child_log = self.child_log.clone();
        let node = self.node(id);
        let stop_ms = (node.job_stop_ms > 0).then(|| node.job_stop_ms.to_string());
        // `BULLY_AGENT_TEST_LOG=debug` (or tracing directives) shows the
        // elections in `nodeN.log` when a failure needs explaining.
        let level = std::env::var("BULLY_AGENT_TEST_LOG").unwrap_or_else(|_| "info".to_owned());
        assert!(node.process.is_none(), "member {id}'s agent is running");
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&node.log)
            .expect("open the agent's log");
        let mut agent = match wrapper.split_first() {
            Some((program, arguments)) => {
                let mut wrapped = Command::new(program);
                wrapped.args(arguments).arg(AGENT);
                wrapped
            }
            None => Command::new(AGENT),
        };
        agent
            .arg("run")
            .arg("--config")
            .arg(&node.config)
            .args(["--log", &level, "--"]);
        if node.witness {
            // A witness never runs a command, and its agent refuses one.
        } else if self.missing_command == Some(id) {
            agent.arg(self.command_path(id));
        } else if let Some(command) = &self.command {
            agent.args(command);
        } else {
            agent
                .arg("bash")
                .arg(child_script())
                .arg(&child_log)
                .args(stop_ms);
        }
        let process = agent
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone the log's handle"))
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("start bully-agent");
        self.groups.push(process.id());
        self.node_mut(id).process = Some(process);
    }

    /// The command of the member [`Options::missing_command`] names.
    fn command_path(&self, id: u64) -> PathBuf {
        self.dir.path().join(format!("job-{id}"))
    }

    /// Creates the missing command of member `id` (see
    /// [`Options::missing_command`]): from now on it runs `child.sh` as the
    /// others do.
    pub(crate) fn install_command(&self, id: u64) {
        use std::os::unix::fs::PermissionsExt;
        let path = self.command_path(id);
        let script = format!(
            "#!/bin/sh\nexec bash {} {}\n",
            child_script().display(),
            self.child_log.display()
        );
        // Written aside and renamed, so that no run executes half a file.
        let temporary = path.with_extension("tmp");
        std::fs::write(&temporary, script).expect("write the command");
        std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(0o755))
            .expect("make it executable");
        std::fs::rename(&temporary, &path).expect("install the command");
    }

    /// `id`'s agent's pid (its process group too).
    pub(crate) fn pid(&self, id: u64) -> u32 {
        self.node(id)
            .process
            .as_ref()
            .unwrap_or_else(|| panic!("member {id}'s agent is not running"))
            .id()
    }

    /// Whether `id`'s agent has been started and not reaped.
    pub(crate) fn is_running(&self, id: u64) -> bool {
        self.node(id).process.is_some()
    }

    /// `id`'s UDP address (the real one, not the relay's).
    pub(crate) fn udp_address(&self, id: u64) -> SocketAddr {
        self.node(id).udp
    }

    /// `id`'s HTTP endpoint.
    pub(crate) fn http_address(&self, id: u64) -> SocketAddr {
        self.node(id).http
    }

    /// `id`'s configuration file.
    pub(crate) fn config_path(&self, id: u64) -> &Path {
        &self.node(id).config
    }

    /// `kill -9` of `id`'s agent process alone, as the OOM killer would: its
    /// supervisor sees the pipe close and stops the child. Reaps the agent.
    pub(crate) fn kill9(&mut self, id: u64) {
        let node = self.node_mut(id);
        let mut process = node
            .process
            .take()
            .unwrap_or_else(|| panic!("member {id}'s agent is not running"));
        kill(pid(process.id()), Signal::SIGKILL).expect("kill -9 the agent");
        process.wait().expect("reap the agent");
    }

    /// `id`'s machine crashes: SIGKILL to its agent's process group, to its
    /// supervisor's (a group of its own) and to the group of every child it
    /// started that still runs, all at once, so nothing gets to stop anything.
    /// Reaps the agent. (Whatever a child started outside its group would live
    /// on in the job's cgroup, which a real crash takes down with the machine
    /// and which the next start of the agent kills; `child.sh` starts nothing.)
    pub(crate) fn crash(&mut self, id: u64) {
        let dir = self.dir.path().to_string_lossy().into_owned();
        let children: Vec<u32> = self
            .child_log()
            .intervals()
            .iter()
            .filter(|i| i.token.leader.0 == id)
            .map(|i| i.pid)
            .collect();
        // Frozen first, so that it starts no supervisor while they are listed.
        self.stop_agent_group(id);
        let supervisors = self.supervisors(id);
        let running = processes();
        let mut process = self
            .node_mut(id)
            .process
            .take()
            .unwrap_or_else(|| panic!("member {id}'s agent is not running"));
        killpg(pid(process.id()), Signal::SIGKILL).expect("kill -9 the agent's group");
        for supervisor in supervisors {
            let _ = killpg(pid(supervisor), Signal::SIGKILL);
        }
        for child in children {
            // Only a child of this cluster's (its pid may have been reused).
            if running
                .iter()
                .any(|p| p.pid == child && p.cmdline.contains(&dir))
            {
                let _ = killpg(pid(child), Signal::SIGKILL);
            }
        }
        process.wait().expect("reap the agent");
    }

    /// The supervisors `id`'s agent runs now (one at most, or none between two
    /// runs of its child): each leads a process group of its own.
    pub(crate) fn supervisors(&self, id: u64) -> Vec<u32> {
        let agent = self.pid(id);
        processes()
            .into_iter()
            .filter(|p| p.parent == agent && p.cmdline.starts_with(&format!("{AGENT} supervise")))
            .map(|p| p.pid)
            .collect()
    }

    /// SIGTERM to `id`'s agent, as systemd's stop would send; waits for it to exit
    /// (at most `timeout`) and returns its exit status.
    pub(crate) fn terminate(&mut self, id: u64, timeout: Duration) -> ExitStatus {
        self.signal_and_wait(id, Signal::SIGTERM, timeout)
    }

    /// `signal` to `id`'s agent alone (SIGINT is Ctrl-C in its terminal); waits
    /// for it to exit (at most `timeout`) and returns its exit status.
    pub(crate) fn signal_and_wait(
        &mut self,
        id: u64,
        signal: Signal,
        timeout: Duration,
    ) -> ExitStatus {
        let agent = self.pid(id);
        kill(pid(agent), signal).unwrap_or_else(|error| panic!("{signal} to the agent: {error}"));
        match self.wait_exit(id, timeout) {
            Some(status) => status,
            None => panic!(
                "member {id}'s agent did not exit within {timeout:?} of {signal}; its log:\n{}",
                self.node_log(id)
            ),
        }
    }

    /// SIGSTOP to `id`'s agent process alone: its supervisor and command run on.
    pub(crate) fn stop_agent(&self, id: u64) {
        kill(pid(self.pid(id)), Signal::SIGSTOP).expect("SIGSTOP the agent");
    }

    /// SIGCONT to `id`'s agent process alone.
    pub(crate) fn continue_agent(&self, id: u64) {
        kill(pid(self.pid(id)), Signal::SIGCONT).expect("SIGCONT the agent");
    }

    /// Waits up to `timeout` for `id`'s agent to exit on its own; reaps it.
    pub(crate) fn wait_exit(&mut self, id: u64, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        let node = self.node_mut(id);
        let process = node.process.as_mut()?;
        loop {
            if let Some(status) = process.try_wait().expect("poll the agent") {
                node.process = None;
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGSTOP to `id`'s agent's process group, then to its supervisor's: the
    /// whole agent freezes, as in a VM pause.
    pub(crate) fn stop_agent_group(&self, id: u64) {
        killpg(pid(self.pid(id)), Signal::SIGSTOP).expect("SIGSTOP the agent's group");
        // The agent is frozen: the supervisors listed now are all there are.
        for supervisor in self.supervisors(id) {
            let _ = killpg(pid(supervisor), Signal::SIGSTOP);
        }
    }

    /// SIGCONT to `id`'s supervisor's process group, then to its agent's.
    pub(crate) fn continue_agent_group(&self, id: u64) {
        for supervisor in self.supervisors(id) {
            let _ = killpg(pid(supervisor), Signal::SIGCONT);
        }
        killpg(pid(self.pid(id)), Signal::SIGCONT).expect("SIGCONT the agent's group");
    }

    /// SIGSTOP to the process group `group` (a child's pid: it leads its group).
    pub(crate) fn stop_group(&self, group: u32) {
        killpg(pid(group), Signal::SIGSTOP).expect("SIGSTOP a process group");
    }

    /// SIGCONT to the process group `group`.
    pub(crate) fn continue_group(&self, group: u32) {
        killpg(pid(group), Signal::SIGCONT).expect("SIGCONT a process group");
    }

    /// The child log as it is now.
    pub(crate) fn child_log(&self) -> ChildLog {
        ChildLog::read(&self.child_log).unwrap_or_else(|error| panic!("{error}"))
    }

    /// After one job handed over to the next (`old`'s start line, then
    /// `new`'s): asserts that no two jobs ever wrote at once and no token went
    /// back, and returns the milliseconds from `old`'s last line to `new`'s
    /// first. Call it once `old`'s last lines have landed.
    pub(crate) fn hand_over_gap(
        &self,
        old: &super::child_log::Line,
        new: &super::child_log::Line,
    ) -> u64 {
        let log = self.child_log();
        assert_eq!(log.overlaps(), [], "two jobs at once\n{}", self.all_logs());
        assert_eq!(log.token_regressions(), [], "{}", self.all_logs());
        let stopped = log
            .intervals()
            .into_iter()
            .find(|interval| interval.token == old.token && interval.stopped)
            .unwrap_or_else(|| panic!("the old job did not stop\n{}", self.all_logs()))
            .end_millis;
        new.millis.saturating_sub(stopped)
    }

    /// The child log's path.
    pub(crate) fn child_log_path(&self) -> &Path {
        &self.child_log
    }

    /// What `id`'s agent has written to stdout and stderr so far.
    pub(crate) fn node_log(&self, id: u64) -> String {
        std::fs::read_to_string(&self.node(id).log).unwrap_or_default()
    }

    /// Every agent's log, for a failure message.
    pub(crate) fn all_logs(&self) -> String {
        let mut out = String::new();
        for id in self.nodes.keys() {
            let log = self.node_log(*id);
            // The end of each is what explains a failure.
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            out.push_str(&format!("----- node {id} (last {} lines)\n", tail.len()));
            for line in tail.into_iter().rev() {
                out.push_str(line);
                out.push('\n');
            }
        }
        out.push_str("----- child log\n");
        out.push_str(&self.child_log().describe());
        out
    }

    /// Waits up to `timeout` for a child to start under a token above `above`;
    /// returns its `start` line. Panics with every log on a timeout.
    pub(crate) fn wait_for_start_above(
        &self,
        above: Option<FencingToken>,
        timeout: Duration,
    ) -> Line {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(line) = self.child_log().first_start_above(above) {
                return line;
            }
            if Instant::now() >= deadline {
                panic!(
                    "no child started above {above:?} within {timeout:?}\n{}",
                    self.all_logs()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `id`'s `/leader` document, or `None` if the agent does not answer.
    pub(crate) fn status(&self, id: u64) -> Option<Status> {
        status(self.node(id).http)
    }

    /// Waits up to `timeout` until every running agent names the same leader,
    /// that leader says it leads and its child runs; returns the leader's id.
    pub(crate) fn wait_for_agreement(&self, timeout: Duration) -> u64 {
        let running: Vec<u64> = self
            .nodes
            .iter()
            .filter(|(_, node)| node.process.is_some())
            .map(|(&id, _)| id)
            .collect();
        self.wait_for_agreement_among(&running, timeout)
    }

    /// [`Cluster::wait_for_agreement`] among `ids` only.
    pub(crate) fn wait_for_agreement_among(&self, ids: &[u64], timeout: Duration) -> u64 {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(leader) = self.agreed_leader(ids) {
                return leader;
            }
            if Instant::now() >= deadline {
                let statuses: Vec<String> = ids
                    .iter()
                    .map(|&id| format!("{id}: {:?}", self.status(id)))
                    .collect();
                panic!(
                    "members {ids:?} did not agree on a leader within {timeout:?}:\n{}\n{}",
                    statuses.join("\n"),
                    self.all_logs()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The leader every member of `ids` names, if they agree, it says it leads
    /// and its command runs.
    pub(crate) fn agreed_leader(&self, ids: &[u64]) -> Option<u64> {
        let mut leader = None;
        for &id in ids {
            let named = self.status(id)?.leader?;
            if *leader.get_or_insert(named) != named {
                return None;
            }
        }
        let leader = leader?;
        let status = self.status(leader)?;
        let leads = status.role == "leader" && status.child.running;
        leads.then_some(leader)
    }

    /// `id`'s `/metrics` (Prometheus text); panics if it does not answer.
    pub(crate) fn metrics(&self, id: u64) -> String {
        self.get(id, "/metrics")
    }

    /// Kills every process this cluster started: the agents' groups (agents and
    /// supervisors), then every child (each leads its own group). Idempotent.
    pub(crate) fn kill_all(&mut self) {
        let dir = self.dir.path().to_string_lossy().into_owned();
        // Only a group that still has one of ours in it: a reaped agent's pid may
        // lead someone else's group by now.
        let ours = |cmdline: &str| cmdline.contains(AGENT) || cmdline.contains(&dir);
        let running = processes();
        for &group in &self.groups {
            if running.iter().any(|p| p.pgid == group && ours(&p.cmdline)) {
                let _ = killpg(pid(group), Signal::SIGKILL);
            }
        }
        for node in self.nodes.values_mut() {
            if let Some(mut process) = node.process.take() {
                let _ = process.kill();
                let _ = process.wait();
            }
        }
        // A supervisor leads its own group, and a child whose supervisor died
        // with it is an orphan in its own group; both command lines name the
        // child log, inside this cluster's directory. Twice: one may have been
        // starting while its agent was killed.
        for _ in 0..2 {
            for process in processes() {
                if process.cmdline.contains(&dir) {
                    let _ = killpg(pid(process.pgid), Signal::SIGKILL);
                    let _ = kill(pid(process.pid), Signal::SIGKILL);
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // The job cgroups of agents that did not leave cleanly.
        for id in self.ids() {
            remove_job_cgroup(&self.dir.path().join(format!("data/{id}")));
        }
        for cgroup in &self.lost_cgroups {
            remove_cgroup(cgroup);
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.kill_all();
        if self.keep
            || std::thread::panicking()
            || std::env::var_os("BULLY_KEEP_TEST_DIR").is_some()
        {
            // Leave the configurations and logs for a look.
            let path = self.dir.path().to_owned();
            eprintln!("process test files kept in {}", path.display());
            let dir = std::mem::replace(
                &mut self.dir,
                tempfile::tempdir().expect("a temporary directory"),
            );
            let _ = dir.keep();
        }
    }
}

/// Kills what is left in the job cgroup the agent recorded in `data_dir`, and
/// removes it: a test must not leave cgroups behind on the machine.
pub(crate) fn remove_job_cgroup(data_dir: &Path) {
    let record = data_dir.join(bully_agent::containment::RECORD);
    let Ok(text) = std::fs::read_to_string(&record) else {
        return;
    };
    remove_cgroup(Path::new(text.trim_end()));
}

/// Kills what is left in the job cgroup at `path`, if it is still there, and
/// removes it.
fn remove_cgroup(path: &Path) {
    let Ok(cgroup) = bully_agent::cgroup::Cgroup::open(path) else {
        return;
    };
    let give_up = Instant::now() + Duration::from_secs(10);
    while cgroup.is_populated() && Instant::now() < give_up {
        cgroup.signal(Signal::SIGKILL);
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = cgroup.remove();
}

/// `id`'s `/leader` document, fetched as `bully-agent status` does, or `None` if
/// the agent does not answer.
pub(crate) fn status(endpoint: SocketAddr) -> Option<Status> {
    bully_agent::status::fetch(&endpoint.to_string()).ok()
}

fn pid(pid: u32) -> Pid {
    Pid::from_raw(i32::try_from(pid).expect("a pid fits in i32"))
}

/// The `failover_bound_ms=N` the agent logs when it joins.
pub(crate) fn logged_failover_bound(log: &str) -> Option<u128> {
    let plain = without_escapes(log);
    let key = "failover_bound_ms=";
    let at = plain.find(key)? + key.len();
    let digits: String = plain[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// `text` without terminal colour sequences (`ESC [ ... letter`), which the
/// agent's log may hold.
pub(crate) fn without_escapes(text: &str) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // Up to and including the sequence's final letter.
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    plain
}
