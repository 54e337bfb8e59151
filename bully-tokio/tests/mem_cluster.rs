//! A cluster of driver tasks over the in-memory network, in paused (virtual) time:
//! elections, graceful and abrupt leader loss, recovery and partitions, with every
//! bound checked in simulated time.

use std::time::Duration;

use bully_core::{Config, Event, Node, NodeId};
use bully_tokio::{Handle, MemNetwork};
use tokio::time::Instant;

fn config() -> Config {
    Config::default()
        .with_heartbeat_interval(Duration::from_millis(50))
        .with_leader_timeout(Duration::from_millis(150))
        .with_max_message_delay(Duration::from_millis(5))
        .with_max_processing_time(Duration::from_millis(2))
}

fn ids(n: u64) -> Vec<NodeId> {
    (1..=n).map(NodeId).collect()
}

fn start(network: &MemNetwork, id: NodeId, members: &[NodeId]) -> Handle {
    let node = Node::new(id, members.iter().copied(), config()).unwrap();
    bully_tokio::spawn(node, network.endpoint(id))
}

/// Starts every member on `network`, in id order.
fn start_all(network: &MemNetwork, members: &[NodeId]) -> Vec<Handle> {
    members
        .iter()
        .map(|&id| start(network, id, members))
        .collect()
}

/// Waits (in virtual time) until every handle names `expected`; returns how long
/// that took. Gives up after a simulated minute.
async fn agree_on(handles: &[&Handle], expected: NodeId) -> Duration {
    let started = Instant::now();
    for handle in handles {
        let mut leader = handle.leader_watch();
        tokio::time::timeout(
            Duration::from_secs(60),
            leader.wait_for(|leader| leader.map(|l| l.id) == Some(expected)),
        )
        .await
        .unwrap_or_else(|_| panic!("node {} never named {expected}", handle.id()))
        .unwrap();
    }
    started.elapsed()
}

