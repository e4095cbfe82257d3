//! Text exactly as zkCli.sh 3.8 prints it: stats, ACLs, Java lists and dates, watch events and
//! the messages of ZooKeeper's exceptions.
//!
//! Pure functions from values to strings; nothing here does I/O or knows about the connection.

use crate::proto::{Acl, ErrorCode, Stat};
use std::sync::OnceLock;

/// `StatPrinter.print`: eleven `name = value` lines, each ending in a newline.
pub fn stat(s: &Stat) -> String {
    format!(
        "cZxid = 0x{:x}\nctime = {}\nmZxid = 0x{:x}\nmtime = {}\npZxid = 0x{:x}\ncversion = {}\n\
         dataVersion = {}\naclVersion = {}\nephemeralOwner = 0x{:x}\ndataLength = {}\nnumChildren = {}\n",
        s.czxid as u64,
        java_date(s.ctime),
        s.mzxid as u64,
        java_date(s.mtime),
        s.pzxid as u64,
        s.cversion,
        s.version,
        s.aversion,
        s.ephemeral_owner as u64,
        s.data_length,
        s.num_children
    )
}

fn system_tz() -> &'static jiff::tz::TimeZone {
    static TZ: OnceLock<jiff::tz::TimeZone> = OnceLock::new();
    TZ.get_or_init(jiff::tz::TimeZone::system)
}

/// `java.util.Date.toString()`: `EEE MMM dd HH:mm:ss zzz yyyy` in the machine's time zone
/// (`TZ`, else `/etc/localtime`), e.g. `Sun Nov 29 18:57:54 UTC 2026`.
pub fn java_date(millis: i64) -> String {
    match jiff::Timestamp::from_millisecond(millis) {
        Ok(ts) => {
            let zoned = ts.to_zoned_datetime(system_tz().clone());
            // Java prints the year unpadded; jiff's %Y pads to four digits, which only differs before 1000 AD.
            format!("{} {}", zoned.strftime("%a %b %d %H:%M:%S %Z"), zoned.year())
        }
        Err(_) => millis.to_string(),
    }
}

/// `ZKUtil.getPermString`: the letters in the order c, d, r, w, a.
pub fn perms(p: i32) -> String {
    use crate::proto::perms::*;
    let mut s = String::new();
    for (bit, letter) in [(CREATE, 'c'), (DELETE, 'd'), (READ, 'r'), (WRITE, 'w'), (ADMIN, 'a')] {
        if p & bit != 0 {
            s.push(letter);
        }
    }
    s
}

/// Jute's `ToStringOutputArchive` string form: a leading `'` and `%`-escapes for `\0 \n \r , } %`.
fn jute_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 1);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\0' => out.push_str("%00"),
            '\n' => out.push_str("%0A"),
            '\r' => out.push_str("%0D"),
            ',' => out.push_str("%2C"),
            '}' => out.push_str("%7D"),
            '%' => out.push_str("%25"),
            c => out.push(c),
        }
    }
    out
}

/// One `getAcl` entry: `Id.toString()` (jute CSV, which ends in a newline), then `: perms`.
/// That is why zkCli prints `'world,'anyone` and `: cdrwa` on two lines.
pub fn acl(a: &Acl) -> String {
    format!("{},{}\n: {}\n", jute_string(&a.id.scheme), jute_string(&a.id.id), perms(a.perms))
}

/// `java.util.List.toString()`: `[a, b, c]`.
pub fn java_list<S: AsRef<str>>(items: &[S]) -> String {
    let mut s = String::from("[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        s.push_str(item.as_ref());
    }
    s.push(']');
    s
}

/// Sorts as Java's `Collections.sort` on strings does: by UTF-16 code units.
pub fn java_sort(v: &mut [String]) {
    v.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
}

/// `Watcher.Event.KeeperState` names, by wire value.
pub fn keeper_state(state: i32) -> &'static str {
    match state {
        0 => "Disconnected",
        1 => "NoSyncConnected",
        3 => "SyncConnected",
        4 => "AuthFailed",
        5 => "ConnectedReadOnly",
        6 => "SaslAuthenticated",
        7 => "Closed",
        -112 => "Expired",
        _ => "Unknown",
    }
}

