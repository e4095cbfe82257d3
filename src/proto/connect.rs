//! The handshake records: `ConnectRequest` (no RequestHeader) and `ConnectResponse`.

use super::jute::{self, DecodeError, JResult, JuteWrite};
use bytes::BufMut;

/// Length of the session password ZooKeeper hands out.
pub const PASSWORD_LEN: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectRequest {
    pub protocol_version: i32,
    pub last_zxid_seen: i64,
    pub timeout_ms: i32,
    pub session_id: i64,
    pub password: Vec<u8>,
    /// Absent in clients older than 3.4, which send 44 bytes instead of 45.
    pub read_only: Option<bool>,
}

/// The trailing readOnly byte, absent in records from clients and servers older than 3.4.
fn read_only_tail(i: &[u8]) -> JResult<'_, Option<bool>> {
    if i.is_empty() {
        return Ok((i, None));
    }
    let (i, r) = jute::boolean(i)?;
    Ok((i, Some(r)))
}

impl ConnectRequest {
    pub fn parse(frame: &[u8]) -> Result<ConnectRequest, DecodeError> {
        jute::parse_all(frame, |i| -> JResult<'_, ConnectRequest> {
            let (i, protocol_version) = jute::int(i)?;
            let (i, last_zxid_seen) = jute::long(i)?;
            let (i, timeout_ms) = jute::int(i)?;
            let (i, session_id) = jute::long(i)?;
            let (i, password) = jute::buffer(i)?;
            let (i, read_only) = read_only_tail(i)?;
            let password = password.map(|p| p.to_vec()).unwrap_or_default();
            Ok((i, ConnectRequest { protocol_version, last_zxid_seen, timeout_ms, session_id, password, read_only }))
        })
    }

    pub fn write(&self, b: &mut impl BufMut) {
        b.put_i32(self.protocol_version);
        b.put_i64(self.last_zxid_seen);
        b.put_i32(self.timeout_ms);
        b.put_i64(self.session_id);
        b.put_buffer(Some(&self.password));
        if let Some(r) = self.read_only {
            b.put_bool_j(r);
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectResponse {
    pub protocol_version: i32,
    pub timeout_ms: i32,
    pub session_id: i64,
    pub password: Vec<u8>,
    /// ZooKeeper 3.4+ always sends it; kept optional to parse replies of older servers.
    pub read_only: Option<bool>,
}

impl ConnectResponse {
    /// The refusal for an expired, unknown or wrongly authenticated session:
    /// timeOut 0, session 0, a zeroed password (the client then reports SessionExpired).
    pub fn expired() -> ConnectResponse {
        ConnectResponse {
            protocol_version: 0,
            timeout_ms: 0,
            session_id: 0,
            password: vec![0; PASSWORD_LEN],
            read_only: Some(false),
        }
    }

    pub fn parse(frame: &[u8]) -> Result<ConnectResponse, DecodeError> {
        jute::parse_all(frame, |i| -> JResult<'_, ConnectResponse> {
            let (i, protocol_version) = jute::int(i)?;
            let (i, timeout_ms) = jute::int(i)?;
            let (i, session_id) = jute::long(i)?;
            let (i, password) = jute::buffer(i)?;
            let (i, read_only) = read_only_tail(i)?;
            let password = password.map(|p| p.to_vec()).unwrap_or_default();
            Ok((i, ConnectResponse { protocol_version, timeout_ms, session_id, password, read_only }))
        })
    }

    pub fn write(&self, b: &mut impl BufMut) {
        b.put_i32(self.protocol_version);
        b.put_i32(self.timeout_ms);
        b.put_i64(self.session_id);
        b.put_buffer(Some(&self.password));
        if let Some(r) = self.read_only {
            b.put_bool_j(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_44_and_45_byte_requests() {
        let mut req = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout_ms: 30000,
            session_id: 0,
            password: vec![0; 16],
            read_only: None,
        };
        let mut b = Vec::new();
        req.write(&mut b);
        assert_eq!(b.len(), 44);
        assert_eq!(ConnectRequest::parse(&b).unwrap(), req);
        req.read_only = Some(false);
        let mut b = Vec::new();
        req.write(&mut b);
        assert_eq!(b.len(), 45);
        assert_eq!(ConnectRequest::parse(&b).unwrap(), req);
    }

    #[test]
    fn response_is_37_bytes() {
        let mut b = Vec::new();
        ConnectResponse::expired().write(&mut b);
        assert_eq!(b.len(), 37);
    }
}
