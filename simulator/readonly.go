package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// A second login whose role is vCenter's Read-only: it may log in, look the inventory up and
// read every property, and every method that would change the inventory answers NoPermission,
// as vCenter answers a user without the privilege. It is what a pull request's preview is given.
//
//	lab-vcsim -username lab-admin -password A -readonly-username lab-reader -readonly-password B
//
// The limits hold on the SOAP API (/sdk), where the inventory lives. The vAPI REST endpoints
// (/rest, /api: tags, content libraries) accept the same logins unrestricted; the program uses
// neither for its inventory.
type readOnlyLogin struct {
	user, password string
}

var readOnly readOnlyLogin

func (r *readOnlyLogin) flags(fs *flag.FlagSet) {
	fs.StringVar(&r.user, "readonly-username", "", "Login username whose role is Read-only (needs -username)")
	fs.StringVar(&r.password, "readonly-password", "", "Password of -readonly-username")
}

// check is called once the flags are parsed.
func (r *readOnlyLogin) check(admin string) error {
	switch {
	case r.user == "" && r.password == "":
		return nil
	case r.user == "" || r.password == "":
		return fmt.Errorf("-readonly-username and -readonly-password go together")
	case admin == "":
		return fmt.Errorf("-readonly-username needs -username (without it the simulator accepts any login)")
	case r.user == admin:
		return fmt.Errorf("-readonly-username %q is also -username", r.user)
	case strings.Contains(r.user, "@"):
		// the simulator compares the URL-escaped form of the name, so an SSO domain never matches
		return fmt.Errorf("-readonly-username %q: no '@' (the simulator cannot match it)", r.user)
	}
	return nil
}

// install lets the read-only login in beside the admin (admin, adminPassword: -username,
// -password) and puts the permission check in front of the registry's method handler.
func (r *readOnlyLogin) install(model *simulator.Model, admin, adminPassword string) {
	if r.user == "" {
		return
	}
	sessions := model.Map().SessionManager()
	sessions.ValidLogin = func(req *types.Login) bool {
		return (req.UserName == admin && req.Password == adminPassword) ||
			(req.UserName == r.user && req.Password == r.password)
	}
	registry := model.Service.Context.Map
	next := registry.Handler
	registry.Handler = func(ctx *simulator.Context, m *simulator.Method) (mo.Reference, types.BaseMethodFault) {
		if ctx.Session != nil && ctx.Session.UserName == r.user && !readMethod(m.Name) {
			// The fault vCenter sends a user whose role lacks the privilege; govmomi's own fault
			// injection gives the same privilege id (govmomi simulator/fault_injection.go).
			return nil, &types.NoPermission{Object: &m.This, PrivilegeId: "System.Modify"}
		}
		if next == nil {
			return nil, nil
		}
		return next(ctx, m)
	}
}

// Methods that change nothing in the inventory: the session's own, the property collector's and
// the views' (per-session objects vCenter lets any role create), and look-ups.
var readMethods = map[string]bool{
	"Login": true, "Logout": true, "SessionIsActive": true, "SetLocale": true, "CurrentTime": true,
	"AcquireCloneTicket": true, "CloneSession": true,
	"CreateFilter": true, "DestroyPropertyFilter": true, "CreatePropertyCollector": true,
	"DestroyPropertyCollector": true, "WaitForUpdates": true, "WaitForUpdatesEx": true,
	"CheckForUpdates": true, "CancelWaitForUpdates": true, "ContinueRetrievePropertiesEx": true,
	"CancelRetrievePropertiesEx": true,
	"CreateContainerView":        true, "CreateListView": true, "CreateListViewFromView": true,
	"CreateInventoryView": true, "DestroyView": true,
	"HasPrivilegeOnEntity": true, "HasPrivilegeOnEntities": true, "HasUserPrivilegeOnEntities": true,
}

// Name prefixes of the vSphere API's read methods (RetrieveProperties, QueryDvsByUuid,
// FindByInventoryPath, FetchUserPrivilegeOnEntities, ...); a *_Task method runs a task, which a
// Read-only role may not start.
var readPrefixes = []string{"Retrieve", "Query", "Find", "Fetch"}

func readMethod(name string) bool {
	if strings.HasSuffix(name, "_Task") {
		return false
	}
	if readMethods[name] {
		return true
	}
	for _, p := range readPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
