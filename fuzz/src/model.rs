//! Request-sequence fuzzing: random valid and invalid writes from several sessions drive zkr's
//! `DataTree` (through `prep`, as the core does) and a deliberately simple reference model side by
//! side; after every step the result codes, created paths, zxid and every node (data, versions,
//! cversion, czxid/mzxid/pzxid, ephemeral owner, children) must agree.
//!
//! The model is written from ZooKeeper's observable behaviour, not from zkr's code: checks in
//! PrepRequestProcessor's order; the sequential suffix is the parent's count of creates (%010d);
//! the cversion clients see is `2 × creates − children`; deletes set the parent's pzxid; a failed
//! write still consumes a zxid; a failed multi reports 0 before the failing op, its error, then
//! RuntimeInconsistency, and changes nothing; closing a session deletes its ephemerals.
//!
//! Ops come from bytes (`ops_from_bytes`) so that libFuzzer can steer them; the CI harness feeds
//! seeded random bytes.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use zkr::proto::{Acl, CreateRequest, ErrorCode, MultiOp, OpCode};
use zkr::tree::{prep, DataTree, OpOutcome};
use zkr::txn::{Txn, TxnOp};

const OK: i32 = 0;
const BAD_ARGUMENTS: i32 = -8;
const RUNTIME_INCONSISTENCY: i32 = -2;
const NO_NODE: i32 = -101;
const BAD_VERSION: i32 = -103;
const NO_CHILDREN_FOR_EPHEMERALS: i32 = -108;
const NODE_EXISTS: i32 = -110;
const NOT_EMPTY: i32 = -111;
const CONTAINER: i64 = i64::MIN;

/// Paths the ops pick from; the invalid ones are there on purpose.
const PATHS: &[&str] = &[
    "/a",
    "/b",
    "/a/b",
    "/a/c",
    "/a/b/c",
    "/b/a",
    "/c",
    "/zookeeper",
    "/zookeeper/x",
    "/",
    "a",
    "/a/",
    "/a//b",
    "/a/./b",
    "/a/..",
    "",
];
const SESSIONS: usize = 3;

#[derive(Debug, Clone)]
pub enum Sub {
    Create { path: String, flags: i32, data: u8 },
    Delete { path: String, version: i32 },
    SetData { path: String, version: i32, data: u8 },
    Check { path: String, version: i32 },
}

#[derive(Debug, Clone)]
pub enum Op {
    Single { session: usize, sub: Sub },
    Multi { session: usize, subs: Vec<Sub> },
    Close { session: usize },
}

/// Decodes ops from arbitrary bytes; every byte string is a valid (possibly empty) program.
/// Paths can also name nodes created earlier (sequential names included).
pub fn ops_from_bytes(data: &[u8]) -> Vec<Op> {
    let mut it = data.iter().copied();
    let mut ops = Vec::new();
    let mut created: Vec<String> = Vec::new();
    let mut next = move || it.next();
    let pick_path = |b: u8, created: &Vec<String>| -> String {
        let i = b as usize % (PATHS.len() + created.len().min(16));
        if i < PATHS.len() {
            PATHS[i].to_owned()
        } else {
            created[created.len() - 1 - (i - PATHS.len())].clone()
        }
    };
    let version = |b: u8| match b % 6 {
        0..=2 => -1,
        v => v as i32 - 3,
    };
    while ops.len() < 400 {
        let Some(kind) = next() else { break };
        let (Some(a), Some(b), Some(c)) = (next(), next(), next()) else { break };
        let session = (kind as usize / 16) % SESSIONS;
        let sub = |k: u8, a: u8, b: u8, c: u8, created: &mut Vec<String>| -> Sub {
            match k % 5 {
                0 | 1 => {
                    // 0 persistent, 1 ephemeral, 2 sequential, 3 ephemeral sequential, 4 container,
                    // and now and then a flag ZooKeeper refuses.
                    let flags = if b.is_multiple_of(17) { 9 } else { (b % 5) as i32 };
                    let mut path = pick_path(a, created);
                    if b.is_multiple_of(7) {
                        path.push_str("/s-");
                    }
                    let p = path.clone();
                    created.push(if flags == 2 || flags == 3 { format!("{p}{:010}", c % 4) } else { p });
                    Sub::Create { path, flags, data: c }
                }
                2 => Sub::Delete { path: pick_path(a, created), version: version(b) },
                3 => Sub::SetData { path: pick_path(a, created), version: version(b), data: c },
                _ => Sub::Check { path: pick_path(a, created), version: version(b) },
            }
        };
        let op = match kind % 8 {
            0..=4 => {
                let s = sub(kind / 8 % 4, a, b, c, &mut created);
                // A lone check is a read, not a write: make it a create.
                let s = match s {
                    Sub::Check { path, .. } => Sub::Create { path, flags: 0, data: c },
                    s => s,
                };
                Op::Single { session, sub: s }
            }
            5 | 6 => {
                let n = a as usize % 4 + 1;
                let mut subs = Vec::new();
                for _ in 0..n {
                    let (Some(k), Some(a), Some(b), Some(c)) = (next(), next(), next(), next()) else { break };
                    subs.push(sub(k, a, b, c, &mut created));
                }
                Op::Multi { session, subs }
            }
            _ => Op::Close { session },
        };
        ops.push(op);
    }
    ops
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Node {
    data: Option<Vec<u8>>,
    czxid: i64,
    mzxid: i64,
    pzxid: i64,
    version: i32,
    /// Children ever created (ZooKeeper's stored cversion).
    creates: i32,
    owner: i64,
    children: BTreeSet<String>,
}

/// What the model compares with the tree, per path.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    data: Option<Vec<u8>>,
    czxid: i64,
    mzxid: i64,
    pzxid: i64,
    version: i32,
    cversion: i32,
    owner: i64,
    children: usize,
}

