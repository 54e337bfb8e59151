//! One leadership's runs of the command: started when the node leads, told
//! every lease deadline, stopped when the leadership ends or its margin is
//! reached, run again after an exit as `on_exit` says.

use std::ffi::OsString;
use std::time::Duration;

use bully_tokio::{CancellationToken, Permit};

use crate::backoff::{Failures, Verdict};
use crate::child::{Report, Supervised};
use crate::config::{HealthPolicy, OnExit};
use crate::containment::Containment;
use crate::token::format_token;
use crate::view::View;

/// How one leadership ended for the command.
pub(super) enum Outcome {
    /// The leadership ended (or the node stepped down): wait for the next.
    Ended,
    /// SIGTERM or SIGINT.
    Shutdown,
    /// The command exited under `on_exit = "exit"`.
    Exit(i32),
    /// The agent cannot go on.
    Fatal(String),
}

/// How one run of the command ended.
enum Stop {
    LeadershipEnded,
    /// The supervisor stopped the command at the lease deadline, before the
    /// agent renewed it: not the command's own exit (no `on_exit`, no failure).
    LeaseLapsed,
    Shutdown,
    Exited(i32),
    /// The job's health check failed `health.failures` times in a row.
    Unhealthy(String),
}

/// What one leadership's runs of the command need.
pub(super) struct Run<'a> {
    pub(super) view: &'a View,
    pub(super) cluster: bully_core::wire::ClusterId,
    pub(super) command: &'a [OsString],
    pub(super) containment: &'a Containment,
    pub(super) health: Option<&'a HealthPolicy>,
}

impl Run<'_> {
    /// Runs the command for as long as `leadership` lasts, again after each
    /// exit under `on_exit = "restart"`, until `failures` says to step aside.
    pub(super) async fn lead(
        &self,
        leadership: &Permit,
        shutdown: &CancellationToken,
        failures: &mut Failures,
    ) -> Outcome {
        let view = self.view;
        let token = leadership.token();
        // Set once a restart delay has passed: the next run started is a
        // restart. Counted with its start, so that the status never shows a
        // restart whose run has not started (`starts` > `restarts` always).
        let mut restarting = false;
        loop {
            // A reload's settings apply from the next run on.
            let policy = view.policy();
            failures.set_policy(policy.failures);
            let expired = leadership
                .deadline()
                .is_some_and(|deadline| deadline <= std::time::Instant::now());
            if !leadership.is_current() || expired {
                // The permission ran out (the agent was paused, say, in its
                // restart delay, and the driver has not ended the leadership
                // yet): the command must not start under it again.
                tracing::info!("the leadership's lease ran out before the command could start");
                leadership.ended().await;
                return Outcome::Ended;
            }
            tracing::info!(token = %format_token(token), "leading: starting the command");
            let started = std::time::Instant::now();
            let cgroup = match self.containment.open_for_run() {
                Ok(cgroup) => cgroup,
                Err(error) => return Outcome::Fatal(error),
            };
            let mut child = match Supervised::spawn(
                self.command,
                token,
                self.cluster,
                policy.grace,
                cgroup.as_ref(),
                leadership.deadline(),
            ) {
                Ok(child) => child,
                Err(error) => {
                    self.containment.after_run(cgroup).await;
                    return Outcome::Fatal(format!(
                        "cannot start the command's supervisor: {error}"
                    ));
                }
            };
            view.update_child(|status| {
                status.running = true;
                status.pid = None;
                status.starts += 1;
                if restarting {
                    status.restarts += 1;
                }
            });
            restarting = false;
            let health = self.health.map(|policy| (policy, self.cluster.0));
            let (stop, code) = watch(&mut child, view, leadership, shutdown, health).await;
            self.containment.after_run(cgroup).await;
            // The whole job has stopped: a resignation or vote the node keeps
            // back while it may still be stopping (its resign delay) can go now.
            let _ = view.handle.work_stopped().await;
            let verdict = failures.run_ended(started.elapsed(), matches!(stop, Stop::Exited(_)));
            view.update_child(|status| {
                status.running = false;
                status.pid = None;
                status.failures_in_a_row = failures.in_a_row();
            });
            match stop {
                Stop::LeadershipEnded => {
                    tracing::info!(code, "the leadership ended; the command stopped");
                    return Outcome::Ended;
                }
                Stop::LeaseLapsed => {
                    // The driver ends the leadership whose lease ran out, and
                    // the check at the top waits for that; a renewal that came
                    // just too late for the supervisor starts the command again.
                    tracing::warn!(
                        code,
                        "the lease ran out before the agent renewed it (paused or starved): \
                         the supervisor stopped the command"
                    );
                    continue;
                }
                Stop::Shutdown => return Outcome::Shutdown,
                Stop::Unhealthy(error) => {
                    let backoff = self.health.map_or(Duration::ZERO, |policy| policy.backoff);
                    tracing::warn!(
                        %error,
                        backoff_ms = u64::try_from(backoff.as_millis()).unwrap_or(u64::MAX),
                        "the job's health check kept failing: the job is stopped; stepping \
                         aside so that another member runs it, until the back-off ends"
                    );
                    view.update_health(|status| status.stepped_aside += 1);
                    self.abstain(backoff).await;
                    return Outcome::Ended;
                }
                Stop::Exited(_) => tracing::info!(code, "the command exited"),
            }
            if policy.on_exit == OnExit::Exit {
                return Outcome::Exit(code);
            }
            match verdict {
                Verdict::StepAside(backoff) => {
                    self.step_aside(backoff).await;
                    return Outcome::Ended;
                }
                Verdict::Failed(in_a_row) => tracing::warn!(
                    in_a_row,
                    limit = policy.failures.limit,
                    "the command failed: it ended within child.min_runtime_ms of its start"
                ),
                Verdict::Fine => {}
            }
            match policy.on_exit {
                OnExit::Exit => return Outcome::Exit(code),
                OnExit::StepDown => {
                    tracing::info!("stepping down so that another member runs the command");
                    let _ = view.handle.step_down().await;
                    let _ = view.handle.work_stopped().await;
                    return Outcome::Ended;
                }
                OnExit::Restart => {
                    tokio::select! {
                        biased;
                        () = shutdown.cancelled() => return Outcome::Shutdown,
                        () = leadership.ended() => return Outcome::Ended,
                        () = tokio::time::sleep(policy.restart_delay) => {}
                    }
                    restarting = true;
                }
            }
        }
    }

    /// The command failed `child.failure_limit` times in a row: this member
    /// steps down and stays out of the elections for `backoff`, so that
    /// another member runs it.
    async fn step_aside(&self, backoff: Duration) {
        tracing::warn!(
            failures = self.view.policy().failures.limit,
            backoff_ms = u64::try_from(backoff.as_millis()).unwrap_or(u64::MAX),
            "the command failed every time in a row: stepping aside so that another member \
             runs it, until the back-off ends"
        );
        self.abstain(backoff).await;
    }

    /// Steps down and stays out for `backoff`, the job having stopped: the
    /// resignation goes at once (the job needs no resign delay to stop), and
    /// the next highest member elects without waiting for a timeout.
    async fn abstain(&self, backoff: Duration) {
        self.view.note_backoff(std::time::Instant::now() + backoff);
        if let Err(error) = self.view.handle.abstain_for(backoff).await {
            tracing::warn!(%error, "the node did not take the back-off");
        }
        let _ = self.view.handle.work_stopped().await;
    }
}

