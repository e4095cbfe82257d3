//! The checks an observer makes itself before it takes part in a takeover (issue 42). Its
//! AdminServer runs them on every `POST /zkr/takeover`, whoever sends it: a request that skips
//! one changes nothing. What the tool checks from outside, each observer checks again from where
//! the data is:
//!
//! - **its own view** (`local_reasons`): it follows no leader; no participant answers; a
//!   participant that gives no answer at all (unreachable, not refused) may be a ZooKeeper cut
//!   off by a partition, so it refuses while it heard from a leader within the session timeout;
//! - **the other observers** (`ensemble_reasons`, from each one's `GET /zkr/takeover?probe=1`):
//!   every plan member answers and follows no leader, no observer reaches a participant (a
//!   partition that cut off only some of them), and the seed is the most advanced member;
//! - **ZooKeeper's logs** (`LogProof`): the request carries what the tool read from the stopped
//!   participants' logs, and the seed must hold every txn they may have committed.
//!
//! Pure functions over what the observer gathered; `crate::admin` gathers and answers.

use super::probe::{Answer, Participant};
use super::Plan;
use crate::raft::members::Ensemble;
use crate::txn::Zxid;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// What `zkr takeover` read from the stopped participants' logs (`--zookeeper-data`): the last
/// zxid each of them logged. It travels as the body of the authenticated POST,
/// `{"zookeeper_logs": {"1": 4294967301, "2": 4294967301}}`, and each observer works out from it
/// what ZooKeeper may have committed (`zk_logs::committed_bound`) with its own zoo.cfg's voters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogProof {
    /// (participant myid, last zxid in its logs), as read.
    pub logged: Vec<(u64, Zxid)>,
}

/// Why a request's log proof cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    #[error(
        "the request carries no proof of what ZooKeeper's logs hold (a JSON body {{\"zookeeper_logs\": \
         {{\"<participant myid>\": <last logged zxid>, ...}}}}, what zkr takeover --zookeeper-data sends): \
         without it a write ZooKeeper acknowledged that no observer received would be lost"
    )]
    Missing,
    #[error("the ZooKeeper log proof does not parse: {0}")]
    Malformed(String),
    #[error("the ZooKeeper log proof names server.{0}, which is no ZooKeeper participant in this observer's zoo.cfg")]
    NotAVoter(u64),
    #[error("the ZooKeeper log proof is not enough: {0}")]
    TooFew(String),
}

#[derive(Serialize, Deserialize)]
struct ProofBody {
    zookeeper_logs: BTreeMap<String, Zxid>,
}

impl LogProof {
    /// The POST body.
    pub fn to_body(&self) -> String {
        let logs = self.logged.iter().map(|(sid, z)| (sid.to_string(), *z)).collect();
        serde_json::to_string(&ProofBody { zookeeper_logs: logs }).unwrap_or_default()
    }

    /// From a POST body; an empty body is `Missing`.
    pub fn from_body(body: &[u8]) -> Result<LogProof, ProofError> {
        if body.iter().all(u8::is_ascii_whitespace) {
            return Err(ProofError::Missing);
        }
        let parsed: ProofBody = serde_json::from_slice(body).map_err(|e| ProofError::Malformed(e.to_string()))?;
        let mut logged = Vec::with_capacity(parsed.zookeeper_logs.len());
        for (sid, zxid) in parsed.zookeeper_logs {
            let sid = sid.parse::<u64>().map_err(|_| ProofError::Malformed(format!("{sid:?} is not a myid")))?;
            if zxid < 0 {
                return Err(ProofError::Malformed(format!("server.{sid}: zxid {zxid} is negative")));
            }
            logged.push((sid, zxid));
        }
        if logged.is_empty() {
            return Err(ProofError::Missing);
        }
        Ok(LogProof { logged })
    }

    /// The highest zxid ZooKeeper may have committed, by the voters of this observer's `ens`.
    pub fn committed(&self, ens: &Ensemble) -> Result<Zxid, ProofError> {
        if let Some((sid, _)) = self.logged.iter().find(|(sid, _)| !ens.voters().any(|v| v == *sid)) {
            return Err(ProofError::NotAVoter(*sid));
        }
        super::zk_logs::committed_bound(ens.voters().count(), &self.logged).map_err(ProofError::TooFew)
    }
}

/// One observer as its `GET /zkr/takeover` describes it (with `?probe=1`, also what its own
/// probe of the participants found).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObserverState {
    pub myid: u64,
    /// The last zxid it applied.
    pub zxid: Zxid,
    /// It is synced with a ZooKeeper leader.
    pub following: bool,
    /// That leader's myid (the last one, if it lost it).
    pub leader: i64,
    /// How long it has heard from no leader, ms (0 while following).
    #[serde(default)]
    pub silent_ms: u64,
    /// Its probe of the participants (`?probe=1` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub participants: Option<Vec<ProbedParticipant>>,
}

