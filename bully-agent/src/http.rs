//! The optional HTTP endpoint (`listen`): `/leader` (JSON), `/healthz`, and
//! `/metrics` in Prometheus' text format, served by axum.
//!
//! The metrics are read from the driver at each scrape and handed to the
//! `metrics` crate's Prometheus exporter, which renders them; nothing here
//! formats the exposition text by hand.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use axum::routing::get;
use bully_core::wire::WireStats;
use metrics::{Unit, counter, describe_counter, describe_gauge, gauge};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use metrics_util::MetricKindMask;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::view::View;

/// How long a gauge that is no longer set stays in `/metrics`.
pub const GAUGE_IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// What `bully_member_last_heard_seconds` says of a member never heard since
/// the agent started (or whose name has not resolved): more than any alert's
/// threshold.
pub const NEVER_HEARD_SECONDS: f64 = 1e9;

/// client-go's gauge (`k8s.io/client-go/tools/leaderelection`): 1 while this
/// node leads, 0 otherwise, labelled `name` with the lease's name
/// (`lease_name`).
pub const LEADER_ELECTION_GAUGE: &str = "leader_election_master_status";

#[derive(Clone)]
struct Endpoint {
    view: Arc<View>,
    metrics: PrometheusHandle,
}

/// Binds `address` (before the node starts: a taken port is a startup error).
pub async fn bind(address: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(address).await
}

/// Serves the endpoint on `listener` until the task is aborted.
pub fn serve(listener: TcpListener, view: Arc<View>) -> Result<JoinHandle<()>, String> {
    // A removed member's series goes a minute after its last update (every
    // gauge is set again at each scrape, so only those of members that left
    // age out).
    let recorder = PrometheusBuilder::new()
        .idle_timeout(MetricKindMask::GAUGE, Some(GAUGE_IDLE_TIMEOUT))
        .build_recorder();
    let metrics = recorder.handle();
    metrics::set_global_recorder(recorder).map_err(|error| error.to_string())?;
    describe();
    let endpoint = Endpoint { view, metrics };
    let app = Router::new()
        .route("/leader", get(leader))
        .route("/healthz", get(healthz))
        .route("/metrics", get(render_metrics))
        .with_state(endpoint);
    Ok(tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::error!(%error, "the HTTP endpoint stopped");
        }
    }))
}

async fn leader(State(endpoint): State<Endpoint>) -> Response {
    match endpoint.view.status().await {
        Ok(status) => Json(status).into_response(),
        Err(error) => (StatusCode::SERVICE_UNAVAILABLE, error.to_string()).into_response(),
    }
}

/// Healthy while the node's driver runs; a witness says it is one.
async fn healthz(State(endpoint): State<Endpoint>) -> Response {
    match endpoint.view.stats().await {
        Ok(_) if endpoint.view.config().witness => "ok (witness)\n".into_response(),
        Ok(_) => "ok\n".into_response(),
        Err(error) => (StatusCode::SERVICE_UNAVAILABLE, error.to_string()).into_response(),
    }
}

