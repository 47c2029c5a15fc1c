package main

import (
	"context"
	"fmt"
	"reflect"
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

// hostRefs is every host of the inventory, by name.
func hostRefs(t *testing.T, ctx context.Context, c *vim25.Client) []mo.HostSystem {
	t.Helper()
	var hosts []mo.HostSystem
	if err := retrieveAll(ctx, c, "HostSystem", []string{"name", "configManager", "network"}, &hosts); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(hosts, func(a, b mo.HostSystem) int { return cmpString(a.Name, b.Name) })
	if len(hosts) < 2 {
		t.Fatalf("%d hosts", len(hosts))
	}
	return hosts
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func member(op types.ConfigSpecOperation, host types.ManagedObjectReference, pnic string) types.DistributedVirtualSwitchHostMemberConfigSpec {
	m := types.DistributedVirtualSwitchHostMemberConfigSpec{Operation: string(op), Host: host}
	if pnic != "" {
		m.Backing = &types.DistributedVirtualSwitchHostMemberPnicBacking{
			PnicSpec: []types.DistributedVirtualSwitchHostMemberPnicSpec{{PnicDevice: pnic}},
		}
	}
	return m
}

// createSwitch runs CreateDVS_Task in the datacenter's network folder.
func createSwitch(ctx context.Context, c *vim25.Client, name string, members ...types.DistributedVirtualSwitchHostMemberConfigSpec) (*object.DistributedVirtualSwitch, error) {
	dc, err := find.NewFinder(c).DefaultDatacenter(ctx)
	if err != nil {
		return nil, err
	}
	folders, err := dc.Folders(ctx)
	if err != nil {
		return nil, err
	}
	task, err := folders.NetworkFolder.CreateDVS(ctx, types.DVSCreateSpec{
		ConfigSpec: &types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Name: name, Host: members}},
	})
	if err != nil {
		return nil, err
	}
	info, err := task.WaitForResult(ctx)
	if err != nil {
		return nil, err
	}
	return object.NewDistributedVirtualSwitch(c, info.Result.(types.ManagedObjectReference)), nil
}

// createPortgroup runs CreateDVPortgroup_Task and returns the port group it answers.
func createPortgroup(ctx context.Context, c *vim25.Client, sw *object.DistributedVirtualSwitch, name string) (mo.DistributedVirtualPortgroup, error) {
	var pg mo.DistributedVirtualPortgroup
	res, err := methods.CreateDVPortgroup_Task(ctx, c, &types.CreateDVPortgroup_Task{
		This: sw.Reference(), Spec: types.DVPortgroupConfigSpec{Name: name, Type: "earlyBinding", NumPorts: 8},
	})
	if err != nil {
		return pg, err
	}
	info, err := object.NewTask(c, res.Returnval).WaitForResult(ctx)
	if err != nil {
		return pg, err
	}
	ref, ok := info.Result.(types.ManagedObjectReference)
	if !ok {
		return pg, fmt.Errorf("task result %T, not a reference", info.Result)
	}
	err = property.DefaultCollector(c).RetrieveOne(ctx, ref, []string{"name", "key", "config"}, &pg)
	return pg, err
}

func readSwitch(t *testing.T, ctx context.Context, c *vim25.Client, ref types.ManagedObjectReference) (mo.DistributedVirtualSwitch, *types.VMwareDVSConfigInfo) {
	t.Helper()
	var s mo.DistributedVirtualSwitch
	if err := property.DefaultCollector(c).RetrieveOne(ctx, ref, []string{"name", "uuid", "config", "summary", "portgroup"}, &s); err != nil {
		t.Fatal(err)
	}
	info, ok := s.Config.(*types.VMwareDVSConfigInfo)
	if !ok {
		t.Fatalf("config is a %T", s.Config)
	}
	return s, info
}

