// lab-vcsim: govmomi's vCenter simulator with what the gpu-lab program needs of a real vCenter
// (see docs/engine.md): per-host graphics managers, kernel module systems, firewall rulesets and
// virtual NIC managers, VmwareDistributedVirtualSwitch switches whose members are the hosts given
// to them, QueryDvsByUuid, CreateDVPortgroup_Task and VMkernel NICs on switch ports.
//
// It takes vcsim's own flags and prints vcsim's `export GOVC_URL=... GOVC_SIM_PID=...` line, so
// scripts and tests start it as they would start vcsim. It serves on loopback only.
package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/simulator/esx"
	// The endpoints pulumi-vsphere opens at connect besides /sdk: the vAPI REST session (/rest,
	// /api; tags) and storage policies (/pbm).
	_ "github.com/vmware/govmomi/pbm/simulator"
	_ "github.com/vmware/govmomi/vapi/simulator"
)

const name = "lab-vcsim"

// options are the command line, parsed.
type options struct {
	listen, user, password  string
	methodDelay             string
	delay                   int
	tls, stdinExit, trace   bool
	traceFile               string
	tlsCert, tlsKey, envOut string
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main with its streams and exit code, so every failure is a message and a code.
func run(args []string, stdout, stderr io.Writer) int {
	model := simulator.VPX()
	opts, err := parseFlags(args, model, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	if err := applyMethodDelay(model, opts.methodDelay); err != nil {
		fmt.Fprintf(stderr, "%s: -method-delay: %v\n", name, err)
		return 2
	}
	listen, err := loopbackListen(opts.listen)
	if err != nil {
		fmt.Fprintf(stderr, "%s: -l %s: %v\n", name, opts.listen, err)
		return 2
	}
	// The service binds the address itself; trying it first turns a port in use into a message
	// instead of a panic inside the simulator package.
	if probe, err := net.Listen("tcp", listen); err != nil {
		fmt.Fprintf(stderr, "%s: cannot listen on %s: %v\n", name, listen, unwrapSyscall(err))
		return 1
	} else {
		probe.Close()
	}
	if opts.trace || opts.traceFile != "" {
		simulator.Trace = true
		if opts.traceFile != "" {
			f, err := os.Create(opts.traceFile)
			if err != nil {
				fmt.Fprintf(stderr, "%s: -trace-file: %v\n", name, err)
				return 1
			}
			defer f.Close()
			simulator.TraceFile = f
		}
	}

	host, _, _ := net.SplitHostPort(listen)
	esx.HostSystem.Summary.ManagementServerIp = host
	model.ServiceContent.About.FullName += " (gpu-lab lab-vcsim on govmomi simulator)"
	if err := model.Create(); err != nil {
		fmt.Fprintf(stderr, "%s: creating the inventory: %v\n", name, err)
		return 1
	}
	defer model.Remove()
	if err := extend(model); err != nil {
		fmt.Fprintf(stderr, "%s: extending the inventory: %v\n", name, err)
		return 1
	}
	readOnly.install(model, opts.user, opts.password)

	u := &url.URL{Host: listen}
	if opts.user != "" {
		u.User = url.UserPassword(opts.user, opts.password)
	}
	model.Service.Listen = u
	model.Service.RegisterEndpoints = true
	if opts.tls {
		model.Service.TLS = new(tls.Config)
		if opts.tlsCert != "" {
			cert, err := tls.LoadX509KeyPair(opts.tlsCert, opts.tlsKey)
			if err != nil {
				fmt.Fprintf(stderr, "%s: -tlscert/-tlskey: %v\n", name, err)
				return 1
			}
			model.Service.TLS.Certificates = []tls.Certificate{cert}
		}
	}
	model.Service.ServeMux = http.NewServeMux()
	server, err := newServer(model)
	if err != nil {
		fmt.Fprintf(stderr, "%s: cannot serve on %s: %v\n", name, listen, err)
		return 1
	}
	// No server.Close on exit: it waits for every open request, and a client may hold a
	// WaitForUpdatesEx open for a minute; the process exit ends them.
	_ = server
	// More specific than the simulator's own "/sdk" patterns, so SOAP goes through sdkFilter.
	for _, path := range []string{"/sdk", "/sdk/vimService"} {
		model.Service.ServeMux.Handle("POST "+path, sdkFilter(model.Service.ServeSDK, model.Map()))
	}

	out := stdout
	if opts.envOut != "-" {
		f, err := os.OpenFile(opts.envOut, os.O_WRONLY, 0)
		if err != nil {
			fmt.Fprintf(stderr, "%s: -E: %v\n", name, err)
			return 1
		}
		out = f
	}
	fmt.Fprintf(out, "export GOVC_URL=%s GOVC_SIM_PID=%d\n", server.URL, os.Getpid())
	if f, ok := out.(*os.File); ok && f != os.Stdout {
		f.Close()
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	if opts.stdinExit {
		fmt.Fprintln(stdout, "Press any key to exit")
		go func() {
			_, _ = os.Stdin.Read(make([]byte, 1))
			sig <- syscall.SIGTERM
		}()
	}
	<-sig
	return 0
}

func parseFlags(args []string, model *simulator.Model, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{}
	// vcsim's inventory flags, same names and defaults.
	fs.IntVar(&model.Datacenter, "dc", model.Datacenter, "Number of datacenters")
	fs.IntVar(&model.Cluster, "cluster", model.Cluster, "Number of clusters")
	fs.IntVar(&model.ClusterHost, "host", model.ClusterHost, "Number of hosts per cluster")
	fs.IntVar(&model.Host, "standalone-host", model.Host, "Number of standalone hosts")
	fs.IntVar(&model.Datastore, "ds", model.Datastore, "Number of local datastores")
	fs.IntVar(&model.Machine, "vm", model.Machine, "Number of virtual machines per resource pool")
	fs.IntVar(&model.Pool, "pool", model.Pool, "Number of resource pools per compute resource")
	fs.IntVar(&model.App, "app", model.App, "Number of virtual apps per compute resource")
	fs.IntVar(&model.Pod, "pod", model.Pod, "Number of storage pods per datacenter")
	fs.IntVar(&model.Portgroup, "pg", model.Portgroup, "Number of port groups")
	fs.IntVar(&model.Folder, "folder", model.Folder, "Number of folders")
	fs.BoolVar(&model.Autostart, "autostart", model.Autostart, "Autostart model created VMs")
	fs.StringVar(&model.ServiceContent.About.ApiVersion, "api-version", model.ServiceContent.About.ApiVersion, "API version")
	fs.StringVar(&o.listen, "l", "127.0.0.1:8989", "Listen address (loopback only; port 0: the kernel picks one)")
	fs.StringVar(&o.user, "username", "", "Login username (any username allowed by default)")
	fs.StringVar(&o.password, "password", "", "Login password (any password allowed by default)")
	fs.BoolVar(&o.tls, "tls", true, "Enable TLS")
	fs.StringVar(&o.tlsCert, "tlscert", "", "Path to TLS certificate file")
	fs.StringVar(&o.tlsKey, "tlskey", "", "Path to TLS key file")
	fs.StringVar(&o.envOut, "E", "-", "Output the GOVC_URL line to the given fifo or stdout")
	fs.BoolVar(&o.trace, "trace", false, "Trace SOAP to -trace-file")
	fs.StringVar(&o.traceFile, "trace-file", "", "Trace output file (defaults to stderr)")
	fs.BoolVar(&o.stdinExit, "stdinexit", false, "Press any key to exit")
	fs.IntVar(&o.delay, "delay", 0, "Method response delay across all methods, milliseconds")
	fs.StringVar(&o.methodDelay, "method-delay", "", "Delay per method on the form 'method1:ms1,method2:ms2...'")
	fs.Float64Var(&model.DelayConfig.DelayJitter, "delay-jitter", 0, "Delay jitter coefficient of variation")
	readOnly.flags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := readOnly.check(o.user); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags only; -h lists them)", fs.Arg(0))
	}
	if o.delay < 0 {
		return nil, fmt.Errorf("-delay %d: must be >= 0 milliseconds", o.delay)
	}
	model.DelayConfig.Delay = o.delay
	return o, nil
}

// applyMethodDelay parses 'method:ms,...'. Each delay holds that SOAP call before it runs, as
// vcsim's -method-delay does; for a *_Task method the client sees the task's time as the call's.
func applyMethodDelay(model *simulator.Model, spec string) error {
	if spec == "" {
		return nil
	}
	delays := map[string]int{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		method, ms, ok := strings.Cut(item, ":")
		if !ok || method == "" {
			return fmt.Errorf("%q is not method:milliseconds", item)
		}
		n, err := strconv.Atoi(ms)
		if err != nil || n < 0 {
			return fmt.Errorf("%q: the delay must be a whole number of milliseconds >= 0", item)
		}
		delays[method] = n
	}
	model.DelayConfig.MethodDelay = delays
	return nil
}

// loopbackListen checks that -l names a loopback address: the simulator is for tests on this machine.
func loopbackListen(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("not host:port (%v)", err)
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("%q is not a loopback address; %s serves on 127.0.0.0/8 or ::1 only", host, name)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("port %q is not 0-65535", port)
	}
	return net.JoinHostPort(host, port), nil
}

// newServer starts the SDK server; the simulator package panics when it cannot listen.
func newServer(model *simulator.Model) (server *simulator.Server, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return model.Service.NewServer(), nil
}

func unwrapSyscall(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}
