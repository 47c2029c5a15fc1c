package main

import (
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// inventoryHooks fills in, on every object put into the inventory (the model's and each later
// one), what vCenter always sends and the simulator leaves empty, and wakes the property
// collectors' waits on every change.
type inventoryHooks struct{}

func (inventoryHooks) Reference() types.ManagedObjectReference {
	return types.ManagedObjectReference{Type: "LabVcsimInventoryHooks", Value: "hooks"}
}

func (inventoryHooks) PutObject(ctx *simulator.Context, obj mo.Reference) {
	defer changes.notify()
	objectTypes.put(obj.Reference())
	if vm, ok := obj.(*simulator.VirtualMachine); ok {
		// Required enums of VirtualMachineRuntimeInfo (WSDL minOccurs 1); sent empty, pyVmomi
		// cannot read a VM's runtime at all.
		// vCenter's default for a VM whose spec does not say ("inherit": the swap file goes
		// where the host or cluster says); the simulator leaves it empty.
		if vm.Config != nil && vm.Config.SwapPlacement == "" {
			vm.Config.SwapPlacement = string(types.VirtualMachineConfigInfoSwapPlacementTypeInherit)
		}
		for _, runtime := range []*types.VirtualMachineRuntimeInfo{&vm.Runtime, &vm.Summary.Runtime} {
			if runtime.FaultToleranceState == "" {
				runtime.FaultToleranceState = types.VirtualMachineFaultToleranceStateNotConfigured
			}
			if runtime.RecordReplayState == "" {
				runtime.RecordReplayState = types.VirtualMachineRecordReplayStateInactive
			}
		}
	}
}

func (inventoryHooks) UpdateObject(*simulator.Context, mo.Reference, []types.PropertyChange) {
	changes.notify()
}

func (inventoryHooks) RemoveObject(ctx *simulator.Context, ref types.ManagedObjectReference) {
	objectTypes.remove(ref)
	wrappers.drop(ctx, ref)
	changes.notify()
}
