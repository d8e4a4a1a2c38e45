package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/flowgen-dev/flowgen/examples/standins"
)

// consoleLine is serve's line with the console's sign-in address.
var consoleLine = regexp.MustCompile(`web console on (http://\S+)`)

// console starts flowgen serve on the store the run stage used and checks
// that its web console signs a browser in and lists the job that stage
// finished, and that registryd's catalogue pages answer.
func (d *demo) console(ctx context.Context) (string, error) {
	logPath := filepath.Join(d.work, "serve.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	defer logFile.Close()
	d.serveProc = exec.Command(filepath.Join(d.bin, "flowgen"), "serve", "--store", filepath.Join(d.work, "flowgen.db"),
		"--blobs", filepath.Join(d.work, "blobs"), "examples/flows/order-fulfilment.yaml")
	d.serveProc.Dir = d.repo
	d.serveProc.Env = append(append(os.Environ(), standins.Env(d.apisAddr)...), "FLOWGEN_DATABASE_URL="+d.schemaURL)
	d.serveProc.Stdout, d.serveProc.Stderr = logFile, logFile
	if err := d.serveProc.Start(); err != nil {
		return "", err
	}
	exited := make(chan error, 1)
	go func() { exited <- d.serveProc.Wait() }()
	d.serveExited = exited
	for deadline := time.Now().Add(3 * time.Minute); d.consoleURL == ""; time.Sleep(100 * time.Millisecond) {
		log, _ := os.ReadFile(logPath)
		if m := consoleLine.FindSubmatch(log); m != nil {
			d.consoleURL = string(m[1])
			break
		}
		select {
		case err := <-exited:
			d.serveExited = nil
			return "", fmt.Errorf("flowgen serve exited: %v\n%s", err, lastLines(string(log), 10))
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", fmt.Errorf("flowgen serve printed no console address\n%s", lastLines(string(log), 10))
		}
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	page, err := read(browser, d.consoleURL)
	if err != nil {
		return "", fmt.Errorf("the console: %w", err)
	}
	if !strings.Contains(page, d.jobID) {
		return "", fmt.Errorf("the console's job list does not show job %s", d.jobID)
	}
	if _, err := read(d.regClient, d.regURL+"/ui/login"); err != nil {
		return "", fmt.Errorf("the registry's catalogue: %w", err)
	}
	return fmt.Sprintf("web console lists job %s; registry catalogue on %s/ui/", d.jobID, d.regURL), nil
}

// read GETs url and returns the body of a 200.
func read(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", resp.Request.URL.Path, resp.Status)
	}
	return string(body), err
}

// stopServe stops flowgen serve, as Ctrl-C would.
func (d *demo) stopServe() error {
	if d.serveExited == nil {
		return nil
	}
	d.serveProc.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.serveExited:
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 0 {
			return nil
		}
		return err
	case <-time.After(30 * time.Second):
		d.serveProc.Process.Kill()
		return errors.New("flowgen serve did not stop within 30 s of SIGTERM; killed")
	}
}
