package connectorspec

import (
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// Catalog indexes loaded specs by id and version so that flows and
// compensations can refer to connectors as "id@range".
type Catalog struct {
	byID map[string][]*Spec
}

// NewCatalog returns an empty catalogue.
func NewCatalog() *Catalog { return &Catalog{byID: map[string][]*Spec{}} }

// Add registers a spec. A spec with the same id and version as one already
// present replaces nothing and is reported as an error.
func (c *Catalog) Add(s *Spec) error {
	for _, have := range c.byID[s.ID] {
		if have.Version == s.Version {
			return fmt.Errorf("connector %s@%s is defined twice: %s and %s", s.ID, s.Version, have.File, s.File)
		}
	}
	c.byID[s.ID] = append(c.byID[s.ID], s)
	return nil
}

// Specs returns every spec, ordered by id then version.
func (c *Catalog) Specs() []*Spec {
	var out []*Spec
	for _, id := range sortedKeys(c.byID) {
		vs := append([]*Spec(nil), c.byID[id]...)
		sort.Slice(vs, func(i, j int) bool { return vs[i].Version < vs[j].Version })
		out = append(out, vs...)
	}
	return out
}

// Resolve returns the highest version of the connector named by ref
// ("payments.charge", "payments.charge@^1.2" or "payments.charge@1.2.0").
func (c *Catalog) Resolve(ref string) (*Spec, error) {
	id, rng, hasRange := strings.Cut(ref, "@")
	cands := c.byID[id]
	if len(cands) == 0 {
		return nil, fmt.Errorf("no connector with id %q is known", id)
	}
	var cons *semver.Constraints
	if hasRange {
		var err error
		if cons, err = semver.NewConstraint(rng); err != nil {
			return nil, fmt.Errorf("invalid version range %q: %v", rng, err)
		}
	}
	var best *Spec
	var bestV *semver.Version
	var seen []string
	for _, s := range cands {
		v, err := semver.NewVersion(s.Version)
		if err != nil {
			continue
		}
		seen = append(seen, s.Version)
		if cons != nil && !cons.Check(v) {
			continue
		}
		if bestV == nil || v.GreaterThan(bestV) {
			best, bestV = s, v
		}
	}
	if best == nil {
		sort.Strings(seen)
		return nil, fmt.Errorf("no version of %s satisfies %q (have %s)", id, rng, strings.Join(seen, ", "))
	}
	return best, nil
}