#[derive(Debug, Clone)]
struct Model {
    nodes: BTreeMap<String, Node>,
    zxid: i64,
}

fn valid(p: &str) -> bool {
    if p == "/" {
        return true;
    }
    p.starts_with('/')
        && !p.ends_with('/')
        && p[1..].split('/').all(|c| !c.is_empty() && c != "." && c != "..")
        && !p.contains('\0')
}

fn parent_of(p: &str) -> Result<String, i32> {
    match p.rfind('/') {
        Some(0) => Ok("/".to_owned()),
        Some(i) => Ok(p[..i].to_owned()),
        None => Err(BAD_ARGUMENTS),
    }
}

fn is_session(owner: i64) -> bool {
    owner != 0 && owner != CONTAINER && owner & (0xffu64 << 56) as i64 != (0xffu64 << 56) as i64
}

fn check_version(current: i32, expected: i32) -> Result<(), i32> {
    if expected == -1 || expected == current {
        Ok(())
    } else {
        Err(BAD_VERSION)
    }
}

fn name_of(p: &str) -> String {
    p.rsplit('/').next().unwrap_or("").to_owned()
}

impl Model {
    fn from_tree(tree: &DataTree) -> Model {
        let mut nodes = BTreeMap::new();
        tree.visit(|p, n| {
            let s = n.wire_stat();
            nodes.insert(
                p.to_owned(),
                Node {
                    data: n.data.as_ref().map(|d| d.to_vec()),
                    czxid: s.czxid,
                    mzxid: s.mzxid,
                    pzxid: s.pzxid,
                    version: s.version,
                    creates: (s.cversion + s.num_children) / 2,
                    owner: s.ephemeral_owner,
                    children: tree.lookup(p).map(|id| tree.child_names(id).collect()).unwrap_or_default(),
                },
            );
        });
        Model { nodes, zxid: tree.last_zxid() }
    }

    fn seen(&self) -> BTreeMap<String, Seen> {
        self.nodes
            .iter()
            .map(|(p, n)| {
                let cversion = 2 * n.creates - n.children.len() as i32;
                let owner = if is_session(n.owner) { n.owner } else { 0 };
                let seen = Seen {
                    data: n.data.clone(),
                    czxid: n.czxid,
                    mzxid: n.mzxid,
                    pzxid: n.pzxid,
                    version: n.version,
                    cversion,
                    owner,
                    children: n.children.len(),
                };
                (p.clone(), seen)
            })
            .collect()
    }

    fn remove(&mut self, p: &str, zxid: i64) {
        self.nodes.remove(p);
        if let Ok(parent) = parent_of(p) {
            if let Some(pn) = self.nodes.get_mut(&parent) {
                pn.children.remove(&name_of(p));
                pn.pzxid = zxid;
            }
        }
    }

