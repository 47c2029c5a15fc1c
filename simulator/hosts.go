package main

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// PVRDMA's host advanced option: ESXi has it, empty until PVRDMA is set up ("Configure an ESXi
// Host for PVRDMA", VMware vSphere documentation).
const pvrdmaVmknicOption = "Net.PVRDMAVmknic"

// Host graphics types and assignment policies, vim.host.GraphicsConfig.GraphicsType and
// .SharedPassthruAssignmentPolicy (vSphere Web Services API reference).
var (
	graphicsTypes    = []string{"shared", "sharedDirect"}
	graphicsPolicies = []string{"performance", "consolidation"}
)

// The VMkernel modules a GPU worker host of the lab has (ConnectX-5/6 driver and its RDMA part,
// the NVIDIA vGPU manager), with no options configured, as after installation.
var kernelModules = []string{"nmlx5_core", "nmlx5_rdma", "nvidia", "nvme_pcie", "vmw_ahci"}

// The services a VMkernel NIC can be selected for (vim.host.VirtualNicManager.NicType, vSphere
// Web Services API reference); vcsim knows only management.
var nicTypes = []string{"management", "vmotion", "faultToleranceLogging", "vSphereReplication",
	"vSphereReplicationNFC", "vSphereProvisioning", "vsan", "vSphereBackupNFC", "ptp", "nvmeTcp", "nvmeRdma"}

// about is the simulated vCenter's product (vendor, version, build).
var about types.AboutInfo

// extend gives every host of the created inventory the managers vcsim lacks or shares, makes
// the existing switches VmwareDistributedVirtualSwitch, and installs the method overlays.
func extend(model *simulator.Model) error {
	ctx := model.Service.Context
	registry := ctx.Map
	hooks := inventoryHooks{}
	for _, obj := range registry.AllReference("") {
		hooks.PutObject(ctx, obj)
	}
	registry.AddHandler(hooks)
	for _, entity := range registry.All("HostSystem") {
		host, ok := entity.(*simulator.HostSystem)
		if !ok {
			return fmt.Errorf("%s is a %T, not a host", entity.Reference(), entity)
		}
		if err := extendHost(ctx, host); err != nil {
			return fmt.Errorf("host %s: %w", host.Name, err)
		}
	}
	// Objects no simulator code type-asserts are replaced by our wrappers for every caller.
	for _, obj := range registry.AllReference("HostNetworkSystem") {
		if s, ok := obj.(*simulator.HostNetworkSystem); ok {
			registry.Put(&networkSystem{s})
		}
	}
	for _, obj := range registry.AllReference("HostVirtualNicManager") {
		if m, ok := obj.(*simulator.HostVirtualNicManager); ok {
			registry.Put(&vnicManager{m})
		}
	}
	about = model.ServiceContent.About
	for _, obj := range registry.AllReference("DistributedVirtualSwitch") {
		if s, ok := obj.(*simulator.DistributedVirtualSwitch); ok {
			(&dvSwitch{s}).completeProductInfo(about)
		}
	}
	dvsManager, ok := registry.Get(*model.ServiceContent.DvSwitchManager).(*simulator.DistributedVirtualSwitchManager)
	if !ok {
		return fmt.Errorf("no distributed virtual switch manager")
	}
	registry.Put(&switchManager{dvsManager})
	// Each session gets its own instance of the collector's type (the simulator makes it by
	// reflection), so our WaitForUpdatesEx serves every session.
	collector := &propertyCollector{}
	collector.Self = model.ServiceContent.PropertyCollector
	registry.Put(collector)
	registry.Handler = overlays{
		"Folder":                   {wrapFolder, []string{"CreateDVS_Task"}},
		"DistributedVirtualSwitch": {wrapSwitch, []string{"ReconfigureDvs_Task", "CreateDVPortgroup_Task", "Destroy_Task"}},
		// vcenter_answers.go
		"VirtualMachine":              {wrapVirtualMachine, []string{"UpgradeVM_Task"}},
		"DistributedVirtualPortgroup": {wrapPortgroup, []string{"ReconfigureDVPortgroup_Task"}},
	}.handler
	return nil
}

