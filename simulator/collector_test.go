package main

import (
	"context"
	"testing"
	"time"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/types"
)

// watch puts a filter on the session's collector for the VM's power state and takes the first
// update set (version ""), as govmomi's task and property waits do.
func watch(t *testing.T, ctx context.Context, c *vim25.Client, vm types.ManagedObjectReference) string {
	t.Helper()
	pc := c.ServiceContent.PropertyCollector
	_, err := methods.CreateFilter(ctx, c, &types.CreateFilter{This: pc, Spec: types.PropertyFilterSpec{
		ObjectSet: []types.ObjectSpec{{Obj: vm}},
		PropSet:   []types.PropertySpec{{Type: "VirtualMachine", PathSet: []string{"runtime.powerState"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	set, err := waitEx(ctx, c, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if set == nil || len(set.FilterSet) != 1 || len(set.FilterSet[0].ObjectSet) != 1 || set.FilterSet[0].ObjectSet[0].Kind != types.ObjectUpdateKindEnter {
		t.Fatalf("first update %+v, want the VM entering", set)
	}
	return set.Version
}

func waitEx(ctx context.Context, c *vim25.Client, version string, maxWait int32) (*types.UpdateSet, error) {
	res, err := methods.WaitForUpdatesEx(ctx, c, &types.WaitForUpdatesEx{
		This: c.ServiceContent.PropertyCollector, Version: version, Options: &types.WaitOptions{MaxWaitSeconds: &maxWait},
	})
	if err != nil {
		return nil, err
	}
	return res.Returnval, nil
}

func powerOff(t *testing.T, ctx context.Context, vm *object.VirtualMachine) {
	t.Helper()
	task, err := vm.PowerOff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// Callers waiting on one collector with the same version all get the change; none takes it
// from another (the simulator's own collector hands it to one and holds the rest).
func TestWaitForUpdatesExConcurrent(t *testing.T) {
	labTest(t, func(ctx context.Context, c *vim25.Client, m *simulator.Model) {
		vm, err := find.NewFinder(c).VirtualMachine(ctx, "DC0_H0_VM0")
		if err != nil {
			t.Fatal(err)
		}
		version := watch(t, ctx, c, vm.Reference())

		const waiters = 3
		type result struct {
			set *types.UpdateSet
			err error
		}
		results := make(chan result, waiters)
		for range waiters {
			go func() {
				set, err := waitEx(ctx, c, version, 20)
				results <- result{set, err}
			}()
		}
		powerOff(t, ctx, vm)
		var versions []string
		for range waiters {
			r := <-results
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.set == nil {
				t.Fatal("a waiter got no update")
			}
			update := r.set.FilterSet[0].ObjectSet[0]
			if update.Kind != types.ObjectUpdateKindModify || len(update.ChangeSet) != 1 ||
				update.ChangeSet[0].Name != "runtime.powerState" || update.ChangeSet[0].Val != types.VirtualMachinePowerStatePoweredOff {
				t.Errorf("update %+v", update)
			}
			versions = append(versions, r.set.Version)
		}
		// Nothing changed since: a wait from any of the new versions times out with no update.
		for _, v := range versions {
			if set, err := waitEx(ctx, c, v, 0); err != nil || set != nil {
				t.Errorf("from version %s: %+v, %v; want nothing", v, set, err)
			}
		}
		// The old version still tells the change.
		if set, err := waitEx(ctx, c, version, 0); err != nil || set == nil {
			t.Errorf("from the old version: %+v, %v", set, err)
		}
		if _, err := waitEx(ctx, c, "no-such-version", 0); !fault.Is(err, &types.InvalidCollectorVersion{}) {
			t.Errorf("unknown version: %v, want InvalidCollectorVersion", err)
		}
	})
}

func TestWaitForUpdatesLegacyAndLeave(t *testing.T) {
	labTest(t, func(ctx context.Context, c *vim25.Client, m *simulator.Model) {
		vm, err := find.NewFinder(c).VirtualMachine(ctx, "DC0_H0_VM0")
		if err != nil {
			t.Fatal(err)
		}
		version := watch(t, ctx, c, vm.Reference())
		powerOff(t, ctx, vm)
		res, err := methods.WaitForUpdates(ctx, c, &types.WaitForUpdates{This: c.ServiceContent.PropertyCollector, Version: version})
		if err != nil {
			t.Fatal(err)
		}
		if u := res.Returnval.FilterSet[0].ObjectSet[0]; u.Kind != types.ObjectUpdateKindModify {
			t.Errorf("WaitForUpdates: %+v", u)
		}
		task, err := vm.Destroy(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := task.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		set, err := waitEx(ctx, c, res.Returnval.Version, 10)
		if err != nil {
			t.Fatal(err)
		}
		if set == nil || set.FilterSet[0].ObjectSet[0].Kind != types.ObjectUpdateKindLeave {
			t.Errorf("after destroy: %+v, want the VM leaving", set)
		}
	})
}

func TestCancelWaitForUpdates(t *testing.T) {
	labTest(t, func(ctx context.Context, c *vim25.Client, m *simulator.Model) {
		vm, err := find.NewFinder(c).VirtualMachine(ctx, "DC0_H0_VM0")
		if err != nil {
			t.Fatal(err)
		}
		version := watch(t, ctx, c, vm.Reference())
		done := make(chan error, 1)
		go func() {
			_, err := waitEx(ctx, c, version, 30)
			done <- err
		}()
		deadline := time.After(10 * time.Second)
		for {
			// Until the wait has begun, a cancel has nothing to cancel.
			if _, err := methods.CancelWaitForUpdates(ctx, c, &types.CancelWaitForUpdates{This: c.ServiceContent.PropertyCollector}); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if !fault.Is(err, &types.RequestCanceled{}) {
					t.Errorf("cancelled wait: %v, want RequestCanceled", err)
				}
				return
			case <-time.After(50 * time.Millisecond):
			case <-deadline:
				t.Fatal("the wait was not cancelled")
			}
		}
	})
}

func TestDiff(t *testing.T) {
	filter := types.ManagedObjectReference{Type: "PropertyFilter", Value: "f"}
	vm1 := types.ManagedObjectReference{Type: "VirtualMachine", Value: "vm-1"}
	vm2 := types.ManagedObjectReference{Type: "VirtualMachine", Value: "vm-2"}
	old := snapshot{filter: {
		vm1: {props: map[string]types.AnyType{"name": "a", "runtime.powerState": "poweredOn"}},
		vm2: {props: map[string]types.AnyType{"name": "b"}},
	}}
	if updates := diff(old, old); len(updates) != 0 {
		t.Errorf("no change: %+v", updates)
	}
	missing := []types.MissingProperty{{Path: "config"}}
	now := snapshot{filter: {
		vm1: {props: map[string]types.AnyType{"name": "a"}},
		vm2: {props: map[string]types.AnyType{"name": "b"}, missing: missing},
	}}
	updates := diff(old, now)
	if len(updates) != 1 || len(updates[0].ObjectSet) != 2 {
		t.Fatalf("updates %+v", updates)
	}
	for _, u := range updates[0].ObjectSet {
		switch u.Obj {
		case vm1:
			if u.Kind != types.ObjectUpdateKindModify || len(u.ChangeSet) != 1 || u.ChangeSet[0].Op != types.PropertyChangeOpRemove || u.ChangeSet[0].Name != "runtime.powerState" {
				t.Errorf("vm-1: %+v", u)
			}
		case vm2: // only its missing set changed
			if u.Kind != types.ObjectUpdateKindModify || len(u.ChangeSet) != 0 || len(u.MissingSet) != 1 {
				t.Errorf("vm-2: %+v", u)
			}
		}
	}
	// From nothing every object enters with every property.
	updates = diff(nil, now)
	for _, u := range updates[0].ObjectSet {
		if u.Kind != types.ObjectUpdateKindEnter || len(u.ChangeSet) != 1 {
			t.Errorf("enter: %+v", u)
		}
	}
}
