//! Running one parsed command against the session: the requests zkCli's commands send (same
//! op codes, same client-side checks, in the same order) and the output they print.
//!
//! Talks to the server only through `conn::Client`; prints only through `Term`.

use super::acl;
use super::cmdline::{java_int, java_long};
use super::commands::{usage_of, Command, Create};
use super::error::CliError;
use super::format;
use super::term::Term;
use crate::client::conn::{Call, Client, Reply};
use crate::client::path;
use crate::client::watches::{Deregistration, Registration};
use crate::proto::{Acl, CreateMode, CreateRequest, ErrorCode, MultiOp, MultiResult, OpCode, RequestBody, Response};
use tokio::runtime::Handle;

/// `EphemeralType.TTL.maxValue()`: TTLs live in 40 bits of the ephemeral owner.
const MAX_TTL: i64 = 0xFF_FFFF_FFFF;
/// `ZooDefs.CONFIG_NODE`, read without the chroot.
const CONFIG_NODE: &str = "/zookeeper/config";
/// Deletes per multi in `deleteall` unless `-b` says otherwise (`ZKUtil.deleteRecursive`).
const DELETE_BATCH: i32 = 1000;

pub struct Exec<'a, 't> {
    pub client: &'a Client,
    pub rt: &'a Handle,
    pub term: &'a mut Term<'t>,
}

pub(super) type Result<T> = std::result::Result<T, CliError>;

pub(super) fn check_path(p: &str) -> Result<()> {
    path::validate(p).map_err(CliError::MalformedPath)
}

fn version_arg(v: &Option<String>) -> Result<i32> {
    match v {
        Some(v) => java_int(v).map_err(CliError::number),
        None => Ok(-1),
    }
}

impl Exec<'_, '_> {
    pub(super) fn call(&self, call: Call) -> Reply {
        self.rt.block_on(self.client.call(call))
    }

    pub(super) fn server(&self, client_path: &str) -> String {
        self.client.chroot().to_server(client_path)
    }

    fn print_stat(&mut self, r: &Response) {
        let stat = match r {
            Response::Stat(s)
            | Response::GetData { stat: s, .. }
            | Response::GetAcl { stat: s, .. }
            | Response::Children2 { stat: s, .. }
            | Response::Create2 { stat: s, .. } => s,
            _ => return,
        };
        self.term.out(&format::stat(stat));
    }

    /// Runs one command: a dispatch to the method that sends its requests and prints its output.
    pub fn run(&mut self, cmd: Command) -> Result<()> {
        match cmd {
            Command::Ls { path, watch, stat, recursive } => {
                let path = path.ok_or_else(|| CliError::Malformed(usage_of("ls")))?;
                if recursive {
                    return self.visit(&path, watch, &mut |e, p| e.term.outln(p));
                }
                self.ls(&path, watch, stat)
            }
            Command::Get { path, watch, stat } => self.get(&path, watch, stat),
            Command::Stat { path, watch } => self.stat(&path, watch),
            Command::Create(c) => self.create(c),
            Command::Set { path, data, stat, version } => self.set(&path, data, stat, &version),
            Command::Delete { path, version } => self.delete(&path, &version),
            Command::DeleteAll { path, batch } => self.delete_all(&path, batch),
            Command::GetAcl { path, stat } => self.get_acl(&path, stat),
            Command::SetAcl { path, acl, stat, version, recursive } => {
                self.set_acl_command(&path, &acl, stat, &version, recursive)
            }
            Command::Sync { path } => self.sync(&path),
            Command::AddAuth { scheme, auth } => {
                self.rt.block_on(self.client.add_auth(scheme, auth.map(String::into_bytes)));
                Ok(())
            }
            Command::WhoAmI => self.who_am_i(),
            Command::GetAllChildrenNumber { path } => {
                let path = path.ok_or_else(|| CliError::Malformed(usage_of("getAllChildrenNumber")))?;
                self.all_children_number(&path)
            }
            Command::GetEphemerals { path } => self.ephemerals(path),
            Command::AddWatch { path, mode } => self.add_watch(&path, mode),
            Command::RemoveWatches { path, kind, local } => {
                check_path(&path)?;
                let body = RequestBody::Watches { path: self.server(&path), watcher_type: kind as i32 };
                let mut call = Call::new(OpCode::RemoveWatches, body);
                call.unwatch = Some(Deregistration { path: path.clone(), kind, local });
                self.checked(call, &path).map(drop)
            }
            Command::Config { client, watch, stat } => self.config(client, watch, stat),
            Command::Version => {
                self.term.outln(&format!("ZooKeeper CLI version: zkr {}", env!("CARGO_PKG_VERSION")));
                Ok(())
            }
            Command::Close => {
                self.rt.block_on(self.client.close());
                Ok(())
            }
            Command::SetQuota { path, limit, value } => self.set_quota(&path, limit, &value),
            Command::ListQuota { path } => self.list_quota(&path),
            Command::DelQuota { path, limit } => self.del_quota(&path, limit),
            Command::Unsupported(name) => Err(CliError::Malformed(format!("{name} is not supported by zkr cli"))),
        }
    }