/// What this observer heard from one observer of the ensemble when it asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    Answered(ObserverState),
    /// No usable answer, and why.
    Silent(String),
}

impl Heard {
    fn state(&self) -> Option<&ObserverState> {
        match self {
            Heard::Answered(s) => Some(s),
            Heard::Silent(_) => None,
        }
    }
}

/// A participant as another observer's probe found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbedParticipant {
    pub id: u64,
    pub port: String,
    pub answer: Answer,
}

impl From<&Participant> for ProbedParticipant {
    fn from(p: &Participant) -> Self {
        ProbedParticipant { id: p.id, port: p.port.clone(), answer: p.answer }
    }
}

/// Why this observer refuses from what it sees itself: the leader it follows (`following`),
/// what its probe `found`, and how long it has heard from no leader against the session
/// timeout (zoo.cfg's maxSessionTimeout: the longest a client session of this side can still
/// be alive in a ZooKeeper that runs on the other side of a partition).
pub fn local_reasons(
    following: Option<i64>,
    found: &[Participant],
    silent_for: Duration,
    session_timeout: Duration,
) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(leader) = following {
        out.push(format!("this observer still follows ZooKeeper's leader server.{leader}"));
    }
    let answering = super::probe::with_answer(found, Answer::Answering);
    if !answering.is_empty() {
        out.push(format!("ZooKeeper participants still answer: {}", answering.join(", ")));
    }
    let unreachable = super::probe::with_answer(found, Answer::Unreachable);
    if !unreachable.is_empty() && silent_for < session_timeout {
        out.push(format!(
            "{} give no answer (no connection refused either: unreachable from here, not known to be stopped), \
             and this observer heard from ZooKeeper's leader {} s ago, within the session timeout ({} s): \
             ZooKeeper may still serve clients on the other side of a partition",
            unreachable.join(", "),
            silent_for.as_secs(),
            session_timeout.as_secs()
        ));
    }
    out
}

/// Why the ensemble's observers, as they answered (`seen`: every observer of the zoo.cfg, this
/// one included), refuse `plan`; `bound` is what
/// ZooKeeper may have committed (from the log proof).
pub fn ensemble_reasons(plan: &Plan, bound: Zxid, seen: &[(u64, Heard)]) -> Vec<String> {
    let mut out = Vec::new();
    for (id, state) in seen {
        let member = plan.members.contains(id);
        match state {
            Heard::Silent(why) if member => out.push(format!(
                "server.{id} does not answer ({why}): it may hold txns the others lack; start it, or leave it out of \
                 the plan"
            )),
            Heard::Silent(_) => {}
            Heard::Answered(s) => {
                if member && s.following {
                    out.push(format!("server.{id} still follows ZooKeeper's leader server.{}", s.leader));
                }
                let reached: Vec<String> = s
                    .participants
                    .iter()
                    .flatten()
                    .filter(|p| p.answer == Answer::Answering)
                    .map(|p| format!("server.{} ({})", p.id, p.port))
                    .collect();
                if !reached.is_empty() {
                    out.push(format!(
                        "observer server.{id} still reaches ZooKeeper participants: {} (a partition, not a stopped \
                         ZooKeeper)",
                        reached.join(", ")
                    ));
                }
            }
        }
    }
    let zxid_of = |id: u64| seen.iter().find(|(s, _)| *s == id).and_then(|(_, h)| h.state()).map(|s| s.zxid);
    let Some(seed) = zxid_of(plan.seed) else { return out };
    for m in &plan.members {
        if let Some(z) = zxid_of(*m).filter(|z| *z > seed) {
            out.push(format!(
                "server.{m} applied 0x{z:x}, more than the seed server.{} (0x{seed:x}): the seed must be the most \
                 advanced observer",
                plan.seed
            ));
        }
    }
    if let Some(why) = seed_reason(plan.seed, seed, bound) {
        out.push(why);
    }
    out
}

