//! A planned hand-over: `bully-agent handover --config FILE [--to ID]` on the
//! leader's machine stops the job there, and the member named (or the next
//! highest) starts it without waiting for a leader timeout
//! (`bully_core::Node::hand_over`). SIGTERM does the same with the next
//! highest member as the agent leaves ([`crate::run`]).
//!
//! The command writes its request into the data directory (`handover.request`)
//! and sends the agent SIGUSR1, as `reload` sends SIGHUP: a hand-over needs
//! the rights to signal the agent and to write its directory, not only to
//! reach its HTTP port, which answers anyone. With `listen` set it waits for
//! the endpoint to report what the agent did.
//!
//! The old leader then abstains for `--for-ms` (ten minutes by default), so
//! that under `preemption = "always"` it does not take the job back from the
//! lower member at once; a restart of its agent ends the abstention.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bully_core::NodeId;
use bully_tokio::CancellationToken;
use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};
use tokio::signal::unix::{SignalKind, signal};

use crate::reload::command::ask_agent;
use crate::status::HandoverStatus;
use crate::view::View;

/// The request's file name inside the data directory.
pub const REQUEST_FILE: &str = "handover.request";

/// How long the old leader abstains unless told otherwise.
pub const DEFAULT_ABSTAIN: Duration = Duration::from_secs(600);

/// What `bully-agent handover` asks of the running agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// The member to hand over to; `None`: the next highest.
    pub to: Option<u64>,
    /// How long the old leader stays out, in milliseconds.
    pub abstain_ms: u64,
}

/// SIGUSR1, caught: registered at start, before the pid file is written, so
/// that a request sent early does not end the agent (SIGUSR1's default action).
pub fn requests() -> std::io::Result<tokio::signal::unix::Signal> {
    signal(SignalKind::user_defined1())
}

/// Carries out a hand-over at every SIGUSR1 until `stop`.
pub async fn serve(
    mut requests: tokio::signal::unix::Signal,
    data_dir: PathBuf,
    view: Arc<View>,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            received = requests.recv() => if received.is_none() { return },
        }
        let request = take_request(&data_dir);
        let outcome = hand_over(&view, request).await;
        view.update_handover(|status| {
            status.requests += 1;
            if outcome.is_ok() {
                status.handed_over += 1;
            }
            status.last = Some(match &outcome {
                Ok(message) | Err(message) => message.clone(),
            });
        });
    }
}

/// The request in the data directory, removed as it is read; a signal without
/// one (`kill -USR1`) hands over to the next highest with the default
/// abstention.
fn take_request(data_dir: &Path) -> Request {
    let path = data_dir.join(REQUEST_FILE);
    let request = std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| match serde_json::from_str(&text) {
            Ok(request) => Some(request),
            Err(error) => {
                tracing::warn!(file = %path.display(), %error, "a hand-over request that does not parse: handing over to the next highest");
                None
            }
        });
    let _ = std::fs::remove_file(&path);
    request.unwrap_or(Request {
        to: None,
        abstain_ms: millis(DEFAULT_ABSTAIN),
    })
}

/// Asks the node to hand over; the line the endpoint and the log show.
async fn hand_over(view: &View, request: Request) -> Result<String, String> {
    let to = request.to.map(NodeId);
    let named = to.map_or_else(
        || "the next highest member".to_owned(),
        |to| format!("node {to}"),
    );
    let abstain = Duration::from_millis(request.abstain_ms);
    match view.handle.hand_over(to, abstain).await {
        Ok(Ok(true)) => {
            tracing::info!(to = %named, abstain_ms = request.abstain_ms, "handing the job over: stopping it here");
            Ok(format!(
                "handed over to {named}; this node stays out for {} ms",
                request.abstain_ms
            ))
        }
        Ok(Ok(false)) => {
            tracing::warn!("hand-over refused: this node does not lead");
            Err("refused: this node does not lead".to_owned())
        }
        Ok(Err(error)) => {
            tracing::warn!(%error, "hand-over refused");
            Err(format!("refused: {error}"))
        }
        Err(error) => Err(format!("the node did not answer: {error}")),
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// `bully-agent handover`: writes the request, signals the agent, and reports
/// what its endpoint says (0: handed over; 1: refused, or no answer).
pub fn command(config_path: &Path, to: Option<u64>, abstain: Duration) -> Result<i32, String> {
    let request = Request {
        to,
        abstain_ms: millis(abstain),
    };
    let write_request = |data_dir: &Path| {
        let path = data_dir.join(REQUEST_FILE);
        let partial = data_dir.join(format!("{REQUEST_FILE}.new"));
        let text = serde_json::to_string(&request).map_err(|error| error.to_string())?;
        std::fs::write(&partial, text)
            .and_then(|()| std::fs::rename(&partial, &path))
            .map_err(|error| format!("{}: {error}", path.display()))
    };
    ask_agent(
        config_path,
        Signal::SIGUSR1,
        write_request,
        |status| status.handover.clone(),
        outcome,
        "its log says what it did",
    )
}

/// What the endpoint's change from `before` to `now` says, once it says
/// something.
fn outcome(before: &HandoverStatus, now: &HandoverStatus) -> Option<Result<i32, String>> {
    if now.requests <= before.requests {
        return None;
    }
    let last = now.last.clone().unwrap_or_default();
    if now.handed_over > before.handed_over {
        println!("{last}");
        Some(Ok(0))
    } else {
        Some(Err(last))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_back_as_written_and_a_missing_one_names_nobody() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            take_request(dir.path()),
            Request {
                to: None,
                abstain_ms: 600_000
            }
        );
        let request = Request {
            to: Some(2),
            abstain_ms: 5,
        };
        std::fs::write(
            dir.path().join(REQUEST_FILE),
            serde_json::to_string(&request).unwrap(),
        )
        .unwrap();
        assert_eq!(take_request(dir.path()), request);
        assert!(
            !dir.path().join(REQUEST_FILE).exists(),
            "read once: a later SIGUSR1 does not repeat it"
        );
        std::fs::write(dir.path().join(REQUEST_FILE), "to = 2").unwrap();
        assert_eq!(take_request(dir.path()).to, None, "garbage names nobody");
    }

    #[test]
    fn the_command_reports_only_a_new_request_and_fails_on_a_refusal() {
        let before = HandoverStatus::default();
        assert!(outcome(&before, &before).is_none());
        let handed = HandoverStatus {
            requests: 1,
            handed_over: 1,
            last: Some("handed over to node 2".into()),
        };
        assert_eq!(outcome(&before, &handed), Some(Ok(0)));
        let refused = HandoverStatus {
            requests: 2,
            handed_over: 1,
            last: Some("refused: this node does not lead".into()),
        };
        assert_eq!(
            outcome(&handed, &refused),
            Some(Err("refused: this node does not lead".into()))
        );
    }
}
