package nats

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mqb-project/mqb/core/option"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
)

// The tests use the machine's NATS server with JetStream unless
// MQB_TEST_NATS_SERVER names another host:port.
func testServer() string {
	if s := os.Getenv("MQB_TEST_NATS_SERVER"); s != "" {
		return s
	}
	return "127.0.0.1:4222"
}

const natsStart = "start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log"

// needServer returns a JetStream context on the test server; it skips the
// test when the server is unreachable, or fails it when
// MQB_REQUIRE_SERVICES=1.
func needServer(t testing.TB) jetstream.JetStream {
	t.Helper()
	nc, err := natsgo.Connect("nats://"+testServer(), natsgo.Timeout(3*time.Second))
	if err == nil {
		var js jetstream.JetStream
		if js, err = jetstream.New(nc); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			if _, err = js.AccountInfo(ctx); err == nil {
				t.Cleanup(nc.Close)
				return js
			}
		}
		nc.Close()
	}
	msg := fmt.Sprintf("NATS with JetStream is not reachable at %s (%v); start it with `%s`", testServer(), err, natsStart)
	if os.Getenv("MQB_REQUIRE_SERVICES") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return nil
}

func unique(prefix string) string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// newStream creates a stream on subject.> with a unique name and deletes it
// when the test ends. It returns the stream's name and subject prefix.
func newStream(t testing.TB, js jetstream.JetStream) (stream, subject string) {
	t.Helper()
	stream = strings.ToUpper(unique("MQB_TEST_"))
	subject = unique("mqbtest.")
	ctx := context.Background()
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{subject + ".>"}, Storage: jetstream.MemoryStorage})
	require.NoError(t, err)
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), stream) })
	return stream, subject
}

func testEnv() *bridge.Env {
	env := bridge.NewEnv()
	Register(env)
	return env
}

func resolve(t testing.TB, raw string) (*bridge.Env, *option.Values) {
	t.Helper()
	env := testEnv()
	r, err := env.Resolve(bridge.Endpoint{URL: raw})
	require.NoError(t, err)
	return env, r.Values
}

