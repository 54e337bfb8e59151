//! A cluster of driver tasks over the in-memory network, in paused (virtual) time:
//! elections, graceful and abrupt leader loss, recovery and partitions, with every
//! bound checked in simulated time.

use std::time::Duration;

use bully_core::{Config, Event, Node, NodeId};
use bully_tokio::MemNetwork;
use tokio::time::Instant;

mod support;
use support::mem::MemCluster;

fn config() -> Config {
    support::config::instant()
}

#[tokio::test(start_paused = true)]
async fn three_nodes_elect_the_highest() {
    let cluster = MemCluster::new(3, config());

    cluster.all_agree_on(3).await;

    // Same term everywhere: one leadership, one fencing token.
    let tokens: Vec<_> = cluster
        .running()
        .iter()
        .map(|h| h.leader().unwrap())
        .collect();
    assert!(
        tokens.windows(2).all(|pair| pair[0] == pair[1]),
        "{tokens:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_graceful_shutdown_of_the_leader_hands_over_at_once() {
    let mut cluster = MemCluster::new(3, config());
    cluster.all_agree_on(3).await;

    // Node 3 leaves politely: it resigns before its task ends.
    let stats = cluster.take(3).shutdown().await.unwrap();
    assert_eq!(stats.node.sent[bully_core::MessageKind::Resign], 2);

    // 2 leads well before anyone could have noticed a silent leader.
    let took = cluster.all_agree_on(2).await;
    assert!(
        took < config().leader_timeout(),
        "graceful handover took {took:?}, as long as a timeout would"
    );
}

#[tokio::test(start_paused = true)]
async fn a_crashed_leader_is_replaced_within_the_failover_bound_and_takes_over_on_return() {
    let mut cluster = MemCluster::new(5, config());
    cluster.all_agree_on(5).await;

    // 5 crashes: no Resign, the others must notice its silence.
    cluster.crash(5).await;
    let took = cluster.all_agree_on(4).await;
    let bound = config().failover_bound(5);
    assert!(took <= bound, "failover took {took:?}, bound {bound:?}");

    // 5 comes back and, with preemption Always, bullies its way back.
    cluster.restart(5);
    cluster.all_agree_on(5).await;
}

#[tokio::test(start_paused = true)]
async fn step_down_is_refused_by_a_follower_and_obeyed_by_the_leader() {
    let cluster = MemCluster::new(3, config());
    cluster.all_agree_on(3).await;

    let mut three_events = cluster.handle(3).events();
    let mut one_events = cluster.handle(1).events();
    assert!(
        !cluster.handle(1).step_down().await.unwrap(),
        "1 is not the leader"
    );
    assert!(cluster.handle(3).step_down().await.unwrap(), "3 is");
    assert_eq!(
        three_events.recv().await.unwrap(),
        Event::SteppedDown {
            term: bully_core::Term(1)
        }
    );

    // 2 takes over at once; then 3, still alive and the highest, hears 2's
    // heartbeat and bullies its way back (preemption Always).
    loop {
        if let Event::LeaderElected { leader, .. } = one_events.recv().await.unwrap() {
            assert_eq!(leader, NodeId(2));
            break;
        }
    }
    cluster.all_agree_on(3).await;
}

#[tokio::test(start_paused = true)]
async fn a_partition_splits_the_cluster_and_the_heal_reunites_it() {
    let cluster = MemCluster::new(5, config());
    cluster.all_agree_on(5).await;

    // {1,2,3} | {4,5}: without a quorum, each side has its own leader.
    cluster.cut(&[1, 2, 3], &[4, 5]);
    cluster.agree_on(&[1, 2, 3], 3).await;
    cluster.agree_on(&[4, 5], 5).await;

    // After the heal everyone follows 5 again, within the settle bound.
    cluster.heal();
    let took = cluster.all_agree_on(5).await;
    let bound = config().settle_bound(5);
    assert!(took <= bound, "settling took {took:?}, bound {bound:?}");
}

#[tokio::test(start_paused = true)]
async fn an_isolated_leader_is_replaced_and_takes_over_again_when_the_network_heals() {
    let cluster = MemCluster::new(3, config());
    cluster.all_agree_on(3).await;

    // Isolated, 3 is a crash to the others; they elect 2, and 3 leads alone.
    cluster.isolate(3);
    cluster.agree_on(&[1, 2], 2).await;
    cluster.heal();
    cluster.all_agree_on(3).await;
    assert!(
        cluster.network.stats().blocked > 0,
        "the isolation blocked nothing"
    );
}

#[tokio::test(start_paused = true)]
async fn a_lossy_slow_network_still_elects_the_highest() {
    let network = MemNetwork::with_seed(7);
    network.set_delay(Duration::from_millis(3));
    network.set_drop_rate(0.1);
    let cluster = MemCluster::on(network, 4, config());
    cluster.all_agree_on(4).await;
    assert!(
        cluster.network.stats().lost > 0,
        "the drop rate dropped nothing"
    );
}

#[tokio::test(start_paused = true)]
async fn dropping_the_handle_stops_the_task_and_the_leader_resigns() {
    let mut cluster = MemCluster::new(2, config());
    cluster.all_agree_on(2).await;

    let two = cluster.take(2);
    let mut watch = two.leader_watch();
    drop(two);
    // The task publishes its resignation, then ends: the watch closes.
    while watch.changed().await.is_ok() {}
    assert_eq!(*watch.borrow(), None);

    // 1 heard the Resign and leads without waiting out a leader timeout.
    let took = cluster.all_agree_on(1).await;
    assert!(took < config().leader_timeout(), "took {took:?}");
    let one = cluster.handle(1);
    assert!(one.stats().await.unwrap().node.received[bully_core::MessageKind::Resign] == 1);
}

#[tokio::test(start_paused = true)]
async fn a_stopped_task_reports_itself_stopped() {
    let mut cluster = MemCluster::new(1, config());
    let handle = cluster.take(1);
    let leader = handle.leader_watch();
    let events = handle.events();
    handle.abort().await;
    assert!(
        leader.has_changed().is_err(),
        "the watch closed with the task"
    );
    drop(events);
}

#[tokio::test(start_paused = true)]
async fn a_leader_that_persisted_its_term_comes_back_without_a_stale_announcement() {
    use bully_core::{DropReason, DurableState};
    use std::sync::{Arc, Mutex};

    let saved: Arc<Mutex<Vec<DurableState>>> = Arc::default();
    let persisting_into = |saved: &Arc<Mutex<Vec<DurableState>>>| {
        let saved = saved.clone();
        move |node, transport| {
            bully_tokio::spawn_persisting(node, transport, move |state| {
                saved.lock().unwrap().push(state)
            })
        }
    };
    let mut cluster = MemCluster::stopped(MemNetwork::new(), 3, config());
    cluster.start(1);
    cluster.start(2);
    cluster.start_with(3, persisting_into(&saved));
    cluster.all_agree_on(3).await;

    // 3 crashes; 2 takes over in a later term.
    cluster.take(3).abort().await;
    cluster.all_agree_on(2).await;
    let refused_before: u64 = stale_drops(&cluster).await;

    // 3 restarts from what it persisted: its terms only ever grew.
    let states = saved.lock().unwrap().clone();
    assert!(!states.is_empty());
    assert!(
        states.windows(2).all(|pair| pair[0].term <= pair[1].term),
        "{states:?}"
    );
    let last = *states.last().unwrap();
    let members = cluster.members().to_vec();
    let node = Node::with_durable_state(NodeId(3), members, config(), last).unwrap();
    cluster.start_node(node, persisting_into(&saved));
    cluster.all_agree_on(3).await;

    // It resumed above its old term, so nobody had to refuse a stale claim from it.
    assert_eq!(stale_drops(&cluster).await, refused_before);

    /// What 1 and 2 refused as a stale leader's.
    async fn stale_drops(cluster: &MemCluster) -> u64 {
        let mut total = 0;
        for handle in cluster.handles(&[1, 2]) {
            total += handle.stats().await.unwrap().node.dropped[DropReason::StaleLeader];
        }
        total
    }
}

#[tokio::test(start_paused = true)]
async fn with_a_majority_quorum_the_minority_side_of_a_partition_has_no_leader() {
    use bully_core::Quorum;

    let config = config().with_quorum(Quorum::Majority);
    let cluster = MemCluster::new(5, config.clone());
    cluster.all_agree_on(5).await;

    // {1,2,3} | {4,5}: the majority elects 3; 4 and 5, two of five, cannot lead.
    cluster.cut(&[1, 2, 3], &[4, 5]);
    cluster.agree_on(&[1, 2, 3], 3).await;
    tokio::time::sleep(config.settle_bound(5)).await;
    for handle in cluster.handles(&[4, 5]) {
        let leader = handle.leader();
        assert_eq!(
            leader,
            None,
            "node {} leads or follows without a majority",
            handle.id()
        );
    }

    cluster.heal();
    let took = cluster.all_agree_on(5).await;
    let bound = config.settle_bound(5);
    assert!(took <= bound, "settling took {took:?}, bound {bound:?}");
}

#[tokio::test(start_paused = true)]
async fn an_abstaining_leader_stays_aside_for_its_abstention_then_takes_back() {
    let cluster = MemCluster::new(3, config());
    cluster.all_agree_on(3).await;

    // 3's work keeps failing: it steps aside for ten leader timeouts.
    let abstention = config().leader_timeout() * 10;
    let asked = Instant::now();
    assert!(
        cluster.handle(3).abstain_for(abstention).await.unwrap(),
        "3 led"
    );
    cluster.all_agree_on(2).await;

    // However long 2 leads meanwhile, 3 does not take back before the end.
    let mut three = cluster.handle(3).leader_watch();
    let took_back = tokio::time::timeout(
        abstention.saturating_sub(asked.elapsed()) - Duration::from_millis(1),
        three.wait_for(|leader| leader.is_some_and(|l| l.id == NodeId(3))),
    )
    .await;
    assert!(took_back.is_err(), "3 led again during its abstention");

    // Afterwards it does (preemption Always), within a failover.
    cluster.all_agree_on(3).await;
    let back = asked.elapsed();
    let bound = abstention + config().failover_bound(3);
    assert!(
        back >= abstention && back <= bound,
        "took back after {back:?}"
    );
}
