//! The data of a reconfig (see `reconfig`): what it changes, and the pending record the log and
//! the tree carry. A leaf: `command` logs it without depending on how it is carried out.

use super::members::ServerSpec;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// What a reconfig changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Plan {
    pub add: BTreeMap<u64, ServerSpec>,
    pub remove: BTreeSet<u64>,
    /// Existing members with a new role (participant ↔ observer), new addresses, or both: what
    /// ZooKeeper does when a reconfig names an existing server with a different spec.
    pub change: BTreeMap<u64, ServerSpec>,
    /// The client's `fromConfig` (not -1): checked again where the begin record is applied,
    /// where reconfigs are ordered, so two reconfigs from the same configuration sent to
    /// different members cannot both succeed (ZooKeeper checks it in the leader's
    /// PrepRequestProcessor).
    pub from_version: Option<i64>,
}

/// A reconfig begun in the log and not yet ended (`CommandOp::ReconfigBegin`): the zxid of its
/// begin record, the client's member and proposal number there, and the plan. Kept with the
/// tree (`DataTree::pending_reconfig`), so snapshots and new leaders carry it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    pub begun: i64,
    pub member: u64,
    pub seq: u64,
    pub plan: Plan,
}

impl Pending {
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub fn from_bytes(b: &[u8]) -> Option<Pending> {
        serde_json::from_slice(b).ok()
    }
}

impl Plan {
    /// The plan as the log's begin record carries it.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// A begin record's plan; `None` if the bytes are not one.
    pub fn from_bytes(b: &[u8]) -> Option<Plan> {
        serde_json::from_slice(b).ok()
    }
}
