//! bully-agent side by side with a real etcd cluster and `etcdctl lock`.
//!
//! Three "machines" (one network namespace each, on a bridge, when `ip netns`
//! works; else plain loopback), each wanting the same job: this binary's `job`
//! subcommand, which appends `<machine> <unix-nanos>` to a shared log every
//! 20 ms. Arm etcd: one etcd member and one `etcdctl lock` per machine. Arm
//! bully: one bully-agent per machine. Faults on the machine whose job runs;
//! failover and overlap are read from the shared log. See README.md.
#![forbid(unsafe_code)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A machine's job lines closer than this belong to one run of its job
/// (lines come every 20 ms; the margin absorbs a loaded machine's late sleeps).
const GAP_NS: i64 = 150_000_000;
const NS_PREFIX: &str = "vsetcd";
const MACHINES: usize = 3;

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("job") => job(&args[2], &args[3]),
        Some("cleanup") => {
            cleanup_stale();
            println!("removed leftover namespaces and processes of earlier runs");
        }
        Some("run") => run(&args[2..]),
        _ => {
            eprintln!(
                "usage: versus-etcd run [--trials N] [--quick] [--out FILE] [--keep DIR] [--agent PATH] [--faults LIST] [--arms LIST]\n       versus-etcd cleanup"
            );
            std::process::exit(2);
        }
    }
}

/// The job: a line every 20 ms, one write(2) per line on an O_APPEND file, so
/// lines of several machines never interleave.
fn job(machine: &str, log: &str) -> ! {
    let mut f = fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(log)
        .expect("open the log");
    loop {
        let line = format!("{machine} {}\n", now_ns());
        f.write_all(line.as_bytes()).expect("write the log");
        sleep(Duration::from_millis(20));
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    Crash,
    KillClient,
    StopClient,
    Cut,
    Loss,
}

impl Fault {
    fn name(self) -> &'static str {
        match self {
            Fault::Crash => "crash",
            Fault::KillClient => "kill",
            Fault::StopClient => "stop",
            Fault::Cut => "cut",
            Fault::Loss => "loss",
        }
    }
    fn describe(self) -> &'static str {
        match self {
            Fault::Crash => "every process of the machine SIGKILLed",
            Fault::KillClient => "the agent / etcdctl alone SIGKILLed",
            Fault::StopClient => "the agent / etcdctl alone SIGSTOPped for 3 leases, then SIGCONT",
            Fault::Cut => "the machine cut off (its link down) for 2 leases + 4 s, then healed",
            Fault::Loss => "30 % loss both ways on its link for 2 leases + 4 s, then removed",
        }
    }
    fn all() -> [Fault; 5] {
        [
            Fault::Crash,
            Fault::KillClient,
            Fault::StopClient,
            Fault::Cut,
            Fault::Loss,
        ]
    }
    fn network(self) -> bool {
        matches!(self, Fault::Cut | Fault::Loss)
    }
}

#[derive(Clone, Debug)]
enum Tool {
    Etcd { ttl_s: u64 },
    Bully { leader_timeout_ms: Option<u64> },
}

#[derive(Clone, Debug)]
struct Arm {
    key: &'static str,
    label: String,
    tool: Tool,
    lease_ms: u64,
}

fn arms() -> Vec<Arm> {
    vec![
        Arm {
            key: "etcd-default",
            label: "etcd, `etcdctl lock` defaults (--ttl 10)".into(),
            tool: Tool::Etcd { ttl_s: 10 },
            lease_ms: 10_000,
        },
        Arm {
            key: "bully-default",
            label: "bully-agent defaults (lease 2.95 s)".into(),
            tool: Tool::Bully {
                leader_timeout_ms: None,
            },
            lease_ms: 2_950,
        },
        Arm {
            key: "etcd-3s",
            label: "etcd, --ttl 3".into(),
            tool: Tool::Etcd { ttl_s: 3 },
            lease_ms: 3_000,
        },
        Arm {
            key: "bully-3s",
            label: "bully-agent, lease 3 s (leader_timeout_ms 3050)".into(),
            tool: Tool::Bully {
                leader_timeout_ms: Some(3_050),
            },
            lease_ms: 3_000,
        },
    ]
}

