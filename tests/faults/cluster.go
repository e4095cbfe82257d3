package main

// The members of one run: zkr or Debian's ZooKeeper 3.8, one process per member in its own
// namespace, all from the same zoo.cfg shape. A member can be killed (-9), paused (SIGSTOP),
// resumed and restarted; its state is read with the four-letter words over its client port.

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
)

const (
	clientPort  = 2181
	tickMs      = 500
	snapCount   = 1000
	zkLogFlags  = "-cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar -Dorg.slf4j.simpleLogger.showDateTime=true"
	zkJVMFlags  = "-Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1"
	zkServerSh  = "/usr/share/zookeeper/bin/zkServer.sh"
	flwDeadline = 2 * time.Second
)

type Member struct {
	ID      int
	IP      string
	Dir     string // member's directory: zoo.cfg, log
	DataDir string
	Log     string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	exitErr error
	paused  bool
	starts  int
}

type Cluster struct {
	Kind    string // "zkr" or "zookeeper"
	Members []*Member
	zkrBin  string
	events  *EventLog
}

func (c *Cluster) N() int { return len(c.Members) }

func (c *Cluster) Addrs() []string {
	var out []string
	for _, m := range c.Members {
		out = append(out, fmt.Sprintf("%s:%d", m.IP, clientPort))
	}
	return out
}

func newCluster(kind string, n int, work, zkrBin string, events *EventLog) (*Cluster, error) {
	c := &Cluster{Kind: kind, zkrBin: zkrBin, events: events}
	for i := 1; i <= n; i++ {
		dir := filepath.Join(work, fmt.Sprintf("m%d", i))
		m := &Member{ID: i, IP: memberIP(i), Dir: dir, DataDir: filepath.Join(dir, "data"), Log: filepath.Join(dir, "member.log")}
		if err := os.MkdirAll(m.DataDir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(m.DataDir, "myid"), []byte(fmt.Sprintf("%d\n", i)), 0o644); err != nil {
			return nil, err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "tickTime=%d\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nclientPort=%d\n", tickMs, m.DataDir, clientPort)
		fmt.Fprintf(&b, "maxClientCnxns=0\nminSessionTimeout=1000\nmaxSessionTimeout=30000\n")
		fmt.Fprintf(&b, "4lw.commands.whitelist=*\nadmin.enableServer=false\nsnapCount=%d\n", snapCount)
		for j := 1; j <= n; j++ {
			fmt.Fprintf(&b, "server.%d=%s:2888:3888;%d\n", j, memberIP(j), clientPort)
		}
		if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(b.String()), 0o644); err != nil {
			return nil, err
		}
		c.Members = append(c.Members, m)
	}
	return c, nil
}

func (c *Cluster) Member(id int) *Member { return c.Members[id-1] }

// Start starts a member that is not running.
func (c *Cluster) Start(m *Member) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		return nil
	}
	logf, err := os.OpenFile(m.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	m.starts++
	fmt.Fprintf(logf, "\n===== harness: start #%d at %s =====\n", m.starts, time.Now().Format(time.RFC3339Nano))
	cfg := filepath.Join(m.Dir, "zoo.cfg")
	var cmd *exec.Cmd
	if c.Kind == "zkr" {
		cmd = exec.Command("ip", "netns", "exec", nsName(m.ID), c.zkrBin, "serve", "--config", cfg)
		level := "info"
		if l := os.Getenv("ZKRF_RUST_LOG"); l != "" {
			level = l // e.g. info,zkr::server::core=debug
		}
		cmd.Env = append(os.Environ(), "RUST_LOG="+level)
	} else {
		// start-foreground execs the JVM, and ip netns exec and env exec too: the pid is ZooKeeper's.
		cmd = exec.Command("ip", "netns", "exec", nsName(m.ID), "env", "ZOOCFGDIR="+m.Dir, "ZOO_LOG_DIR="+m.Dir,
			"SERVER_JVMFLAGS="+zkLogFlags+" "+zkJVMFlags, zkServerSh, "start-foreground", cfg)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	m.cmd, m.paused = cmd, false
	m.exited = make(chan struct{})
	exited := m.exited
	go func() {
		err := cmd.Wait()
		logf.Close()
		m.mu.Lock()
		m.exitErr = err
		if m.cmd == cmd {
			m.cmd = nil
		}
		m.mu.Unlock()
		close(exited)
	}()
	return nil
}

// Running says whether the member's process is alive (paused counts as alive).
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cmd != nil
}