async fn render_metrics(State(endpoint): State<Endpoint>) -> Response {
    let stats = match endpoint.view.stats().await {
        Ok(stats) => stats,
        Err(error) => {
            return (StatusCode::SERVICE_UNAVAILABLE, error.to_string()).into_response();
        }
    };
    let status = match endpoint.view.status().await {
        Ok(status) => status,
        Err(error) => {
            return (StatusCode::SERVICE_UNAVAILABLE, error.to_string()).into_response();
        }
    };
    let node = &stats.node;
    counter!("bully_elections_total").absolute(node.elections_started);
    counter!("bully_leader_changes_total").absolute(node.leaders_seen);
    counter!("bully_times_leader_total").absolute(node.times_leader);
    counter!("bully_leaders_suspected_total").absolute(node.leaders_suspected);
    counter!("bully_messages_sent_total").absolute(node.sent.total());
    counter!("bully_messages_received_total").absolute(node.received.total());
    for (reason, count) in node.dropped.iter() {
        counter!("bully_dropped_total", "reason" => reason.name()).absolute(count);
    }
    for (reason, count) in refused(stats.wire.unwrap_or_default()) {
        counter!("bully_frames_refused_total", "reason" => reason).absolute(count);
    }
    counter!("bully_child_starts_total").absolute(status.child.starts);
    counter!("bully_child_restarts_total").absolute(status.child.restarts);
    // Gauges of small integers: exact in f64.
    #[allow(clippy::cast_precision_loss)]
    {
        gauge!("bully_term").set(status.term as f64);
        gauge!("bully_leader").set(status.leader.map_or(-1.0, |leader| leader as f64));
    }
    let leads = f64::from(u8::from(status.role == "leader"));
    gauge!("bully_is_leader").set(leads);
    // client-go's leader-election gauge, named and labelled as client-go exports
    // it, so that dashboards and alerts written for Kubernetes controllers work
    // unchanged.
    gauge!(LEADER_ELECTION_GAUGE, "name" => status.config.lease_name.clone()).set(leads);
    gauge!("bully_witness").set(f64::from(u8::from(status.config.witness)));
    gauge!("bully_child_running").set(f64::from(u8::from(status.child.running)));
    gauge!("bully_eligible").set(f64::from(u8::from(status.eligible)));
    gauge!("bully_child_failures_in_a_row").set(f64::from(status.child.failures_in_a_row));
    counter!("bully_child_backoffs_total").absolute(status.child.backoffs);
    // Milliseconds to seconds: exact enough for a gauge.
    #[allow(clippy::cast_precision_loss)]
    gauge!("bully_child_backoff_seconds").set(status.child.backoff_ms.unwrap_or(0) as f64 / 1000.0);
    let heard = status
        .members
        .iter()
        .filter(|member| member.last_heard_ms.is_some_and(|ms| ms < 60_000))
        .count();
    #[allow(clippy::cast_precision_loss)]
    gauge!("bully_members_heard").set(heard as f64);
    #[allow(clippy::cast_precision_loss)]
    gauge!("bully_members").set((status.members.len() + 1) as f64);
    let mut unresolved = 0u32;
    for member in &status.members {
        unresolved += u32::from(member.resolved.is_none());
        // Milliseconds to seconds: exact enough for a gauge.
        #[allow(clippy::cast_precision_loss)]
        let seconds = member
            .last_heard_ms
            .map_or(NEVER_HEARD_SECONDS, |ms| ms as f64 / 1000.0);
        gauge!("bully_member_last_heard_seconds", "member" => member.id.to_string()).set(seconds);
    }
    gauge!("bully_members_unresolved").set(f64::from(unresolved));
    counter!("bully_config_reloads_total", "result" => "applied").absolute(status.config.reloads);
    counter!("bully_config_reloads_total", "result" => "refused").absolute(status.config.refused);
    gauge!("bully_config_signing_key").set(f64::from(status.config.signing_key));
    if let Some(health) = &status.health {
        counter!("bully_health_checks_total", "result" => "ok")
            .absolute(health.checks - health.failed);
        counter!("bully_health_checks_total", "result" => "failed").absolute(health.failed);
        gauge!("bully_health_failures_in_a_row").set(f64::from(health.failures_in_a_row));
        counter!("bully_health_step_asides_total").absolute(health.stepped_aside);
    }
    counter!("bully_handovers_total").absolute(status.handover.handed_over);
    (
        [("content-type", "text/plain; version=0.0.4")],
        endpoint.metrics.render(),
    )
        .into_response()
}

