//! What the Dubbo view shows, read from a registry tree: services (by Dubbo service key
//! `group/interface:version`), their providers and consumers decoded from the node names,
//! application instances under `/services`, and the config centre.
//!
//! Layout read (Dubbo's `ZookeeperRegistry` and `ZookeeperServiceDiscovery`):
//! ```text
//! /dubbo/<interface>/providers/<URLEncoder.encode(url.toFullString())>   ephemeral (dynamic=true)
//! /dubbo/<interface>/consumers/<...>                                     ephemeral
//! /dubbo/<interface>/configurators/<...>, /routers/<...>                 override / route URLs
//! /dubbo/config/<group>/<key>                                            config centre values
//! /dubbo/metadata/...                                                    metadata report
//! /services/<app>/<host:port>                                            Curator ServiceInstance JSON
//! ```
//! Only reads; every value from the tree may be malformed and is shown with its error, never
//! trusted.

use super::url::{decode, DubboUrl};
use super::zk::{join, Zk, ZkError};
use crate::proto::Stat;
use futures::stream::{self, StreamExt, TryStreamExt};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Dubbo's default provider weight (`Constants.DEFAULT_WEIGHT`) when the URL sets none.
pub const DEFAULT_WEIGHT: i64 = 100;
/// Requests kept in flight at once while reading many nodes.
const READ_AHEAD: usize = 32;
/// Most nodes walked under the config centre and metadata roots.
const WALK_LIMIT: usize = 10_000;

/// Where the registry keeps things: Dubbo's `registry.group` root and Curator's base path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    pub dubbo: String,
    pub services: String,
}

impl Default for Roots {
    fn default() -> Roots {
        Roots { dubbo: "/dubbo".into(), services: "/services".into() }
    }
}

/// Which directory under an interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    Providers,
    Consumers,
}

impl Category {
    pub fn dir(self) -> &'static str {
        match self {
            Category::Providers => "providers",
            Category::Consumers => "consumers",
        }
    }
}

/// A provider or consumer node, decoded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Registration {
    pub protocol: String,
    pub address: String,
    pub application: Option<String>,
    /// Absent: no group (Dubbo's default).
    pub group: Option<String>,
    /// Absent: no version (Dubbo's default).
    pub version: Option<String>,
    pub methods: Vec<String>,
    /// The `weight` parameter, else Dubbo's default 100.
    pub weight: i64,
    /// The `timestamp` parameter: milliseconds since the epoch when the URL was exported.
    pub timestamp: Option<i64>,
    /// The node's ephemeralOwner (`0x…`), absent for a persistent (dynamic=false) node.
    pub session: Option<String>,
    /// The decoded URL (`url.toFullString()`).
    pub url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One Dubbo service: an interface with a group and a version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServiceRow {
    /// `URL.getServiceKey()`: `group/interface:version`, each part only when set.
    pub service: String,
    pub interface: String,
    pub group: Option<String>,
    pub version: Option<String>,
    pub providers: usize,
    pub consumers: usize,
    pub provider_applications: Vec<String>,
    pub consumer_applications: Vec<String>,
}

