//! The supervisor process on its own: it stops the command when told, when the
//! agent's end of the socket closes (the agent died), and when the last lease
//! deadline passes; a command that ignores SIGTERM is killed after the grace
//! period. Real processes; the assertions are on what the command and the
//! supervisor report, not on how long they took.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bully_agent::supervisor::to_monotonic;

/// A command that says when it starts and when SIGTERM reaches it (unless told
/// to ignore SIGTERM), and otherwise sleeps.
fn script(ignore_term: bool) -> String {
    let trap = if ignore_term {
        "trap '' TERM"
    } else {
        "trap 'echo term; exit 0' TERM"
    };
    format!("{trap}; echo up; while :; do sleep 0.05; done")
}

struct Run {
    supervisor: Child,
    control: UnixStream,
    reports: BufReader<UnixStream>,
}

fn start(grace_ms: u64, ignore_term: bool) -> Run {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let supervisor = Command::new(env!("CARGO_BIN_EXE_bully-agent"))
        .args([
            "supervise",
            "--grace-ms",
            &grace_ms.to_string(),
            "--",
            "sh",
            "-c",
        ])
        .arg(script(ignore_term))
        .stdin(Stdio::from(OwnedFd::from(theirs)))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let reports = BufReader::new(ours.try_clone().unwrap());
    let mut run = Run {
        supervisor,
        control: ours,
        reports,
    };
    let pid = run.report();
    assert!(pid.starts_with("pid "), "{pid}");
    // The command's own output, once it runs.
    let mut out = BufReader::new(run.supervisor.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "up\n");
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            println!("command: {line}");
        }
    });
    run
}

impl Run {
    fn report(&mut self) -> String {
        let mut line = String::new();
        self.reports.read_line(&mut line).unwrap();
        line.trim_end().to_owned()
    }

    fn tell(&mut self, line: &str) {
        self.control
            .write_all(format!("{line}\n").as_bytes())
            .unwrap();
    }

    fn exit_code(mut self) -> Option<i32> {
        self.supervisor.wait().unwrap().code()
    }
}

#[test]
fn the_agent_says_stop_and_the_command_leaves_on_sigterm() {
    let mut run = start(2_000, false);
    run.tell("stop");
    // `trap ... exit 0`: the command left by itself on SIGTERM.
    assert_eq!(run.report(), "exited 0");
    assert_eq!(run.exit_code(), Some(0));
}

#[test]
fn the_agent_dies_and_its_command_is_stopped() {
    let mut run = start(2_000, false);
    // What SIGKILL of the agent does to the socket: the agent's end closes.
    run.control.shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(run.report(), "exited 0");
    assert_eq!(run.exit_code(), Some(0));
}

#[test]
fn the_lease_deadline_passes_without_a_renewal_and_the_command_is_stopped() {
    let mut run = start(2_000, false);
    let sent = Instant::now();
    let deadline = sent + Duration::from_millis(300);
    run.tell(&format!("until {}", to_monotonic(deadline)));
    // `lapsed`, not `exited`: the agent must not take this stop for the
    // command's own exit (under on_exit = "exit" it would leave with it).
    assert_eq!(run.report(), "lapsed 0");
    // Not before the deadline: the supervisor stopped it for the deadline, not
    // for anything else.
    assert!(Instant::now() >= deadline);
    assert_eq!(run.exit_code(), Some(0));
}

#[test]
fn a_renewed_deadline_keeps_the_command_running() {
    let mut run = start(2_000, false);
    let first = Instant::now() + Duration::from_millis(200);
    run.tell(&format!("until {}", to_monotonic(first)));
    run.tell(&format!(
        "until {}",
        to_monotonic(Instant::now() + Duration::from_secs(3600))
    ));
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(
        run.supervisor.try_wait().unwrap(),
        None,
        "stopped at the first deadline although it was renewed"
    );
    run.tell("until none");
    run.tell("stop");
    assert_eq!(run.report(), "exited 0");
}

