//! `bully-agent run`: the node, and the command in each of its leaderships.
//!
//! Start-up does every check that can fail before it binds anything: the
//! configuration, the secret, the data directory (locked, read, and written once
//! with the new incarnation), then the HTTP port and the UDP port. Only then does
//! the node start.
//!
//! While this node leads, the command runs under a [`Supervised`] run, which is
//! told the lease deadline after every renewal. When the leadership ends, or with
//! a quorum its lease margin is reached, the command is stopped (SIGTERM, the
//! grace period, SIGKILL), so under a quorum it is gone before any other member
//! can be elected. A leader that yields to a higher member (preemption) stops
//! its command at once too, but frees its followers' promises only a resign
//! delay later (`Config::with_resign_delay`, set to the lease margin), so the
//! higher member cannot lead while the old command may still run. SIGTERM or
//! SIGINT stop the command first, then the node, which resigns so that the
//! others elect at once. SIGHUP reloads the configuration ([`crate::reload`]);
//! members' host names are kept resolved meanwhile ([`crate::resolve`]).

use std::ffi::OsString;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bully_core::wire::{Codec, Incarnation};
use bully_core::{Node, Quorum};
use bully_tokio::{Builder, CancellationToken, Leadership, UdpTransport};
use tokio::signal::unix::{SignalKind, signal};

use crate::backoff::{Failures, Verdict};
use crate::child::{Report, Supervised};
use crate::config::{OnExit, Settings};
use crate::containment::Containment;
use crate::resolve::{self, Book, Resolve, SystemResolver};
use crate::state::{DataDir, Stored};
use crate::status::ConfigStatus;
use crate::token::format_token;
use crate::view::View;

/// Exit status when the state file cannot be written while running: the node
/// stops before sending anything that depends on the state.
pub const EXIT_STATE_WRITE_FAILED: i32 = 74;

/// Runs the agent until SIGTERM or SIGINT (status 0), or until the command exits
/// under `on_exit = "exit"` (its status). Errors before the node starts leave
/// nothing bound and no command started.
pub async fn run(
    settings: Settings,
    command: Vec<OsString>,
    signals: Signals,
) -> Result<i32, String> {
    run_with(settings, command, signals, Arc::new(SystemResolver)).await
}

/// [`run`], with host names looked up by `resolver`.
pub async fn run_with(
    settings: Settings,
    command: Vec<OsString>,
    signals: Signals,
    resolver: Arc<dyn Resolve>,
) -> Result<i32, String> {
    // First: a reload sent while the agent starts must not end it.
    let hangups = crate::reload::hangups().map_err(|error| format!("SIGHUP: {error}"))?;
    if settings.config.quorum() == Quorum::None {
        tracing::warn!(
            "quorum = \"none\": a leader cut off from the others keeps running the command \
             while they elect another, so two copies can run at once; only fencing tokens \
             protect your data then"
        );
    }
    let data = DataDir::open(&settings.data_dir, settings.cluster, settings.id)
        .map_err(|error| error.to_string())?;
    // Before anything else: what a previous run's job left is killed.
    let name = format!(
        "bully-agent-{}-{}-{}",
        settings.cluster.0,
        settings.id.0,
        std::process::id()
    );
    let containment =
        Containment::prepare(&settings.containment, &settings.data_dir, &name).await?;
    crate::reload::command::write_pid_file(&settings.data_dir).map_err(|error| {
        format!(
            "{}: {error}",
            settings
                .data_dir
                .join(crate::reload::command::PID_FILE)
                .display()
        )
    })?;
    let result = serve(
        &settings,
        &command,
        &data,
        &containment,
        (signals, hangups),
        resolver,
    )
    .await;
    crate::reload::command::remove_pid_file(&settings.data_dir);
    result
}

