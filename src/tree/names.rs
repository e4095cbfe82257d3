//! Znode names stored compressed against a dictionary of shared segments.
//!
//! Dubbo provider names are URL-encoded URLs of 300–1500 bytes whose long parts (interface,
//! application, method list, versions, …) repeat across every provider of a service; only the
//! host, port, pid and timestamp differ. A name is cut into tokens, each starting at a `%xx`
//! escape (a run of escapes stays with the text after it). Tokens with few digits are "stable";
//! a maximal run of stable tokens of at least [`MIN_SEGMENT`] bytes is stored once in the
//! dictionary and the name holds a reference to it: [`REF`] then the segment id as a LEB128
//! varint. Everything else (digit-heavy tokens: addresses, ports, pids, timestamps, sequence
//! numbers; short runs) stays literal. Names are UTF-8, so a literal byte is never [`REF`].
//!
//! The cut is a function of the name alone and each segment has one id while any name uses it,
//! so a name always encodes to the same bytes: child tables hash and compare encoded names, and a
//! lookup encodes the query without inserting (a segment absent from the dictionary means no name
//! holds it). Segments are counted per use and freed with their last use, so churn does not grow
//! the dictionary.

use std::sync::Arc;

/// A name as stored: literal bytes and segment references.
pub type Encoded = Arc<[u8]>;

/// Marks a segment reference; cannot occur in UTF-8.
const REF: u8 = 0xFF;
/// Shorter runs stay literal: a reference is 2–4 bytes.
const MIN_SEGMENT: usize = 8;
/// Most segment ids a snapshot may restore (a bound on what a damaged file can make us allocate).
const MAX_SEGMENTS: usize = 1 << 24;
/// A token (see `cut`) with this many digits is taken as per-node (an address, port, pid, timestamp or
/// sequence number) and stays literal, so unique values do not each take a dictionary entry.
const VOLATILE_DIGITS: usize = 4;

#[derive(Debug, Clone)]
struct Segment {
    bytes: Arc<[u8]>,
    /// Uses by stored names; 0 marks a free id.
    refs: u32,
}

/// The segment dictionary. Cloning it (the snapshot copy) copies one pointer per segment.
#[derive(Debug, Clone, Default)]
pub struct NameDict {
    /// Segment ids, hashed by their bytes.
    index: hashbrown::HashTable<u32>,
    segs: Vec<Segment>,
    free: Vec<u32>,
    hasher: ahash::RandomState,
}

/// One piece of a name: literal bytes or a run for the dictionary.
enum Piece<'a> {
    Literal(&'a [u8]),
    Segment(&'a [u8]),
}

/// Snapshots (format 2) store names encoded, so changing this cut changes the snapshot format:
/// a new cut needs a new snapshot version that re-encodes names on load.
///
/// The canonical cut of a name into pieces, in order. A name is cut into tokens, each starting
/// at a `%` that does not continue an escape; maximal runs of stable tokens are segments if
/// long enough, everything else literal.
fn cut<'a>(name: &'a [u8], mut f: impl FnMut(Piece<'a>)) {
    let mut emit = |run: &'a [u8], stable: bool| {
        f(if stable && run.len() >= MIN_SEGMENT { Piece::Segment(run) } else { Piece::Literal(run) })
    };
    // Token by token (memchr to the next boundary, a vectorisable digit count over the token);
    // the current run's start and kind.
    let (mut tok, mut run, mut run_stable) = (0, 0, None);
    while tok < name.len() {
        let end = token_end(name, tok);
        let digits = name[tok..end].iter().filter(|b| b.is_ascii_digit()).count();
        let stable = digits < VOLATILE_DIGITS;
        match run_stable {
            Some(s) if s != stable => {
                emit(&name[run..tok], s);
                run = tok;
                run_stable = Some(stable);
            }
            None => run_stable = Some(stable),
            _ => {}
        }
        tok = end;
    }
    if let Some(s) = run_stable {
        emit(&name[run..], s);
    }
}

/// Where the token starting at `tok` ends: at the next `%` that does not continue an escape
/// (`%3A%2F%2Fhost` is one token), or at the end of the name.
fn token_end(name: &[u8], tok: usize) -> usize {
    let mut from = tok + 1;
    while let Some(off) = name.get(from..).and_then(|rest| memchr::memchr(b'%', rest)) {
        let i = from + off;
        if !(i >= tok + 3 && name[i - 3] == b'%') {
            return i;
        }
        from = i + 1;
    }
    name.len()
}

fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Calls `f` with each segment id an encoded name refers to, in order; false (after the ids
/// before it) if a reference is cut short, which no encoding made here has.
fn each_ref(enc: &[u8], mut f: impl FnMut(u32)) -> bool {
    let mut i = 0;
    while let Some(at) = memchr::memchr(REF, &enc[i..]) {
        i += at + 1;
        let Some(id) = get_varint(enc, &mut i) else { return false };
        f(id);
    }
    true
}

/// Reads a varint at `enc[*i..]`; `None` if it is cut short (not an encoding made here).
fn get_varint(enc: &[u8], i: &mut usize) -> Option<u32> {
    let mut v: u32 = 0;
    for shift in (0..35).step_by(7) {
        let b = *enc.get(*i)?;
        *i += 1;
        v |= u32::from(b & 0x7F).checked_shl(shift)?;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

impl NameDict {
    fn find(&self, seg: &[u8]) -> Option<u32> {
        let h = self.hasher.hash_one(seg);
        self.index.find(h, |&id| self.segs.get(id as usize).is_some_and(|s| &*s.bytes == seg)).copied()
    }

    /// Encodes `name` for storing, taking a use of each of its segments.
    pub fn intern(&mut self, name: &str) -> Encoded {
        let mut out = Vec::with_capacity(name.len().min(128));
        cut(name.as_bytes(), |p| match p {
            Piece::Literal(l) => out.extend_from_slice(l),
            Piece::Segment(s) => {
                let id = self.take(s);
                out.push(REF);
                put_varint(&mut out, id);
            }
        });
        Arc::from(out)
    }

    /// A use of segment `seg`, adding it if new.
    fn take(&mut self, seg: &[u8]) -> u32 {
        if let Some(id) = self.find(seg) {
            if let Some(s) = self.segs.get_mut(id as usize) {
                s.refs += 1;
            }
            return id;
        }
        let s = Segment { bytes: Arc::from(seg), refs: 1 };
        let id = match self.free.pop() {
            Some(id) => {
                self.segs[id as usize] = s;
                id
            }
            None => {
                self.segs.push(s);
                (self.segs.len() - 1) as u32
            }
        };
        let (segs, hasher) = (&self.segs, &self.hasher);
        let h = hasher.hash_one(seg);
        self.index.insert_unique(h, id, |&i| segs.get(i as usize).map_or(0, |s| hasher.hash_one(&*s.bytes)));
        id
    }

    /// Gives back the uses an encoded name (from [`NameDict::intern`]) took; segments no name
    /// uses any more are freed.
    pub fn release(&mut self, enc: &[u8]) {
        each_ref(enc, |id| {
            let Some(s) = self.segs.get_mut(id as usize) else { return };
            s.refs = s.refs.saturating_sub(1);
            if s.refs == 0 {
                let h = self.hasher.hash_one(&*s.bytes);
                if let Ok(e) = self.index.find_entry(h, |&x| x == id) {
                    e.remove();
                }
                self.segs[id as usize].bytes = Arc::from(&[][..]);
                self.free.push(id);
            }
        });
    }

    /// The stored form `name` has if some node has it; `None` if one of its segments is in no
    /// stored name (so no node has this name). Takes nothing.
    pub fn lookup(&self, name: &str) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(name.len().min(128));
        let mut absent = false;
        cut(name.as_bytes(), |p| match p {
            Piece::Literal(l) => out.extend_from_slice(l),
            Piece::Segment(_) if absent => {}
            Piece::Segment(s) => match self.find(s) {
                Some(id) => {
                    out.push(REF);
                    put_varint(&mut out, id);
                }
                None => absent = true,
            },
        });
        (!absent).then_some(out)
    }

    /// Calls `f` with the original name's bytes, piece by piece.
    fn for_each_piece(&self, enc: &[u8], mut f: impl FnMut(&[u8])) {
        let mut i = 0;
        while i < enc.len() {
            let lit = enc[i..].iter().position(|&b| b == REF).map_or(enc.len(), |p| i + p);
            if lit > i {
                f(&enc[i..lit]);
            }
            i = lit;
            if i < enc.len() {
                i += 1;
                let Some(id) = get_varint(enc, &mut i) else { return };
                if let Some(s) = self.segs.get(id as usize) {
                    f(&s.bytes);
                }
            }
        }
    }

    /// Appends the original name to `out`.
    pub fn decode_into(&self, enc: &[u8], out: &mut String) {
        // Pieces are cut at ASCII `%` bytes of a UTF-8 name, so each is UTF-8 on its own.
        self.for_each_piece(enc, |p| out.push_str(&String::from_utf8_lossy(p)));
    }

    pub fn decode(&self, enc: &[u8]) -> String {
        let mut s = String::new();
        self.decode_into(enc, &mut s);
        s
    }

    /// Length of the original name in bytes, as `decode_into` appends it (the pieces of an
    /// interned name are UTF-8, so no replacement character changes it).
    pub fn utf8_len(&self, enc: &[u8]) -> u64 {
        let mut n = 0u64;
        self.for_each_piece(enc, |p| n += String::from_utf8_lossy(p).len() as u64);
        n
    }

    /// Length of the original name in UTF-16 units (Java's `String.length()`).
    pub fn utf16_len(&self, enc: &[u8]) -> u64 {
        let mut n = 0u64;
        self.for_each_piece(enc, |p| {
            n += if p.is_ascii() { p.len() as u64 } else { String::from_utf8_lossy(p).encode_utf16().count() as u64 }
        });
        n
    }

    /// The segments in use, with their ids (what a snapshot stores once, before the names).
    pub fn segments(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        self.segs.iter().enumerate().filter(|(_, s)| s.refs > 0).map(|(id, s)| (id as u32, &*s.bytes))
    }

    /// Puts back segment `id` as a snapshot recorded it, unused until names read with
    /// [`NameDict::adopt`] take it. False if the id is taken or out of range, or the same bytes
    /// already have an id (one id per segment is what keeps encodings canonical).
    pub fn restore_segment(&mut self, id: u32, bytes: &[u8]) -> bool {
        let i = id as usize;
        if i >= MAX_SEGMENTS || bytes.len() < MIN_SEGMENT || self.find(bytes).is_some() {
            return false;
        }
        if self.segs.len() <= i {
            self.segs.resize(i + 1, Segment { bytes: Arc::from(&[][..]), refs: 0 });
        } else if !self.segs[i].bytes.is_empty() {
            return false;
        }
        self.segs[i] = Segment { bytes: Arc::from(bytes), refs: 0 };
        let (segs, hasher) = (&self.segs, &self.hasher);
        let h = hasher.hash_one(bytes);
        self.index.insert_unique(h, id, |&x| segs.get(x as usize).map_or(0, |s| hasher.hash_one(&*s.bytes)));
        true
    }

    /// Takes the uses of an encoded name read from a snapshot (made by [`NameDict::intern`] with
    /// the same segment ids); `None` if it refers to a segment that is not there or is cut short.
    pub fn adopt(&mut self, enc: &[u8]) -> Option<Encoded> {
        // Checked first, taken second: a bad name takes nothing.
        let mut known = true;
        let whole = each_ref(enc, |id| known &= self.segs.get(id as usize).is_some_and(|s| !s.bytes.is_empty()));
        if !whole || !known {
            return None;
        }
        each_ref(enc, |id| {
            if let Some(s) = self.segs.get_mut(id as usize) {
                s.refs += 1;
            }
        });
        Some(Arc::from(enc))
    }

    /// Ends a restore: segments no name took are dropped and every unused id is free again.
    pub fn finish_restore(&mut self) {
        self.free.clear();
        for id in 0..self.segs.len() {
            if self.segs[id].refs == 0 {
                if !self.segs[id].bytes.is_empty() {
                    let h = self.hasher.hash_one(&*self.segs[id].bytes);
                    if let Ok(e) = self.index.find_entry(h, |&x| x as usize == id) {
                        e.remove();
                    }
                    self.segs[id].bytes = Arc::from(&[][..]);
                }
                self.free.push(id as u32);
            }
        }
    }

    /// Segments held.
    #[cfg(test)]
    pub fn segment_count(&self) -> usize {
        self.index.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dubbo(host: &str, pid: u32) -> String {
        format!(
            "dubbo%3A%2F%2F{host}%3A20880%2Fcom.demo.OrderService%3Fanyhost%3Dtrue%26application%3Ddemo\
             %26methods%3DgetOrder%2CplaceOrder%26pid%3D{pid}%26release%3D3.2.10%26side%3Dprovider"
        )
    }

    fn names() -> Vec<String> {
        let mut v = vec![
            String::new(),
            "a".into(),
            "%".into(),
            "%%".into(),
            "%%%%%%%%%%%%%%%%".into(),
            "%2".into(),
            "%2F".into(),
            "abc%".into(),
            "%zz%zzzzzzzzzzzzzzzz".into(),
            "\u{ff}\u{fe}\u{7ff}\u{ffff}".into(),
            "ÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿ%ÿÿÿÿÿÿÿÿÿÿÿ".into(),
            "été%C3%A9%E2%82%ACcafé-menu-du-jour".into(),
            "日本語のノード名前%20ながいながい名前".into(),
            "lock-0000000001".into(),
            "providers".into(),
            "zookeeper".into(),
            "x".repeat(100_000),
            format!("{}%26{}", "m".repeat(70_000), "1234".repeat(10)),
            dubbo("10.0.0.1", 1234),
            dubbo("10.0.0.2", 1235),
            dubbo("host-name-without-digits", 1),
        ];
        // Seeded pseudo-random names from an alphabet of escape-ish bytes and non-ASCII text.
        let alphabet = ["%", "%2", "%2C", "%3D", "a", "b", "1", "9", ".", "é", "€", "\u{10348}", "abcdefgh"];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2_000 {
            let mut s = String::new();
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let len = (seed >> 58) as usize;
            for _ in 0..len {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                s.push_str(alphabet[(seed >> 33) as usize % alphabet.len()]);
            }
            v.push(s);
        }
        v
    }

    #[test]
    fn round_trip_and_utf16_length() {
        let mut d = NameDict::default();
        for n in names() {
            let e = d.intern(&n);
            assert_eq!(d.decode(&e), n);
            assert_eq!(d.utf16_len(&e), n.encode_utf16().count() as u64, "{n:?}");
        }
    }

    #[test]
    fn encoding_is_canonical_and_lookup_matches() {
        let mut d = NameDict::default();
        let all = names();
        let first: Vec<Encoded> = all.iter().map(|n| d.intern(n)).collect();
        for (n, e) in all.iter().zip(&first) {
            assert_eq!(&*d.intern(n), &**e, "{n:?}");
            assert_eq!(d.lookup(n).as_deref(), Some(&**e), "{n:?}");
        }
        // Distinct names never share an encoding.
        let mut seen = std::collections::HashMap::new();
        for (n, e) in all.iter().zip(&first) {
            if let Some(other) = seen.insert(e.clone(), n) {
                assert_eq!(other, n);
            }
        }
    }

    #[test]
    fn siblings_share_segments() {
        let mut d = NameDict::default();
        let a = d.intern(&dubbo("10.0.0.1", 1234));
        let segs = d.segment_count();
        let b = d.intern(&dubbo("10.0.0.2", 1235));
        assert_eq!(d.segment_count(), segs, "the second provider adds no segment");
        assert!(a.len() < dubbo("10.0.0.1", 1234).len() / 3, "{} bytes", a.len());
        assert_ne!(a, b);
    }

    #[test]
    fn segments_are_released_with_their_last_name() {
        let mut d = NameDict::default();
        let a = d.intern(&dubbo("10.0.0.1", 1234));
        let b = d.intern(&dubbo("10.0.0.2", 1235));
        assert!(d.segment_count() > 0);
        d.release(&a);
        assert!(d.segment_count() > 0);
        assert_eq!(d.decode(&b), dubbo("10.0.0.2", 1235));
        d.release(&b);
        assert_eq!(d.segment_count(), 0);
        assert_eq!(d.lookup(&dubbo("10.0.0.2", 1235)), None);
        // Freed ids are reused, and a name stored again round-trips.
        let ids = d.segs.len();
        let c = d.intern("another-long-name%26with-segments");
        assert_eq!(d.decode(&c), "another-long-name%26with-segments");
        assert_eq!(d.segs.len(), ids);
        for n in names() {
            let e = d.intern(&n);
            d.release(&e);
        }
        d.release(&c);
        assert_eq!(d.segment_count(), 0);
        assert_eq!(d.segs.len(), d.free.len());
    }

    #[test]
    fn lookup_of_a_name_with_an_absent_segment_is_none() {
        let mut d = NameDict::default();
        d.intern(&dubbo("10.0.0.1", 1234));
        assert!(d.lookup(&dubbo("10.0.0.9", 4321)).is_some(), "only literal parts differ");
        assert_eq!(d.lookup(&dubbo("10.0.0.1", 1234).replace("OrderService", "PayService")), None);
        assert_eq!(d.lookup("no-such-long-segment"), None);
        assert_eq!(d.lookup("short").as_deref(), Some(&b"short"[..]));
    }

    #[test]
    fn short_and_digit_heavy_parts_stay_literal() {
        let mut d = NameDict::default();
        assert_eq!(&*d.intern("lock-0000000001"), b"lock-0000000001");
        assert_eq!(&*d.intern("config"), b"config");
        assert_eq!(d.segment_count(), 0);
        let e = d.intern("providers");
        assert_eq!(e[0], REF);
        assert_eq!(d.segment_count(), 1);
    }
}