func (m *Member) Paused() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.paused
}

// ExitStatus describes how the member's last process ended.
func (m *Member) ExitStatus() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		return "running"
	}
	if m.exitErr == nil {
		return "exited 0"
	}
	return m.exitErr.Error()
}

// Kill kills the member with SIGKILL and waits until it is gone.
func (c *Cluster) Kill(m *Member) {
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
	}
	m.mu.Lock()
	m.paused = false
	m.mu.Unlock()
}

func (c *Cluster) Pause(m *Member) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil && !m.paused {
		_ = syscall.Kill(m.cmd.Process.Pid, syscall.SIGSTOP)
		m.paused = true
	}
}

func (c *Cluster) Resume(m *Member) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil && m.paused {
		_ = syscall.Kill(m.cmd.Process.Pid, syscall.SIGCONT)
	}
	m.paused = false
}

// StopAll kills every member (end of a run).
func (c *Cluster) StopAll() {
	var wg sync.WaitGroup
	for _, m := range c.Members {
		wg.Add(1)
		go func(m *Member) { defer wg.Done(); c.Kill(m) }(m)
	}
	wg.Wait()
}

// flw sends a four-letter word to a member and returns the answer.
func flw(ip, cmd string) (string, error) {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("%s:%d", ip, clientPort), time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(flwDeadline))
	if _, err := conn.Write([]byte(cmd)); err != nil {
		return "", err
	}
	var b strings.Builder
	r := bufio.NewReader(conn)
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String(), nil
}

func kv(text string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if i := strings.IndexAny(line, "\t:"); i > 0 {
			out[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
		}
	}
	return out
}

// Status is what a member says about itself.
type Status struct {
	Up     bool
	Mode   string // leader, follower, observer, standalone, read-only, or "" when not serving
	Zxid   int64
	Digest string // zkr: zk_digest@zk_digest_zxid; ZooKeeper: "" (no digest in its mntr)
}

func (c *Cluster) Status(m *Member) Status {
	if !m.Running() || m.Paused() {
		return Status{}
	}
	srvr, err := flw(m.IP, "srvr")
	if err != nil {
		return Status{}
	}
	st := Status{Up: true}
	f := kv(srvr)
	st.Mode = f["Mode"]
	if z, ok := f["Zxid"]; ok {
		v, _ := strconv.ParseInt(strings.TrimPrefix(z, "0x"), 16, 64)
		st.Zxid = v
	}
	if c.Kind == "zkr" && st.Mode != "" {
		if mntr, err := flw(m.IP, "mntr"); err == nil {
			g := kv(mntr)
			st.Digest = g["zk_digest"] + "@" + g["zk_digest_zxid"]
		}
	}
	return st
}

// Leader returns the member that says it leads, if exactly one does.
func (c *Cluster) Leader() *Member {
	var leader *Member
	for _, m := range c.Members {
		if c.Status(m).Mode == "leader" {
			if leader != nil {
				return nil
			}
			leader = m
		}
	}
	return leader
}

