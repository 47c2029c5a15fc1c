package main

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// ---------------------------------------------------------------- look-ups

func allSwitches(ctx *simulator.Context) []*simulator.DistributedVirtualSwitch {
	var out []*simulator.DistributedVirtualSwitch
	for _, e := range ctx.Map.All("DistributedVirtualSwitch") {
		if s, ok := e.(*simulator.DistributedVirtualSwitch); ok {
			out = append(out, s)
		}
	}
	return out
}

func findSwitchByUUID(ctx *simulator.Context, uuid string) *simulator.DistributedVirtualSwitch {
	for _, s := range allSwitches(ctx) {
		if s.Uuid == uuid {
			return s
		}
	}
	return nil
}

func findPortgroup(ctx *simulator.Context, s *simulator.DistributedVirtualSwitch, key string) *simulator.DistributedVirtualPortgroup {
	for _, ref := range s.Portgroup {
		if pg, ok := ctx.Map.Get(ref).(*simulator.DistributedVirtualPortgroup); ok && pg.Key == key {
			return pg
		}
	}
	return nil
}

// waitTask waits for a task the simulator started (from a method it answers) and returns its outcome.
func waitTask(ctx *simulator.Context, ref types.ManagedObjectReference) (types.AnyType, types.BaseMethodFault) {
	task, ok := ctx.Map.Get(ref).(*simulator.Task)
	if !ok {
		return nil, &types.ManagedObjectNotFound{Obj: ref}
	}
	task.Wait()
	if task.Info.Error != nil {
		return nil, task.Info.Error.Fault
	}
	return task.Info.Result, nil
}

func faultOf(body soap.HasFault) types.BaseMethodFault {
	if f := body.Fault(); f != nil {
		return f.VimFault().(types.BaseMethodFault)
	}
	return nil
}

// ---------------------------------------------------------------- DistributedVirtualSwitchManager

type switchManager struct {
	*simulator.DistributedVirtualSwitchManager
}

func (m *switchManager) QueryDvsByUuid(ctx *simulator.Context, req *types.QueryDvsByUuid) soap.HasFault {
	body := &methods.QueryDvsByUuidBody{}
	s := findSwitchByUUID(ctx, req.Uuid)
	if s == nil {
		body.Fault_ = notFound(fmt.Sprintf("no distributed switch with uuid %q", req.Uuid))
		return body
	}
	ref := s.Self
	body.Res = &types.QueryDvsByUuidResponse{Returnval: &ref}
	return body
}

// ---------------------------------------------------------------- Folder.CreateDVS_Task

type folder struct {
	*simulator.Folder
}

func wrapFolder(o mo.Reference) mo.Reference {
	if f, ok := o.(*simulator.Folder); ok {
		return &folder{f}
	}
	return nil
}

func (*folder) overlaid() {}

// CreateDVSTask creates the switch as the simulator does, then makes the hosts of the spec its
// members, with their uplinks, as vCenter does (the simulator ignores them).
func (f *folder) CreateDVSTask(ctx *simulator.Context, req *types.CreateDVS_Task) soap.HasFault {
	task := simulator.CreateTask(f.Folder, "createDVSTask", func(*simulator.Task) (types.AnyType, types.BaseMethodFault) {
		spec := req.Spec.ConfigSpec.GetDVSConfigSpec()
		for _, h := range spec.Host {
			if h.Operation != string(types.ConfigSpecOperationAdd) {
				return nil, &types.InvalidArgument{InvalidProperty: "spec.configSpec.host.operation"}
			}
			if _, ok := ctx.Map.Get(h.Host).(*simulator.HostSystem); !ok {
				return nil, &types.ManagedObjectNotFound{Obj: h.Host}
			}
		}
		created := f.Folder.CreateDVSTask(ctx, req).(*methods.CreateDVS_TaskBody)
		result, fault := waitTask(ctx, created.Res.Returnval)
		if fault != nil {
			return nil, fault
		}
		ref := result.(types.ManagedObjectReference)
		s, ok := ctx.Map.Get(ref).(*simulator.DistributedVirtualSwitch)
		if !ok {
			return nil, &types.ManagedObjectNotFound{Obj: ref}
		}
		sw := &dvSwitch{s}
		sw.completeProductInfo(about)
		if fault := sw.changeMembers(ctx, spec.Host); fault != nil {
			return nil, fault
		}
		return ref, nil
	})
	return &methods.CreateDVS_TaskBody{Res: &types.CreateDVS_TaskResponse{Returnval: task.Run(ctx)}}
}

// ---------------------------------------------------------------- the switch