func TestQueryDvsByUuid(t *testing.T) {
	labTest(t, func(ctx context.Context, c *vim25.Client, m *simulator.Model) {
		sw, err := createSwitch(ctx, c, "roce")
		if err != nil {
			t.Fatal(err)
		}
		s, _ := readSwitch(t, ctx, c, sw.Reference())
		manager := *c.ServiceContent.DvSwitchManager
		res, err := methods.QueryDvsByUuid(ctx, c, &types.QueryDvsByUuid{This: manager, Uuid: s.Uuid})
		if err != nil {
			t.Fatal(err)
		}
		if res.Returnval == nil || res.Returnval.Value != sw.Reference().Value {
			t.Errorf("uuid %s: %v, want %v", s.Uuid, res.Returnval, sw.Reference())
		}
		_, err = methods.QueryDvsByUuid(ctx, c, &types.QueryDvsByUuid{This: manager, Uuid: "00 11 22"})
		if !fault.Is(err, &types.NotFound{}) {
			t.Errorf("unknown uuid: %v, want NotFound", err)
		}
	})
}

func TestCreateDVSMembers(t *testing.T) {
	labTest(t, func(ctx context.Context, c *vim25.Client, m *simulator.Model) {
		hosts := hostRefs(t, ctx, c)
		h0, h1 := hosts[0].Self, hosts[1].Self
		sw, err := createSwitch(ctx, c, "roce", member("add", h0, "vmnic2"), member("add", h1, ""))
		if err != nil {
			t.Fatal(err)
		}
		s, info := readSwitch(t, ctx, c, sw.Reference())
		if len(s.Summary.HostMember) != 2 || simulator.FindReference(s.Summary.HostMember, h0, h1) == nil {
			t.Errorf("summary.hostMember %v, want %v %v", s.Summary.HostMember, h0, h1)
		}
		if len(info.Host) != 2 {
			t.Fatalf("config.host: %d members", len(info.Host))
		}
		for _, h := range info.Host {
			backing, ok := h.Config.Backing.(*types.DistributedVirtualSwitchHostMemberPnicBacking)
			if !ok {
				t.Fatalf("%v: backing %T", h.Config.Host, h.Config.Backing)
			}
			want := 0
			if *h.Config.Host == h0 {
				want = 1
			}
			if len(backing.PnicSpec) != want || (want == 1 && backing.PnicSpec[0].PnicDevice != "vmnic2") {
				t.Errorf("%v: uplinks %+v", h.Config.Host, backing.PnicSpec)
			}
		}
		// vCenter fills config.productInfo and starts the config version at 1.
		if info.ProductInfo.Version == "" || info.ProductInfo.Vendor == "" || info.ProductInfo.Name != "DVS" || info.ConfigVersion != "1" {
			t.Errorf("productInfo %+v configVersion %q", info.ProductInfo, info.ConfigVersion)
		}
		// The hosts now see the switch's uplink port group.
		var host mo.HostSystem
		if err := property.DefaultCollector(c).RetrieveOne(ctx, h0, []string{"network"}, &host); err != nil {
			t.Fatal(err)
		}
		if simulator.FindReference(host.Network, s.Portgroup...) == nil {
			t.Errorf("host network %v lacks the switch's port groups %v", host.Network, s.Portgroup)
		}

		for name, tt := range map[string]struct {
			spec types.DistributedVirtualSwitchHostMemberConfigSpec
			want types.BaseMethodFault
		}{
			"edit":    {member("edit", h0, ""), &types.InvalidArgument{}},
			"no host": {member("add", types.ManagedObjectReference{Type: "HostSystem", Value: "host-0"}, ""), &types.ManagedObjectNotFound{}},
		} {
			if _, err := createSwitch(ctx, c, "bad-"+name, tt.spec); !fault.Is(err, tt.want) {
				t.Errorf("%s: %v, want %T", name, err, tt.want)
			}
		}
	})
}

