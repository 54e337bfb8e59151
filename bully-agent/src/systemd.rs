//! systemd: readiness for a `Type=notify` unit (`READY=1` once the node has
//! joined and the endpoint serves; `STOPPING=1` when it leaves), through the
//! sd-notify crate. Outside systemd (`NOTIFY_SOCKET` unset) it does nothing.
//! Credentials (`LoadCredential=`) are read by the configuration
//! (`secret_credential`).

use crate::config::Settings;

/// The variable systemd sets for a `Type=notify` service.
pub const NOTIFY_SOCKET: &str = "NOTIFY_SOCKET";

/// Tells systemd the agent is ready: it has joined the cluster, bound its
/// ports and serves its endpoint.
pub fn ready(settings: &Settings) {
    if std::env::var_os(NOTIFY_SOCKET).is_none() {
        return;
    }
    let status = format!(
        "node {} of cluster {}: {} members",
        settings.id,
        settings.cluster.0,
        settings.members.len()
    );
    let states = [
        sd_notify::NotifyState::Ready,
        sd_notify::NotifyState::Status(&status),
    ];
    if let Err(error) = sd_notify::notify(&states) {
        tracing::warn!(%error, "could not tell systemd the agent is ready");
    }
}

/// Tells systemd the agent is stopping.
pub fn stopping() {
    if std::env::var_os(NOTIFY_SOCKET).is_none() {
        return;
    }
    if let Err(error) = sd_notify::notify(&[sd_notify::NotifyState::Stopping]) {
        tracing::debug!(%error, "could not tell systemd the agent is stopping");
    }
}
