package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
)

// lab is the simulator as run serves it (extended inventory, sdkFilter in front of /sdk), on a
// loopback port of its own, without TLS to keep the tests quick.
type lab struct {
	model *simulator.Model
	url   *url.URL
}

// startLab creates the inventory and serves it; admin/password as -username/-password ("" lets
// any login in). Tests do not run in parallel: the package keeps global state (readOnly, about).
func startLab(t *testing.T, admin, password string) *lab {
	t.Helper()
	model := simulator.VPX()
	model.Machine = 1 // one VM per pool is enough, and the inventory is made in half the time
	if err := model.Create(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(model.Remove)
	if err := extend(model); err != nil {
		t.Fatal(err)
	}
	readOnly.install(model, admin, password)
	model.Service.Listen = &url.URL{Host: "127.0.0.1:0"}
	if admin != "" {
		model.Service.Listen.User = url.UserPassword(admin, password)
	}
	model.Service.ServeMux = http.NewServeMux()
	server := model.Service.NewServer()
	t.Cleanup(server.Close)
	for _, path := range []string{"/sdk", "/sdk/vimService"} {
		model.Service.ServeMux.Handle("POST "+path, sdkFilter(model.Service.ServeSDK, model.Map()))
	}
	u := *server.URL
	return &lab{model: model, url: &u}
}

// login opens a session as user (the server's own login when user is "").
func (l *lab) login(t *testing.T, user, password string) (*vim25.Client, error) {
	t.Helper()
	u := *l.url
	if user != "" {
		u.User = url.UserPassword(user, password)
	}
	c, err := govmomi.NewClient(t.Context(), &u, true)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = c.Logout(context.Background()) })
	return c.Client, nil
}

// labTest runs f with a logged-in client against a fresh lab, as simulator.Test does.
func labTest(t *testing.T, f func(ctx context.Context, c *vim25.Client, m *simulator.Model)) {
	t.Helper()
	l := startLab(t, "", "")
	c, err := l.login(t, "", "")
	if err != nil {
		t.Fatal(err)
	}
	f(t.Context(), c, l.model)
}

func TestParseFlags(t *testing.T) {
	defer func() { readOnly = readOnlyLogin{} }()
	tests := []struct {
		args []string
		err  string
	}{
		{[]string{"-host", "4", "-delay", "5"}, ""},
		{[]string{"-delay", "-1"}, "must be >= 0"},
		{[]string{"stray"}, `unexpected argument "stray"`},
		{[]string{"-readonly-username", "r", "-readonly-password", "p"}, "needs -username"},
		{[]string{"-nosuchflag"}, "not defined"},
	}
	for _, tt := range tests {
		model := simulator.VPX()
		_, err := parseFlags(tt.args, model, io.Discard)
		if tt.err == "" {
			if err != nil {
				t.Errorf("%v: %v", tt.args, err)
			} else if model.ClusterHost != 4 || model.DelayConfig.Delay != 5 {
				t.Errorf("%v: hosts %d delay %d", tt.args, model.ClusterHost, model.DelayConfig.Delay)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%v: error %v, want one with %q", tt.args, err, tt.err)
		}
	}
}

func TestApplyMethodDelay(t *testing.T) {
	model := simulator.VPX()
	if err := applyMethodDelay(model, " PowerOffVM_Task:100 ,Destroy_Task:0"); err != nil {
		t.Fatal(err)
	}
	if d := model.DelayConfig.MethodDelay; d["PowerOffVM_Task"] != 100 || d["Destroy_Task"] != 0 || len(d) != 2 {
		t.Errorf("delays %v", d)
	}
	for _, bad := range []string{"PowerOffVM_Task", ":5", "x:-1", "x:1.5"} {
		if err := applyMethodDelay(simulator.VPX(), bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestLoopbackListen(t *testing.T) {
	for in, want := range map[string]string{
		"localhost:8989": "127.0.0.1:8989",
		"127.0.0.2:0":    "127.0.0.2:0",
		"[::1]:443":      "[::1]:443",
	} {
		if got, err := loopbackListen(in); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"0.0.0.0:8989", "10.0.0.1:1", "example.com:1", "127.0.0.1", "127.0.0.1:65536", "127.0.0.1:x"} {
		if got, err := loopbackListen(bad); err == nil {
			t.Errorf("%s accepted as %s", bad, got)
		}
	}
}

func TestRunRefuses(t *testing.T) {
	defer func() { readOnly = readOnlyLogin{} }()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-l", "0.0.0.0:0"}, 2, "not a loopback address"},
		{[]string{"-method-delay", "x"}, 2, "-method-delay"},
		{[]string{"-username", "a", "-readonly-username", "a", "-readonly-password", "b"}, 2, "is also -username"},
		{[]string{"-l", busy.Addr().String(), "-tls=false"}, 1, "cannot listen"},
		{[]string{"-h"}, 0, "-readonly-username"},
	}
	for _, tt := range tests {
		var stderr bytes.Buffer
		if code := run(tt.args, io.Discard, &stderr); code != tt.code || !strings.Contains(stderr.String(), tt.msg) {
			t.Errorf("%v: exit %d %q; want %d with %q", tt.args, code, stderr.String(), tt.code, tt.msg)
		}
	}
}

// TestRun starts the command as scripts do, reads its GOVC_URL line, logs in with it and stops it
// with SIGTERM.
func TestRun(t *testing.T) {
	defer func() { readOnly = readOnlyLogin{} }()
	// Held for the whole test, so a SIGTERM sent before run listens for it cannot end the process.
	held := make(chan os.Signal, 1)
	signal.Notify(held, syscall.SIGTERM)
	defer signal.Stop(held)

	out, w := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"-l", "127.0.0.1:0", "-tls=false", "-username", "admin", "-password", "secret"}, w, io.Discard)
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(line)
	if len(fields) != 3 || fields[0] != "export" || !strings.HasPrefix(fields[1], "GOVC_URL=") ||
		fields[2] != "GOVC_SIM_PID="+strconv.Itoa(os.Getpid()) {
		t.Fatalf("line %q", line)
	}
	u, err := url.Parse(strings.TrimPrefix(fields[1], "GOVC_URL="))
	if err != nil {
		t.Fatal(err)
	}
	if u.Hostname() != "127.0.0.1" || u.User.Username() != "admin" {
		t.Errorf("url %s", u.Redacted())
	}
	c, err := govmomi.NewClient(t.Context(), u, true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.ServiceContent.About.FullName, "lab-vcsim") {
		t.Errorf("about %q", c.ServiceContent.About.FullName)
	}
	var hosts []mo.HostSystem
	if err := retrieveAll(t.Context(), c.Client, "HostSystem", []string{"configManager"}, &hosts); err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		if h.ConfigManager.GraphicsManager == nil {
			t.Errorf("%s: no graphics manager: the inventory is not extended", h.Self)
		}
	}
	_ = c.Logout(t.Context())

	stop := time.After(10 * time.Second)
	for {
		if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("exit %d", code)
			}
			return
		case <-time.After(50 * time.Millisecond):
		case <-stop:
			t.Fatal("run did not stop on SIGTERM")
		}
	}
}

// retrieveAll reads props of every object of kind under the root folder into dst.
func retrieveAll(ctx context.Context, c *vim25.Client, kind string, props []string, dst any) error {
	v, err := view.NewManager(c).CreateContainerView(ctx, c.ServiceContent.RootFolder, []string{kind}, true)
	if err != nil {
		return err
	}
	defer func() { _ = v.Destroy(ctx) }()
	return v.Retrieve(ctx, []string{kind}, props, dst)
}