func TestModelSwitchProductInfo(t *testing.T) {
	labTest(t, func(ctx context.Context, c *vim25.Client, m *simulator.Model) {
		var switches []mo.DistributedVirtualSwitch
		if err := retrieveAll(ctx, c, "DistributedVirtualSwitch", []string{"config"}, &switches); err != nil {
			t.Fatal(err)
		}
		if len(switches) == 0 {
			t.Fatal("no switch in the model")
		}
		for _, s := range switches {
			info := s.Config.GetDVSConfigInfo()
			if info.ProductInfo.Version != m.ServiceContent.About.Version || info.ConfigVersion != "1" {
				t.Errorf("%s: productInfo %+v configVersion %q", s.Self, info.ProductInfo, info.ConfigVersion)
			}
		}
	})
}

func TestReconfigureDvs(t *testing.T) {
	labTest(t, func(ctx context.Context, c *vim25.Client, m *simulator.Model) {
		hosts := hostRefs(t, ctx, c)
		h0, h1, h2 := hosts[0].Self, hosts[1].Self, hosts[2].Self
		sw, err := createSwitch(ctx, c, "roce", member("add", h0, "vmnic2"))
		if err != nil {
			t.Fatal(err)
		}
		reconfigure := func(spec types.BaseDVSConfigSpec) error {
			task, err := sw.Reconfigure(ctx, spec)
			if err != nil {
				return err
			}
			return task.Wait(ctx)
		}

		err = reconfigure(&types.VMwareDVSConfigSpec{
			DVSConfigSpec: types.DVSConfigSpec{
				ConfigVersion: "1", Name: "roce-fabric", Description: "RoCE",
				Host: []types.DistributedVirtualSwitchHostMemberConfigSpec{
					member("edit", h0, "vmnic3"), member("add", h1, "vmnic2"),
				},
			},
			MaxMtu:         9000,
			LacpApiVersion: "multipleLag",
		})
		if err != nil {
			t.Fatal(err)
		}
		s, info := readSwitch(t, ctx, c, sw.Reference())
		if s.Name != "roce-fabric" || s.Summary.Name != "roce-fabric" {
			t.Errorf("name %q summary %q", s.Name, s.Summary.Name)
		}
		if info.MaxMtu != 9000 || info.LacpApiVersion != "multipleLag" || info.Description != "RoCE" || info.ConfigVersion != "2" {
			t.Errorf("maxMtu %d lacp %q description %q version %q", info.MaxMtu, info.LacpApiVersion, info.Description, info.ConfigVersion)
		}
		uplinks := map[types.ManagedObjectReference]string{}
		for _, h := range info.Host {
			if b, ok := h.Config.Backing.(*types.DistributedVirtualSwitchHostMemberPnicBacking); ok && len(b.PnicSpec) == 1 {
				uplinks[*h.Config.Host] = b.PnicSpec[0].PnicDevice
			}
		}
		if len(uplinks) != 2 || uplinks[h0] != "vmnic3" || uplinks[h1] != "vmnic2" {
			t.Errorf("uplinks %v", uplinks)
		}

		// A spec from before the last change is refused, as vCenter does.
		if err := reconfigure(&types.DVSConfigSpec{ConfigVersion: "1", Description: "stale"}); !fault.Is(err, &types.ConcurrentAccess{}) {
			t.Errorf("stale version: %v, want ConcurrentAccess", err)
		}
		// A setting left out keeps its value.
		if err := reconfigure(&types.VMwareDVSConfigSpec{DVSConfigSpec: types.DVSConfigSpec{Description: "RoCE v2"}}); err != nil {
			t.Fatal(err)
		}
		if _, info := readSwitch(t, ctx, c, sw.Reference()); info.MaxMtu != 9000 || info.Description != "RoCE v2" || info.ConfigVersion != "3" {
			t.Errorf("after a partial spec: maxMtu %d description %q version %q", info.MaxMtu, info.Description, info.ConfigVersion)
		}

		for name, tt := range map[string]struct {
			spec types.DistributedVirtualSwitchHostMemberConfigSpec
			want types.BaseMethodFault
		}{
			"edit of a host not a member": {member("edit", h2, ""), &types.NotFound{}},
			"unknown operation":           {member("replace", h0, ""), &types.InvalidArgument{}},
		} {
			err := reconfigure(&types.DVSConfigSpec{Host: []types.DistributedVirtualSwitchHostMemberConfigSpec{tt.spec}})
			if !fault.Is(err, tt.want) {
				t.Errorf("%s: %v, want %T", name, err, tt.want)
			}
		}

		// A member with a VMkernel NIC on the switch cannot leave it; without, it can.
		pg, err := createPortgroup(ctx, c, sw, "rdma")
		if err != nil {
			t.Fatal(err)
		}
		ns := object.NewHostNetworkSystem(c, *hosts[1].ConfigManager.NetworkSystem)
		if _, err := ns.AddVirtualNic(ctx, "", types.HostVirtualNicSpec{
			DistributedVirtualPort: &types.DistributedVirtualSwitchPortConnection{SwitchUuid: s.Uuid, PortgroupKey: pg.Key},
		}); err != nil {
			t.Fatal(err)
		}
		leave := &types.DVSConfigSpec{Host: []types.DistributedVirtualSwitchHostMemberConfigSpec{member("remove", h1, "")}}
		if err := reconfigure(leave); !fault.Is(err, &types.ResourceInUse{}) {
			t.Errorf("removing a host with a vmk on the switch: %v, want ResourceInUse", err)
		}
		leave.Host[0].Host = h0
		if err := reconfigure(leave); err != nil {
			t.Fatal(err)
		}
		s, info = readSwitch(t, ctx, c, sw.Reference())
		if len(info.Host) != 1 || *info.Host[0].Config.Host != h1 || len(s.Summary.HostMember) != 1 {
			t.Errorf("after removing %v: config.host %d summary.hostMember %v", h0, len(info.Host), s.Summary.HostMember)
		}
	})
}