struct Env {
    netns: bool,
    can_lose: bool,
    agent: PathBuf,
    me: PathBuf,
    root: PathBuf,
}

impl Env {
    fn ns(&self, i: usize) -> String {
        format!("{NS_PREFIX}-{i}")
    }
    fn ip(&self, i: usize) -> String {
        if self.netns {
            format!("10.77.0.{i}")
        } else {
            "127.0.0.1".into()
        }
    }
    fn port(&self, i: usize, base: u16) -> u16 {
        if self.netns {
            base
        } else {
            base + 10 * i as u16
        }
    }
    /// A command run inside machine `i`'s namespace (`ip netns exec` execs it,
    /// so the child's pid is the command's own).
    fn cmd(&self, i: usize, program: &Path) -> Command {
        if self.netns {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", &self.ns(i)]).arg(program);
            c
        } else {
            Command::new(program)
        }
    }
}

/// Removes what this harness creates, if anything is left of an earlier run
/// that was interrupted: its namespaces, and processes whose command line
/// names one of its directories.
fn cleanup_stale() {
    kill_matching("/versus-etcd-run-");
    if let Ok(out) = Command::new("ip").args(["netns", "list"]).output() {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let name = line.split_whitespace().next().unwrap_or("");
            if name.starts_with(NS_PREFIX) {
                let _ = Command::new("ip").args(["netns", "del", name]).status();
            }
        }
    }
}

/// Everything this run started; dropped (also on a panic) it kills the
/// processes, deletes the namespaces and the directory.
struct Guard {
    root: PathBuf,
    netns: bool,
}

impl Drop for Guard {
    fn drop(&mut self) {
        kill_matching(&self.root.to_string_lossy());
        if self.netns {
            for i in 0..=MACHINES {
                let _ = Command::new("ip")
                    .args(["netns", "del", &format!("{NS_PREFIX}-{i}")])
                    .stderr(Stdio::null())
                    .status();
            }
        }
        let _ = fs::remove_dir_all(&self.root);
    }
}

