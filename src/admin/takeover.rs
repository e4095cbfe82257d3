//! The observer's side of `zkr takeover` (see `crate::takeover`): `/zkr/takeover` on its
//! AdminServer, served only by a zkr observer of a ZooKeeper ensemble, outside ZooKeeper's
//! `/commands`.
//!
//! - `GET` answers `{"myid", "zxid", "following", "leader"}`: what the tool picks the seed by.
//! - `POST ?seed=S&members=A,B,C[&check=1]` checks the plan here (this server is an observer
//!   that follows no leader, no participant answers, the plan fits this zoo.cfg) and, without
//!   `check`, accepts it: `zkr serve` then stops and carries it out (`takeover::convert`).

use crate::server::ops::Ops;
use crate::takeover::{parse_members, participants_answering, plan_error, Plan, Slot};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Clone)]
struct Shared {
    ops: Arc<Ops>,
    slot: Arc<Slot>,
}

/// The `/zkr/takeover` route, merged into an observer's AdminServer.
pub fn router(ops: Arc<Ops>, slot: Arc<Slot>) -> Router {
    Router::new().route("/zkr/takeover", get(state).post(accept)).with_state(Shared { ops, slot })
}

async fn state(State(s): State<Shared>) -> Json<Value> {
    let core = s.ops.core_stats().await;
    let (following, leader) = match &s.ops.observer {
        Some(st) => (st.is_synced(), st.leader().0),
        None => (false, -1),
    };
    let myid = s.ops.cfg.ensemble.as_ref().map_or(0, |e| e.my_id);
    Json(json!({ "myid": myid, "zxid": core.last_zxid, "following": following, "leader": leader }))
}

async fn accept(State(s): State<Shared>, Query(q): Query<HashMap<String, String>>) -> (StatusCode, Json<Value>) {
    let refuse = |why: String| {
        tracing::warn!("takeover refused: {why}");
        (StatusCode::CONFLICT, Json(json!({ "accepted": false, "error": why })))
    };
    let Some(ens) = s.ops.cfg.ensemble.clone().filter(|_| s.ops.cfg.zab_observer) else {
        return refuse("this server is not an observer of a ZooKeeper ensemble".into());
    };
    let seed = q.get("seed").and_then(|v| v.parse::<u64>().ok());
    let members = q.get("members").and_then(|v| parse_members(v));
    let (Some(seed), Some(members)) = (seed, members) else {
        return refuse("the plan needs seed=<myid> and members=<myid>,<myid>,...".into());
    };
    let plan = Plan { seed, members };
    if let Some(why) = plan_error(&ens, &plan) {
        return refuse(why);
    }
    if let Some(st) = s.ops.observer.as_ref().filter(|st| st.is_synced()) {
        return refuse(format!("this observer still follows ZooKeeper's leader server.{}", st.leader().0));
    }
    let probed = ens.clone();
    let answering = tokio::task::spawn_blocking(move || participants_answering(&probed)).await.unwrap_or_default();
    if !answering.is_empty() {
        return refuse(format!("ZooKeeper participants still answer: {}", answering.join(", ")));
    }
    let role = if plan.seed == ens.my_id { "seed" } else { "member" };
    if q.contains_key("check") {
        return (StatusCode::OK, Json(json!({ "accepted": false, "checked": true, "role": role })));
    }
    if !s.slot.offer(plan.clone()) {
        return refuse("a takeover is already under way on this server".into());
    }
    tracing::info!(seed = plan.seed, members = ?plan.members, role, "takeover accepted: stopping to become a member of the zkr ensemble");
    (StatusCode::OK, Json(json!({ "accepted": true, "role": role })))
}
