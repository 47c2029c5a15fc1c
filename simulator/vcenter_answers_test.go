package main

import (
	"context"
	"slices"
	"testing"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

func TestUpgradeVM(t *testing.T) {
	labTest(t, func(ctx context.Context, c *vim25.Client, m *simulator.Model) {
		vms, err := find.NewFinder(c).VirtualMachineList(ctx, "*")
		if err != nil {
			t.Fatal(err)
		}
		vm := vms[0]
		version := func() types.HardwareVersion {
			var o mo.VirtualMachine
			if err := vm.Properties(ctx, vm.Reference(), []string{"config.version"}, &o); err != nil {
				t.Fatal(err)
			}
			v, err := types.ParseHardwareVersion(o.Config.Version)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		upgrade := func(v types.HardwareVersion) error {
			task, err := vm.UpgradeVM(ctx, v.String())
			if err != nil {
				return err
			}
			return task.Wait(ctx)
		}
		current := version()
		if current <= types.VMX3 || current >= types.MaxValidHardwareVersion {
			t.Fatalf("the test needs a version with one below and one above: %s", current)
		}
		// The model's VMs are powered on: vCenter wants them off for any upgrade.
		if err := upgrade(current); !fault.Is(err, &types.InvalidPowerState{}) {
			t.Errorf("powered on: %v, want InvalidPowerState", err)
		}
		task, err := vm.PowerOff(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := task.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if err := upgrade(current); err != nil {
			t.Errorf("to the version it has: %v, want success", err)
		}
		if err := upgrade(current - 1); !fault.Is(err, &types.AlreadyUpgraded{}) {
			t.Errorf("to a lower version: %v, want AlreadyUpgraded", err)
		}
		if got := version(); got != current {
			t.Errorf("version %s after no-op upgrades, want %s", got, current)
		}
		// Higher versions are the simulator's: it upgrades.
		if err := upgrade(current + 1); err != nil {
			t.Fatal(err)
		}
		if got := version(); got != current+1 {
			t.Errorf("version %s, want %s", got, current+1)
		}
	})
}

func TestRenamePortgroup(t *testing.T) {
	labTest(t, func(ctx context.Context, c *vim25.Client, m *simulator.Model) {
		sw, err := createSwitch(ctx, c, "roce")
		if err != nil {
			t.Fatal(err)
		}
		created, err := createPortgroup(ctx, c, sw, "rdma")
		if err != nil {
			t.Fatal(err)
		}
		pg := object.NewDistributedVirtualPortgroup(c, created.Self)
		reconfigure := func(spec types.DVPortgroupConfigSpec) {
			t.Helper()
			task, err := pg.Reconfigure(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			if err := task.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		}
		check := func(want, gone string) {
			t.Helper()
			var o mo.DistributedVirtualPortgroup
			if err := property.DefaultCollector(c).RetrieveOne(ctx, pg.Reference(), []string{"name", "config.name"}, &o); err != nil {
				t.Fatal(err)
			}
			if o.Name != want || o.Config.Name != want {
				t.Errorf("name %q config.name %q, want %q", o.Name, o.Config.Name, want)
			}
			s, _ := readSwitch(t, ctx, c, sw.Reference())
			if !slices.Contains(s.Summary.PortgroupName, want) || (gone != "" && slices.Contains(s.Summary.PortgroupName, gone)) {
				t.Errorf("switch lists port groups %v, want %q and not %q", s.Summary.PortgroupName, want, gone)
			}
			found, err := object.NewSearchIndex(c).FindByInventoryPath(ctx, "/DC0/network/"+want)
			if err != nil || found == nil || found.Reference().Value != pg.Reference().Value {
				t.Errorf("inventory path of %q: %v, %v", want, found, err)
			}
		}
		reconfigure(types.DVPortgroupConfigSpec{Name: "rdma-v2", ConfigVersion: created.Config.ConfigVersion})
		check("rdma-v2", "rdma")
		// A spec without a name keeps it.
		reconfigure(types.DVPortgroupConfigSpec{Description: "RoCE"})
		check("rdma-v2", "")
	})
}

func TestDestroySwitch(t *testing.T) {
	labTest(t, func(ctx context.Context, c *vim25.Client, m *simulator.Model) {
		hosts := hostRefs(t, ctx, c)
		sw, err := createSwitch(ctx, c, "roce", member("add", hosts[0].Self, "vmnic2"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := createPortgroup(ctx, c, sw, "rdma"); err != nil {
			t.Fatal(err)
		}
		s, _ := readSwitch(t, ctx, c, sw.Reference())
		if len(s.Portgroup) != 2 {
			t.Fatalf("port groups %v, want the uplinks' and rdma", s.Portgroup)
		}
		task, err := sw.Destroy(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := task.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		pc := property.DefaultCollector(c)
		// Gone for the session that destroyed it (whose calls went through its wrapper).
		var gone mo.DistributedVirtualSwitch
		if err := pc.RetrieveOne(ctx, sw.Reference(), []string{"name"}, &gone); !fault.Is(err, &types.ManagedObjectNotFound{}) {
			t.Errorf("reading the destroyed switch: %v, want ManagedObjectNotFound", err)
		}
		for _, ref := range s.Portgroup {
			var pg mo.DistributedVirtualPortgroup
			if err := pc.RetrieveOne(ctx, ref, []string{"name"}, &pg); !fault.Is(err, &types.ManagedObjectNotFound{}) {
				t.Errorf("port group %v of the destroyed switch: %v, want ManagedObjectNotFound", ref, err)
			}
		}
		var host mo.HostSystem
		if err := pc.RetrieveOne(ctx, hosts[0].Self, []string{"network"}, &host); err != nil {
			t.Fatal(err)
		}
		if found := simulator.FindReference(host.Network, s.Portgroup...); found != nil {
			t.Errorf("host still on %v", found)
		}
		if _, err := methods.QueryDvsByUuid(ctx, c, &types.QueryDvsByUuid{This: *c.ServiceContent.DvSwitchManager, Uuid: s.Uuid}); !fault.Is(err, &types.NotFound{}) {
			t.Errorf("QueryDvsByUuid of the destroyed switch: %v, want NotFound", err)
		}
		// The name is free again.
		if _, err := createSwitch(ctx, c, "roce"); err != nil {
			t.Errorf("a new switch of the same name: %v", err)
		}
	})
}