    /// Sends `call`; an error reply becomes the command's error, naming `path` as zkCli does.
    fn checked(&self, call: Call, path: &str) -> Result<Reply> {
        let r = self.call(call);
        if r.err != 0 {
            return Err(CliError::keeper(r.err, path));
        }
        Ok(r)
    }

    fn print_stat_if(&mut self, stat: bool, r: &Reply) {
        if stat {
            self.print_stat(&r.body);
        }
    }

    fn get(&mut self, path: &str, watch: bool, stat: bool) -> Result<()> {
        check_path(path)?;
        let body = RequestBody::PathWatch { path: self.server(path), watch };
        let reg = if watch { Registration::Data(path.to_owned()) } else { Registration::None };
        let r = self.checked(Call::new(OpCode::GetData, body).watching(reg), path)?;
        if let Response::GetData { data, .. } = &r.body {
            self.term.outln(&data.as_deref().map_or("null".into(), String::from_utf8_lossy));
        }
        self.print_stat_if(stat, &r);
        Ok(())
    }

    fn stat(&mut self, path: &str, watch: bool) -> Result<()> {
        check_path(path)?;
        let body = RequestBody::PathWatch { path: self.server(path), watch };
        let reg = if watch { Registration::Exists(path.to_owned()) } else { Registration::None };
        let r = self.checked(Call::new(OpCode::Exists, body).watching(reg), path)?;
        self.print_stat(&r.body);
        Ok(())
    }

    fn set(&mut self, path: &str, data: String, stat: bool, version: &Option<String>) -> Result<()> {
        let version = version_arg(version)?;
        check_path(path)?;
        let body = RequestBody::SetData { path: self.server(path), data: Some(data.into_bytes().into()), version };
        let r = self.checked(Call::new(OpCode::SetData, body), path)?;
        self.print_stat_if(stat, &r);
        Ok(())
    }

    fn delete(&mut self, path: &str, version: &Option<String>) -> Result<()> {
        let version = version_arg(version)?;
        check_path(path)?;
        // Like the Java client, "/" is never chrooted: deleting it must always fail.
        let server = if path == "/" { path.to_owned() } else { self.server(path) };
        self.checked(Call::new(OpCode::Delete, RequestBody::Delete { path: server, version }), path).map(drop)
    }

    fn get_acl(&mut self, path: &str, stat: bool) -> Result<()> {
        check_path(path)?;
        let r = self.checked(Call::new(OpCode::GetAcl, RequestBody::Path { path: self.server(path) }), path)?;
        if let Response::GetAcl { acl, .. } = &r.body {
            for a in acl {
                self.term.out(&format::acl(a));
            }
        }
        self.print_stat_if(stat, &r);
        Ok(())
    }

    fn set_acl_command(
        &mut self,
        path: &str,
        acl: &str,
        stat: bool,
        version: &Option<String>,
        recursive: bool,
    ) -> Result<()> {
        let acl = self.parse_acl(acl);
        let version = version_arg(version)?;
        if recursive {
            return self.visit(path, false, &mut |e, p| {
                if let Err(msg) = e.set_acl(p, &acl, version) {
                    // zkCli prints these without a line break.
                    e.term.out(&msg);
                }
            });
        }
        check_path(path)?;
        if acl.is_empty() {
            return Err(CliError::Keeper { code: ErrorCode::InvalidAcl.code(), path: None });
        }
        let r = self.set_acl_call(path, &acl, version);
        if r.err != 0 {
            return Err(CliError::keeper(r.err, path));
        }
        self.print_stat_if(stat, &r);
        Ok(())
    }

