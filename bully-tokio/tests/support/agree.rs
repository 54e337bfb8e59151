//! [`agree_on`]: waiting until every handle of a group names the same leader.

use std::time::Duration;

use bully_core::NodeId;
use bully_tokio::Handle;
use tokio::time::Instant;

/// Waits until every one of `handles` names `expected`, each at most
/// `give_up`; returns how long that took (in virtual time, under
/// `start_paused`).
pub(crate) async fn agree_on<'a>(
    handles: impl IntoIterator<Item = &'a Handle>,
    expected: NodeId,
    give_up: Duration,
) -> Duration {
    let started = Instant::now();
    for handle in handles {
        let mut leader = handle.leader_watch();
        tokio::time::timeout(
            give_up,
            leader.wait_for(|leader| leader.map(|l| l.id) == Some(expected)),
        )
        .await
        .unwrap_or_else(|_| panic!("node {} never named {expected}", handle.id()))
        .unwrap();
    }
    started.elapsed()
}