    /// One sub-op at `zxid`; Ok(created path or "").
    fn sub(&mut self, sub: &Sub, session: i64, zxid: i64) -> Result<String, i32> {
        match sub {
            Sub::Create { path, flags, data } => {
                if !(0..=4).contains(flags) {
                    return Err(BAD_ARGUMENTS);
                }
                let parent = parent_of(path)?;
                let pn = self.nodes.get(&parent).ok_or(NO_NODE)?;
                let mut full = path.clone();
                if *flags == 2 || *flags == 3 {
                    full.push_str(&format!("{:010}", pn.creates));
                }
                if !valid(&full) {
                    return Err(BAD_ARGUMENTS);
                }
                if self.nodes.contains_key(&full) {
                    return Err(NODE_EXISTS);
                }
                if is_session(pn.owner) {
                    return Err(NO_CHILDREN_FOR_EPHEMERALS);
                }
                let owner = match flags {
                    1 | 3 => session,
                    4 => CONTAINER,
                    _ => 0,
                };
                let data = if *data == 0 { None } else { Some(vec![*data; *data as usize % 5]) };
                let node = Node {
                    data,
                    czxid: zxid,
                    mzxid: zxid,
                    pzxid: zxid,
                    version: 0,
                    creates: 0,
                    owner,
                    children: BTreeSet::new(),
                };
                self.nodes.insert(full.clone(), node);
                let pn = self.nodes.get_mut(&parent).expect("parent");
                pn.creates += 1;
                pn.pzxid = zxid;
                pn.children.insert(name_of(&full));
                Ok(full)
            }
            Sub::Delete { path, version } => {
                let parent = parent_of(path)?;
                if matches!(path.as_str(), "/" | "/zookeeper" | "/zookeeper/quota" | "/zookeeper/config") {
                    return Err(BAD_ARGUMENTS);
                }
                self.nodes.get(&parent).ok_or(NO_NODE)?;
                let n = self.nodes.get(path).ok_or(NO_NODE)?;
                check_version(n.version, *version)?;
                if !n.children.is_empty() {
                    return Err(NOT_EMPTY);
                }
                self.remove(path, zxid);
                Ok(String::new())
            }
            Sub::SetData { path, version, data } => {
                if !valid(path) {
                    return Err(BAD_ARGUMENTS);
                }
                let n = self.nodes.get_mut(path).ok_or(NO_NODE)?;
                check_version(n.version, *version)?;
                n.version += 1;
                n.mzxid = zxid;
                n.data = Some(vec![*data; 3]);
                Ok(String::new())
            }
            Sub::Check { path, version } => {
                if !valid(path) {
                    return Err(BAD_ARGUMENTS);
                }
                let n = self.nodes.get(path).ok_or(NO_NODE)?;
                check_version(n.version, *version)?;
                Ok(String::new())
            }
        }
    }

    fn close(&mut self, session: i64, zxid: i64) {
        let mine: Vec<String> = self.nodes.iter().filter(|(_, n)| n.owner == session).map(|(p, _)| p.clone()).collect();
        for p in mine {
            self.remove(&p, zxid);
        }
    }
}

fn to_request(sub: &Sub) -> MultiOp {
    match sub {
        Sub::Create { path, flags, data } => MultiOp::Create(
            OpCode::Create,
            CreateRequest {
                path: path.clone(),
                data: if *data == 0 { None } else { Some(vec![*data; *data as usize % 5].into()) },
                acl: Acl::open_unsafe(),
                flags: *flags,
                ttl: None,
            },
        ),
        Sub::Delete { path, version } => MultiOp::Delete { path: path.clone(), version: *version },
        Sub::SetData { path, version, data } => {
            MultiOp::SetData { path: path.clone(), data: Some(vec![*data; 3].into()), version: *version }
        }
        Sub::Check { path, version } => MultiOp::Check { path: path.clone(), version: *version },
    }
}

fn tree_state(tree: &DataTree) -> BTreeMap<String, Seen> {
    let mut out = BTreeMap::new();
    tree.visit(|p, n| {
        let s = n.wire_stat();
        out.insert(
            p.to_owned(),
            Seen {
                data: n.data.as_ref().map(|d| d.to_vec()),
                czxid: s.czxid,
                mzxid: s.mzxid,
                pzxid: s.pzxid,
                version: s.version,
                cversion: s.cversion,
                owner: s.ephemeral_owner,
                children: s.num_children as usize,
            },
        );
    });
    out
}

