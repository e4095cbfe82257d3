//! zkCli 3.8's quota commands: `setquota`, `listquota` and `delquota`, with the same requests
//! in the same order as `SetQuotaCommand.createQuota`, `ListQuotaCommand.listQuota` and
//! `DelQuotaCommand.delQuota` (the client writes the quota nodes; the server keeps the stats),
//! and the same messages on the same streams.

use super::error::CliError;
use super::exec::{check_path, Exec, Result};
use crate::client::conn::Call;
use crate::proto::{Acl, CreateRequest, ErrorCode, OpCode, RequestBody, Response};
use crate::tree::quota::{self, StatsTrack, BYTES, BYTES_HARD, COUNT, COUNT_HARD, QUOTA_ROOT};

/// The StatsTrack key an option letter sets.
fn key_of(limit: char) -> &'static str {
    match limit {
        'n' => COUNT,
        'b' => BYTES,
        'N' => COUNT_HARD,
        _ => BYTES_HARD,
    }
}

/// What a request answered, or the error zkCli's `CliWrapperException` shows.
enum Got {
    Ok(Response),
    NoNode,
}

impl Exec<'_, '_> {
    fn quota_call(&self, op: OpCode, body: RequestBody, path: &str) -> Result<Got> {
        let r = self.call(Call::new(op, body));
        match r.err {
            0 => Ok(Got::Ok(r.body)),
            e if e == ErrorCode::NoNode.code() => Ok(Got::NoNode),
            e => Err(CliError::keeper(e, path)),
        }
    }

    /// `zk.exists(path, false) != null`; a NoNode is `false`.
    fn quota_exists(&self, path: &str) -> Result<bool> {
        let body = RequestBody::PathWatch { path: self.server(path), watch: false };
        Ok(matches!(self.quota_call(OpCode::Exists, body, path)?, Got::Ok(_)))
    }

    /// `zk.getData(path, false, stat)`: `None` for NoNode.
    fn quota_data(&self, path: &str) -> Result<Option<Option<bytes::Bytes>>> {
        let body = RequestBody::PathWatch { path: self.server(path), watch: false };
        Ok(match self.quota_call(OpCode::GetData, body, path)? {
            Got::Ok(Response::GetData { data, .. }) => Some(data),
            Got::Ok(_) => Some(None),
            Got::NoNode => None,
        })
    }

    fn quota_children(&self, path: &str) -> Result<Option<Vec<String>>> {
        let body = RequestBody::PathWatch { path: self.server(path), watch: false };
        Ok(match self.quota_call(OpCode::GetChildren, body, path)? {
            Got::Ok(Response::Children(c)) => Some(c.iter().map(|s| s.to_string()).collect()),
            Got::Ok(_) => Some(Vec::new()),
            Got::NoNode => None,
        })
    }

    /// `zk.create(path, data, OPEN_ACL_UNSAFE, PERSISTENT)`; `Ok(false)` for NodeExists.
    fn quota_create(&self, path: &str, data: Option<String>) -> Result<bool> {
        let req = CreateRequest {
            path: self.server(path),
            data: data.map(|d| d.into_bytes().into()),
            acl: Acl::open_unsafe(),
            flags: 0,
            ttl: None,
        };
        let r = self.call(Call::new(OpCode::Create, RequestBody::Create(req)));
        match r.err {
            0 => Ok(true),
            e if e == ErrorCode::NodeExists.code() => Ok(false),
            e => Err(CliError::keeper(e, path)),
        }
    }

    fn quota_set_data(&self, path: &str, text: String) -> Result<()> {
        let body = RequestBody::SetData { path: self.server(path), data: Some(text.into_bytes().into()), version: -1 };
        match self.quota_call(OpCode::SetData, body, path)? {
            Got::Ok(_) => Ok(()),
            Got::NoNode => Err(CliError::keeper(ErrorCode::NoNode.code(), path)),
        }
    }

    fn quota_delete(&self, path: &str) -> Result<Got> {
        self.quota_call(OpCode::Delete, RequestBody::Delete { path: self.server(path), version: -1 }, path)
    }

    /// A quota node's text as `new StatsTrack(data)` reads it; what does not parse ends the
    /// command as the Java exception would (`NumberFormatException` is caught as an
    /// `IllegalArgumentException` and shown as a malformed path).
    fn track(data: Option<bytes::Bytes>) -> Result<StatsTrack> {
        StatsTrack::parse(data.as_deref()).map_err(|e| CliError::MalformedPath(e.to_string()))
    }

