package main

import (
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// propertyCollector answers WaitForUpdatesEx for callers that wait on one collector at the same
// time, as pulumi-vsphere does: govmomi waits for each task with a filter on the session's
// collector, one goroutine per task. The simulator's own wait hands the collector's pending
// changes to whichever call takes them first (the others wait until their deadline) and fails
// when another caller destroys a filter meanwhile.
//
// Here a version names a snapshot of every filter's objects and properties. A call diffs the
// snapshot of the version it gives against the current state, and returns at once when they
// differ, else when the inventory next changes (or at its deadline). Concurrent calls with the
// same version get the same updates; none takes them from another.
type propertyCollector struct {
	simulator.PropertyCollector

	mu        sync.Mutex
	versions  map[string]snapshot // recent versions only
	order     []string
	next      int
	cancelled chan struct{} // closed by CancelWaitForUpdates
}

// snapshot: filter -> object -> property -> value.
type snapshot map[types.ManagedObjectReference]map[types.ManagedObjectReference]objectState

type objectState struct {
	props   map[string]types.AnyType
	missing []types.MissingProperty
}

const keptVersions = 256

// changes is broadcast on every change of the inventory (inventoryHooks).
var changes = newBroadcast()

type broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

func newBroadcast() *broadcast { return &broadcast{ch: make(chan struct{})} }

func (b *broadcast) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ch
}

func (b *broadcast) notify() {
	b.mu.Lock()
	close(b.ch)
	b.ch = make(chan struct{})
	b.mu.Unlock()
}

func (pc *propertyCollector) cancelChannel() chan struct{} {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.cancelled == nil {
		pc.cancelled = make(chan struct{})
	}
	return pc.cancelled
}

func (pc *propertyCollector) CancelWaitForUpdates(ctx *simulator.Context, req *types.CancelWaitForUpdates) soap.HasFault {
	pc.mu.Lock()
	if pc.cancelled != nil {
		close(pc.cancelled)
		pc.cancelled = nil
	}
	pc.mu.Unlock()
	return &methods.CancelWaitForUpdatesBody{Res: &types.CancelWaitForUpdatesResponse{}}
}

func (pc *propertyCollector) WaitForUpdates(ctx *simulator.Context, req *types.WaitForUpdates) soap.HasFault {
	body := &methods.WaitForUpdatesBody{}
	for { // the legacy call has no deadline: it returns when something changed
		set, fault := pc.wait(ctx, req.Version, nil)
		if fault != nil {
			body.Fault_ = simulator.Fault("", fault)
			return body
		}
		if set != nil {
			body.Res = &types.WaitForUpdatesResponse{Returnval: *set}
			return body
		}
	}
}

func (pc *propertyCollector) WaitForUpdatesEx(ctx *simulator.Context, req *types.WaitForUpdatesEx) soap.HasFault {
	body := &methods.WaitForUpdatesExBody{}
	var maxWait *int32
	if req.Options != nil {
		maxWait = req.Options.MaxWaitSeconds
	}
	set, fault := pc.wait(ctx, req.Version, maxWait)
	if fault != nil {
		body.Fault_ = simulator.Fault("", fault)
		return body
	}
	body.Res = &types.WaitForUpdatesExResponse{Returnval: set}
	return body
}

// longestWait bounds one call without a deadline; the client calls again with the same version.
const longestWait = 60 * time.Second

func (pc *propertyCollector) wait(ctx *simulator.Context, version string, maxWait *int32) (*types.UpdateSet, types.BaseMethodFault) {
	pc.mu.Lock()
	base, known := pc.versions[version]
	pc.mu.Unlock()
	if version != "" && !known {
		return nil, &types.InvalidCollectorVersion{}
	}
	limit := longestWait
	if maxWait != nil && time.Duration(*maxWait)*time.Second < limit {
		limit = time.Duration(*maxWait) * time.Second
	}
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	cancelled := pc.cancelChannel()
	for {
		changed := changes.wait() // before reading, so no change is missed
		now := pc.current(ctx)
		if filters := diff(base, now); len(filters) > 0 {
			return &types.UpdateSet{Version: pc.remember(now), FilterSet: filters}, nil
		}
		select {
		case <-changed:
		case <-deadline.C:
			return nil, nil
		case <-cancelled:
			return nil, &types.RequestCanceled{}
		case <-ctx.Done():
			return nil, &types.RequestCanceled{}
		}
	}
}

func (pc *propertyCollector) remember(s snapshot) string {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.versions == nil {
		pc.versions = map[string]snapshot{}
	}
	pc.next++
	v := strconv.Itoa(pc.next)
	pc.versions[v] = s
	pc.order = append(pc.order, v)
	if len(pc.order) > keptVersions {
		delete(pc.versions, pc.order[0])
		pc.order = pc.order[1:]
	}
	return v
}

// current reads every filter of this collector as RetrievePropertiesEx would.
func (pc *propertyCollector) current(ctx *simulator.Context) snapshot {
	now := snapshot{}
	for _, ref := range append([]types.ManagedObjectReference(nil), pc.Filter...) {
		filter, ok := ctx.Session.Get(ref).(*simulator.PropertyFilter)
		if !ok {
			continue // destroyed meanwhile
		}
		objects := map[types.ManagedObjectReference]objectState{}
		res, ok := pc.PropertyCollector.RetrievePropertiesEx(ctx, &types.RetrievePropertiesEx{
			This: pc.Self, SpecSet: []types.PropertyFilterSpec{filter.Spec},
		}).(*methods.RetrievePropertiesExBody)
		if ok && res.Res != nil && res.Res.Returnval != nil {
			for _, content := range res.Res.Returnval.Objects {
				state := objectState{props: map[string]types.AnyType{}, missing: content.MissingSet}
				for _, p := range content.PropSet {
					state.props[p.Name] = p.Val
				}
				objects[content.Obj] = state
			}
		}
		now[ref] = objects
	}
	return now
}

// diff is the updates that take a client from `old` to `now`.
func diff(old, now snapshot) []types.PropertyFilterUpdate {
	var updates []types.PropertyFilterUpdate
	for filter, objects := range now {
		before := old[filter]
		var set []types.ObjectUpdate
		for obj, state := range objects {
			prev, seen := before[obj]
			update := types.ObjectUpdate{Obj: obj, Kind: types.ObjectUpdateKindModify, MissingSet: state.missing}
			if !seen {
				update.Kind = types.ObjectUpdateKindEnter
			}
			for name, val := range state.props {
				if pv, ok := prev.props[name]; seen && ok && reflect.DeepEqual(pv, val) {
					continue
				}
				update.ChangeSet = append(update.ChangeSet, types.PropertyChange{Name: name, Op: types.PropertyChangeOpAssign, Val: val})
			}
			for name := range prev.props {
				if _, ok := state.props[name]; !ok {
					update.ChangeSet = append(update.ChangeSet, types.PropertyChange{Name: name, Op: types.PropertyChangeOpRemove})
				}
			}
			if !seen || len(update.ChangeSet) > 0 || !reflect.DeepEqual(prev.missing, state.missing) {
				set = append(set, update)
			}
		}
		for obj := range before {
			if _, ok := objects[obj]; !ok {
				set = append(set, types.ObjectUpdate{Obj: obj, Kind: types.ObjectUpdateKindLeave})
			}
		}
		if len(set) > 0 {
			updates = append(updates, types.PropertyFilterUpdate{Filter: filter, ObjectSet: set})
		}
	}
	return updates
}
