package auth

import (
	"fmt"
	"slices"
	"strings"
)

// A Grant gives a role on a namespace's subtree (the namespace, every
// namespace and table inside it, their versions) to one principal, by
// name, or to every principal of a group. Namespace nil or empty is the
// root: the whole catalog.
type Grant struct {
	Namespace []string `json:"namespace"`
	Principal string   `json:"principal,omitempty"`
	Group     string   `json:"group,omitempty"`
	Role      Role     `json:"role"`
}

// Check reports a grant that names no one or two kinds of grantee, an
// empty name in its namespace, or no role.
func (g Grant) Check() error {
	switch {
	case (g.Principal == "") == (g.Group == ""):
		return fmt.Errorf("auth: a grant names one principal or one group")
	case g.Role <= None || g.Role > Admin:
		return fmt.Errorf("auth: a grant gives read, write or admin, not %s", g.Role)
	}
	for _, n := range g.Namespace {
		if n == "" {
			return fmt.Errorf("auth: the namespace of a grant has an empty name")
		}
	}
	return nil
}

// Same reports whether g and o give a role to the same grantee on the
// same namespace (whatever the roles).
func (g Grant) Same(o Grant) bool {
	return g.Principal == o.Principal && g.Group == o.Group && slices.Equal(g.Namespace, o.Namespace)
}

// String is the grant as the CLI and the audit show it.
func (g Grant) String() string {
	who := "principal " + g.Principal
	if g.Group != "" {
		who = "group " + g.Group
	}
	ns := "the whole catalog"
	if len(g.Namespace) > 0 {
		ns = fmt.Sprintf("namespace %q", strings.Join(g.Namespace, "$"))
	}
	return fmt.Sprintf("%s on %s to %s", g.Role, ns, who)
}

// MarshalText and UnmarshalText write a Role as its name.
func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a role's name (ParseRole).
func (r *Role) UnmarshalText(b []byte) error {
	v, err := ParseRole(string(b))
	*r = v
	return err
}

// Grants are a catalog's grants.
type Grants []Grant

// holds reports whether g applies to p.
func (g Grant) holds(p Principal) bool {
	if g.Principal != "" {
		return g.Principal == p.Name
	}
	return slices.Contains(p.Groups, g.Group)
}

// Within reports whether object id is namespace ns or inside it.
func Within(id, ns []string) bool {
	return len(id) >= len(ns) && slices.Equal(id[:len(ns)], ns)
}

// RoleOn is p's role on object id: its catalog-wide role, or the highest
// that a grant to it (or to one of its groups) gives on a namespace that
// is id or holds it.
func (gs Grants) RoleOn(p Principal, id []string) Role {
	r := p.Role
	for _, g := range gs {
		if g.Role > r && g.holds(p) && Within(id, g.Namespace) {
			r = g.Role
		}
	}
	return r
}

// Reaches reports whether p holds role need anywhere: catalog-wide, or by
// a grant.
func (gs Grants) Reaches(p Principal, need Role) bool {
	if p.Role >= need {
		return true
	}
	for _, g := range gs {
		if g.Role >= need && g.holds(p) {
			return true
		}
	}
	return false
}

// Readable is what p may read: everything (all), or the subtrees of
// namespaces (each once, none inside another).
func (gs Grants) Readable(p Principal) (all bool, subtrees [][]string) {
	if p.Role >= Read {
		return true, nil
	}
	for _, g := range gs {
		if !g.holds(p) || g.Role < Read {
			continue
		}
		if len(g.Namespace) == 0 {
			return true, nil
		}
		subtrees = append(subtrees, g.Namespace)
	}
	slices.SortFunc(subtrees, func(a, b []string) int { return slices.Compare(a, b) })
	out := subtrees[:0]
	for _, s := range subtrees {
		if len(out) == 0 || !Within(s, out[len(out)-1]) {
			out = append(out, s)
		}
	}
	return false, out
}

// Leads reports whether namespace id holds a subtree p may read without
// being readable itself: p may see that it exists and list its way down
// to what it was granted, and nothing more.
func (gs Grants) Leads(p Principal, id []string) bool {
	for _, g := range gs {
		if g.holds(p) && g.Role >= Read && len(g.Namespace) > len(id) && Within(g.Namespace, id) {
			return true
		}
	}
	return false
}