// WaitLeader waits up to d for a leader.
func (c *Cluster) WaitLeader(d time.Duration) *Member {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if l := c.Leader(); l != nil {
			return l
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// Converged says whether every member runs and serves, one of them leads, and all applied the
// same state: equal digests on zkr, equal zxids on ZooKeeper. The string says what is off.
func (c *Cluster) Converged() (bool, string) {
	var leaders int
	var first *Status
	var why []string
	for _, m := range c.Members {
		st := c.Status(m)
		switch {
		case !m.Running():
			why = append(why, fmt.Sprintf("m%d down (%s)", m.ID, m.ExitStatus()))
			continue
		case !st.Up:
			why = append(why, fmt.Sprintf("m%d not answering", m.ID))
			continue
		case st.Mode == "leader":
			leaders++
		case st.Mode == "follower":
		default:
			why = append(why, fmt.Sprintf("m%d mode %q", m.ID, st.Mode))
			continue
		}
		if first == nil {
			first = &st
		} else if st.Zxid != first.Zxid || st.Digest != first.Digest {
			why = append(why, fmt.Sprintf("m%d at zxid 0x%x digest %s vs 0x%x %s", m.ID, st.Zxid, st.Digest, first.Zxid, first.Digest))
		}
	}
	if leaders != 1 {
		why = append(why, fmt.Sprintf("%d leaders", leaders))
	}
	return len(why) == 0, strings.Join(why, "; ")
}

// probe writes once through the ensemble (setData on /), so that every member's last zxid
// moves past a leader change: ZooKeeper's followers report the previous epoch's zxid until the
// new leader's first transaction.
func (c *Cluster) probe() {
	s, err := dialSession(c.Addrs(), 0)
	if err != nil {
		return
	}
	defer s.Close()
	if s.WaitSession(3*time.Second) == nil {
		_, _ = call(func() (*zk.Stat, error) { return s.Conn.Set("/", []byte("probe"), -1) })
	}
}

// WaitConverged waits up to d for Converged to hold twice in a row, 300 ms apart (so an
// expiry in flight does not count as agreement). Members that serve under one leader but
// report different zxids get a probe write now and then.
func (c *Cluster) WaitConverged(d time.Duration) (time.Duration, bool, string) {
	start := time.Now()
	var why string
	var probed time.Time
	for time.Since(start) < d {
		ok, w := c.Converged()
		if !ok && strings.Contains(w, " at zxid ") && !strings.Contains(w, "leaders") && time.Since(probed) > time.Second {
			c.probe()
			probed = time.Now()
			continue
		}
		if ok {
			time.Sleep(300 * time.Millisecond)
			if ok2, w2 := c.Converged(); ok2 {
				return time.Since(start), true, ""
			} else {
				w = w2
			}
		}
		why = w
		time.Sleep(200 * time.Millisecond)
	}
	return time.Since(start), false, why
}

// Files of the data directory the corruption nemeses damage.

// newestLog returns the member's newest transaction log file that holds records.
func (c *Cluster) newestLog(m *Member) (string, []int64, int64) {
	var files []string
	if c.Kind == "zkr" {
		files = sortedNumbered(filepath.Join(m.DataDir, "raft", "log"), "seg.")
	} else {
		files = sortedNumbered(filepath.Join(m.DataDir, "version-2"), "log.")
	}
	for i := len(files) - 1; i >= 0; i-- {
		recs, end := logRecords(c.Kind, files[i])
		if len(recs) > 0 {
			return files[i], recs, end
		}
	}
	return "", nil, 0
}

// newestSnapshot returns the member's newest snapshot file.
func (c *Cluster) newestSnapshot(m *Member) string {
	var files []string
	if c.Kind == "zkr" {
		files = sortedNumbered(filepath.Join(m.DataDir, "raft", "snap"), "snapshot.")
	} else {
		files = sortedNumbered(filepath.Join(m.DataDir, "version-2"), "snapshot.")
	}
	if len(files) == 0 {
		return ""
	}
	return files[len(files)-1]
}

// sortedNumbered lists dir/prefix<hex> files by their number (ZooKeeper's names are not padded).
func sortedNumbered(dir, prefix string) []string {
	ents, _ := os.ReadDir(dir)
	type f struct {
		n    uint64
		path string
	}
	var fs []f
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) || e.IsDir() {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimPrefix(name, prefix), 16, 64)
		if err != nil {
			continue // .meta, .tmp and the like
		}
		fs = append(fs, f{n, filepath.Join(dir, name)})
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].n < fs[j].n })
	var out []string
	for _, x := range fs {
		out = append(out, x.path)
	}
	return out
}

// logRecords returns the offsets of a log file's records and the end of its data.
//
//	zkr:       "ZKRL" | version u32, then length u32 | crc32 u32 | payload [| "ZKRE" from version 2], zeros after
//	ZooKeeper: "ZKLG" | version u32 | dbid u64, then crc u64 | length u32 | txn | 'B', zeros after
func logRecords(kind, path string) ([]int64, int64) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0
	}
	be32 := func(o int) int {
		return int(uint32(b[o])<<24 | uint32(b[o+1])<<16 | uint32(b[o+2])<<8 | uint32(b[o+3]))
	}
	var recs []int64
	off := 8
	lenAt, hdr, trailer := 0, 8, 0
	if kind == "zkr" && len(b) >= 8 && be32(4) >= 2 {
		trailer = 4
	}
	if kind != "zkr" {
		off, lenAt, hdr, trailer = 16, 8, 12, 1
	}
	for off+hdr <= len(b) {
		n := be32(off + lenAt)
		if n == 0 || off+hdr+n+trailer > len(b) {
			break
		}
		recs = append(recs, int64(off))
		off += hdr + n + trailer
	}
	return recs, int64(off)
}