/// `Watcher.Event.EventType` names, by wire value.
pub fn event_type(t: i32) -> &'static str {
    match t {
        1 => "NodeCreated",
        2 => "NodeDeleted",
        3 => "NodeDataChanged",
        4 => "NodeChildrenChanged",
        5 => "DataWatchRemoved",
        6 => "ChildWatchRemoved",
        7 => "PersistentWatchRemoved",
        _ => "None",
    }
}

/// `WatchedEvent.toString()` of ZooKeeper 3.8 (3.9 appends a zxid).
pub fn watched_event(state: i32, event_type_value: i32, path: Option<&str>) -> String {
    format!(
        "WatchedEvent state:{} type:{} path:{}",
        keeper_state(state),
        event_type(event_type_value),
        path.unwrap_or("null")
    )
}

/// `KeeperException.getCodeMessage`.
fn code_message(code: i32) -> String {
    let known = match ErrorCode::from_i32(code) {
        Some(c) => c,
        None => return format!("Unknown error {code}"),
    };
    match known {
        ErrorCode::Ok => "ok",
        ErrorCode::NotEmpty => "Directory not empty",
        ErrorCode::SessionExpired => "Session expired",
        ErrorCode::InvalidCallback => "Invalid callback",
        ErrorCode::SessionMoved => "Session moved",
        ErrorCode::NotReadOnly => "Not a read-only call",
        ErrorCode::EphemeralOnLocalSession => "Ephemeral node on local session",
        ErrorCode::NoWatcher => "No such watcher",
        ErrorCode::ReconfigDisabled => "Reconfig is disabled",
        ErrorCode::SessionClosedRequireSaslAuth => "Session closed because client failed to authenticate",
        ErrorCode::QuotaExceeded => "Quota has exceeded",
        ErrorCode::ThrottledOp => "Op throttled due to high load",
        // Codes without a case in Java's switch print the enum constant's name.
        ErrorCode::UnknownSession => "Unknown error UNKNOWNSESSION",
        ErrorCode::RequestTimeout => "Unknown error REQUESTTIMEOUT",
        other => return other.to_string(),
    }
    .to_string()
}

/// `KeeperException.getMessage()`: `KeeperErrorCode = NoNode for /a`.
pub fn keeper_message(code: i32, path: Option<&str>) -> String {
    match path {
        Some(p) if !p.is_empty() => format!("KeeperErrorCode = {} for {}", code_message(code), p),
        _ => format!("KeeperErrorCode = {}", code_message(code)),
    }
}

/// `CliWrapperException`'s message for a failed call: friendlier text for common codes, the
/// exception's own message otherwise. A missing path prints as Java's `null`.
pub fn cli_error(code: i32, path: Option<&str>) -> String {
    let p = path.unwrap_or("null");
    match ErrorCode::from_i32(code) {
        Some(ErrorCode::NoNode) => format!("Node does not exist: {p}"),
        Some(ErrorCode::NoChildrenForEphemerals) => format!("Ephemerals cannot have children: {p}"),
        Some(ErrorCode::NodeExists) => format!("Node already exists: {p}"),
        Some(ErrorCode::NotEmpty) => format!("Node not empty: {p}"),
        Some(ErrorCode::NotReadOnly) => format!("Not a read-only call: {p}"),
        Some(ErrorCode::InvalidAcl) => format!("Acl is not valid : {p}"),
        Some(ErrorCode::NoAuth) => format!("Insufficient permission : {p}"),
        Some(ErrorCode::BadArguments) => format!("Arguments are not valid : {p}"),
        Some(ErrorCode::BadVersion) => format!("version No is not valid : {p}"),
        Some(ErrorCode::ReconfigInProgress) => {
            "Another reconfiguration is in progress -- concurrent reconfigs not supported (yet)".to_string()
        }
        Some(ErrorCode::NewConfigNoQuorum) => "No quorum of new config is connected and up-to-date with the leader of \
             last commmitted config - try invoking reconfiguration after new servers are connected and synced"
            .to_string(),
        Some(ErrorCode::QuotaExceeded) => format!("Quota has exceeded : {p}"),
        _ => keeper_message(code, path),
    }
}

