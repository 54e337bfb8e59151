//! The resolver's unit tests: a name table the test edits stands in for DNS,
//! and a real driver over the in-memory network takes the addresses.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bully_core::{CommandError, Config, Node, NodeId};
use bully_tokio::{CancellationToken, ChangeError, Handle, MemNetwork};

use super::*;

/// Names the test adds, changes and removes; anything else does not resolve.
#[derive(Default)]
struct Table(Mutex<BTreeMap<String, Vec<SocketAddr>>>);

impl Table {
    fn set(&self, host: &str, addresses: &[&str]) {
        self.0.lock().unwrap().insert(
            host.to_owned(),
            addresses.iter().map(|a| a.parse().unwrap()).collect(),
        );
    }
    fn remove(&self, host: &str) {
        self.0.lock().unwrap().remove(host);
    }
}

impl Resolve for Table {
    fn lookup(&self, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
        match self.0.lock().unwrap().get(host) {
            Some(found) => Ok(found
                .iter()
                .map(|address| SocketAddr::new(address.ip(), port))
                .collect()),
            None => Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{host}: no such name"),
            )),
        }
    }
}

fn name(host: &str) -> Address {
    Address::Name {
        host: host.to_owned(),
        port: 7070,
    }
}

const POLICY: NamesPolicy = NamesPolicy {
    refresh: Duration::from_millis(400),
    retry: Duration::from_millis(100),
};

/// Node 1 of members 1, 2, 3 over the in-memory network.
fn node_one(network: &MemNetwork) -> Handle {
    let node = Node::new(
        NodeId(1),
        [NodeId(1), NodeId(2), NodeId(3)],
        Config::default(),
    )
    .unwrap();
    bully_tokio::spawn(node, network.endpoint(NodeId(1)))
}

fn setup() -> (Arc<Table>, Arc<dyn Resolve>) {
    let table = Arc::new(Table::default());
    let resolver: Arc<dyn Resolve> = table.clone();
    (table, resolver)
}

const BOUND: &str = "127.0.0.1:7070";

#[tokio::test]
async fn a_name_that_resolves_late_is_found_and_one_that_moves_is_followed() {
    let (table, resolver) = setup();
    table.set("two", &["10.0.0.2:0"]);
    let members = [
        Member {
            id: NodeId(1),
            address: name("one"),
        },
        Member {
            id: NodeId(2),
            address: name("two"),
        },
        Member {
            id: NodeId(3),
            address: name("three"),
        },
    ];
    // At start 3 does not resolve: a member all the same, with no address.
    let entries = at_start(&members, NodeId(1), &resolver, BOUND.parse().unwrap()).await;
    assert_eq!(entries.len(), 2, "the node itself is not in its book");
    assert_eq!(
        entries[&NodeId(2)].resolved,
        Some("10.0.0.2:7070".parse().unwrap())
    );
    assert_eq!(entries[&NodeId(3)].resolved, None);
    assert!(
        entries[&NodeId(3)]
            .error
            .as_deref()
            .unwrap()
            .contains("no such name")
    );

    let network = MemNetwork::new();
    let handle = node_one(&network);
    let book = Book::new(entries, BOUND.parse().unwrap());
    // Nothing is due yet for 2 (looked up at start); 3 is retried, in vain.
    tokio::time::sleep(POLICY.retry).await;
    assert_eq!(book.refresh(&handle, &resolver, POLICY, false).await, 0);

    // 3's record appears: the next retry finds it.
    table.set("three", &["10.0.0.3:0"]);
    tokio::time::sleep(POLICY.retry).await;
    assert_eq!(book.refresh(&handle, &resolver, POLICY, false).await, 1);
    let entry = book.lock().await[&NodeId(3)].clone();
    assert_eq!(entry.resolved, Some("10.0.0.3:7070".parse().unwrap()));
    assert_eq!(entry.error, None);

    // 2 moves: found at the next refresh of every name (or at once with `all`).
    table.set("two", &["10.0.0.22:0"]);
    assert_eq!(book.refresh(&handle, &resolver, POLICY, true).await, 1);
    assert_eq!(
        book.lock().await[&NodeId(2)].resolved,
        Some("10.0.0.22:7070".parse().unwrap())
    );

    // 2's record goes away: its last address is kept, the error is shown.
    table.remove("two");
    assert_eq!(book.refresh(&handle, &resolver, POLICY, true).await, 0);
    let entry = book.lock().await[&NodeId(2)].clone();
    assert_eq!(entry.resolved, Some("10.0.0.22:7070".parse().unwrap()));
    assert!(entry.error.is_some());
}

