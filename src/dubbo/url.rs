//! Dubbo's registry node names: `URLEncoder.encode(url.toFullString(), "UTF-8")` of a Dubbo URL
//! such as `dubbo://10.0.0.1:20880/org.example.Greeter?application=app&methods=a,b&side=provider`.
//!
//! Pure functions over strings: decoding (`URLDecoder.decode`) and parsing (`URL.valueOf`). Knows
//! nothing of ZooKeeper.

use std::collections::BTreeMap;

/// Why a node name is not a Dubbo URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("bad percent escape at byte {0}")]
    BadEscape(usize),
    #[error("no \"protocol://\" prefix")]
    NoProtocol,
    #[error("port {0:?} is not a number")]
    BadPort(String),
}

/// `URLDecoder.decode(s, UTF-8)`: `+` is a space, `%xy` a byte; the bytes are UTF-8 (invalid
/// sequences become U+FFFD, as Java's decoder replaces them). A `%` without two hex digits is an
/// error, as it is for Java (`IllegalArgumentException`).
pub fn decode(s: &str) -> Result<String, UrlError> {
    let raw = s.as_bytes();
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b'%' => {
                let hex = raw.get(i + 1..i + 3).ok_or(UrlError::BadEscape(i))?;
                let hex = std::str::from_utf8(hex).map_err(|_| UrlError::BadEscape(i))?;
                out.push(u8::from_str_radix(hex, 16).map_err(|_| UrlError::BadEscape(i))?);
                i += 3;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// A parsed Dubbo URL (`org.apache.dubbo.common.URL`), parameters sorted by name as
/// `toFullString` writes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DubboUrl {
    pub protocol: String,
    pub username: Option<String>,
    pub host: String,
    pub port: Option<u16>,
    pub path: String,
    pub params: BTreeMap<String, String>,
}

impl DubboUrl {
    /// `URL.valueOf`: `protocol://[user[:password]@]host[:port][/path][?k=v&k=v]`. Parameter
    /// values are not escaped inside the full string, so a value is everything after the first
    /// `=` up to the next `&`; a part without `=` is both key and value, as in Dubbo.
    pub fn parse(full: &str) -> Result<DubboUrl, UrlError> {
        let full = full.trim();
        let (rest, query) = match full.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (full, None),
        };
        let mut params = BTreeMap::new();
        for part in query.unwrap_or("").split('&').map(str::trim).filter(|p| !p.is_empty()) {
            match part.split_once('=') {
                Some((k, v)) => params.insert(k.to_string(), v.to_string()),
                None => params.insert(part.to_string(), part.to_string()),
            };
        }
        let (protocol, rest) = rest.split_once("://").ok_or(UrlError::NoProtocol)?;
        if protocol.is_empty() {
            return Err(UrlError::NoProtocol);
        }
        let (authority, path) = match rest.split_once('/') {
            Some((a, p)) => (a, p.to_string()),
            None => (rest, String::new()),
        };
        let (username, hostport) = match authority.rsplit_once('@') {
            Some((user, hp)) => (Some(user.split(':').next().unwrap_or(user).to_string()), hp),
            None => (None, authority),
        };
        let (host, port) = split_host_port(hostport)?;
        Ok(DubboUrl { protocol: protocol.to_string(), username, host, port, path, params })
    }

    pub fn param(&self, key: &str) -> Option<&str> {
        self.params.get(key).map(String::as_str).filter(|v| !v.is_empty())
    }

    /// `host:port`, or the host alone (consumers register without a port).
    pub fn address(&self) -> String {
        match self.port {
            Some(p) => format!("{}:{p}", self.host),
            None => self.host.clone(),
        }
    }

    /// `URL.getServiceInterface()`: the `interface` parameter, else the path.
    pub fn interface(&self) -> &str {
        self.param("interface").unwrap_or(&self.path)
    }
}

/// `host[:port]`, with `[v6]:port` kept in brackets.
fn split_host_port(hp: &str) -> Result<(String, Option<u16>), UrlError> {
    let colon = if hp.starts_with('[') { hp.find("]:").map(|i| i + 1) } else { hp.rfind(':') };
    match colon {
        Some(i) => {
            let port = &hp[i + 1..];
            let port = port.parse::<u16>().map_err(|_| UrlError::BadPort(port.to_string()))?;
            // Dubbo keeps port 0 as "no port".
            Ok((hp[..i].to_string(), (port != 0).then_some(port)))
        }
        None => Ok((hp.to_string(), None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_like_urldecoder() {
        assert_eq!(
            decode("dubbo%3A%2F%2F10.0.0.1%3A20880%2Fa.B%3Fx%3D1%26y%3Da%2Cb").unwrap(),
            "dubbo://10.0.0.1:20880/a.B?x=1&y=a,b"
        );
        assert_eq!(decode("a+b%20c*").unwrap(), "a b c*");
        assert_eq!(decode("%E4%BD%A0").unwrap(), "\u{4f60}");
        assert_eq!(decode("x%2").unwrap_err(), UrlError::BadEscape(1));
        assert_eq!(decode("%zz").unwrap_err(), UrlError::BadEscape(0));
    }

    #[test]
    fn parses_provider_and_consumer_urls() {
        let u = DubboUrl::parse(
            "dubbo://10.0.0.1:20880/org.example.Greeter?application=app&methods=hi,bye&version=1.0.0&flag",
        )
        .unwrap();
        assert_eq!(u.protocol, "dubbo");
        assert_eq!(u.address(), "10.0.0.1:20880");
        assert_eq!(u.interface(), "org.example.Greeter");
        assert_eq!(u.param("methods"), Some("hi,bye"));
        assert_eq!(u.param("flag"), Some("flag"));
        assert_eq!(u.param("group"), None);
        let c = DubboUrl::parse("consumer://10.0.0.9/org.example.Greeter?interface=org.example.Greeter&side=consumer")
            .unwrap();
        assert_eq!(c.address(), "10.0.0.9");
        assert_eq!(c.port, None);
        let v6 = DubboUrl::parse("tri://u:p@[::1]:50051/x").unwrap();
        assert_eq!((v6.host.as_str(), v6.port, v6.username.as_deref()), ("[::1]", Some(50051), Some("u")));
        assert_eq!(DubboUrl::parse("nothing").unwrap_err(), UrlError::NoProtocol);
        assert_eq!(DubboUrl::parse("a://h:x/p").unwrap_err(), UrlError::BadPort("x".into()));
    }
}
