package api

// NamespaceGrantRequest gives (CreateNamespaceGrant) or takes away
// (DeleteNamespaceGrant) a role on namespace ID and all it holds, to a
// principal or to a group (exactly one of them).
type NamespaceGrantRequest struct {
	Common
	ID        ID     `json:"id"`
	Principal string `json:"principal,omitempty"`
	Group     string `json:"group,omitempty"`
	// Role is read, write or admin (CreateNamespaceGrant only).
	Role string `json:"role,omitempty"`
}

// ListNamespaceGrantsRequest lists the grants on namespace ID and inside it.
type ListNamespaceGrantsRequest struct {
	Common
	ID ID `json:"id"`
}

// NamespaceGrant is one grant as the operations answer it.
type NamespaceGrant struct {
	Namespace []string `json:"namespace"`
	Principal string   `json:"principal,omitempty"`
	Group     string   `json:"group,omitempty"`
	Role      string   `json:"role"`
}

// ListNamespaceGrantsResponse holds grants, by namespace.
type ListNamespaceGrantsResponse struct {
	Grants []NamespaceGrant `json:"grants"`
}
