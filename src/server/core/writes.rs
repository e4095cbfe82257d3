//! The replies to writes: every log (`standalone.rs`, `replicated/apply.rs`, `observing.rs`)
//! answers a write from what applying its txn did, through `write_response`, so the modes cannot
//! answer the same request differently.

use super::*;

/// The reply to a write, from what applying its txn did (FinalRequestProcessor's switch).
pub(in crate::server::core) fn write_response(
    op: OpCode,
    body: &RequestBody,
    outcome: OpOutcome,
) -> Result<Response, ErrorCode> {
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
