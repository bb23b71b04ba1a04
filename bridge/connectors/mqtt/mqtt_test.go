package mqtt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mqb-project/mqb/core/option"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
)

// The tests use the machine's Mosquitto (anonymous access) unless
// MQB_TEST_MQTT_BROKER names another host:port.
func testBroker() string {
	if b := os.Getenv("MQB_TEST_MQTT_BROKER"); b != "" {
		return b
	}
	return "127.0.0.1:1883"
}

const mosquittoStart = "mosquitto -d -c /etc/mosquitto/mosquitto.conf"

// needBroker takes the broker lock (shared, or exclusive for a test that
// restarts the broker) and skips the test when the broker is unreachable,
// or fails it when MQB_REQUIRE_SERVICES=1.
func needBroker(t testing.TB, exclusive bool) {
	t.Helper()
	lockBroker(t, exclusive)
	var c net.Conn
	var err error
	for range 10 {
		if c, err = net.DialTimeout("tcp", testBroker(), 2*time.Second); err == nil {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if err != nil {
		msg := fmt.Sprintf("MQTT broker is not reachable at %s (%v); start it with `%s`", testBroker(), err, mosquittoStart)
		if os.Getenv("MQB_REQUIRE_SERVICES") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	c.Close()
}

func unique(prefix string) string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func resolve(t testing.TB, env *bridge.Env, raw string) *option.Values {
	t.Helper()
	r, err := env.Resolve(bridge.Endpoint{URL: raw})
	require.NoError(t, err)
	return r.Values
}

func testEnv() *bridge.Env {
	env := bridge.NewEnv()
	Register(env)
	return env
}

// openSource builds and connects a source; query holds its options.
func openSource(t testing.TB, query string) *Source {
	t.Helper()
	env := testEnv()
	s, err := NewSource(env, resolve(t, env, "mqtt://"+testBroker()+"?"+query))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.Connect(ctx))
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func openTarget(t testing.TB, query string) *Target {
	t.Helper()
	env := testEnv()
	tg, err := NewTarget(env, resolve(t, env, "mqtt://"+testBroker()+"?"+query))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, tg.Connect(ctx))
	t.Cleanup(func() { _ = tg.Close(context.Background(), nil) })
	return tg
}

// forgetSession removes a persistent session from the broker when the test
// ends, by connecting once with the same client id and a clean session.
func forgetSession(t testing.TB, clientID string) {
	t.Cleanup(func() {
		o := paho.NewClientOptions().AddBroker("tcp://" + testBroker()).SetClientID(clientID).SetCleanSession(true)
		c := paho.NewClient(o)
		if tok := c.Connect(); tok.WaitTimeout(5*time.Second) && tok.Error() == nil {
			c.Disconnect(100)
		}
	})
}

// publish sends payloads with a plain client at QoS 1.
func publish(t testing.TB, topic string, payloads ...string) {
	t.Helper()
	c := paho.NewClient(paho.NewClientOptions().AddBroker("tcp://" + testBroker()).SetClientID(unique("mqb-test-pub-")))
	tok := c.Connect()
	require.True(t, tok.WaitTimeout(5*time.Second))
	require.NoError(t, tok.Error())
	defer c.Disconnect(100)
	for _, p := range payloads {
		tok := c.Publish(topic, 1, false, p)
		require.True(t, tok.WaitTimeout(5*time.Second))
		require.NoError(t, tok.Error())
	}
}

// read reads batches until n messages arrived or the source ends.
func read(t testing.TB, s *Source, n int) ([]*bridge.Message, []bridge.AckFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var msgs []*bridge.Message
	var acks []bridge.AckFunc
	for len(msgs) < n {
		ms, ack, err := s.ReadBatch(ctx, n-len(msgs))
		if err != nil {
			t.Fatalf("ReadBatch after %d of %d messages: %v", len(msgs), n, err)
		}
		msgs = append(msgs, ms...)
		acks = append(acks, ack)
	}
	return msgs, acks
}

func payloads(ms []*bridge.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m.Payload)
	}
	return out
}

