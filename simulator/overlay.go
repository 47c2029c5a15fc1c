package main

import (
	"slices"
	"sync"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// Methods added to objects whose Go type the simulator's own code type-asserts (folders and
// switches), so the stored object cannot be replaced by a wrapper.
//
// The registry's Handler picks the object that answers a call, but a logged-in session's own
// registry is asked after it and falls back to the global one. So the Handler puts the wrapper
// (which embeds the stored object and so reads and answers everything else as it does) into
// the caller's session registry: that session's calls and property reads of the object go
// through the wrapper from then on. A switch's wrapper removes itself when the switch is
// destroyed.
type overlay struct {
	wrap    func(mo.Reference) mo.Reference
	methods []string // SOAP names of the methods the wrapper adds or replaces
}

type overlays map[string]overlay

func (o overlays) handler(ctx *simulator.Context, m *simulator.Method) (mo.Reference, types.BaseMethodFault) {
	entry, ok := o[m.This.Type]
	if !ok || ctx.Session == nil || !slices.Contains(entry.methods, m.Name) {
		return nil, nil
	}
	obj := ctx.Map.Get(m.This)
	if obj == nil {
		ctx.Session.Remove(ctx, m.This) // a wrapper of an object that is gone
		return nil, nil                 // the simulator answers ManagedObjectNotFound
	}
	if _, shadowed := ctx.Session.Registry.Get(m.This).(interface{ overlaid() }); shadowed {
		return nil, nil
	}
	wrapper := entry.wrap(obj)
	if wrapper == nil {
		return nil, nil
	}
	ctx.Session.Put(wrapper)
	wrappers.add(m.This, ctx.Session.Registry)
	return wrapper, nil
}

// wrapperSessions: the session registries holding a wrapper of each object. A session reads an
// object through its wrapper, so when any session removes the object (inventoryHooks), every
// wrapper of it goes too; else the other sessions would still find it.
type wrapperSessions struct {
	mu sync.Mutex
	by map[types.ManagedObjectReference][]*simulator.Registry
}

var wrappers = &wrapperSessions{by: map[types.ManagedObjectReference][]*simulator.Registry{}}

func (w *wrapperSessions) add(ref types.ManagedObjectReference, session *simulator.Registry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !slices.Contains(w.by[ref], session) {
		w.by[ref] = append(w.by[ref], session)
	}
}

func (w *wrapperSessions) drop(ctx *simulator.Context, ref types.ManagedObjectReference) {
	w.mu.Lock()
	sessions := w.by[ref]
	delete(w.by, ref)
	w.mu.Unlock()
	for _, session := range sessions {
		session.Remove(ctx, ref)
	}
}
