//! Reload: on SIGHUP (`systemctl reload`, `kill -HUP`, `bully-agent reload`)
//! the agent reads its configuration file again and applies what changed,
//! without a restart: the job keeps running where it runs.
//!
//! - **Members**: one added or removed per reload, through the driver's
//!   membership changes (`Handle::add_member`, `remove_member`); a member
//!   added while its name does not resolve joins once it does
//!   ([`crate::resolve`]). Other members' new addresses are used at once (an
//!   IP) or after a lookup (a name).
//! - **Keys**: the `[[keys]]` list (the first signs, every one is accepted),
//!   through `Handle::set_auth`, which keeps the replay windows. A rotation is
//!   two reloads of every member: `[old, new]`, then `[new, old]` (and later
//!   `[new]`), and no frame is refused on the way.
//! - **The command's settings** (`[child]` but its container) from its next
//!   run, and the `[names]` table from the resolver's next turn.
//!
//! What may not change is listed in [`Plan`]'s module. A file that does not
//! load, or asks for a change that cannot be made, is refused whole: one
//! `error:` line in the log, nothing applied, the running configuration kept.
//! If the node refuses a membership change (the quorum could not be met), a
//! key change made before it is undone.

use std::sync::Arc;

use bully_tokio::CancellationToken;
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::config::{self, Settings};
use crate::resolve::{Entry, Resolve, lookup};
use crate::view::View;

pub mod command;
mod plan;

pub use plan::Plan;

/// SIGHUP, caught: registered at start, so that a reload sent early does not
/// end the agent (SIGHUP's default action).
pub fn hangups() -> std::io::Result<Signal> {
    signal(SignalKind::hangup())
}

/// Reloads at every SIGHUP until `stop`, starting from `running`.
pub async fn serve(
    mut hangups: Signal,
    mut running: Settings,
    view: Arc<View>,
    resolver: Arc<dyn Resolve>,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            received = hangups.recv() => if received.is_none() { return },
        }
        tracing::info!(file = %running.file.display(), "SIGHUP: reloading the configuration");
        reload(&mut running, &view, &resolver).await;
    }
}

/// Reads the file again and applies it, or refuses it (see the module docs).
/// Returns whether it was applied.
pub async fn reload(running: &mut Settings, view: &View, resolver: &Arc<dyn Resolve>) -> bool {
    let outcome = match config::load_as(&running.file, running.id_override) {
        Ok(new) => match Plan::between(running, &new) {
            Ok(plan) => apply(&plan, running, &new, view, resolver)
                .await
                .map(|()| (plan, new)),
            Err(error) => Err(error.to_string()),
        },
        Err(error) => Err(error.to_string()),
    };
    match outcome {
        Ok((plan, new)) => {
            tracing::info!("configuration reloaded: {}", describe(&plan));
            *running = new;
            view.update_config(|status| {
                status.reloads += 1;
                status.last_error = None;
                status.signing_key = running.keys[0].id.0;
                status.keys = running.keys.iter().map(|key| key.id.0).collect();
            });
            true
        }
        Err(error) => {
            // One line: what an operator greps for after a reload.
            tracing::error!(
                "error: {}: reload refused, the running configuration is kept: {error}",
                running.file.display()
            );
            view.update_config(|status| {
                status.refused += 1;
                status.last_error = Some(error);
            });
            false
        }
    }
}

/// Applies `plan` (checked) through the driver: the keys, then the
/// membership (undoing the keys if the node refuses it), then the rest.
async fn apply(
    plan: &Plan,
    running: &Settings,
    new: &Settings,
    view: &View,
    resolver: &Arc<dyn Resolve>,
) -> Result<(), String> {
    let handle = &view.handle;
    let mut book = view.book.lock().await;
    if plan.keys.is_some() {
        let auth = new.auth().map_err(|error| format!("`keys`: {error}"))?;
        handle
            .set_auth(auth)
            .await
            .map_err(|error| format!("`keys`: {error}"))?;
    }
    let membership: Result<(), String> = async {
        if let Some(id) = plan.removed {
            let pending = book.get(&id).is_some_and(|entry| entry.pending);
            // A pending member was never added to the node.
            if !pending {
                handle
                    .remove_member(id)
                    .await
                    .map_err(|error| format!("`members`: removing {id}: {error}"))?;
            }
            book.remove(&id);
        }
        if let Some(member) = &plan.added {
            match lookup(resolver, &member.address, Some(view.book.bound())).await {
                Ok(found) => {
                    handle
                        .add_member(member.id, found)
                        .await
                        .map_err(|error| format!("`members`: adding {}: {error}", member.id))?;
                    book.insert(member.id, Entry::new(member.address.clone(), Ok(found)));
                }
                Err(error) => {
                    tracing::warn!(
                        member = %member.id,
                        address = %member.address,
                        %error,
                        "the new member's name does not resolve: it joins once it does"
                    );
                    book.insert(member.id, Entry::pending(member.address.clone(), error));
                }
            }
        }
        Ok(())
    }
    .await;
    if let Err(error) = membership {
        if plan.keys.is_some() {
            let undone = match running.auth() {
                Ok(auth) => handle.set_auth(auth).await.map_err(|e| e.to_string()),
                Err(error) => Err(error.to_string()),
            };
            if let Err(undo) = undone {
                tracing::error!(%undo, "the keys could not be put back");
            }
        }
        return Err(error);
    }
    for member in &plan.readdressed {
        let Some(entry) = book.get_mut(&member.id) else {
            continue;
        };
        entry.readdress(member.address.clone());
        if let Some(ip) = member.address.ip() {
            let result = if entry.pending {
                handle.add_member(member.id, ip).await
            } else {
                handle.set_member_address(member.id, ip).await
            };
            match result {
                Ok(()) => entry.pending = false,
                Err(error) => entry.error = Some(error.to_string()),
            }
        }
    }
    drop(book);
    view.set_policies(new.child, new.names);
    if plan.added.is_some() || !plan.readdressed.is_empty() {
        view.book.wake();
    }
    Ok(())
}

/// The plan in a few words, for the log.
fn describe(plan: &Plan) -> String {
    let mut parts = Vec::new();
    if let Some(member) = &plan.added {
        parts.push(format!("member {} added ({})", member.id, member.address));
    }
    if let Some(id) = plan.removed {
        parts.push(format!("member {id} removed"));
    }
    for member in &plan.readdressed {
        parts.push(format!("member {} at {}", member.id, member.address));
    }
    if let Some(keys) = &plan.keys {
        let ids: Vec<String> = keys.iter().map(|key| key.id.to_string()).collect();
        parts.push(format!(
            "keys: signing with {}, accepting {}",
            ids[0],
            ids.join(", ")
        ));
    }
    if plan.child.is_some() {
        parts.push("[child] settings changed (from the next run)".to_owned());
    }
    if plan.names.is_some() {
        parts.push("[names] settings changed".to_owned());
    }
    if parts.is_empty() {
        "nothing changed".to_owned()
    } else {
        parts.join("; ")
    }
}
