//! The job's whole process tree is stopped, also the processes that left the
//! command's process group: one job makes all three kinds (`set -m`: a process
//! group of its own; `setsid`: a session of its own; a double fork: an orphan).
//! Each scenario runs under both mechanisms, a cgroup of the job's own and the
//! supervisor as child subreaper (`child.containment`), with one agent alone
//! in its cluster, and counts the job's processes left, by a marker in their
//! environment (`support::marked`):
//!
//! - the agent leaves on SIGINT (Ctrl-C): it tells the supervisor to stop, as
//!   it does when its leadership ends;
//! - the agent alone is killed with SIGKILL, and its whole process group;
//! - the supervisor alone is killed with SIGKILL: the agent kills what it
//!   left (in the cgroup, or adopted by the agent as child subreaper);
//! - the agent is paused past its lease: the supervisor stops the job at the
//!   deadline the agent last gave it;
//! - the command ends by itself and leaves the others behind;
//! - agent and supervisor die together: with a cgroup, the next start of the
//!   agent kills what is left before anything else; without one, the escaped
//!   processes survive (what the README says remains).
//!
//! Where no cgroup can be created (a user without a delegated cgroup, as on
//! most CI machines) the cgroup half says so and returns.

mod support;

use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use support::cluster::AGENT;
use support::lone::{LoneAgent, Running};
use support::marked::{MARK, Marked, kill_marked, new_mark, wait_marked};
use support::procs::processes;

/// How long anything may take before the test gives up: far above the grace
/// period (200 ms) and the lease, so that a timeout is a failure, not noise.
const PATIENCE: Duration = Duration::from_secs(20);

/// The job: three processes that leave the command's process group, then the
/// command waits for the test to end it (and exits with 3).
const JOB: &str = r#"# Run by bash (set -m gives a background job a process group of its own).
set -m; sleep 1001 & set +m
setsid sleep 1002 &
(sleep 1003 &)
while [ ! -e end-the-command ]; do sleep 0.05; done
exit 3
"#;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mechanism {
    Cgroup,
    Subreaper,
}

impl Mechanism {
    fn setting(self) -> &'static str {
        match self {
            Mechanism::Cgroup => "cgroup",
            Mechanism::Subreaper => "subreaper",
        }
    }

    /// Whether the test can run here; says why not.
    fn available(self) -> bool {
        if self == Mechanism::Subreaper {
            return true;
        }
        match probe_cgroup() {
            Ok(()) => true,
            Err(reason) => {
                println!("skipped: no cgroup can be created here ({reason})");
                false
            }
        }
    }
}

/// Creates a cgroup where the agent would create the job's, moves a shell
/// into it (as the agent's probe does with its own binary), and removes it.
fn probe_cgroup() -> Result<(), String> {
    use bully_agent::cgroup::{Cgroup, own_dir};
    let parent = own_dir()?;
    let name = format!("bully-agent-test-probe-{}", std::process::id());
    let cgroup = Cgroup::create(&parent, &name).map_err(|error| error.to_string())?;
    let joined = std::process::Command::new("sh")
        .args(["-c", "echo 0 > \"$0/cgroup.procs\""])
        .arg(cgroup.path())
        .status()
        .map_err(|error| error.to_string())?;
    cgroup.remove().map_err(|error| error.to_string())?;
    if joined.success() {
        Ok(())
    } else {
        Err(format!(
            "cannot move a process into {}",
            cgroup.path().display()
        ))
    }
}

/// One agent and its job, started under `mechanism`.
struct Job {
    lone: LoneAgent,
    agent: Running,
    mark: String,
}

impl Job {
    fn start(mechanism: Mechanism, name: &str, on_exit: &str) -> Job {
        let lone = LoneAgent::new(
            "",
            &format!(
                "containment = \"{}\"\non_exit = \"{on_exit}\"",
                mechanism.setting()
            ),
        );
        std::fs::write(lone.dir.path().join("job.sh"), JOB).unwrap();
        let mark = new_mark(name);
        let agent = lone.start_with("exec bash job.sh", &[(MARK, &mark)]);
        let job = Job { lone, agent, mark };
        job.wait_for_escapes(mechanism);
        job
    }