// completeProductInfo: vCenter reports the switch's product (the version given at creation,
// name, vendor) in config.productInfo as well as in summary.productInfo, and starts the config
// version at 1; the simulator sets only the summary's, from the spec as given.
func (s *dvSwitch) completeProductInfo(about types.AboutInfo) {
	product := types.DistributedVirtualSwitchProductSpec{}
	if s.Summary.ProductInfo != nil {
		product = *s.Summary.ProductInfo
	}
	if product.Name == "" {
		product.Name = "DVS"
	}
	if product.Vendor == "" {
		product.Vendor = about.Vendor
	}
	if product.Version == "" {
		product.Version = about.Version
	}
	if product.Build == "" {
		product.Build = about.Build
	}
	if product.ForwardingClass == "" {
		product.ForwardingClass = "etherswitch"
	}
	s.Summary.ProductInfo = &product
	info := s.Config.GetDVSConfigInfo()
	info.ProductInfo = product
	if info.ConfigVersion == "" {
		info.ConfigVersion = "1"
	}
}

type dvSwitch struct {
	*simulator.DistributedVirtualSwitch
}

func wrapSwitch(o mo.Reference) mo.Reference {
	if s, ok := o.(*simulator.DistributedVirtualSwitch); ok {
		return &dvSwitch{s}
	}
	return nil
}

func (*dvSwitch) overlaid() {}

// DestroyTask destroys the switch as the simulator does, then drops this session's wrapper of it,
// so the session no longer finds the switch. The wrapper goes before the task completes: a
// client that reads the switch once the task is done must not find it.
func (s *dvSwitch) DestroyTask(ctx *simulator.Context, req *types.Destroy_Task) soap.HasFault {
	if fault := s.destroyPortgroups(ctx); fault != nil {
		return &methods.Destroy_TaskBody{Fault_: simulator.Fault("", fault)}
	}
	task := simulator.CreateTask(s.DistributedVirtualSwitch, "destroy", func(*simulator.Task) (types.AnyType, types.BaseMethodFault) {
		body := s.DistributedVirtualSwitch.DestroyTask(ctx, req).(*methods.Destroy_TaskBody)
		if body.Fault_ != nil {
			return nil, faultOf(body)
		}
		if _, fault := waitTask(ctx, body.Res.Returnval); fault != nil {
			return nil, fault
		}
		if ctx.Session != nil {
			ctx.Session.Remove(ctx, s.Self)
		}
		return nil, nil
	})
	return &methods.Destroy_TaskBody{Res: &types.Destroy_TaskResponse{Returnval: task.Run(ctx)}}
}

// CreateDVPortgroupTask adds one port group and returns it, where AddDVPortgroup_Task returns nothing.
func (s *dvSwitch) CreateDVPortgroupTask(ctx *simulator.Context, req *types.CreateDVPortgroup_Task) soap.HasFault {
	task := simulator.CreateTask(s.DistributedVirtualSwitch, "createDVPortgroupTask", func(*simulator.Task) (types.AnyType, types.BaseMethodFault) {
		before := slices.Clone(s.Portgroup)
		added := s.DistributedVirtualSwitch.AddDVPortgroupTask(ctx, &types.AddDVPortgroup_Task{
			This: s.Self, Spec: []types.DVPortgroupConfigSpec{req.Spec},
		}).(*methods.AddDVPortgroup_TaskBody)
		if _, fault := waitTask(ctx, added.Res.Returnval); fault != nil {
			return nil, fault
		}
		for _, ref := range s.Portgroup {
			if !slices.Contains(before, ref) {
				return ref, nil
			}
		}
		return nil, &types.RuntimeFault{}
	})
	return &methods.CreateDVPortgroup_TaskBody{Res: &types.CreateDVPortgroup_TaskResponse{Returnval: task.Run(ctx)}}
}

// ReconfigureDvsTask applies the settings of the spec (the simulator keeps only host membership)
// and edits of members' uplinks, and keeps config.host and config.configVersion as vCenter does.
func (s *dvSwitch) ReconfigureDvsTask(ctx *simulator.Context, req *types.ReconfigureDvs_Task) soap.HasFault {
	task := simulator.CreateTask(s.DistributedVirtualSwitch, "reconfigureDvsTask", func(*simulator.Task) (types.AnyType, types.BaseMethodFault) {
		spec := req.Spec.GetDVSConfigSpec()
		info := s.Config.GetDVSConfigInfo()
		if spec.ConfigVersion != "" && info.ConfigVersion != "" && spec.ConfigVersion != info.ConfigVersion {
			return nil, &types.ConcurrentAccess{}
		}
		if fault := s.changeMembers(ctx, spec.Host); fault != nil {
			return nil, fault
		}
		if spec.Name != "" && spec.Name != s.Name {
			s.Name = spec.Name
			s.Summary.Name = spec.Name
		}
		mergeSettings(reflect.ValueOf(s.Config).Elem(), reflect.ValueOf(req.Spec).Elem())
		info.ConfigVersion = nextVersion(info.ConfigVersion)
		return nil, nil
	})
	return &methods.ReconfigureDvs_TaskBody{Res: &types.ReconfigureDvs_TaskResponse{Returnval: task.Run(ctx)}}
}

