package nats

import (
	"net/url"

	"github.com/mqb-project/mqb/bridge"
)

var (
	_ bridge.Subscriber  = (*Source)(nil)
	_ bridge.TopicPlaced = (*Target)(nil)
)

// topicPlace is the servers, subject (or subject filter) and stream of an
// end.
func (c *config) topicPlace() bridge.Topic {
	hosts := make([]string, 0, len(c.servers))
	for _, s := range c.servers {
		if u, err := url.Parse(s); err == nil {
			hosts = append(hosts, u.Host)
		}
	}
	return bridge.Topic{Protocol: "nats", Brokers: hosts, Name: c.subject, Scope: c.stream}
}

// TopicPlace returns the servers, subject filter and stream (see
// bridge.Subscriber).
func (s *Source) TopicPlace() bridge.Topic { return s.cfg.topicPlace() }

// Receives reports whether the source's subject filter matches t's
// subject, unless the two ends name different streams.
func (s *Source) Receives(t bridge.Topic) bool {
	if s.cfg.stream != "" && t.Scope != "" && s.cfg.stream != t.Scope {
		return false
	}
	return subjectMatches(s.cfg.subject, t.Name)
}

// TopicPlace returns the servers, subject and stream (see
// bridge.TopicPlaced).
func (t *Target) TopicPlace() bridge.Topic { return t.cfg.topicPlace() }
