//! Just enough HTTP/1.1 for `zkr takeover` to talk to the observers' AdminServers: one request
//! per connection (`Connection: close`), the body read to the end.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("cannot reach {addr}: {source}")]
    Connect { addr: String, source: std::io::Error },
    #[error("{addr} answered no HTTP: {why}")]
    Garbled { addr: String, why: String },
}

/// Sends `method path` to `addr` and returns the status code and body.
pub fn request(addr: &str, method: &str, path: &str, timeout: Duration) -> Result<(u16, String), HttpError> {
    let connect = |source| HttpError::Connect { addr: addr.to_owned(), source };
    let target = addr
        .to_socket_addrs()
        .map_err(connect)?
        .next()
        .ok_or_else(|| connect(std::io::Error::other("the name resolves to no address")))?;
    let mut s = TcpStream::connect_timeout(&target, timeout).map_err(connect)?;
    s.set_read_timeout(Some(timeout)).map_err(connect)?;
    s.set_write_timeout(Some(timeout)).map_err(connect)?;
    let req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).map_err(connect)?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).map_err(connect)?;
    parse(&raw).map_err(|why| HttpError::Garbled { addr: addr.to_owned(), why })
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
