// Command probe tries, from inside the sandbox, everything a hostile
// connector would try, and prints what happened as JSON on stdout. Its
// first argument names the attempt; the sandbox tests judge the outcome.
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

func main() {
	out := map[string]any{}
	report := func() {
		b, _ := json.Marshal(out)
		fmt.Println(string(b))
	}
	switch os.Args[1] {
	case "exit":
		fmt.Println("hello from the sandbox")
		os.Exit(7)
	case "look":
		// args: canary file, TCP address on the host's loopback, unix
		// socket inside the workspace
		_, err := os.ReadFile(os.Args[2])
		out["read_canary"] = errString(err)
		_, err = os.ReadDir("/")
		out["list_root"] = errString(err)
		entries, _ := os.ReadDir("/")
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		out["root"] = names
		out["env"] = os.Environ()
		out["hostname"], _ = os.Hostname()
		out["pid"] = os.Getpid()
		out["uid"] = os.Getuid()
		c, err := net.DialTimeout("tcp", os.Args[3], 2*time.Second)
		if c != nil {
			c.Close()
		}
		out["dial_tcp"] = errString(err)
		_, err = net.LookupHost("example.com")
		out["dns"] = errString(err)
		u, err := net.Dial("unix", os.Args[4])
		if u != nil {
			u.Write([]byte("hi"))
			u.Close()
		}
		out["dial_unix"] = errString(err)
		err = os.WriteFile("/w/written", []byte("x"), 0o644)
		out["write_workspace"] = errString(err)
		err = os.WriteFile("/tmp-escape", []byte("x"), 0o644)
		out["write_root"] = errString(err)
		err = exec.Command("/bin/sh", "-c", "true").Run()
		out["exec_shell"] = errString(err)
		err = syscall.Unshare(syscall.CLONE_NEWUSER)
		out["nested_userns"] = errString(err)
		err = syscall.Sethostname([]byte("changed"))
		out["sethostname"] = errString(err)
		report()
	case "memory":
		var keep [][]byte
		for i := 0; i < 64; i++ {
			keep = append(keep, make([]byte, 64<<20))
			for j := range keep[i] {
				keep[i][j] = 1
			}
		}
		out["allocated_mib"] = len(keep) * 64
		report()
	case "threads":
		var wg sync.WaitGroup
		started := 0
		var mu sync.Mutex
		for i := 0; i < 1000; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread() // each goroutine keeps an OS thread
				mu.Lock()
				started++
				mu.Unlock()
				time.Sleep(2 * time.Second)
			}()
		}
		wg.Wait()
		out["threads"] = started
		report()
	case "spin":
		for {
		}
	case "sleep":
		time.Sleep(time.Hour)
	case "bigfile":
		// The root is read-only; the only writable thing is stdout.
		f := os.Stdout
		n := 0
		buf := make([]byte, 1<<20)
		for i := 0; i < 8; i++ {
			m, err := f.Write(buf)
			n += m
			if err != nil {
				break
			}
		}
		fmt.Fprintln(os.Stderr, "wrote", n)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
