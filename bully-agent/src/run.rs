//! `bully-agent run`: the node, and the command in each of its leaderships.
//!
//! Start-up does every check that can fail before it binds anything: the
//! configuration, the secret, the data directory (locked, read, and written once
//! with the new incarnation), then the HTTP port and the UDP port. Only then does
//! the node start. A data directory without a state file starts a restart, not a
//! first boot (see [`crate::init`]).
//!
//! While this node leads, the command runs under a [`Supervised`](crate::child::Supervised) run, which is
//! told the lease deadline after every renewal. When the leadership ends, or with
//! a quorum its lease margin is reached, the command is stopped (SIGTERM, the
//! grace period, SIGKILL), so under a quorum it is gone before any other member
//! can be elected. A leader that yields to a higher member (preemption) stops
//! its command at once too, but frees its followers' promises only a resign
//! delay later (`Config::with_resign_delay`, set to the lease margin), so the
//! higher member cannot lead while the old command may still run. SIGTERM or
//! SIGINT stop the command first, then the node, which resigns naming the next
//! highest member, which elects at once: a hand-over, as SIGUSR1 asks for one
//! while the agent stays ([`crate::handover`]). SIGHUP reloads the configuration ([`crate::reload`]);
//! members' host names are kept resolved meanwhile ([`crate::resolve`]).

mod lead;
mod signals;

use std::ffi::OsString;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bully_core::wire::{Codec, Incarnation};
use bully_core::{Node, Quorum};
use bully_tokio::{Builder, CancellationToken, UdpTransport};

use crate::backoff::Failures;
use crate::config::Settings;
use crate::containment::Containment;
use crate::resolve::{self, Book, Resolve, SystemResolver};
use crate::state::{DataDir, Stored};
use crate::status::ConfigStatus;
use crate::view::{self, View};

use self::lead::{Outcome, Run};
pub use self::signals::Signals;

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
    let handovers = crate::handover::requests().map_err(|error| format!("SIGUSR1: {error}"))?;
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
        (signals, hangups, handovers),
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
    (signals, hangups, handovers): (
        Signals,
        tokio::signal::unix::Signal,
        tokio::signal::unix::Signal,
    ),
    resolver: Arc<dyn Resolve>,
) -> Result<i32, String> {
    let stored = match data.load().map_err(|error| error.to_string())? {
        Some(stored) => {
            if stored.durable.first_boot {
                tracing::info!(
                    "first boot declared (bully-agent init): this member votes as it starts"
                );
            }
            stored
        }
        None => {
            note_missing_state(settings, &data.state_path());
            // A restart, not a first boot: the core then votes for nobody
            // for a follower lease from its start.
            Stored::default()
        }
    };
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
    let handle = Builder::new().spawn_persisting(node, transport, persist);
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
            witness: settings.is_witness(),
            lease_name: settings.lease_name.clone(),
            ..ConfigStatus::default()
        },
    ));
    view.update_child(|child| child.containment = containment.describe());
    if settings.health.is_some() {
        // The status says the checks are configured before the first runs.
        view.update_health(|_| {});
    }
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
        tokio::spawn(crate::handover::serve(
            handovers,
            settings.data_dir.clone(),
            view.clone(),
            background.clone(),
        )),
        tokio::spawn(view::maintain_names(
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
            leadership = view.handle.permit(Duration::MAX) => match leadership {
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
            health: settings.health.as_ref(),
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

/// Says, in one line, that no state file was found and what follows: the
/// member may have run and lost its data directory, and may have promised a
/// leader not to vote against it, so with a quorum it waits a follower lease
/// before it votes; a new cluster's members are declared with `init` to vote
/// at once. Without a quorum there are no votes to wait for.
fn note_missing_state(settings: &Settings, path: &std::path::Path) {
    if settings.config.quorum() == Quorum::None {
        tracing::info!(
            state = %path.display(),
            "no state file: starting from term 0"
        );
        return;
    }
    tracing::warn!(
        state = %path.display(),
        follower_lease_ms = settings.config.follower_lease().as_millis(),
        "no state file was found, so this member may have run before and lost its state: \
         it waits a follower lease before it votes; a member of a new cluster can be \
         declared with `bully-agent init` before its first start to vote at once"
    );
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
