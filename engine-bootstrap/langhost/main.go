// Command pulumi-language-python is gpu-lab's own Python language host for the Pulumi CLI.
//
// The upstream host lives in a Go module that the module proxy reachable from this project's
// machines does not serve, so this host implements the LanguageRuntime gRPC service itself on
// top of the Pulumi Go SDK's public helpers: python toolchain resolution (virtualenv, pip, uv,
// poetry), plugin output streams and the policy-pack proxy. It runs programs through the
// pulumi-language-python-exec script installed next to it, and policy packs through
// `python -m pulumi.policy`, the entry point the Python SDK ships for them.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// version is stamped by the build (-X main.version=...).
var version = "0.0.0-dev"

// bailExitCode is what the exec script exits with after it has already reported the error
// to the engine; the engine then must not print a second, generic failure.
const bailExitCode = 32

func main() {
	tracing := flag.String("tracing", "", "tracing endpoint, passed on to the program")
	executor := flag.String("use-executor", "", "program runner to use instead of the one next to this binary")
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println(version)
		return
	}

	runner := *executor
	if runner == "" {
		self, err := os.Executable()
		if err != nil {
			fatal(err)
		}
		runner = filepath.Join(filepath.Dir(self), "pulumi-language-python-exec")
	}
	if _, err := os.Stat(runner); err != nil {
		fatal(fmt.Errorf("program runner missing: %w", err))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cancel := make(chan bool)
	go func() { <-ctx.Done(); close(cancel) }()

	host := &languageHost{runner: runner, tracing: *tracing}
	host.runCtx, host.cancelRuns = context.WithCancel(context.Background())
	if args := flag.Args(); len(args) > 0 {
		if err := host.attachEngine(ctx, args[0], stop); err != nil {
			fatal(err)
		}
	}

	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: cancel,
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, host)
			return nil
		},
	})
	if err != nil {
		fatal(err)
	}
	// The CLI reads the port from our first line of stdout.
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "pulumi-language-python: %v\n", err)
	os.Exit(1)
}

type languageHost struct {
	pulumirpc.UnimplementedLanguageRuntimeServer

	runner  string
	tracing string
	engine  string

	// runCtx is cancelled by the Cancel RPC so running programs get an interrupt.
	runCtx     context.Context
	cancelRuns context.CancelFunc
}

// attachEngine records the engine address and exits the process once the engine is gone, so
// a killed CLI never leaves this host behind.
func (h *languageHost) attachEngine(ctx context.Context, addr string, stop context.CancelFunc) error {
	h.engine = addr
	return rpcutil.Healthcheck(ctx, addr, 5*time.Minute, stop)
}

func (h *languageHost) Handshake(
	ctx context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	if err := h.attachEngine(context.Background(), req.EngineAddress, func() { os.Exit(0) }); err != nil {
		return nil, err
	}
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *languageHost) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

// pythonOptions maps the `runtime.options` of Pulumi.yaml / PulumiPolicy.yaml onto the SDK's
// toolchain options. Relative virtualenv paths are taken from the project root, as upstream does.
func pythonOptions(info *pulumirpc.ProgramInfo) (toolchain.PythonOptions, error) {
	opts := toolchain.PythonOptions{Root: info.GetRootDirectory(), ProgramDir: info.GetProgramDirectory()}
	raw := map[string]any{}
	if info.GetOptions() != nil {
		raw = info.GetOptions().AsMap()
	}
	for key, value := range raw {
		text, ok := value.(string)
		if !ok {
			return opts, fmt.Errorf("runtime option %q must be a string", key)
		}
		switch key {
		case "virtualenv":
			opts.Virtualenv = text
		case "toolchain":
			switch text {
			case "pip":
				opts.Toolchain = toolchain.Pip
			case "uv":
				opts.Toolchain = toolchain.Uv
			case "poetry":
				opts.Toolchain = toolchain.Poetry
			default:
				return opts, fmt.Errorf("runtime option toolchain=%q: allowed are pip, uv, poetry", text)
			}
		case "typechecker":
			// Type checking is the project's lint step, not the engine's; refusing is clearer than
			// silently skipping it.
			return opts, fmt.Errorf("runtime option typechecker is not supported by this language host")
		}
	}
	return opts, nil
}