fn sh(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Namespace 0 is the switch (a bridge); machine i's veth `vs-v{i}` is
/// 10.77.0.i, its peer `vs-p{i}` is on the bridge.
fn setup_netns(env: &Env) -> Result<(), String> {
    let sw = env.ns(0);
    sh(&["ip", "netns", "add", &sw])?;
    sh(&["ip", "-n", &sw, "link", "add", "vs-br", "type", "bridge"])?;
    sh(&["ip", "-n", &sw, "link", "set", "vs-br", "up"])?;
    for i in 1..=MACHINES {
        let ns = env.ns(i);
        sh(&["ip", "netns", "add", &ns])?;
        sh(&[
            "ip",
            "link",
            "add",
            &format!("vs-v{i}"),
            "netns",
            &ns,
            "type",
            "veth",
            "peer",
            "name",
            &format!("vs-p{i}"),
            "netns",
            &sw,
        ])?;
        sh(&[
            "ip",
            "-n",
            &sw,
            "link",
            "set",
            &format!("vs-p{i}"),
            "master",
            "vs-br",
        ])?;
        sh(&["ip", "-n", &sw, "link", "set", &format!("vs-p{i}"), "up"])?;
        sh(&[
            "ip",
            "-n",
            &ns,
            "addr",
            "add",
            &format!("10.77.0.{i}/24"),
            "dev",
            &format!("vs-v{i}"),
        ])?;
        sh(&["ip", "-n", &ns, "link", "set", &format!("vs-v{i}"), "up"])?;
        sh(&["ip", "-n", &ns, "link", "set", "lo", "up"])?;
    }
    Ok(())
}

fn loss_works(env: &Env) -> bool {
    have("iptables")
        && loss(&env.ns(1), "vs-v1", true).is_ok()
        && loss(&env.ns(1), "vs-v1", false).is_ok()
}

struct Opts {
    trials: usize,
    quick: bool,
    out: Option<PathBuf>,
    agent: PathBuf,
    faults: Vec<Fault>,
    arms: Vec<String>,
    keep: Option<PathBuf>,
}

fn parse(args: &[String]) -> Opts {
    let mut o = Opts {
        trials: 3,
        quick: false,
        out: None,
        agent: PathBuf::from("../target/release/bully-agent"),
        faults: Fault::all().to_vec(),
        arms: arms().iter().map(|a| a.key.to_string()).collect(),
        keep: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || {
            it.next()
                .cloned()
                .unwrap_or_else(|| die(&format!("{a} needs a value")))
        };
        match a.as_str() {
            "--trials" => o.trials = val().parse().unwrap_or_else(|_| die("--trials N")),
            "--quick" => o.quick = true,
            "--keep" => o.keep = Some(PathBuf::from(val())),
            "--out" => o.out = Some(PathBuf::from(val())),
            "--agent" => o.agent = PathBuf::from(val()),
            "--faults" => {
                let v = val();
                o.faults = v
                    .split(',')
                    .map(|f| {
                        *Fault::all()
                            .iter()
                            .find(|x| x.name() == f)
                            .unwrap_or_else(|| {
                                die(&format!("unknown fault {f}: crash,kill,stop,cut,loss"))
                            })
                    })
                    .collect()
            }
            "--arms" => o.arms = val().split(',').map(String::from).collect(),
            _ => die(&format!("unknown option {a}")),
        }
    }
    if o.quick {
        o.trials = 1;
    }
    o
}

fn die(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(1);
}

fn run(args: &[String]) {
    let opts = parse(args);
    // Nothing is installed here: say what is missing and stop.
    for (p, pkg) in [("etcd", "etcd-server"), ("etcdctl", "etcd-client")] {
        if !have(p) {
            die(&format!(
                "`{p}` not found: install it with `apt-get install {pkg}` (Debian's etcd 3.4)"
            ));
        }
    }
    if !opts.agent.exists() {
        die(&format!(
            "{} not found: build it with `cargo build --release -p bully-agent` at the repository's root, or pass --agent PATH",
            opts.agent.display()
        ));
    }
    let agent = fs::canonicalize(&opts.agent).unwrap();
    let me = std::env::current_exe().unwrap();
    cleanup_stale();
    let root = std::env::temp_dir().join(format!("versus-etcd-run-{}", std::process::id()));
    fs::create_dir_all(&root).unwrap();
    let root = fs::canonicalize(root).unwrap();
    let mut env = Env {
        netns: false,
        can_lose: false,
        agent,
        me,
        root: root.clone(),
    };
    let mut guard = Guard {
        root: root.clone(),
        netns: false,
    };
    let mut notes = Vec::new();
    if !have("ip") {
        notes.push("no `ip` (iproute2: `apt-get install iproute2`): plain loopback, the network faults are skipped".to_string());
    } else {
        guard.netns = true;
        match setup_netns(&env) {
            Ok(()) => {
                env.netns = true;
                env.can_lose = loss_works(&env);
                if !env.can_lose {
                    notes.push("iptables' statistic match does not work in a namespace here (`apt-get install iptables`): the loss fault is skipped".into());
                }
            }
            Err(e) => notes.push(format!("network namespaces could not be made ({e}): plain loopback, the network faults are skipped")),
        }
    }
    let mut report = String::new();
    let _ = writeln!(report, "# bully-agent and etcd side by side: results\n");
    let _ = writeln!(
        report,
        "`cargo run --release -- run {}` ({} UTC)\n",
        args.join(" "),
        utc_now()
    );
    let _ = writeln!(report, "- {}", version("etcd", &["--version"]));
    let _ = writeln!(
        report,
        "- {}",
        version(&env.agent.to_string_lossy(), &["--version"])
    );
    let _ = writeln!(report, "- {}", machine());
    let _ = writeln!(
        report,
        "- network: {}",
        if env.netns {
            "one network namespace per machine on a bridge (10.77.0.1-3)"
        } else {
            "plain loopback"
        }
    );
    for n in &notes {
        let _ = writeln!(report, "- {n}");
        eprintln!("note: {n}");
    }
    let _ = writeln!(report, "- trials per fault and arm: {}\n", opts.trials);

    let chosen: Vec<Arm> = arms()
        .into_iter()
        .filter(|a| opts.arms.iter().any(|k| k == a.key))
        .collect();
    let _ = writeln!(
        report,
        "## Idle: memory and CPU of each arm (job running, no fault; the three jobs' own processes excluded)\n"
    );
    let _ = writeln!(
        report,
        "| arm | processes | RSS, sum | CPU while idle (own utime+stime over {} s) |",
        idle_secs(&opts)
    );
    let _ = writeln!(report, "|---|---|---|---|");
    for arm in &chosen {
        match idle(&env, arm, &opts) {
            Ok((n, rss_kb, cpu_ms_per_s)) => {
                let _ = writeln!(
                    report,
                    "| {} | {n} | {:.1} MiB | {:.1} ms/s ({:.2} % of one core) |",
                    arm.label,
                    rss_kb as f64 / 1024.0,
                    cpu_ms_per_s,
                    cpu_ms_per_s / 10.0
                );
            }
            Err(e) => {
                let _ = writeln!(report, "| {} | – | failed: {e} | – |", arm.label);
            }
        }
        eprintln!("{report}");
    }

    let _ = writeln!(report, "\n## Faults on the machine that runs the job\n");
    let _ = writeln!(
        report,
        "Failover: from the fault to the first line of another machine's job. Overlap: time during which two machines' jobs both wrote (lines at most {} ms apart are one run). \"≥\": the overlap was still going when the trial ended (the harness killed it).\n",
        GAP_NS / 1_000_000
    );
    let _ = writeln!(
        report,
        "| fault | arm | trials | failover median | failover max | overlap median | overlap max | trials with overlap |"
    );
    let _ = writeln!(report, "|---|---|---|---|---|---|---|---|");
    let mut raw = String::new();
    for &fault in &opts.faults {
        if fault.network() && !env.netns {
            let _ = writeln!(
                report,
                "| {} | all | – | skipped: no network namespaces | | | | |",
                fault.name()
            );
            continue;
        }
        if fault == Fault::Loss && !env.can_lose {
            let _ = writeln!(
                report,
                "| {} | all | – | skipped: no iptables | | | | |",
                fault.name()
            );
            continue;
        }
        for arm in &chosen {
            let mut results = Vec::new();
            for t in 0..opts.trials {
                let r = trial(&env, arm, fault, t, opts.keep.as_deref());
                match &r {
                    Ok(o) => {
                        let _ =
                            writeln!(raw, "{} {} trial {t}: {}", fault.name(), arm.key, o.line());
                    }
                    Err(e) => {
                        let _ =
                            writeln!(raw, "{} {} trial {t}: failed: {e}", fault.name(), arm.key);
                    }
                }
                eprintln!(
                    "{} {} trial {t}: {}",
                    fault.name(),
                    arm.key,
                    r.as_ref().map(Outcome::line).unwrap_or_else(|e| e.clone())
                );
                if let Ok(o) = r {
                    results.push(o);
                }
            }
            let _ = writeln!(report, "{}", row(fault, arm, &results));
        }
    }
    let _ = writeln!(report, "\nFaults:\n");
    for f in Fault::all() {
        let _ = writeln!(report, "- `{}`: {}", f.name(), f.describe());
    }
    let _ = writeln!(report, "\n## Every trial\n\n```\n{raw}```");
    print!("{report}");
    if let Some(out) = &opts.out {
        fs::write(out, &report).unwrap();
    }
    drop(guard);
}

fn idle_secs(o: &Opts) -> u64 {
    if o.quick { 5 } else { 10 }
}

fn utc_now() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn version(p: &str, a: &[&str]) -> String {
    Command::new(p)
        .args(a)
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .to_string()
        })
        .unwrap_or_default()
}

