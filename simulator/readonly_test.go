package main

import (
	"testing"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

func TestReadOnlyCheck(t *testing.T) {
	tests := []struct {
		login readOnlyLogin
		admin string
		ok    bool
	}{
		{readOnlyLogin{}, "", true},
		{readOnlyLogin{}, "admin", true},
		{readOnlyLogin{"reader", "pw"}, "admin", true},
		{readOnlyLogin{"reader", ""}, "admin", false},
		{readOnlyLogin{"", "pw"}, "admin", false},
		{readOnlyLogin{"reader", "pw"}, "", false},
		{readOnlyLogin{"admin", "pw"}, "admin", false},
		{readOnlyLogin{"reader@vsphere.local", "pw"}, "admin", false},
	}
	for _, tt := range tests {
		if err := tt.login.check(tt.admin); (err == nil) != tt.ok {
			t.Errorf("%+v with -username %q: %v, want ok=%v", tt.login, tt.admin, err, tt.ok)
		}
	}
}

func TestReadMethod(t *testing.T) {
	for name, read := range map[string]bool{
		"RetrievePropertiesEx": true, "QueryDvsByUuid": true, "FindByInventoryPath": true,
		"FetchUserPrivilegeOnEntities": true, "WaitForUpdatesEx": true, "CreateContainerView": true,
		"Logout": true, "HasPrivilegeOnEntities": true,
		"PowerOffVM_Task": false, "Destroy_Task": false, "QueryVirtualDiskUuid_Task": false,
		"UpdateModuleOptionString": false, "EnableRuleset": false, "CreateFolder": false,
		"SelectVnicForNicType": false, "UpdateOptions": false,
	} {
		if got := readMethod(name); got != read {
			t.Errorf("readMethod(%s) = %v", name, got)
		}
	}
}

func TestReadOnlyLogin(t *testing.T) {
	readOnly = readOnlyLogin{user: "lab-reader", password: "B"}
	t.Cleanup(func() { readOnly = readOnlyLogin{} })
	l := startLab(t, "lab-admin", "A")
	ctx := t.Context()

	for _, bad := range [][2]string{{"lab-reader", "A"}, {"lab-admin", "B"}, {"someone", "B"}} {
		if _, err := l.login(t, bad[0], bad[1]); err == nil {
			t.Errorf("%s with password %s logged in", bad[0], bad[1])
		}
	}
	reader, err := l.login(t, "lab-reader", "B")
	if err != nil {
		t.Fatal(err)
	}
	admin, err := l.login(t, "lab-admin", "A")
	if err != nil {
		t.Fatal(err)
	}

	// The reader looks the inventory up and reads it.
	vm, err := find.NewFinder(reader).VirtualMachine(ctx, "DC0_H0_VM0")
	if err != nil {
		t.Fatal(err)
	}
	var o mo.VirtualMachine
	if err := vm.Properties(ctx, vm.Reference(), []string{"runtime.powerState"}, &o); err != nil {
		t.Fatal(err)
	}
	var switches []mo.DistributedVirtualSwitch
	if err := retrieveAll(ctx, reader, "DistributedVirtualSwitch", []string{"uuid"}, &switches); err != nil || len(switches) == 0 {
		t.Fatalf("switches %v, %v", switches, err)
	}
	if _, err := methods.QueryDvsByUuid(ctx, reader, &types.QueryDvsByUuid{This: *reader.ServiceContent.DvSwitchManager, Uuid: switches[0].Uuid}); err != nil {
		t.Errorf("QueryDvsByUuid: %v", err)
	}

	// Nothing that would change the inventory: the call itself is refused, no task starts.
	denied := func(what string, err error) {
		t.Helper()
		var noPermission *types.NoPermission
		if _, ok := fault.As(err, &noPermission); !ok || noPermission.PrivilegeId != "System.Modify" {
			t.Errorf("%s: %v, want NoPermission System.Modify", what, err)
		}
	}
	_, err = vm.PowerOff(ctx)
	denied("PowerOffVM_Task", err)
	_, err = object.NewDistributedVirtualSwitch(reader, switches[0].Self).Reconfigure(ctx, &types.DVSConfigSpec{Description: "x"})
	denied("ReconfigureDvs_Task (an overlaid method)", err)
	host := hostRefs(t, ctx, reader)[0]
	denied("EnableRuleset", object.NewHostFirewallSystem(reader, *host.ConfigManager.FirewallSystem).EnableRuleset(ctx, "pvrdma"))
	_, err = methods.UpdateModuleOptionString(ctx, reader, &types.UpdateModuleOptionString{This: *host.ConfigManager.KernelModuleSystem, Name: "nmlx5_core", Options: "x"})
	denied("UpdateModuleOptionString", err)

	if err := vm.Properties(ctx, vm.Reference(), []string{"runtime.powerState"}, &o); err != nil || o.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOn {
		t.Errorf("after the refused power-off: %s, %v", o.Runtime.PowerState, err)
	}
	// The admin may.
	task, err := object.NewVirtualMachine(admin, vm.Reference()).PowerOff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(ctx); err != nil {
		t.Errorf("admin power-off: %v", err)
	}
}