func extendHost(ctx *simulator.Context, host *simulator.HostSystem) error {
	cm := &host.ConfigManager

	graphics := &graphicsManager{HostGraphicsManager: mo.HostGraphicsManager{
		ExtensibleManagedObject: mo.ExtensibleManagedObject{Self: types.ManagedObjectReference{Type: "HostGraphicsManager"}},
		GraphicsConfig: &types.HostGraphicsConfig{
			HostDefaultGraphicsType:        "shared", // ESXi's default
			SharedPassthruAssignmentPolicy: "performance",
		},
		GraphicsInfo: []types.HostGraphicsInfo{{
			DeviceName: "GV100GL [Tesla V100 PCIe 32GB]", VendorName: "NVIDIA Corporation",
			PciId: "0000:3b:00.0", GraphicsType: "shared", MemorySizeInKB: 32 * 1024 * 1024,
		}},
		SharedPassthruGpuTypes: []string{"grid_v100-8c", "grid_v100-16c", "grid_v100-32c"},
	}}
	graphicsRef := ctx.Map.Put(graphics).Reference()
	cm.GraphicsManager = &graphicsRef

	modules := &kernelModuleSystem{options: map[string]string{}}
	modules.Self.Type = "HostKernelModuleSystem"
	for _, m := range kernelModules {
		modules.options[m] = ""
	}
	modulesRef := ctx.Map.Put(modules).Reference()
	cm.KernelModuleSystem = &modulesRef

	// Each host its own rulesets: vcsim's hosts share one slice, so enabling a ruleset on one
	// enabled it on all.
	firewall, ok := ctx.Map.Get(*cm.FirewallSystem).(*simulator.HostFirewallSystem)
	if !ok {
		return fmt.Errorf("no firewall system at %s", cm.FirewallSystem)
	}
	info := *firewall.FirewallInfo
	info.Ruleset = slices.Clone(info.Ruleset)
	firewall.FirewallInfo = &info
	host.Config.Firewall = &info

	nics, ok := ctx.Map.Get(*cm.VirtualNicManager).(*simulator.HostVirtualNicManager)
	if !ok {
		return fmt.Errorf("no virtual NIC manager at %s", cm.VirtualNicManager)
	}
	netConfig := slices.Clone(nics.Info.NetConfig)
	for i := range netConfig {
		netConfig[i].SelectedVnic = slices.Clone(netConfig[i].SelectedVnic)
		netConfig[i].CandidateVnic = slices.Clone(netConfig[i].CandidateVnic)
	}
	for _, nicType := range nicTypes {
		if !slices.ContainsFunc(netConfig, func(c types.VirtualNicManagerNetConfig) bool { return c.NicType == nicType }) {
			netConfig = append(netConfig, types.VirtualNicManagerNetConfig{NicType: nicType, MultiSelectAllowed: true})
		}
	}
	nics.Info.NetConfig = netConfig

	options, ok := ctx.Map.Get(*cm.AdvancedOption).(*simulator.OptionManager)
	if !ok {
		return fmt.Errorf("no advanced option manager at %s", cm.AdvancedOption)
	}
	if fault := options.UpdateOptions(&types.UpdateOptions{ChangedValue: []types.BaseOptionValue{
		&types.OptionValue{Key: pvrdmaVmknicOption, Value: ""},
	}}).Fault(); fault != nil {
		return fmt.Errorf("adding %s: %v", pvrdmaVmknicOption, fault.VimFault())
	}
	return nil
}

func invalidArgument(property, msg string) *soap.Fault {
	return simulator.Fault(msg, &types.InvalidArgument{InvalidProperty: property})
}

func notFound(msg string) *soap.Fault {
	return simulator.Fault(msg, &types.NotFound{})
}

// ---------------------------------------------------------------- HostGraphicsManager

type graphicsManager struct {
	mo.HostGraphicsManager
}

