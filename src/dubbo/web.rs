//! The read-only Dubbo web page: `/dubbo` (one self-contained HTML page, inline CSS and JS) and
//! the JSON it polls for live refresh:
//!
//! ```text
//! GET /dubbo                                   the page
//! GET /dubbo/api/services                      services + application instances (as `zkr dubbo services --json`)
//! GET /dubbo/api/providers?interface=<iface>   as `zkr dubbo providers <iface> --json`
//! GET /dubbo/api/consumers?interface=<iface>   as `zkr dubbo consumers <iface> --json`
//! GET /dubbo/api/config                        as `zkr dubbo config --json`
//! ```
//!
//! Framework-agnostic core (`DubboWeb::handle`: path and query in, `HttpReply` out) plus an axum
//! `Router` around it for the admin port. The data is read over the client protocol from the
//! server at `zk`, through one long-lived session that is replaced if it ends. Never writes.

use super::model::{self, Category, Roots};
use super::url::decode;
use super::zk::{Zk, ZkError};
use serde::Serialize;
use std::net::SocketAddr;
use std::sync::Arc;

const PAGE: &str = include_str!("page.html");

/// A complete HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpReply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl HttpReply {
    fn json<T: Serialize>(status: u16, value: &T) -> HttpReply {
        let body = serde_json::to_vec_pretty(value).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}").into_bytes());
        HttpReply { status, content_type: "application/json", body }
    }

    fn error(status: u16, message: &str) -> HttpReply {
        HttpReply::json(status, &serde_json::json!({ "error": message }))
    }
}

/// The Dubbo view of the ZooKeeper-protocol server at one address.
pub struct DubboWeb {
    zk_addr: SocketAddr,
    roots: Roots,
    session: tokio::sync::Mutex<Option<Arc<Zk>>>,
}

impl DubboWeb {
    pub fn new(zk_addr: SocketAddr) -> DubboWeb {
        DubboWeb { zk_addr, roots: Roots::default(), session: tokio::sync::Mutex::new(None) }
    }

    /// The current session, or a new one if there is none or it has ended.
    async fn zk(&self) -> Result<Arc<Zk>, ZkError> {
        let mut slot = self.session.lock().await;
        if let Some(zk) = slot.as_ref().filter(|z| z.is_usable()) {
            return Ok(zk.clone());
        }
        let zk = Arc::new(Zk::connect(&self.zk_addr.to_string())?);
        *slot = Some(zk.clone());
        Ok(zk)
    }

    /// Answers `GET path_and_query`; `None` for paths that are not the Dubbo view's.
    pub async fn handle(&self, path_and_query: &str) -> Option<HttpReply> {
        let (path, query) = path_and_query.split_once('?').unwrap_or((path_and_query, ""));
        let path = path.trim_end_matches('/');
        if path == "/dubbo" {
            return Some(HttpReply { status: 200, content_type: "text/html; charset=utf-8", body: PAGE.into() });
        }
        let api = path.strip_prefix("/dubbo/api/")?;
        let zk = match self.zk().await {
            Ok(zk) => zk,
            Err(e) => return Some(HttpReply::error(503, &e.to_string())),
        };
        let roots = &self.roots;
        let reply = match api {
            "services" => model::overview(&zk, roots).await.map(|o| HttpReply::json(200, &o)),
            "providers" | "consumers" => {
                let cat = if api == "providers" { Category::Providers } else { Category::Consumers };
                let Some(iface) = query_param(query, "interface") else {
                    return Some(HttpReply::error(400, "missing ?interface="));
                };
                model::registrations(&zk, roots, &iface, cat).await.map(|regs| match regs {
                    Some(list) => HttpReply::json(200, &model::Listing::new(&iface, cat, list)),
                    None => HttpReply::error(404, &format!("no service {iface} under {}", roots.dubbo)),
                })
            }
            "config" => model::config(&zk, roots).await.map(|c| HttpReply::json(200, &c)),
            _ => Ok(HttpReply::error(404, "not found")),
        };
        Some(reply.unwrap_or_else(|e| HttpReply::error(503, &e.to_string())))
    }
}

/// The first value of `key` in a form-encoded query string.
fn query_param(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (decode(k).ok()? == key).then(|| decode(v).ok()).flatten()
    })
}

/// `/dubbo` and `/dubbo/api/*` as an axum router (GET only), to merge into the admin port.
pub fn router(zk: SocketAddr) -> axum::Router {
    use axum::routing::get;
    let web = Arc::new(DubboWeb::new(zk));
    let serve = move |uri: axum::http::Uri| {
        let web = web.clone();
        async move {
            let pq = uri.path_and_query().map_or(uri.path(), |pq| pq.as_str()).to_string();
            let reply = web.handle(&pq).await.unwrap_or_else(|| HttpReply::error(404, "not found"));
            let status =
                axum::http::StatusCode::from_u16(reply.status).unwrap_or(axum::http::StatusCode::INTERNAL_SERVER_ERROR);
            (
                status,
                [
                    (axum::http::header::CONTENT_TYPE, reply.content_type),
                    (axum::http::header::CACHE_CONTROL, "no-store"),
                ],
                reply.body,
            )
        }
    };
    axum::Router::new()
        .route("/dubbo", get(serve.clone()))
        .route("/dubbo/", get(serve.clone()))
        .route("/dubbo/api/{name}", get(serve))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_params_decode() {
        assert_eq!(query_param("a=1&interface=org.x%2EFoo+Bar", "interface").as_deref(), Some("org.x.Foo Bar"));
        assert_eq!(query_param("a=1", "interface"), None);
    }

    #[tokio::test]
    async fn page_and_unknown_paths_need_no_server() {
        // Port 9 (discard) is never a ZooKeeper: the page itself must not depend on one.
        let web = DubboWeb::new("127.0.0.1:9".parse().unwrap());
        let page = web.handle("/dubbo").await.unwrap();
        assert_eq!((page.status, page.content_type), (200, "text/html; charset=utf-8"));
        assert!(String::from_utf8_lossy(&page.body).contains("/api/services"));
        assert!(web.handle("/other").await.is_none());
        assert!(web.handle("/dubboX").await.is_none());
    }
}