fn machine() -> String {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let load = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let kernel = version("uname", &["-r"]);
    format!(
        "{cpus} CPUs, Linux {kernel}, load average at start {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    )
}

/// The processes of one machine: the roots the harness started.
struct Machine {
    roots: Vec<Child>,
    /// etcd: the etcdctl; bully: the agent (the process the "alone" faults hit).
    client: u32,
}

struct Cluster {
    machines: Vec<Machine>,
    log: PathBuf,
}

fn start(env: &Env, arm: &Arm, dir: &Path) -> Result<Cluster, String> {
    fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let log = dir.join("jobs.log");
    fs::write(&log, "").map_err(|e| e.to_string())?;
    let out = |name: &str| Stdio::from(fs::File::create(dir.join(name)).unwrap());
    let mut machines = Vec::new();
    match arm.tool {
        Tool::Etcd { ttl_s } => {
            let peers: Vec<String> = (1..=MACHINES)
                .map(|i| format!("m{i}=http://{}:{}", env.ip(i), env.port(i, 2380)))
                .collect();
            let mut members = Vec::new();
            for i in 1..=MACHINES {
                let peer = format!("http://{}:{}", env.ip(i), env.port(i, 2380));
                let client = format!("http://{}:{}", env.ip(i), env.port(i, 2379));
                let child = env
                    .cmd(i, Path::new("etcd"))
                    .args(["--name", &format!("m{i}"), "--data-dir"])
                    .arg(dir.join(format!("etcd-{i}")))
                    .args([
                        "--listen-peer-urls",
                        &peer,
                        "--initial-advertise-peer-urls",
                        &peer,
                    ])
                    .args([
                        "--listen-client-urls",
                        &client,
                        "--advertise-client-urls",
                        &client,
                    ])
                    .args([
                        "--initial-cluster",
                        &peers.join(","),
                        "--initial-cluster-state",
                        "new",
                        "--initial-cluster-token",
                    ])
                    .arg(dir.file_name().unwrap())
                    .stdout(out(&format!("etcd-{i}.log")))
                    .stderr(out(&format!("etcd-{i}.err")))
                    .spawn()
                    .map_err(|e| format!("etcd: {e}"))?;
                members.push(child);
            }
            let endpoints = |i: usize| {
                // This machine's member first, then the others: what a
                // deployment would give etcdctl.
                let mut v = vec![i];
                v.extend((1..=MACHINES).filter(|&j| j != i));
                v.iter()
                    .map(|&j| format!("{}:{}", env.ip(j), env.port(j, 2379)))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                let ok = env
                    .cmd(1, Path::new("etcdctl"))
                    .args([
                        "--endpoints",
                        &endpoints(1),
                        "endpoint",
                        "health",
                        "--cluster",
                    ])
                    .output()
                    .is_ok_and(|o| o.status.success());
                if ok {
                    break;
                }
                if Instant::now() > deadline {
                    return Err("etcd cluster not healthy after 30 s".into());
                }
                sleep(Duration::from_millis(200));
            }
            for (i, member) in (1..=MACHINES).zip(members) {
                let lock = env
                    .cmd(i, Path::new("etcdctl"))
                    .args([
                        "--endpoints",
                        &endpoints(i),
                        "lock",
                        "--ttl",
                        &ttl_s.to_string(),
                        "versus-job",
                    ])
                    .arg(&env.me)
                    .args(["job", &i.to_string()])
                    .arg(&log)
                    .stdout(out(&format!("etcdctl-{i}.log")))
                    .stderr(out(&format!("etcdctl-{i}.err")))
                    .spawn()
                    .map_err(|e| format!("etcdctl: {e}"))?;
                let client = lock.id();
                machines.push(Machine {
                    roots: vec![member, lock],
                    client,
                });
            }
        }
        Tool::Bully { leader_timeout_ms } => {
            let secret = dir.join("secret");
            let mut bytes = [0u8; 32];
            {
                use std::io::Read;
                fs::File::open("/dev/urandom")
                    .and_then(|mut f| f.read_exact(&mut bytes))
                    .map_err(|e| e.to_string())?;
            }
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            fs::write(&secret, hex).map_err(|e| e.to_string())?;
            sh(&["chmod", "600", &secret.to_string_lossy()])?;
            for i in 1..=MACHINES {
                let mut toml = format!(
                    "cluster = 77\nid = {i}\ndata_dir = \"{}\"\nsecret_file = \"{}\"\n",
                    dir.join(format!("data-{i}")).display(),
                    secret.display()
                );
                if let Some(lt) = leader_timeout_ms {
                    let _ = writeln!(toml, "[timing]\nleader_timeout_ms = {lt}");
                }
                for j in 1..=MACHINES {
                    let _ = writeln!(
                        toml,
                        "[[members]]\nid = {j}\naddress = \"{}:{}\"",
                        env.ip(j),
                        env.port(j, 7070)
                    );
                }
                let conf = dir.join(format!("node-{i}.toml"));
                fs::write(&conf, toml).map_err(|e| e.to_string())?;
                // A new cluster: declared, so that each member votes as it starts.
                sh(&[
                    &env.agent.to_string_lossy(),
                    "init",
                    "--config",
                    &conf.to_string_lossy(),
                ])?;
            }
            for i in 1..=MACHINES {
                let conf = dir.join(format!("node-{i}.toml"));
                let child = env
                    .cmd(i, &env.agent)
                    .args(["run", "--config"])
                    .arg(&conf)
                    .arg("--")
                    .arg(&env.me)
                    .args(["job", &i.to_string()])
                    .arg(&log)
                    .stdout(out(&format!("agent-{i}.log")))
                    .stderr(out(&format!("agent-{i}.err")))
                    .spawn()
                    .map_err(|e| format!("bully-agent: {e}"))?;
                let client = child.id();
                machines.push(Machine {
                    roots: vec![child],
                    client,
                });
            }
        }
    }
    Ok(Cluster { machines, log })
}

fn read_log(log: &Path) -> Vec<(usize, i64)> {
    fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
        })
        .collect()
}