/// Why the seed (`seed`, which applied `zxid`) cannot seed the ensemble: ZooKeeper may have
/// committed up to `bound`, more than it holds.
pub fn seed_reason(seed: u64, zxid: Zxid, bound: Zxid) -> Option<String> {
    (zxid < bound).then(|| {
        format!(
            "ZooKeeper's logs hold txns up to 0x{bound:x} that it may have acknowledged, and the seed server.{seed} \
             applied only 0x{zxid:x}: taking over would lose them"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raft::members::ServerSpec;

    fn ens() -> Ensemble {
        let spec = |observer| ServerSpec { host: "h".into(), peer_port: 1, election_port: 2, observer, client: None };
        Ensemble {
            my_id: 9,
            members: [(1, spec(false)), (2, spec(false)), (3, spec(false)), (9, spec(true)), (10, spec(true))].into(),
            init_limit: 10,
            sync_limit: 5,
            reconfig_enabled: false,
            dynamic_file: None,
            config_file: None,
        }
    }

    #[test]
    fn the_proof_round_trips_and_is_checked_against_this_observers_voters() {
        let proof = LogProof { logged: vec![(1, 0x107), (2, 0x105), (3, 0x103)] };
        assert_eq!(LogProof::from_body(proof.to_body().as_bytes()), Ok(proof.clone()));
        assert_eq!(proof.committed(&ens()), Ok(0x105));
        assert_eq!(LogProof::from_body(b""), Err(ProofError::Missing));
        assert_eq!(LogProof::from_body(b"{\"zookeeper_logs\":{}}"), Err(ProofError::Missing));
        assert!(matches!(LogProof::from_body(b"{\"zookeeper_logs\":{\"x\":1}}"), Err(ProofError::Malformed(_))));
        assert!(matches!(LogProof::from_body(b"{\"zookeeper_logs\":{\"1\":-5}}"), Err(ProofError::Malformed(_))));
        let observer = LogProof { logged: vec![(1, 5), (9, 7)] };
        assert_eq!(observer.committed(&ens()), Err(ProofError::NotAVoter(9)));
        let one = LogProof { logged: vec![(1, 5)] };
        assert!(matches!(one.committed(&ens()), Err(ProofError::TooFew(_))));
    }

    fn participant(id: u64, answer: Answer) -> Participant {
        Participant { id, port: format!("h:{id}, its election port"), answer }
    }

    #[test]
    fn an_unreachable_participant_is_waited_for_a_session_timeout_a_refusing_one_is_not() {
        let timeout = Duration::from_secs(40);
        let stopped = [participant(1, Answer::Refused), participant(2, Answer::Refused)];
        assert!(local_reasons(None, &stopped, Duration::ZERO, timeout).is_empty());
        let cut = [participant(1, Answer::Refused), participant(2, Answer::Unreachable)];
        let why = local_reasons(None, &cut, Duration::from_secs(3), timeout);
        assert!(why.len() == 1 && why[0].contains("server.2") && why[0].contains("3 s ago"), "{why:?}");
        assert!(local_reasons(None, &cut, Duration::from_secs(41), timeout).is_empty());
        let live = [participant(1, Answer::Answering)];
        let why = local_reasons(Some(1), &live, Duration::ZERO, timeout);
        assert_eq!(why.len(), 2, "{why:?}");
    }

    fn state(myid: u64, zxid: Zxid, reaches: bool) -> ObserverState {
        let answer = if reaches { Answer::Answering } else { Answer::Unreachable };
        ObserverState {
            myid,
            zxid,
            following: false,
            leader: 1,
            silent_ms: 0,
            participants: Some(vec![ProbedParticipant { id: 1, port: "h:2".into(), answer }]),
        }
    }

    #[test]
    fn the_other_observers_must_answer_reach_no_participant_and_not_be_ahead_of_the_seed() {
        let plan = Plan { seed: 9, members: [9, 10].into() };
        let ok = Heard::Answered;
        let good =
            [(9, ok(state(9, 0x20, false))), (10, ok(state(10, 0x20, false))), (11, Heard::Silent("gone".into()))];
        assert!(ensemble_reasons(&plan, 0x20, &good).is_empty(), "a left-out observer may be gone");
        let why = ensemble_reasons(&plan, 0x21, &good);
        assert!(why.len() == 1 && why[0].contains("up to 0x21"), "{why:?}");
        let partition =
            [(9, ok(state(9, 0x20, false))), (10, ok(state(10, 0x20, false))), (11, ok(state(11, 0, true)))];
        let why = ensemble_reasons(&plan, 0x20, &partition);
        assert!(why.len() == 1 && why[0].contains("observer server.11 still reaches"), "{why:?}");
        let ahead = [(9, ok(state(9, 0x20, false))), (10, ok(state(10, 0x22, false)))];
        assert!(ensemble_reasons(&plan, 0x20, &ahead)[0].contains("more than the seed"));
        let silent = [(9, ok(state(9, 0x20, false))), (10, Heard::Silent("timed out".into()))];
        assert!(ensemble_reasons(&plan, 0x20, &silent)[0].contains("server.10 does not answer"));
    }
}
