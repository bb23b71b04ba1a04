package mqtt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/mqb-project/mqb/core/option"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/mqb-project/mqb/bridge"
)

// Target publishes each message to one topic and reports a batch written
// once the broker has acknowledged all of it.
type Target struct {
	cfg      *config
	clientID string
	clean    bool
	log      *slog.Logger
	conn     *conn
}

var _ bridge.Target = (*Target)(nil)

// NewTarget builds an MQTT target from decoded options.
func NewTarget(env *bridge.Env, v *option.Values) (*Target, error) {
	cfg, err := decode(v)
	if err != nil {
		return nil, err
	}
	if containsWildcard(cfg.topic) {
		return nil, &option.Error{Field: "topic", Value: cfg.topic, Msg: "a target publishes to one topic: + and # are not allowed"}
	}
	t := &Target{cfg: cfg, clientID: cfg.clientID, clean: cfg.cleanSession, log: env.Logger}
	if t.log == nil {
		t.log = slog.Default()
	}
	if !cfg.clientIDSet {
		// A random id would leave a stale session behind on every run.
		t.clientID, t.clean = randomClientID(), true
	}
	t.conn = newConn(cfg, t.log)
	return t, nil
}

func containsWildcard(topic string) bool {
	for _, r := range topic {
		if r == '+' || r == '#' {
			return true
		}
	}
	return false
}

// Connect connects to the broker.
func (t *Target) Connect(ctx context.Context) error {
	if err := t.conn.connect(ctx, t.conn.options(t.clientID, t.clean), t.cfg.clientIDSet); err != nil {
		return fmt.Errorf("mqtt target (client_id %s): %w", t.clientID, err)
	}
	t.log.Info("mqtt target connected", "broker", t.cfg.broker, "topic", t.cfg.topic, "qos", t.cfg.qos, "client_id", t.clientID)
	return nil
}

// WriteBatch publishes msgs in order and returns nil once the broker has
// acknowledged every one of them (for QoS 0, once they were handed to the
// connection). MQTT 3.1.1 has no message properties: ids and metadata are
// not sent.
func (t *Target) WriteBatch(ctx context.Context, msgs []*bridge.Message) error {
	if t.conn.client == nil {
		return errors.New("mqtt target: WriteBatch before Connect")
	}
	ctx, cancel := context.WithTimeout(ctx, t.cfg.writeTimeout)
	defer cancel()
	toks := make([]paho.Token, len(msgs))
	for i, m := range msgs {
		toks[i] = t.conn.client.Publish(t.cfg.topic, t.cfg.qos, t.cfg.retained, m.Payload)
	}
	for i, tok := range toks {
		if err := wait(ctx, tok); err != nil {
			return fmt.Errorf("mqtt target: publish message %d of %d to %s: %w", i+1, len(msgs), t.cfg.topic, err)
		}
	}
	return nil
}

// Close disconnects, letting the connection send what it holds.
func (t *Target) Close(context.Context, error) error {
	t.conn.close()
	return nil
}