    fn sync(&mut self, path: &str) -> Result<()> {
        check_path(path)?;
        let r = self.call(Call::new(OpCode::Sync, RequestBody::Path { path: self.server(path) }));
        if r.err == 0 {
            self.term.outln("Sync is OK");
        } else {
            self.term.outln(&format!("Sync has failed. rc={}", r.err));
        }
        Ok(())
    }

    fn who_am_i(&mut self) -> Result<()> {
        // The Java client's whoAmI() ignores the reply's error: a failure prints the header only.
        let r = self.call(Call::new(OpCode::WhoAmI, RequestBody::Empty));
        self.term.outln("Auth scheme: User");
        if let Response::WhoAmI(ids) = &r.body {
            for (scheme, user) in ids {
                self.term.outln(&format!("{scheme}: {user}"));
            }
        }
        Ok(())
    }

    fn all_children_number(&mut self, path: &str) -> Result<()> {
        check_path(path)?;
        let body = RequestBody::Path { path: self.server(path) };
        let r = self.checked(Call::new(OpCode::GetAllChildrenNumber, body), path)?;
        if let Response::Number(n) = r.body {
            self.term.outln(&n.to_string());
        }
        Ok(())
    }

    fn ephemerals(&mut self, path: Option<String>) -> Result<()> {
        // The Java client sends the prefix as given (no chroot) and reports no path.
        let prefix = path.unwrap_or_else(|| "/".to_string());
        check_path(&prefix)?;
        let r = self.call(Call::new(OpCode::GetEphemerals, RequestBody::Path { path: prefix }));
        if r.err != 0 {
            return Err(CliError::Keeper { code: r.err, path: None });
        }
        if let Response::Strings(v) = &r.body {
            self.term.outln(&format::java_list(v));
        }
        Ok(())
    }

    fn add_watch(&mut self, path: &str, mode: super::commands::AddWatchMode) -> Result<()> {
        path::validate(path).map_err(|m| CliError::Uncaught(format!("java.lang.IllegalArgumentException: {m}")))?;
        let body = RequestBody::AddWatch { path: self.server(path), mode: mode.wire() };
        let reg = match mode {
            super::commands::AddWatchMode::Persistent => Registration::Persistent(path.to_owned()),
            super::commands::AddWatchMode::PersistentRecursive => Registration::PersistentRecursive(path.to_owned()),
        };
        self.checked(Call::new(OpCode::AddWatch, body).watching(reg), path).map(drop)
    }

    fn config(&mut self, client: bool, watch: bool, stat: bool) -> Result<()> {
        let body = RequestBody::PathWatch { path: CONFIG_NODE.to_string(), watch };
        let reg = if watch { Registration::Data(CONFIG_NODE.to_string()) } else { Registration::None };
        let r = self.checked(Call::new(OpCode::GetData, body).watching(reg), CONFIG_NODE)?;
        if let Response::GetData { data, .. } = &r.body {
            let text = data.as_deref().map_or("null".into(), String::from_utf8_lossy);
            self.term.outln(&if client { format::client_config(&text) } else { text.into_owned() });
        }
        self.print_stat_if(stat, &r);
        Ok(())
    }

    fn ls(&mut self, path: &str, watch: bool, stat: bool) -> Result<()> {
        check_path(path)?;
        // zkCli asks for the stat only with -s, and that is what picks getChildren2.
        let op = if stat { OpCode::GetChildren2 } else { OpCode::GetChildren };
        let body = RequestBody::PathWatch { path: self.server(path), watch };
        let reg = if watch { Registration::Child(path.to_string()) } else { Registration::None };
        let r = self.call(Call::new(op, body).watching(reg));
        if r.err != 0 {
            return Err(CliError::keeper(r.err, path));
        }
        let mut names: Vec<String> = match &r.body {
            Response::Children(c) | Response::Children2 { children: c, .. } => {
                c.iter().map(|s| s.to_string()).collect()
            }
            _ => Vec::new(),
        };
        format::java_sort(&mut names);
        self.term.outln(&format::java_list(&names));
        if stat {
            self.print_stat(&r.body);
        }
        Ok(())
    }

