//! Running one nemesis schedule against a cluster of real agents on 127.0.0.1
//! (every link through the relay), then judging it ([`super::verdict`]).
//!
//! The run boots the cluster, each member's command with the stop time the
//! schedule drew, and waits for the first command. Then, step by step, it
//! does what the schedule says, notes the window that step opens (its majority
//! side and the longest time without a command on that side it allows), waits
//! until a command of that side writes (when there is a side), and holds for
//! the drawn time. At the end every fault is healed; the members must agree on
//! the highest member as their leader, with its command running; every agent
//! is sent SIGTERM and must leave with status 0, and nothing the cluster
//! started may be left on the machine. Last, the child log is judged.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

use super::super::child_log::ChildLog;
use super::super::cluster::{
    AGENT, Cluster, Options, Ports, Timing, logged_failover_bound, now_millis,
};
use super::super::procs::{Frozen, freeze_tree, processes, thaw_groups};
use super::schedule::{Action, JobSignal, Model, Resume, Schedule};
use super::verdict::{Finding, Limits, Measured, Pause, Window, excerpt, judge};

/// What the run allows, on top of the configuration's bounds, for the
/// operating system: an agent re-executes itself as the supervisor, which
/// starts `bash`, before a command writes its first line; a resumed or
/// starved process waits for a CPU. On a loaded two-core machine each can
/// take a while, and none of it is the protocol's doing. Generous on purpose:
/// a failure must mean a broken promise, not a slow machine.
pub(crate) const PROCESS_ALLOWANCE: Duration = Duration::from_millis(1_000);

/// How long a step may go beyond its allowed time before the run gives up
/// waiting for a command on the majority side (the verdict then says by how
/// much the allowance was missed).
const PATIENCE_BEYOND: Duration = Duration::from_secs(5);

/// How long the boot may take: seven debug-build agents starting at once on
/// a loaded machine, and the first election.
const BOOT_PATIENCE: Duration = Duration::from_secs(30);

/// How long an agent may take to leave on SIGTERM or SIGINT, beyond its
/// command's grace period.
const LEAVE_PATIENCE: Duration = Duration::from_secs(10);

/// How long stopping a whole tree may take (the commands' lines stamped this
/// long after the pause began are still allowed).
const FREEZE_PATIENCE: Duration = Duration::from_millis(500);

/// One run's result.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// The schedule it ran.
    pub(crate) schedule: Schedule,
    /// What broke (empty: nothing), each with its evidence.
    pub(crate) failures: Vec<String>,
    /// The timeline: each step, when it ran, and what its window measured.
    pub(crate) timeline: String,
    /// On a failure: the log lines around it and the agents' logs.
    pub(crate) details: String,
    /// Commands started (processes).
    pub(crate) commands: usize,
    /// Distinct tokens.
    pub(crate) tokens: usize,
    /// The longest time without a command on the majority side in any
    /// window, and what that window allowed (ms).
    pub(crate) worst_gap: (u64, u64),
    /// Wall time of the run.
    pub(crate) elapsed: Duration,
}

/// Runs `schedule` with `timing`; see the module docs.
pub(crate) fn run(schedule: &Schedule, timing: Timing) -> Outcome {
    let started = Instant::now();
    let mut runner = Runner::new(schedule, timing);
    if runner.boot() {
        for (index, step) in schedule.steps.iter().enumerate() {
            if !runner.step(index + 1, &step.action) {
                break;
            }
            std::thread::sleep(Duration::from_millis(step.hold_ms));
        }
    }
    runner.finish(started)
}

struct Runner<'a> {
    schedule: &'a Schedule,
    timing: Timing,
    cluster: Cluster,
    model: Model,
    windows: Vec<Window>,
    pauses: Vec<Pause>,
    /// Trees paused now: member -> what was stopped, and its entry in `pauses`.
    frozen: BTreeMap<u64, (Frozen, usize)>,
    /// The timeline, one line per event.
    timeline: Vec<(u64, String)>,
    failures: Vec<String>,
    /// The first command's start (stamps are shown relative to it).
    t0: u64,
}

