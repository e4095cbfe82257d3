//! The observer's side of `zkr takeover` (see `crate::takeover`): `/zkr/takeover` on its
//! AdminServer, served only by a zkr observer of a ZooKeeper ensemble, outside ZooKeeper's
//! `/commands`.
//!
//! - `GET [?probe=1]` answers `{"myid", "zxid", "following", "leader", "silent_ms"}` (what the
//!   tool picks the seed by), with `probe=1` also `"participants"`: what this observer's own
//!   probe of ZooKeeper's participants found (what the other observers' checks ask). Read-only,
//!   no authentication, as ZooKeeper's read-only commands.
//! - `POST ?seed=S&members=A,B,C[&check=1]` with the ZooKeeper log proof as its body changes
//!   state: it needs admin authentication (ALL on `/`, `auth`), then this observer runs every
//!   check itself (`takeover::guard`) and refuses with all the reasons it found. `check=1`
//!   asks the other observers too and remembers the plan; the accept (without `check`) must
//!   follow such a check of the same plan and proof, and `zkr serve` then stops and carries the
//!   plan out (`takeover::convert`).

use super::auth::{Gate, ALL_ON_ROOT};
use super::listener::Peer;
use crate::raft::members::Ensemble;
use crate::security::quorum_tls::QuorumTls;
use crate::server::ops::Ops;
use crate::takeover::guard::{self, Heard, LogProof, ObserverState, ProbedParticipant};
use crate::takeover::http::AdminClient;
use crate::takeover::probe::{self, Participant};
use crate::takeover::{admin_addr, parse_members, plan_error, Plan, Slot};
use axum::body::Bytes;
use axum::extract::{ConnectInfo, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// How long another observer gets to answer (its probe of the participants included).
const ASK_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Clone)]
struct Shared {
    ops: Arc<Ops>,
    slot: Arc<Slot>,
    gate: Arc<Gate>,
    /// To ask the other observers' AdminServers, as this one is served (HTTPS or not).
    others: AdminClient,
    /// One probe of the participants at a time, however many ask.
    probing: Arc<tokio::sync::Mutex<()>>,
}

/// The `/zkr/takeover` route, merged into an observer's AdminServer; `tls`: the AdminServers
/// serve HTTPS with these stores (the other observers are asked the same way).
pub fn router(ops: Arc<Ops>, slot: Arc<Slot>, tls: Option<Arc<QuorumTls>>) -> Router {
    let gate = Arc::new(Gate::new(ops.clone()));
    let others = AdminClient::new(tls, None, ASK_TIMEOUT);
    let probing = Arc::default();
    Router::new().route("/zkr/takeover", get(state).post(accept)).with_state(Shared {
        ops,
        slot,
        gate,
        others,
        probing,
    })
}

