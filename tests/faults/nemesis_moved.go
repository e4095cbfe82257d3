package main

// The nemesis moved-session (issue 22, item 2: SessionMoved, as ZooKeeper). A session is opened
// on a follower F and creates its round's znode there; F's peer links are cut (iptables DROP of
// the peer and election ports between F and the others, the client port left open) and at once the
// session sends a setData ("old") through F, which cannot reach the leader; the same session
// (id and password) then re-attaches on another member G, the leader or a follower, with a raw
// jute client (go-zookeeper cannot choose the member nor keep the first connection open) and
// sets "new"; then the partition heals and the old write, still in F's TCP stream to the leader
// or queued at F, may arrive. It must be refused (SessionMoved), or have been applied before the
// new write: never after it. The checker (the cell "moved-session") reads every round's znode
// after the heal: it must hold "new" at the new write's version and mzxid. It counts the rounds
// whose old write was in flight (no answer when the new write was acknowledged), and, from the
// members' transaction logs, those whose old write reached the log after the new one.
//
// ZKRF_MOVED_SELFTEST=1 writes "new" from a second session instead of re-attaching: nothing
// refuses the old write then, and a round where it reaches the log must fail the check (the
// checker's own test).

import (
	"bytes"
	"context"
	"fmt"
	mrand "math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

const (
	movedPath = root + "/moved"
	// movedSettle is how long the moved session is kept alive after the heal (so that the
	// old write meets it moved, not expired), before it is closed.
	movedSettle = 6 * time.Second
	movedStep   = 3 * time.Second
)

func init() {
	nemeses = append(nemeses, Nemesis{
		Name: "moved-session", What: "a session's setData in flight at a follower cut from its peers; the session re-attaches on another member and writes again; the heal lets the old write through: refused (SessionMoved) or applied before the new write, never after",
		Hold:    holdBetween(100*time.Millisecond, 1500*time.Millisecond),
		Apply:   movedSession,
		Checker: func(c *Cluster) Workload { return &movedWL{c: c, selftest: os.Getenv("ZKRF_MOVED_SELFTEST") == "1"} },
	})
}

// movedRound is one application of the nemesis.
type movedRound struct {
	k                 int
	from, to          int    // F and G
	toRole            string // "the leader" or "a follower"
	path              string
	sid               int64
	oldXid            int32
	oldData, newData  string
	oldAt, newAckAt   int64 // history clock
	newStat           rawStat
	void              string // why the round cannot be judged ("" when it can)
	inFlight, heldByF bool
	// What the old connection got (under movedWL.mu): a reply, or an error (closed).
	oldDone  chan struct{}
	oldReply *rawReply
	oldErr   string
	oldAt2   int64
	// After the heal.
	finalData  string
	finalStat  rawStat
	finalErr   string
	logOld     logPlace // where the old write is in the members' logs
	logNew     logPlace
	logRefused bool // ZooKeeper: an error txn SessionMoved for the old write's xid
}

// logPlace orders log records: (file, offset) for zkr, the zxid for ZooKeeper.
type logPlace struct {
	found bool
	file  int
	off   int64
}

func (a logPlace) before(b logPlace) bool {
	return a.file < b.file || a.file == b.file && a.off < b.off
}

type movedWL struct {
	counts
	c        *Cluster
	env      *Env
	selftest bool
	mu       sync.Mutex
	rounds   []*movedRound
	wg       sync.WaitGroup
	p        problems
	finalErr error
}

func (w *movedWL) Name() string { return "moved-session" }

func (w *movedWL) Setup(env *Env) error {
	w.env = env
	s, err := finalSession(env)
	if err != nil {
		return err
	}
	defer s.Close()
	return ensure(s.Conn, movedPath, nil)
}

// Run: the rounds are the nemesis's.
func (w *movedWL) Run(ctx context.Context, env *Env) {}

// cutPeers drops m's traffic with the other members on the peer and election ports, both ways;
// its client port stays open. The rules are INPUT rules only: in m's namespace for what its
// peers send, in theirs for what m sends, all in place before the old write goes out. An OUTPUT
// rule would make m's own connects fail at once with EPERM, which no real partition does
// (packets are lost, not refused). Faults.Heal flushes them.
func (f *Faults) cutPeers(m *Member) error {
	f.mu.Lock()
	f.partitioned = true
	f.mu.Unlock()
	peers := []*Member{m}
	for _, o := range f.c.Members {
		if o != m {
			peers = append(peers, o)
		}
	}
	for _, at := range peers {
		rules := "*filter\n"
		for _, o := range peers {
			if (at == m) != (o == m) {
				rules += fmt.Sprintf("-A INPUT -s %s -p tcp -m multiport --ports 2888,3888 -j DROP\n", o.IP)
			}
		}
		cmd := exec.Command("ip", "netns", "exec", nsName(at.ID), "iptables-restore", "--noflush")
		cmd.Stdin = strings.NewReader(rules + "COMMIT\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("iptables-restore in m%d: %v: %s", at.ID, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

func (f *Faults) isPartitioned() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.partitioned
}

func movedSession(f *Faults, r *mrand.Rand) string {
	w, _ := f.checker.(*movedWL)
	if w == nil {
		return "no moved-session checker: nothing done"
	}
	l := f.c.WaitLeader(3 * time.Second)
	w.mu.Lock()
	rd := &movedRound{k: len(w.rounds) + 1, oldDone: make(chan struct{})}
	w.rounds = append(w.rounds, rd)
	w.mu.Unlock()
	void := func(why string) string {
		w.mu.Lock()
		rd.void = why
		w.mu.Unlock()
		close(rd.oldDone)
		return fmt.Sprintf("round %d: %s", rd.k, why)
	}
	if l == nil {
		return void("no leader: nothing done")
	}
	var followers []*Member
	for _, m := range f.c.Members {
		if m != l {
			followers = append(followers, m)
		}
	}
	from := followers[r.Intn(len(followers))]
	to, role := l, "the leader"
	if r.Intn(2) == 0 && len(followers) > 1 {
		for to = from; to == from; {
			to = followers[r.Intn(len(followers))]
		}
		role = "a follower"
	}
	rd.from, rd.to, rd.toRole = from.ID, to.ID, role
	addr := func(m *Member) string { return fmt.Sprintf("%s:%d", m.IP, clientPort) }

	// The session on F, and its round's znode created through F (which also opens zkr's
	// forward stream from F to the leader).
	old, err := rawDial(addr(from), 0, nil, 0, movedStep)
	if err != nil || old.Timeout <= 0 {
		if old != nil {
			old.Close()
		}
		return void(fmt.Sprintf("no session on m%d (%v)", from.ID, err))
	}
	rd.sid = old.Session
	rd.path = fmt.Sprintf("%s/r%d", movedPath, rd.k)
	tag := fmt.Sprintf("r%d-%x", rd.k, rd.sid)
	rd.oldData, rd.newData = "moved-old-"+tag, "moved-new-"+tag
	if rep, err := old.call(opCreate, createReq(rd.path, []byte("moved-init-"+tag), 0), movedStep); err != nil || rep.Err != 0 {
		old.Close()
		return void(fmt.Sprintf("create %s on m%d: %v (err %d)", rd.path, from.ID, err, rep.Err))
	}

	seen := old.lastZxid // before the old connection's reader runs

	// Cut F from its peers, and at once the old write through F.
	if err := f.cutPeers(from); err != nil {
		old.Close()
		return void("partition failed: " + err.Error())
	}
	xid, err := old.send(opSetData, setDataReq(rd.path, []byte(rd.oldData), -1))
	rd.oldXid, rd.oldAt = xid, w.env.now()
	if err != nil {
		old.Close()
		return void(fmt.Sprintf("m%d cut off; the old write could not be sent: %v", from.ID, err))
	}
	go func() {
		rep, err := old.read(time.Now().Add(2 * time.Minute))
		w.mu.Lock()
		rd.oldAt2 = w.env.now()
		if err != nil {
			rd.oldErr = err.Error()
		} else {
			rd.oldReply = &rep
		}
		w.mu.Unlock()
		close(rd.oldDone)
	}()

	// The same session re-attaches on G (self-test: a second session) and writes "new".
	var nw *rawConn
	if w.selftest {
		nw, err = rawDial(addr(to), 0, nil, 0, movedStep)
	} else {
		nw, err = rawDial(addr(to), old.Session, old.Password, seen, movedStep)
	}
	what := fmt.Sprintf("round %d: m%d cut from its peers with session 0x%x's setData in flight there", rd.k, from.ID, rd.sid)
	if err != nil || nw.Timeout <= 0 {
		w.mu.Lock()
		why := "told the session expired"
		if err != nil {
			why = err.Error()
		}
		rd.void = fmt.Sprintf("re-attach on m%d refused: %s", to.ID, why)
		w.mu.Unlock()
		if nw != nil {
			nw.Close()
		}
		old.Close()
		return what + ", " + rd.void
	}
	// Its xids apart from the old connection's, so the logs tell their requests apart.
	nw.xid = 1000
	rep, err := nw.call(opSetData, setDataReq(rd.path, []byte(rd.newData), -1), movedStep)
	st, ok := parseStat(rep.Body)
	w.mu.Lock()
	rd.newAckAt = w.env.now()
	if err != nil || rep.Err != 0 || !ok {
		rd.void = fmt.Sprintf("new write on m%d not acknowledged: %v (err %d)", to.ID, err, rep.Err)
	} else {
		rd.newStat = st
		// In flight: no answer to the old write yet; held by F: its connection still open.
		rd.inFlight = rd.oldReply == nil
		rd.heldByF = rd.oldAt2 == 0
	}
	void2, inFlight, heldByF := rd.void, rd.inFlight, rd.heldByF
	w.mu.Unlock()
	how := "re-attached"
	if w.selftest {
		how = "SELF-TEST: a second session"
	}
	what += fmt.Sprintf(", %s on m%d (%s)", how, to.ID, role)
	if void2 != "" {
		what += ", " + void2
	} else {
		what += fmt.Sprintf(", new write acknowledged at zxid 0x%x (version %d)", st.Mzxid, st.Version)
		switch {
		case heldByF:
			what += ", old write unanswered, its connection open"
		case inFlight:
			what += ", old write unanswered, its connection closed by m" + fmt.Sprint(from.ID)
		default:
			what += ", old write already answered"
		}
	}

	// After the heal: keep the session alive on G for a while, then close it.
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for t0 := time.Now(); f.isPartitioned() && time.Since(t0) < 2*time.Minute; {
			time.Sleep(50 * time.Millisecond)
		}
		for end := time.Now().Add(movedSettle); time.Now().Before(end); time.Sleep(time.Second) {
			if _, err := nw.call(opPing, nil, time.Second); err != nil {
				break
			}
		}
		_, _ = nw.call(opCloseSession, nil, time.Second)
		nw.Close()
		old.Close()
		<-rd.oldDone
	}()
	return what
}

func (w *movedWL) Final(env *Env) {
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
	}
	s, err := finalSession(env)
	if err != nil {
		w.finalErr = err
		return
	}
	defer s.Close()
	w.mu.Lock()
	rounds := append([]*movedRound(nil), w.rounds...)
	w.mu.Unlock()
	for _, rd := range rounds {
		if rd.void != "" {
			continue
		}
		type got struct {
			data []byte
			st   rawStat
		}
		g, err := retry(30*time.Second, func() (got, error) {
			if _, err := s.Conn.Sync(rd.path); err != nil {
				return got{}, err
			}
			d, st, err := s.Conn.Get(rd.path)
			if err != nil {
				return got{}, err
			}
			return got{d, rawStat{Czxid: st.Czxid, Mzxid: st.Mzxid, Version: st.Version}}, nil
		})
		w.mu.Lock()
		if err != nil {
			rd.finalErr = err.Error()
		} else {
			rd.finalData, rd.finalStat = string(g.data), g.st
		}
		w.mu.Unlock()
	}
	w.findInLogs(rounds)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, rd := range rounds {
		if rd.void != "" {
			continue
		}
		log := "not in the log"
		switch {
		case rd.logOld.found && rd.logNew.found && rd.logNew.before(rd.logOld):
			log = "in the log after the new write"
		case rd.logOld.found:
			log = "in the log before the new write"
		}
		fate := "no answer"
		switch {
		case rd.oldReply != nil:
			fate = fmt.Sprintf("answered (err %d)", rd.oldReply.Err)
		case rd.oldErr != "":
			fate = fmt.Sprintf("connection closed %.2fs after it was sent", float64(rd.oldAt2-rd.oldAt)/1e9)
		}
		env.Events.Add("moved-session: round %d: %s holds %q (version %d); the old write: %s, %s", rd.k, rd.path,
			rd.finalData, rd.finalStat.Version, fate, log)
	}
}

// findInLogs looks for each round's writes in the members' transaction logs. zkr's log holds
// every proposed request (its data verbatim) whether it was applied or refused; ZooKeeper's
// holds a txn with the session and the request's xid, an error txn (SessionMoved) if refused.
func (w *movedWL) findInLogs(rounds []*movedRound) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.c.Members {
		if w.c.Kind == "zkr" {
			// Both places from one member's log (another's may be purged differently).
			olds, news := make([]logPlace, len(rounds)), make([]logPlace, len(rounds))
			for i, path := range sortedNumbered(filepath.Join(m.DataDir, "raft", "log"), "seg.") {
				b, err := os.ReadFile(path)
				if err != nil {
					continue
				}
				for j, rd := range rounds {
					if at := bytes.Index(b, []byte(rd.oldData)); rd.void == "" && at >= 0 && !olds[j].found {
						olds[j] = logPlace{true, i, int64(at)}
					}
					if at := bytes.Index(b, []byte(rd.newData)); rd.void == "" && at >= 0 && !news[j].found {
						news[j] = logPlace{true, i, int64(at)}
					}
				}
			}
			for j, rd := range rounds {
				if !rd.logOld.found || !rd.logNew.found {
					if olds[j].found && news[j].found || !rd.logOld.found && !rd.logNew.found {
						rd.logOld, rd.logNew = olds[j], news[j]
					}
				}
			}
			continue
		}
		for _, path := range sortedNumbered(filepath.Join(m.DataDir, "version-2"), "log.") {
			b, err := os.ReadFile(path)
			if err != nil {
				continue
			}
			recs, _ := logRecords("zookeeper", path)
			for _, off := range recs {
				// crc u64 | length u32 | TxnHeader{clientId, cxid, zxid, time, type} | ErrorTxn{err}
				t := b[off+12:]
				if len(t) < 36 {
					continue
				}
				sid, cxid, zxid := int64(be64At(t, 0)), int32(be32At(t, 8)), int64(be64At(t, 12))
				typ, code := int32(be32At(t, 28)), int32(be32At(t, 32))
				for _, rd := range rounds {
					if rd.void == "" && sid == rd.sid && cxid == rd.oldXid && (typ == -1 || typ == opSetData) {
						rd.logRefused = typ == -1 && code == errSessionMove
						rd.logOld = logPlace{true, 0, zxid}
						rd.logNew = logPlace{true, 0, rd.newStat.Mzxid}
					}
				}
			}
		}
	}
}