    /// `SetQuotaCommand.exec`.
    pub(super) fn set_quota(&mut self, path: &str, limit: char, value: &str) -> Result<()> {
        if path.starts_with(QUOTA_ROOT) {
            self.term.errln(&format!("cannot set a quota under the path: {QUOTA_ROOT}"));
            return Ok(());
        }
        let mut wanted = StatsTrack::default();
        for key in [COUNT, BYTES, COUNT_HARD, BYTES_HARD] {
            wanted.set(key, -1);
        }
        // checkOptionValue: counts are ints and > 0, byte limits longs and >= 0.
        let parsed = if limit == 'n' || limit == 'N' {
            super::cmdline::java_int(value).map(i64::from).ok()
        } else {
            super::cmdline::java_long(value).ok()
        };
        let Some(v) = parsed else {
            self.term.errln("NumberFormatException happens when parsing the option value");
            return Ok(());
        };
        if (limit == 'n' || limit == 'N') && v <= 0 {
            self.term.errln("the num quota must be greater than zero");
            return Ok(());
        }
        if (limit == 'b' || limit == 'B') && v < 0 {
            self.term.errln("the bytes quota must be greater than or equal to zero");
            return Ok(());
        }
        wanted.set(key_of(limit), v);
        self.create_quota(path, &wanted)
    }

    /// `SetQuotaCommand.createQuota`.
    fn create_quota(&mut self, path: &str, wanted: &StatsTrack) -> Result<()> {
        check_path(path)?;
        if !self.quota_exists(path)? {
            return Err(CliError::MalformedPath(format!("{path} does not exist.")));
        }
        self.check_if_child_quota(path)?;
        self.check_if_parent_quota(path)?;
        if !self.quota_exists(QUOTA_ROOT)? && self.quota_create("/zookeeper", None)? {
            // Both creates sit in one try block catching NodeExists: an existing /zookeeper
            // skips the second.
            self.quota_create(QUOTA_ROOT, None)?;
        }
        let mut quota_path = QUOTA_ROOT.to_string();
        for part in path.split('/').skip(1) {
            quota_path.push('/');
            quota_path.push_str(part);
            if !self.quota_exists(&quota_path)? {
                self.quota_create(&quota_path, None)?;
            }
        }
        let stat_path = format!("{quota_path}/{}", quota::STAT_NODE);
        let limit_path = format!("{quota_path}/{}", quota::LIMIT_NODE);
        let no_node = |p: &str| CliError::keeper(ErrorCode::NoNode.code(), p);
        if !self.quota_exists(&limit_path)? {
            if !self.quota_create(&limit_path, Some(wanted.render()))? {
                return Err(CliError::keeper(ErrorCode::NodeExists.code(), &limit_path));
            }
            let mut zero = StatsTrack::default();
            zero.set(COUNT, 0);
            zero.set(BYTES, 0);
            if !self.quota_create(&stat_path, Some(zero.render()))? {
                return Err(CliError::keeper(ErrorCode::NodeExists.code(), &stat_path));
            }
            let limits = Self::track(self.quota_data(&limit_path)?.ok_or_else(|| no_node(&limit_path))?)?;
            let stats = Self::track(self.quota_data(&stat_path)?.ok_or_else(|| no_node(&stat_path))?)?;
            self.warn_below(&limits, &stats);
        } else {
            let mut limits = Self::track(self.quota_data(&limit_path)?.ok_or_else(|| no_node(&limit_path))?)?;
            for key in [COUNT, BYTES, COUNT_HARD, BYTES_HARD] {
                if wanted.get(key) > -1 {
                    limits.set(key, wanted.get(key));
                }
            }
            let stats = Self::track(self.quota_data(&stat_path)?.ok_or_else(|| no_node(&stat_path))?)?;
            self.warn_below(&limits, &stats);
            self.quota_set_data(&limit_path, limits.render())?;
        }
        Ok(())
    }

    /// `SetQuotaCommand.checkQuota`: warnings on stdout when a limit is already exceeded.
    fn warn_below(&mut self, limits: &StatsTrack, stats: &StatsTrack) {
        let below = |soft: &str, hard: &str, current: i64| {
            (limits.get(soft) > -1 && limits.get(soft) < current)
                || (limits.get(hard) > -1 && limits.get(hard) < current)
        };
        if below(COUNT, COUNT_HARD, stats.get(COUNT)) {
            self.term.outln(&format!(
                "[Warning]: the count quota you create is less than the existing count:{}",
                stats.get(COUNT)
            ));
        }
        if below(BYTES, BYTES_HARD, stats.get(BYTES)) {
            self.term.outln(&format!(
                "[Warning]: the bytes quota you create is less than the existing bytes:{}",
                stats.get(BYTES)
            ));
        }
    }