func settleAll(t testing.TB, acks []bridge.AckFunc, err error) {
	t.Helper()
	for _, a := range acks {
		require.NoError(t, a(context.Background(), err))
	}
}

// expectEnd checks that the source has nothing more: with a short idle
// timeout ReadBatch ends the input.
func expectEnd(t testing.TB, s *Source) {
	t.Helper()
	ms, _, err := s.ReadBatch(context.Background(), 10)
	require.ErrorIs(t, err, bridge.ErrEndOfInput, "unexpected messages: %q", payloads(ms))
}

func TestURLFields(t *testing.T) {
	env := testEnv()
	tests := []struct {
		name    string
		url     string
		check   func(t *testing.T, v *option.Values)
		wantErr string
	}{
		{name: "seed example", url: "mqtt://broker.local:1883?topic=telemetry", check: func(t *testing.T, v *option.Values) {
			assert.Equal(t, "broker.local:1883", v.String("broker"))
			assert.Equal(t, "telemetry", v.String("topic"))
			assert.Equal(t, 1, v.Int("qos"))
			assert.False(t, v.Bool("clean_session"))
			assert.False(t, v.Bool("tls"))
		}},
		{name: "mqtts with credentials", url: "mqtts://u:p%40ss@b:8883?topic=a/%2B/c&qos=2&insecure_skip_verify=true", check: func(t *testing.T, v *option.Values) {
			assert.True(t, v.Bool("tls"))
			assert.Equal(t, "u", v.String("username"))
			assert.Equal(t, "p@ss", v.String("password"))
			assert.Equal(t, "a/+/c", v.String("topic"))
			assert.Equal(t, 2, v.Int("qos"))
		}},
		{name: "topic in the path", url: "mqtt://b/telemetry", wantErr: "topic option"},
		{name: "qos out of range", url: "mqtt://b?topic=t&qos=3", wantErr: `"qos"`},
		{name: "unknown option", url: "mqtt://b?topic=t&qso=1", wantErr: "valid:"},
		{name: "broker twice", url: "mqtt://b?topic=t&broker=c:1", wantErr: "both in the URL"},
		{name: "no topic", url: "mqtt://b", wantErr: `"topic"`},
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
			tt.check(t, r.Values)
		})
	}

	r, err := env.Resolve(bridge.Endpoint{URL: "mqtt://user:hunter2@b:1883?topic=t"})
	require.NoError(t, err)
	assert.Equal(t, "mqtt://user:xxxxx@b:1883?topic=t", r.Display)
	_, err = env.Resolve(bridge.Endpoint{URL: "mqtt://b:1883?topic=t&password=hunter3&qso=1"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mqtt://b:1883?topic=t&password=xxxxx&qso=1")

	_, err = NewTarget(env, resolve(t, env, "mqtt://b?topic=a/%23"))
	require.ErrorIs(t, err, option.ErrInvalid)
	_, err = NewSource(env, resolve(t, env, "mqtt://b?topic=a&ca_file=/x"))
	require.ErrorIs(t, err, option.ErrInvalid)
}

func TestDerivedClientIDIsStable(t *testing.T) {
	a := derivedClientID("h:1883", "telemetry")
	assert.Equal(t, a, derivedClientID("h:1883", "telemetry"))
	assert.NotEqual(t, a, derivedClientID("h:1883", "orders"))
	assert.LessOrEqual(t, len(a), 23, "MQTT 3.1.1 brokers must accept ids up to 23 characters")
}

func TestTargetPublishesAndSourceReads(t *testing.T) {
	needBroker(t, false)
	topic := unique("mqb-test/")
	id := unique("mqb-test-")
	forgetSession(t, id)
	src := openSource(t, "topic="+url.QueryEscape(topic+"/#")+"&client_id="+id+"&idle_timeout=500ms")
	tg := openTarget(t, "topic="+url.QueryEscape(topic+"/orders"))

	var batch []*bridge.Message
	for i := range 25 {
		batch = append(batch, &bridge.Message{ID: fmt.Sprint(i), Payload: fmt.Appendf(nil, `{"n":%d}`, i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, tg.WriteBatch(ctx, batch), "WriteBatch returns once every PUBACK arrived")

	// Mosquitto sends at most max_inflight_messages (20) unacknowledged
	// messages, so acknowledge batch by batch as the route does.
	var msgs []*bridge.Message
	for len(msgs) < 25 {
		ms, acks := read(t, src, 1)
		settleAll(t, acks, nil)
		msgs = append(msgs, ms...)
	}
	assert.Equal(t, payloads(batch), payloads(msgs), "in order")
	md := msgs[0].Metadata
	assert.Equal(t, topic+"/orders", md["mqtt_topic"])
	assert.Equal(t, "1", md["mqtt_qos"])
	assert.Equal(t, "false", md["mqtt_retained"])
	assert.Equal(t, "false", md["mqtt_duplicate"])
	assert.NotEqual(t, "0", md["mqtt_message_id"])
	assert.Empty(t, msgs[0].ID, "MQTT 3.1.1 carries no message id; the route assigns one")
	expectEnd(t, src)
}

// TestNoPubackBeforeAck proves that the source acknowledges to the broker
// only when the route acknowledges: messages read but never acknowledged
// come back from the broker to the next session with the same client id,
// and acknowledged ones do not.
func TestNoPubackBeforeAck(t *testing.T) {
	needBroker(t, false)
	topic := unique("mqb-test/")
	id := unique("mqb-test-")
	forgetSession(t, id)
	query := "topic=" + url.QueryEscape(topic) + "&client_id=" + id + "&idle_timeout=700ms"

	first := openSource(t, query)
	publish(t, topic, "a", "b", "c")
	msgs, _ := read(t, first, 3)
	assert.Equal(t, []string{"a", "b", "c"}, payloads(msgs))
	// The target never made them durable: no ack. The process goes away.
	require.NoError(t, first.Close(context.Background()))

	second := openSource(t, query)
	msgs, acks := read(t, second, 3)
	assert.Equal(t, []string{"a", "b", "c"}, payloads(msgs), "the broker delivers unacknowledged messages again")
	assert.Equal(t, "true", msgs[0].Metadata["mqtt_duplicate"])
	settleAll(t, acks, nil)
	time.Sleep(100 * time.Millisecond) // let the PUBACKs leave before the connection closes
	require.NoError(t, second.Close(context.Background()))

	third := openSource(t, query)
	expectEnd(t, third)
}

// TestNackDeliversAgain: a failed write leaves the messages unacknowledged
// at the broker, and the source itself delivers them again first, with the
// ids the route gave them, so an idempotent target can recognise them.
func TestNackDeliversAgain(t *testing.T) {
	needBroker(t, false)
	topic := unique("mqb-test/")
	id := unique("mqb-test-")
	forgetSession(t, id)
	src := openSource(t, "topic="+url.QueryEscape(topic)+"&client_id="+id+"&idle_timeout=700ms")
	publish(t, topic, "1", "2", "3", "4")

	msgs, acks := read(t, src, 2)
	msgs[0].ID, msgs[1].ID = "id-1", "id-2" // as the route does
	settleAll(t, acks, errors.New("target down"))

	again, acks := read(t, src, 4)
	assert.Equal(t, []string{"1", "2", "3", "4"}, payloads(again))
	assert.Equal(t, "id-1", again[0].ID)
	assert.Equal(t, "id-2", again[1].ID)
	settleAll(t, acks, nil)
	expectEnd(t, src)
}

func TestDrainEndsAfterIdle(t *testing.T) {
	needBroker(t, false)
	id := unique("mqb-test-")
	forgetSession(t, id)
	env := testEnv()
	s, err := NewSource(env, resolve(t, env, "mqtt://"+testBroker()+"?topic="+unique("mqb-test/")+"&client_id="+id+"&clean_session=true"))
	require.NoError(t, err)
	s.SetDrain(true)
	require.NoError(t, s.Connect(context.Background()))
	defer s.Close(context.Background())
	start := time.Now()
	_, _, err = s.ReadBatch(context.Background(), 10)
	require.ErrorIs(t, err, bridge.ErrEndOfInput)
	assert.InDelta(t, DefaultDrainIdle.Seconds(), time.Since(start).Seconds(), 0.5)

	// Without drain and without idle_timeout the source waits for ctx.
	s.SetDrain(false)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, _, err = s.ReadBatch(ctx, 10)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestQoS0AndQoS2(t *testing.T) {
	needBroker(t, false)
	for _, qos := range []int{0, 2} {
		t.Run("qos"+strconv.Itoa(qos), func(t *testing.T) {
			topic := unique("mqb-test/")
			id := unique("mqb-test-")
			forgetSession(t, id)
			src := openSource(t, fmt.Sprintf("topic=%s&client_id=%s&qos=%d&idle_timeout=500ms", url.QueryEscape(topic), id, qos))
			tg := openTarget(t, fmt.Sprintf("topic=%s&qos=%d", url.QueryEscape(topic), qos))
			require.NoError(t, tg.WriteBatch(context.Background(), []*bridge.Message{{Payload: []byte("x")}, {Payload: []byte("y")}}))
			msgs, acks := read(t, src, 2)
			assert.Equal(t, []string{"x", "y"}, payloads(msgs))
			assert.Equal(t, strconv.Itoa(qos), msgs[0].Metadata["mqtt_qos"])
			settleAll(t, acks, nil)
			expectEnd(t, src)
		})
	}
}

func TestConnectionRefusedIsOneClearLine(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	const password = "Hunter2-S3cret"
	env := testEnv()
	raw := "mqtt://mqb:" + password + "@" + addr + "?topic=t" // the default connect_timeout, 30s
	for _, kind := range []string{"source", "target"} {
		t.Run(kind, func(t *testing.T) {
			var ep interface{ Connect(context.Context) error }
			if kind == "source" {
				ep, err = NewSource(env, resolve(t, env, raw))
			} else {
				ep, err = NewTarget(env, resolve(t, env, raw))
			}
			require.NoError(t, err)
			start := time.Now()
			err = ep.Connect(context.Background())
			require.Error(t, err)
			t.Log(err)
			assert.Less(t, time.Since(start), 5*time.Second)
			assert.Contains(t, err.Error(), "connection refused")
			assert.NotErrorIs(t, err, bridge.ErrConfig, "a broker that is down is retried by the route")
			assert.Contains(t, err.Error(), addr)
			assert.NotContains(t, err.Error(), password)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

// collector is a target that keeps what it is given.
type collector struct {
	mu   sync.Mutex
	msgs []*bridge.Message
}

func (c *collector) Connect(context.Context) error { return nil }
func (c *collector) WriteBatch(_ context.Context, ms []*bridge.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, ms...)
	return nil
}
func (c *collector) Close(context.Context, error) error { return nil }

func (c *collector) payloads() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return payloads(c.msgs)
}

// restartMosquitto stops the machine's Mosquitto (SIGTERM: it saves its
// sessions) and starts it again after pause. It always leaves the broker
// running.
func restartMosquitto(t testing.TB, pause time.Duration) {
	t.Helper()
	pidText, err := os.ReadFile("/run/mosquitto/mosquitto.pid")
	if err != nil || os.Geteuid() != 0 || testBroker() != "127.0.0.1:1883" {
		t.Skipf("cannot restart the broker here (needs root and the local Mosquitto's pid file): %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(pidText)))
	require.NoError(t, err)
	start := func() {
		if c, err := net.DialTimeout("tcp", testBroker(), time.Second); err == nil {
			c.Close()
			return
		}
		out, err := exec.Command("mosquitto", "-d", "-c", "/etc/mosquitto/mosquitto.conf").CombinedOutput()
		if err != nil {
			t.Errorf("restart Mosquitto with `%s`: %v: %s", mosquittoStart, err, out)
		}
		for range 100 {
			if c, err := net.DialTimeout("tcp", testBroker(), time.Second); err == nil {
				c.Close()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Errorf("Mosquitto did not come back on %s; start it with `%s`", testBroker(), mosquittoStart)
	}
	t.Cleanup(start) // whatever happens, leave it running
	broker, err := os.FindProcess(pid)
	require.NoError(t, err)
	require.NoError(t, broker.Signal(syscall.SIGTERM))
	for range 200 {
		if broker.Signal(syscall.Signal(0)) != nil { // gone
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	time.Sleep(pause)
	start()
}

// TestBrokerRestartDuringCopy runs a route from the MQTT source to a
// collecting target, and a second route from an in-test source to the MQTT
// target, while the broker is stopped and started again: both sides
// reconnect by themselves and every message arrives.
func TestBrokerRestartDuringCopy(t *testing.T) {
	needBroker(t, true)
	topic := unique("mqb-test/")
	id := unique("mqb-test-")
	forgetSession(t, id)

	env := testEnv()
	src, err := NewSource(env, resolve(t, env, "mqtt://"+testBroker()+"?topic="+url.QueryEscape(topic)+"&client_id="+id+"&idle_timeout=3s&max_reconnect_interval=1s"))
	require.NoError(t, err)
	tg, err := NewTarget(env, resolve(t, env, "mqtt://"+testBroker()+"?topic="+url.QueryEscape(topic)+"&client_id="+id+"-pub&max_reconnect_interval=1s&write_timeout=3s"))
	require.NoError(t, err)
	forgetSession(t, id+"-pub")
	got := &collector{}

	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	consumed := make(chan error, 1)
	go func() {
		r := &bridge.Route{Source: src, Target: got, BatchSize: 10, Input: "mqtt", Output: "collector"}
		consumed <- r.Run(ctx)
	}()

	const n = 60
	feed := &feeder{n: n, every: 50 * time.Millisecond}
	produced := make(chan error, 1)
	go func() {
		r := &bridge.Route{Source: feed, Target: tg, BatchSize: 5, Input: "feeder", Output: "mqtt",
			Retry: &bridge.RetryPolicy{Initial: 200 * time.Millisecond, Max: time.Second, MaxRetries: -1}}
		produced <- r.Run(ctx)
	}()

	// Let some messages through, then take the broker away for a while.
	require.Eventually(t, func() bool { return len(got.payloads()) >= 10 }, 10*time.Second, 20*time.Millisecond)
	restartMosquitto(t, 700*time.Millisecond)

	require.NoError(t, <-produced)
	require.NoError(t, <-consumed)

	seen := map[string]int{}
	for _, p := range got.payloads() {
		seen[p]++
	}
	var missing []string
	for i := range n {
		if seen[strconv.Itoa(i)] == 0 {
			missing = append(missing, strconv.Itoa(i))
		}
	}
	assert.Empty(t, missing, "messages lost across the broker restart")
	t.Logf("received %d deliveries of %d messages (duplicates are allowed: at least once)", len(got.payloads()), n)
}

// feeder is a source of n numbered messages, one every `every`.
type feeder struct {
	n, next int
	every   time.Duration
	redo    []*bridge.Message
}

func (f *feeder) Connect(context.Context) error { return nil }
func (f *feeder) Close(context.Context) error   { return nil }
func (f *feeder) ReadBatch(ctx context.Context, max int) ([]*bridge.Message, bridge.AckFunc, error) {
	if len(f.redo) > 0 {
		b := f.redo
		f.redo = nil
		return b, f.ack(b), nil
	}
	if f.next >= f.n {
		return nil, nil, bridge.ErrEndOfInput
	}
	select {
	case <-time.After(f.every):
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	m := &bridge.Message{Payload: []byte(strconv.Itoa(f.next))}
	f.next++
	b := []*bridge.Message{m}
	return b, f.ack(b), nil
}
func (f *feeder) ack(b []*bridge.Message) bridge.AckFunc {
	return func(_ context.Context, err error) error {
		if err != nil {
			f.redo = append(b, f.redo...)
		}
		return nil
	}
}

// privateBroker starts a Mosquitto of the test's own on a free port that
// accepts only user mqb with password, and stops it when the test ends.
func privateBroker(t *testing.T, password string) string {
	t.Helper()
	bin, err := exec.LookPath("mosquitto")
	if err != nil {
		bin = "/usr/sbin/mosquitto"
	}
	pwTool, err2 := exec.LookPath("mosquitto_passwd")
	if _, err := os.Stat(bin); err != nil || err2 != nil {
		t.Skipf("needs the mosquitto and mosquitto_passwd programs (Debian package mosquitto): %v %v", err, err2)
	}
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "passwords")
	out, err := exec.Command(pwTool, "-c", "-b", pwFile, "mqb", password).CombinedOutput()
	require.NoError(t, err, "%s", out)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	conf := fmt.Sprintf("listener %s 127.0.0.1\nallow_anonymous false\npassword_file %s\npersistence false\n", port, pwFile)
	if os.Geteuid() == 0 {
		conf += "user root\n"
	}
	confFile := filepath.Join(dir, "mosquitto.conf")
	require.NoError(t, os.WriteFile(confFile, []byte(conf), 0o600))
	cmd := exec.Command(bin, "-c", confFile)
	logFile, err := os.Create(filepath.Join(dir, "mosquitto.log"))
	require.NoError(t, err)
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	up := func() bool {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	}
	for start := time.Now(); !up(); time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 5*time.Second {
			logs, _ := os.ReadFile(logFile.Name())
			t.Fatalf("private Mosquitto did not start: %s", logs)
		}
	}
	return addr
}

func TestBadCredentialsFailAtOnce(t *testing.T) {
	const password = "Right-Pa55word"
	addr := privateBroker(t, password)
	env := testEnv()
	for _, kind := range []string{"source", "target"} {
		t.Run(kind, func(t *testing.T) {
			id := unique("mqb-test-")
			raw := "mqtt://mqb:Wrong-S3cret@" + addr + "?topic=t&connect_timeout=20s&client_id=" + id
			var ep interface {
				Connect(context.Context) error
			}
			var err error
			if kind == "source" {
				ep, err = NewSource(env, resolve(t, env, raw))
			} else {
				ep, err = NewTarget(env, resolve(t, env, raw))
			}
			require.NoError(t, err)
			start := time.Now()
			err = ep.Connect(context.Background())
			require.Error(t, err)
			t.Log(err)
			assert.Less(t, time.Since(start), 5*time.Second, "a refusal is not retried until connect_timeout")
			assert.Contains(t, err.Error(), "not Authorized")
			assert.ErrorIs(t, err, bridge.ErrConfig, "not retried by the route: exit 2")
			assert.NotContains(t, err.Error(), "Wrong-S3cret")
			assert.NotContains(t, err.Error(), "\n")
			lock := filepath.Join(sessionLockDir(), sessionLockName(addr, id))
			assert.NoFileExists(t, lock, "a failed connect lets go of the client id lock, file and all")
		})
	}

	t.Run("right password", func(t *testing.T) {
		id := unique("mqb-test-")
		src, err := NewSource(env, resolve(t, env, "mqtt://mqb:"+password+"@"+addr+"?topic=t&idle_timeout=200ms&client_id="+id))
		require.NoError(t, err)
		require.NoError(t, src.Connect(context.Background()))
		defer src.Close(context.Background())
		_, _, err = src.ReadBatch(context.Background(), 1)
		require.ErrorIs(t, err, bridge.ErrEndOfInput)
	})

	t.Run("password_file", func(t *testing.T) {
		dir := t.TempDir()
		right, wrong := filepath.Join(dir, "right"), filepath.Join(dir, "wrong")
		require.NoError(t, os.WriteFile(right, []byte(password+"\n"), 0o600))
		require.NoError(t, os.WriteFile(wrong, []byte("Wrong-S3cret\n"), 0o600))
		for file, wantErr := range map[string]string{right: "", wrong: "not Authorized"} {
			tgt, err := NewTarget(env, resolve(t, env, "mqtt://mqb@"+addr+"?topic=t&password_file="+file+"&client_id="+unique("mqb-test-")))
			require.NoError(t, err)
			err = tgt.Connect(context.Background())
			if wantErr == "" {
				require.NoError(t, err)
				require.NoError(t, tgt.Close(context.Background(), nil))
				continue
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), wantErr)
			assert.NotContains(t, err.Error(), "Wrong-S3cret")
		}
	})
}
