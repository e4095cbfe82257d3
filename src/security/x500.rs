//! A certificate subject as Java's `X500Principal.getName()` prints it (RFC 2253 form), which is
//! the id ZooKeeper's `X509AuthenticationProvider` gives a TLS client (`x509:<subject>`).
//!
//! Pure: DER in, string out. Only the subject formatting lives here, not certificate checks.

use x509_parser::prelude::{FromDer, X509Certificate};
use x509_parser::x509::X509Name;

/// Attribute types Java names with a keyword in RFC 2253 output; every other type is printed
/// as its dotted OID with a `#hex` DER value (`sun.security.x509.AVAKeyword`, rfc2253 flag).
const KEYWORDS: &[(&str, &str)] = &[
    ("2.5.4.3", "CN"),
    ("2.5.4.6", "C"),
    ("2.5.4.7", "L"),
    ("2.5.4.8", "ST"),
    ("2.5.4.9", "STREET"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("0.9.2342.19200300.100.1.25", "DC"),
    ("0.9.2342.19200300.100.1.1", "UID"),
];

/// Characters Java's `AVA.toRFC2253String` escapes with a backslash wherever they occur.
const ESCAPED: &str = ",=+<>#;\"\\";

/// The subject of a DER certificate, or None if it does not parse.
pub fn subject_of_cert(der: &[u8]) -> Option<String> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    Some(rfc2253(cert.subject()))
}

/// Java's RFC 2253 form: RDNs last-to-first joined by `,`, multi-valued RDNs joined by `+`.
pub fn rfc2253(name: &X509Name) -> String {
    let rdns: Vec<String> = name
        .iter()
        .map(|rdn| rdn.iter().map(|atv| ava(&atv.attr_type().to_id_string(), atv.attr_value())).collect::<Vec<_>>())
        .map(|avas| avas.join("+"))
        .collect();
    rdns.into_iter().rev().collect::<Vec<_>>().join(",")
}

fn ava(oid: &str, value: &x509_parser::der_parser::asn1_rs::Any) -> String {
    let keyword = KEYWORDS.iter().find(|(o, _)| *o == oid).map(|(_, k)| *k);
    match (keyword, string_value(value)) {
        (Some(k), Some(text)) => format!("{k}={}", escape(&text)),
        // Java: an OID-named attribute, or a value that is not a string type, prints as #hex DER.
        (k, _) => format!("{}=#{}", k.unwrap_or(oid), hex(&der_of(value))),
    }
}

/// The text of a DirectoryString-like value, for the tags Java's `isDerString` accepts.
fn string_value(value: &x509_parser::der_parser::asn1_rs::Any) -> Option<String> {
    let data = value.data;
    match value.header.tag().0 {
        12 => std::str::from_utf8(data).ok().map(str::to_owned), // UTF8String
        // PrintableString, T61String, IA5String, GeneralString: one byte per char (ISO-8859-1 in Java)
        19 | 20 | 22 | 27 => Some(data.iter().map(|b| *b as char).collect()),
        30 => {
            // BMPString: UTF-16BE
            if !data.len().is_multiple_of(2) {
                return None;
            }
            let units: Vec<u16> = data.chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect();
            String::from_utf16(&units).ok()
        }
        _ => None,
    }
}

/// Escaping as `AVA.toRFC2253String`: special characters anywhere, NUL as `\00`, and spaces
/// (or CR) leading or trailing the value.
fn escape(text: &str) -> String {
    let mut chars: Vec<String> = Vec::with_capacity(text.len());
    for c in text.chars() {
        if ESCAPED.contains(c) {
            chars.push(format!("\\{c}"));
        } else if c == '\0' {
            chars.push("\\00".to_owned());
        } else {
            chars.push(c.to_string());
        }
    }
    let blank = |s: &String| s == " " || s == "\r";
    let lead = chars.iter().position(|s| !blank(s)).unwrap_or(chars.len());
    let trail = chars.iter().rposition(|s| !blank(s));
    let mut out = String::with_capacity(text.len() + 4);
    for (i, s) in chars.iter().enumerate() {
        if i < lead || trail.is_some_and(|t| i > t) {
            out.push('\\');
        }
        out.push_str(s);
    }
    out
}

/// Re-encodes a parsed value as DER (tag, length, contents) for the `#hex` form.
fn der_of(value: &x509_parser::der_parser::asn1_rs::Any) -> Vec<u8> {
    let h = &value.header;
    let class = h.class() as u8;
    let constructed = if h.is_constructed() { 0x20 } else { 0 };
    let tag = h.tag().0;
    let mut out = Vec::with_capacity(value.data.len() + 6);
    if tag < 31 {
        out.push((class << 6) | constructed | tag as u8);
    } else {
        out.push((class << 6) | constructed | 0x1f);
        let mut groups = Vec::new();
        let mut t = tag;
        loop {
            groups.push((t & 0x7f) as u8);
            t >>= 7;
            if t == 0 {
                break;
            }
        }
        for (i, g) in groups.iter().enumerate().rev() {
            out.push(if i == 0 { *g } else { g | 0x80 });
        }
    }
    let len = value.data.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len.to_be_bytes().iter().copied().skip_while(|b| *b == 0).collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend_from_slice(&bytes);
    }
    out.extend_from_slice(value.data);
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_java() {
        assert_eq!(escape("a,b"), "a\\,b");
        assert_eq!(escape("x=y#z"), "x\\=y\\#z");
        assert_eq!(escape(" lead"), "\\ lead");
        assert_eq!(escape("trail "), "trail\\ ");
        assert_eq!(escape("in side"), "in side");
        assert_eq!(escape("   "), "\\ \\ \\ ");
    }
}