    /// Waits until the three escaped processes run, and checks that each left
    /// the command's process group the way it should.
    fn wait_for_escapes(&self, mechanism: Mechanism) -> Vec<Marked> {
        let found = wait_marked(&self.mark, PATIENCE, |found| {
            (1001..=1003).all(|n| sleeper(found, n).is_some())
        })
        .unwrap_or_else(|found| {
            panic!(
                "the job's processes never all ran: {found:#?}\n{}",
                self.lone.log()
            )
        });
        let command = found
            .iter()
            .find(|p| p.cmdline.starts_with("bash job.sh"))
            .expect("the command");
        let grouped = sleeper(&found, 1001).unwrap();
        assert_eq!(grouped.group, grouped.pid, "set -m: a group of its own");
        assert_ne!(grouped.group, command.group);
        let session = sleeper(&found, 1002).unwrap();
        assert_eq!(session.session, session.pid, "setsid: a session of its own");
        let orphan = sleeper(&found, 1003).unwrap();
        assert_ne!(orphan.parent, command.pid, "the double fork's grandchild");
        let status = self
            .lone
            .wait_for("the command running", |s| s.child.running);
        match mechanism {
            Mechanism::Cgroup => {
                assert!(
                    status.child.containment.starts_with("cgroup /"),
                    "{status:?}"
                );
            }
            Mechanism::Subreaper => {
                assert_eq!(status.child.containment, "subreaper");
                // Adopted by the supervisor, not init.
                assert_eq!(Some(orphan.parent), supervisor_of(self.agent_pid()));
            }
        }
        found
    }

    fn agent_pid(&self) -> i32 {
        i32::try_from(self.agent.0.id()).unwrap()
    }

    /// Waits for no process of the job to be left; the ones left if some are.
    fn wait_gone(&self, what: &str) {
        if let Err(left) = wait_marked(&self.mark, PATIENCE, <[Marked]>::is_empty) {
            kill_marked(&self.mark);
            panic!(
                "{what}: {} processes of the job are left: {left:#?}\n{}",
                left.len(),
                self.lone.log()
            );
        }
    }

    fn wait_exit(&mut self) -> ExitStatus {
        self.agent.0.wait().unwrap()
    }
}

/// The `sleep N` among `found`.
fn sleeper(found: &[Marked], n: u32) -> Option<&Marked> {
    let name = format!("sleep {n}");
    found.iter().find(|p| p.cmdline == name)
}

/// The supervisor the agent `agent` started.
fn supervisor_of(agent: i32) -> Option<i32> {
    let agent = u32::try_from(agent).ok()?;
    processes()
        .into_iter()
        .find(|p| p.parent == agent && p.cmdline.starts_with(&format!("{AGENT} supervise")))
        .and_then(|p| i32::try_from(p.pid).ok())
}

fn signal(pid: i32, signal: Signal) {
    kill(Pid::from_raw(pid), signal).unwrap();
}

fn ctrl_c(mechanism: Mechanism) {
    if !mechanism.available() {
        return;
    }
    let mut job = Job::start(mechanism, "ctrl-c", "restart");
    signal(job.agent_pid(), Signal::SIGINT);
    assert!(job.wait_exit().success());
    job.wait_gone("after Ctrl-C");
}

fn kill9_agent(mechanism: Mechanism) {
    if !mechanism.available() {
        return;
    }
    let mut job = Job::start(mechanism, "kill9", "restart");
    signal(job.agent_pid(), Signal::SIGKILL);
    job.wait_exit();
    job.wait_gone("after kill -9 of the agent");
}

fn kill9_group(mechanism: Mechanism) {
    if !mechanism.available() {
        return;
    }
    let mut job = Job::start(mechanism, "kill9-group", "restart");
    // The agent leads its own group (`LoneAgent` starts it so): kill -9 -PGID.
    killpg(Pid::from_raw(job.agent_pid()), Signal::SIGKILL).unwrap();
    job.wait_exit();
    job.wait_gone("after kill -9 of the agent's process group");
}

