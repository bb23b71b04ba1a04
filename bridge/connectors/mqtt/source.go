package mqtt

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqb-project/mqb/core/option"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/mqb-project/mqb/bridge"
)

// inboxSize bounds the messages received but not yet read. For QoS 1 and 2
// the broker's in-flight window (max_inflight_messages) is the real bound,
// since nothing is acknowledged before the route writes it.
const inboxSize = 1024

// Source reads messages from a topic filter and acknowledges each to the
// broker only when the route acknowledges it.
type Source struct {
	cfg      *config
	clientID string
	log      *slog.Logger
	conn     *conn
	drain    bool

	inbox  chan paho.Message
	closed chan struct{}
	once   sync.Once

	mu       sync.Mutex
	redo     []*delivery   // negatively acknowledged, delivered again first
	redoWake chan struct{} // signalled when redo grows
	inflight atomic.Int64  // batches read and not yet settled
	online   atomic.Bool   // connected and subscribed
	arrived  uint64        // deliveries numbered so far (ReadBatch only)

	subscribed     chan error // the first subscription's outcome (buffered)
	subscribedOnce atomic.Bool
}

// delivery is one message as the route sees it and as Paho gave it.
type delivery struct {
	seq uint64 // arrival order
	msg *bridge.Message
	raw paho.Message
}

var (
	_ bridge.Source  = (*Source)(nil)
	_ bridge.Drainer = (*Source)(nil)
)

// errSourceClosed is returned by ReadBatch after Close.
var errSourceClosed = errors.New("mqtt source is closed")

// NewSource builds an MQTT source from decoded options.
func NewSource(env *bridge.Env, v *option.Values) (*Source, error) {
	cfg, err := decode(v)
	if err != nil {
		return nil, err
	}
	id := cfg.clientID
	if !cfg.clientIDSet {
		id = derivedClientID(cfg.broker, cfg.topic)
	}
	log := env.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Source{
		cfg: cfg, clientID: id, log: log, conn: newConn(cfg, log),
		inbox: make(chan paho.Message, inboxSize), closed: make(chan struct{}),
		redoWake: make(chan struct{}, 1), subscribed: make(chan error, 1),
	}, nil
}

// SetDrain makes the source end after idle_timeout (2s by default) without
// a message. The route calls it before Connect.
func (s *Source) SetDrain(drain bool) { s.drain = drain }

// ClientID returns the MQTT client identifier the source connects with.
func (s *Source) ClientID() string { return s.clientID }

func (s *Source) idle() time.Duration {
	switch {
	case s.cfg.idleSet:
		return s.cfg.idle
	case s.drain:
		return DefaultDrainIdle
	}
	return 0
}

// Connect connects, subscribes, and keeps the subscription across
// reconnections.
func (s *Source) Connect(ctx context.Context) error {
	o := s.conn.options(s.clientID, s.cfg.cleanSession).
		SetAutoAckDisabled(true).
		// Every message goes through the default handler, including those
		// the broker sends for a resumed session before SUBSCRIBE is answered.
		SetDefaultPublishHandler(s.receive).
		SetOnConnectHandler(s.subscribe).
		SetConnectionLostHandler(func(_ paho.Client, err error) {
			s.online.Store(false)
			s.log.Warn("mqtt: connection lost; reconnecting", "broker", s.cfg.broker, "error", err)
		})
	if err := s.conn.connect(ctx, o, true); err != nil {
		return fmt.Errorf("mqtt source (client_id %s): %w", s.clientID, err)
	}
	timer := time.NewTimer(s.cfg.connectTimeout)
	defer timer.Stop()
	select {
	case err := <-s.subscribed:
		if err != nil {
			s.conn.close()
			return fmt.Errorf("mqtt source: subscribe to %s: %w", s.cfg.topic, err)
		}
	case <-timer.C:
		s.conn.close()
		return fmt.Errorf("mqtt source: no answer to SUBSCRIBE %s within %v", s.cfg.topic, s.cfg.connectTimeout)
	case <-ctx.Done():
		s.conn.close()
		return ctx.Err()
	}
	s.log.Info("mqtt source connected", "broker", s.cfg.broker, "topic", s.cfg.topic, "qos", s.cfg.qos,
		"client_id", s.clientID, "clean_session", s.cfg.cleanSession)
	return nil
}

