package nats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mqb-project/mqb/core/option"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/mqb-project/mqb/bridge"
)

// Name is the connector's YAML key.
const Name = "nats"

// Schema is the option table of the NATS JetStream source and target. In a
// URL the host list becomes servers and the user info username and
// password (or token, when there is no password).
var Schema = &option.Schema{
	Name: Name,
	Fields: []option.Field{
		{Name: "servers", Type: option.TypeString, Required: true,
			Doc: "Comma-separated host:port list of NATS servers (port 4222 when omitted)."},
		{Name: "username", Type: option.TypeString, Doc: "User name (the URL's user info)."},
		{Name: "password", Type: option.TypeString, Secret: true, Doc: "Password (the URL's user info). Never printed."},
		{Name: "token", Type: option.TypeString, Secret: true, Doc: "Authentication token (a URL user info without password). Never printed."},
		bridge.SecretFileField("password"),
		bridge.SecretFileField("token"),
		{Name: "creds_file", Type: option.TypeString, Doc: "NATS credentials file (user JWT and NKey seed)."},
		{Name: "tls", Type: option.TypeBool, Default: "false", Doc: "Require TLS."},
		{Name: "ca_file", Type: option.TypeString, Doc: "PEM file of the certificate authorities that sign the servers' certificates."},
		{Name: "cert_file", Type: option.TypeString, Doc: "PEM client certificate (with key_file)."},
		{Name: "key_file", Type: option.TypeString, Doc: "PEM private key of cert_file."},
		{Name: "subject", Type: option.TypeString, Required: true,
			Doc: "Target: the subject to publish to. Source: the subject filter of the consumer (wildcards allowed)."},
		{Name: "stream", Type: option.TypeString,
			Doc: "The stream. Optional when a stream already captures subject; needed by create_stream. A target also checks that its messages land in it."},
		{Name: "create_stream", Type: option.TypeBool, Default: "false",
			Doc: "Create the stream (subjects: subject) when it does not exist."},
		{Name: "storage", Type: option.TypeEnum, Default: "file", Enum: []string{"file", "memory"},
			Doc: "Storage of a stream made by create_stream."},
		{Name: "duplicate_window", Type: option.TypeDuration, Default: "2m",
			Doc: "Deduplication window of a stream made by create_stream: a message id seen within it is stored once."},
		{Name: "replicas", Type: option.TypeInt, Default: "1", Min: 1, Max: 5,
			Doc: "Copies of a stream made by create_stream, each on its own server of the cluster (3 survives the loss of one)."},
		{Name: "max_age", Type: option.TypeDuration, Default: "0s",
			Doc: "Retention of a stream made by create_stream: messages older than this are removed (0s keeps them)."},
		{Name: "max_bytes", Type: option.TypeInt, Default: "0", Min: 0,
			Doc: "Retention of a stream made by create_stream: the oldest messages are removed to keep it under this many bytes (0: no limit)."},
		{Name: "durable", Type: option.TypeString,
			Doc: "Source: the durable consumer's name. It keeps the position across restarts; required for a source."},
		{Name: "deliver_policy", Type: option.TypeEnum, Default: "all", Enum: []string{"all", "new", "last"},
			Doc: "Source: where a new durable consumer starts. An existing one keeps its position."},
		{Name: "ack_wait", Type: option.TypeDuration, Default: "30s",
			Doc: "Source: how long JetStream waits for an acknowledgement before delivering a message again. Keep it longer than a batch write."},
		{Name: "max_ack_pending", Type: option.TypeInt, Default: "1000", Min: 1,
			Doc: "Source: most messages delivered and not yet acknowledged."},
		{Name: "idle_timeout", Type: option.TypeDuration, Default: "0s",
			Doc: "Source without --drain: end the route after this long without a message (0s: wait forever). With --drain the source ends when the durable consumer has nothing left, however long that takes."},
		{Name: "metadata_headers", Type: option.TypeBool, Default: "true",
			Doc: "Target: send metadata as message headers (keys starting with nats_ are left out). Source: turn headers into metadata."},
		{Name: "connect_timeout", Type: option.TypeDuration, Default: "10s", Doc: "How long the first connection may take."},
		{Name: "write_timeout", Type: option.TypeDuration, Default: "30s",
			Doc: "Target: how long a batch waits for JetStream's acknowledgements before the write fails and is retried."},
	},
}

