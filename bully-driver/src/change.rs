//! Membership and key changes at runtime: [`apply`] carries a [`Change`] out on
//! the node and on the transport's table of [`Peers`], in the order that keeps
//! both consistent.

use std::net::SocketAddr;

use bully_core::CommandError;
use bully_core::Instant;
use bully_core::Node;
use bully_core::NodeId;
use bully_core::wire::Auth;

use crate::error::ChangeError;

/// A change to the cluster or its keys, asked of a running driver.
#[derive(Debug)]
#[non_exhaustive]
pub enum Change {
    /// Add `member`, reachable at `address` ([`Node::add_member`]).
    AddMember {
        /// The new member.
        member: NodeId,
        /// Where the transport reaches it.
        address: SocketAddr,
    },
    /// Remove `member` ([`Node::remove_member`]).
    RemoveMember(NodeId),
    /// Send to `member`, already a member, at `address` from now on: the node is
    /// not told.
    SetMemberAddress {
        /// The member that moved.
        member: NodeId,
        /// Its new address.
        address: SocketAddr,
    },
    /// Replace the keys that authenticate frames, one step of a rotation: the
    /// node is not told.
    SetAuth(Box<Auth>),
}

/// The part of a transport a [`Change`] reaches: its table of peers and its keys.
/// Each driver implements it for its own `Transport`.
pub trait Peers {
    /// The transport's error.
    type Error;

    /// Starts reaching `member`, added to the cluster, at `address`.
    fn add_peer(&mut self, member: NodeId, address: SocketAddr) -> Result<(), Self::Error>;

    /// Stops reaching `member`, removed from the cluster.
    fn remove_peer(&mut self, member: NodeId) -> Result<(), Self::Error>;

    /// Reaches `member`, already a member, at `address` from now on.
    fn set_peer_address(&mut self, member: NodeId, address: SocketAddr) -> Result<(), Self::Error>;

    /// Replaces the keys.
    fn set_auth(&mut self, auth: Auth) -> Result<(), Self::Error>;
}

/// Carries `change` out at `now`. Nothing changes where it errs:
///
/// - Adding: the transport first, so the node's first message to the member has
///   a route; if the node then refuses, the transport forgets the member again.
///   A member already there is refused before the transport is touched.
/// - Removing: the node first, so it sends the member nothing more; the
///   transport then refuses what the member sends. Nothing changes if the node
///   refuses.
/// - A new address: only for a member other than this node; the transport only.
/// - Keys: the transport only.
pub fn apply<P: Peers + ?Sized>(
    node: &mut Node,
    peers: &mut P,
    now: Instant,
    change: Change,
) -> Result<(), ChangeError<P::Error>> {
    match change {
        Change::AddMember { member, address } => {
            if node.members().binary_search(&member).is_ok() {
                return Err(CommandError::AlreadyMember(member).into());
            }
            peers
                .add_peer(member, address)
                .map_err(ChangeError::Transport)?;
            if let Err(error) = node.add_member(now, member) {
                // The transport's answer changes nothing: the node's refusal is
                // what the caller needs to hear.
                let _ = peers.remove_peer(member);
                return Err(error.into());
            }
            Ok(())
        }
        Change::RemoveMember(member) => {
            node.remove_member(now, member)?;
            peers.remove_peer(member).map_err(ChangeError::Transport)
        }
        Change::SetMemberAddress { member, address } => {
            if member == node.id() {
                return Err(CommandError::SelfReference(member).into());
            }
            if node.members().binary_search(&member).is_err() {
                return Err(CommandError::UnknownMember(member).into());
            }
            peers
                .set_peer_address(member, address)
                .map_err(ChangeError::Transport)
        }
        Change::SetAuth(auth) => peers.set_auth(*auth).map_err(ChangeError::Transport),
    }
}
