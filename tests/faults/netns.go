package main

// The test network: one bridge in the root namespace, one network namespace per member with a
// veth into the bridge and its own address, clients in the root namespace. Partitions are
// iptables DROP rules inside the members' namespaces (so client traffic from the root namespace
// is never cut), healed by flushing them. Everything created carries the prefix "zkrf-", and
// cleanupNetwork removes whatever carries it, also what an earlier crashed run left behind.

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	prefix   = "zkrf-"
	bridge   = "zkrf-br"
	subnet   = "10.213.0"
	hostAddr = subnet + ".1"
)

func nsName(id int) string   { return fmt.Sprintf("%sm%d", prefix, id) }
func memberIP(id int) string { return fmt.Sprintf("%s.%d", subnet, 10+id) }

// sh runs a command and returns its combined output; an error carries that output.
func sh(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

func must(name string, args ...string) {
	if _, err := sh(name, args...); err != nil {
		panic(err)
	}
}

// setupNetwork creates the bridge and n member namespaces (after removing any leftovers).
func setupNetwork(n int) error {
	cleanupNetwork()
	steps := [][]string{
		{"ip", "link", "add", bridge, "type", "bridge"},
		{"ip", "addr", "add", hostAddr + "/24", "dev", bridge},
		{"ip", "link", "set", bridge, "up"},
	}
	for i := 1; i <= n; i++ {
		ns, host, peer := nsName(i), fmt.Sprintf("%sh%d", prefix, i), fmt.Sprintf("%sp%d", prefix, i)
		steps = append(steps,
			[]string{"ip", "netns", "add", ns},
			[]string{"ip", "link", "add", host, "type", "veth", "peer", "name", peer},
			[]string{"ip", "link", "set", host, "master", bridge},
			[]string{"ip", "link", "set", host, "up"},
			[]string{"ip", "link", "set", peer, "netns", ns},
			[]string{"ip", "-n", ns, "link", "set", peer, "name", "eth0"},
			[]string{"ip", "-n", ns, "addr", "add", memberIP(i) + "/24", "dev", "eth0"},
			[]string{"ip", "-n", ns, "link", "set", "eth0", "up"},
			[]string{"ip", "-n", ns, "link", "set", "lo", "up"},
			[]string{"ip", "netns", "exec", ns, "iptables", "-F"},
		)
	}
	for _, s := range steps {
		if _, err := sh(s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// cleanupNetwork kills every process inside a zkrf- namespace, deletes those namespaces and every
// zkrf- link. Safe to call at any time, any number of times.
func cleanupNetwork() {
	out, _ := sh("ip", "netns", "list")
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], prefix) {
			continue
		}
		ns := f[0]
		for round := 0; round < 20; round++ {
			pids, _ := sh("ip", "netns", "pids", ns)
			left := strings.Fields(pids)
			if len(left) == 0 {
				break
			}
			for _, p := range left {
				if pid, err := strconv.Atoi(p); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					_ = syscall.Kill(pid, syscall.SIGCONT)
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		_, _ = sh("ip", "netns", "del", ns)
	}
	links, _ := sh("ip", "-o", "link", "show")
	for _, line := range strings.Split(links, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name := strings.TrimSuffix(f[1], ":")
		if i := strings.Index(name, "@"); i >= 0 {
			name = name[:i]
		}
		if strings.HasPrefix(name, prefix) {
			_, _ = sh("ip", "link", "del", name)
		}
	}
}

// Partitions: blocked[i] lists the members member i must not exchange packets with.
func applyPartition(n int, blocked map[int][]int) error {
	healPartitions(n)
	for i, others := range blocked {
		for _, j := range others {
			ns := nsName(i)
			if _, err := sh("ip", "netns", "exec", ns, "iptables", "-A", "INPUT", "-s", memberIP(j), "-j", "DROP"); err != nil {
				return err
			}
			if _, err := sh("ip", "netns", "exec", ns, "iptables", "-A", "OUTPUT", "-d", memberIP(j), "-j", "DROP"); err != nil {
				return err
			}
		}
	}
	return nil
}

func healPartitions(n int) {
	for i := 1; i <= n; i++ {
		if _, err := sh("ip", "netns", "exec", nsName(i), "iptables", "-F"); err != nil {
			fmt.Fprintf(os.Stderr, "heal: %v\n", err)
		}
	}
}

// components turns groups of members into the blocked map of a partition: members of different
// groups cannot talk; a member may be listed in two groups (a bridge) and then talks to both.
func components(n int, groups ...[]int) map[int][]int {
	talks := map[[2]int]bool{}
	for _, g := range groups {
		for _, a := range g {
			for _, b := range g {
				talks[[2]int{a, b}] = true
			}
		}
	}
	blocked := map[int][]int{}
	for a := 1; a <= n; a++ {
		for b := 1; b <= n; b++ {
			if a != b && !talks[[2]int{a, b}] {
				blocked[a] = append(blocked[a], b)
			}
		}
	}
	return blocked
}