/// The wire codec's refusals, by reason.
fn refused(wire: WireStats) -> [(&'static str, u64); 12] {
    [
        ("truncated", wire.truncated),
        ("too_large", wire.too_large),
        ("bad_magic", wire.bad_magic),
        ("unsupported_version", wire.unsupported_version),
        ("trailing_bytes", wire.trailing_bytes),
        ("wrong_cluster", wire.wrong_cluster),
        ("wrong_recipient", wire.wrong_recipient),
        ("unknown_key", wire.unknown_key),
        ("bad_tag", wire.bad_tag),
        ("replayed", wire.replayed),
        ("malformed_body", wire.malformed_body),
        ("not_member", wire.not_member),
    ]
}

fn describe() {
    describe_counter!(
        "bully_elections_total",
        "Elections this node started or joined"
    );
    describe_counter!(
        "bully_leader_changes_total",
        "Leaderships accepted, its own included"
    );
    describe_counter!("bully_times_leader_total", "Times this node became leader");
    describe_counter!(
        "bully_leaders_suspected_total",
        "Times this node's leader timeout fired while it followed a leader"
    );
    describe_counter!("bully_messages_sent_total", "Protocol messages sent");
    describe_counter!(
        "bully_messages_received_total",
        "Protocol messages received"
    );
    describe_counter!(
        "bully_dropped_total",
        "Peer messages the node refused, by reason"
    );
    describe_counter!(
        "bully_frames_refused_total",
        "Datagrams the wire codec refused, by reason"
    );
    describe_counter!("bully_child_starts_total", "Runs of the command started");
    describe_counter!(
        "bully_child_restarts_total",
        "Runs started again after the command exited by itself"
    );
    describe_gauge!("bully_term", "The current term");
    describe_gauge!("bully_leader", "The leader this node follows (-1: none)");
    describe_gauge!("bully_is_leader", "1 while this node leads");
    describe_gauge!("bully_child_running", "1 while the command runs");
    describe_gauge!(
        LEADER_ELECTION_GAUGE,
        "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, \
         1 indicates master. 'name' is the string used to identify the lease. Please make sure \
         to group by name."
    );
    describe_gauge!(
        "bully_witness",
        "1 if this node is a witness: it votes, never leads, and runs no command"
    );
    describe_gauge!(
        "bully_eligible",
        "1 while this node may stand for leader; 0 during a back-off"
    );
    describe_gauge!(
        "bully_child_failures_in_a_row",
        Unit::Count,
        "Runs of the command in a row that ended within child.min_runtime_ms"
    );
    describe_counter!(
        "bully_child_backoffs_total",
        "Back-offs entered after runs that kept failing"
    );
    describe_gauge!(
        "bully_child_backoff_seconds",
        Unit::Seconds,
        "What is left of the back-off (0: none)"
    );
    describe_gauge!(
        "bully_members_heard",
        Unit::Count,
        "Other members heard from in the last minute"
    );
    describe_gauge!(
        "bully_members",
        Unit::Count,
        "Members of the cluster, this node included"
    );
    describe_gauge!(
        "bully_member_last_heard_seconds",
        Unit::Seconds,
        "Since this node last heard from the member (1e9: never since it started); the \
         leader hears every member, every member hears the leader"
    );
    describe_gauge!(
        "bully_members_unresolved",
        Unit::Count,
        "Members whose host name has not resolved yet (unreachable)"
    );
    describe_counter!(
        "bully_config_reloads_total",
        "Configuration reloads, by result (applied, refused)"
    );
    describe_counter!(
        "bully_health_checks_total",
        "The job's health checks on this node, by result (ok, failed)"
    );
    describe_gauge!(
        "bully_health_failures_in_a_row",
        Unit::Count,
        "The job's health checks failed in a row now"
    );
    describe_counter!(
        "bully_health_step_asides_total",
        "Times this member stepped aside because the job's health checks kept failing"
    );
    describe_counter!(
        "bully_handovers_total",
        "Hand-overs this node carried out (bully-agent handover)"
    );
    describe_gauge!(
        "bully_config_signing_key",
        "The id of the key this node signs its frames with"
    );
}
