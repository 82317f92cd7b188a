package namespace

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flightns/flightns/api"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/manifesttable"
	"github.com/flightns/flightns/nserror"
)

// Retention. A table's old versions are cleaned up by flightns when a
// retention policy applies to it: properties of the table, or of a
// namespace above it, the nearest one setting each property winning (a
// table inherits from its namespace, which inherits from its parent). No
// property anywhere: no cleanup (the default: nothing is deleted that the
// user did not ask for).
//
//	flightns.cleanup.older_than       keep versions younger than this: a Go
//	                                  duration ("36h") or days ("7d"); "off"
//	                                  stops what a namespace above set
//	flightns.cleanup.retain_versions  keep at least the last K versions of
//	                                  each branch (K ≥ 1; default 1)
//
// The latest version of every branch, every tagged version and every
// version a branch was forked from are always kept.
const (
	PropCleanupOlderThan      = "flightns.cleanup.older_than"
	PropCleanupRetainVersions = "flightns.cleanup.retain_versions"
	propCleanupPrefix         = "flightns.cleanup."
)

// maxRetainVersions bounds retain_versions (a larger K keeps everything
// any table here will have).
const maxRetainVersions = 1 << 30

// Retention is the policy that applies to a table.
type Retention struct {
	// OlderThan: versions committed longer ago than this may go.
	OlderThan time.Duration
	// RetainVersions: the last K versions of each branch always stay.
	RetainVersions int
	// From is the id of the table or namespace whose property set
	// OlderThan ("" for the root namespace).
	From string
}

// parseAge reads an older_than value: a Go duration or a number of days
// ("7d"), positive; "off" is 0.
func parseAge(v string) (time.Duration, error) {
	if v == "off" {
		return 0, nil
	}
	bad := nserror.New(nserror.InvalidInput, "property %s: %q is not a positive duration (\"36h\", \"7d\") or \"off\"", PropCleanupOlderThan, v)
	var d time.Duration
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 32)
		if err != nil || n <= 0 || n > 100*365 {
			return 0, bad
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			return 0, bad
		}
	}
	if d <= 0 {
		return 0, bad
	}
	return d, nil
}

// parseRetain reads a retain_versions value: an integer ≥ 1 (0 would
// prune the latest).
func parseRetain(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxRetainVersions {
		return 0, nserror.New(nserror.InvalidInput, "property %s: %q is not a whole number from 1 to %d (the latest version is always kept)", PropCleanupRetainVersions, v, maxRetainVersions)
	}
	return n, nil
}

// mayRetain refuses properties that set a cleanup policy (any
// flightns.cleanup. key) unless the caller of ctx administers t (the
// object, or for one the request makes, the namespace it goes in): a
// policy has the maintainer delete the table's old versions, which only
// an admin may have done (CleanupTable). A writer may declare, register
// and overwrite without them.
func (s *Service) mayRetain(ctx context.Context, t target, props api.Properties) error {
	p, ok := auth.PrincipalFrom(ctx)
	if !ok || p.Role >= auth.Admin {
		return nil
	}
	for k := range props {
		if strings.HasPrefix(k, propCleanupPrefix) {
			if err := s.authorize(ctx, p, auth.Admin, t); err != nil {
				return fmt.Errorf("property %s sets a cleanup policy, which needs the admin role: %w", k, err)
			}
			return nil
		}
	}
	return nil
}

// checkRetentionProps refuses cleanup properties flightns does not know
// or whose values it cannot read.
func checkRetentionProps(p api.Properties) error {
	for k, v := range p {
		switch {
		case !strings.HasPrefix(k, propCleanupPrefix):
		case k == PropCleanupOlderThan:
			if _, err := parseAge(v); err != nil {
				return err
			}
		case k == PropCleanupRetainVersions:
			if _, err := parseRetain(v); err != nil {
				return err
			}
		default:
			return nserror.New(nserror.InvalidInput, "property %q: flightns's cleanup properties are %s and %s", k, PropCleanupOlderThan, PropCleanupRetainVersions)
		}
	}
	return nil
}

// RetentionOf is the retention policy of table id, inherited from its
// namespaces; ok is false when none applies.
func (vs Versions) RetentionOf(ctx context.Context, id api.ID) (Retention, bool, error) {
	s := vs.s
	if err := tableID(id); err != nil {
		return Retention{}, false, err
	}
	r, found, err := s.row(ctx, manifesttable.TypeTable, id)
	if err != nil {
		return Retention{}, false, err
	}
	if !found {
		return Retention{}, false, nserror.New(nserror.TableNotFound, "table %q does not exist", id.String())
	}
	var pol Retention
	haveAge, haveRetain := false, false
	take := func(p api.Properties, from string) {
		if v, ok := p[PropCleanupOlderThan]; ok && !haveAge {
			pol.OlderThan, _ = parseAge(v) // checked when it was set
			pol.From, haveAge = from, true
		}
		if v, ok := p[PropCleanupRetainVersions]; ok && !haveRetain {
			pol.RetainVersions, _ = parseRetain(v)
			haveRetain = true
		}
	}
	take(propsOf(r), id.String())
	for ns := id.Parent(); !ns.IsRoot() && (!haveAge || !haveRetain); ns = ns.Parent() {
		nr, ok, err := s.row(ctx, manifesttable.TypeNamespace, ns)
		if err != nil {
			return Retention{}, false, err
		}
		if ok {
			take(propsOf(nr), ns.String())
		}
	}
	if pol.RetainVersions < 1 {
		pol.RetainVersions = 1
	}
	return pol, pol.OlderThan > 0, nil
}
