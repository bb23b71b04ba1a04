package bridge

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
)

// Topic is where a broker end (MQTT, NATS) publishes or subscribes.
type Topic struct {
	// Protocol names the kind of broker ("mqtt", "nats"): topics of two
	// protocols are never compared.
	Protocol string
	// Brokers are the host:port addresses the end connects to. Two ends
	// that name one of them alike share a broker; loopback names (localhost,
	// 127.0.0.1, ::1) are alike. Two servers of one cluster are not.
	Brokers []string
	// Name is the topic or subject: for a source, the filter it subscribes
	// to, wildcards and all.
	Name string
	// Scope narrows where Name lives, when the end names it: a NATS
	// JetStream stream. Empty when not named.
	Scope string
}

// TopicPlaced is implemented by a broker source or target. NewRoute refuses
// a route whose output and dead_letter publish to one topic of one broker.
type TopicPlaced interface {
	TopicPlace() Topic
}

// Subscriber is implemented by a broker source. NewRoute refuses a route
// whose input would receive what its output or dead_letter publishes on the
// same broker: the route would read back every message it writes, forever.
type Subscriber interface {
	TopicPlaced
	// Receives reports whether a message published to t (of the same
	// protocol, on a shared broker) reaches the source.
	Receives(t Topic) bool
}

// checkTopics refuses a route whose input subscribes to what its output or
// dead_letter publishes, or whose output and dead_letter are one topic.
func checkTopics(src Source, tgt, dead Target) error {
	for _, end := range []struct {
		side string
		t    Target
	}{{"output", tgt}, {"dead_letter", dead}} {
		pub, ok := end.t.(TopicPlaced)
		sub, ok2 := src.(Subscriber)
		if !ok || !ok2 {
			continue
		}
		in, out := sub.TopicPlace(), pub.TopicPlace()
		if broker, ok := sharedBroker(in, out); ok && sub.Receives(out) {
			return &ConfigError{Err: fmt.Errorf("%w: the input subscribes to %q on %s, which receives what the %s publishes to %q, so the route would read what it writes forever: give the %s another topic",
				ErrSamePlace, in.Name, broker, end.side, out.Name, end.side)}
		}
	}
	pub, ok := tgt.(TopicPlaced)
	dl, ok2 := dead.(TopicPlaced)
	if !ok || !ok2 {
		return nil
	}
	out, bad := pub.TopicPlace(), dl.TopicPlace()
	if broker, ok := sharedBroker(out, bad); ok && out.Name == bad.Name && (out.Scope == bad.Scope || out.Scope == "" || bad.Scope == "") {
		return &ConfigError{Err: fmt.Errorf("%w: the output and the dead_letter both publish to %q on %s, so refused messages would land among the delivered ones: give the dead_letter another topic",
			ErrSamePlace, out.Name, broker)}
	}
	return nil
}

// sharedBroker returns a broker address that a and b both connect to, when
// they are of one protocol.
func sharedBroker(a, b Topic) (string, bool) {
	if a.Protocol != b.Protocol {
		return "", false
	}
	for _, x := range a.Brokers {
		if slices.ContainsFunc(b.Brokers, func(y string) bool { return brokerKey(x) == brokerKey(y) }) {
			return x, true
		}
	}
	return "", false
}

// brokerKey is the text two broker addresses are compared by: the host in
// lower case, with every loopback name alike, and the port.
func brokerKey(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return strings.ToLower(addr)
	}
	host = strings.ToLower(host)
	if ip, err := netip.ParseAddr(host); host == "localhost" || (err == nil && ip.IsLoopback()) {
		host = "loopback"
	}
	return net.JoinHostPort(host, port)
}