func (m *graphicsManager) UpdateGraphicsConfig(ctx *simulator.Context, req *types.UpdateGraphicsConfig) soap.HasFault {
	body := &methods.UpdateGraphicsConfigBody{}
	config := req.Config
	if !slices.Contains(graphicsTypes, config.HostDefaultGraphicsType) {
		body.Fault_ = invalidArgument("config.hostDefaultGraphicsType",
			fmt.Sprintf("graphics type %q is not one of %s", config.HostDefaultGraphicsType, strings.Join(graphicsTypes, ", ")))
		return body
	}
	if config.SharedPassthruAssignmentPolicy == "" {
		config.SharedPassthruAssignmentPolicy = m.GraphicsConfig.SharedPassthruAssignmentPolicy
	} else if !slices.Contains(graphicsPolicies, config.SharedPassthruAssignmentPolicy) {
		body.Fault_ = invalidArgument("config.sharedPassthruAssignmentPolicy",
			fmt.Sprintf("assignment policy %q is not one of %s", config.SharedPassthruAssignmentPolicy, strings.Join(graphicsPolicies, ", ")))
		return body
	}
	for _, device := range config.DeviceType {
		if !slices.Contains(graphicsTypes, device.GraphicsType) {
			body.Fault_ = invalidArgument("config.deviceType.graphicsType",
				fmt.Sprintf("device %s: graphics type %q is not one of %s", device.DeviceId, device.GraphicsType, strings.Join(graphicsTypes, ", ")))
			return body
		}
	}
	ctx.Update(m, []types.PropertyChange{{Name: "graphicsConfig", Val: &config}})
	body.Res = &types.UpdateGraphicsConfigResponse{}
	return body
}

func (m *graphicsManager) RefreshGraphicsManager(req *types.RefreshGraphicsManager) soap.HasFault {
	return &methods.RefreshGraphicsManagerBody{Res: &types.RefreshGraphicsManagerResponse{}}
}

// ---------------------------------------------------------------- HostKernelModuleSystem

type kernelModuleSystem struct {
	mo.HostKernelModuleSystem

	options map[string]string // module -> configured option string, read at its next load
}

func (s *kernelModuleSystem) QueryConfiguredModuleOptionString(req *types.QueryConfiguredModuleOptionString) soap.HasFault {
	body := &methods.QueryConfiguredModuleOptionStringBody{}
	options, ok := s.options[req.Name]
	if !ok {
		body.Fault_ = notFound(fmt.Sprintf("no VMkernel module %q on this host", req.Name))
		return body
	}
	body.Res = &types.QueryConfiguredModuleOptionStringResponse{Returnval: options}
	return body
}

func (s *kernelModuleSystem) UpdateModuleOptionString(req *types.UpdateModuleOptionString) soap.HasFault {
	body := &methods.UpdateModuleOptionStringBody{}
	if _, ok := s.options[req.Name]; !ok {
		body.Fault_ = notFound(fmt.Sprintf("no VMkernel module %q on this host", req.Name))
		return body
	}
	s.options[req.Name] = req.Options
	body.Res = &types.UpdateModuleOptionStringResponse{}
	return body
}

func (s *kernelModuleSystem) QueryModules(req *types.QueryModules) soap.HasFault {
	names := make([]string, 0, len(s.options))
	for n := range s.options {
		names = append(names, n)
	}
	sort.Strings(names)
	var modules []types.KernelModuleInfo
	for i, n := range names {
		modules = append(modules, types.KernelModuleInfo{
			Id: int32(i + 1), Name: n, Version: "1", Filename: "/usr/lib/vmware/vmkmod/" + n,
			OptionString: s.options[n], Loaded: true, Enabled: true,
		})
	}
	return &methods.QueryModulesBody{Res: &types.QueryModulesResponse{Returnval: modules}}
}

// ---------------------------------------------------------------- HostNetworkSystem: VMkernel NICs

type networkSystem struct {
	*simulator.HostNetworkSystem
}

// hostObject is the registry's HostSystem behind s.Host, for property updates.
func (s *networkSystem) hostObject(ctx *simulator.Context) mo.Reference {
	return ctx.Map.Get(s.Host.Self)
}

func (s *networkSystem) AddVirtualNic(ctx *simulator.Context, req *types.AddVirtualNic) soap.HasFault {
	body := &methods.AddVirtualNicBody{}
	spec := req.Nic
	if fault := s.checkNicTarget(ctx, req.Portgroup, &spec); fault != nil {
		body.Fault_ = fault
		return body
	}
	vnics := slices.Clone(s.Host.Config.Network.Vnic)
	used := map[string]bool{}
	for _, v := range vnics {
		used[v.Device] = true
	}
	device := ""
	for i := 0; ; i++ {
		if device = "vmk" + strconv.Itoa(i); !used[device] {
			break
		}
	}
	if spec.Mac == "" {
		spec.Mac = nextMac()
	}
	if spec.Mtu == 0 {
		spec.Mtu = 1500
	}
	if spec.NetStackInstanceKey == "" {
		spec.NetStackInstanceKey = "defaultTcpipStack"
	}
	if spec.Ip == nil {
		spec.Ip = &types.HostIpConfig{}
	}
	nic := types.HostVirtualNic{
		Device:    device,
		Key:       "key-vim.host.VirtualNic-" + device,
		Portgroup: req.Portgroup,
		Spec:      spec,
		Port:      "key-vim.host.PortGroup.Port-" + device,
	}
	s.setVnics(ctx, append(vnics, nic))
	body.Res = &types.AddVirtualNicResponse{Returnval: device}
	return body
}

