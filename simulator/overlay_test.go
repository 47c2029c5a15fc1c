package main

import (
	"context"
	"testing"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

func reconfigureSwitch(ctx context.Context, c *vim25.Client, ref types.ManagedObjectReference, spec *types.DVSConfigSpec) error {
	task, err := object.NewDistributedVirtualSwitch(c, ref).Reconfigure(ctx, spec)
	if err != nil {
		return err
	}
	return task.Wait(ctx)
}

// Each session calls through a wrapper of its own; the wrappers share the stored switch, which
// stays the simulator's type for the simulator's own code.
func TestOverlaySessions(t *testing.T) {
	l := startLab(t, "", "")
	a, err := l.login(t, "a", "x")
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.login(t, "b", "x")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	sw, err := createSwitch(ctx, a, "roce")
	if err != nil {
		t.Fatal(err)
	}
	ref := sw.Reference()
	if err := reconfigureSwitch(ctx, a, ref, &types.DVSConfigSpec{ConfigVersion: "1", Description: "a"}); err != nil {
		t.Fatal(err)
	}
	// b sees a's change: its version is the one a's reconfigure left.
	if err := reconfigureSwitch(ctx, b, ref, &types.DVSConfigSpec{ConfigVersion: "1", Description: "b"}); !fault.Is(err, &types.ConcurrentAccess{}) {
		t.Errorf("b with a's old version: %v, want ConcurrentAccess", err)
	}
	if err := reconfigureSwitch(ctx, b, ref, &types.DVSConfigSpec{ConfigVersion: "2", Description: "b"}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*vim25.Client{"a": a, "b": b} {
		var s mo.DistributedVirtualSwitch
		if err := property.DefaultCollector(c).RetrieveOne(ctx, ref, []string{"config"}, &s); err != nil {
			t.Fatal(err)
		}
		if info := s.Config.GetDVSConfigInfo(); info.Description != "b" || info.ConfigVersion != "3" {
			t.Errorf("%s reads description %q version %q", name, info.Description, info.ConfigVersion)
		}
	}
	stored := l.model.Map().Get(types.ManagedObjectReference{Type: "DistributedVirtualSwitch", Value: ref.Value})
	if _, ok := stored.(*simulator.DistributedVirtualSwitch); !ok {
		t.Errorf("the registry holds a %T", stored)
	}
	// A method the overlay leaves to the simulator works on the wrapped switch.
	task, err := sw.AddPortgroup(ctx, []types.DVPortgroupConfigSpec{{Name: "mgmt", Type: "earlyBinding"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx); err != nil {
		t.Errorf("AddDVPortgroup_Task through the simulator: %v", err)
	}

	// b destroys the switch: a's wrapper of it goes with it.
	if err := func() error {
		task, err := object.NewDistributedVirtualSwitch(b, ref).Destroy(ctx)
		if err != nil {
			return err
		}
		return task.Wait(ctx)
	}(); err != nil {
		t.Fatal(err)
	}
	var s mo.DistributedVirtualSwitch
	if err := property.DefaultCollector(a).RetrieveOne(ctx, ref, []string{"name"}, &s); !fault.Is(err, &types.ManagedObjectNotFound{}) {
		t.Errorf("a reads the switch b destroyed: %v (name %q), want ManagedObjectNotFound", err, s.Name)
	}
	if err := reconfigureSwitch(ctx, a, ref, &types.DVSConfigSpec{Description: "gone"}); !fault.Is(err, &types.ManagedObjectNotFound{}) {
		t.Errorf("a reconfigures the switch b destroyed: %v, want ManagedObjectNotFound", err)
	}
}

// Calls the server makes for itself (no session) and methods or types the table does not name
// are left to the registry.
func TestOverlayHandlerPassesThrough(t *testing.T) {
	l := startLab(t, "", "")
	ref := l.model.Map().Any("DistributedVirtualSwitch").Reference()
	handler := overlays{"DistributedVirtualSwitch": {wrapSwitch, []string{"ReconfigureDvs_Task"}}}.handler
	ctx := &simulator.Context{Map: l.model.Map()}
	for name, m := range map[string]*simulator.Method{
		"no session":   {Name: "ReconfigureDvs_Task", This: ref},
		"other method": {Name: "AddDVPortgroup_Task", This: ref},
		"other type":   {Name: "ReconfigureDvs_Task", This: types.ManagedObjectReference{Type: "Folder", Value: "group-1"}},
	} {
		if obj, fault := handler(ctx, m); obj != nil || fault != nil {
			t.Errorf("%s: %T %v", name, obj, fault)
		}
	}
}

// The same for a VM: one session's UpgradeVM_Task wraps it, another destroys it.
func TestOverlayVirtualMachineDestroyed(t *testing.T) {
	l := startLab(t, "", "")
	a, err := l.login(t, "a", "x")
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.login(t, "b", "x")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ref := l.model.Map().Any("VirtualMachine").Reference()
	wait := func(task *object.Task, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if err := task.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	va, vb := object.NewVirtualMachine(a, ref), object.NewVirtualMachine(b, ref)
	wait(va.PowerOff(ctx))
	var o mo.VirtualMachine
	if err := va.Properties(ctx, ref, []string{"config.version"}, &o); err != nil {
		t.Fatal(err)
	}
	wait(va.UpgradeVM(ctx, o.Config.Version))
	wait(vb.Destroy(ctx))
	if err := va.Properties(ctx, ref, []string{"name"}, &o); !fault.Is(err, &types.ManagedObjectNotFound{}) {
		t.Errorf("a reads the VM b destroyed: %v (name %q), want ManagedObjectNotFound", err, o.Name)
	}
}