fn kill9_supervisor(mechanism: Mechanism) {
    if !mechanism.available() {
        return;
    }
    let mut job = Job::start(mechanism, "kill9-supervisor", "restart");
    let escaped: Vec<Marked> = job
        .wait_for_escapes(mechanism)
        .into_iter()
        .filter(|p| p.cmdline.starts_with("sleep 100"))
        .collect();
    signal(
        supervisor_of(job.agent_pid()).expect("the supervisor"),
        Signal::SIGKILL,
    );
    // The command dies with its supervisor; the agent kills the rest (and,
    // under on_exit = "restart", runs the job again: new processes).
    let still = wait_marked(&job.mark, PATIENCE, |found| {
        !found.iter().any(|p| escaped.contains(p))
    });
    if let Err(found) = still {
        kill_marked(&job.mark);
        panic!(
            "the supervisor's escaped processes outlived it: {escaped:#?} in {found:#?}\n{}",
            job.lone.log()
        );
    }
    signal(job.agent_pid(), Signal::SIGINT);
    assert!(job.wait_exit().success());
    job.wait_gone("after Ctrl-C");
}

fn paused_past_its_lease(mechanism: Mechanism) {
    if !mechanism.available() {
        return;
    }
    let mut job = Job::start(mechanism, "paused", "restart");
    signal(job.agent_pid(), Signal::SIGSTOP);
    job.wait_gone("while the agent is paused past its lease");
    // Let go, it leads again and runs the job again; Ctrl-C ends it all.
    signal(job.agent_pid(), Signal::SIGCONT);
    job.wait_for_escapes(mechanism);
    signal(job.agent_pid(), Signal::SIGINT);
    assert!(job.wait_exit().success());
    job.wait_gone("after the pause and Ctrl-C");
}

/// Under `on_exit = "exit"` the supervisor's stop at the lease deadline is
/// not the command's own exit: the agent, let go, runs the job again rather
/// than leave with the SIGTERM's status (143).
fn paused_past_its_lease_then_the_command_ends(mechanism: Mechanism) {
    if !mechanism.available() {
        return;
    }
    let mut job = Job::start(mechanism, "paused-exit", "exit");
    signal(job.agent_pid(), Signal::SIGSTOP);
    job.wait_gone("while the agent is paused past its lease");
    signal(job.agent_pid(), Signal::SIGCONT);
    job.wait_for_escapes(mechanism);
    std::fs::write(job.lone.dir.path().join("end-the-command"), b"").unwrap();
    assert_eq!(
        job.wait_exit().code(),
        Some(3),
        "on_exit = exit: the status of the command's own exit, not of the lease's stop\n{}",
        job.lone.log()
    );
    job.wait_gone("after the command ended by itself");
}

fn the_command_ends_by_itself(mechanism: Mechanism) {
    if !mechanism.available() {
        return;
    }
    let mut job = Job::start(mechanism, "ends", "exit");
    std::fs::write(job.lone.dir.path().join("end-the-command"), b"").unwrap();
    assert_eq!(
        job.wait_exit().code(),
        Some(3),
        "on_exit = exit: its status"
    );
    job.wait_gone("after the command ended by itself");
}

/// SIGKILL to the agent and its supervisor at once; returns the processes of
/// the job that survive them.
fn kill_agent_and_supervisor(job: &mut Job) -> Vec<Marked> {
    let supervisor = supervisor_of(job.agent_pid()).expect("the supervisor");
    // Frozen first: between the two SIGKILLs it must not see the agent gone
    // and stop the job.
    signal(supervisor, Signal::SIGSTOP);
    signal(job.agent_pid(), Signal::SIGKILL);
    signal(supervisor, Signal::SIGKILL);
    job.wait_exit();
    // The command itself dies with its supervisor (its parent-death signal).
    wait_marked(&job.mark, PATIENCE, |found| {
        !found.iter().any(|p| p.cmdline.starts_with("bash job.sh"))
    })
    .unwrap_or_else(|found| panic!("the command outlived its supervisor: {found:#?}"))
}

#[test]
fn ctrl_c_stops_the_whole_tree_in_a_cgroup() {
    ctrl_c(Mechanism::Cgroup);
}

#[test]
fn ctrl_c_stops_the_whole_tree_under_the_subreaper() {
    ctrl_c(Mechanism::Subreaper);
}

#[test]
fn kill_9_of_the_agent_stops_the_whole_tree_in_a_cgroup() {
    kill9_agent(Mechanism::Cgroup);
}

#[test]
fn kill_9_of_the_agent_stops_the_whole_tree_under_the_subreaper() {
    kill9_agent(Mechanism::Subreaper);
}

#[test]
fn kill_9_of_the_agents_group_stops_the_whole_tree_in_a_cgroup() {
    kill9_group(Mechanism::Cgroup);
}