func (s *networkSystem) UpdateVirtualNic(ctx *simulator.Context, req *types.UpdateVirtualNic) soap.HasFault {
	body := &methods.UpdateVirtualNicBody{}
	vnics := slices.Clone(s.Host.Config.Network.Vnic)
	i := slices.IndexFunc(vnics, func(v types.HostVirtualNic) bool { return v.Device == req.Device })
	if i < 0 {
		body.Fault_ = notFound(fmt.Sprintf("no virtual NIC %q on host %s", req.Device, s.Host.Name))
		return body
	}
	spec := req.Nic
	portgroup := vnics[i].Portgroup
	if spec.DistributedVirtualPort != nil {
		portgroup = ""
	}
	if spec.DistributedVirtualPort != nil || spec.Portgroup != "" {
		if fault := s.checkNicTarget(ctx, spec.Portgroup, &spec); fault != nil {
			body.Fault_ = fault
			return body
		}
		if spec.Portgroup != "" {
			portgroup = spec.Portgroup
		}
	} else {
		spec.DistributedVirtualPort = vnics[i].Spec.DistributedVirtualPort
	}
	// Unset fields keep their value, as on ESXi.
	old := vnics[i].Spec
	if spec.Mac == "" {
		spec.Mac = old.Mac
	}
	if spec.Mtu == 0 {
		spec.Mtu = old.Mtu
	}
	if spec.Ip == nil {
		spec.Ip = old.Ip
	}
	if spec.NetStackInstanceKey == "" {
		spec.NetStackInstanceKey = old.NetStackInstanceKey
	}
	vnics[i].Spec = spec
	vnics[i].Portgroup = portgroup
	s.setVnics(ctx, vnics)
	body.Res = &types.UpdateVirtualNicResponse{}
	return body
}

func (s *networkSystem) RemoveVirtualNic(ctx *simulator.Context, req *types.RemoveVirtualNic) soap.HasFault {
	body := &methods.RemoveVirtualNicBody{}
	vnics := slices.Clone(s.Host.Config.Network.Vnic)
	i := slices.IndexFunc(vnics, func(v types.HostVirtualNic) bool { return v.Device == req.Device })
	if i < 0 {
		body.Fault_ = notFound(fmt.Sprintf("no virtual NIC %q on host %s", req.Device, s.Host.Name))
		return body
	}
	s.setVnics(ctx, slices.Delete(vnics, i, i+1))
	if manager, ok := ctx.Map.Get(*s.Host.ConfigManager.VirtualNicManager).(*vnicManager); ok {
		ctx.WithLock(manager, func() {
			for t := range manager.Info.NetConfig {
				config := &manager.Info.NetConfig[t]
				config.SelectedVnic = slices.DeleteFunc(config.SelectedVnic, func(key string) bool {
					return strings.HasSuffix(key, "-"+req.Device)
				})
			}
		})
	}
	body.Res = &types.RemoveVirtualNicResponse{}
	return body
}