/// Serves one run of the command until it ends or must stop; how it ended,
/// and its status.
async fn watch(
    child: &mut Supervised,
    view: &View,
    leadership: &Permit,
    shutdown: &CancellationToken,
    health: Option<(&HealthPolicy, u64)>,
) -> (Stop, i32) {
    child.set_deadline(leadership.deadline()).await;
    let token = leadership.token();
    let unhealthy = async {
        match health {
            Some((policy, cluster)) => {
                crate::health::until_unhealthy(policy, view, token, cluster).await
            }
            None => std::future::pending().await,
        }
    };
    tokio::pin!(unhealthy);
    let mut deadlines = leadership.deadlines();
    let stop = loop {
        tokio::select! {
            biased;
            () = leadership.ended() => break Stop::LeadershipEnded,
            () = shutdown.cancelled() => break Stop::Shutdown,
            error = &mut unhealthy => break Stop::Unhealthy(error),
            changed = deadlines.changed() => {
                if changed.is_ok() {
                    let deadline = *deadlines.borrow_and_update();
                    child.set_deadline(deadline).await;
                } else {
                    // The leadership is over: `ended` fires on the next turn.
                    leadership.ended().await;
                }
            }
            report = child.next_report() => match report {
                Report::Started(pid) => {
                    tracing::debug!(pid, "the command runs");
                    view.update_child(|status| status.pid = Some(pid));
                }
                Report::Exited(code) => break Stop::Exited(code),
                Report::Lapsed(code) => {
                    child.reap().await;
                    return (Stop::LeaseLapsed, code);
                }
                Report::Gone => break Stop::Exited(child.exited().await),
                // Not started: the lease had run out. The leadership ends next.
                Report::Expired => {
                    child.reap().await;
                    return (Stop::LeadershipEnded, 0);
                }
            },
        }
    };
    match stop {
        Stop::LeadershipEnded | Stop::LeaseLapsed | Stop::Shutdown | Stop::Unhealthy(_) => {
            tracing::info!("stopping the command");
            (stop, child.stop().await)
        }
        Stop::Exited(code) => {
            child.exited().await;
            (stop, code)
        }
    }
}