func be64At(b []byte, o int) uint64 {
	return uint64(be32At(b, o))<<32 | uint64(be32At(b, o+4))
}

func be32At(b []byte, o int) uint32 {
	return uint32(b[o])<<24 | uint32(b[o+1])<<16 | uint32(b[o+2])<<8 | uint32(b[o+3])
}

func (w *movedWL) Close() {}

func (w *movedWL) Result() Cell {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finalErr != nil {
		c := w.cell(w.Name())
		c.Verdict = "final read failed: " + w.finalErr.Error()
		return c
	}
	var judged, inFlight, held, reachedAfter, refused, appliedBefore, answered int
	var voids []string
	for _, rd := range w.rounds {
		if rd.void != "" {
			w.noteAs(Unknown, fmt.Errorf("round void: %s", firstWords(rd.void)))
			voids = append(voids, fmt.Sprintf("r%d: %s", rd.k, rd.void))
			continue
		}
		judged++
		w.noteAs(OK, nil)
		if rd.inFlight {
			inFlight++
		}
		if rd.heldByF {
			held++
		}
		if rd.oldReply != nil {
			answered++
		}
		if rd.newStat.Version == 2 {
			appliedBefore++
		}
		if rd.logOld.found && rd.logNew.found && rd.logNew.before(rd.logOld) {
			reachedAfter++
			if rd.logRefused {
				refused++
			}
		}
		where := fmt.Sprintf("round %d (session 0x%x, m%d → m%d, %s)", rd.k, rd.sid, rd.from, rd.to, rd.toRole)
		switch {
		case rd.finalErr != "":
			w.p.add("%s: %s unreadable after the heal: %s", where, rd.path, rd.finalErr)
		case rd.finalData == rd.oldData:
			w.p.add("%s: the old write was applied after the new one: %s holds %q at version %d, mzxid 0x%x; the new write was acknowledged at version %d, zxid 0x%x",
				where, rd.path, rd.finalData, rd.finalStat.Version, rd.finalStat.Mzxid, rd.newStat.Version, rd.newStat.Mzxid)
		case rd.finalData != rd.newData || rd.finalStat.Version != rd.newStat.Version || rd.finalStat.Mzxid != rd.newStat.Mzxid:
			w.p.add("%s: %s holds %q at version %d, mzxid 0x%x after the heal; the new write was acknowledged at version %d, zxid 0x%x",
				where, rd.path, rd.finalData, rd.finalStat.Version, rd.finalStat.Mzxid, rd.newStat.Version, rd.newStat.Mzxid)
		}
		if rep := rd.oldReply; rep != nil && rep.Err == 0 {
			if st, ok := parseStat(rep.Body); ok && st.Mzxid > rd.newStat.Mzxid {
				w.p.add("%s: the old write was acknowledged at zxid 0x%x, after the new write's 0x%x", where, st.Mzxid, rd.newStat.Mzxid)
			}
		}
	}
	c := w.cell(w.Name())
	mode := ""
	if w.selftest {
		mode = "SELF-TEST (no re-attach): "
	}
	logged := fmt.Sprintf("in the log after the new write in %d", reachedAfter)
	if w.c.Kind != "zkr" {
		logged += fmt.Sprintf(" (%d as SessionMoved error txns)", refused)
	}
	summary := fmt.Sprintf("%s%d rounds judged, old write in flight in %d (%d still on an open connection to its follower), "+
		"%s, applied before it in %d, answered on its connection in %d",
		mode, judged, inFlight, held, logged, appliedBefore, answered)
	if len(voids) > 0 {
		summary += fmt.Sprintf("; %d void (%s)", len(voids), strings.Join(voids, "; "))
	}
	if inFlight == 0 && w.p.total == 0 {
		w.p.add("vacuous: no round had its old write in flight when the new write was acknowledged")
	}
	w.p.fill(&c, "ok: never applied after the new write: "+summary)
	if !c.Valid {
		c.Verdict += ": " + summary
	}
	return c
}

func firstWords(s string) string {
	if i := strings.IndexAny(s, ":("); i > 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}