fn code(o: &OpOutcome) -> i32 {
    match o {
        OpOutcome::Error(e) => e.code(),
        _ => OK,
    }
}

/// Runs `ops` against a fresh tree and the model; panics at the first disagreement.
pub fn run(ops: &[Op]) {
    let mut tree = DataTree::new();
    let mut model = Model::from_tree(&tree);
    let mut sessions: Vec<i64> = Vec::new();
    let mut next_session = 0x100i64;
    let mut changes = Vec::new();
    let mut apply = |tree: &mut DataTree, session: i64, op: TxnOp| -> OpOutcome {
        let txn = Txn { zxid: tree.last_zxid() + 1, time: 1_700_000_000_000, session, op };
        changes.clear();
        tree.apply(&txn, &mut changes)
    };
    for _ in 0..SESSIONS {
        apply(&mut tree, next_session, TxnOp::CreateSession { timeout_ms: 30_000, password: None });
        model.zxid += 1;
        sessions.push(next_session);
        next_session += 1;
    }
    for (step, op) in ops.iter().enumerate() {
        let zxid = model.zxid + 1;
        match op {
            Op::Single { session, sub } => {
                let sid = sessions[*session];
                let ctx = prep::PrepCtx { session: sid, ids: &[], ttl_enabled: true, enforce_quota: false };
                let txn = prep::prepare(&tree, &ctx, &to_request(sub));
                let got = apply(&mut tree, sid, txn);
                let want = model.sub(sub, sid, zxid);
                let got_r = match &got {
                    OpOutcome::Created { path, .. } => Ok(path.clone()),
                    OpOutcome::Error(e) => Err(e.code()),
                    _ => Ok(String::new()),
                };
                assert_eq!(got_r, want, "step {step}: {op:?}");
            }
            Op::Multi { session, subs } => {
                let sid = sessions[*session];
                let ctx = prep::PrepCtx { session: sid, ids: &[], ttl_enabled: true, enforce_quota: false };
                let reqs: Vec<MultiOp> = subs.iter().map(to_request).collect();
                let txn = prep::prepare_multi(&tree, &ctx, &reqs);
                let got = match apply(&mut tree, sid, txn) {
                    OpOutcome::Multi(v) => v.iter().map(code).collect::<Vec<_>>(),
                    other => panic!("step {step}: multi gave {other:?}"),
                };
                let mut scratch = model.clone();
                let mut want = Vec::new();
                let mut failed = None;
                for (i, s) in subs.iter().enumerate() {
                    if failed.is_some() {
                        want.push(RUNTIME_INCONSISTENCY);
                        continue;
                    }
                    match scratch.sub(s, sid, zxid) {
                        Ok(_) => want.push(OK),
                        Err(e) => {
                            failed = Some(i);
                            want.push(e);
                        }
                    }
                }
                if let Some(f) = failed {
                    for w in want.iter_mut().take(f) {
                        *w = OK;
                    }
                } else {
                    model.nodes = scratch.nodes;
                }
                assert_eq!(got, want, "step {step}: {op:?}");
            }
            Op::Close { session } => {
                let sid = sessions[*session];
                apply(&mut tree, sid, TxnOp::CloseSession);
                model.close(sid, zxid);
                model.zxid += 1;
                // The slot gets a fresh session, as a reconnecting client would.
                sessions[*session] = next_session;
                apply(&mut tree, next_session, TxnOp::CreateSession { timeout_ms: 30_000, password: None });
                next_session += 1;
            }
        }
        model.zxid += 1;
        assert_eq!(tree.last_zxid(), model.zxid, "step {step}: zxid after {op:?}");
        let (got, want) = (tree_state(&tree), model.seen());
        if got != want {
            let diff: Vec<String> = got
                .keys()
                .chain(want.keys())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .filter(|k| got.get(*k) != want.get(*k))
                .map(|k| format!("{k}: tree {:?} / model {:?}", got.get(k), want.get(k)))
                .collect();
            panic!("step {step}: after {op:?} the tree and the model differ:\n{}", diff.join("\n"));
        }
        let _ = ErrorCode::Ok;
    }
}