    /// `ZKUtil.visitSubTreeDFS`: the root (after a getData that must succeed), then each
    /// level's sorted children before descending; nodes that vanish meanwhile are skipped.
    pub(super) fn visit(&mut self, root: &str, watch: bool, f: &mut dyn FnMut(&mut Self, &str)) -> Result<()> {
        check_path(root)?;
        let body = RequestBody::PathWatch { path: self.server(root), watch };
        let reg = if watch { Registration::Data(root.to_string()) } else { Registration::None };
        let r = self.call(Call::new(OpCode::GetData, body).watching(reg));
        if r.err != 0 {
            return Err(CliError::keeper(r.err, root));
        }
        f(self, root);
        self.visit_children(root, watch, f)
    }

    fn visit_children(&mut self, path: &str, watch: bool, f: &mut dyn FnMut(&mut Self, &str)) -> Result<()> {
        let body = RequestBody::PathWatch { path: self.server(path), watch };
        let reg = if watch { Registration::Child(path.to_string()) } else { Registration::None };
        let r = self.call(Call::new(OpCode::GetChildren2, body).watching(reg));
        if r.err == ErrorCode::NoNode.code() {
            return Ok(());
        }
        if r.err != 0 {
            return Err(CliError::keeper(r.err, path));
        }
        let mut names: Vec<String> = match &r.body {
            Response::Children2 { children, .. } => children.iter().map(|s| s.to_string()).collect(),
            _ => Vec::new(),
        };
        format::java_sort(&mut names);
        let child = |n: &str| if path == "/" { format!("/{n}") } else { format!("{path}/{n}") };
        for n in &names {
            f(self, &child(n));
        }
        for n in &names {
            self.visit_children(&child(n), watch, f)?;
        }
        Ok(())
    }

    fn parse_acl(&mut self, text: &str) -> Vec<Acl> {
        let parsed = acl::parse(text);
        for c in &parsed.complaints {
            self.term.errln(c);
        }
        parsed.acl
    }

    fn set_acl_call(&self, path: &str, acl: &[Acl], version: i32) -> Reply {
        let body = RequestBody::SetAcl { path: self.server(path), acl: acl.to_vec(), version };
        self.call(Call::new(OpCode::SetAcl, body))
    }

    /// One `setACL` of `setAcl -R`; `Err` is the exception message zkCli prints.
    fn set_acl(&self, path: &str, acl: &[Acl], version: i32) -> std::result::Result<(), String> {
        if acl.is_empty() {
            return Err(format::keeper_message(ErrorCode::InvalidAcl.code(), None));
        }
        let r = self.set_acl_call(path, acl, version);
        if r.err != 0 {
            return Err(format::keeper_message(r.err, Some(path)));
        }
        Ok(())
    }