#[tokio::test(start_paused = true)]
async fn three_nodes_elect_the_highest() {
    let members = ids(3);
    let network = MemNetwork::new();
    let handles = start_all(&network, &members);

    agree_on(&handles.iter().collect::<Vec<_>>(), NodeId(3)).await;

    // Same term everywhere: one leadership, one fencing token.
    let tokens: Vec<_> = handles.iter().map(|h| h.leader().unwrap()).collect();
    assert!(
        tokens.windows(2).all(|pair| pair[0] == pair[1]),
        "{tokens:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_graceful_shutdown_of_the_leader_hands_over_at_once() {
    let members = ids(3);
    let network = MemNetwork::new();
    let mut handles = start_all(&network, &members);
    agree_on(&handles.iter().collect::<Vec<_>>(), NodeId(3)).await;

    // Node 3 leaves politely: it resigns before its task ends.
    let three = handles.pop().unwrap();
    let stats = three.shutdown().await.unwrap();
    assert_eq!(stats.node.sent[bully_core::MessageKind::Resign], 2);

    // 2 leads well before anyone could have noticed a silent leader.
    let took = agree_on(&handles.iter().collect::<Vec<_>>(), NodeId(2)).await;
    assert!(
        took < config().leader_timeout(),
        "graceful handover took {took:?}, as long as a timeout would"
    );
}

#[tokio::test(start_paused = true)]
async fn a_crashed_leader_is_replaced_within_the_failover_bound_and_takes_over_on_return() {
    let members = ids(5);
    let network = MemNetwork::new();
    let mut handles = start_all(&network, &members);
    agree_on(&handles.iter().collect::<Vec<_>>(), NodeId(5)).await;

    // 5 crashes: no Resign, the others must notice its silence.
    handles.pop().unwrap().abort().await;
    network.detach(NodeId(5));
    let took = agree_on(&handles.iter().collect::<Vec<_>>(), NodeId(4)).await;
    let bound = config().failover_bound(members.len());
    assert!(took <= bound, "failover took {took:?}, bound {bound:?}");

    // 5 comes back and, with preemption Always, bullies its way back.
    handles.push(start(&network, NodeId(5), &members));
    agree_on(&handles.iter().collect::<Vec<_>>(), NodeId(5)).await;
}

#[tokio::test(start_paused = true)]
async fn step_down_is_refused_by_a_follower_and_obeyed_by_the_leader() {
    let members = ids(3);
    let network = MemNetwork::new();
    let handles = start_all(&network, &members);
    agree_on(&handles.iter().collect::<Vec<_>>(), NodeId(3)).await;

    let mut three_events = handles[2].events();
    let mut one_events = handles[0].events();
    assert!(
        !handles[0].step_down().await.unwrap(),
        "1 is not the leader"
    );
    assert!(handles[2].step_down().await.unwrap(), "3 is");
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
    agree_on(&handles.iter().collect::<Vec<_>>(), NodeId(3)).await;
}

#[tokio::test(start_paused = true)]
async fn a_partition_splits_the_cluster_and_the_heal_reunites_it() {
    let members = ids(5);
    let network = MemNetwork::new();
    let handles = start_all(&network, &members);
    agree_on(&handles.iter().collect::<Vec<_>>(), NodeId(5)).await;

    // {1,2,3} | {4,5}: without a quorum, each side has its own leader.
    network.partition(&members[..3], &members[3..]);
    agree_on(&handles[..3].iter().collect::<Vec<_>>(), NodeId(3)).await;
    agree_on(&handles[3..].iter().collect::<Vec<_>>(), NodeId(5)).await;

    // After the heal everyone follows 5 again, within the settle bound.
    network.heal();
    let took = agree_on(&handles.iter().collect::<Vec<_>>(), NodeId(5)).await;
    let bound = config().settle_bound(members.len());
    assert!(took <= bound, "settling took {took:?}, bound {bound:?}");
}

#[tokio::test(start_paused = true)]
async fn a_lossy_slow_network_still_elects_the_highest() {
    let members = ids(4);
    let network = MemNetwork::with_seed(7);
    network.set_delay(Duration::from_millis(3));
    network.set_drop_rate(0.1);
    let handles = start_all(&network, &members);
    agree_on(&handles.iter().collect::<Vec<_>>(), NodeId(4)).await;
    assert!(network.stats().lost > 0, "the drop rate dropped nothing");
}

#[tokio::test(start_paused = true)]
async fn dropping_the_handle_stops_the_task_and_the_leader_resigns() {
    let members = ids(2);
    let network = MemNetwork::new();
    let one = start(&network, NodeId(1), &members);
    let two = start(&network, NodeId(2), &members);
    agree_on(&[&one, &two], NodeId(2)).await;

    let mut watch = two.leader_watch();
    drop(two);
    // The task publishes its resignation, then ends: the watch closes.
    while watch.changed().await.is_ok() {}
    assert_eq!(*watch.borrow(), None);

    // 1 heard the Resign and leads without waiting out a leader timeout.
    let took = agree_on(&[&one], NodeId(1)).await;
    assert!(took < config().leader_timeout(), "took {took:?}");
    assert!(one.stats().await.unwrap().node.received[bully_core::MessageKind::Resign] == 1);
}

#[tokio::test(start_paused = true)]
async fn a_stopped_task_reports_itself_stopped() {
    let network = MemNetwork::new();
    let handle = start(&network, NodeId(1), &[NodeId(1)]);
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

    let members = ids(3);
    let network = MemNetwork::new();
    let saved: Arc<Mutex<Vec<DurableState>>> = Arc::default();
    let persist_into = |saved: &Arc<Mutex<Vec<DurableState>>>| {
        let saved = saved.clone();
        move |state| saved.lock().unwrap().push(state)
    };
    let mut handles: Vec<Handle> = members[..2]
        .iter()
        .map(|&id| start(&network, id, &members))
        .collect();
    let node = Node::new(NodeId(3), members.clone(), config()).unwrap();
    handles.push(bully_tokio::spawn_persisting(
        node,
        network.endpoint(NodeId(3)),
        persist_into(&saved),
    ));
    agree_on(&handles.iter().collect::<Vec<_>>(), NodeId(3)).await;

    // 3 crashes; 2 takes over in a later term.
    handles.pop().unwrap().abort().await;
    agree_on(&handles.iter().collect::<Vec<_>>(), NodeId(2)).await;
    let refused_before: u64 = stale_drops(&handles).await;

    // 3 restarts from what it persisted: its terms only ever grew.
    let states = saved.lock().unwrap().clone();
    assert!(!states.is_empty());
    assert!(
        states.windows(2).all(|pair| pair[0].term <= pair[1].term),
        "{states:?}"
    );
    let last = *states.last().unwrap();
    let node = Node::with_durable_state(NodeId(3), members.clone(), config(), last).unwrap();
    handles.push(bully_tokio::spawn_persisting(
        node,
        network.endpoint(NodeId(3)),
        persist_into(&saved),
    ));
    agree_on(&handles.iter().collect::<Vec<_>>(), NodeId(3)).await;

    // It resumed above its old term, so nobody had to refuse a stale claim from it.
    assert_eq!(stale_drops(&handles[..2]).await, refused_before);

    async fn stale_drops(handles: &[Handle]) -> u64 {
        let mut total = 0;
        for handle in handles {
            total += handle.stats().await.unwrap().node.dropped[DropReason::StaleLeader];
        }
        total
    }
}

#[tokio::test(start_paused = true)]
async fn with_a_majority_quorum_the_minority_side_of_a_partition_has_no_leader() {
    use bully_core::Quorum;

    let members = ids(5);
    let network = MemNetwork::new();
    let handles: Vec<Handle> = members
        .iter()
        .map(|&id| {
            let config = config().with_quorum(Quorum::Majority);
            let node = Node::new(id, members.iter().copied(), config).unwrap();
            bully_tokio::spawn(node, network.endpoint(id))
        })
        .collect();
    agree_on(&handles.iter().collect::<Vec<_>>(), NodeId(5)).await;

    // {1,2,3} | {4,5}: the majority elects 3; 4 and 5, two of five, cannot lead.
    network.partition(&members[..3], &members[3..]);
    agree_on(&handles[..3].iter().collect::<Vec<_>>(), NodeId(3)).await;
    tokio::time::sleep(config().settle_bound(members.len())).await;
    for handle in &handles[3..] {
        let leader = handle.leader();
        assert_eq!(
            leader,
            None,
            "node {} leads or follows without a majority",
            handle.id()
        );
    }

    network.heal();
    let took = agree_on(&handles.iter().collect::<Vec<_>>(), NodeId(5)).await;
    let bound = config()
        .with_quorum(Quorum::Majority)
        .settle_bound(members.len());
    assert!(took <= bound, "settling took {took:?}, bound {bound:?}");
}

#[tokio::test(start_paused = true)]
async fn an_abstaining_leader_stays_aside_for_its_abstention_then_takes_back() {
    let members = ids(3);
    let network = MemNetwork::new();
    let handles = start_all(&network, &members);
    agree_on(&handles.iter().collect::<Vec<_>>(), NodeId(3)).await;

    // 3's work keeps failing: it steps aside for ten leader timeouts.
    let abstention = config().leader_timeout() * 10;
    let asked = Instant::now();
    assert!(handles[2].abstain_for(abstention).await.unwrap(), "3 led");
    agree_on(&handles.iter().collect::<Vec<_>>(), NodeId(2)).await;

    // However long 2 leads meanwhile, 3 does not take back before the end.
    let mut three = handles[2].leader_watch();
    let took_back = tokio::time::timeout(
        abstention.saturating_sub(asked.elapsed()) - Duration::from_millis(1),
        three.wait_for(|leader| leader.is_some_and(|l| l.id == NodeId(3))),
    )
    .await;
    assert!(took_back.is_err(), "3 led again during its abstention");

    // Afterwards it does (preemption Always), within a failover.
    agree_on(&handles.iter().collect::<Vec<_>>(), NodeId(3)).await;
    let back = asked.elapsed();
    let bound = abstention + config().failover_bound(members.len());
    assert!(
        back >= abstention && back <= bound,
        "took back after {back:?}"
    );
}