/// The rest of the run, once the data directory is locked and the job's
/// process tree has its container.
async fn serve(
    settings: &Settings,
    command: &[OsString],
    data: &DataDir,
    containment: &Containment,
    (signals, hangups): (Signals, tokio::signal::unix::Signal),
    resolver: Arc<dyn Resolve>,
) -> Result<i32, String> {
    let stored = data.load().map_err(|error| error.to_string())?;
    // A higher incarnation than any run before, or the peers refuse this run's
    // frames as replays: the stored counter, or the clock if it is further on.
    let clock = Incarnation::from_duration_since_epoch(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default(),
    );
    let incarnation = clock.max(Incarnation(stored.incarnation.0.saturating_add(1)));
    let writer = data.writer();
    writer
        .write(Stored {
            incarnation,
            ..stored
        })
        .map_err(|error| error.to_string())?;

    let node = Node::with_durable_state(
        settings.id,
        settings.member_ids(),
        settings.config.clone(),
        stored.durable,
    )
    .map_err(|error| error.to_string())?;
    let codec = Codec::new(
        settings.cluster,
        settings.id,
        incarnation,
        settings.member_ids(),
        settings.auth().map_err(|error| error.to_string())?,
    )
    .map_err(|error| error.to_string())?;
    let listener = match settings.listen {
        Some(address) => Some(
            crate::http::bind(address)
                .await
                .map_err(|error| format!("`listen` {address}: {error}"))?,
        ),
        None => None,
    };
    let own = bind_address(settings, &resolver).await?;
    let entries = resolve::at_start(&settings.members, settings.id, &resolver, own).await;
    let peers: Vec<_> = entries
        .iter()
        .filter_map(|(&id, entry)| entry.resolved.map(|address| (id, address)))
        .collect();
    let transport = UdpTransport::bind(own, codec, peers)
        .await
        .map_err(|error| {
            format!(
                "`{}` address of node {} ({own}): {error}",
                if settings.bind.is_some() {
                    "bind"
                } else {
                    "members"
                },
                settings.id
            )
        })?;
    let own = transport.local_addr().unwrap_or(own);

    let term = Arc::new(AtomicU64::new(stored.durable.term.0));
    let persisted_term = term.clone();
    let persist = move |durable| {
        if let Err(error) = writer.write(Stored {
            durable,
            incarnation,
        }) {
            // The state is what this node promised (a term, a vote): it must not
            // send the message that depends on it. Leaving closes the
            // supervisor's socket, which stops the command.
            tracing::error!(%error, "cannot persist the node's state: stopping");
            eprintln!("error: {error}");
            std::process::exit(EXIT_STATE_WRITE_FAILED);
        }
        View::note_term(&persisted_term, durable.term.0);
    };
    let handle = Builder::new()
        .lease_margin(settings.lease_margin)
        .spawn_persisting(node, transport, persist);
    let view = Arc::new(View::new(
        handle,
        Arc::new(Book::new(entries, own)),
        term,
        settings.child,
        settings.names,
        ConfigStatus {
            file: settings.file.display().to_string(),
            signing_key: settings.keys[0].id.0,
            keys: settings.keys.iter().map(|key| key.id.0).collect(),
            ..ConfigStatus::default()
        },
    ));
    view.update_child(|child| child.containment = containment.describe());
    let mut failures = Failures::new(settings.child.failures);
    tracing::info!(
        node = %settings.id,
        cluster = settings.cluster.0,
        address = %own,
        members = settings.members.len(),
        quorum = ?settings.config.quorum(),
        failover_bound_ms = settings.config.failover_bound(settings.members.len()).as_millis(),
        "joined"
    );
    let endpoint = match listener {
        Some(listener) => {
            tracing::info!(address = ?listener.local_addr().ok(), "HTTP endpoint");
            Some(crate::http::serve(listener, view.clone())?)
        }
        None => None,
    };

    let shutdown = signals.watch();
    // Ends the reloads and the resolver before the node leaves.
    let background = CancellationToken::new();
    let helpers = [
        tokio::spawn(crate::reload::serve(
            hangups,
            settings.clone(),
            view.clone(),
            resolver.clone(),
            background.clone(),
        )),
        tokio::spawn(resolve::maintain(
            view.clone(),
            resolver,
            background.clone(),
        )),
    ];
    crate::systemd::ready(settings);
    // Set when the agent stops for an error after start-up (reported on exit).
    let fatal = Arc::new(std::sync::Mutex::new(None));
    tokio::spawn(watch_authentication(
        view.clone(),
        shutdown.clone(),
        fatal.clone(),
    ));
    let code = loop {
        let leadership = tokio::select! {
            biased;
            () = shutdown.cancelled() => break 0,
            leadership = view.handle.leadership(Duration::MAX) => match leadership {
                Ok(leadership) => leadership,
                Err(error) => {
                    tracing::error!(%error, "the node stopped");
                    break 1;
                }
            },
        };
        let run = Run {
            view: &view,
            cluster: settings.cluster,
            command,
            containment,
        };
        match run.lead(&leadership, &shutdown, &mut failures).await {
            Outcome::Ended => continue,
            Outcome::Shutdown => break 0,
            Outcome::Exit(code) => break code,
            Outcome::Fatal(error) => {
                tracing::error!("{error}");
                *fatal.lock().unwrap_or_else(|poison| poison.into_inner()) = Some(error);
                break 1;
            }
        }
    };

    crate::systemd::stopping();
    background.cancel();
    for helper in helpers {
        let _ = helper.await;
    }
    // The command has stopped; now the node leaves (a leader resigns). The
    // node keeps a resignation back for its resign delay, the time the command
    // is given to stop: it has stopped, so the others may take over at once.
    let _ = view.handle.step_down().await;
    let _ = view.handle.work_stopped().await;
    if let Some(endpoint) = endpoint {
        endpoint.abort();
        let _ = endpoint.await;
    }
    match Arc::try_unwrap(view) {
        Ok(view) => match view.handle.shutdown().await {
            Ok(_) => tracing::info!("left the cluster"),
            Err(error) => tracing::warn!(%error, "the node did not stop cleanly"),
        },
        // Dropping the handle stops the node the same way, without waiting.
        Err(view) => drop(view),
    }
    match fatal
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
        .take()
    {
        Some(error) => Err(error),
        None => Ok(code),
    }
}