impl<'a> Runner<'a> {
    fn new(schedule: &'a Schedule, timing: Timing) -> Runner<'a> {
        let mut cluster = Cluster::configure(Options {
            size: schedule.size,
            timing,
            relay: schedule.size > 1,
            other_secret: None,
            missing_command: None,
            // The agent's default, written out: a schedule kills a command from
            // outside fewer times than this (`schedule::MAX_JOBS_KILLED`), so
            // no member backs off.
            child_settings: "failure_limit = 3",
            ports: Ports::Reserved,
        });
        for (id, &stop_ms) in (1..).zip(&schedule.stop_ms) {
            cluster.set_job_stop_ms(id, stop_ms);
        }
        Runner {
            schedule,
            timing,
            cluster,
            model: Model::new(schedule.size),
            windows: Vec::new(),
            pauses: Vec::new(),
            frozen: BTreeMap::new(),
            timeline: Vec::new(),
            failures: Vec::new(),
            t0: now_millis(),
        }
    }

    fn note(&mut self, text: String) {
        self.timeline.push((now_millis(), text));
    }

    fn log(&mut self) -> Option<ChildLog> {
        match ChildLog::read(self.cluster.child_log_path()) {
            Ok(log) => Some(log),
            Err(error) => {
                self.failures.push(error.to_string());
                None
            }
        }
    }

    /// Starts every agent and waits for the first command and an agreement.
    fn boot(&mut self) -> bool {
        let booted = now_millis();
        for id in self.cluster.ids() {
            self.cluster.spawn(id);
        }
        let deadline = Instant::now() + BOOT_PATIENCE;
        let first = loop {
            let Some(log) = self.log() else { return false };
            if let Some(line) = log.first_start_above(None) {
                break line;
            }
            if Instant::now() >= deadline {
                self.failures.push(format!(
                    "no command started within {BOOT_PATIENCE:?} of the boot"
                ));
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        self.t0 = first.millis;
        self.note(format!(
            "boot: the first command, ({}, {}), started {} ms after the agents",
            first.token.term.0,
            first.token.leader.0,
            first.millis.saturating_sub(booted)
        ));
        let ids = self.cluster.ids();
        let deadline = Instant::now() + BOOT_PATIENCE;
        while self.cluster.agreed_leader(&ids).is_none() {
            if Instant::now() >= deadline {
                self.failures.push(format!(
                    "the members did not agree on a leader within {BOOT_PATIENCE:?} of the boot"
                ));
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // The bound the run allows for is the one the agents state.
        let bound = self.timing.failover_bound(self.size()).as_millis();
        for id in ids {
            let logged = logged_failover_bound(&self.cluster.node_log(id));
            if logged != Some(bound) {
                self.failures.push(format!(
                    "member {id} logs the failover bound {logged:?} ms, the test computes {bound} ms"
                ));
            }
        }
        let side = self.model.side();
        let allowed_ms = self.allowed_ms(None, true, &side);
        self.windows.push(Window {
            step: 0,
            from: first.millis,
            to: first.millis,
            side,
            allowed_ms,
        });
        self.failures.is_empty()
    }

    fn size(&self) -> usize {
        usize::try_from(self.schedule.size).expect("a small cluster")
    }

    /// The longest time without a command on `side` that a window opened by
    /// `action` allows: when the step struck a settled cluster, the failover
    /// bound the configuration computes and a staggered detection for every
    /// member above the side's highest but one; when it struck a cluster still
    /// changing leaders or without a quorum, the settle bound (the bound for
    /// any state faults leave: a claim under way, promises that refuse a new
    /// one, a member backing off after failed probes). Plus what the step
    /// itself takes, and [`PROCESS_ALLOWANCE`].
    fn allowed_ms(&self, action: Option<&Action>, settled: bool, side: &BTreeSet<u64>) -> u64 {
        let config = self.timing.core_config();
        let size = self.size();
        let base = if !settled {
            config.settle_bound(size)
        } else {
            let above = side.last().map_or(0, |&top| self.schedule.size - top);
            let stagger = u32::try_from(above.saturating_sub(1)).expect("few members");
            // Detection is staggered by one step (an answer timeout and a message
            // time) per member above the one that notices.
            let step = config.answer_timeout() + config.max_message_delay();
            config.failover_bound(size) + step * stagger
        };
        let grace = Duration::from_millis(self.timing.grace_ms);
        let step = match action {
            // The leader stops its command before it resigns.
            Some(Action::Interrupt(_)) => grace,
            Some(&Action::RestartHighest { down_ms, .. }) => grace + Duration::from_millis(down_ms),
            // Down, then a follower lease without a vote from the member (a
            // highest member, or one whose vote the quorum needs, leads or
            // lets lead only after it), then perhaps a take-back from the
            // member that led meanwhile, whose command stops first.
            Some(&Action::LoseData { down_ms, .. }) => {
                grace + Duration::from_millis(down_ms) + config.follower_lease()
            }
            // The command finishes (its stop time), then the restart delay.
            Some(Action::KillJob(_)) => grace + Duration::from_millis(self.timing.restart_delay_ms),
            // The leader stops its command before it resigns.
            Some(Action::HandOver { .. }) => grace,
            _ => Duration::ZERO,
        };
        u64::try_from((base + step + PROCESS_ALLOWANCE).as_millis()).expect("ms fit")
    }

    /// Does step `number`; `false` when the run cannot go on.
    fn step(&mut self, number: usize, action: &Action) -> bool {
        // Settled: every member of the majority side names one leader, which
        // leads with its command running (a step often comes while leaders
        // still change, which is where the safety checks are hardest).
        let side: Vec<u64> = self.model.side().into_iter().collect();
        let settled = if side.is_empty() {
            None
        } else {
            self.cluster.agreed_leader(&side)
        };
        let at = now_millis();
        if let Some(window) = self.windows.last_mut() {
            window.to = at;
        }
        self.note(format!(
            "step {number}: {action} ({})",
            settled.map_or_else(
                || "the cluster had not settled: the settle bound applies".to_owned(),
                |leader| format!("the cluster had settled on {leader}")
            )
        ));
        if !self.act(action) {
            return false;
        }
        self.model.apply(action);
        let side = self.model.side();
        let allowed_ms = self.allowed_ms(Some(action), settled.is_some(), &side);
        self.windows.push(Window {
            step: number,
            from: at,
            to: at,
            side: side.clone(),
            allowed_ms,
        });
        if side.is_empty() {
            return true;
        }
        let deadline = Instant::now() + Duration::from_millis(allowed_ms) + PATIENCE_BEYOND;
        loop {
            let Some(log) = self.log() else { return false };
            if let Some(line) = log
                .lines()
                .iter()
                .find(|l| l.millis >= at && side.contains(&l.token.leader.0))
            {
                let after = line.millis - at;
                self.note(format!(
                    "  a command of the majority side {side:?} writes {after} ms after the step \
                     (allowed {allowed_ms} ms for a gap)"
                ));
                return true;
            }
            if Instant::now() >= deadline {
                self.failures.push(format!(
                    "step {number}: no command of the majority side {side:?} wrote within \
                     {} ms of the step (allowed {allowed_ms} ms)",
                    now_millis() - at
                ));
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `bully-agent handover` on `id`, as an operator types it. Its answer is
    /// noted, not judged: the member the model expects to lead may not lead
    /// yet (a step often comes while leaders still change), and then the
    /// agent refuses. What it did is judged as every step is: one command at
    /// a time, and the majority side's command soon.
    fn hand_over(&mut self, id: u64, abstain_ms: u64) {
        let output = std::process::Command::new(AGENT)
            .arg("handover")
            .arg("--config")
            .arg(self.cluster.config_path(id))
            .arg("--for-ms")
            .arg(abstain_ms.to_string())
            .output()
            .expect("run bully-agent handover");
        let said = String::from_utf8_lossy(if output.status.success() {
            &output.stdout
        } else {
            &output.stderr
        })
        .trim()
        .to_owned();
        self.note(format!("  handover on {id}: {} ({said})", output.status));
    }

    /// Waits until `id`'s agent answers on its endpoint, which it serves only
    /// once its SIGTERM and SIGINT handlers are in place: a signal in the first
    /// milliseconds of an agent's life kills it by the signal's default action
    /// (status 143 or 130): a matter of the agent's start-up, which is not what
    /// the nemesis tests. `false`, with a failure, if it never answers.
    fn wait_up(&mut self, id: u64) -> bool {
        let deadline = Instant::now() + BOOT_PATIENCE;
        while self.cluster.status(id).is_none() {
            if Instant::now() >= deadline || self.cluster.wait_exit(id, Duration::ZERO).is_some() {
                self.failures.push(format!(
                    "agent {id} did not answer on its endpoint within {BOOT_PATIENCE:?} of its start"
                ));
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }

    /// Does `action` to the cluster; `false` when the run cannot go on.
    fn act(&mut self, action: &Action) -> bool {
        let leave = Duration::from_millis(self.timing.grace_ms) + LEAVE_PATIENCE;
        match *action {
            Action::Interrupt(id) | Action::RestartHighest { id, .. } if !self.wait_up(id) => {
                return false;
            }
            _ => {}
        }
        match *action {
            Action::Kill9(id) => self.cluster.kill9(id),
            Action::Interrupt(id) => {
                let status = self.cluster.signal_and_wait(id, Signal::SIGINT, leave);
                if !status.success() {
                    self.failures
                        .push(format!("agent {id} left with {status} on SIGINT"));
                }
            }
            Action::Start { id, stop_ms } => {
                self.cluster.set_job_stop_ms(id, stop_ms);
                self.cluster.spawn(id);
            }
            Action::RestartHighest {
                id,
                down_ms,
                stop_ms,
            } => {
                let status = self.cluster.signal_and_wait(id, Signal::SIGTERM, leave);
                if !status.success() {
                    self.failures
                        .push(format!("agent {id} left with {status} on SIGTERM"));
                }
                std::thread::sleep(Duration::from_millis(down_ms));
                self.cluster.set_job_stop_ms(id, stop_ms);
                self.cluster.spawn(id);
            }
            Action::LoseData {
                id,
                down_ms,
                stop_ms,
            } => {
                self.cluster.crash(id);
                self.cluster.lose_data_dir(id);
                std::thread::sleep(Duration::from_millis(down_ms));
                // No `init`: the member cannot tell this start from a first
                // boot, and must not vote at once.
                self.cluster.set_job_stop_ms(id, stop_ms);
                self.cluster.spawn(id);
            }
            Action::PauseAgent(id) => self.cluster.stop_agent(id),
            Action::ResumeAgent(id) => self.cluster.continue_agent(id),
            Action::PauseTree(id) => {
                let paused_at = now_millis();
                let frozen = freeze_tree(self.cluster.pid(id), FREEZE_PATIENCE);
                self.note(format!(
                    "  stopped {} process(es) in {} group(s): pids {:?}",
                    frozen.pids.len(),
                    frozen.groups.len(),
                    frozen.pids
                ));
                self.pauses.push(Pause {
                    member: id,
                    pids: frozen.pids.clone(),
                    paused_at,
                    agent_resumed_at: None,
                    job_resumed_at: None,
                });
                self.frozen.insert(id, (frozen, self.pauses.len() - 1));
            }
            Action::ResumeTree { id, resume } => self.resume_tree(id, resume),
            Action::KillJob(signal) => self.kill_job(signal),
            Action::HandOver { id, abstain_ms } => self.hand_over(id, abstain_ms),
            Action::Cut(cut) => {
                for (from, to) in cut.links(self.schedule.size) {
                    self.cluster.relay().cut(from, to);
                }
            }
            Action::Heal(cut) => {
                for (from, to) in cut.links(self.schedule.size) {
                    self.cluster.relay().heal(from, to);
                }
            }
        }
        self.failures.is_empty()
    }

    fn resume_tree(&mut self, id: u64, resume: Resume) {
        let Some((frozen, index)) = self.frozen.remove(&id) else {
            return;
        };
        let (agent, jobs) = frozen
            .groups
            .split_first()
            .expect("the agent's group is first");
        let agent = std::slice::from_ref(agent);
        let (first, second, gap_ms, jobs_first) = match resume {
            Resume::JobFirst { gap_ms } => (jobs, agent, gap_ms, true),
            Resume::AgentFirst { gap_ms } => (agent, jobs, gap_ms, false),
            Resume::Together => (&frozen.groups[..], &[][..], 0, true),
        };
        // Each time is read before the SIGCONT: every line the command writes
        // once it runs again is stamped after it.
        let first_at = now_millis();
        thaw_groups(first);
        std::thread::sleep(Duration::from_millis(gap_ms));
        let second_at = now_millis();
        thaw_groups(second);
        let pause = &mut self.pauses[index];
        if jobs_first {
            pause.job_resumed_at = Some(first_at);
            pause.agent_resumed_at = Some(if matches!(resume, Resume::Together) {
                first_at
            } else {
                second_at
            });
        } else {
            pause.agent_resumed_at = Some(first_at);
            pause.job_resumed_at = Some(second_at);
        }
    }

    /// Kills (or stops) the newest command still running, from outside.
    fn kill_job(&mut self, signal: JobSignal) {
        let Some(log) = self.log() else { return };
        let marker = self.cluster.child_log_path().to_string_lossy().into_owned();
        let table = processes();
        let running = log.intervals().into_iter().rev().find(|interval| {
            table
                .iter()
                .any(|p| p.pid == interval.pid && p.cmdline.contains(&marker))
        });
        let Some(interval) = running else {
            self.note("  no command runs: nothing to kill".to_owned());
            return;
        };
        let signal = match signal {
            JobSignal::Kill => Signal::SIGKILL,
            JobSignal::Term => Signal::SIGTERM,
        };
        let group = Pid::from_raw(i32::try_from(interval.pid).expect("a pid fits in i32"));
        let _ = killpg(group, signal);
        self.note(format!(
            "  {signal} to the command of ({}, {}), pid {}",
            interval.token.term.0, interval.token.leader.0, interval.pid
        ));
    }

    /// Heals what a failure left broken, checks the end state, stops every
    /// agent, and judges the log.
    fn finish(mut self, started: Instant) -> Outcome {
        let aborted = !self.failures.is_empty();
        // Whatever a failure left paused or cut (a complete schedule healed it).
        for (_, (frozen, _)) in std::mem::take(&mut self.frozen) {
            thaw_groups(&frozen.groups);
        }
        for id in self.cluster.ids() {
            if self.cluster.is_running(id) {
                let _ = kill(agent_pid(&self.cluster, id), Signal::SIGCONT);
            }
        }
        if self.schedule.size > 1 {
            self.cluster.relay().heal_all();
        }
        if !aborted {
            self.converge();
        }
        let end = now_millis();
        if let Some(window) = self.windows.last_mut() {
            window.to = end;
        }
        self.shut_down();
        self.leftovers();

        let limits = Limits {
            lease_ms: millis(self.timing.core_config().leader_lease()),
            grace_ms: self.timing.grace_ms,
            allowance_ms: millis(PROCESS_ALLOWANCE),
            freeze_ms: millis(FREEZE_PATIENCE),
        };
        let log = self.log().unwrap_or_default();
        let (findings, measured) = judge(&log, &self.windows, &self.pauses, &limits, self.t0);
        let mut failures = std::mem::take(&mut self.failures);
        failures.extend(findings.iter().map(|f| f.what.clone()));
        let timeline = self.timeline_text(&measured);
        let details = if failures.is_empty() {
            String::new()
        } else {
            self.cluster.keep_files();
            self.details(&log, &findings)
        };
        let worst_gap = self
            .windows
            .iter()
            .zip(&measured)
            .filter(|(window, _)| !window.side.is_empty())
            .map(|(window, m)| (m.longest_gap_ms, window.allowed_ms))
            .max_by_key(|&(gap, allowed)| (gap * 1_000).checked_div(allowed).unwrap_or(0))
            .unwrap_or((0, 0));
        Outcome {
            schedule: self.schedule.clone(),
            failures,
            timeline,
            details,
            commands: log.intervals().len(),
            tokens: log.tokens().len(),
            worst_gap,
            elapsed: started.elapsed(),
        }
    }

    /// With every fault healed, every member names the highest as leader and
    /// its command runs, within the settle bound and the allowance.
    fn converge(&mut self) {
        let ids = self.cluster.ids();
        let highest = self.schedule.size;
        let patience = self.timing.core_config().settle_bound(self.size()) + PROCESS_ALLOWANCE;
        let healed = Instant::now();
        let deadline = healed + patience;
        loop {
            if self.cluster.agreed_leader(&ids) == Some(highest) {
                self.note(format!(
                    "end: every member names {highest}, whose command runs, {} ms after the last step",
                    healed.elapsed().as_millis()
                ));
                return;
            }
            if Instant::now() >= deadline {
                let statuses: Vec<String> = ids
                    .iter()
                    .map(|&id| format!("{id}: {:?}", self.cluster.status(id)))
                    .collect();
                self.failures.push(format!(
                    "with every fault healed, the members did not agree on {highest} with its \
                     command running within {} ms (the settle bound and the allowance):\n{}",
                    patience.as_millis(),
                    statuses.join("\n")
                ));
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM to every agent at once; each must leave with status 0.
    fn shut_down(&mut self) {
        let running: Vec<u64> = self
            .cluster
            .ids()
            .into_iter()
            .filter(|&id| self.cluster.is_running(id))
            .collect();
        for &id in &running {
            self.wait_up(id);
        }
        let running: Vec<u64> = running
            .into_iter()
            .filter(|&id| self.cluster.is_running(id))
            .collect();
        for &id in &running {
            let _ = kill(agent_pid(&self.cluster, id), Signal::SIGTERM);
        }
        let leave = Duration::from_millis(self.timing.grace_ms) + LEAVE_PATIENCE;
        for id in running {
            match self.cluster.wait_exit(id, leave) {
                Some(status) if status.success() => {}
                Some(status) => self.failures.push(format!(
                    "agent {id} left with {status} on SIGTERM at the end"
                )),
                None => self.failures.push(format!(
                    "agent {id} did not leave within {leave:?} of SIGTERM at the end"
                )),
            }
        }
    }

    /// Nothing this cluster started is left on the machine once every agent
    /// has left: no agent, supervisor or command (their command lines name the
    /// cluster's directory).
    fn leftovers(&mut self) {
        let dir = self.cluster.dir().to_string_lossy().into_owned();
        let deadline =
            Instant::now() + Duration::from_millis(self.timing.grace_ms) + PROCESS_ALLOWANCE;
        loop {
            let left: Vec<String> = processes()
                .into_iter()
                .filter(|p| p.cmdline.contains(&dir) && p.state != 'Z')
                .map(|p| format!("pid {} ({}): {}", p.pid, p.state, p.cmdline))
                .collect();
            if left.is_empty() {
                return;
            }
            if Instant::now() >= deadline {
                self.failures.push(format!(
                    "left running after every agent left:\n  {}",
                    left.join("\n  ")
                ));
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn timeline_text(&self, measured: &[Measured]) -> String {
        let mut out = String::new();
        for (at, text) in &self.timeline {
            let _ = writeln!(
                out,
                "  {:>+7} ms  {text}",
                i128::from(*at) - i128::from(self.t0)
            );
        }
        out.push_str("  windows (ms from the first command; the longest time without a command on the majority side):\n");
        for (window, m) in self.windows.iter().zip(measured) {
            let side = if window.side.is_empty() {
                "none: no command may run once the leases end".to_owned()
            } else {
                format!(
                    "{:?}: first command line after {}, longest gap {} (allowed {})",
                    window.side,
                    m.first_ms
                        .map_or_else(|| "-".to_owned(), |ms| ms.to_string()),
                    m.longest_gap_ms,
                    window.allowed_ms
                )
            };
            let _ = writeln!(
                out,
                "    step {:>2}: {:>+7}..{:>+7}  side {side}",
                window.step,
                i128::from(window.from) - i128::from(self.t0),
                i128::from(window.to) - i128::from(self.t0)
            );
        }
        out
    }

    fn details(&self, log: &ChildLog, findings: &[Finding]) -> String {
        format!(
            "child log around the findings (line, kind, token, pid, ms from the first command):\n{}\n\
             the agents' logs (ends) and every command:\n{}\nfiles kept in {}",
            excerpt(log, findings, 6, self.t0),
            self.cluster.all_logs(),
            self.cluster.dir().display()
        )
    }
}

fn agent_pid(cluster: &Cluster, id: u64) -> Pid {
    Pid::from_raw(i32::try_from(cluster.pid(id)).expect("a pid fits in i32"))
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).expect("ms fit")
}
