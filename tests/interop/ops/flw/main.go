// Reads zkr's four-letter words with go-zookeeper's own parsers (FLWRuok, FLWSrvr, FLWCons),
// the ones Go tooling uses, while a go-zookeeper session with watches is open.
// Usage: flw host:port. Prints one PASS/FAIL line per check; exit 1 if any failed.
package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

var failed bool

func check(name string, ok bool, detail string) {
	if ok {
		fmt.Printf("PASS %s\n", name)
	} else {
		fmt.Printf("FAIL %s: %s\n", name, detail)
		failed = true
	}
}

// count walks the tree and counts its znodes, the root included.
func count(conn *zk.Conn, path string) int64 {
	children, _, err := conn.Children(path)
	if err != nil {
		return 0
	}
	n := int64(1)
	for _, c := range children {
		if path == "/" {
			n += count(conn, "/"+c)
		} else {
			n += count(conn, path+"/"+c)
		}
	}
	return n
}

func main() {
	addr := os.Args[1]
	servers := []string{addr}
	t := 10 * time.Second

	oks := zk.FLWRuok(servers, t)
	check("go/FLWRuok", len(oks) == 1 && oks[0], fmt.Sprint(oks))

	conn, _, err := zk.Connect(servers, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		check("go/connect", false, err.Error())
		os.Exit(1)
	}
	defer conn.Close()
	if _, err := conn.Create("/flw", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
		check("go/create", false, err.Error())
	}
	for i := 0; i < 5; i++ {
		if _, err := conn.Create(fmt.Sprintf("/flw/n%d", i), []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			check("go/create", false, err.Error())
		}
	}
	if _, _, _, err := conn.GetW("/flw"); err != nil {
		check("go/getw", false, err.Error())
	}
	children, _, err := conn.Children("/flw")
	check("go/children", err == nil && len(children) == 5, fmt.Sprint(children, err))

	stats, ok := zk.FLWSrvr(servers, t)
	if !ok || len(stats) != 1 || stats[0].Error != nil {
		detail := "no stats"
		if len(stats) == 1 && stats[0].Error != nil {
			detail = stats[0].Error.Error()
		}
		check("go/FLWSrvr parses", false, detail)
	} else {
		s := stats[0]
		check("go/FLWSrvr parses", true, "")
		check("go/FLWSrvr mode", s.Mode == zk.ModeStandalone, fmt.Sprint(s.Mode))
		check("go/FLWSrvr version", strings.HasPrefix(s.Version, "3.9.0"), s.Version)
		nodes := count(conn, "/")
		// ZooKeeper's node map holds the root twice ("" and "/"): its count is one more than a walk finds.
		check("go/FLWSrvr node count", s.NodeCount == nodes+1, fmt.Sprint(s.NodeCount, " vs ", nodes, " walked + 1"))
		check("go/FLWSrvr packets", s.Received >= 8 && s.Sent >= 7, fmt.Sprint(s.Received, s.Sent))
		check("go/FLWSrvr connections", s.Connections >= 2, fmt.Sprint(s.Connections))
		check("go/FLWSrvr zxid counter", s.Counter >= 6, fmt.Sprint(s.Counter))
	}

	// FLWCons cannot parse the brief line of the asking connection (ZooKeeper prints it too),
	// so only the session's own line is required.
	cons, _ := zk.FLWCons(servers, t)
	found := false
	if len(cons) == 1 {
		for _, c := range cons[0].Clients {
			if c.SessionID == conn.SessionID() {
				found = true
				check("go/FLWCons session line", c.Received >= 8 && c.Sent >= 8 && c.Timeout > 0, fmt.Sprintf("%+v", c))
				check("go/FLWCons last op", c.LastOperation == "GETC" || c.LastOperation == "PING", c.LastOperation)
				check("go/FLWCons lzxid", c.Lzxid >= 6, fmt.Sprint(c.Lzxid))
			}
		}
	}
	check("go/FLWCons finds the session", found, fmt.Sprintf("session 0x%x in %+v", conn.SessionID(), cons))

	if failed {
		os.Exit(1)
	}
}