func (h *languageHost) toolchainFor(info *pulumirpc.ProgramInfo) (toolchain.Toolchain, error) {
	opts, err := pythonOptions(info)
	if err != nil {
		return nil, err
	}
	return toolchain.ResolveToolchain(opts)
}

// pluginScan lists every installed distribution that ships a pulumi-plugin.json, in one python
// call: {"dist": name, "version": v, "plugin": {...}}.
const pluginScan = `
import importlib.metadata as md, json, os, sys
out, seen = [], set()
for dist in md.distributions():
    name = dist.metadata["Name"]
    if not name or name.lower() in seen:
        continue
    seen.add(name.lower())
    for f in dist.files or []:
        if f.name == "pulumi-plugin.json" and len(f.parts) == 2:
            try:
                with open(dist.locate_file(f)) as fh:
                    out.append({"dist": name, "version": dist.version, "plugin": json.load(fh)})
            except (OSError, ValueError):
                pass
            break
json.dump(out, sys.stdout)
`

type pluginJSON struct {
	Resource bool   `json:"resource"`
	Name     string `json:"name"`
	Version  string `json:"version"`
	Server   string `json:"server"`

	Parameterization *struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		Value   []byte `json:"value"`
	} `json:"parameterization"`
}

type scannedPackage struct {
	Dist    string     `json:"dist"`
	Version string     `json:"version"`
	Plugin  pluginJSON `json:"plugin"`
}

var plainVersion = regexp.MustCompile(`^\d+\.\d+\.\d+$`)

// packageFor turns one scanned distribution into the engine's package dependency, or nil when
// the distribution declares it has no plugin or its version cannot name a plugin release.
func packageFor(p scannedPackage) *pulumirpc.PackageDependency {
	if !p.Plugin.Resource {
		return nil
	}
	name := p.Plugin.Name
	if name == "" {
		name = strings.TrimPrefix(strings.ReplaceAll(strings.ToLower(p.Dist), "_", "-"), "pulumi-")
	}
	ver := p.Plugin.Version
	if ver == "" {
		if !plainVersion.MatchString(p.Version) {
			return nil
		}
		ver = p.Version
	}
	dep := &pulumirpc.PackageDependency{
		Name: name, Version: "v" + strings.TrimPrefix(ver, "v"), Kind: "resource", Server: p.Plugin.Server,
	}
	if pz := p.Plugin.Parameterization; pz != nil {
		dep.Parameterization = &pulumirpc.PackageParameterization{Name: pz.Name, Version: pz.Version, Value: pz.Value}
	}
	return dep
}

func (h *languageHost) GetRequiredPackages(
	ctx context.Context, req *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	tc, err := h.toolchainFor(req.GetInfo())
	if err != nil {
		return nil, err
	}
	cmd, err := tc.Command(ctx, "-c", pluginScan)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing Pulumi packages with %s: %w", cmd.Path, err)
	}
	var scanned []scannedPackage
	if err := json.Unmarshal(out, &scanned); err != nil {
		return nil, fmt.Errorf("reading package scan: %w", err)
	}
	resp := &pulumirpc.GetRequiredPackagesResponse{}
	for _, p := range scanned {
		if dep := packageFor(p); dep != nil {
			resp.Packages = append(resp.Packages, dep)
		}
	}
	return resp, nil
}

func (h *languageHost) GetRequiredPlugins(
	context.Context, *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	// The CLI falls back to GetRequiredPackages, which carries more information.
	return nil, status.Error(codes.Unimplemented, "use GetRequiredPackages")
}

