//! Just enough HTTP/1.1 for `zkr takeover` and the observers to talk to the observers'
//! AdminServers: one request per connection (`Connection: close`), the body read to the end;
//! HTTPS when the AdminServer serves it (`admin.forceHttps`/`admin.portUnification`, the
//! `ssl.quorum.*` stores: the server's certificate is checked against the trust store, and the
//! key store's certificate is presented when the server asks for one), and ZooKeeper's
//! `Authorization: <scheme> <data>` header when there are credentials.

use crate::security::quorum_tls::QuorumTls;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("cannot reach {addr}: {source}")]
    Connect { addr: String, source: std::io::Error },
    #[error("no HTTPS with {addr}: {why}")]
    Tls { addr: String, why: String },
    #[error("{addr} did not answer within {secs} s")]
    Timeout { addr: String, secs: u64 },
    #[error("{addr} answered no HTTP: {why}")]
    Garbled { addr: String, why: String },
}

/// A client of AdminServers: plain or HTTPS, with or without credentials.
#[derive(Clone)]
pub struct AdminClient {
    tls: Option<Arc<QuorumTls>>,
    authorization: Option<String>,
    timeout: Duration,
}

impl AdminClient {
    /// `tls`: speak HTTPS with these stores; `authorization`: the `Authorization` header's
    /// value (`digest user:password`, `x509`, `ip`).
    pub fn new(tls: Option<Arc<QuorumTls>>, authorization: Option<String>, timeout: Duration) -> AdminClient {
        AdminClient { tls, authorization, timeout }
    }

    /// `http` or `https`, for messages.
    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() {
            "https"
        } else {
            "http"
        }
    }

    /// Sends `method path` (and `body`, JSON) to `addr` and returns the status code and body.
    pub async fn request(
        &self,
        addr: &str,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> Result<(u16, String), HttpError> {
        let secs = self.timeout.as_secs();
        let timeout = || HttpError::Timeout { addr: addr.to_owned(), secs };
        tokio::time::timeout(self.timeout, self.exchange(addr, method, path, body)).await.map_err(|_| timeout())?
    }

    async fn exchange(
        &self,
        addr: &str,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> Result<(u16, String), HttpError> {
        let connect = |source| HttpError::Connect { addr: addr.to_owned(), source };
        let tcp = tokio::net::TcpStream::connect(addr).await.map_err(connect)?;
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
        if let Some(a) = &self.authorization {
            head.push_str(&format!("Authorization: {a}\r\n"));
        }
        let body = body.unwrap_or("");
        if !body.is_empty() {
            head.push_str("Content-Type: application/json\r\n");
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        let raw = match &self.tls {
            None => send(tcp, head.as_bytes()).await.map_err(connect)?,
            Some(tls) => {
                let stream = tls
                    .connect(tcp, addr, self.timeout)
                    .await
                    .map_err(|why| HttpError::Tls { addr: addr.to_owned(), why })?;
                send(stream, head.as_bytes()).await.map_err(connect)?
            }
        };
        parse(&raw).map_err(|why| HttpError::Garbled { addr: addr.to_owned(), why })
    }
}

/// Writes the request and reads the answer to its end. A TLS peer that closes without
/// close_notify after a whole answer has still answered.
async fn send<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, request: &[u8]) -> std::io::Result<Vec<u8>> {
    s.write_all(request).await?;
    s.flush().await?;
    let mut raw = Vec::new();
    match s.read_to_end(&mut raw).await {
        Ok(_) => Ok(raw),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !raw.is_empty() => Ok(raw),
        Err(e) => Err(e),
    }
}

fn parse(raw: &[u8]) -> Result<(u16, String), String> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").ok_or("no end of headers")?;
    let status = head
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or("no status line")?;
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    Ok((status, if chunked { dechunk(body)? } else { body.to_owned() }))
}

/// A chunked body's data (hex size line, data, CRLF; a zero size ends it).
fn dechunk(mut body: &str) -> Result<String, String> {
    let mut out = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n").ok_or("a chunk without its size line")?;
        let n = usize::from_str_radix(size.trim(), 16).map_err(|_| format!("bad chunk size {size:?}"))?;
        if n == 0 {
            return Ok(out);
        }
        let data = rest.get(..n).ok_or("a chunk shorter than its size")?;
        out.push_str(data);
        body = rest.get(n..).unwrap_or("").trim_start_matches("\r\n");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn plain_and_chunked_bodies() {
        let plain = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";
        assert_eq!(super::parse(plain), Ok((200, "{}".to_owned())));
        let chunked = b"HTTP/1.1 409 Conflict\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        assert_eq!(super::parse(chunked), Ok((409, "abcde".to_owned())));
        assert!(super::parse(b"garbage").is_err());
    }
}