#[test]
fn kill_9_of_the_agents_group_stops_the_whole_tree_under_the_subreaper() {
    kill9_group(Mechanism::Subreaper);
}

#[test]
fn kill_9_of_the_supervisor_stops_the_whole_tree_in_a_cgroup() {
    kill9_supervisor(Mechanism::Cgroup);
}

#[test]
fn kill_9_of_the_supervisor_stops_the_whole_tree_under_the_subreaper() {
    kill9_supervisor(Mechanism::Subreaper);
}

#[test]
fn a_pause_past_the_lease_stops_the_whole_tree_in_a_cgroup() {
    paused_past_its_lease(Mechanism::Cgroup);
}

#[test]
fn a_pause_past_the_lease_stops_the_whole_tree_under_the_subreaper() {
    paused_past_its_lease(Mechanism::Subreaper);
}

#[test]
fn a_pause_past_the_lease_is_not_the_commands_exit_in_a_cgroup() {
    paused_past_its_lease_then_the_command_ends(Mechanism::Cgroup);
}

#[test]
fn a_pause_past_the_lease_is_not_the_commands_exit_under_the_subreaper() {
    paused_past_its_lease_then_the_command_ends(Mechanism::Subreaper);
}

#[test]
fn what_the_command_leaves_is_killed_in_a_cgroup() {
    the_command_ends_by_itself(Mechanism::Cgroup);
}

#[test]
fn what_the_command_leaves_is_killed_under_the_subreaper() {
    the_command_ends_by_itself(Mechanism::Subreaper);
}

#[test]
fn in_a_cgroup_what_outlives_agent_and_supervisor_is_killed_at_the_next_start() {
    if !Mechanism::Cgroup.available() {
        return;
    }
    let mut job = Job::start(Mechanism::Cgroup, "leftovers", "restart");
    let survivors = kill_agent_and_supervisor(&mut job);
    // Nobody is left to stop them: they run on, in the cgroup the agent
    // recorded in its data directory.
    assert!(
        (1001..=1003).all(|n| sleeper(&survivors, n).is_some()),
        "{survivors:#?}"
    );
    let record = job.lone.dir.path().join("data/job-cgroup");
    assert!(record.exists(), "the agent recorded no cgroup");

    // The agent comes back on the same data directory: before anything else
    // it kills what the old job left.
    let old = std::mem::replace(&mut job.mark, new_mark("leftovers-again"));
    job.agent = job
        .lone
        .start_with("exec bash job.sh", &[(MARK, &job.mark)]);
    if let Err(left) = wait_marked(&old, PATIENCE, <[Marked]>::is_empty) {
        kill_marked(&old);
        panic!("the next start left the old job running: {left:#?}");
    }
    // It says so (once they are gone: the test may read the log first).
    let give_up = std::time::Instant::now() + PATIENCE;
    let killed = loop {
        let log = job.lone.log();
        let killed = log
            .split("killed what a previous run's job left")
            .nth(1)
            .and_then(|rest| rest.split("processes=").nth(1))
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|digits| digits.parse::<usize>().ok());
        if let Some(killed) = killed {
            break killed;
        }
        assert!(std::time::Instant::now() < give_up, "{log}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(killed >= 3, "{killed} killed");
    job.wait_for_escapes(Mechanism::Cgroup);
    signal(job.agent_pid(), Signal::SIGINT);
    assert!(job.wait_exit().success());
    job.wait_gone("after Ctrl-C of the restarted agent");
    assert!(!record.exists(), "the record outlived a clean exit");
}

#[test]
fn under_the_subreaper_what_outlives_agent_and_supervisor_is_what_left_the_commands_group() {
    // What the README says remains without a cgroup, checked: the command
    // dies with its supervisor, the three that left its process group live on.
    let mut job = Job::start(Mechanism::Subreaper, "subreaper-leftovers", "restart");
    kill_agent_and_supervisor(&mut job);
    // The command's last `sleep 0.05` ends by itself.
    let left = wait_marked(&job.mark, PATIENCE, |found| {
        found.len() == 3 && (1001..=1003).all(|n| sleeper(found, n).is_some())
    });
    kill_marked(&job.mark);
    let left = left.unwrap_or_else(|found| panic!("{found:#?}"));
    println!("left without a cgroup: {left:?}");
}