// Connector describes the NATS JetStream source and target.
var Connector = &bridge.Connector{
	Name:      Name,
	Schemes:   []string{"nats"},
	Schema:    Schema,
	URLFields: urlFields,
	NewSource: func(env *bridge.Env, v *option.Values) (bridge.Source, error) { return NewSource(env, v) },
	NewTarget: func(env *bridge.Env, v *option.Values) (bridge.Target, error) { return NewTarget(env, v) },
	TokenUser: true,
}

// Register adds the NATS connector to env.
func Register(env *bridge.Env) { env.Register(Connector) }

func init() { Register(bridge.DefaultEnv) }

func urlFields(u *url.URL) (map[string]any, error) {
	m, err := option.FromURL(u, option.PathOwn, "")
	if err != nil {
		return nil, err
	}
	if u.Path != "" && u.Path != "/" {
		return nil, &option.Error{Field: "subject", Value: u.Path, Msg: "goes in the subject option, not in the URL path (nats://host:4222?subject=a.b)"}
	}
	set := func(k, v string) error {
		if _, dup := m[k]; dup {
			return &option.Error{Field: k, Msg: "is given both in the URL and as an option"}
		}
		m[k] = v
		return nil
	}
	if u.Host != "" {
		if err := set("servers", u.Host); err != nil {
			return nil, err
		}
	}
	if u.User != nil {
		if p, ok := u.User.Password(); ok {
			if err := set("username", u.User.Username()); err != nil {
				return nil, err
			}
			if err := set("password", p); err != nil {
				return nil, err
			}
		} else if err := set("token", u.User.Username()); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// config is the decoded options shared by source and target.
type config struct {
	servers   []string
	subject   string
	stream    string
	create    bool
	storage   jetstream.StorageType
	dupWindow time.Duration
	replicas  int
	maxAge    time.Duration
	maxBytes  int64
	headers   bool
	timeout   time.Duration
	write     time.Duration
	idle      time.Duration
	idleSet   bool
	opts      []natsgo.Option
	secrets   []string
}

func decode(v *option.Values) (*config, error) {
	c := &config{
		subject:   v.String("subject"),
		stream:    v.String("stream"),
		create:    v.Bool("create_stream"),
		dupWindow: v.Duration("duplicate_window"),
		replicas:  v.Int("replicas"),
		maxAge:    v.Duration("max_age"),
		maxBytes:  int64(v.Int("max_bytes")),
		headers:   v.Bool("metadata_headers"),
		timeout:   v.Duration("connect_timeout"),
		write:     v.Duration("write_timeout"),
		idle:      v.Duration("idle_timeout"),
		idleSet:   v.IsSet("idle_timeout"),
	}
	if v.String("storage") == "memory" {
		c.storage = jetstream.MemoryStorage
	}
	var err error
	if c.servers, err = parseServers(v.String("servers")); err != nil {
		return nil, err
	}
	if c.subject == "" {
		return nil, &option.Error{Field: "subject", Msg: "must not be empty"}
	}
	if c.create && c.stream == "" {
		return nil, &option.Error{Field: "create_stream", Msg: "needs the stream option to name the stream"}
	}

	if c.timeout <= 0 || c.write <= 0 {
		return nil, &option.Error{Field: "connect_timeout", Msg: "and write_timeout must be positive"}
	}
	c.opts = []natsgo.Option{
		natsgo.Name("mqb"),
		natsgo.Timeout(c.timeout),
		natsgo.MaxReconnects(-1),
		natsgo.ReconnectWait(time.Second),
	}
	if err := c.auth(v); err != nil {
		return nil, err
	}
	if f := v.String("creds_file"); f != "" {
		c.opts = append(c.opts, natsgo.UserCredentials(f))
	}
	if v.Bool("tls") {
		c.opts = append(c.opts, natsgo.Secure())
	}
	if f := v.String("ca_file"); f != "" {
		c.opts = append(c.opts, natsgo.RootCAs(f))
	}
	cert, key := v.String("cert_file"), v.String("key_file")
	if (cert == "") != (key == "") {
		return nil, &option.Error{Field: "cert_file", Msg: "and key_file must be given together"}
	}
	if cert != "" {
		c.opts = append(c.opts, natsgo.ClientCert(cert, key))
	}
	return c, nil
}

// auth adds the user and password, or the token, each given inline or
// in a *_file option.
func (c *config) auth(v *option.Values) error {
	user := v.String("username")
	pass, err := bridge.Secret(v, "password")
	if err != nil {
		return err
	}
	token, err := bridge.Secret(v, "token")
	if err != nil {
		return err
	}
	switch {
	case token != "" && (user != "" || pass != ""):
		return &option.Error{Field: "token", Msg: "cannot be combined with username and password"}
	case token != "":
		c.opts = append(c.opts, natsgo.Token(token))
		c.secrets = append(c.secrets, token)
	case user != "" || pass != "":
		c.opts = append(c.opts, natsgo.UserInfo(user, pass))
		c.secrets = append(c.secrets, pass)
	}
	return nil
}

// parseServers turns the servers option into nats:// URLs with a port.
func parseServers(list string) ([]string, error) {
	var servers []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "://") {
			s = "nats://" + s
		}
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return nil, &option.Error{Field: "servers", Value: s, Msg: "expects host:port"}
		}
		if u.User != nil {
			return nil, &option.Error{Field: "servers", Msg: "give credentials with username/password or token, not inside servers"}
		}
		if u.Port() == "" {
			u.Host += ":4222"
		}
		servers = append(servers, u.String())
	}
	if len(servers) == 0 {
		return nil, &option.Error{Field: "servers", Msg: "must name at least one host:port"}
	}
	return servers, nil
}