// runnerArgs is the command line of the exec script for one RunRequest.
func (h *languageHost) runnerArgs(req *pulumirpc.RunRequest) []string {
	args := []string{h.runner}
	flag := func(name, value string) {
		if value != "" {
			args = append(args, "--"+name, value)
		}
	}
	flag("monitor", req.GetMonitorAddress())
	flag("engine", h.engine)
	flag("project", req.GetProject())
	flag("root_directory", req.GetInfo().GetRootDirectory())
	flag("stack", req.GetStack())
	flag("organization", req.GetOrganization())
	flag("pwd", req.GetPwd())
	flag("dry_run", strconv.FormatBool(req.GetDryRun()))
	flag("parallel", strconv.Itoa(int(req.GetParallel())))
	flag("tracing", h.tracing)
	entry := req.GetInfo().GetEntryPoint()
	if entry == "" {
		entry = "."
	}
	args = append(args, entry)
	return append(args, req.GetArgs()...)
}

func (h *languageHost) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	if h.engine == "" {
		return nil, errors.New("Run called before the engine address is known (no Handshake)")
	}
	tc, err := h.toolchainFor(req.GetInfo())
	if err != nil {
		return nil, err
	}
	if err := tc.ValidateVenv(ctx); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(h.runCtx)
	defer cancel()
	context.AfterFunc(ctx, cancel)
	cmd, err := tc.Command(runCtx, h.runnerArgs(req)...)
	if err != nil {
		return nil, err
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr

	// A stack without config sends no map; "null" would break the SDK's set_all_config.
	configMap := req.GetConfig()
	if configMap == nil {
		configMap = map[string]string{}
	}
	config, err := json.Marshal(configMap)
	if err != nil {
		return nil, err
	}
	secretKeys := req.GetConfigSecretKeys()
	if secretKeys == nil {
		secretKeys = []string{}
	}
	keys, err := json.Marshal(secretKeys)
	if err != nil {
		return nil, err
	}
	cmd.Env = append(baseEnv(cmd), "PULUMI_CONFIG="+string(config), "PULUMI_CONFIG_SECRET_KEYS="+string(keys))

	err = cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return &pulumirpc.RunResponse{}, nil
	case errors.As(err, &exitErr) && exitErr.ExitCode() == bailExitCode:
		return &pulumirpc.RunResponse{Bail: true}, nil
	case errors.As(err, &exitErr):
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("program exited with non-zero exit code: %d", exitErr.ExitCode())}, nil
	default:
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("could not run the python program: %v", err)}, nil
	}
}

func (h *languageHost) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	h.cancelRuns()
	return &emptypb.Empty{}, nil
}

func (h *languageHost) InstallDependencies(
	req *pulumirpc.InstallDependenciesRequest, server pulumirpc.LanguageRuntime_InstallDependenciesServer,
) error {
	tc, err := h.toolchainFor(req.GetInfo())
	if err != nil {
		return err
	}
	closer, stdout, stderr, err := rpcutil.MakeInstallDependenciesStreams(server, req.GetIsTerminal())
	if err != nil {
		return err
	}
	defer closer.Close()
	if err := tc.InstallDependencies(server.Context(), req.GetInfo().GetProgramDirectory(),
		req.GetUseLanguageVersionTools(), true, stdout, stderr); err != nil {
		return err
	}
	return closer.Close()
}

func (h *languageHost) RuntimeOptionsPrompts(
	context.Context, *pulumirpc.RuntimeOptionsRequest,
) (*pulumirpc.RuntimeOptionsResponse, error) {
	// No interactive questions: projects set virtualenv/toolchain in Pulumi.yaml.
	return &pulumirpc.RuntimeOptionsResponse{}, nil
}

func (h *languageHost) About(ctx context.Context, req *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	info := req.GetInfo()
	if info == nil {
		info = &pulumirpc.ProgramInfo{}
	}
	tc, err := h.toolchainFor(info)
	if err != nil {
		return nil, err
	}
	about, err := tc.About(ctx)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.AboutResponse{
		Executable: about.PythonExecutable,
		Version:    about.PythonVersion.String(),
		Metadata:   map[string]string{"languageHost": "gpu-lab " + version},
	}, nil
}

