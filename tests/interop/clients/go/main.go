// go-zookeeper/zk interop scenarios: CRUD, watches, ephemerals (close and expiry), lock.
//
//	zkclient --list
//	zkclient SCENARIO HOST:PORT
//
// Prints a JSON-lines transcript of what the client observed (one object per step, keys
// sorted); tests/interop/clients/run.sh runs it against ZooKeeper and zkr and compares the
// transcripts with tests/interop/lib/compare.py. Exits non-zero if the scenario itself breaks
// (cannot connect, a watch event never arrives...).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
)

type obj = map[string]any

func emit(step string, kv obj) {
	if kv == nil {
		kv = obj{}
	}
	kv["step"] = step
	b, err := json.Marshal(kv) // encoding/json sorts map keys
	if err != nil {
		fail("json: %v", err)
	}
	fmt.Println(string(b))
}

func fail(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "FATAL: "+f+"\n", a...)
	os.Exit(1)
}

func stat(s *zk.Stat) obj {
	if s == nil {
		return nil
	}
	return obj{"czxid": s.Czxid, "mzxid": s.Mzxid, "ctime": s.Ctime, "mtime": s.Mtime, "version": s.Version,
		"cversion": s.Cversion, "aversion": s.Aversion, "ephemeralOwner": s.EphemeralOwner,
		"dataLength": s.DataLength, "numChildren": s.NumChildren, "pzxid": s.Pzxid}
}

// result records a call's value or its error (the client's own error text, identical for both servers).
func result(step string, v obj, err error) {
	if err != nil {
		emit(step, obj{"err": err.Error()})
		return
	}
	emit(step, v)
}

func connect(addr string, timeout time.Duration) *zk.Conn {
	c, ev, err := zk.Connect([]string{addr}, timeout, zk.WithLogInfo(false))
	if err != nil {
		fail("connect %s: %v", addr, err)
	}
	deadline := time.After(20 * time.Second)
	for {
		select {
		case e := <-ev:
			if e.State == zk.StateHasSession {
				go func() {
					for range ev {
					}
				}()
				return c
			}
		case <-deadline:
			fail("no session with %s within 20s", addr)
		}
	}
}

func rmr(c *zk.Conn, p string) {
	kids, _, err := c.Children(p)
	if err == zk.ErrNoNode {
		return
	}
	for _, k := range kids {
		rmr(c, p+"/"+k)
	}
	if err := c.Delete(p, -1); err != nil && err != zk.ErrNoNode {
		fail("cleanup %s: %v", p, err)
	}
}

func waitEvent(step string, ch <-chan zk.Event, timeout time.Duration) {
	select {
	case e := <-ch:
		emit(step, obj{"type": e.Type.String(), "state": e.State.String(), "path": e.Path})
	case <-time.After(timeout):
		fail("%s: no watch event within %v", step, timeout)
	}
}

// noEvent checks that a watch stays silent (a one-shot watch must not fire twice).
func noEvent(step string, ch <-chan zk.Event) {
	select {
	case e := <-ch:
		emit(step, obj{"unexpected": e.Type.String(), "path": e.Path})
	case <-time.After(500 * time.Millisecond):
		emit(step, obj{"silent": true})
	}
}

var acl = zk.WorldACL(zk.PermAll)

