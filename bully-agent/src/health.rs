//! The job's health check (`[health]`): run on the member that runs the job,
//! every interval while it runs. A process can be alive while the service it
//! is not (it hangs, it lost its database), and would keep the leadership; so
//! after `failures` checks in a row fail, this member steps aside for
//! `backoff_ms` ([`crate::run`]), and the next highest member, whose own
//! check is fresh, runs the job.
//!
//! A command is healthy when it exits with status 0 within the timeout; a URL
//! when a GET answers 2xx within it. The check gets the job's
//! `BULLY_FENCING_TOKEN`, `BULLY_NODE` and `BULLY_CLUSTER`.

use std::process::Stdio;
use std::time::Duration;

use bully_core::FencingToken;

use crate::config::{HealthCheck, HealthPolicy};
use crate::token::format_token;
use crate::view::View;

/// Runs the check every interval from now on; returns once `policy.failures`
/// checks in a row failed, with the last failure. Each result is published in
/// `view`'s status.
pub async fn until_unhealthy(
    policy: &HealthPolicy,
    view: &View,
    token: FencingToken,
    cluster: u64,
) -> String {
    let mut in_a_row = 0;
    loop {
        tokio::time::sleep(policy.interval).await;
        let result = check_once(&policy.check, policy.timeout, token, cluster).await;
        match &result {
            Ok(()) => in_a_row = 0,
            Err(error) => {
                in_a_row += 1;
                tracing::warn!(
                    %error,
                    in_a_row,
                    limit = policy.failures,
                    "the job's health check failed"
                );
            }
        }
        view.update_health(|status| {
            status.checks += 1;
            status.failures_in_a_row = in_a_row;
            if let Err(error) = &result {
                status.failed += 1;
                status.last_error = Some(error.clone());
            }
        });
        if in_a_row >= policy.failures {
            return result.err().unwrap_or_default();
        }
    }
}

/// One check: `Ok` if healthy, else why not.
pub async fn check_once(
    check: &HealthCheck,
    timeout: Duration,
    token: FencingToken,
    cluster: u64,
) -> Result<(), String> {
    match check {
        HealthCheck::Command(command) => run_command(command, timeout, token, cluster).await,
        HealthCheck::Url(url) => get(url.clone(), timeout).await,
    }
}

async fn run_command(
    command: &[String],
    timeout: Duration,
    token: FencingToken,
    cluster: u64,
) -> Result<(), String> {
    let (program, args) = command.split_first().ok_or("no command")?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .env("BULLY_FENCING_TOKEN", format_token(token))
        .env("BULLY_NODE", token.leader.0.to_string())
        .env("BULLY_CLUSTER", cluster.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // A check that outlives its timeout is killed, not left behind.
        .kill_on_drop(true)
        .spawn()
        .map_err(|error| format!("{program}: {error}"))?;
    match tokio::time::timeout(timeout, child.wait()).await {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(format!("{program}: {status}")),
        Ok(Err(error)) => Err(format!("{program}: {error}")),
        Err(_) => Err(format!(
            "{program}: no answer within {} ms",
            timeout.as_millis()
        )),
    }
}

async fn get(url: String, timeout: Duration) -> Result<(), String> {
    // ureq blocks: on the blocking pool, bounded by its own timeout.
    tokio::task::spawn_blocking(move || {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build()
            .into();
        match agent.get(&url).call() {
            Ok(response) if response.status().is_success() => Ok(()),
            Ok(response) => Err(format!("{url}: HTTP {}", response.status())),
            Err(error) => Err(format!("{url}: {error}")),
        }
    })
    .await
    .map_err(|error| format!("the check did not run: {error}"))?
}

#[cfg(test)]
mod tests {
    use super::*;
    use bully_core::{NodeId, Term};

    const TOKEN: FencingToken = FencingToken {
        term: Term(4),
        leader: NodeId(2),
    };

    fn command(script: &str) -> HealthCheck {
        HealthCheck::Command(vec!["sh".into(), "-c".into(), script.into()])
    }

    #[tokio::test]
    async fn a_command_is_healthy_when_it_exits_0_in_time_and_sees_the_token() {
        let timeout = Duration::from_secs(5);
        let expected = format!("test \"$BULLY_FENCING_TOKEN\" = {}", format_token(TOKEN));
        assert_eq!(
            check_once(&command(&expected), timeout, TOKEN, 7).await,
            Ok(())
        );
        let failed = check_once(&command("exit 3"), timeout, TOKEN, 7).await;
        assert!(failed.unwrap_err().contains("exit status: 3"));
        let slow = check_once(&command("sleep 5"), Duration::from_millis(50), TOKEN, 7).await;
        assert!(slow.unwrap_err().contains("no answer within 50 ms"));
        let missing = HealthCheck::Command(vec!["/nonexistent/check".into()]);
        assert!(check_once(&missing, timeout, TOKEN, 7).await.is_err());
    }

    #[tokio::test]
    async fn a_url_is_healthy_on_2xx_only() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            for status in ["200 OK", "503 Service Unavailable"] {
                let (mut socket, _) = listener.accept().await.unwrap();
                let mut request = [0u8; 1024];
                let _ = socket.read(&mut request).await.unwrap();
                let response =
                    format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                socket.write_all(response.as_bytes()).await.unwrap();
            }
        });
        let check = HealthCheck::Url(format!("http://{address}/healthz"));
        let timeout = Duration::from_secs(5);
        assert_eq!(check_once(&check, timeout, TOKEN, 7).await, Ok(()));
        let unhealthy = check_once(&check, timeout, TOKEN, 7).await;
        assert!(unhealthy.unwrap_err().contains("503"), "the second answer");
    }
}
