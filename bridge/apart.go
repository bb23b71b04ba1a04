package bridge

import (
	"fmt"
	"strings"
)

// SessionHolder is implemented by an end that holds, while connected, a
// session that one connection at a time may have: an MQTT client id on its
// broker, which the broker takes from the last holder whenever another
// connects with it, so two holders would throw each other off forever.
// NewRoute and RoutesApart refuse two ends with one session.
type SessionHolder interface {
	// Session returns the session's description, for messages, and the
	// key two sessions are compared by.
	Session() (what, key string)
}

// SessionKey is the key of a session named id on the broker at addr
// (host:port), loopback names alike (see Topic.Brokers).
func SessionKey(protocol, addr, id string) string {
	return protocol + "\x00" + brokerKey(addr) + "\x00" + id
}

// RoutesApart refuses routes that are to run side by side in one process
// (mqb run with several route files) when two of them write to one spool,
// drop zone or file, read one spool or standard input, keep one drop-zone
// state file or hold one session (SessionHolder): each takes a claim or a
// lock that excludes the other, so the second route would only fail once
// the first had started. It also refuses a route writing a file into
// another's spool or drop zone, and routes whose outputs lead back to
// their own input. names[i] is routes[i]'s name, for the messages. One
// route reading what another writes is a pipeline, and allowed.
func RoutesApart(names []string, routes []*Route) error {
	writers, readers, sessions := map[string]routeEnd{}, map[string]routeEnd{}, map[string]routeEnd{}
	for i, r := range routes {
		for _, end := range routeEnds(names[i], r.Source, r.Target, r.DeadLetter) {
			if err := end.holdSession(sessions); err != nil {
				return err
			}
		}
		for _, end := range writingEnds(names[i], r) {
			if _, shared := end.end.(SharedOutput); shared {
				continue
			}
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
	if err := noFileInOthersDirectory(names, routes); err != nil {
		return err
	}
	return noCycle(names, routes)
}

// noFileInOthersDirectory refuses a route that writes a file into a spool
// or drop zone of another route (see MessageDirectory), where it would be
// read as a message while it is still being written.
func noFileInOthersDirectory(names []string, routes []*Route) error {
	for i, r := range routes {
		for j, w := range routes {
			if i == j {
				continue
			}
			for _, dir := range routeEnds(names[i], r.Source, r.Target, r.DeadLetter) {
				for _, file := range writingEnds(names[j], w) {
					if err := fileInDirectory(dir.end, dir.name(), file.end, file.name(),
						"even while it is half written: give "+file.name()+" another path"); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// noCycle refuses routes whose outputs lead, through the others' inputs,
// back to their own input: every message would go round them forever.
// Spools, drop zones and files are followed, and outputs only: a dead
// letter fed back to an input is a redrive, made on purpose.
func noCycle(names []string, routes []*Route) error {
	readers := map[string][]int{} // place key → the routes that read it
	for i, r := range routes {
		if k, _, ok := placeKeyOf(r.Source); ok {
			readers[k] = append(readers[k], i)
		}
	}
	next := func(i int) []int {
		k, _, ok := placeKeyOf(routes[i].Target)
		if !ok {
			return nil
		}
		return readers[k]
	}
	for start := range routes {
		if cycle := cycleFrom(start, next); cycle != nil {
			var steps []string
			for k := 0; k+1 < len(cycle); k++ {
				_, out, _ := placeKeyOf(routes[cycle[k]].Target)
				steps = append(steps, fmt.Sprintf("route %s writes %s, which route %s reads", names[cycle[k]], out, names[cycle[k+1]]))
			}
			return &ConfigError{Err: fmt.Errorf("%w: the routes form a cycle (%s), so every message would go round them forever: break it",
				ErrSamePlace, strings.Join(steps, "; "))}
		}
	}
	return nil
}

// cycleFrom returns a path of route indexes from start back to start along
// next, or nil when there is none.
func cycleFrom(start int, next func(int) []int) []int {
	seen := map[int]bool{start: true}
	var walk func(path []int) []int
	walk = func(path []int) []int {
		for _, j := range next(path[len(path)-1]) {
			if j == start {
				return append(path, j)
			}
			if !seen[j] {
				seen[j] = true
				if found := walk(append(path, j)); found != nil {
					return found
				}
			}
		}
		return nil
	}
	return walk([]int{start})
}

// placeKeyOf returns, when x is Placed, the key its place is compared by
// across namespaces and the path it really is (samePlaceKey).
func placeKeyOf(x any) (key, real string, ok bool) {
	p, ok := x.(Placed)
	if !ok {
		return "", "", false
	}
	ns, path := p.Place()
	real = samePlaceKey(ns, path)
	return ns + "\x00" + real, real, true
}

// SharedOutput is implemented by a Placed target that routes of one run may
// share: standard output, to which each batch goes in one write. Its place
// still may not be both one route's output and its dead_letter.
type SharedOutput interface {
	Placed
	SharedByRoutes()
}

// routeEnd is one end of a named route.
type routeEnd struct {
	route, side string
	end         any // a Source or Target; nil for a dead_letter not set
}

// claim records e's place in taken, or returns a configuration error when
// another route's end holds it already.
func (e routeEnd) claim(taken map[string]routeEnd, verb, rule string) error {
	key, real, ok := placeKeyOf(e.end)
	if !ok {
		return nil
	}
	prev, held := taken[key]
	if !held {
		taken[key] = e
		return nil
	}
	return &ConfigError{Err: fmt.Errorf("%w: %s and %s both %s %s, which %s: give each route its own",
		ErrSamePlace, prev.name(), e.name(), verb, real, rule)}
}

// writingEnds names the ends of route r, called name, that write: its
// output and its dead_letter (nil when not set).
func writingEnds(name string, r *Route) []routeEnd {
	return []routeEnd{{name, "output", r.Target}, {name, "dead_letter", r.DeadLetter}}
}

// routeEnds names the three ends of route name (dead may be nil).
func routeEnds(name string, src Source, tgt, dead Target) []routeEnd {
	return []routeEnd{{name, "input", src}, {name, "output", tgt}, {name, "dead_letter", dead}}
}

// holdSession records e's session in held, or returns a configuration
// error when another end holds it already.
func (e routeEnd) holdSession(held map[string]routeEnd) error {
	sh, ok := e.end.(SessionHolder)
	if !ok {
		return nil
	}
	what, key := sh.Session()
	prev, dup := held[key]
	if !dup {
		held[key] = e
		return nil
	}
	return &ConfigError{Err: fmt.Errorf("%w: %s and %s both connect as %s, which the broker gives one connection at a time, so each would throw the other off: give one of them another client_id",
		ErrSamePlace, prev.name(), e.name(), what)}
}

// name is "the input", or "route a's input" when routes are compared.
func (e routeEnd) name() string {
	if e.route == "" {
		return "the " + e.side
	}
	return "route " + e.route + "'s " + e.side
}

// checkSessions refuses a route two of whose ends hold one session.
func checkSessions(src Source, tgt, dead Target) error {
	held := map[string]routeEnd{}
	for _, e := range routeEnds("", src, tgt, dead) {
		if err := e.holdSession(held); err != nil {
			return err
		}
	}
	return nil
}
