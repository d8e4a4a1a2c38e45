package registry

import (
	"fmt"
	"slices"
	"strings"

	"golang.org/x/mod/module"

	"github.com/flowgen-dev/flowgen/artifact"
	"github.com/flowgen-dev/flowgen/registry/api"
)

// Module paths belong to namespaces. Namespace N owns the module paths
// under artifact.ModulePrefix/N (where flowgen package puts a connector
// whose id starts with N), and those under the prefixes Config.
// ModulePrefixes gives it; nothing is published under a prefix a
// namespace does not own, so no tenant can take the module path a
// consumer expects another's connector at.

// defaultPrefix is the module path prefix every namespace owns.
func defaultPrefix(namespace string) string {
	return artifact.ModulePrefix + "/" + namespace
}

// underPrefix reports whether mod is prefix or a path below it.
func underPrefix(mod, prefix string) bool {
	return mod == prefix || strings.HasPrefix(mod, prefix+"/")
}

// ownedPrefixes is what namespace owns: its default prefix, then the
// configured ones.
func (s *Server) ownedPrefixes(namespace string) []string {
	return append([]string{defaultPrefix(namespace)}, s.cfg.ModulePrefixes[namespace]...)
}

// checkModulePrefix refuses a module path outside every prefix the
// namespace owns.
func (s *Server) checkModulePrefix(namespace, mod string) error {
	owned := s.ownedPrefixes(namespace)
	if slices.ContainsFunc(owned, func(p string) bool { return underPrefix(mod, p) }) {
		return nil
	}
	return api.CodeModuleTaken.Errorf("module %s is outside what namespace %q owns (%s): package the connector under one of them, or have an admin give the namespace that prefix (registryd serve --module-prefix %s=PREFIX)",
		mod, namespace, strings.Join(owned, ", "), namespace)
}

// checkModulePrefixes refuses configured prefixes that are not module
// paths, or that overlap another namespace's (configured or default):
// one module path has one owner.
func checkModulePrefixes(prefixes map[string][]string) error {
	type owned struct{ namespace, prefix string }
	var all []owned
	for ns, ps := range prefixes {
		if !namespaceRE.MatchString(ns) {
			return fmt.Errorf("module prefix for %q: not a namespace name", ns)
		}
		for _, p := range ps {
			if err := module.CheckImportPath(p); err != nil {
				return fmt.Errorf("module prefix %s=%s: %w", ns, p, err)
			}
			// A prefix above the default ones would take every namespace's
			// (compared without case, as below).
			lp := strings.ToLower(p)
			if underPrefix(artifact.ModulePrefix, lp) {
				return fmt.Errorf("module prefix %s=%s covers every namespace's %s/NAMESPACE", ns, p, artifact.ModulePrefix)
			}
			if rest, ok := strings.CutPrefix(lp, artifact.ModulePrefix+"/"); ok && strings.SplitN(rest, "/", 2)[0] != ns {
				return fmt.Errorf("module prefix %s=%s lies in namespace %q's %s", ns, p, strings.SplitN(rest, "/", 2)[0], defaultPrefix(strings.SplitN(rest, "/", 2)[0]))
			}
			all = append(all, owned{ns, p})
		}
	}
	for i, a := range all {
		for _, b := range all[i+1:] {
			// Compared without case: paths that differ only in case are
			// one owner's to a reader, and to case-folding file systems.
			la, lb := strings.ToLower(a.prefix), strings.ToLower(b.prefix)
			if a.namespace != b.namespace && (underPrefix(la, lb) || underPrefix(lb, la)) {
				return fmt.Errorf("module prefixes %s=%s and %s=%s overlap: a module path has one owner", a.namespace, a.prefix, b.namespace, b.prefix)
			}
		}
	}
	return nil
}