/// Waits until one machine alone has written for the last 2 s; returns it.
fn steady(c: &Cluster) -> Result<usize, String> {
    let deadline = Instant::now() + Duration::from_secs(40);
    while Instant::now() < deadline {
        sleep(Duration::from_millis(250));
        let lines = read_log(&c.log);
        let now = now_ns();
        let recent: Vec<_> = lines
            .iter()
            .filter(|(_, t)| now - t < 2_000_000_000)
            .collect();
        let first_any = lines.first().map(|l| l.1).unwrap_or(now);
        let who: HashSet<usize> = recent.iter().map(|l| l.0).collect();
        if who.len() == 1 && now - first_any > 2_500_000_000 && recent.len() > 60 {
            return Ok(*who.iter().next().unwrap());
        }
    }
    Err("no single machine wrote steadily within 40 s".into())
}

/// Every descendant of `roots` (the roots included), from /proc.
fn descendants(roots: &[u32]) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for e in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(rest) = stat.rsplit_once(')').map(|r| r.1) else {
            continue;
        };
        let ppid: u32 = rest
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        children.entry(ppid).or_default().push(pid);
    }
    let mut out = Vec::new();
    let mut stack: Vec<u32> = roots.to_vec();
    while let Some(p) = stack.pop() {
        if out.contains(&p) || !Path::new(&format!("/proc/{p}")).exists() {
            continue;
        }
        out.push(p);
        stack.extend(children.get(&p).into_iter().flatten());
    }
    out
}