// where names the endpoint in logs and errors, without credentials.
func (c *config) where() string {
	hosts := make([]string, len(c.servers))
	for i, s := range c.servers {
		hosts[i] = strings.TrimPrefix(s, "nats://")
	}
	w := "nats://" + strings.Join(hosts, ",") + "?subject=" + c.subject
	if c.stream != "" {
		w += "&stream=" + c.stream
	}
	return w
}

// scrub removes secrets from an error's text.
func (c *config) scrub(err error) error {
	text := bridge.Redact(err.Error(), c.secrets...)
	if text == err.Error() {
		return err
	}
	return &scrubbed{text: text, err: err}
}

type scrubbed struct {
	text string
	err  error
}

func (e *scrubbed) Error() string { return e.text }
func (e *scrubbed) Unwrap() error { return e.err }

// connect opens the connection (reconnecting forever afterwards) and the
// JetStream context, and finds or creates the stream. A failure that
// retrying cannot fix (bad credentials, a stream that does not exist) is a
// *bridge.ConfigError; the route retries the others within its budget.
func (c *config) connect(ctx context.Context, log *slog.Logger, side string) (*natsgo.Conn, jetstream.JetStream, string, error) {
	opts := append(append([]natsgo.Option(nil), c.opts...),
		natsgo.DisconnectErrHandler(func(_ *natsgo.Conn, err error) {
			if err != nil {
				log.Warn("nats: disconnected; reconnecting", "servers", c.where(), "error", err)
			}
		}),
		natsgo.ReconnectHandler(func(nc *natsgo.Conn) {
			log.Info("nats: reconnected", "server", nc.ConnectedUrlRedacted())
		}),
	)
	dialer := &recordingDialer{d: net.Dialer{Timeout: c.timeout}}
	opts = append(opts, natsgo.SetCustomDialer(dialer))
	nc, err := natsgo.Connect(strings.Join(c.servers, ","), opts...)
	if err != nil {
		if last := dialer.lastErr(); last != nil && errors.Is(err, natsgo.ErrNoServers) {
			err = fmt.Errorf("%w (%w)", last, err)
		}
		err = fmt.Errorf("nats %s: cannot connect to %s: %w", side, strings.Join(c.servers, ","), c.scrub(err))
		if authFailure(err) {
			return nil, nil, "", &bridge.ConfigError{Err: err}
		}
		return nil, nil, "", err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, "", fmt.Errorf("nats %s: %w", side, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	stream, err := c.findStream(ctx, js)
	if err != nil {
		nc.Close()
		return nil, nil, "", configIf(fmt.Errorf("nats %s: %w", side, err))
	}
	return nc, js, stream, nil
}

// authFailure reports a refusal of the credentials, which the same
// credentials get again.
func authFailure(err error) bool {
	return errors.Is(err, natsgo.ErrAuthorization) || errors.Is(err, natsgo.ErrAuthExpired) ||
		errors.Is(err, natsgo.ErrAuthRevoked) || errors.Is(err, natsgo.ErrAccountAuthExpired) ||
		errors.Is(err, natsgo.ErrPermissionViolation)
}

// errReplicasNotClustered is JetStream's refusal of replicas > 1 by a
// single server.
const errReplicasNotClustered = 10074

// configIf makes err a *bridge.ConfigError when it is a refusal that the
// same request gets again: a request JetStream answers as bad (400),
// replicas on a single server, JetStream not enabled, bad credentials.
// Other failures, such as "no responders" while a cluster elects a leader,
// or a timeout, stay as they are, for the route to retry.
func configIf(err error) error {
	var api *jetstream.APIError
	switch {
	case errors.Is(err, bridge.ErrConfig):
	case authFailure(err),
		errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount),
		errors.As(err, &api) && (api.Code == 400 || api.ErrorCode == errReplicasNotClustered):
		return &bridge.ConfigError{Err: err}
	}
	return err
}

// findStream returns the stream's name, creating it when asked to, and
// checks that it captures the subject.
func (c *config) findStream(ctx context.Context, js jetstream.JetStream) (string, error) {
	if c.stream == "" {
		return c.streamBySubject(ctx, js)
	}
	st, err := js.Stream(ctx, c.stream)
	switch {
	case err == nil:
		return c.stream, c.covers(st.CachedInfo().Config)
	case errors.Is(err, jetstream.ErrStreamNotFound) && c.create:
		cfg := jetstream.StreamConfig{
			Name: c.stream, Subjects: []string{c.subject}, Storage: c.storage, Duplicates: c.dupWindow,
			Replicas: c.replicas, MaxAge: c.maxAge, MaxBytes: -1,
		}
		if c.maxBytes > 0 {
			cfg.MaxBytes = c.maxBytes
		}
		_, err := js.CreateStream(ctx, cfg)
		if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return "", fmt.Errorf("create stream %s for subject %s: %w", c.stream, c.subject, err)
		}
		return c.stream, nil
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return "", &bridge.ConfigError{Err: fmt.Errorf("stream %s does not exist (create it, or set create_stream=true): %w", c.stream, err)}
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return "", fmt.Errorf("JetStream is not enabled on the server (nats-server -js): %w", err)
	case errors.Is(err, natsgo.ErrNoResponders):
		return "", fmt.Errorf("look up stream %s: JetStream does not answer (not enabled with nats-server -js, or the cluster has no leader yet): %w", c.stream, err)
	}
	return "", fmt.Errorf("look up stream %s: %w", c.stream, err)
}