func (h *languageHost) GetProgramDependencies(
	ctx context.Context, req *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	tc, err := h.toolchainFor(req.GetInfo())
	if err != nil {
		return nil, err
	}
	pkgs, err := tc.ListPackages(ctx, req.GetTransitiveDependencies())
	if err != nil {
		return nil, err
	}
	resp := &pulumirpc.GetProgramDependenciesResponse{}
	for _, p := range pkgs {
		resp.Dependencies = append(resp.Dependencies, &pulumirpc.DependencyInfo{Name: p.Name, Version: p.Version})
	}
	return resp, nil
}

// RunPlugin starts a Python plugin from a directory. Policy packs (kind "analyzer") go through
// `python -m pulumi.policy <engine> <dir>` behind the SDK's policy proxy, which first collects
// the stack configuration the pack expects in its environment; any other plugin runs the
// directory's __main__.py.
func (h *languageHost) RunPlugin(
	req *pulumirpc.RunPluginRequest, server pulumirpc.LanguageRuntime_RunPluginServer,
) error {
	ctx := server.Context()
	tc, err := h.toolchainFor(req.GetInfo())
	if err != nil {
		return err
	}
	dir := req.GetInfo().GetProgramDirectory()
	analyzer := req.GetKind() == "analyzer"

	var args []string
	if analyzer {
		args = append(append([]string{"-u", "-m", "pulumi.policy"}, req.GetArgs()...), dir)
	} else {
		if _, err := os.Stat(filepath.Join(dir, "__main__.py")); err != nil {
			return fmt.Errorf("plugin directory %s has no __main__.py: %w", dir, err)
		}
		args = append([]string{"-u", dir}, req.GetArgs()...)
	}
	cmd, err := tc.Command(ctx, args...)
	if err != nil {
		return err
	}
	cmd.Dir = req.GetPwd()
	cmd.Env = baseEnv(cmd)
	if analyzer {
		// Policy packs have always run from their own directory.
		cmd.Dir = dir
	}

	closer, stdout, stderr, err := rpcutil.MakeRunPluginStreams(server, false)
	if err != nil {
		return err
	}
	defer closer.Close()

	var proxy *sdk.PolicyProxy
	if analyzer {
		proxy, stdout, err = sdk.NewPolicyProxy(ctx, stdout)
		if err != nil {
			return err
		}
		cfg, err := proxy.AwaitConfiguration(ctx)
		if err != nil {
			return err
		}
		if cfg != nil {
			cmd.Env = append(cmd.Env, policyEnv(cfg)...)
		}
	}
	cmd.Env = append(cmd.Env, req.GetEnv()...)
	cmd.Stdout, cmd.Stderr = stdout, stderr

	if err := cmd.Start(); err != nil {
		return err
	}
	if proxy != nil {
		err = proxy.Attach(ctx, cmd)
	} else {
		err = cmd.Wait()
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return server.Send(&pulumirpc.RunPluginResponse{
			Output: &pulumirpc.RunPluginResponse_Exitcode{Exitcode: int32(exitErr.ExitCode())},
		})
	}
	if err != nil {
		return err
	}
	return closer.Close()
}

// baseEnv is the environment a toolchain command starts with: the activated virtualenv's when
// the toolchain set one, else ours (a nil Env would otherwise become an empty one on append).
func baseEnv(cmd *exec.Cmd) []string {
	if cmd.Env == nil {
		return os.Environ()
	}
	return cmd.Env
}

// policyEnv is the environment pulumi_policy reads its stack context from.
func policyEnv(cfg *pulumirpc.AnalyzerStackConfigureRequest) []string {
	var env []string
	set := func(k, v string) {
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	set("PULUMI_ORGANIZATION", cfg.GetOrganization())
	set("PULUMI_PROJECT", cfg.GetProject())
	set("PULUMI_STACK", cfg.GetStack())
	set("PULUMI_DRY_RUN", strconv.FormatBool(cfg.GetDryRun()))
	if cfg.GetConfig() != nil {
		if b, err := json.Marshal(cfg.GetConfig()); err == nil {
			set("PULUMI_CONFIG", string(b))
		}
	}
	return env
}
