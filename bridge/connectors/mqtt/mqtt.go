package mqtt

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mqb-project/mqb/core/option"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"

	"github.com/mqb-project/mqb/bridge"
)

// Name is the connector's YAML key.
const Name = "mqtt"

// DefaultDrainIdle is how long a draining source waits for a message before
// it ends, when idle_timeout is not set.
const DefaultDrainIdle = 2 * time.Second

// Schema is the option table of the MQTT source and target. In a URL the
// host and port become broker, the user info username and password, and the
// mqtts scheme sets tls.
var Schema = &option.Schema{
	Name: Name,
	Fields: []option.Field{
		{Name: "broker", Type: option.TypeString, Required: true,
			Doc: "host:port of the broker (port 1883, or 8883 with tls, when omitted)."},
		{Name: "tls", Type: option.TypeBool, Default: "false", Doc: "Connect with TLS (the mqtts:// scheme sets it)."},
		{Name: "username", Type: option.TypeString, Doc: "User name (the URL's user info)."},
		{Name: "password", Type: option.TypeString, Secret: true, Doc: "Password (the URL's user info). Never printed."},
		bridge.SecretFileField("password"),
		{Name: "topic", Type: option.TypeString, Required: true,
			Doc: "Source: the topic filter to subscribe to (+ and # allowed). Target: the topic to publish to."},
		{Name: "qos", Type: option.TypeInt, Default: "1", Min: 0, Max: 2,
			Doc: "Quality of service of the subscription or of the published messages. 0 gives no delivery guarantee."},
		{Name: "client_id", Type: option.TypeString,
			Doc: "MQTT client identifier. The broker keeps a session per client_id; a source must keep the same one across restarts to get its unacknowledged messages again. Source default: derived from this host, the broker and the topic. Target default: a random id with a clean session."},
		{Name: "clean_session", Type: option.TypeBool, Default: "false",
			Doc: "Start a new session on every connection. Keep false on a source: with true, messages that were not acknowledged when the connection dropped are lost."},
		{Name: "retained", Type: option.TypeBool, Default: "false", Doc: "Target: publish with the retain flag."},
		{Name: "idle_timeout", Type: option.TypeDuration, Default: "0s",
			Doc: "Source: end the route after this long without a message. With --drain it defaults to 2s, since a broker has no end of input; without --drain the source waits forever unless this is set."},
		{Name: "connect_timeout", Type: option.TypeDuration, Default: "30s",
			Doc: "How long the first connection may take, retries included, before the route fails. A refused connection (nothing listens at the port, an unknown host, bad credentials) fails at once."},
		{Name: "write_timeout", Type: option.TypeDuration, Default: "30s",
			Doc: "Target: how long a batch waits for the broker's acknowledgements before the write fails and is retried."},
		{Name: "keep_alive", Type: option.TypeDuration, Default: "30s", Doc: "MQTT keep-alive interval."},
		{Name: "max_reconnect_interval", Type: option.TypeDuration, Default: "10s",
			Doc: "Longest wait between two reconnection attempts after the connection is lost."},
		{Name: "ca_file", Type: option.TypeString, Doc: "PEM file of the certificate authorities that sign the broker's certificate (default: the system's)."},
		{Name: "cert_file", Type: option.TypeString, Doc: "PEM client certificate, for brokers that authenticate clients by certificate (with key_file)."},
		{Name: "key_file", Type: option.TypeString, Doc: "PEM private key of cert_file."},
		{Name: "insecure_skip_verify", Type: option.TypeBool, Default: "false", Doc: "Do not verify the broker's certificate. For tests only."},
	},
}

// Connector describes the MQTT source and target.
var Connector = &bridge.Connector{
	Name:      Name,
	Schemes:   []string{"mqtt", "mqtts"},
	Schema:    Schema,
	URLFields: urlFields,
	NewSource: func(env *bridge.Env, v *option.Values) (bridge.Source, error) { return NewSource(env, v) },
	NewTarget: func(env *bridge.Env, v *option.Values) (bridge.Target, error) { return NewTarget(env, v) },
}

// Register adds the MQTT connector to env.
func Register(env *bridge.Env) { env.Register(Connector) }

func init() { Register(bridge.DefaultEnv) }

