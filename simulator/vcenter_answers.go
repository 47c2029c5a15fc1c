package main

// What vCenter answers where govmomi's simulator answers otherwise, for the calls a roll and the
// vSphere provider make: a hardware version "upgrade" to the version the VM has, a port group
// rename, and a switch's port groups (its uplink port group too) on destroy.

import (
	"slices"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// ---------------------------------------------------------------- VirtualMachine.UpgradeVM_Task

type virtualMachine struct {
	*simulator.VirtualMachine
}

func wrapVirtualMachine(o mo.Reference) mo.Reference {
	if vm, ok := o.(*simulator.VirtualMachine); ok {
		return &virtualMachine{vm}
	}
	return nil
}

func (*virtualMachine) overlaid() {}

// UpgradeVMTask to the version the VM already has succeeds and changes nothing, as vCenter does;
// the simulator answers AlreadyUpgradedFault (it compares with <=, vmware/govmomi#3777), which
// terraform-provider-vsphere meets after every reconfigure of a VM with hardware_version set. A
// lower version is refused with vCenter's AlreadyUpgraded (the simulator's AlreadyUpgradedFault
// is a type name no vSphere client knows: pyVmomi cannot read the task afterwards). Higher
// versions go to the simulator.
func (vm *virtualMachine) UpgradeVMTask(ctx *simulator.Context, req *types.UpgradeVM_Task) soap.HasFault {
	target, err := types.ParseHardwareVersion(req.Version)
	current, errCurrent := types.ParseHardwareVersion(vm.Config.Version)
	if req.Version == "" || err != nil || errCurrent != nil || target > current {
		return vm.VirtualMachine.UpgradeVMTask(ctx, req)
	}
	task := simulator.CreateTask(vm.VirtualMachine, "upgradeVm", func(*simulator.Task) (types.AnyType, types.BaseMethodFault) {
		if vm.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOff {
			return nil, &types.InvalidPowerState{
				ExistingState: vm.Runtime.PowerState, RequestedState: types.VirtualMachinePowerStatePoweredOff,
			}
		}
		if target < current {
			return nil, &types.AlreadyUpgraded{}
		}
		return nil, nil
	})
	return &methods.UpgradeVM_TaskBody{Res: &types.UpgradeVM_TaskResponse{Returnval: task.Run(ctx)}}
}

// ---------------------------------------------------------------- DistributedVirtualPortgroup rename

type dvPortgroup struct {
	*simulator.DistributedVirtualPortgroup
}

func wrapPortgroup(o mo.Reference) mo.Reference {
	if pg, ok := o.(*simulator.DistributedVirtualPortgroup); ok {
		return &dvPortgroup{pg}
	}
	return nil
}

func (*dvPortgroup) overlaid() {}

// ReconfigureDVPortgroupTask renames the port group in the inventory too (its name, which the
// inventory path and the switch's summary list), as vCenter does; the simulator changes only
// config.name, and blanks it when the spec leaves the name out (vCenter keeps it).
func (pg *dvPortgroup) ReconfigureDVPortgroupTask(ctx *simulator.Context, req *types.ReconfigureDVPortgroup_Task) soap.HasFault {
	old := pg.Name
	wanted := req.Spec.Name
	if wanted == "" {
		req.Spec.Name = old
	}
	body := pg.DistributedVirtualPortgroup.ReconfigureDVPortgroupTask(ctx, req).(*methods.ReconfigureDVPortgroup_TaskBody)
	if _, fault := waitTask(ctx, body.Res.Returnval); fault != nil || wanted == "" || wanted == old {
		return body
	}
	ctx.Update(pg.DistributedVirtualPortgroup, []types.PropertyChange{{Name: "name", Val: wanted}})
	// The update sets the port group's own name field; inventory paths are looked up by the
	// entity's name beneath it, which the simulator also set at creation.
	pg.Entity().Name = wanted
	if pg.Config.DistributedVirtualSwitch != nil {
		if s, ok := ctx.Map.Get(*pg.Config.DistributedVirtualSwitch).(*simulator.DistributedVirtualSwitch); ok {
			names := slices.Clone(s.Summary.PortgroupName)
			if i := slices.Index(names, old); i >= 0 {
				names[i] = wanted
				ctx.Update(s, []types.PropertyChange{{Name: "summary.portgroupName", Val: names}})
			}
		}
	}
	return body
}

// ---------------------------------------------------------------- a switch's port groups on destroy

// destroyPortgroups takes the switch's remaining port groups with it, as vCenter does when a switch
// is destroyed: its uplink port group (`<switch>-DVUplinks-<n>`, which the simulator creates with
// the switch and never removes) and any other, each gone from the inventory and from every host's
// networks.
func (s *dvSwitch) destroyPortgroups(ctx *simulator.Context) types.BaseMethodFault {
	for _, ref := range slices.Clone(s.Portgroup) {
		pg, ok := ctx.Map.Get(ref).(*simulator.DistributedVirtualPortgroup)
		if !ok {
			continue
		}
		body := pg.DestroyTask(ctx, &types.Destroy_Task{This: ref}).(*methods.Destroy_TaskBody)
		if _, fault := waitTask(ctx, body.Res.Returnval); fault != nil {
			return fault
		}
		for _, obj := range ctx.Map.AllReference("HostSystem") {
			if host, ok := obj.(*simulator.HostSystem); ok && slices.Contains(host.Network, ref) {
				ctx.Map.RemoveReference(ctx, host, &host.Network, ref)
			}
		}
		ctx.Map.Remove(ctx, ref)
	}
	return nil
}
