package auth

import "github.com/flightns/flightns/nserror"

// allow fails with PermissionDenied unless p's catalog-wide role reaches
// need: what the surfaces' checks come down to for a principal without
// grants (the service checks grants too: Grants.RoleOn).
func allow(p Principal, need Role, what string) error {
	if p.Role >= need {
		return nil
	}
	return nserror.New(nserror.PermissionDenied, "%s needs the %s role; %q has %s", what, need, p.Name, p.Role)
}