fn cmdline(pid: u32) -> Vec<String> {
    fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|&c| c == 0)
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn is_job(pid: u32, me: &Path) -> bool {
    let c = cmdline(pid);
    c.len() > 1 && c[0] == me.to_string_lossy() && c[1] == "job"
}

fn signal(sig: &str, pids: &[u32]) {
    if pids.is_empty() {
        return;
    }
    let mut c = Command::new("kill");
    c.args(["-s", sig]);
    for p in pids {
        c.arg(p.to_string());
    }
    let _ = c.stderr(Stdio::null()).status();
}

/// SIGKILLs every process whose command line contains `needle`, until none is left.
fn kill_matching(needle: &str) {
    for _ in 0..20 {
        let me = std::process::id();
        let pids: Vec<u32> = fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
            .filter(|&p| p != me && cmdline(p).iter().any(|a| a.contains(needle)))
            .collect();
        if pids.is_empty() {
            return;
        }
        signal("KILL", &pids);
        sleep(Duration::from_millis(100));
    }
}

fn stop(c: Cluster, dir: &Path) {
    let roots: Vec<u32> = c
        .machines
        .iter()
        .flat_map(|m| m.roots.iter().map(Child::id))
        .collect();
    // SIGCONT first: a stopped process ignores SIGKILL only until continued
    // in /proc's eyes, and its children must not outlive it.
    let all = descendants(&roots);
    signal("CONT", &all);
    signal("KILL", &all);
    kill_matching(&dir.to_string_lossy());
    for mut m in c.machines {
        for r in &mut m.roots {
            let _ = r.kill();
            let _ = r.wait();
        }
    }
}

fn proc_ticks(pid: u32) -> u64 {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    let Some(rest) = stat.rsplit_once(')').map(|r| r.1) else {
        return 0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the comm: state is field 0, utime 11, stime 12.
    f.get(11).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0)
        + f.get(12).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0)
}