    /// `checkIfChildQuota`: a quota anywhere below `/zookeeper/quota<path>` refuses the new one.
    /// ZKUtil.visitSubTreeDFS validates the path first ("/" fails there) and ignores NoNode.
    fn check_if_child_quota(&mut self, path: &str) -> Result<()> {
        let real = format!("{QUOTA_ROOT}{path}");
        let mut visited = Vec::new();
        match self.visit(&real, false, &mut |_, p| visited.push(p.to_string())) {
            Ok(()) => {}
            Err(CliError::Keeper { code, .. }) if code == ErrorCode::NoNode.code() => return Ok(()),
            Err(e) => return Err(e),
        }
        for quota_path in visited {
            let Some(children) = self.quota_children(&quota_path)? else { continue };
            if quota_path != real && children.iter().any(|c| c == quota::LIMIT_NODE) {
                let trimmed = &quota_path[QUOTA_ROOT.len()..];
                return Err(CliError::MalformedPath(format!("{path} has a child {trimmed} which has a quota")));
            }
        }
        Ok(())
    }

    /// `checkIfParentQuota`: a quota on an ancestor refuses the new one.
    fn check_if_parent_quota(&mut self, path: &str) -> Result<()> {
        let parts: Vec<&str> = path.split('/').collect();
        let mut quota_path = QUOTA_ROOT.to_string();
        for part in parts.iter().take(parts.len().saturating_sub(1)).skip(1) {
            quota_path.push('/');
            quota_path.push_str(part);
            let Some(children) = self.quota_children(&quota_path)? else { return Ok(()) };
            if children.is_empty() {
                return Ok(());
            }
            if quota_path != format!("{QUOTA_ROOT}{path}") && children.iter().any(|c| c == quota::LIMIT_NODE) {
                let trimmed = &quota_path[QUOTA_ROOT.len()..];
                return Err(CliError::MalformedPath(format!("{path} has a parent {trimmed} which has a quota")));
            }
        }
        Ok(())
    }

    /// `ListQuotaCommand.exec`.
    pub(super) fn list_quota(&mut self, path: &str) -> Result<()> {
        let limit_path = quota::limit_path(path);
        self.term.errln(&format!("absolute path is {limit_path}"));
        check_path(&limit_path)?;
        let stat_path = quota::stat_path(path);
        let (Some(limits), Some(stats)) = (self.quota_data(&limit_path)?, self.quota_data(&stat_path)?) else {
            self.term.errln(&format!("quota for {path} does not exist."));
            return Ok(());
        };
        let (limits, stats) = (Self::track(limits)?, Self::track(stats)?);
        self.term.outln(&format!("Output quota for {path} {}", limits.render()));
        self.term.outln(&format!("Output stat for {path} {}", stats.render()));
        Ok(())
    }

    /// `DelQuotaCommand.exec` and `delQuota`.
    pub(super) fn del_quota(&mut self, path: &str, limit: Option<char>) -> Result<()> {
        let parent = format!("{QUOTA_ROOT}{path}");
        let limit_path = quota::limit_path(path);
        check_path(&limit_path)?;
        if !self.quota_exists(&limit_path)? {
            self.term.outln(&format!("Quota does not exist for {path}"));
            return Ok(());
        }
        let not_there = |e: &mut Self| {
            e.term.errln(&format!("quota for {path} does not exist."));
            Ok(())
        };
        let Some(data) = self.quota_data(&limit_path)? else { return not_there(self) };
        let mut track = Self::track(data)?;
        match limit {
            None => {
                let Some(children) = self.quota_children(&parent)? else { return not_there(self) };
                for child in children {
                    if let Got::NoNode = self.quota_delete(&format!("{parent}/{child}"))? {
                        return not_there(self);
                    }
                }
                // trimProcQuotas: remove the now empty parents up to /zookeeper/quota.
                let mut at = parent;
                while at != QUOTA_ROOT {
                    let Some(children) = self.quota_children(&at)? else { return not_there(self) };
                    if !children.is_empty() {
                        break;
                    }
                    if let Got::NoNode = self.quota_delete(&at)? {
                        return not_there(self);
                    }
                    at = match at.rfind('/') {
                        Some(i) => at[..i].to_string(),
                        None => break,
                    };
                }
            }
            Some(l) => {
                track.set(key_of(l), -1);
                let body = RequestBody::SetData {
                    path: self.server(&limit_path),
                    data: Some(track.render().into_bytes().into()),
                    version: -1,
                };
                if let Got::NoNode = self.quota_call(OpCode::SetData, body, &limit_path)? {
                    return not_there(self);
                }
            }
        }
        Ok(())
    }
}