func (c *config) streamBySubject(ctx context.Context, js jetstream.JetStream) (string, error) {
	name, err := js.StreamNameBySubject(ctx, c.subject)
	switch {
	case err == nil:
		return name, nil
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return "", &bridge.ConfigError{Err: fmt.Errorf("no stream captures subject %s (create one, or set stream=NAME&create_stream=true): %w", c.subject, err)}
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return "", fmt.Errorf("JetStream is not enabled on the server (nats-server -js): %w", err)
	case errors.Is(err, natsgo.ErrNoResponders):
		return "", fmt.Errorf("find the stream of subject %s: JetStream does not answer (not enabled with nats-server -js, or the cluster has no leader yet): %w", c.subject, err)
	}
	return "", fmt.Errorf("find the stream of subject %s: %w", c.subject, err)
}

// covers checks that the stream captures a subject without wildcards (a
// target's); a source's filter is checked by JetStream when it makes the
// consumer.
func (c *config) covers(sc jetstream.StreamConfig) error {
	if strings.ContainsAny(c.subject, "*>") {
		return nil
	}
	for _, s := range sc.Subjects {
		if subjectMatches(s, c.subject) {
			return nil
		}
	}
	return &bridge.ConfigError{Err: fmt.Errorf("stream %s does not capture subject %s (its subjects: %s)",
		c.stream, c.subject, strings.Join(sc.Subjects, ", "))}
}

// subjectMatches reports whether the literal subject matches pattern, a
// subject with the wildcards * (one token) and > (the rest).
func subjectMatches(pattern, subject string) bool {
	p, s := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i, tok := range p {
		switch {
		case tok == ">":
			return len(s) > i
		case i >= len(s):
			return false
		case tok != "*" && tok != s[i]:
			return false
		}
	}
	return len(p) == len(s)
}

// recordingDialer remembers the last dial error, which nats.go replaces by
// "no servers available" when every server failed.
type recordingDialer struct {
	d    net.Dialer
	mu   sync.Mutex
	last error
}

// Dial dials like net.Dialer and records a failure.
func (r *recordingDialer) Dial(network, address string) (net.Conn, error) {
	conn, err := r.d.Dial(network, address)
	if err != nil {
		r.mu.Lock()
		r.last = err
		r.mu.Unlock()
	}
	return conn, err
}

func (r *recordingDialer) lastErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}
