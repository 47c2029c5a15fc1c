package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/view"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

func TestSwitchTypeOnTheWire(t *testing.T) {
	labTest(t, func(ctx context.Context, c *vim25.Client, m *simulator.Model) {
		stored := m.Map().Any("DistributedVirtualSwitch").Reference()
		networks, err := find.NewFinder(c).NetworkList(ctx, "/DC0/network/*")
		if err != nil {
			t.Fatal(err)
		}
		var found *types.ManagedObjectReference
		for _, n := range networks {
			if ref := n.Reference(); ref.Value == stored.Value {
				found = &ref
			}
		}
		if found == nil || found.Type != "VmwareDistributedVirtualSwitch" {
			t.Fatalf("the switch %s is listed as %v, want a VmwareDistributedVirtualSwitch", stored.Value, found)
		}
		// A reference of that type reaches the stored switch.
		var s mo.DistributedVirtualSwitch
		if err := property.DefaultCollector(c).RetrieveOne(ctx, *found, []string{"name"}, &s); err != nil || s.Name != "DVS0" {
			t.Errorf("name %q, %v", s.Name, err)
		}
		// So does a view that asks for the type by that name.
		v, err := view.NewManager(c).CreateContainerView(ctx, c.ServiceContent.RootFolder, []string{"VmwareDistributedVirtualSwitch"}, true)
		if err != nil {
			t.Fatal(err)
		}
		refs, err := v.Find(ctx, []string{"VmwareDistributedVirtualSwitch"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(refs) != 1 || refs[0] != *found {
			t.Errorf("view of VmwareDistributedVirtualSwitch: %v, want [%v]", refs, *found)
		}
	})
}

func TestSupertypeReference(t *testing.T) {
	labTest(t, func(ctx context.Context, c *vim25.Client, m *simulator.Model) {
		cluster := m.Map().Any("ClusterComputeResource").Reference()
		pc := property.DefaultCollector(c)
		for _, super := range []string{"ComputeResource", "ManagedEntity"} {
			var e mo.ManagedEntity
			ref := types.ManagedObjectReference{Type: super, Value: cluster.Value}
			if err := pc.RetrieveOne(ctx, ref, []string{"name"}, &e); err != nil || e.Name != "DC0_C0" {
				t.Errorf("%s: name %q, %v", ref, e.Name, err)
			}
		}
		// pulumi-vsphere asks for a cluster's inventory path by its supertype.
		path, err := find.InventoryPath(ctx, c, types.ManagedObjectReference{Type: "ComputeResource", Value: cluster.Value})
		if err != nil || path != "/DC0/host/DC0_C0" {
			t.Errorf("inventory path of the cluster as a ComputeResource: %q, %v", path, err)
		}
		// A type that is not a supertype of the object names nothing.
		var h mo.HostSystem
		err = pc.RetrieveOne(ctx, types.ManagedObjectReference{Type: "HostSystem", Value: cluster.Value}, []string{"name"}, &h)
		if !fault.Is(err, &types.ManagedObjectNotFound{}) {
			t.Errorf("a cluster's id as a HostSystem: %v, want ManagedObjectNotFound", err)
		}
	})
}

// A task is named by the method that started it, not by the simulator's runner.
func TestTaskNames(t *testing.T) {
	labTest(t, func(ctx context.Context, c *vim25.Client, m *simulator.Model) {
		vm, err := find.NewFinder(c).VirtualMachine(ctx, "DC0_H0_VM0")
		if err != nil {
			t.Fatal(err)
		}
		off, err := vm.PowerOff(ctx)
		if err != nil {
			t.Fatal(err)
		}
		info, err := off.WaitForResult(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Name != "PowerOffVM_Task" {
			t.Errorf("power-off task named %q", info.Name)
		}
		on, err := vm.PowerOn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		info, err = on.WaitForResult(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Name != "PowerOnVM_Task" {
			t.Errorf("power-on task named %q", info.Name)
		}
	})
}

func TestRewriteRequest(t *testing.T) {
	inventory := &inventoryTypes{byID: map[string]string{}}
	inventory.put(types.ManagedObjectReference{Type: "ClusterComputeResource", Value: "domain-c7"})
	inventory.put(types.ManagedObjectReference{Type: "HostSystem", Value: "host-9"})
	for in, want := range map[string]string{
		`<this type="ComputeResource">domain-c7</this>`:                `<this type="ClusterComputeResource">domain-c7</this>`,
		`<this type="ManagedEntity">host-9</this>`:                     `<this type="HostSystem">host-9</this>`,
		`<this type="HostSystem">domain-c7</this>`:                     `<this type="HostSystem">domain-c7</this>`,
		`<this type="ComputeResource">domain-c99</this>`:               `<this type="ComputeResource">domain-c99</this>`,
		`<obj type="VmwareDistributedVirtualSwitch">dvs-1</obj>`:       `<obj type="DistributedVirtualSwitch">dvs-1</obj>`,
		`<type>VmwareDistributedVirtualSwitch</type><path>name</path>`: `<type>DistributedVirtualSwitch</type><path>name</path>`,
		`<name>VmwareDistributedVirtualSwitch-docs</name>`:             `<name>VmwareDistributedVirtualSwitch-docs</name>`,
	} {
		if got := string(inventory.rewriteRequest([]byte(in))); got != want {
			t.Errorf("%s\n got %s\nwant %s", in, got, want)
		}
	}
	inventory.remove(types.ManagedObjectReference{Type: "HostSystem", Value: "host-9"})
	if _, ok := inventory.own("ManagedEntity", "host-9"); ok {
		t.Error("a removed object is still known")
	}
	// A removal under another type (an id the simulator reused) keeps the entry.
	inventory.remove(types.ManagedObjectReference{Type: "Datastore", Value: "domain-c7"})
	if own, ok := inventory.own("ComputeResource", "domain-c7"); !ok || own != "ClusterComputeResource" {
		t.Errorf("own %q %v", own, ok)
	}
}

func TestRewriteResponse(t *testing.T) {
	in := `<returnval type="DistributedVirtualSwitch">dvs-1</returnval><type>DistributedVirtualSwitch</type><name>my DistributedVirtualSwitch</name>`
	want := `<returnval type="VmwareDistributedVirtualSwitch">dvs-1</returnval><type>VmwareDistributedVirtualSwitch</type><name>my DistributedVirtualSwitch</name>`
	if got := string(rewriteResponse([]byte(in))); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// sdkFilter hands the SDK handler the rewritten request and sends its answer rewritten, with the
// rewritten length and the handler's status and headers.
func TestSDKFilter(t *testing.T) {
	var seen string
	sdk := func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen = string(b)
		if r.ContentLength != int64(len(b)) {
			t.Errorf("request length %d, body %d bytes", r.ContentLength, len(b))
		}
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `<obj type="DistributedVirtualSwitch">dvs-1</obj>`)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/sdk", strings.NewReader(`<obj type="VmwareDistributedVirtualSwitch">dvs-1</obj>`))
	sdkFilter(sdk, simulator.NewRegistry()).ServeHTTP(rec, req)
	if seen != `<obj type="DistributedVirtualSwitch">dvs-1</obj>` {
		t.Errorf("handler saw %s", seen)
	}
	body := rec.Body.String()
	if body != `<obj type="VmwareDistributedVirtualSwitch">dvs-1</obj>` || rec.Code != http.StatusInternalServerError ||
		rec.Header().Get("Content-Type") != "text/xml" || rec.Header().Get("Content-Length") != strconv.Itoa(len(body)) {
		t.Errorf("answer %d %v %s", rec.Code, rec.Header(), body)
	}
}