    fn create(&mut self, c: Create) -> Result<()> {
        let has_ttl = c.ttl.is_some();
        if c.container && (c.ephemeral || c.sequential) {
            return Err(CliError::Malformed(
                "-c cannot be combined with -s or -e. Containers cannot be ephemeral or sequential.".into(),
            ));
        }
        let ttl = match &c.ttl {
            Some(t) => java_long(t).map_err(|_| CliError::Malformed("-t argument must be a long value".into()))?,
            None => 0,
        };
        if has_ttl && c.ephemeral {
            return Err(CliError::Malformed("TTLs cannot be used with Ephemeral znodes".into()));
        }
        if has_ttl && c.container {
            return Err(CliError::Malformed("TTLs cannot be used with Container znodes".into()));
        }
        let mode = match (c.ephemeral, c.sequential, c.container, has_ttl) {
            (true, true, _, _) => CreateMode::EphemeralSequential,
            (true, false, _, _) => CreateMode::Ephemeral,
            (false, true, _, true) => CreateMode::PersistentSequentialWithTtl,
            (false, true, _, false) => CreateMode::PersistentSequential,
            (false, false, true, _) => CreateMode::Container,
            (false, false, false, true) => CreateMode::PersistentWithTtl,
            (false, false, false, false) => CreateMode::Persistent,
        };
        if has_ttl && !(1..=MAX_TTL).contains(&ttl) {
            return Err(CliError::Malformed(format!("ttl must be positive and cannot be larger than: {MAX_TTL}")));
        }
        let data = c.data.map(|d| d.into_bytes().into());
        let acl = match &c.acl {
            Some(text) => self.parse_acl(text),
            None => Acl::open_unsafe(),
        };
        path::validate_create(&c.path, mode.is_sequential()).map_err(CliError::MalformedPath)?;
        if acl.is_empty() {
            // The Java client refuses an empty ACL itself, with no path in the exception.
            self.term.errln(&format::keeper_message(ErrorCode::InvalidAcl.code(), None));
            return Err(CliError::Keeper { code: ErrorCode::InvalidAcl.code(), path: None });
        }
        let op = if has_ttl {
            OpCode::CreateTtl
        } else if mode == CreateMode::Container {
            OpCode::CreateContainer
        } else {
            OpCode::Create
        };
        let req = CreateRequest {
            path: self.server(&c.path),
            data,
            acl,
            flags: create_flags(mode),
            ttl: has_ttl.then_some(ttl),
        };
        let r = self.call(Call::new(op, RequestBody::Create(req)));
        if r.err == ErrorCode::InvalidAcl.code() {
            self.term.errln(&format::keeper_message(r.err, Some(&c.path)));
        } else if r.err == ErrorCode::EphemeralOnLocalSession.code() {
            self.term.errln("Unable to create ephemeral node on a local session");
        }
        if r.err != 0 {
            return Err(CliError::keeper(r.err, &c.path));
        }
        let created = match &r.body {
            Response::Path(p) | Response::Create2 { path: p, .. } => self.client.chroot().to_client(p),
            _ => c.path.clone(),
        };
        self.term.errln(&format!("Created {created}"));
        Ok(())
    }

    fn delete_all(&mut self, path: &str, batch: Option<String>) -> Result<()> {
        let batch = match &batch {
            Some(b) => java_int(b).map_err(|_| CliError::Malformed("-b argument must be an int value".into()))?,
            None => DELETE_BATCH,
        };
        check_path(path)?;
        // ZKUtil.listSubTreeBFS
        let mut tree = vec![path.to_string()];
        let mut next = 0;
        while next < tree.len() {
            let node = tree[next].clone();
            next += 1;
            let body = RequestBody::PathWatch { path: self.server(&node), watch: false };
            let r = self.call(Call::new(OpCode::GetChildren, body));
            if r.err != 0 {
                return Err(CliError::keeper(r.err, &node));
            }
            if let Response::Children(children) = &r.body {
                for child in children {
                    tree.push(if node == "/" { format!("/{child}") } else { format!("{node}/{child}") });
                }
            }
        }
        // ZKUtil.deleteInBatch: leaves first, `batch` deletes per multi, stop at the first failure.
        let mut ok = true;
        let mut ops = Vec::new();
        for (i, node) in tree.iter().enumerate().rev() {
            ops.push(MultiOp::Delete { path: self.server(node), version: -1 });
            if ops.len() as i64 == i64::from(batch) || i == 0 {
                if !ok {
                    break;
                }
                let r = self.call(Call::new(OpCode::Multi, RequestBody::Multi(std::mem::take(&mut ops))));
                let failed_op = match &r.body {
                    Response::Multi(results) => results.iter().any(|x| matches!(x, MultiResult::Error(e) if *e != 0)),
                    _ => false,
                };
                if r.err != 0 || failed_op {
                    ok = false;
                }
            }
        }
        if !ok {
            self.term.errln("Failed to delete some node(s) in the subtree!");
        }
        Ok(())
    }
}

fn create_flags(mode: CreateMode) -> i32 {
    match mode {
        CreateMode::Persistent => 0,
        CreateMode::Ephemeral => 1,
        CreateMode::PersistentSequential => 2,
        CreateMode::EphemeralSequential => 3,
        CreateMode::Container => 4,
        CreateMode::PersistentWithTtl => 5,
        CreateMode::PersistentSequentialWithTtl => 6,
    }
}