func openSource(t testing.TB, query string) *Source {
	t.Helper()
	s, err := NewSource(resolve(t, "nats://"+testServer()+"?"+query))
	require.NoError(t, err)
	require.NoError(t, s.Connect(context.Background()))
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func openTarget(t testing.TB, query string) *Target {
	t.Helper()
	tg, err := NewTarget(resolve(t, "nats://"+testServer()+"?"+query))
	require.NoError(t, err)
	require.NoError(t, tg.Connect(context.Background()))
	t.Cleanup(func() { _ = tg.Close(context.Background(), nil) })
	return tg
}

func msgs(ids ...string) []*bridge.Message {
	out := make([]*bridge.Message, len(ids))
	for i, id := range ids {
		out[i] = &bridge.Message{ID: id, Payload: []byte("payload of " + id), Metadata: map[string]string{"content_type": "text/plain"}}
	}
	return out
}

func streamMsgs(t testing.TB, js jetstream.JetStream, stream string) uint64 {
	t.Helper()
	s, err := js.Stream(context.Background(), stream)
	require.NoError(t, err)
	info, err := s.Info(context.Background())
	require.NoError(t, err)
	return info.State.Msgs
}

func read(t testing.TB, s *Source, n int) ([]*bridge.Message, []bridge.AckFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*bridge.Message
	var acks []bridge.AckFunc
	for len(out) < n {
		ms, ack, err := s.ReadBatch(ctx, n-len(out))
		require.NoError(t, err, "after %d of %d messages", len(out), n)
		out = append(out, ms...)
		acks = append(acks, ack)
	}
	return out, acks
}

func settleAll(t testing.TB, acks []bridge.AckFunc, err error) {
	t.Helper()
	for _, a := range acks {
		require.NoError(t, a(context.Background(), err))
	}
}

func ids(ms []*bridge.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func expectEnd(t testing.TB, s *Source) {
	t.Helper()
	ms, _, err := s.ReadBatch(context.Background(), 10)
	require.ErrorIs(t, err, bridge.ErrEndOfInput, "unexpected messages: %v", ids(ms))
}

func TestURLFields(t *testing.T) {
	env := testEnv()
	tests := []struct {
		name    string
		url     string
		want    map[string]string
		wantErr string
	}{
		{name: "brief example", url: "nats://host:4222?subject=orders.eu&stream=ORDERS&durable=db",
			want: map[string]string{"servers": "host:4222", "subject": "orders.eu", "stream": "ORDERS", "durable": "db"}},
		{name: "user and password", url: "nats://u:p@h?subject=s", want: map[string]string{"username": "u", "password": "p", "servers": "h"}},
		{name: "token", url: "nats://s3cret@h?subject=s", want: map[string]string{"token": "s3cret"}},
		{name: "subject in the path", url: "nats://h/orders", wantErr: "subject option"},
		{name: "unknown option", url: "nats://h?subject=s&durabel=x", wantErr: "valid:"},
		{name: "no subject", url: "nats://h", wantErr: `"subject"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := env.Resolve(bridge.Endpoint{URL: tt.url})
			if tt.wantErr != "" {
				require.ErrorIs(t, err, option.ErrInvalid)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			for k, v := range tt.want {
				assert.Equal(t, v, r.Values.String(k), k)
			}
		})
	}

	r, err := env.Resolve(bridge.Endpoint{URL: "nats://s3cret@h:4222?subject=s"})
	require.NoError(t, err)
	assert.Equal(t, "nats://xxxxx@h:4222?subject=s", r.Display)
	_, err = env.Resolve(bridge.Endpoint{URL: "nats://u:pw@h:4222?subject=s&token=tk&durabel=x"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nats://u:xxxxx@h:4222?subject=s&token=xxxxx&durabel=x")
	r, err = env.Resolve(bridge.Endpoint{URL: "nats://?servers=a:4222,b:4222&subject=s&password=pw&username=u"})
	require.NoError(t, err)
	assert.Equal(t, "nats://?servers=a:4222,b:4222&subject=s&password=xxxxx&username=u", r.Display, "a URL without host keeps its //")

	_, err = NewSource(resolve(t, "nats://h?subject=s"))
	require.ErrorIs(t, err, option.ErrInvalid)
	assert.Contains(t, err.Error(), "durable")
	_, err = NewTarget(resolve(t, "nats://h?subject=s.*"))
	require.ErrorIs(t, err, option.ErrInvalid)
	_, err = NewTarget(resolve(t, "nats://h?subject=s&create_stream=true"))
	require.ErrorIs(t, err, option.ErrInvalid)
}

// TestDuplicatePublishIsStoredOnce: a batch written again (the route
// retries after a crash or a lost acknowledgement) carries the same message
// ids, and JetStream stores each message once.
func TestDuplicatePublishIsStoredOnce(t *testing.T) {
	js := needServer(t)
	stream := strings.ToUpper(unique("MQB_TEST_"))
	subject := unique("mqbtest.")
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), stream) })

	tg := openTarget(t, "subject="+subject+"&stream="+stream+"&create_stream=true&storage=memory")
	batch := msgs("a", "b", "c")
	require.NoError(t, tg.WriteBatch(context.Background(), batch))
	assert.Equal(t, uint64(3), streamMsgs(t, js, stream), "WriteBatch returns after the stream stored the batch")

	require.NoError(t, tg.WriteBatch(context.Background(), batch))
	require.NoError(t, tg.WriteBatch(context.Background(), append(msgs("c"), msgs("d")...)))
	assert.Equal(t, uint64(4), streamMsgs(t, js, stream), "redelivered ids are stored once")

	s, err := js.Stream(context.Background(), stream)
	require.NoError(t, err)
	info, err := s.Info(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{subject}, info.Config.Subjects, "create_stream captures the subject")
}

func TestPullAckAndNak(t *testing.T) {
	js := needServer(t)
	stream, subject := newStream(t, js)
	tg := openTarget(t, "subject="+subject+".orders")
	require.NoError(t, tg.WriteBatch(context.Background(), msgs("m1", "m2", "m3", "m4")))

	durable := unique("mqb-test-")
	query := "subject=" + subject + ".>&stream=" + stream + "&durable=" + durable + "&idle_timeout=500ms"
	src := openSource(t, query)

	got, acks := read(t, src, 2)
	assert.Equal(t, []string{"m1", "m2"}, ids(got), "message ids come back from Nats-Msg-Id")
	md := got[0].Metadata
	assert.Equal(t, subject+".orders", md["nats_subject"])
	assert.Equal(t, stream, md["nats_stream"])
	assert.Equal(t, "1", md["nats_sequence"])
	assert.Equal(t, "1", md["nats_delivered"])
	assert.Equal(t, "text/plain", md["content_type"], "metadata travels as headers")
	assert.Equal(t, "payload of m1", string(got[0].Payload))

	// The target failed: nak, and JetStream delivers them again at once.
	settleAll(t, acks, errors.New("target down"))
	got, acks = read(t, src, 4)
	assert.ElementsMatch(t, []string{"m1", "m2", "m3", "m4"}, ids(got))
	for _, m := range got {
		if m.ID == "m1" {
			assert.Equal(t, "2", m.Metadata["nats_delivered"])
		}
	}
	settleAll(t, acks, nil)
	expectEnd(t, src)
	require.NoError(t, src.Close(context.Background()))

	// A new reader of the same durable consumer starts after the acked ones.
	require.NoError(t, tg.WriteBatch(context.Background(), msgs("m5")))
	again := openSource(t, query)
	got, acks = read(t, again, 1)
	assert.Equal(t, []string{"m5"}, ids(got))
	settleAll(t, acks, nil)
	expectEnd(t, again)
}

// TestUnackedAreRedeliveredAfterClose: a reader that goes away without
// acknowledging (a crash) leaves its messages to the next reader.
func TestUnackedAreRedeliveredAfterClose(t *testing.T) {
	js := needServer(t)
	stream, subject := newStream(t, js)
	tg := openTarget(t, "subject="+subject+".x")
	require.NoError(t, tg.WriteBatch(context.Background(), msgs("u1", "u2")))

	query := "subject=" + subject + ".>&durable=" + unique("mqb-test-") + "&ack_wait=1s&idle_timeout=3s"
	first := openSource(t, query)
	got, _ := read(t, first, 2)
	assert.Equal(t, []string{"u1", "u2"}, ids(got))
	require.NoError(t, first.Close(context.Background()))

	second := openSource(t, query)
	got, acks := read(t, second, 2)
	assert.Equal(t, []string{"u1", "u2"}, ids(got))
	assert.Equal(t, stream, got[0].Metadata["nats_stream"], "the stream is found from the subject")
	settleAll(t, acks, nil)
}

func TestDrainEndsWhenTheDurableHasNothingLeft(t *testing.T) {
	js := needServer(t)
	stream, subject := newStream(t, js)
	s, err := NewSource(resolve(t, "nats://"+testServer()+"?subject="+subject+".>&stream="+stream+"&durable="+unique("d")))
	require.NoError(t, err)
	s.SetDrain(true)
	require.NoError(t, s.Connect(context.Background()))
	defer s.Close(context.Background())
	start := time.Now()
	_, _, err = s.ReadBatch(context.Background(), 10)
	require.ErrorIs(t, err, bridge.ErrEndOfInput)
	assert.Less(t, time.Since(start), 3*drainPoll, "an empty durable ends the drain after one empty pull")

	s.SetDrain(false)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, _, err = s.ReadBatch(ctx, 10)
	require.ErrorIs(t, err, context.DeadlineExceeded, "without drain and idle_timeout the source waits")
}

// TestDrainWaitsForMessagesOfAnotherReader: readers share a durable
// consumer. A draining reader must not end while another holds messages it
// has not acknowledged: it ends once that reader acknowledged them, and
// when that reader dies, it gets them itself after ack_wait.
func TestDrainWaitsForMessagesOfAnotherReader(t *testing.T) {
	js := needServer(t)
	stream, subject := newStream(t, js)
	tg := openTarget(t, "subject="+subject+".x")
	query := "subject=" + subject + ".>&stream=" + stream + "&durable=" + unique("shared-") + "&ack_wait=4s"
	draining := func() *Source {
		s, err := NewSource(resolve(t, "nats://"+testServer()+"?"+query))
		require.NoError(t, err)
		s.SetDrain(true)
		require.NoError(t, s.Connect(context.Background()))
		t.Cleanup(func() { _ = s.Close(context.Background()) })
		return s
	}

	// A live peer holds two messages for 3s, then acknowledges them.
	require.NoError(t, tg.WriteBatch(context.Background(), msgs("a1", "a2")))
	peer := openSource(t, query)
	_, acks := read(t, peer, 2)
	go func() {
		time.Sleep(3 * time.Second)
		settleAll(t, acks, nil)
	}()
	start := time.Now()
	expectEnd(t, draining())
	assert.Greater(t, time.Since(start), 2500*time.Millisecond, "the drain waited for the peer's acknowledgement")

	// A peer dies holding two messages: they come back after ack_wait (4s),
	// well after an idle period of a couple of seconds.
	require.NoError(t, tg.WriteBatch(context.Background(), msgs("b1", "b2")))
	dead := openSource(t, query)
	got, _ := read(t, dead, 2)
	require.Equal(t, []string{"b1", "b2"}, ids(got))
	require.NoError(t, dead.Close(context.Background()))
	s := draining()
	start = time.Now()
	got, acks = read(t, s, 2)
	assert.Equal(t, []string{"b1", "b2"}, ids(got))
	assert.Greater(t, time.Since(start), 2*time.Second, "delivered again only after ack_wait")
	settleAll(t, acks, nil)
	expectEnd(t, s)
}

func TestCreateStreamForACluster(t *testing.T) {
	js := needServer(t)
	stream := strings.ToUpper(unique("MQB_TEST_"))
	subject := unique("mqbtest.")
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), stream) })
	openTarget(t, "subject="+subject+"&stream="+stream+"&create_stream=true&storage=memory&max_age=1h&max_bytes=1048576&replicas=1")
	st, err := js.Stream(context.Background(), stream)
	require.NoError(t, err)
	cfg := st.CachedInfo().Config
	assert.Equal(t, time.Hour, cfg.MaxAge)
	assert.Equal(t, int64(1048576), cfg.MaxBytes)
	assert.Equal(t, 1, cfg.Replicas)
	assert.Equal(t, jetstream.MemoryStorage, cfg.Storage)

	_, err = testEnv().Resolve(bridge.Endpoint{URL: "nats://h?subject=s&stream=S&create_stream=true&replicas=7"})
	require.ErrorIs(t, err, option.ErrInvalid)
	assert.Contains(t, err.Error(), `"replicas" = "7": must be from 1 to 5`)
}

func TestMissingStream(t *testing.T) {
	needServer(t)
	tg, err := NewTarget(resolve(t, "nats://"+testServer()+"?subject="+unique("nostream.")))
	require.NoError(t, err)
	err = tg.Connect(context.Background())
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound)
	require.ErrorIs(t, err, bridge.ErrConfig, "a configuration mistake: not retried, exit 2")
	assert.Contains(t, err.Error(), "create_stream=true")

	tg, err = NewTarget(resolve(t, "nats://"+testServer()+"?subject=x&stream="+unique("NOPE")))
	require.NoError(t, err)
	err = tg.Connect(context.Background())
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound)
	require.ErrorIs(t, err, bridge.ErrConfig)
}

func TestSubjectNotInTheStream(t *testing.T) {
	js := needServer(t)
	stream, subject := newStream(t, js)
	openTarget(t, "subject="+subject+".a.b&stream="+stream) // subject.> covers it

	tg, err := NewTarget(resolve(t, "nats://"+testServer()+"?subject="+unique("elsewhere.")+"&stream="+stream))
	require.NoError(t, err)
	err = tg.Connect(context.Background())
	require.ErrorIs(t, err, bridge.ErrConfig)
	assert.Contains(t, err.Error(), "does not capture subject")
	assert.Contains(t, err.Error(), subject+".>", "names the subjects the stream has")

	src, err := NewSource(resolve(t, "nats://"+testServer()+"?subject="+unique("elsewhere.")+"&stream="+stream+"&durable="+unique("d")))
	require.NoError(t, err)
	err = src.Connect(context.Background())
	require.ErrorIs(t, err, bridge.ErrConfig, "JetStream refuses a filter outside the stream")
}

func TestSubjectMatches(t *testing.T) {
	for _, tc := range []struct {
		pattern, subject string
		want             bool
	}{
		{"orders", "orders", true},
		{"orders", "orders.eu", false},
		{"orders.*", "orders.eu", true},
		{"orders.*", "orders.eu.x", false},
		{"orders.>", "orders.eu.x", true},
		{"orders.>", "orders", false},
		{">", "a.b", true},
		{"*.eu", "orders.eu", true},
		{"*.eu", "orders.us", false},
	} {
		assert.Equal(t, tc.want, subjectMatches(tc.pattern, tc.subject), "%s ~ %s", tc.pattern, tc.subject)
	}
}

func TestWhichFailuresAreConfiguration(t *testing.T) {
	for _, tc := range []struct {
		err    error
		config bool
	}{
		{natsgo.ErrNoResponders, false},
		{context.DeadlineExceeded, false},
		{natsgo.ErrTimeout, false},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, false},
		{natsgo.ErrAuthorization, true},
		{jetstream.ErrJetStreamNotEnabled, true},
		{&jetstream.APIError{Code: 400, ErrorCode: 10093, Description: "consumer filter subject is not a valid subset of the interest subjects"}, true},
		{&bridge.ConfigError{Err: errors.New("stream X does not exist")}, true},
		{&jetstream.APIError{Code: 500, ErrorCode: 10074, Description: "replicas > 1 not supported in non-clustered mode"}, true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10023, Description: "insufficient resources"}, false},
	} {
		err := configIf(fmt.Errorf("nats source: %w", tc.err))
		assert.Equal(t, tc.config, errors.Is(err, bridge.ErrConfig), "%v", tc.err)
	}
}

func TestBadMetadataHeader(t *testing.T) {
	js := needServer(t)
	_, subject := newStream(t, js)
	tg := openTarget(t, "subject="+subject+".h")
	err := tg.WriteBatch(context.Background(), []*bridge.Message{{ID: "x", Metadata: map[string]string{"file path": "/a"}}})
	require.ErrorIs(t, err, bridge.ErrPermanent)
	assert.Contains(t, err.Error(), "metadata_headers=false")

	plain := openTarget(t, "subject="+subject+".h&metadata_headers=false")
	require.NoError(t, plain.WriteBatch(context.Background(), []*bridge.Message{{ID: "x", Metadata: map[string]string{"file path": "/a"}}}))
}

func TestConnectionRefusedIsOneClearLine(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	const password = "Hunter2-S3cret"
	for _, raw := range []string{
		"nats://mqb:" + password + "@" + addr + "?subject=s&durable=d&connect_timeout=1s",
		"nats://" + password + "@" + addr + "?subject=s&durable=d&connect_timeout=1s",
	} {
		s, err := NewSource(resolve(t, raw))
		require.NoError(t, err)
		err = s.Connect(context.Background())
		require.Error(t, err)
		t.Log(err)
		assert.Contains(t, err.Error(), "cannot connect")
		assert.Contains(t, err.Error(), addr)
		assert.NotContains(t, err.Error(), password)
		assert.NotContains(t, err.Error(), "\n")
	}
}

// startServer runs /usr/sbin/nats-server with args on a free loopback port
// for the test and returns its host:port; it skips (or fails under
// MQB_REQUIRE_SERVICES=1) when the binary is missing.
func startServer(t *testing.T, args ...string) string {
	t.Helper()
	const bin = "/usr/sbin/nats-server"
	if _, err := os.Stat(bin); err != nil {
		msg := "nats-server is not installed at " + bin + " (apt-get install nats-server)"
		if os.Getenv("MQB_REQUIRE_SERVICES") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	require.NoError(t, l.Close())
	cmd := exec.Command(bin, append([]string{"-a", "127.0.0.1", "-p", port}, args...)...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
	}
	t.Fatalf("nats-server did not come up on %s", addr)
	return ""
}

func TestBadCredentialsAreConfiguration(t *testing.T) {
	addr := startServer(t, "-js", "-sd", t.TempDir(), "--user", "mqb", "--pass", "right-Pa55")
	s, err := NewSource(resolve(t, "nats://mqb:wrong-Pa55@"+addr+"?subject=s&durable=d"))
	require.NoError(t, err)
	start := time.Now()
	err = s.Connect(context.Background())
	require.ErrorIs(t, err, bridge.ErrConfig, "not retried: exit 2")
	assert.ErrorIs(t, err, natsgo.ErrAuthorization)
	assert.NotContains(t, err.Error(), "wrong-Pa55")
	assert.Less(t, time.Since(start), 5*time.Second)

	// The right password gets through to JetStream.
	tg := openTargetAt(t, "nats://mqb:right-Pa55@"+addr+"?subject=s&stream=S&create_stream=true")
	require.NoError(t, tg.WriteBatch(context.Background(), msgs("x")))
}

func openTargetAt(t *testing.T, raw string) *Target {
	t.Helper()
	tg, err := NewTarget(resolve(t, raw))
	require.NoError(t, err)
	require.NoError(t, tg.Connect(context.Background()))
	t.Cleanup(func() { _ = tg.Close(context.Background(), nil) })
	return tg
}
