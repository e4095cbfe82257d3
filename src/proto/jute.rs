//! Jute primitives: nom parsers for reading and a `BufMut` extension for writing.
//!
//! Owns the byte-level encoding of ZooKeeper's jute types (big-endian int/long, one-byte bool,
//! length-prefixed ustring/buffer/vector with -1 for null). Knows nothing of records or state.

use bytes::{BufMut, Bytes};
use nom::error::{ErrorKind, ParseError};
use nom::number::complete::{be_i32, be_i64, be_u8};
use nom::IResult;

/// Why a record could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("record truncated")]
    Truncated,
    #[error("negative or oversized length {0}")]
    BadLength(i32),
    #[error("string is not UTF-8")]
    BadUtf8,
    #[error("trailing {0} bytes after record")]
    Trailing(usize),
    #[error("malformed record ({0:?})")]
    Malformed(ErrorKind),
}

impl<'a> ParseError<&'a [u8]> for DecodeError {
    fn from_error_kind(_input: &'a [u8], kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::Eof => DecodeError::Truncated,
            other => DecodeError::Malformed(other),
        }
    }
    fn append(_input: &'a [u8], _kind: ErrorKind, other: Self) -> Self {
        other
    }
}

/// Result of a jute parser.
pub type JResult<'a, T> = IResult<&'a [u8], T, DecodeError>;

fn fail<T>(e: DecodeError) -> JResult<'static, T> {
    Err(nom::Err::Failure(e))
}

/// Number parsers report truncation as `Truncated` rather than a generic nom error.
fn truncated<'a, T>(r: IResult<&'a [u8], T, DecodeError>) -> JResult<'a, T> {
    r.map_err(|e| match e {
        nom::Err::Error(_) | nom::Err::Incomplete(_) => nom::Err::Failure(DecodeError::Truncated),
        other => other,
    })
}

pub fn int(i: &[u8]) -> JResult<'_, i32> {
    truncated(be_i32(i))
}

pub fn long(i: &[u8]) -> JResult<'_, i64> {
    truncated(be_i64(i))
}

/// jute bool: one byte, any non-zero value is true (Java's `readBool` is `readByte() != 0`).
pub fn byte(i: &[u8]) -> JResult<'_, u8> {
    truncated(be_u8(i))
}

pub fn boolean(i: &[u8]) -> JResult<'_, bool> {
    let (i, b) = truncated(be_u8(i))?;
    Ok((i, b != 0))
}

/// Length-prefixed bytes; `None` for a -1 length (jute null).
fn raw(i: &[u8]) -> JResult<'_, Option<&[u8]>> {
    let (i, len) = int(i)?;
    if len == -1 {
        return Ok((i, None));
    }
    if len < 0 {
        return fail(DecodeError::BadLength(len));
    }
    let len = len as usize;
    if i.len() < len {
        return fail(DecodeError::Truncated);
    }
    Ok((&i[len..], Some(&i[..len])))
}

/// jute buffer; null stays distinct from empty (zkCli's `create /a` stores null data).
pub fn buffer(i: &[u8]) -> JResult<'_, Option<Bytes>> {
    let (i, b) = raw(i)?;
    Ok((i, b.map(Bytes::copy_from_slice)))
}

/// jute ustring; a null string reads as empty, which path validation then rejects.
pub fn ustring(i: &[u8]) -> JResult<'_, String> {
    let (i, b) = raw(i)?;
    match b {
        None => Ok((i, String::new())),
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) => Ok((i, s.to_owned())),
            Err(_) => fail(DecodeError::BadUtf8),
        },
    }
}

/// jute ustring where null must stay distinct from empty (for byte-exact re-encoding).
pub fn ustring_opt(i: &[u8]) -> JResult<'_, Option<String>> {
    let (i, b) = raw(i)?;
    match b {
        None => Ok((i, None)),
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) => Ok((i, Some(s.to_owned()))),
            Err(_) => fail(DecodeError::BadUtf8),
        },
    }
}

/// jute vector; a null vector reads as empty.
pub fn vector<'a, T, F>(mut elem: F) -> impl FnMut(&'a [u8]) -> JResult<'a, Vec<T>>
where
    F: FnMut(&'a [u8]) -> JResult<'a, T>,
{
    move |i: &'a [u8]| {
        let (mut i, count) = int(i)?;
        if count == -1 {
            return Ok((i, Vec::new()));
        }
        if count < 0 || count as usize > i.len() {
            // Every element takes at least one byte, so a count above the remaining length is garbage.
            return fail(DecodeError::BadLength(count));
        }
        let mut out = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let (rest, v) = elem(i)?;
            out.push(v);
            i = rest;
        }
        Ok((i, out))
    }
}

/// Runs a parser over a whole record and rejects trailing bytes.
pub fn parse_all<'a, T>(input: &'a [u8], mut p: impl FnMut(&'a [u8]) -> JResult<'a, T>) -> Result<T, DecodeError> {
    match p(input) {
        Ok(([], v)) => Ok(v),
        Ok((rest, _)) => Err(DecodeError::Trailing(rest.len())),
        Err(nom::Err::Error(e)) | Err(nom::Err::Failure(e)) => Err(e),
        Err(nom::Err::Incomplete(_)) => Err(DecodeError::Truncated),
    }
}

/// Writing jute onto any `BufMut`.
pub trait JuteWrite: BufMut {
    fn put_bool_j(&mut self, v: bool) {
        self.put_u8(v as u8);
    }
    fn put_ustring(&mut self, s: &str) {
        self.put_i32(s.len() as i32);
        self.put_slice(s.as_bytes());
    }
    fn put_ustring_opt(&mut self, s: Option<&str>) {
        match s {
            None => self.put_i32(-1),
            Some(s) => self.put_ustring(s),
        }
    }
    fn put_buffer(&mut self, b: Option<&[u8]>) {
        match b {
            None => self.put_i32(-1),
            Some(b) => {
                self.put_i32(b.len() as i32);
                self.put_slice(b);
            }
        }
    }
}

impl<B: BufMut + ?Sized> JuteWrite for B {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_primitives() {
        let bytes = [0, 0, 0, 2, b'h', b'i', 1];
        let (rest, s) = ustring(&bytes).unwrap();
        assert_eq!(s, "hi");
        assert!(boolean(rest).unwrap().1);
    }

    #[test]
    fn null_buffer_is_none() {
        let bytes = (-1i32).to_be_bytes();
        assert_eq!(buffer(&bytes).unwrap().1, None);
    }

    #[test]
    fn rejects_lengths_past_the_end() {
        let bytes = [0, 0, 0, 9, 1];
        assert_eq!(parse_all(&bytes, buffer), Err(DecodeError::Truncated));
        let neg = (-5i32).to_be_bytes();
        assert_eq!(parse_all(&neg, buffer), Err(DecodeError::BadLength(-5)));
        let huge = [0x7f, 0xff, 0xff, 0xff];
        assert_eq!(parse_all(&huge, vector(int)), Err(DecodeError::BadLength(i32::MAX)));
    }

    #[test]
    fn trailing_bytes_are_an_error() {
        assert_eq!(parse_all(&[0, 0, 0, 1, 9], int), Err(DecodeError::Trailing(1)));
    }
}