#[tokio::test]
async fn a_pending_member_joins_the_cluster_once_its_name_resolves() {
    let (table, resolver) = setup();
    let network = MemNetwork::new();
    let handle = node_one(&network);
    let mut entries = BTreeMap::new();
    let mut four = Entry::new(name("four"), Err("not yet".to_owned()));
    four.pending = true;
    entries.insert(NodeId(4), four);
    let book = Book::new(entries, BOUND.parse().unwrap());

    assert_eq!(book.refresh(&handle, &resolver, POLICY, true).await, 0);
    assert!(book.lock().await[&NodeId(4)].pending);
    table.set("four", &["10.0.0.4:0"]);
    assert_eq!(book.refresh(&handle, &resolver, POLICY, true).await, 1);
    assert!(!book.lock().await[&NodeId(4)].pending);
    // The node has it as a member now.
    assert!(matches!(
        handle
            .add_member(NodeId(4), "10.0.0.4:7070".parse().unwrap())
            .await,
        Err(ChangeError::Node(CommandError::AlreadyMember(NodeId(4))))
    ));
}

#[tokio::test]
async fn the_maintaining_task_finds_a_late_name_within_the_retry_interval() {
    let (table, resolver) = setup();
    let network = MemNetwork::new();
    let handle = node_one(&network);
    let mut entries = BTreeMap::new();
    entries.insert(
        NodeId(2),
        Entry::new(name("two"), Err("not yet".to_owned())),
    );
    let book = Arc::new(Book::new(entries, BOUND.parse().unwrap()));
    let policy = crate::config::ChildPolicy {
        grace: Duration::from_millis(200),
        on_exit: crate::config::OnExit::Restart,
        restart_delay: Duration::from_millis(200),
        failures: crate::config::FailurePolicy {
            limit: 0,
            min_runtime: Duration::from_secs(1),
            backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(1),
        },
    };
    let view = Arc::new(crate::view::View::new(
        handle,
        book.clone(),
        Arc::default(),
        policy,
        POLICY,
        crate::status::ConfigStatus::default(),
    ));
    let stop = CancellationToken::new();
    let task = tokio::spawn(crate::view::maintain_names(view, resolver, stop.clone()));
    table.set("two", &["[::2]:0", "10.0.0.2:0"]);
    // A generous bound: many retry intervals.
    let mut found = None;
    for _ in 0..100 {
        tokio::time::sleep(POLICY.retry).await;
        found = book.lock().await[&NodeId(2)].resolved;
        if found.is_some() {
            break;
        }
    }
    assert_eq!(
        found,
        Some("10.0.0.2:7070".parse().unwrap()),
        "the IPv4 address, the bound socket's family"
    );
    stop.cancel();
    task.await.unwrap();
}

#[test]
fn a_name_with_both_families_gives_the_bound_sockets() {
    let both: Vec<SocketAddr> = vec!["[::2]:1".parse().unwrap(), "10.0.0.2:1".parse().unwrap()];
    assert_eq!(
        pick(&both, Some("0.0.0.0:1".parse().unwrap())),
        Some(both[1])
    );
    assert_eq!(pick(&both, Some("[::]:1".parse().unwrap())), Some(both[0]));
    assert_eq!(
        pick(&both[..1], Some("0.0.0.0:1".parse().unwrap())),
        Some(both[0])
    );
    assert_eq!(pick(&[], None), None);
}
