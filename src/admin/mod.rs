//! The AdminServer: ZooKeeper's HTTP command interface (`/commands`, `/commands/<name>`) on
//! `admin.serverPort`, plus `/metrics` in Prometheus text format; on a zkr observer of a
//! ZooKeeper ensemble also `/zkr/takeover` (`takeover`).
//!
//! The commands only read through `Ops` (and reset counters on `srst`/`crst`, which ZooKeeper
//! serves without authentication too); only `restore` (`backup`) replaces the tree, through the
//! core. The commands that read the whole tree or change state (`snapshot`, `restore`, the
//! takeover) need ZooKeeper 3.9.4's admin authentication (`auth`). The port speaks HTTP,
//! HTTPS or both, as `admin.forceHttps`/`admin.portUnification` ask (`listener`). Other route
//! trees (e.g. a `/dubbo` view) are merged into `router` with one `.merge(...)` line. As in
//! ZooKeeper, a port that cannot be bound (or HTTPS stores that cannot be loaded) is logged and
//! the server carries on without it.

pub mod auth;
pub mod backup;
mod commands;
pub mod listener;
mod metrics;
mod takeover;

pub use listener::{Mode, Peer};
pub use takeover::router as takeover_router;

use crate::config::Config;
use crate::security::quorum_tls::QuorumTls;
use crate::security::tls::TlsError;
use crate::server::ops::Ops;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Every route of the admin server. Add another tree with `.merge(other_router)` here.
pub fn router(ops: Arc<Ops>) -> Router {
    Router::new()
        .route("/commands", get(index))
        .route("/commands/", get(index))
        .route("/commands/{name}", get(command))
        .route("/metrics", get(metrics))
        .with_state(ops.clone())
        .merge(backup::router(ops))
}

impl Mode {
    /// What `cfg` asks the AdminServer to speak; with HTTPS, its stores are loaded now (an error
    /// names the setting) and reloaded when they change, until `shutdown`.
    pub fn from_config(cfg: &Config, shutdown: &CancellationToken) -> Result<Mode, TlsError> {
        let Some(admin) = &cfg.admin_tls else { return Ok(Mode::Plain) };
        let tls = QuorumTls::load(admin.tls.clone())?;
        tokio::spawn(tls.clone().watch(shutdown.clone(), crate::security::tls::RELOAD_POLL));
        Ok(if admin.https_only { Mode::Https(tls) } else { Mode::Unified(tls) })
    }

    /// The TLS stores, when it speaks HTTPS.
    pub fn tls(&self) -> Option<Arc<QuorumTls>> {
        match self {
            Mode::Plain => None,
            Mode::Https(t) | Mode::Unified(t) => Some(t.clone()),
        }
    }
}

/// Binds and serves until `shutdown`; returns the bound address, or `None` (logged) if the
/// port could not be bound — ZooKeeper's `JettyAdminServer` logs the failure and the server
/// keeps serving clients.
pub async fn serve(app: Router, addr: SocketAddr, mode: Mode, shutdown: CancellationToken) -> Option<SocketAddr> {
    let bound = match tokio::net::TcpListener::bind(addr).await {
        Ok(tcp) => listener::AdminListener::spawn(tcp, mode.clone(), shutdown.clone()),
        Err(e) => Err(e),
    };
    let listener = match bound {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(%addr, "cannot start the AdminServer, continuing without it: {e}");
            return None;
        }
    };
    let bound = axum::serve::Listener::local_addr(&listener).ok()?.addr;
    let scheme = match mode {
        Mode::Plain => "HTTP",
        Mode::Https(_) => "HTTPS only (admin.forceHttps)",
        Mode::Unified(_) => "HTTP and HTTPS (admin.portUnification)",
    };
    tracing::info!(addr = %bound, "AdminServer serving /commands and /metrics, {scheme}");
    tokio::spawn(async move {
        let app = app.into_make_service_with_connect_info::<Peer>();
        let served = axum::serve(listener, app).with_graceful_shutdown(async move { shutdown.cancelled().await }).await;
        if let Err(e) = served {
            tracing::warn!("AdminServer stopped: {e}");
        }
    });
    Some(bound)
}

/// ZooKeeper's PrometheusMetricsProvider endpoint (`metricsProvider.httpHost:httpPort`): only
/// `/metrics`, the path its Jetty servlet is mapped to (anything else is 404, as there).
pub async fn serve_metrics(ops: Arc<Ops>, addr: SocketAddr, shutdown: CancellationToken) -> Option<SocketAddr> {
    let app = Router::new().route("/metrics", get(metrics)).with_state(ops);
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(%addr, "cannot serve Prometheus metrics (metricsProvider.httpPort), continuing without: {e}");
            return None;
        }
    };
    let bound = listener.local_addr().ok()?;
    tracing::info!(addr = %bound, "serving Prometheus /metrics (metricsProvider)");
    tokio::spawn(async move {
        let served = axum::serve(listener, app).with_graceful_shutdown(async move { shutdown.cancelled().await }).await;
        if let Err(e) = served {
            tracing::warn!("metrics endpoint stopped: {e}");
        }
    });
    Some(bound)
}

/// `/commands`: one link per command, as ZooKeeper's CommandListServlet lists them.
async fn index() -> Html<String> {
    let mut out = String::new();
    for name in commands::NAMES {
        out.push_str(&format!("<a href=\"/commands/{name}\">{name}</a>\n<br/>\n"));
    }
    Html(out)
}

async fn command(State(ops): State<Arc<Ops>>, Path(name): Path<String>) -> Response {
    let body = commands::run(&ops, &name).await;
    let text = serde_json::to_string_pretty(&body).unwrap_or_else(|_| "{}".to_owned());
    ([(header::CONTENT_TYPE, "application/json")], text).into_response()
}

async fn metrics(State(ops): State<Arc<Ops>>) -> Response {
    let text = metrics::render(&ops).await;
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text).into_response()
}
