package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// Three things vCenter does that the simulator does not, fixed at the SOAP boundary (sdkFilter
// wraps the SDK handler):
//
//   - vCenter creates VMware switches as VmwareDistributedVirtualSwitch, and clients ask for a
//     new switch by that type (pulumi-vsphere does). The simulator keeps every switch as its own
//     DistributedVirtualSwitch (its code type-asserts that Go type, and its property updates
//     index fields by the reference's type), so responses name the type
//     VmwareDistributedVirtualSwitch and requests naming it reach the stored switch.
//   - vCenter takes a reference typed as a supertype of the object (ComputeResource for a
//     cluster: pulumi-vsphere asks for the inventory path of a cluster that way); the simulator
//     finds objects by exact type only. A request's reference whose type is a supertype of the
//     object with that id is given the object's own type.
//   - vCenter names a task (TaskInfo.name) by the method that started it, PowerOffVM_Task; the
//     simulator names it by its Go runner, PowerVm_Task for every power operation, a name no
//     client knows: pyVmomi reads it as an UnknownManagedMethod, and pyVim's WaitForTask fails
//     on it when it finds the task still running. A task started over SOAP gets its method's
//     name before the client learns its reference.

var (
	vmwareSwitch = []byte("VmwareDistributedVirtualSwitch")
	plainSwitch  = []byte("DistributedVirtualSwitch")
	switchPairs  = [][2][]byte{
		{[]byte(` type="VmwareDistributedVirtualSwitch"`), []byte(` type="DistributedVirtualSwitch"`)},
		{[]byte(`>VmwareDistributedVirtualSwitch<`), []byte(`>DistributedVirtualSwitch<`)},
	}
	// A reference in a request: <obj type="ComputeResource">domain-c28</obj>.
	reference = regexp.MustCompile(` type="([A-Za-z]+)">([^<]+)<`)
	// The answer of a method that starts a task: <PowerOffVM_TaskResponse ...><returnval type="Task">task-7<.
	startedTask = regexp.MustCompile(`<([A-Za-z]+_Task)Response[^>]*><returnval type="Task">([^<]+)<`)
)

// supertypes: for a managed object type, the types whose references may name it.
var supertypes = map[string][]string{
	"ClusterComputeResource":      {"ComputeResource", "ManagedEntity"},
	"ComputeResource":             {"ManagedEntity"},
	"VirtualApp":                  {"ResourcePool", "ManagedEntity"},
	"ResourcePool":                {"ManagedEntity"},
	"DistributedVirtualPortgroup": {"Network", "ManagedEntity"},
	"OpaqueNetwork":               {"Network", "ManagedEntity"},
	"Network":                     {"ManagedEntity"},
	"StoragePod":                  {"Folder", "ManagedEntity"},
	"Folder":                      {"ManagedEntity"},
	"Datacenter":                  {"ManagedEntity"},
	"Datastore":                   {"ManagedEntity"},
	"HostSystem":                  {"ManagedEntity"},
	"VirtualMachine":              {"ManagedEntity"},
	"DistributedVirtualSwitch":    {"ManagedEntity"},
}

// inventoryTypes knows the type of each object id (ids are unique in the simulator).
type inventoryTypes struct {
	mu   sync.RWMutex
	byID map[string]string
}

var objectTypes = &inventoryTypes{byID: map[string]string{}}

func (t *inventoryTypes) put(ref types.ManagedObjectReference) {
	t.mu.Lock()
	t.byID[ref.Value] = ref.Type
	t.mu.Unlock()
}

func (t *inventoryTypes) remove(ref types.ManagedObjectReference) {
	t.mu.Lock()
	if t.byID[ref.Value] == ref.Type {
		delete(t.byID, ref.Value)
	}
	t.mu.Unlock()
}

// own is the type to name the object `id` by, when the request names it by a supertype.
func (t *inventoryTypes) own(requested, id string) (string, bool) {
	t.mu.RLock()
	actual, ok := t.byID[id]
	t.mu.RUnlock()
	if !ok || actual == requested {
		return "", false
	}
	for _, super := range supertypes[actual] {
		if super == requested {
			return actual, true
		}
	}
	return "", false
}

func (t *inventoryTypes) rewriteRequest(body []byte) []byte {
	if bytes.Contains(body, vmwareSwitch) {
		for _, p := range switchPairs {
			body = bytes.ReplaceAll(body, p[0], p[1])
		}
	}
	return reference.ReplaceAllFunc(body, func(m []byte) []byte {
		sub := reference.FindSubmatch(m)
		if own, ok := t.own(string(sub[1]), string(sub[2])); ok {
			return []byte(` type="` + own + `">` + string(sub[2]) + `<`)
		}
		return m
	})
}

func rewriteResponse(body []byte) []byte {
	if !bytes.Contains(body, plainSwitch) {
		return body
	}
	for _, p := range switchPairs {
		body = bytes.ReplaceAll(body, p[1], p[0])
	}
	return body
}

// nameStartedTask gives the task a response hands out the name of the method that started it.
func nameStartedTask(tasks *simulator.Registry, response []byte) {
	found := startedTask.FindSubmatch(response)
	if found == nil {
		return
	}
	ref := types.ManagedObjectReference{Type: "Task", Value: string(found[2])}
	task, ok := tasks.Get(ref).(*simulator.Task)
	if !ok {
		return
	}
	ctx := &simulator.Context{Map: tasks}
	// The task's goroutine reads the name once, unlocked, while it holds its entity's lock (taken
	// before the goroutine starts, released once the task has run): taking that lock first orders
	// this write after that read.
	if task.Info.Entity != nil {
		unlock := tasks.AcquireLock(ctx, &entityLock{Self: *task.Info.Entity})
		defer unlock()
	}
	// Under the task's lock: its runner updates the task's info from another goroutine.
	tasks.WithLock(ctx, task, func() { task.Info.Name = string(found[1]) })
}

// entityLock names the lock a running task holds, its entity's, as the simulator's Task.Run does.
type entityLock struct{ Self types.ManagedObjectReference }

func (e *entityLock) Reference() types.ManagedObjectReference { return e.Self }

// sdkFilter wraps the SDK handler with the rewriting above; tasks is the registry tasks live in.
func sdkFilter(sdk http.HandlerFunc, tasks *simulator.Registry) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = objectTypes.rewriteRequest(body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		rec := httptest.NewRecorder()
		sdk(rec, r)
		nameStartedTask(tasks, rec.Body.Bytes())
		out := rewriteResponse(rec.Body.Bytes())
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		w.WriteHeader(rec.Code)
		_, _ = w.Write(out)
	})
}