fn rss_kb(pid: u32) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

fn tool_pids(env: &Env, c: &Cluster) -> Vec<u32> {
    let roots: Vec<u32> = c
        .machines
        .iter()
        .flat_map(|m| m.roots.iter().map(Child::id))
        .collect();
    descendants(&roots)
        .into_iter()
        .filter(|&p| !is_job(p, &env.me))
        .collect()
}

/// (processes, summed VmRSS in kB, CPU ms per second) over the idle window.
fn idle(env: &Env, arm: &Arm, o: &Opts) -> Result<(usize, u64, f64), String> {
    let dir = env.root.join(format!("idle-{}", arm.key));
    let c = start(env, arm, &dir)?;
    let r = (|| {
        steady(&c)?;
        sleep(Duration::from_secs(3));
        let pids = tool_pids(env, &c);
        let t0: u64 = pids.iter().map(|&p| proc_ticks(p)).sum();
        let start = Instant::now();
        sleep(Duration::from_secs(idle_secs(o)));
        let t1: u64 = pids.iter().map(|&p| proc_ticks(p)).sum();
        let secs = start.elapsed().as_secs_f64();
        let rss: u64 = pids.iter().map(|&p| rss_kb(p)).sum();
        // CLK_TCK is 100 on Linux: a tick is 10 ms.
        Ok((pids.len(), rss, (t1 - t0) as f64 * 10.0 / secs))
    })();
    stop(c, &dir);
    r
}

struct Outcome {
    writer: usize,
    failover_ms: Option<f64>,
    overlap_ms: f64,
    open_ended: bool,
    /// The machines whose jobs were writing when the trial ended.
    at_end: Vec<usize>,
}

impl Outcome {
    fn line(&self) -> String {
        format!(
            "writer {} failover {} overlap {:.0} ms{}, writing at the end: {:?}",
            self.writer,
            self.failover_ms
                .map(|f| format!("{f:.0} ms"))
                .unwrap_or("none".into()),
            self.overlap_ms,
            if self.open_ended {
                " (still overlapping at the end)"
            } else {
                ""
            },
            self.at_end
        )
    }
}

/// 30 % loss both ways on machine `ns`'s link: iptables' `statistic` match
/// in its namespace (tc netem is not in every kernel; it is not in this
/// machine's), on its veth only, so its own loopback traffic is untouched.
fn loss(ns: &str, dev: &str, add: bool) -> Result<(), String> {
    let op = if add { "-A" } else { "-D" };
    for (chain, dir) in [("INPUT", "-i"), ("OUTPUT", "-o")] {
        sh(&[
            "ip",
            "netns",
            "exec",
            ns,
            "iptables",
            "-w",
            op,
            chain,
            dir,
            dev,
            "-m",
            "statistic",
            "--mode",
            "random",
            "--probability",
            "0.3",
            "-j",
            "DROP",
        ])?;
    }
    Ok(())
}