/// `ConfigUtils.getClientConfigStr`: the config version, a space, and the client addresses of
/// the `server.N` lines (in key order here; Java's Properties use hash order).
pub fn client_config(config: &str) -> String {
    let mut version = String::new();
    let mut servers: Vec<(String, String)> = Vec::new();
    for line in config.lines() {
        let Some((key, value)) = line.split_once('=') else { continue };
        let (key, value) = (key.trim(), value.trim());
        if key == "version" {
            version = value.to_string();
        }
        if !key.starts_with("server.") {
            continue;
        }
        // host:quorumPort:electionPort[:role];[clientHost:]clientPort
        if let Some((_, client)) = value.split_once(';') {
            let addr = match client.rsplit_once(':') {
                Some((host, port)) => format!("{host}:{port}"),
                None => format!("0.0.0.0:{client}"),
            };
            servers.push((key.to_string(), addr));
        }
    }
    servers.sort();
    let addrs: Vec<String> = servers.into_iter().map(|(_, a)| a).collect();
    format!("{version} {}", addrs.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Id;

    #[test]
    fn acl_prints_on_two_lines_with_jute_escapes() {
        let a = Acl { perms: 31, id: Id::new("world", "anyone") };
        assert_eq!(acl(&a), "'world,'anyone\n: cdrwa\n");
        let b = Acl { perms: 1 | 2, id: Id::new("x", "a,b%}") };
        assert_eq!(acl(&b), "'x,'a%2Cb%25%7D\n: rw\n");
    }

    #[test]
    fn stat_uses_unsigned_hex() {
        let s = Stat { czxid: 0x1f, ephemeral_owner: -1, ..Default::default() };
        let text = stat(&s);
        assert!(text.starts_with("cZxid = 0x1f\nctime = "));
        assert!(text.contains("ephemeralOwner = 0xffffffffffffffff\n"));
        assert!(text.ends_with("numChildren = 0\n"));
        assert_eq!(text.lines().count(), 11);
    }

    #[test]
    fn epoch_in_utc_looks_like_java() {
        if std::env::var("TZ").map(|t| t == "UTC").unwrap_or(false) {
            assert_eq!(java_date(0), "Thu Jan 01 00:00:00 UTC 1970");
        }
        assert!(java_date(0).ends_with(" 1970") || java_date(0).ends_with(" 1969"));
    }

    #[test]
    fn messages_match_zkcli() {
        assert_eq!(cli_error(-101, Some("/x")), "Node does not exist: /x");
        assert_eq!(cli_error(-103, Some("/a")), "version No is not valid : /a");
        assert_eq!(cli_error(-114, None), "Acl is not valid : null");
        assert_eq!(cli_error(-121, Some("/w")), "KeeperErrorCode = No such watcher for /w");
        assert_eq!(cli_error(-4, Some("/")), "KeeperErrorCode = ConnectionLoss for /");
        assert_eq!(keeper_message(-114, None), "KeeperErrorCode = InvalidACL");
        assert_eq!(watched_event(3, 3, Some("/a")), "WatchedEvent state:SyncConnected type:NodeDataChanged path:/a");
        assert_eq!(watched_event(7, -1, None), "WatchedEvent state:Closed type:None path:null");
        assert_eq!(perms(31), "cdrwa");
        assert_eq!(java_list(&["a", "b"]), "[a, b]");
        assert_eq!(java_list::<&str>(&[]), "[]");
    }

    #[test]
    fn client_config_string() {
        assert_eq!(client_config(""), " ");
        let cfg = "server.2=b:2888:3888:participant;0.0.0.0:2182\nserver.1=a:2888:3888;2181\nversion=100000000\n";
        assert_eq!(client_config(cfg), "100000000 0.0.0.0:2181,0.0.0.0:2182");
    }

    #[test]
    fn java_sort_orders_by_utf16() {
        let mut v = vec!["\u{FF21}".to_string(), "\u{1F600}".to_string(), "b".to_string()];
        java_sort(&mut v);
        assert_eq!(v, vec!["b", "\u{1F600}", "\u{FF21}"]);
    }
}
