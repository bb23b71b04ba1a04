package mqtt

import (
	"fmt"
	"strings"

	"github.com/mqb-project/mqb/bridge"
)

var (
	_ bridge.Subscriber  = (*Source)(nil)
	_ bridge.TopicPlaced = (*Target)(nil)
)

// topicPlace is the broker and topic (or topic filter) of an end.
func (c *config) topicPlace() bridge.Topic {
	return bridge.Topic{Protocol: "mqtt", Brokers: []string{c.broker}, Name: c.topic}
}

// TopicPlace returns the broker and topic filter (see bridge.Subscriber).
func (s *Source) TopicPlace() bridge.Topic { return s.cfg.topicPlace() }

// Receives reports whether the source's topic filter matches t's topic.
func (s *Source) Receives(t bridge.Topic) bool { return filterMatches(s.cfg.topic, t.Name) }

// TopicPlace returns the broker and topic (see bridge.TopicPlaced).
func (t *Target) TopicPlace() bridge.Topic { return t.cfg.topicPlace() }

// filterMatches reports whether a message published to topic reaches a
// subscription to filter, by the rules of MQTT 3.1.1 (section 4.7): "+"
// stands for one level, a final "#" for any number of them, the parent
// level included, and neither for a first level that starts with "$".
func filterMatches(filter, topic string) bool {
	if strings.HasPrefix(topic, "$") && (strings.HasPrefix(filter, "+") || strings.HasPrefix(filter, "#")) {
		return false
	}
	fs, ts := strings.Split(filter, "/"), strings.Split(topic, "/")
	for i, f := range fs {
		switch {
		case f == "#":
			return true
		case i >= len(ts):
			return false
		case f != "+" && f != ts[i]:
			return false
		}
	}
	return len(fs) == len(ts)
}

var (
	_ bridge.SessionHolder = (*Source)(nil)
	_ bridge.SessionHolder = (*Target)(nil)
)

// session describes the client id's session on the broker (see
// bridge.SessionHolder).
func (c *config) session(clientID string) (string, string) {
	return fmt.Sprintf("MQTT client id %q on %s", clientID, c.broker), bridge.SessionKey("mqtt", c.broker, clientID)
}

// Session returns the source's client id on its broker.
func (s *Source) Session() (string, string) { return s.cfg.session(s.clientID) }

// Session returns the target's client id on its broker (a random one,
// unless client_id is set).
func (t *Target) Session() (string, string) { return t.cfg.session(t.clientID) }