fn trial(
    env: &Env,
    arm: &Arm,
    fault: Fault,
    t: usize,
    keep: Option<&Path>,
) -> Result<Outcome, String> {
    let dir = env.root.join(format!("{}-{}-{t}", arm.key, fault.name()));
    let c = start(env, arm, &dir)?;
    let r = (|| {
        let w = steady(&c)?;
        let m = &c.machines[w - 1];
        let lease = Duration::from_millis(arm.lease_ms);
        let (sw, ns) = (env.ns(0), env.ns(w));
        let (vp, vv) = (format!("vs-p{w}"), format!("vs-v{w}"));
        let fault_at;
        match fault {
            Fault::Crash => {
                let pids = descendants(&m.roots.iter().map(Child::id).collect::<Vec<_>>());
                fault_at = now_ns();
                signal("KILL", &pids);
                sleep(lease + Duration::from_secs(6));
            }
            Fault::KillClient => {
                fault_at = now_ns();
                signal("KILL", &[m.client]);
                sleep(lease + Duration::from_secs(6));
            }
            Fault::StopClient => {
                fault_at = now_ns();
                signal("STOP", &[m.client]);
                sleep(lease * 3);
                signal("CONT", &[m.client]);
                sleep(Duration::from_secs(4));
            }
            Fault::Cut => {
                fault_at = now_ns();
                sh(&["ip", "-n", &sw, "link", "set", &vp, "down"])?;
                sleep(lease * 2 + Duration::from_secs(4));
                sh(&["ip", "-n", &sw, "link", "set", &vp, "up"])?;
                sleep(Duration::from_secs(4));
            }
            Fault::Loss => {
                fault_at = now_ns();
                loss(&ns, &vv, true)?;
                sleep(lease * 2 + Duration::from_secs(4));
                loss(&ns, &vv, false)?;
                sleep(Duration::from_secs(4));
            }
        }
        let end = now_ns();
        let lines = read_log(&c.log);
        let failover_ms = lines
            .iter()
            .find(|(m, t)| *m != w && *t > fault_at)
            .map(|(_, t)| (t - fault_at) as f64 / 1e6);
        let (overlap_ns, open_ended, at_end) = overlap(&lines, end);
        Ok(Outcome {
            writer: w,
            failover_ms,
            overlap_ms: overlap_ns as f64 / 1e6,
            open_ended,
            at_end,
        })
    })();
    stop(c, &dir);
    // --keep DIR: the logs of every trial with an overlap, to read afterwards.
    if let (Some(keep), Ok(o)) = (keep, &r)
        && o.overlap_ms > 0.0
    {
        let _ = sh(&["cp", "-r", &dir.to_string_lossy(), &keep.to_string_lossy()]);
    }
    if r.is_ok() {
        let _ = fs::remove_dir_all(&dir);
    }
    r
}

/// The time during which two or more machines' jobs were writing, and whether
/// two still were when the trial ended.
fn overlap(lines: &[(usize, i64)], end: i64) -> (i64, bool, Vec<usize>) {
    let mut runs: BTreeMap<usize, Vec<(i64, i64)>> = BTreeMap::new();
    for &(m, t) in lines {
        let v = runs.entry(m).or_default();
        match v.last_mut() {
            Some(last) if t - last.1 <= GAP_NS => last.1 = t,
            _ => v.push((t, t)),
        }
    }
    let mut events: Vec<(i64, i32)> = runs
        .values()
        .flatten()
        .flat_map(|&(a, b)| [(a, 1), (b, -1)])
        .collect();
    events.sort();
    let (mut active, mut since, mut total) = (0, 0, 0);
    for (t, d) in events {
        if active >= 2 {
            total += t - since;
        }
        active += d;
        since = t;
    }
    let at_end: Vec<usize> = runs
        .iter()
        .filter(|(_, v)| v.last().is_some_and(|r| end - r.1 < GAP_NS * 2))
        .map(|(&m, _)| m)
        .collect();
    (total, at_end.len() >= 2, at_end)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn ms(x: f64) -> String {
    if x >= 10_000.0 {
        format!("{:.1} s", x / 1000.0)
    } else {
        format!("{x:.0} ms")
    }
}

fn row(fault: Fault, arm: &Arm, r: &[Outcome]) -> String {
    if r.is_empty() {
        return format!(
            "| {} | {} | 0 | every trial failed | | | | |",
            fault.name(),
            arm.label
        );
    }
    let mut f: Vec<f64> = r.iter().filter_map(|o| o.failover_ms).collect();
    let none = r.len() - f.len();
    let fo = if f.is_empty() {
        ("none".to_string(), "none".to_string())
    } else {
        let mx = f.iter().cloned().fold(0.0, f64::max);
        (ms(median(&mut f)), ms(mx))
    };
    let none_note = if none > 0 {
        format!(" ({none} without)")
    } else {
        String::new()
    };
    let mut o: Vec<f64> = r.iter().map(|o| o.overlap_ms).collect();
    let open = r.iter().any(|o| o.open_ended);
    let mx = o.iter().cloned().fold(0.0, f64::max);
    let mark = if open { "≥ " } else { "" };
    let with = r.iter().filter(|o| o.overlap_ms > 0.0).count();
    format!(
        "| {} | {} | {} | {}{none_note} | {} | {mark}{} | {mark}{} | {with} of {} |",
        fault.name(),
        arm.label,
        r.len(),
        fo.0,
        fo.1,
        ms(median(&mut o)),
        ms(mx),
        r.len()
    )
}