/// The address to bind: `bind`, or this node's member address (a name is
/// looked up, with a few tries).
async fn bind_address(
    settings: &Settings,
    resolver: &Arc<dyn Resolve>,
) -> Result<std::net::SocketAddr, String> {
    if let Some(bind) = settings.bind {
        return Ok(bind);
    }
    let own = settings.own_address();
    resolve::lookup_at_start(resolver, own, None)
        .await
        .map_err(|error| {
            format!(
                "`members` address of node {} ({own}) does not resolve: {error}; set `bind` \
                 (for example \"0.0.0.0:PORT\") to bind without it",
                settings.id
            )
        })
}

/// How many frames from members that fail authentication, with none accepted
/// yet, make the agent give up: the secret is not the cluster's.
pub const REFUSED_FRAMES_FOR_A_WRONG_SECRET: u64 = 5;

/// Stops the agent with an error if the members' frames keep failing
/// authentication before any is accepted: its secret differs from theirs, and it
/// would otherwise run on, deaf and mute, for ever. Once one frame is accepted
/// the secret is right, and this stops looking (later refusals are forgeries or
/// a key rotation, counted in `/metrics`).
async fn watch_authentication(
    view: Arc<View>,
    stop: CancellationToken,
    error: Arc<std::sync::Mutex<Option<String>>>,
) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
        let Ok(stats) = view.stats().await else {
            return;
        };
        let Some(wire) = stats.wire else { return };
        if wire.accepted > 0 {
            return;
        }
        if wire.bad_tag >= REFUSED_FRAMES_FOR_A_WRONG_SECRET {
            let message = format!(
                "{} frames from members failed authentication and none was accepted: \
                 this node's secret is not the cluster's (check secret_file / secret_env)",
                wire.bad_tag
            );
            tracing::error!("{message}");
            *error.lock().unwrap_or_else(|poison| poison.into_inner()) = Some(message);
            stop.cancel();
            return;
        }
    }
}

/// How one leadership ended for the command.
enum Outcome {
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
}

/// What one leadership's runs of the command need.
struct Run<'a> {
    view: &'a View,
    cluster: bully_core::wire::ClusterId,
    command: &'a [OsString],
    containment: &'a Containment,
}

impl Run<'_> {
    /// Runs the command for as long as `leadership` lasts, again after each
    /// exit under `on_exit = "restart"`, until `failures` says to step aside.
    async fn lead(
        &self,
        leadership: &Leadership,
        shutdown: &CancellationToken,
        failures: &mut Failures,
    ) -> Outcome {
        let view = self.view;
        let token = leadership.token();
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
            });
            let (stop, code) = watch(&mut child, view, leadership, shutdown).await;
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
                    view.update_child(|status| status.restarts += 1);
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
        self.view.note_backoff(std::time::Instant::now() + backoff);
        if let Err(error) = self.view.handle.abstain_for(backoff).await {
            tracing::warn!(%error, "the node did not take the back-off");
        }
    }
}

/// Serves one run of the command until it ends or must stop; how it ended,
/// and its status.
async fn watch(
    child: &mut Supervised,
    view: &View,
    leadership: &Leadership,
    shutdown: &CancellationToken,
) -> (Stop, i32) {
    child.set_deadline(leadership.deadline()).await;
    let mut deadlines = leadership.deadlines();
    let stop = loop {
        tokio::select! {
            biased;
            () = leadership.ended() => break Stop::LeadershipEnded,
            () = shutdown.cancelled() => break Stop::Shutdown,
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
        Stop::LeadershipEnded | Stop::LeaseLapsed | Stop::Shutdown => {
            tracing::info!("stopping the command");
            (stop, child.stop().await)
        }
        Stop::Exited(code) => {
            child.exited().await;
            (stop, code)
        }
    }
}

/// SIGTERM and SIGINT, as one cancellation. Install it first thing (before the
/// configuration is read): a signal that comes before it would kill the agent
/// with status 143, one that comes after only asks it to leave, with status 0.
pub struct Signals {
    cancelled: CancellationToken,
}

impl Signals {
    /// Starts listening for SIGTERM and SIGINT (inside a tokio runtime).
    pub fn new() -> std::io::Result<Signals> {
        let mut terminate = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        let cancelled = CancellationToken::new();
        let trigger = cancelled.clone();
        tokio::spawn(async move {
            let name = tokio::select! {
                _ = terminate.recv() => "SIGTERM",
                _ = interrupt.recv() => "SIGINT",
            };
            tracing::info!(signal = name, "leaving");
            trigger.cancel();
        });
        Ok(Signals { cancelled })
    }

    fn watch(&self) -> CancellationToken {
        self.cancelled.clone()
    }
}