func urlFields(u *url.URL) (map[string]any, error) {
	m, err := option.FromURL(u, option.PathOwn, "")
	if err != nil {
		return nil, err
	}
	if u.Path != "" && u.Path != "/" {
		return nil, &option.Error{Field: "topic", Value: u.Path, Msg: "goes in the topic option, not in the URL path (mqtt://host:1883?topic=a/b)"}
	}
	set := func(k string, v any) error {
		if _, dup := m[k]; dup {
			return &option.Error{Field: k, Msg: "is given both in the URL and as an option"}
		}
		m[k] = v
		return nil
	}
	if u.Host != "" {
		if err := set("broker", u.Host); err != nil {
			return nil, err
		}
	}
	if u.Scheme == "mqtts" {
		if err := set("tls", true); err != nil {
			return nil, err
		}
	}
	if u.User != nil {
		if err := set("username", u.User.Username()); err != nil {
			return nil, err
		}
		if p, ok := u.User.Password(); ok {
			if err := set("password", p); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// config is the decoded options shared by source and target.
type config struct {
	broker         string // host:port
	tls            bool
	username       string
	password       string
	topic          string
	qos            byte
	clientID       string
	clientIDSet    bool
	cleanSession   bool
	cleanSet       bool
	retained       bool
	idle           time.Duration
	idleSet        bool
	connectTimeout time.Duration
	writeTimeout   time.Duration
	keepAlive      time.Duration
	maxReconnect   time.Duration
	tlsConfig      *tls.Config
}

func decode(v *option.Values) (*config, error) {
	c := &config{
		broker:         v.String("broker"),
		tls:            v.Bool("tls"),
		username:       v.String("username"),
		topic:          v.String("topic"),
		qos:            byte(v.Int("qos")),
		clientID:       v.String("client_id"),
		clientIDSet:    v.IsSet("client_id") && v.String("client_id") != "",
		cleanSession:   v.Bool("clean_session"),
		cleanSet:       v.IsSet("clean_session"),
		retained:       v.Bool("retained"),
		idle:           v.Duration("idle_timeout"),
		idleSet:        v.IsSet("idle_timeout"),
		connectTimeout: v.Duration("connect_timeout"),
		writeTimeout:   v.Duration("write_timeout"),
		keepAlive:      v.Duration("keep_alive"),
		maxReconnect:   v.Duration("max_reconnect_interval"),
	}
	var err error
	if c.password, err = bridge.Secret(v, "password"); err != nil {
		return nil, err
	}
	if c.topic == "" {
		return nil, &option.Error{Field: "topic", Msg: "must not be empty"}
	}
	if c.broker == "" {
		return nil, &option.Error{Field: "broker", Msg: "must name host:port"}
	}
	if _, _, err := net.SplitHostPort(c.broker); err != nil {
		port := "1883"
		if c.tls {
			port = "8883"
		}
		c.broker = net.JoinHostPort(strings.Trim(c.broker, "[]"), port)
	}
	if c.connectTimeout <= 0 {
		return nil, &option.Error{Field: "connect_timeout", Value: "0s", Msg: "must be positive"}
	}
	if c.writeTimeout <= 0 {
		return nil, &option.Error{Field: "write_timeout", Value: "0s", Msg: "must be positive"}
	}
	if c.maxReconnect < time.Second {
		c.maxReconnect = time.Second
	}
	if c.tlsConfig, err = tlsConfig(v, c.tls, c.broker); err != nil {
		return nil, err
	}
	return c, nil
}

// tlsConfig builds the TLS settings of an mqtts:// broker from ca_file,
// cert_file, key_file and insecure_skip_verify; nil without TLS, where
// those options are refused.
func tlsConfig(v *option.Values, useTLS bool, broker string) (*tls.Config, error) {
	caFile, certFile, keyFile := v.String("ca_file"), v.String("cert_file"), v.String("key_file")
	insecure := v.Bool("insecure_skip_verify")
	if (certFile == "") != (keyFile == "") {
		return nil, &option.Error{Field: "cert_file", Msg: "and key_file must be given together"}
	}
	if !useTLS {
		if caFile != "" || certFile != "" || insecure {
			return nil, &option.Error{Field: "tls", Msg: "is needed by ca_file, cert_file, key_file and insecure_skip_verify (use mqtts://)"}
		}
		return nil, nil
	}
	host, _, _ := net.SplitHostPort(broker)
	tc := &tls.Config{ServerName: host, InsecureSkipVerify: insecure, MinVersion: tls.VersionTLS12} //nolint:gosec // the user asked for it
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, &option.Error{Field: "ca_file", Value: caFile, Msg: err.Error()}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &option.Error{Field: "ca_file", Value: caFile, Msg: "holds no PEM certificate"}
		}
		tc.RootCAs = pool
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, &option.Error{Field: "cert_file", Value: certFile, Msg: err.Error()}
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// brokerURL is the broker's address as Paho wants it; it never holds
// credentials.
func (c *config) brokerURL() string {
	if c.tls {
		return "ssl://" + c.broker
	}
	return "tcp://" + c.broker
}

// derivedClientID is the default client_id of a source: stable for one host,
// broker and topic, so that a restarted route resumes its session.
func derivedClientID(broker, topic string) string {
	host, _ := os.Hostname()
	sum := sha256.Sum256([]byte(host + "\x00" + broker + "\x00" + topic))
	return "mqb-" + hex.EncodeToString(sum[:8])
}

func randomClientID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "mqb-pub-" + hex.EncodeToString(b[:])
}

// errRefused matches the CONNACK refusals that retrying cannot fix.
func errRefused(err error) bool {
	for _, e := range []error{packets.ErrorRefusedBadUsernameOrPassword, packets.ErrorRefusedNotAuthorised,
		packets.ErrorRefusedIDRejected, packets.ErrorRefusedBadProtocolVersion} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// unreachable reports whether a dial failed in a way that retrying within
// connect_timeout will not fix: nothing listens at the port
// (ECONNREFUSED) or the host name does not exist. A broker that is slow
// to answer is still waited for.
func unreachable(err error) bool {
	var dns *net.DNSError
	return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &dns) && dns.IsNotFound
}

// conn is a Paho client with the connection handling both sides share:
// automatic reconnection, a bounded first connection that reports why it
// failed, and logs of connection changes.
type conn struct {
	cfg    *config
	log    *slog.Logger
	client paho.Client

	mu      sync.Mutex
	lastErr error
	fatal   chan error // a refusal that retrying cannot fix, during the first connection
	session *os.File   // the client id lock (sessionlock.go), while held
}

func newConn(cfg *config, log *slog.Logger) *conn {
	return &conn{cfg: cfg, log: log, fatal: make(chan error, 1)}
}

// options returns Paho options with this conn's connection handling; the
// caller adds its own handlers.
func (c *conn) options(clientID string, clean bool) *paho.ClientOptions {
	o := paho.NewClientOptions().
		AddBroker(c.cfg.brokerURL()).
		SetClientID(clientID).
		SetCleanSession(clean).
		SetProtocolVersion(4). // MQTT 3.1.1
		SetKeepAlive(c.cfg.keepAlive).
		SetConnectTimeout(min(c.cfg.connectTimeout, 10*time.Second)).
		SetWriteTimeout(c.cfg.writeTimeout).
		SetAutoReconnect(true).
		SetConnectRetry(true).
		SetConnectRetryInterval(time.Second).
		SetMaxReconnectInterval(c.cfg.maxReconnect).
		SetOrderMatters(true).
		SetCustomOpenConnectionFn(dial)
	if c.cfg.username != "" {
		o.SetUsername(c.cfg.username)
	}
	if c.cfg.password != "" {
		o.SetPassword(c.cfg.password)
	}
	if c.cfg.tlsConfig != nil {
		o.SetTLSConfig(c.cfg.tlsConfig)
	}
	o.SetConnectionLostHandler(func(_ paho.Client, err error) {
		c.log.Warn("mqtt: connection lost; reconnecting", "broker", c.cfg.broker, "error", err)
	})
	o.SetReconnectingHandler(func(paho.Client, *paho.ClientOptions) {
		c.log.Info("mqtt: reconnecting", "broker", c.cfg.broker)
	})
	o.SetConnectionNotificationHandler(func(_ paho.Client, n paho.ConnectionNotification) {
		var err error
		switch n := n.(type) {
		case paho.ConnectionNotificationFailed:
			err = n.Reason
		case paho.ConnectionNotificationBrokerFailed:
			err = n.Reason
		default:
			return
		}
		if err == nil {
			return
		}
		c.mu.Lock()
		c.lastErr = err
		c.mu.Unlock()
		if errRefused(err) || unreachable(err) {
			select {
			case c.fatal <- err:
			default:
			}
		}
	})
	return o
}

// connect makes the first connection, waiting at most connect_timeout.
// With lock it first takes the client id's lock (sessionlock.go): every
// client id but a target's random one.
func (c *conn) connect(ctx context.Context, o *paho.ClientOptions, lock bool) error {
	if lock {
		if err := c.lockSession(o.ClientID); err != nil {
			return err
		}
	}
	c.client = paho.NewClient(o)
	tok := c.client.Connect()
	timer := time.NewTimer(c.cfg.connectTimeout)
	defer timer.Stop()
	var err error
	select {
	case <-tok.Done():
		err = tok.Error()
	case err = <-c.fatal:
	case <-timer.C:
		c.mu.Lock()
		last := c.lastErr
		c.mu.Unlock()
		if last == nil {
			last = errors.New("no answer")
		}
		err = fmt.Errorf("no connection within connect_timeout %v: %w", c.cfg.connectTimeout, last)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		c.client.Disconnect(0)
		c.client = nil
		c.unlockSession() // taken again by the next attempt; a process that ends here leaves no lock file
		if errRefused(err) {
			// Bad credentials and the like: not retried, exit 2.
			return &bridge.ConfigError{Err: err}
		}
		return err
	}
	return nil
}

func (c *conn) close() {
	if c.client != nil {
		c.client.Disconnect(250)
	}
	c.unlockSession()
}

// wait waits for a Paho token until ctx ends.
func wait(ctx context.Context, tok paho.Token) error {
	select {
	case <-tok.Done():
		return tok.Error()
	case <-ctx.Done():
		return ctx.Err()
	}
}