func scCrud(addr string) {
	const R = "/go_crud"
	c := connect(addr, 10*time.Second)
	defer c.Close()
	rmr(c, R)
	p, err := c.Create(R, []byte("root"), 0, acl)
	result("create_root", obj{"path": p}, err)
	_, err = c.Create(R, []byte("x"), 0, acl)
	result("create_dup", nil, err)
	_, err = c.Create(R+"/a/b", nil, 0, acl)
	result("create_noparent", nil, err)
	p, err = c.Create(R+"/a", []byte("alpha"), 0, acl)
	result("create_a", obj{"path": p}, err)
	d, s, err := c.Get(R + "/a")
	result("get_a", obj{"data": string(d), "stat": stat(s)}, err)
	s, err = c.Set(R+"/a", []byte("beta"), 0)
	result("set_a_v0", obj{"stat": stat(s)}, err)
	_, err = c.Set(R+"/a", []byte("gamma"), 0)
	result("set_a_badversion", nil, err)
	ok, s, err := c.Exists(R + "/a")
	result("exists_a", obj{"exists": ok, "stat": stat(s)}, err)
	ok, s, err = c.Exists(R + "/missing")
	result("exists_missing", obj{"exists": ok, "stat": stat(s)}, err)
	_, _, err = c.Get(R + "/missing")
	result("get_missing", nil, err)
	for i := 0; i < 3; i++ {
		p, err = c.Create(R+"/s-", []byte{}, zk.FlagSequence, acl)
		result("create_seq", obj{"path": p}, err)
	}
	kids, s, err := c.Children(R)
	sort.Strings(kids)
	result("children_root", obj{"children": kids, "stat": stat(s)}, err)
	err = c.Delete(R+"/a", 5)
	result("delete_badversion", nil, err)
	err = c.Delete(R, -1)
	result("delete_notempty", nil, err)
	s, err = c.SetACL(R+"/a", zk.WorldACL(zk.PermRead|zk.PermWrite|zk.PermDelete), -1)
	result("setacl_a", obj{"stat": stat(s)}, err)
	acls, s, err := c.GetACL(R + "/a")
	result("getacl_a", obj{"acl": acls, "stat": stat(s)}, err)
	_, err = c.Create(R+"/a/child", nil, 0, acl)
	result("create_under_nocreate_acl", nil, err)
	res, err := c.Multi(
		&zk.CreateRequest{Path: R + "/m1", Data: []byte("m"), Acl: acl},
		&zk.SetDataRequest{Path: R + "/a", Data: []byte("multi"), Version: -1},
		&zk.CheckVersionRequest{Path: R + "/a", Version: 99},
	)
	mr := []obj{}
	for _, r := range res {
		e := ""
		if r.Error != nil {
			e = r.Error.Error()
		}
		mr = append(mr, obj{"string": r.String, "err": e, "stat": stat(r.Stat)})
	}
	result("multi_failing", obj{"results": mr}, err)
	ok, _, err = c.Exists(R + "/m1")
	result("exists_m1_after_failed_multi", obj{"exists": ok}, err)
	res, err = c.Multi(
		&zk.CreateRequest{Path: R + "/m1", Data: []byte("m"), Acl: acl},
		&zk.SetDataRequest{Path: R + "/a", Data: []byte("multi"), Version: -1},
		&zk.DeleteRequest{Path: R + "/m1", Version: 0},
	)
	mr = []obj{}
	for _, r := range res {
		mr = append(mr, obj{"string": r.String, "stat": stat(r.Stat)})
	}
	result("multi_ok", obj{"results": mr}, err)
	p, err = c.Sync(R)
	result("sync", obj{"path": p}, err)
	rmr(c, R)
	ok, _, err = c.Exists(R)
	result("exists_root_after_rmr", obj{"exists": ok}, err)
}

func scWatches(addr string) {
	const R = "/go_watch"
	c := connect(addr, 10*time.Second)
	defer c.Close()
	w := connect(addr, 10*time.Second)
	defer w.Close()
	rmr(c, R)
	_, err := c.Create(R, nil, 0, acl)
	result("create_root", obj{}, err)
	_, err = c.Create(R+"/n", []byte("v0"), 0, acl)
	result("create_n", obj{}, err)

	d, _, ch, err := w.GetW(R + "/n")
	result("getw_n", obj{"data": string(d)}, err)
	_, err = c.Set(R+"/n", []byte("v1"), -1)
	result("set_n", obj{}, err)
	waitEvent("event_data_changed", ch, 10*time.Second)
	_, err = c.Set(R+"/n", []byte("v2"), -1)
	result("set_n_again", obj{}, err)
	noEvent("one_shot_data_watch", ch)

	ok, _, ch, err := w.ExistsW(R + "/later")
	result("existsw_missing", obj{"exists": ok}, err)
	_, err = c.Create(R+"/later", []byte("l"), 0, acl)
	result("create_later", obj{}, err)
	waitEvent("event_created", ch, 10*time.Second)

	kids, _, ch, err := w.ChildrenW(R)
	sort.Strings(kids)
	result("childrenw_root", obj{"children": kids}, err)
	_, err = c.Create(R+"/kid", nil, 0, acl)
	result("create_kid", obj{}, err)
	waitEvent("event_children_changed_create", ch, 10*time.Second)

	_, _, ch, err = w.ChildrenW(R)
	result("childrenw_root_again", obj{}, err)
	err = c.Delete(R+"/kid", -1)
	result("delete_kid", obj{}, err)
	waitEvent("event_children_changed_delete", ch, 10*time.Second)

	_, _, dch, err := w.GetW(R + "/n")
	result("getw_n_for_delete", obj{}, err)
	_, _, cch, err := w.ChildrenW(R + "/n")
	result("childrenw_n_for_delete", obj{}, err)
	err = c.Delete(R+"/n", -1)
	result("delete_n", obj{}, err)
	waitEvent("event_deleted_data_watch", dch, 10*time.Second)
	waitEvent("event_deleted_child_watch", cch, 10*time.Second)

	_, _, _, err = w.GetW(R + "/gone")
	result("getw_missing", obj{}, err)
	_, _, _, err = w.ChildrenW(R + "/gone")
	result("childrenw_missing", obj{}, err)
	rmr(c, R)
}

