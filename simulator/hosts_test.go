package main

import (
	"context"
	"regexp"
	"slices"
	"testing"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

func TestExtendHosts(t *testing.T) {
	labTest(t, func(ctx context.Context, c *vim25.Client, m *simulator.Model) {
		hosts := hostRefs(t, ctx, c)
		pc := property.DefaultCollector(c)
		seen := map[types.ManagedObjectReference]bool{}
		for _, h := range hosts {
			cm := h.ConfigManager
			if cm.GraphicsManager == nil || cm.KernelModuleSystem == nil {
				t.Fatalf("%s: graphics manager %v, kernel module system %v", h.Name, cm.GraphicsManager, cm.KernelModuleSystem)
			}
			// Each host its own managers.
			for _, ref := range []types.ManagedObjectReference{*cm.GraphicsManager, *cm.KernelModuleSystem} {
				if seen[ref] {
					t.Errorf("%s: %v shared with another host", h.Name, ref)
				}
				seen[ref] = true
			}
			var graphics mo.HostGraphicsManager
			if err := pc.RetrieveOne(ctx, *cm.GraphicsManager, nil, &graphics); err != nil {
				t.Fatal(err)
			}
			if graphics.GraphicsConfig.HostDefaultGraphicsType != "shared" || len(graphics.GraphicsInfo) == 0 || len(graphics.SharedPassthruGpuTypes) == 0 {
				t.Errorf("%s: graphics %+v", h.Name, graphics)
			}
			options, err := object.NewOptionManager(c, *cm.AdvancedOption).Query(ctx, pvrdmaVmknicOption)
			if err != nil {
				t.Fatalf("%s: %s: %v", h.Name, pvrdmaVmknicOption, err)
			}
			if len(options) != 1 || options[0].GetOptionValue().Value != "" {
				t.Errorf("%s: %s = %+v, want one empty value", h.Name, pvrdmaVmknicOption, options)
			}
			var nics mo.HostVirtualNicManager
			if err := pc.RetrieveOne(ctx, *cm.VirtualNicManager, []string{"info"}, &nics); err != nil {
				t.Fatal(err)
			}
			for _, nicType := range nicTypes {
				if !slices.ContainsFunc(nics.Info.NetConfig, func(n types.VirtualNicManagerNetConfig) bool { return n.NicType == nicType }) {
					t.Errorf("%s: no NIC type %s", h.Name, nicType)
				}
			}
		}
	})
}

// Enabling a ruleset on one host leaves the others' as they were (vcsim's hosts share one).
func TestFirewallRulesetsPerHost(t *testing.T) {
	labTest(t, func(ctx context.Context, c *vim25.Client, m *simulator.Model) {
		hosts := hostRefs(t, ctx, c)
		enabled := func(h mo.HostSystem) bool {
			var fw mo.HostFirewallSystem
			if err := property.DefaultCollector(c).RetrieveOne(ctx, *h.ConfigManager.FirewallSystem, []string{"firewallInfo"}, &fw); err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(fw.FirewallInfo.Ruleset, func(r types.HostFirewallRuleset) bool { return r.Key == "pvrdma" })
			if i < 0 {
				t.Fatalf("%s: no pvrdma ruleset", h.Name)
			}
			return fw.FirewallInfo.Ruleset[i].Enabled
		}
		if enabled(hosts[0]) || enabled(hosts[1]) {
			t.Fatal("pvrdma enabled before the test")
		}
		if err := object.NewHostFirewallSystem(c, *hosts[0].ConfigManager.FirewallSystem).EnableRuleset(ctx, "pvrdma"); err != nil {
			t.Fatal(err)
		}
		if !enabled(hosts[0]) {
			t.Error("pvrdma not enabled on the host it was enabled on")
		}
		if enabled(hosts[1]) {
			t.Error("pvrdma enabled on another host too")
		}
	})
}

func TestUpdateGraphicsConfig(t *testing.T) {
	labTest(t, func(ctx context.Context, c *vim25.Client, m *simulator.Model) {
		ref := *hostRefs(t, ctx, c)[0].ConfigManager.GraphicsManager
		update := func(config types.HostGraphicsConfig) error {
			_, err := methods.UpdateGraphicsConfig(ctx, c, &types.UpdateGraphicsConfig{This: ref, Config: config})
			return err
		}
		read := func() types.HostGraphicsConfig {
			var g mo.HostGraphicsManager
			if err := property.DefaultCollector(c).RetrieveOne(ctx, ref, []string{"graphicsConfig"}, &g); err != nil {
				t.Fatal(err)
			}
			return *g.GraphicsConfig
		}
		if err := update(types.HostGraphicsConfig{HostDefaultGraphicsType: "sharedDirect", SharedPassthruAssignmentPolicy: "consolidation"}); err != nil {
			t.Fatal(err)
		}
		if got := read(); got.HostDefaultGraphicsType != "sharedDirect" || got.SharedPassthruAssignmentPolicy != "consolidation" {
			t.Errorf("after update: %+v", got)
		}
		// No policy in the config keeps the host's.
		if err := update(types.HostGraphicsConfig{HostDefaultGraphicsType: "shared"}); err != nil {
			t.Fatal(err)
		}
		if got := read(); got.HostDefaultGraphicsType != "shared" || got.SharedPassthruAssignmentPolicy != "consolidation" {
			t.Errorf("after an update without policy: %+v", got)
		}
		for name, bad := range map[string]types.HostGraphicsConfig{
			"type":        {HostDefaultGraphicsType: "passthrough"},
			"policy":      {HostDefaultGraphicsType: "shared", SharedPassthruAssignmentPolicy: "spread"},
			"device type": {HostDefaultGraphicsType: "shared", DeviceType: []types.HostGraphicsConfigDeviceType{{DeviceId: "0000:3b:00.0", GraphicsType: "direct"}}},
		} {
			if err := update(bad); !fault.Is(err, &types.InvalidArgument{}) {
				t.Errorf("bad %s: %v, want InvalidArgument", name, err)
			}
		}
		if got := read(); got.HostDefaultGraphicsType != "shared" || got.SharedPassthruAssignmentPolicy != "consolidation" {
			t.Errorf("a refused update changed the config: %+v", got)
		}
		if _, err := methods.RefreshGraphicsManager(ctx, c, &types.RefreshGraphicsManager{This: ref}); err != nil {
			t.Error(err)
		}
	})
}

func TestKernelModuleOptions(t *testing.T) {
	labTest(t, func(ctx context.Context, c *vim25.Client, m *simulator.Model) {
		hosts := hostRefs(t, ctx, c)
		ref := *hosts[0].ConfigManager.KernelModuleSystem
		query := func(ref types.ManagedObjectReference, name string) (string, error) {
			res, err := methods.QueryConfiguredModuleOptionString(ctx, c, &types.QueryConfiguredModuleOptionString{This: ref, Name: name})
			if err != nil {
				return "", err
			}
			return res.Returnval, nil
		}
		const pfc = "pfctx=0x08 pfcrx=0x08 trust_state=2"
		if _, err := methods.UpdateModuleOptionString(ctx, c, &types.UpdateModuleOptionString{This: ref, Name: "nmlx5_core", Options: pfc}); err != nil {
			t.Fatal(err)
		}
		if got, err := query(ref, "nmlx5_core"); err != nil || got != pfc {
			t.Errorf("nmlx5_core options %q, %v", got, err)
		}
		if got, err := query(*hosts[1].ConfigManager.KernelModuleSystem, "nmlx5_core"); err != nil || got != "" {
			t.Errorf("another host's nmlx5_core options %q, %v", got, err)
		}
		res, err := methods.QueryModules(ctx, c, &types.QueryModules{This: ref})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, module := range res.Returnval {
			names = append(names, module.Name)
			if module.Name == "nmlx5_core" && module.OptionString != pfc {
				t.Errorf("QueryModules: nmlx5_core options %q", module.OptionString)
			}
		}
		if !slices.Equal(names, kernelModules) {
			t.Errorf("modules %v, want %v", names, kernelModules)
		}
		if _, err := query(ref, "ixgben"); !fault.Is(err, &types.NotFound{}) {
			t.Errorf("query of an unknown module: %v, want NotFound", err)
		}
		if _, err := methods.UpdateModuleOptionString(ctx, c, &types.UpdateModuleOptionString{This: ref, Name: "ixgben", Options: "x"}); !fault.Is(err, &types.NotFound{}) {
			t.Errorf("update of an unknown module: %v, want NotFound", err)
		}
	})
}

func readVnics(t *testing.T, ctx context.Context, c *vim25.Client, h mo.HostSystem) (onHost, onNetworkSystem []types.HostVirtualNic) {
	t.Helper()
	pc := property.DefaultCollector(c)
	var host mo.HostSystem
	if err := pc.RetrieveOne(ctx, h.Self, []string{"config.network.vnic"}, &host); err != nil {
		t.Fatal(err)
	}
	var ns mo.HostNetworkSystem
	if err := pc.RetrieveOne(ctx, *h.ConfigManager.NetworkSystem, []string{"networkInfo.vnic"}, &ns); err != nil {
		t.Fatal(err)
	}
	return host.Config.Network.Vnic, ns.NetworkInfo.Vnic
}

func findVnic(vnics []types.HostVirtualNic, device string) *types.HostVirtualNic {
	if i := slices.IndexFunc(vnics, func(v types.HostVirtualNic) bool { return v.Device == device }); i >= 0 {
		return &vnics[i]
	}
	return nil
}

func TestVirtualNics(t *testing.T) {
	labTest(t, func(ctx context.Context, c *vim25.Client, m *simulator.Model) {
		hosts := hostRefs(t, ctx, c)
		h0, h1 := hosts[0], hosts[1]
		ns := object.NewHostNetworkSystem(c, *h0.ConfigManager.NetworkSystem)

		// A standard port group: the next free vmk, ESXi's defaults.
		device, err := ns.AddVirtualNic(ctx, "Management Network", types.HostVirtualNicSpec{})
		if err != nil {
			t.Fatal(err)
		}
		if device != "vmk1" {
			t.Errorf("device %q, want vmk1 (vmk0 exists)", device)
		}
		onHost, onNs := readVnics(t, ctx, c, h0)
		for _, vnics := range [][]types.HostVirtualNic{onHost, onNs} {
			v := findVnic(vnics, device)
			if v == nil {
				t.Fatalf("%s not listed: %v", device, vnics)
			}
			if v.Portgroup != "Management Network" || v.Spec.Mtu != 1500 || v.Spec.NetStackInstanceKey != "defaultTcpipStack" ||
				!regexp.MustCompile(`^00:50:56:[0-9a-f]{2}:[0-9a-f]{2}:[0-9a-f]{2}$`).MatchString(v.Spec.Mac) {
				t.Errorf("%s: %+v", device, v)
			}
		}

		// Unset fields keep their value.
		if err := ns.UpdateVirtualNic(ctx, device, types.HostVirtualNicSpec{Mtu: 9000}); err != nil {
			t.Fatal(err)
		}
		onHost, _ = readVnics(t, ctx, c, h0)
		after := findVnic(onHost, device)
		before := findVnic(onNs, device)
		if after.Spec.Mtu != 9000 || after.Spec.Mac != before.Spec.Mac || after.Portgroup != "Management Network" || after.Spec.NetStackInstanceKey != "defaultTcpipStack" {
			t.Errorf("after an MTU update: %+v", after)
		}

		// A distributed port: only on a switch the host is a member of, and a port group it has.
		sw, err := createSwitch(ctx, c, "roce", member("add", h0.Self, "vmnic2"))
		if err != nil {
			t.Fatal(err)
		}
		s, _ := readSwitch(t, ctx, c, sw.Reference())
		pg, err := createPortgroup(ctx, c, sw, "rdma")
		if err != nil {
			t.Fatal(err)
		}
		port := &types.DistributedVirtualSwitchPortConnection{SwitchUuid: s.Uuid, PortgroupKey: pg.Key}
		rdma, err := ns.AddVirtualNic(ctx, "", types.HostVirtualNicSpec{DistributedVirtualPort: port, Mtu: 9000})
		if err != nil {
			t.Fatal(err)
		}
		onHost, _ = readVnics(t, ctx, c, h0)
		if v := findVnic(onHost, rdma); rdma != "vmk2" || v == nil || v.Spec.DistributedVirtualPort == nil || v.Spec.DistributedVirtualPort.PortgroupKey != pg.Key {
			t.Errorf("%s on the switch: %+v", rdma, v)
		}
		// Moving vmk1 onto the switch drops its standard port group.
		if err := ns.UpdateVirtualNic(ctx, device, types.HostVirtualNicSpec{DistributedVirtualPort: port}); err != nil {
			t.Fatal(err)
		}
		onHost, _ = readVnics(t, ctx, c, h0)
		if v := findVnic(onHost, device); v.Portgroup != "" || v.Spec.DistributedVirtualPort == nil || v.Spec.Mtu != 9000 {
			t.Errorf("%s moved to the switch: %+v", device, v)
		}

		other := object.NewHostNetworkSystem(c, *h1.ConfigManager.NetworkSystem)
		for name, tt := range map[string]struct {
			ns        *object.HostNetworkSystem
			portgroup string
			port      *types.DistributedVirtualSwitchPortConnection
			want      types.BaseMethodFault
		}{
			"no target":          {ns, "", nil, &types.InvalidArgument{}},
			"unknown port group": {ns, "Storage", nil, &types.NotFound{}},
			"unknown switch":     {ns, "", &types.DistributedVirtualSwitchPortConnection{SwitchUuid: "nope"}, &types.InvalidArgument{}},
			"not a member":       {other, "", port, &types.InvalidArgument{}},
			"unknown dv port group": {ns, "", &types.DistributedVirtualSwitchPortConnection{SwitchUuid: s.Uuid, PortgroupKey: "dvportgroup-0"},
				&types.InvalidArgument{}},
		} {
			if _, err := tt.ns.AddVirtualNic(ctx, tt.portgroup, types.HostVirtualNicSpec{DistributedVirtualPort: tt.port}); !fault.Is(err, tt.want) {
				t.Errorf("%s: %v, want %T", name, err, tt.want)
			}
		}
		if err := ns.UpdateVirtualNic(ctx, "vmk9", types.HostVirtualNicSpec{Mtu: 9000}); !fault.Is(err, &types.NotFound{}) {
			t.Errorf("update of an unknown NIC: %v, want NotFound", err)
		}
		if err := ns.RemoveVirtualNic(ctx, "vmk9"); !fault.Is(err, &types.NotFound{}) {
			t.Errorf("removal of an unknown NIC: %v, want NotFound", err)
		}
		if onOther, _ := readVnics(t, ctx, c, h1); len(onOther) != 1 {
			t.Errorf("another host's NICs changed: %v", onOther)
		}
	})
}

func TestVnicSelection(t *testing.T) {
	labTest(t, func(ctx context.Context, c *vim25.Client, m *simulator.Model) {
		hosts := hostRefs(t, ctx, c)
		h := hosts[0]
		ns := object.NewHostNetworkSystem(c, *h.ConfigManager.NetworkSystem)
		manager := object.NewHostVirtualNicManager(c, *h.ConfigManager.VirtualNicManager, h.Self)
		selected := func(ref types.ManagedObjectReference, nicType string) []string {
			var m mo.HostVirtualNicManager
			if err := property.DefaultCollector(c).RetrieveOne(ctx, ref, []string{"info"}, &m); err != nil {
				t.Fatal(err)
			}
			for _, config := range m.Info.NetConfig {
				if config.NicType == nicType {
					return config.SelectedVnic
				}
			}
			t.Fatalf("no NIC type %s", nicType)
			return nil
		}
		device, err := ns.AddVirtualNic(ctx, "Management Network", types.HostVirtualNicSpec{})
		if err != nil {
			t.Fatal(err)
		}
		for _, nicType := range []string{"vmotion", "nvmeRdma"} {
			if err := manager.SelectVnic(ctx, nicType, device); err != nil {
				t.Fatalf("%s: %v", nicType, err)
			}
		}
		if err := manager.SelectVnic(ctx, "vmotion", device); err != nil { // twice: listed once
			t.Fatal(err)
		}
		key := "vmotion.key-vim.host.VirtualNic-" + device
		if got := selected(manager.Reference(), "vmotion"); !slices.Equal(got, []string{key}) {
			t.Errorf("vmotion selection %v, want [%s]", got, key)
		}
		if got := selected(*hosts[1].ConfigManager.VirtualNicManager, "vmotion"); len(got) != 0 {
			t.Errorf("another host's vmotion selection %v", got)
		}
		if err := manager.DeselectVnic(ctx, "vmotion", device); err != nil {
			t.Fatal(err)
		}
		if got := selected(manager.Reference(), "vmotion"); len(got) != 0 {
			t.Errorf("after deselect: %v", got)
		}
		// Removing the NIC takes it out of every selection.
		if err := ns.RemoveVirtualNic(ctx, device); err != nil {
			t.Fatal(err)
		}
		if got := selected(manager.Reference(), "nvmeRdma"); len(got) != 0 {
			t.Errorf("nvmeRdma selection %v after %s was removed", got, device)
		}
		if onHost, _ := readVnics(t, ctx, c, h); findVnic(onHost, device) != nil {
			t.Errorf("%s still listed after removal", device)
		}
		if err := manager.SelectVnic(ctx, "vmotion", device); !fault.Is(err, &types.NotFound{}) {
			t.Errorf("select of a removed NIC: %v, want NotFound", err)
		}
		if err := manager.SelectVnic(ctx, "iscsi", "vmk0"); !fault.Is(err, &types.InvalidArgument{}) {
			t.Errorf("select for an unknown NIC type: %v, want InvalidArgument", err)
		}
	})
}