// changeMembers adds and removes hosts through the simulator (which keeps the hosts' and port
// groups' networks in step) and records each member's uplinks in config.host.
func (s *dvSwitch) changeMembers(ctx *simulator.Context, members []types.DistributedVirtualSwitchHostMemberConfigSpec) types.BaseMethodFault {
	if len(members) == 0 {
		return nil
	}
	var addRemove []types.DistributedVirtualSwitchHostMemberConfigSpec
	for _, m := range members {
		host, ok := ctx.Map.Get(m.Host).(*simulator.HostSystem)
		if !ok {
			return &types.ManagedObjectNotFound{Obj: m.Host}
		}
		switch types.ConfigSpecOperation(m.Operation) {
		case types.ConfigSpecOperationAdd:
			addRemove = append(addRemove, m)
		case types.ConfigSpecOperationRemove:
			// vCenter refuses to remove a host whose VMkernel NICs are on the switch.
			for _, v := range host.Config.Network.Vnic {
				if port := v.Spec.DistributedVirtualPort; port != nil && port.SwitchUuid == s.Uuid {
					return &types.ResourceInUse{Type: "HostVirtualNic", Name: host.Name + " " + v.Device}
				}
			}
			addRemove = append(addRemove, m)
		case types.ConfigSpecOperationEdit:
			if simulator.FindReference(s.Summary.HostMember, m.Host) == nil {
				return &types.NotFound{}
			}
		default:
			return &types.InvalidArgument{InvalidProperty: "host.operation"}
		}
	}
	if len(addRemove) > 0 {
		body := s.DistributedVirtualSwitch.ReconfigureDvsTask(ctx, &types.ReconfigureDvs_Task{
			This: s.Self, Spec: &types.DVSConfigSpec{Host: addRemove},
		}).(*methods.ReconfigureDvs_TaskBody)
		if _, fault := waitTask(ctx, body.Res.Returnval); fault != nil {
			return fault
		}
	}
	info := s.Config.GetDVSConfigInfo()
	hosts := slices.Clone(info.Host)
	for _, m := range members {
		i := slices.IndexFunc(hosts, func(h types.DistributedVirtualSwitchHostMember) bool {
			return h.Config.Host != nil && *h.Config.Host == m.Host
		})
		if m.Operation == string(types.ConfigSpecOperationRemove) {
			if i >= 0 {
				hosts = slices.Delete(hosts, i, i+1)
			}
			continue
		}
		backing := m.Backing
		if backing == nil {
			backing = &types.DistributedVirtualSwitchHostMemberPnicBacking{}
		}
		host := m.Host
		member := types.DistributedVirtualSwitchHostMember{
			Config: types.DistributedVirtualSwitchHostMemberConfigInfo{
				Host: &host, MaxProxySwitchPorts: m.MaxProxySwitchPorts, Backing: backing,
				VendorSpecificConfig: m.VendorSpecificConfig,
			},
			ProductInfo: s.Summary.ProductInfo,
			Status:      "up",
		}
		if i >= 0 {
			hosts[i] = member
		} else {
			hosts = append(hosts, member)
		}
	}
	info.Host = hosts
	return nil
}

func nextVersion(v string) string {
	n, _ := strconv.Atoi(v)
	return strconv.Itoa(n + 1)
}

// mergeSettings copies every field the spec sets onto the config info field of the same name
// (the host list and the version are kept by changeMembers and ReconfigureDvsTask).
func mergeSettings(info, spec reflect.Value) {
	for i := 0; i < spec.NumField(); i++ {
		field := spec.Type().Field(i)
		value := spec.Field(i)
		if field.Anonymous {
			if value.Kind() == reflect.Struct {
				mergeSettings(info, value)
			}
			continue
		}
		switch field.Name {
		case "Host", "ConfigVersion", "Name":
			continue
		}
		if value.IsZero() {
			continue
		}
		target := info.FieldByName(field.Name)
		if !target.IsValid() || !target.CanSet() {
			continue
		}
		switch {
		case value.Type().AssignableTo(target.Type()):
			target.Set(value)
		case value.Kind() == reflect.Pointer && value.Elem().Type().AssignableTo(target.Type()):
			target.Set(value.Elem())
		}
	}
}