func scEphemerals(addr string) {
	const R = "/go_eph"
	obs := connect(addr, 10*time.Second)
	defer obs.Close()
	rmr(obs, R)
	_, err := obs.Create(R, nil, 0, acl)
	result("create_root", obj{}, err)

	owner := connect(addr, 10*time.Second)
	p, err := owner.Create(R+"/e", []byte("mine"), zk.FlagEphemeral, acl)
	result("create_ephemeral", obj{"path": p}, err)
	p, err = owner.Create(R+"/es-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
	result("create_ephemeral_seq", obj{"path": p}, err)
	_, err = owner.Create(R+"/e/child", nil, 0, acl)
	result("create_child_of_ephemeral", nil, err)
	_, s, err := obs.Get(R + "/e")
	result("stat_ephemeral", obj{"stat": stat(s), "owner_is_session": s != nil && s.EphemeralOwner == owner.SessionID()}, err)
	ok, _, ch, err := obs.ExistsW(R + "/e")
	result("existsw_ephemeral", obj{"exists": ok}, err)
	owner.Close()
	waitEvent("event_deleted_on_close", ch, 10*time.Second)
	kids, _, err := obs.Children(R)
	result("children_after_close", obj{"children": kids}, err)

	// session expiry: a child process holds an ephemeral, then is frozen (SIGSTOP) so that its
	// session stops pinging and the server expires it
	self, err := os.Executable()
	if err != nil {
		fail("executable: %v", err)
	}
	cmd := exec.Command(self, "--hold", addr, R+"/x")
	out, err := cmd.StdoutPipe()
	if err != nil {
		fail("pipe: %v", err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		fail("start holder: %v", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		fail("holder did not get ready: %q %v", line, err)
	}
	ok, s, ch, err = obs.ExistsW(R + "/x")
	result("existsw_held", obj{"exists": ok, "ephemeral": s != nil && s.EphemeralOwner != 0}, err)
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		fail("SIGSTOP: %v", err)
	}
	waitEvent("event_deleted_on_expiry", ch, 40*time.Second)
	ok, _, err = obs.Exists(R + "/x")
	result("exists_after_expiry", obj{"exists": ok}, err)
	rmr(obs, R)
}

// hold: create an ephemeral with a 2 s session and wait to be frozen.
func hold(addr, path string) {
	c := connect(addr, 2*time.Second)
	if _, err := c.Create(path, []byte("held"), zk.FlagEphemeral, acl); err != nil {
		fail("hold create: %v", err)
	}
	fmt.Println("ready")
	time.Sleep(120 * time.Second)
}

func scLock(addr string) {
	const R = "/go_lock"
	c1 := connect(addr, 10*time.Second)
	defer c1.Close()
	c2 := connect(addr, 10*time.Second)
	defer c2.Close()
	rmr(c1, R)
	l1 := zk.NewLock(c1, R, acl)
	l2 := zk.NewLock(c2, R, acl)
	result("lock1", obj{}, l1.Lock())
	got := make(chan error, 1)
	go func() { got <- l2.Lock() }()
	select {
	case err := <-got:
		emit("lock2_while_held", obj{"acquired": true, "err": fmt.Sprint(err)})
	case <-time.After(time.Second):
		emit("lock2_while_held", obj{"blocked": true})
	}
	kids, _, err := c1.Children(R)
	result("contenders", obj{"count": len(kids)}, err)
	result("unlock1", obj{}, l1.Unlock())
	select {
	case err := <-got:
		result("lock2_after_unlock", obj{"acquired": true}, err)
	case <-time.After(10 * time.Second):
		fail("lock2 not acquired after unlock")
	}
	result("unlock2", obj{}, l2.Unlock())
	kids, _, err = c1.Children(R)
	result("contenders_after", obj{"count": len(kids)}, err)
	rmr(c1, R)
}

var scenarios = map[string]func(string){
	"crud": scCrud, "watches": scWatches, "ephemerals": scEphemerals, "lock": scLock,
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--list" {
		for _, n := range []string{"crud", "watches", "ephemerals", "lock"} {
			fmt.Println(n)
		}
		return
	}
	if len(os.Args) == 4 && os.Args[1] == "--hold" {
		hold(os.Args[2], os.Args[3])
		return
	}
	if len(os.Args) != 3 || scenarios[os.Args[1]] == nil {
		fail("usage: zkclient --list | SCENARIO HOST:PORT")
	}
	go func() {
		time.Sleep(90 * time.Second)
		fail("watchdog: scenario took longer than 90s")
	}()
	scenarios[os.Args[1]](os.Args[2])
}