// subscribe runs on every (re)connection.
func (s *Source) subscribe(c paho.Client) {
	s.log.Debug("mqtt: connected; subscribing", "broker", s.cfg.broker, "topic", s.cfg.topic, "client_id", s.clientID)
	tok := c.Subscribe(s.cfg.topic, s.cfg.qos, nil)
	go func() {
		var err error
		select {
		case <-tok.Done():
			err = tok.Error()
		case <-s.closed:
			return
		}
		if err == nil {
			if st, ok := tok.(*paho.SubscribeToken); ok {
				if q, ok := st.Result()[s.cfg.topic]; ok && q == 0x80 {
					err = fmt.Errorf("the broker refused the subscription to %q", s.cfg.topic)
				}
			}
		}
		s.online.Store(err == nil)
		switch {
		case s.subscribedOnce.CompareAndSwap(false, true):
			s.subscribed <- err // Connect waits for the first outcome
		case err != nil:
			s.log.Error("mqtt: subscribe after reconnect failed", "topic", s.cfg.topic, "error", err)
		default:
			s.log.Info("mqtt: reconnected and subscribed", "broker", s.cfg.broker, "topic", s.cfg.topic)
		}
	}()
}

// receive is Paho's handler. It blocks while the inbox is full, which stops
// Paho reading from the broker: back-pressure instead of unbounded memory.
func (s *Source) receive(_ paho.Client, m paho.Message) {
	select {
	case s.inbox <- m:
	case <-s.closed:
	}
}

// ReadBatch returns up to limit messages: first any that were negatively
// acknowledged, then what the broker sent, waiting for at least one. It
// returns bridge.ErrEndOfInput after idle_timeout without a message (2s by
// default when the route drains), counted only while the source is
// connected and has no batch unsettled.
func (s *Source) ReadBatch(ctx context.Context, limit int) ([]*bridge.Message, bridge.AckFunc, error) {
	if limit < 1 {
		limit = 1
	}
	if batch := s.takeRedo(limit); len(batch) > 0 {
		return s.deliver(batch)
	}
	var idleC <-chan time.Time
	idle := s.idle()
	var timer *time.Timer
	if idle > 0 {
		timer = time.NewTimer(idle)
		defer timer.Stop()
		idleC = timer.C
	}
	var batch []*delivery
	for len(batch) == 0 {
		select {
		case m := <-s.inbox:
			batch = append(batch, s.fromPaho(m))
		case <-s.redoWake:
			batch = s.takeRedo(limit)
		case <-idleC:
			if s.inflight.Load() == 0 && s.online.Load() {
				return nil, nil, bridge.ErrEndOfInput
			}
			// An unsettled batch may still come back, and a broker that
			// cannot be reached has not said that it has nothing more.
			timer.Reset(idle)
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-s.closed:
			return nil, nil, errSourceClosed
		}
	}
	for len(batch) < limit {
		select {
		case m := <-s.inbox:
			batch = append(batch, s.fromPaho(m))
			continue
		default:
		}
		break
	}
	return s.deliver(batch)
}

func (s *Source) takeRedo(limit int) []*delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := min(limit, len(s.redo))
	if n == 0 {
		return nil
	}
	batch := append([]*delivery(nil), s.redo[:n]...)
	s.redo = s.redo[n:]
	return batch
}

func (s *Source) fromPaho(m paho.Message) *delivery {
	s.arrived++
	return &delivery{seq: s.arrived, raw: m, msg: &bridge.Message{
		Payload: m.Payload(),
		Metadata: map[string]string{
			"mqtt_topic":      m.Topic(),
			"mqtt_qos":        strconv.Itoa(int(m.Qos())),
			"mqtt_retained":   strconv.FormatBool(m.Retained()),
			"mqtt_duplicate":  strconv.FormatBool(m.Duplicate()),
			"mqtt_message_id": strconv.Itoa(int(m.MessageID())),
		},
	}}
}

// deliver hands a batch to the route with the function that settles it:
// nil sends the PUBACKs, an error queues the messages to be read again.
func (s *Source) deliver(batch []*delivery) ([]*bridge.Message, bridge.AckFunc, error) {
	msgs := make([]*bridge.Message, len(batch))
	for i, d := range batch {
		msgs[i] = d.msg
	}
	s.inflight.Add(1)
	var settled atomic.Bool
	ack := func(_ context.Context, err error) error {
		if !settled.CompareAndSwap(false, true) {
			return nil
		}
		defer s.inflight.Add(-1)
		if err == nil {
			for _, d := range batch {
				d.raw.Ack() // PUBACK (QoS 1) or PUBREC (QoS 2); nothing for QoS 0
			}
			return nil
		}
		// No PUBACK: the broker still counts these as in flight. Deliver
		// them again from here (keeping the ids the route gave them); if the
		// process stops first, the broker delivers them to the next session.
		s.mu.Lock()
		s.redo = append(s.redo, batch...)
		slices.SortStableFunc(s.redo, func(a, b *delivery) int { return cmp.Compare(a.seq, b.seq) })
		s.mu.Unlock()
		select {
		case s.redoWake <- struct{}{}:
		default:
		}
		return nil
	}
	return msgs, ack, nil
}

// Close disconnects without acknowledging anything still unsettled: the
// broker delivers those messages again to the next connection with the same
// client_id (unless clean_session=true).
func (s *Source) Close(context.Context) error {
	s.once.Do(func() {
		close(s.closed)
		s.conn.close()
	})
	return nil
}
