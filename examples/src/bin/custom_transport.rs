//! Plugging your own network into the driver: a `Transport` over TCP, one text
//! line per message. Three nodes on loopback elect 3; 3 leaves; 2 takes over.
//!
//! `cargo run -p bully-examples --bin custom_transport`
//!
//! The same shape fits a message bus (publish to the member's subject) or QUIC.
//! This one does not authenticate: use TLS, or send `bully_core::wire` frames.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use bully_core::{Config, Message, Node, NodeId, Term};
// bully-tokio re-exports the attribute its `Transport` trait is declared with.
use bully_tokio::{Transport, TransportError, async_trait};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::timeout;

/// Sends over one lazily opened TCP connection per peer; receives from a
/// listener whose connections feed one channel (so `recv` is cancel safe).
struct TcpTransport {
    id: NodeId,
    peers: BTreeMap<NodeId, SocketAddr>,
    connections: BTreeMap<NodeId, TcpStream>,
    inbox: mpsc::Receiver<(NodeId, Message)>,
}

impl TcpTransport {
    fn new(id: NodeId, listener: TcpListener, peers: BTreeMap<NodeId, SocketAddr>) -> Self {
        let (tx, inbox) = mpsc::channel(256);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let tx = tx.clone();
                tokio::spawn(async move {
                    let mut lines = BufReader::new(stream).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        // A line we cannot parse is dropped, never fatal.
                        if let Some(received) = decode(&line) {
                            let _ = tx.send(received).await;
                        }
                    }
                });
            }
        });
        TcpTransport {
            id,
            peers,
            connections: BTreeMap::new(),
            inbox,
        }
    }
}

#[async_trait]
impl Transport for TcpTransport {
    async fn send(&mut self, to: NodeId, message: &Message) -> Result<(), TransportError> {
        let line = encode(self.id, message)?;
        if !self.connections.contains_key(&to) {
            let addr = *self
                .peers
                .get(&to)
                .ok_or(TransportError::UnknownMember(to))?;
            // Bounded, so a dead peer never holds up the node's timers for long.
            let stream = timeout(Duration::from_millis(50), TcpStream::connect(addr))
                .await
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
            self.connections.insert(to, stream);
        }
        let stream = self.connections.get_mut(&to).expect("connected above");
        let written = timeout(Duration::from_millis(50), stream.write_all(line.as_bytes())).await;
        if !matches!(written, Ok(Ok(()))) {
            // Reconnect next time; the protocol tolerates the lost message.
            self.connections.remove(&to);
            return Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe).into());
        }
        Ok(())
    }

    async fn recv(&mut self) -> Result<(NodeId, Message), TransportError> {
        self.inbox.recv().await.ok_or(TransportError::Closed)
    }
}

/// `"<from> <kind> <term> <round>\n"`. The classic algorithm's messages only.
fn encode(from: NodeId, message: &Message) -> Result<String, TransportError> {
    let (kind, round) = match message {
        Message::Election { .. } => ("election", 0),
        Message::Answer { .. } => ("answer", 0),
        Message::Coordinator { .. } => ("coordinator", 0),
        Message::Heartbeat { round, .. } => ("heartbeat", *round),
        // Without a quorum a resignation names no successor (it has no
        // acknowledgements to go by), so this format has no word for one.
        Message::Resign {
            successor: None, ..
        } => ("resign", 0),
        other => return Err(TransportError::Encode(format!("{other} is not supported"))),
    };
    Ok(format!("{from} {kind} {} {round}\n", message.term()))
}

fn decode(line: &str) -> Option<(NodeId, Message)> {
    let mut words = line.split(' ');
    let from = NodeId(words.next()?.parse().ok()?);
    let kind = words.next()?;
    let term = Term(words.next()?.parse().ok()?);
    let round = words.next()?.parse().ok()?;
    let message = match kind {
        "election" => Message::Election { term },
        "answer" => Message::Answer { term },
        "coordinator" => Message::Coordinator { term, round: 0 },
        "heartbeat" => Message::Heartbeat { term, round },
        "resign" => Message::Resign {
            term,
            successor: None,
        },
        _ => return None,
    };
    Some((from, message))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let members = [NodeId(1), NodeId(2), NodeId(3)];
    let mut listeners = Vec::new();
    let mut peers = BTreeMap::new();
    for id in members {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        peers.insert(id, listener.local_addr()?);
        listeners.push(listener);
    }
    let mut handles = Vec::new();
    for (id, listener) in members.into_iter().zip(listeners) {
        let transport = TcpTransport::new(id, listener, peers.clone());
        println!("node {id} on tcp://{}", peers[&id]);
        handles.push(bully_tokio::spawn(
            Node::new(id, members, Config::default())?,
            transport,
        ));
    }

    let mut watch = handles[0].leader_watch();
    let is = |id| move |l: &Option<bully_core::Leader>| l.is_some_and(|l| l.id == NodeId(id));
    println!("leader: {}", watch.wait_for(is(3)).await?.expect("some"));
    println!("node 3 shuts down gracefully (it resigns over TCP)...");
    handles.pop().expect("three handles").shutdown().await?;
    println!(
        "new leader: {}",
        watch.wait_for(is(2)).await?.expect("some")
    );
    for handle in handles {
        handle.shutdown().await?;
    }
    Ok(())
}
