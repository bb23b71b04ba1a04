package bridge

import "fmt"

// RoutesApart refuses routes that are to run side by side in one process
// (mqb run with several route files) when two of them write to one spool,
// drop zone or file, or read one spool or keep one drop-zone state file.
// Each of those takes a claim or a lock that excludes the other, so the
// second route would only fail once the first had started. names[i] is
// routes[i]'s name, for the message. One route reading what another
// writes is a pipeline, and allowed.
func RoutesApart(names []string, routes []*Route) error {
	writers, readers := map[string]routeEnd{}, map[string]routeEnd{}
	for i, r := range routes {
		for _, end := range []routeEnd{
			{names[i], "output", r.Target}, {names[i], "dead_letter", r.DeadLetter},
		} {
			if err := end.claim(writers, "write to", "takes one writer at a time"); err != nil {
				return err
			}
		}
		in := routeEnd{names[i], "input", r.Source}
		if sk, ok := r.Source.(StateKeeper); ok {
			in = routeEnd{names[i], "input's state file", statePlace{sk}}
		}
		if err := in.claim(readers, "read", "takes one reader at a time"); err != nil {
			return err
		}
	}
	return nil
}

// routeEnd is one end of a named route.
type routeEnd struct {
	route, side string
	end         any // a Source or Target; nil for a dead_letter not set
}

// claim records e's place in taken, or returns a configuration error when
// another route's end holds it already.
func (e routeEnd) claim(taken map[string]routeEnd, verb, rule string) error {
	p, ok := e.end.(Placed)
	if !ok {
		return nil
	}
	ns, path := p.Place()
	key := ns + "\x00" + samePlaceKey(ns, path)
	prev, held := taken[key]
	if !held {
		taken[key] = e
		return nil
	}
	return &ConfigError{Err: fmt.Errorf("%w: route %s's %s and route %s's %s both %s %s, which %s: give each route its own",
		ErrSamePlace, prev.route, prev.side, e.route, e.side, verb, samePlaceKey(ns, path), rule)}
}