func TestCreateDVPortgroup(t *testing.T) {
	labTest(t, func(ctx context.Context, c *vim25.Client, m *simulator.Model) {
		sw, err := createSwitch(ctx, c, "roce")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"rdma", "mgmt"} {
			pg, err := createPortgroup(ctx, c, sw, name)
			if err != nil {
				t.Fatal(err)
			}
			if pg.Name != name || pg.Key == "" || pg.Config.DistributedVirtualSwitch == nil || pg.Config.DistributedVirtualSwitch.Value != sw.Reference().Value {
				t.Errorf("%s: got %q key %q on %v", name, pg.Name, pg.Key, pg.Config.DistributedVirtualSwitch)
			}
		}
		s, _ := readSwitch(t, ctx, c, sw.Reference())
		if len(s.Portgroup) != 3 { // the uplink port group and the two
			t.Errorf("port groups %v", s.Portgroup)
		}
	})
}

func TestMergeSettings(t *testing.T) {
	info := &types.VMwareDVSConfigInfo{MaxMtu: 1500}
	info.Name = "kept"
	info.ConfigVersion = "4"
	spec := &types.VMwareDVSConfigSpec{MaxMtu: 9000}
	spec.Name = "ignored"
	spec.ConfigVersion = "9"
	spec.NumStandalonePorts = 16
	spec.Host = []types.DistributedVirtualSwitchHostMemberConfigSpec{{Operation: "add"}}
	mergeSettings(reflect.ValueOf(info).Elem(), reflect.ValueOf(spec).Elem())
	if info.MaxMtu != 9000 || info.NumStandalonePorts != 16 {
		t.Errorf("settings not copied: maxMtu %d ports %d", info.MaxMtu, info.NumStandalonePorts)
	}
	if info.Name != "kept" || info.ConfigVersion != "4" || len(info.Host) != 0 {
		t.Errorf("name %q version %q hosts %d: changed by the merge", info.Name, info.ConfigVersion, len(info.Host))
	}
}