// checkNicTarget: a NIC goes on a standard port group of the host, or on a port group of a
// distributed switch the host is a member of.
func (s *networkSystem) checkNicTarget(ctx *simulator.Context, portgroup string, spec *types.HostVirtualNicSpec) *soap.Fault {
	port := spec.DistributedVirtualPort
	if port == nil {
		if portgroup == "" {
			return invalidArgument("portgroup", "a virtual NIC needs a port group or a distributed switch port")
		}
		for _, pg := range s.NetworkInfo.Portgroup {
			if pg.Spec.Name == portgroup {
				return nil
			}
		}
		return notFound(fmt.Sprintf("no port group %q on host %s", portgroup, s.Host.Name))
	}
	dvs := findSwitchByUUID(ctx, port.SwitchUuid)
	if dvs == nil {
		return invalidArgument("nic.distributedVirtualPort.switchUuid", fmt.Sprintf("no distributed switch with uuid %q", port.SwitchUuid))
	}
	if simulator.FindReference(dvs.Summary.HostMember, s.Host.Self) == nil {
		return invalidArgument("nic.distributedVirtualPort.switchUuid",
			fmt.Sprintf("host %s is not a member of distributed switch %s", s.Host.Name, dvs.Name))
	}
	if port.PortgroupKey != "" && findPortgroup(ctx, dvs, port.PortgroupKey) == nil {
		return invalidArgument("nic.distributedVirtualPort.portgroupKey",
			fmt.Sprintf("distributed switch %s has no port group %q", dvs.Name, port.PortgroupKey))
	}
	return nil
}

func (s *networkSystem) setVnics(ctx *simulator.Context, vnics []types.HostVirtualNic) {
	ctx.Update(s.HostNetworkSystem, []types.PropertyChange{{Name: "networkInfo.vnic", Val: vnics}})
	host := s.hostObject(ctx)
	ctx.WithLock(host, func() {
		ctx.Update(host, []types.PropertyChange{{Name: "config.network.vnic", Val: slices.Clone(vnics)}})
	})
}

var macCounter atomic.Uint32

// nextMac is a MAC address in VMware's range for generated addresses (00:50:56), unique per run.
func nextMac() string {
	n := macCounter.Add(1)
	return fmt.Sprintf("00:50:56:6%x:%02x:%02x", (n>>16)&0xf, (n>>8)&0xff, n&0xff)
}

// ---------------------------------------------------------------- HostVirtualNicManager

type vnicManager struct {
	*simulator.HostVirtualNicManager
}

// vnicKey is how ESXi names a NIC selected for a service: "<nicType>.key-vim.host.VirtualNic-<device>".
func vnicKey(nicType, device string) string {
	return nicType + ".key-vim.host.VirtualNic-" + device
}

func (m *vnicManager) selection(nicType, device string) (int, *soap.Fault) {
	if !slices.ContainsFunc(m.Host.Config.Network.Vnic, func(v types.HostVirtualNic) bool { return v.Device == device }) {
		return -1, notFound(fmt.Sprintf("no virtual NIC %q on host %s", device, m.Host.Name))
	}
	i := slices.IndexFunc(m.Info.NetConfig, func(c types.VirtualNicManagerNetConfig) bool { return c.NicType == nicType })
	if i < 0 {
		return -1, invalidArgument("nicType", fmt.Sprintf("%q is not a NIC type of this host", nicType))
	}
	return i, nil
}

func (m *vnicManager) SelectVnicForNicType(ctx *simulator.Context, req *types.SelectVnicForNicType) soap.HasFault {
	body := &methods.SelectVnicForNicTypeBody{}
	i, fault := m.selection(req.NicType, req.Device)
	if fault != nil {
		body.Fault_ = fault
		return body
	}
	config := &m.Info.NetConfig[i]
	key := vnicKey(req.NicType, req.Device)
	if !slices.Contains(config.SelectedVnic, key) {
		if !config.MultiSelectAllowed {
			config.SelectedVnic = nil
		}
		config.SelectedVnic = append(config.SelectedVnic, key)
	}
	ctx.Update(m.HostVirtualNicManager, []types.PropertyChange{{Name: "info", Val: m.Info}})
	body.Res = &types.SelectVnicForNicTypeResponse{}
	return body
}

func (m *vnicManager) DeselectVnicForNicType(ctx *simulator.Context, req *types.DeselectVnicForNicType) soap.HasFault {
	body := &methods.DeselectVnicForNicTypeBody{}
	i, fault := m.selection(req.NicType, req.Device)
	if fault != nil {
		body.Fault_ = fault
		return body
	}
	config := &m.Info.NetConfig[i]
	config.SelectedVnic = slices.DeleteFunc(config.SelectedVnic, func(k string) bool { return k == vnicKey(req.NicType, req.Device) })
	ctx.Update(m.HostVirtualNicManager, []types.PropertyChange{{Name: "info", Val: m.Info}})
	body.Res = &types.DeselectVnicForNicTypeResponse{}
	return body
}