async fn state(State(s): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Json<ObserverState> {
    let found = match s.ops.cfg.ensemble.clone().filter(|_| q.contains_key("probe")) {
        Some(ens) => Some(probe_participants(&s, ens).await),
        None => None,
    };
    Json(own_state(&s, s.ops.core_stats().await.last_zxid, found.as_deref()))
}

fn own_state(s: &Shared, zxid: i64, found: Option<&[Participant]>) -> ObserverState {
    let (following, leader, silent) = match &s.ops.observer {
        Some(st) => (st.is_synced(), st.leader().0, st.silent_for()),
        None => (false, -1, Duration::ZERO),
    };
    ObserverState {
        myid: s.ops.cfg.ensemble.as_ref().map_or(0, |e| e.my_id),
        zxid,
        following,
        leader,
        silent_ms: silent.as_millis() as u64,
        participants: found.map(|f| f.iter().map(ProbedParticipant::from).collect()),
    }
}

async fn probe_participants(s: &Shared, ens: Ensemble) -> Vec<Participant> {
    let _one = s.probing.lock().await;
    tokio::task::spawn_blocking(move || probe::probe(&ens)).await.unwrap_or_default()
}

async fn accept(
    State(s): State<Shared>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
    body: Bytes,
) -> Response {
    if let Err(refused) = s.gate.check("takeover", ALL_ON_ROOT, &headers, &peer).await {
        return refused;
    }
    let check = q.contains_key("check");
    match decide(&s, &q, &body, check).await {
        Err(reasons) => {
            let why = reasons.join("; ");
            tracing::warn!(client = %peer.addr, "takeover refused: {why}");
            let body = json!({ "command": "takeover", "accepted": false, "error": why });
            (StatusCode::CONFLICT, Json(body)).into_response()
        }
        Ok((plan, role)) if check => {
            tracing::info!(client = %peer.addr, seed = plan.seed, members = ?plan.members, role, "takeover plan checked");
            Json(json!({ "command": "takeover", "accepted": false, "checked": true, "role": role })).into_response()
        }
        Ok((plan, role)) => {
            if !s.slot.offer(plan.clone()) {
                let why = "a takeover is already under way on this server";
                let body = json!({ "command": "takeover", "accepted": false, "error": why });
                return (StatusCode::CONFLICT, Json(body)).into_response();
            }
            tracing::info!(client = %peer.addr, seed = plan.seed, members = ?plan.members, role, "takeover accepted: stopping to become a member of the zkr ensemble");
            Json(json!({ "command": "takeover", "accepted": true, "role": role })).into_response()
        }
    }
}

/// Every check for this request; Ok: the plan and this observer's role in it, Err: every
/// reason to refuse.
async fn decide(
    s: &Shared,
    q: &HashMap<String, String>,
    body: &[u8],
    check: bool,
) -> Result<(Plan, &'static str), Vec<String>> {
    let Some(ens) = s.ops.cfg.ensemble.clone().filter(|_| s.ops.cfg.zab_observer) else {
        return Err(vec!["this server is not an observer of a ZooKeeper ensemble".into()]);
    };
    let seed = q.get("seed").and_then(|v| v.parse::<u64>().ok());
    let members = q.get("members").and_then(|v| parse_members(v));
    let (Some(seed), Some(members)) = (seed, members) else {
        return Err(vec!["the plan needs seed=<myid> and members=<myid>,<myid>,...".into()]);
    };
    let plan = Plan { seed, members };
    if let Some(why) = plan_error(&ens, &plan) {
        return Err(vec![why]);
    }
    let (proof, bound) = match LogProof::from_body(body).and_then(|p| p.committed(&ens).map(|b| (p, b))) {
        Ok(p) => p,
        Err(e) => return Err(vec![e.to_string()]),
    };
    let following = s.ops.observer.as_ref().filter(|st| st.is_synced()).map(|st| st.leader().0);
    let silent = s.ops.observer.as_ref().map_or(Duration::ZERO, |st| st.silent_for());
    let session_timeout = Duration::from_millis(u64::from(s.ops.cfg.max_session_timeout_ms));
    let found = probe_participants(s, ens.clone()).await;
    let mut reasons = guard::local_reasons(following, &found, silent, session_timeout);
    let zxid = s.ops.core_stats().await.last_zxid;
    if check {
        let seen = ask_observers(s, &ens, zxid, &found).await;
        reasons.extend(guard::ensemble_reasons(&plan, bound, &seen));
    } else {
        if !s.slot.was_checked(&plan, &proof) {
            reasons.push(format!(
                "this plan with this log proof was not checked here within {} s: send it with check=1 first",
                crate::takeover::CHECK_VALID_FOR.as_secs()
            ));
        }
        if plan.seed == ens.my_id {
            reasons.extend(guard::seed_reason(plan.seed, zxid, bound));
        }
    }
    if !reasons.is_empty() {
        return Err(reasons);
    }
    if check {
        s.slot.checked(&plan, &proof);
    }
    Ok((plan.clone(), if plan.seed == ens.my_id { "seed" } else { "member" }))
}

/// Every observer of the zoo.cfg as it answers `GET /zkr/takeover?probe=1` (this one from
/// here), all asked at once.
async fn ask_observers(s: &Shared, ens: &Ensemble, zxid: i64, found: &[Participant]) -> Vec<(u64, Heard)> {
    let port = s.ops.cfg.admin_port;
    let asks = crate::takeover::observers(ens).into_iter().map(|id| async move {
        if id == ens.my_id {
            return (id, Heard::Answered(own_state(s, zxid, Some(found))));
        }
        let addr = admin_addr(ens, id, port);
        let heard = match s.others.request(&addr, "GET", "/zkr/takeover?probe=1", None).await {
            Ok((200, body)) => match serde_json::from_str::<ObserverState>(&body) {
                Ok(st) if st.participants.is_some() => Heard::Answered(st),
                Ok(_) => Heard::Silent(format!("{addr} answered without its probe of the participants")),
                Err(e) => Heard::Silent(format!("{addr} answered {body:?}: {e}")),
            },
            Ok((code, body)) => Heard::Silent(format!("{addr}: HTTP {code} for /zkr/takeover: {}", body.trim())),
            Err(e) => Heard::Silent(e.to_string()),
        };
        (id, heard)
    });
    futures::future::join_all(asks).await
}