#[test]
fn a_command_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let mut run = start(300, true);
    let asked = Instant::now();
    run.tell("stop");
    // 128 + SIGKILL.
    assert_eq!(run.report(), "exited 137");
    assert!(
        asked.elapsed() >= Duration::from_millis(300),
        "killed before the grace period"
    );
    assert_eq!(run.exit_code(), Some(137));
}

#[test]
fn a_sigkill_of_the_supervisor_itself_takes_the_command_down() {
    // What `kill -9 -PGID` of the agent's group does: the supervisor dies
    // without a word. The kernel's parent-death signal ends the command.
    let (ours, theirs) = UnixStream::pair().unwrap();
    let mut supervisor = Command::new(env!("CARGO_BIN_EXE_bully-agent"))
        .args(["supervise", "--grace-ms", "2000", "--", "sh", "-c"])
        .arg(script(true))
        .stdin(Stdio::from(OwnedFd::from(theirs)))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the command says "up" it runs, its death signal armed.
    let mut out = BufReader::new(supervisor.stdout.take().unwrap());
    let mut up = String::new();
    out.read_line(&mut up).unwrap();
    assert_eq!(up, "up\n");
    let mut reports = BufReader::new(ours);
    let mut line = String::new();
    reports.read_line(&mut line).unwrap();
    let pid: u32 = line
        .trim_end()
        .strip_prefix("pid ")
        .unwrap()
        .parse()
        .unwrap();
    let proc_entry = format!("/proc/{pid}");
    assert!(Path::new(&proc_entry).exists());

    supervisor.kill().unwrap();
    supervisor.wait().unwrap();
    let give_up = Instant::now() + Duration::from_secs(10);
    while Path::new(&proc_entry).exists() && !is_zombie(&proc_entry) {
        assert!(
            Instant::now() < give_up,
            "the command outlived its supervisor"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn is_zombie(proc_entry: &str) -> bool {
    std::fs::read_to_string(format!("{proc_entry}/stat"))
        .map(|stat| {
            stat.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(true)
}

/// Found by the nemesis: an agent paused in its restart delay, past its lease,
/// started the command again under its expired token when it resumed. The
/// agent now checks its permission right before the start, and hands the
/// supervisor the deadline it knew (`--until`): a supervisor that starts after
/// it refuses to start the command (`expired`), so no process of it runs.
#[test]
fn a_supervisor_started_past_the_lease_deadline_does_not_start_the_command() {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let marker = format!("bully-expired-{}", std::process::id());
    let past = to_monotonic(Instant::now()).saturating_sub(1_000_000);
    let mut supervisor = Command::new(env!("CARGO_BIN_EXE_bully-agent"))
        .args(["supervise", "--grace-ms", "100", "--until"])
        .arg(past.to_string())
        .args(["--", "sh", "-c"])
        .arg(format!("echo {marker} > /dev/null; echo up; sleep 30"))
        .stdin(Stdio::from(OwnedFd::from(theirs)))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reports = BufReader::new(ours);
    let mut line = String::new();
    reports.read_line(&mut line).unwrap();
    assert_eq!(line.trim_end(), "expired");
    let status = supervisor.wait().unwrap();
    assert!(status.success(), "{status}");
    let mut out = String::new();
    std::io::Read::read_to_string(&mut supervisor.stdout.take().unwrap(), &mut out).unwrap();
    assert_eq!(out, "", "the command never ran");
}

/// The same supervisor with a deadline ahead starts the command.
#[test]
fn a_supervisor_started_before_the_lease_deadline_starts_the_command() {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let ahead = to_monotonic(Instant::now() + Duration::from_secs(60));
    let mut supervisor = Command::new(env!("CARGO_BIN_EXE_bully-agent"))
        .args(["supervise", "--grace-ms", "100", "--until"])
        .arg(ahead.to_string())
        .args(["--", "sh", "-c", "echo up"])
        .stdin(Stdio::from(OwnedFd::from(theirs)))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reports = BufReader::new(ours);
    let mut line = String::new();
    reports.read_line(&mut line).unwrap();
    assert!(line.starts_with("pid "), "{line}");
    line.clear();
    reports.read_line(&mut line).unwrap();
    assert_eq!(line.trim_end(), "exited 0");
    assert!(supervisor.wait().unwrap().success());
}