/// An application instance (`/services/<app>/<id>`, Curator x-discovery JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Instance {
    pub application: String,
    pub id: String,
    pub address: String,
    pub port: Option<u16>,
    /// `dubbo.endpoints` of the payload metadata as `protocol:port`.
    pub endpoints: Vec<String>,
    /// `dubbo.metadata.revision`.
    pub revision: Option<String>,
    /// `registrationTimeUTC`, milliseconds.
    pub registered: Option<i64>,
    pub session: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The providers or consumers of one interface (`providers --json`, `/dubbo/api/providers`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listing {
    pub interface: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub providers: Option<Vec<Registration>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumers: Option<Vec<Registration>>,
}

impl Listing {
    pub fn new(interface: &str, cat: Category, regs: Vec<Registration>) -> Listing {
        let (providers, consumers) = match cat {
            Category::Providers => (Some(regs), None),
            Category::Consumers => (None, Some(regs)),
        };
        Listing { interface: interface.to_string(), providers, consumers }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Overview {
    pub root: String,
    pub services: Vec<ServiceRow>,
    pub instances: Vec<Instance>,
}

/// A node of the config centre or the metadata report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigEntry {
    pub path: String,
    pub bytes: usize,
    pub data: String,
}

/// An override or route URL under `<interface>/configurators` or `<interface>/routers`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    pub interface: String,
    pub category: String,
    pub url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigView {
    pub config: Vec<ConfigEntry>,
    pub rules: Vec<Rule>,
    pub metadata: Vec<ConfigEntry>,
}

/// `0x…` of an ephemeral owner; `None` for a persistent node.
pub fn session_hex(stat: &Stat) -> Option<String> {
    (stat.ephemeral_owner != 0).then(|| format!("0x{:x}", stat.ephemeral_owner))
}

/// Decodes one registry node name (the session comes from its Stat, if read).
pub fn registration(node: &str, stat: Option<&Stat>) -> Registration {
    let session = stat.and_then(session_hex);
    let parsed = decode(node).and_then(|full| DubboUrl::parse(&full).map(|u| (full, u)));
    match parsed {
        Ok((full, u)) => Registration {
            protocol: u.protocol.clone(),
            address: u.address(),
            application: u.param("application").map(str::to_string),
            group: u.param("group").map(str::to_string),
            version: u.param("version").map(str::to_string),
            methods: u
                .param("methods")
                .map(|m| m.split(',').map(str::trim).filter(|m| !m.is_empty()).map(str::to_string).collect())
                .unwrap_or_default(),
            weight: u.param("weight").and_then(|w| w.parse().ok()).unwrap_or(DEFAULT_WEIGHT),
            timestamp: u.param("timestamp").and_then(|t| t.parse().ok()),
            session,
            url: full,
            error: None,
        },
        Err(e) => Registration {
            protocol: String::new(),
            address: String::new(),
            application: None,
            group: None,
            version: None,
            methods: Vec::new(),
            weight: DEFAULT_WEIGHT,
            timestamp: None,
            session,
            url: node.to_string(),
            error: Some(e.to_string()),
        },
    }
}

/// `URL.buildKey`: `group/interface:version`.
pub fn service_key(interface: &str, group: Option<&str>, version: Option<&str>) -> String {
    let mut key = String::new();
    if let Some(g) = group {
        key.push_str(g);
        key.push('/');
    }
    key.push_str(interface);
    if let Some(v) = version {
        key.push(':');
        key.push_str(v);
    }
    key
}

const CATEGORIES: [&str; 4] = ["providers", "consumers", "configurators", "routers"];

/// The interfaces under the root: children that hold at least one Dubbo category directory
/// (this skips `config`, `metadata` and anything else sharing the root). Returned decoded,
/// with the raw child name.
async fn interfaces(zk: &Zk, roots: &Roots) -> Result<Vec<(String, String)>, ZkError> {
    let children = zk.children(&roots.dubbo).await?.unwrap_or_default();
    let found: Vec<Option<(String, String)>> = stream::iter(children)
        .map(|child| async move {
            let cats = zk.children(&join(&roots.dubbo, &child)).await?.unwrap_or_default();
            let is_service = cats.iter().any(|c| CATEGORIES.contains(&c.as_str()));
            let name = decode(&child).unwrap_or_else(|_| child.clone());
            Ok::<_, ZkError>(is_service.then_some((name, child)))
        })
        .buffered(READ_AHEAD)
        .try_collect()
        .await?;
    Ok(found.into_iter().flatten().collect())
}

/// The raw child name of an interface: Dubbo writes `URL.encode(interface)`.
fn interface_dir(roots: &Roots, interface: &str) -> String {
    let encoded: String = interface
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => (b as char).to_string(),
            b' ' => "+".to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    join(&roots.dubbo, &encoded)
}

/// (interface, group, version): what a service row is keyed by.
type ServiceId = (String, Option<String>, Option<String>);

/// Services with their provider and consumer counts, and the application instances.
pub async fn overview(zk: &Zk, roots: &Roots) -> Result<Overview, ZkError> {
    let mut rows: BTreeMap<ServiceId, ServiceRow> = BTreeMap::new();
    let mut apps: BTreeMap<ServiceId, [BTreeSet<String>; 2]> = BTreeMap::new();
    for (interface, child) in interfaces(zk, roots).await? {
        let dir = join(&roots.dubbo, &child);
        let mut seen = false;
        for (i, cat) in [Category::Providers, Category::Consumers].into_iter().enumerate() {
            let names = zk.children(&join(&dir, cat.dir())).await?.unwrap_or_default();
            for name in names {
                let r = registration(&name, None);
                if r.error.is_some() {
                    continue;
                }
                seen = true;
                let key = (interface.clone(), r.group.clone(), r.version.clone());
                let row = rows.entry(key.clone()).or_insert_with(|| empty_row(&interface, &r.group, &r.version));
                match cat {
                    Category::Providers => row.providers += 1,
                    Category::Consumers => row.consumers += 1,
                }
                if let Some(app) = r.application {
                    apps.entry(key).or_default()[i].insert(app);
                }
            }
        }
        if !seen {
            rows.insert((interface.clone(), None, None), empty_row(&interface, &None, &None));
        }
    }
    for (key, [p, c]) in apps {
        if let Some(row) = rows.get_mut(&key) {
            row.provider_applications = p.into_iter().collect();
            row.consumer_applications = c.into_iter().collect();
        }
    }
    Ok(Overview {
        root: roots.dubbo.clone(),
        services: rows.into_values().collect(),
        instances: instances(zk, roots, None).await?,
    })
}

fn empty_row(interface: &str, group: &Option<String>, version: &Option<String>) -> ServiceRow {
    ServiceRow {
        service: service_key(interface, group.as_deref(), version.as_deref()),
        interface: interface.to_string(),
        group: group.clone(),
        version: version.clone(),
        providers: 0,
        consumers: 0,
        provider_applications: Vec::new(),
        consumer_applications: Vec::new(),
    }
}

/// The providers or consumers of one interface, with their sessions; `None` if the registry
/// has no such interface.
pub async fn registrations(
    zk: &Zk,
    roots: &Roots,
    interface: &str,
    cat: Category,
) -> Result<Option<Vec<Registration>>, ZkError> {
    let dir = interface_dir(roots, interface);
    if zk.children(&dir).await?.is_none() {
        return Ok(None);
    }
    let cat_dir = join(&dir, cat.dir());
    let names = zk.children(&cat_dir).await?.unwrap_or_default();
    let read: Vec<Option<Registration>> = stream::iter(names)
        .map(|name| {
            let path = join(&cat_dir, &name);
            async move {
                // A node that went away between the listing and the read is simply gone.
                Ok::<_, ZkError>(zk.data(&path).await?.map(|(_, stat)| registration(&name, Some(&stat))))
            }
        })
        .buffered(READ_AHEAD)
        .try_collect()
        .await?;
    let mut regs: Vec<Registration> = read.into_iter().flatten().collect();
    regs.sort_by(|a, b| (&a.address, &a.group, &a.version, &a.url).cmp(&(&b.address, &b.group, &b.version, &b.url)));
    Ok(Some(regs))
}

/// Application instances, of one application or of all.
pub async fn instances(zk: &Zk, roots: &Roots, app: Option<&str>) -> Result<Vec<Instance>, ZkError> {
    let apps = match app {
        Some(a) => vec![a.to_string()],
        None => zk.children(&roots.services).await?.unwrap_or_default(),
    };
    let mut out = Vec::new();
    for app in apps {
        let dir = join(&roots.services, &app);
        let ids = zk.children(&dir).await?.unwrap_or_default();
        let read: Vec<Option<Instance>> =
            stream::iter(ids)
                .map(|id| {
                    let path = join(&dir, &id);
                    let app = app.clone();
                    async move {
                        Ok::<_, ZkError>(zk.data(&path).await?.map(|(data, stat)| instance(&app, &id, &data, &stat)))
                    }
                })
                .buffered(READ_AHEAD)
                .try_collect()
                .await?;
        out.extend(read.into_iter().flatten());
    }
    Ok(out)
}

/// Decodes Curator's `ServiceInstance` JSON (`JsonInstanceSerializer`) with Dubbo's
/// `ZookeeperInstance` payload (`{id, name, metadata}`).
pub fn instance(app: &str, id: &str, data: &[u8], stat: &Stat) -> Instance {
    let mut inst = Instance {
        application: app.to_string(),
        id: id.to_string(),
        address: String::new(),
        port: None,
        endpoints: Vec::new(),
        revision: None,
        registered: None,
        session: session_hex(stat),
        error: None,
    };
    let json: serde_json::Value = match serde_json::from_slice(data) {
        Ok(v) => v,
        Err(e) => {
            inst.error = Some(format!("not a ServiceInstance JSON: {e}"));
            return inst;
        }
    };
    inst.address = json["address"].as_str().unwrap_or_default().to_string();
    inst.port = json["port"].as_u64().and_then(|p| u16::try_from(p).ok());
    inst.registered = json["registrationTimeUTC"].as_i64();
    let meta = &json["payload"]["metadata"];
    inst.revision = meta["dubbo.metadata.revision"].as_str().map(str::to_string);
    // `dubbo.endpoints` is itself a JSON string: [{"port":20880,"protocol":"dubbo"}].
    if let Some(eps) = meta["dubbo.endpoints"].as_str() {
        if let Ok(serde_json::Value::Array(eps)) = serde_json::from_str::<serde_json::Value>(eps) {
            inst.endpoints = eps
                .iter()
                .map(|e| format!("{}:{}", e["protocol"].as_str().unwrap_or("?"), e["port"].as_u64().unwrap_or(0)))
                .collect();
        }
    }
    inst
}

/// Every node with data under `root` (depth first, sorted), at most `WALK_LIMIT` nodes visited.
async fn walk(zk: &Zk, root: &str) -> Result<Vec<ConfigEntry>, ZkError> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_string()];
    let mut visited = 0;
    while let Some(path) = stack.pop() {
        visited += 1;
        if visited > WALK_LIMIT {
            break;
        }
        if let Some((data, _)) = zk.data(&path).await? {
            if !data.is_empty() {
                out.push(ConfigEntry {
                    path: path.clone(),
                    bytes: data.len(),
                    data: String::from_utf8_lossy(&data).into(),
                });
            }
        }
        let children = zk.children(&path).await?.unwrap_or_default();
        stack.extend(children.iter().rev().map(|c| join(&path, c)));
    }
    Ok(out)
}

