//! Writes in the core: the one seam through which every write request reaches the tree.
//!
//! Standalone, a write is prepared and applied in the same turn and its txn goes to the log
//! (the committer releases the reply after the fsync). In an ensemble the request is proposed
//! to the replicated log and prepared and applied when it comes back committed
//! (`replicated/`). Both ends use `prep::prepare_request` and `write_response`, so the two
//! modes cannot answer the same request differently.

use super::*;

impl Core {
    /// A write request (create, delete, setData, setACL, multi, reconfig) of session `sid`.
    pub(super) fn write(&mut self, conn: ConnId, sid: SessionId, xid: i32, op: OpCode, body: RequestBody) {
        let reconfig_enabled = self.cfg.ensemble.as_ref().is_some_and(|e| e.reconfig_enabled);
        if self.repl.is_some() && reconfig_enabled && matches!(body, RequestBody::Reconfig { .. }) {
            self.propose_reconfig(conn, sid, xid, &body);
            return;
        }
        if self.repl.is_some() {
            self.propose_request(conn, sid, xid, op, body);
            return;
        }
        let ids = ids_of(&self.sessions, sid);
        let ctx = prep::PrepCtx {
            session: sid,
            ids,
            ttl_enabled: self.cfg.ttl_enabled,
            enforce_quota: self.cfg.enforce_quota,
        };
        let txn = prep::prepare_request(&self.tree, &ctx, op, &body);
        let (_, outcome) = self.commit(sid, txn);
        self.reply(conn, xid, write_response(op, &body, outcome));
    }
}

/// The reply to a write, from what applying its txn did (FinalRequestProcessor's switch).
pub(super) fn write_response(op: OpCode, body: &RequestBody, outcome: OpOutcome) -> Result<Response, ErrorCode> {
    match (outcome, body) {
        (OpOutcome::Multi(v), RequestBody::Multi(ops)) => {
            Ok(Response::Multi(v.into_iter().zip(ops.iter()).map(|(o, op)| multi_result(o, op)).collect()))
        }
        // A multi whose txn failed as a whole (session expired in an ensemble) answers the error.
        (OpOutcome::Error(e), _) => Err(e),
        (OpOutcome::Created { path, .. }, _) if op == OpCode::Create => Ok(Response::Path(path)),
        (OpOutcome::Created { path, stat }, _) => Ok(Response::Create2 { path, stat }),
        (OpOutcome::Deleted, _) => Ok(Response::Empty),
        (OpOutcome::SetData { stat }, _) | (OpOutcome::SetAcl { stat }, _) => Ok(Response::Stat(stat)),
        _ => Err(ErrorCode::SystemError),
    }
}

/// A multi sub-result as `FinalRequestProcessor` builds it.
fn multi_result(outcome: OpOutcome, op: &MultiOp) -> MultiResult {
    match outcome {
        OpOutcome::Created { path, .. } if matches!(op, MultiOp::Create(OpCode::Create, _)) => {
            MultiResult::Create { path }
        }
        OpOutcome::Created { path, stat } => MultiResult::Create2 { path, stat },
        OpOutcome::Deleted => MultiResult::Delete,
        OpOutcome::SetData { stat } => MultiResult::SetData { stat },
        OpOutcome::Checked => MultiResult::Check,
        OpOutcome::Error(e) => MultiResult::Error(e.code()),
        _ => MultiResult::Error(ErrorCode::SystemError.code()),
    }
}
