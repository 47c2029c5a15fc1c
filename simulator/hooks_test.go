package main

import (
	"context"
	"testing"
	"time"

	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// checkRuntimeEnums: what vCenter always sends for a VM and the simulator leaves empty.
func checkRuntimeEnums(t *testing.T, ctx context.Context, vm *object.VirtualMachine) {
	t.Helper()
	var o mo.VirtualMachine
	if err := vm.Properties(ctx, vm.Reference(), []string{"config.swapPlacement", "runtime", "summary.runtime"}, &o); err != nil {
		t.Fatal(err)
	}
	if o.Config.SwapPlacement != "inherit" {
		t.Errorf("%s: config.swapPlacement %q", vm.Name(), o.Config.SwapPlacement)
	}
	for name, runtime := range map[string]types.VirtualMachineRuntimeInfo{"runtime": o.Runtime, "summary.runtime": o.Summary.Runtime} {
		if runtime.FaultToleranceState != types.VirtualMachineFaultToleranceStateNotConfigured ||
			runtime.RecordReplayState != types.VirtualMachineRecordReplayStateInactive {
			t.Errorf("%s: %s faultToleranceState %q recordReplayState %q", vm.Name(), name, runtime.FaultToleranceState, runtime.RecordReplayState)
		}
	}
}

func TestHooksFillVirtualMachines(t *testing.T) {
	labTest(t, func(ctx context.Context, c *vim25.Client, m *simulator.Model) {
		finder := find.NewFinder(c)
		// The model's VMs, created before the hooks were added.
		vm, err := finder.VirtualMachine(ctx, "DC0_C0_RP0_VM0")
		if err != nil {
			t.Fatal(err)
		}
		checkRuntimeEnums(t, ctx, vm)

		// A VM created later.
		dc, err := finder.DefaultDatacenter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		folders, err := dc.Folders(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pool, err := finder.ResourcePool(ctx, "/DC0/host/DC0_C0/Resources")
		if err != nil {
			t.Fatal(err)
		}
		task, err := folders.VmFolder.CreateVM(ctx, types.VirtualMachineConfigSpec{
			Name: "worker-0", GuestId: "otherGuest64", Files: &types.VirtualMachineFileInfo{VmPathName: "[LocalDS_0]"},
		}, pool, nil)
		if err != nil {
			t.Fatal(err)
		}
		info, err := task.WaitForResult(ctx)
		if err != nil {
			t.Fatal(err)
		}
		created := object.NewVirtualMachine(c, info.Result.(types.ManagedObjectReference))
		checkRuntimeEnums(t, ctx, created)

		// The wire knows the new VM's type, and forgets it once the VM is gone.
		id := created.Reference().Value
		if own, ok := objectTypes.own("ManagedEntity", id); !ok || own != "VirtualMachine" {
			t.Errorf("new VM %s: own %q %v", id, own, ok)
		}
		destroy, err := created.Destroy(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := destroy.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if own, ok := objectTypes.own("ManagedEntity", id); ok {
			t.Errorf("destroyed VM %s still known as a %s", id, own)
		}
	})
}

// A property change (no object added or removed) wakes the collectors' waits.
func TestHooksNotifyUpdates(t *testing.T) {
	labTest(t, func(ctx context.Context, c *vim25.Client, m *simulator.Model) {
		ref := *hostRefs(t, ctx, c)[0].ConfigManager.GraphicsManager
		woken := changes.wait()
		_, err := methods.UpdateGraphicsConfig(ctx, c, &types.UpdateGraphicsConfig{
			This: ref, Config: types.HostGraphicsConfig{HostDefaultGraphicsType: "sharedDirect"},
		})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-woken:
		case <-time.After(5 * time.Second):
			t.Fatal("a property change did not wake the waits")
		}
	})
}