/// The config centre (`<root>/config`), per-interface override and route URLs, and the
/// metadata report (`<root>/metadata`).
pub async fn config(zk: &Zk, roots: &Roots) -> Result<ConfigView, ZkError> {
    let config = walk(zk, &join(&roots.dubbo, "config")).await?;
    let metadata = walk(zk, &join(&roots.dubbo, "metadata")).await?;
    let mut rules = Vec::new();
    for (interface, child) in interfaces(zk, roots).await? {
        for category in ["configurators", "routers"] {
            let names = zk.children(&join(&join(&roots.dubbo, &child), category)).await?.unwrap_or_default();
            for name in names {
                let (url, error) = match decode(&name) {
                    Ok(u) => (u, None),
                    Err(e) => (name.clone(), Some(e.to_string())),
                };
                rules.push(Rule { interface: interface.clone(), category: category.into(), url, error });
            }
        }
    }
    Ok(ConfigView { config, rules, metadata })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_node_decodes() {
        let node = "dubbo%3A%2F%2F10.0.0.1%3A20880%2Fa.Greeter%3Fapplication%3Dapp%26group%3Dg%26interface%3Da.Greeter\
                    %26methods%3Dhi%2Cbye%26timestamp%3D1700000000000%26version%3D1.0.0%26weight%3D50";
        let stat = Stat { ephemeral_owner: 0x1234, ..Default::default() };
        let r = registration(node, Some(&stat));
        assert_eq!(r.address, "10.0.0.1:20880");
        assert_eq!((r.group.as_deref(), r.version.as_deref()), (Some("g"), Some("1.0.0")));
        assert_eq!(r.methods, vec!["hi", "bye"]);
        assert_eq!((r.weight, r.timestamp), (50, Some(1_700_000_000_000)));
        assert_eq!(r.session.as_deref(), Some("0x1234"));
        let bare = registration("consumer%3A%2F%2F10.0.0.2%2Fa.Greeter%3Fside%3Dconsumer", None);
        assert_eq!((bare.weight, bare.group, bare.session), (DEFAULT_WEIGHT, None, None));
        let bad = registration("%zz", None);
        assert!(bad.error.is_some());
        assert_eq!(bad.url, "%zz");
    }

    #[test]
    fn service_keys_like_dubbo() {
        assert_eq!(service_key("a.B", None, None), "a.B");
        assert_eq!(service_key("a.B", Some("g"), Some("1.0")), "g/a.B:1.0");
    }

    #[test]
    fn interface_dir_encodes_like_url_encode() {
        let roots = Roots::default();
        assert_eq!(interface_dir(&roots, "org.x.Foo"), "/dubbo/org.x.Foo");
        assert_eq!(interface_dir(&roots, "a/b c"), "/dubbo/a%2Fb+c");
    }

    #[test]
    fn instance_json_decodes() {
        let data = br#"{"name":"app","id":"10.0.0.1:20880","address":"10.0.0.1","port":20880,"sslPort":null,
            "payload":{"@class":"org.apache.dubbo.registry.zookeeper.ZookeeperInstance","id":null,"name":"app",
            "metadata":{"dubbo.endpoints":"[{\"port\":20880,\"protocol\":\"dubbo\"}]","dubbo.metadata.revision":"abc"}},
            "registrationTimeUTC":1700000000000,"serviceType":"DYNAMIC","uriSpec":null}"#;
        let i = instance("app", "10.0.0.1:20880", data, &Stat::default());
        assert_eq!(i.endpoints, vec!["dubbo:20880"]);
        assert_eq!((i.port, i.revision.as_deref(), i.registered), (Some(20880), Some("abc"), Some(1_700_000_000_000)));
        assert!(instance("app", "x", b"{", &Stat::default()).error.is_some());
    }
}
