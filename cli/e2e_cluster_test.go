package cli_test

// The scale-out guide's set-up on a real JetStream cluster: three spools
// forwarded by three mqb processes into an R3 stream, read by two competing
// mqb processes into PostgreSQL, while a node of the cluster, a forwarder
// and a consumer are killed with SIGKILL. No supervisor restarts anything:
// the test restarts each killed process once, as an operator would.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const natsServerBin = "/usr/sbin/nats-server"

// natsNode is one nats-server of a test cluster.
type natsNode struct {
	name, client, route, dir string
	args                     []string
	cmd                      *exec.Cmd
	done                     chan struct{}
}

func (n *natsNode) start(t *testing.T) {
	t.Helper()
	n.cmd = exec.Command(natsServerBin, n.args...)
	n.cmd.Stdout, n.cmd.Stderr = nil, nil
	require.NoError(t, n.cmd.Start())
	n.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(n.cmd, n.done)
}

func (n *natsNode) kill9(t *testing.T) {
	t.Helper()
	require.NoError(t, n.cmd.Process.Signal(syscall.SIGKILL))
	<-n.done
}

// natsCluster starts three JetStream servers routed to each other on free
// loopback ports (never 4222), and stops them when the test ends.
func natsCluster(t *testing.T) []*natsNode {
	t.Helper()
	if _, err := os.Stat(natsServerBin); err != nil {
		msg := "nats-server is not installed at " + natsServerBin + " (apt-get install nats-server)"
		if os.Getenv("MQB_REQUIRE_SERVICES") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ports := freePorts(t, 6)
	nodes := make([]*natsNode, 3)
	for i := range nodes {
		nodes[i] = &natsNode{
			name:   fmt.Sprintf("n%d", i+1),
			client: fmt.Sprintf("127.0.0.1:%d", ports[2*i]),
			route:  fmt.Sprintf("127.0.0.1:%d", ports[2*i+1]),
			dir:    t.TempDir(),
		}
	}
	cluster := svcUnique("mqb-e2e-")
	for _, n := range nodes {
		var routes []string
		for _, o := range nodes {
			if o != n {
				routes = append(routes, "nats://"+o.route)
			}
		}
		host, port, _ := net.SplitHostPort(n.client)
		n.args = []string{"-a", host, "-p", port, "-js", "-sd", n.dir, "--server_name", n.name,
			"--cluster_name", cluster, "--cluster", "nats://" + n.route, "--routes", strings.Join(routes, ",")}
		n.start(t)
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			_ = n.cmd.Process.Kill()
			<-n.done
		}
	})
	return nodes
}

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer l.Close()
		if p := l.Addr().(*net.TCPAddr).Port; p != 4222 {
			ports = append(ports, p)
		}
	}
	return ports
}

// clusterJS connects to the cluster and waits until JetStream answers (a
// meta leader was elected).
func clusterJS(t *testing.T, servers string) jetstream.JetStream {
	t.Helper()
	nc, err := natsgo.Connect(servers, natsgo.MaxReconnects(-1), natsgo.ReconnectWait(100*time.Millisecond),
		natsgo.RetryOnFailedConnect(true))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := js.AccountInfo(ctx)
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "JetStream cluster did not elect a leader")
	return js
}

func streamInfo(js jetstream.JetStream, name string) (*jetstream.StreamInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s, err := js.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	return s.Info(ctx)
}

// TestJetStreamClusterSurvivesKills: every message of three spools lands in
// PostgreSQL exactly once and in the stream once, and the spools end empty,
// although the stream's leader (or a follower) node, a forwarder and a
// consumer were killed with SIGKILL in the middle of the run.
func TestJetStreamClusterSurvivesKills(t *testing.T) {
	for _, victim := range []string{"follower", "leader"} {
		t.Run("kill the stream's "+victim, func(t *testing.T) { clusterScenario(t, victim) })
	}
}

func clusterScenario(t *testing.T, victim string) {
	conn := svcPostgres(t)
	nodes := natsCluster(t)
	var clients []string
	for _, n := range nodes {
		clients = append(clients, n.client)
	}
	servers := strings.Join(clients, ",")
	js := clusterJS(t, servers)

	const spools, perSpool = 3, 1000
	total := spools * perSpool
	spoolDirs := clusterSpools(t, spools, perSpool)
	table := svcTable(t, conn, "message_id text PRIMARY KEY, host int NOT NULL, n int NOT NULL")
	stream := strings.ToUpper(svcUnique("MQB_E2E_"))
	subject := svcUnique("mqbe2e.orders.")
	durable := svcUnique("orders-db-")

	var all []*svcProc // for the summary at the end
	defer func() { clusterSummary(t, all) }()
	forward := func(i int) *svcProc {
		return track(&all, svcStart(t, "copy", "--drain", "--batch-size", "20", "--from", "dir-spool://"+spoolDirs[i],
			"--to", "nats://"+servers+"?subject="+subject+"&stream="+stream+"&create_stream=true&replicas=3&write_timeout=5s"))
	}
	consumerArgs := []string{"copy", "--batch-size", "20",
		"--from", "nats://" + servers + "?subject=" + subject + "&stream=" + stream + "&durable=" + durable + "&ack_wait=5s",
		"--to", "postgres://postgres@127.0.0.1/test?table=" + table + "&id_column=message_id"}
	consume := func() *svcProc { return track(&all, svcStart(t, consumerArgs...)) }

	forwarders := []*svcProc{forward(0), forward(1), forward(2)}
	require.Eventually(t, func() bool { _, err := streamInfo(js, stream); return err == nil },
		30*time.Second, 20*time.Millisecond, "the forwarders did not create the stream")
	consumers := []*svcProc{consume(), consume()}

	// Mid-run: kill a forwarder, a consumer and a node of the stream, and
	// restart the two processes at once, while the cluster elects a leader.
	var info *jetstream.StreamInfo
	require.Eventually(t, func() bool {
		var err error
		info, err = streamInfo(js, stream)
		return err == nil && info.State.Msgs >= uint64(total/5) && info.Cluster != nil && info.Cluster.Leader != ""
	}, 60*time.Second, 5*time.Millisecond)
	node := victimNode(t, nodes, info, victim)
	killed := killAForwarder(t, forwarders)
	consumers[0].kill9(t)
	node.kill9(t)
	rows := svcCount(t, conn, "SELECT count(*) FROM "+table)
	t.Logf("killed node %s (the %s), forwarder %d of 0-2 (-1: all had finished) and a consumer with %d messages in the stream and %d rows in PostgreSQL",
		node.name, victim, killed, info.State.Msgs, rows)
	if killed >= 0 {
		forwarders[killed] = forward(killed)
	}
	consumers[0] = consume()
	time.Sleep(3 * time.Second)
	node.start(t)

	for i, f := range forwarders {
		awaitExit0(t, f, fmt.Sprintf("forwarder %d", i))
		assert.Empty(t, svcChunks(t, spoolDirs[i]), "spool %d is empty", i)
	}
	require.Eventually(t, func() bool { return svcCount(t, conn, "SELECT count(*) FROM "+table) >= total },
		90*time.Second, 50*time.Millisecond, "rows in PostgreSQL; consumer logs:\n%s\n%s", consumers[0].log(), consumers[1].log())
	for i, c := range consumers {
		code := c.stop(t)
		assert.Equal(t, 128+int(syscall.SIGTERM), code, "consumer %d:\n%s", i, c.log())
		assert.NotContains(t, c.log(), "ERROR", "consumer %d", i)
	}
	// A draining reader of the same durable ends once nothing is pending
	// and nothing awaits acknowledgement; messages the killed consumer held
	// come back to it after ack_wait.
	code, stderr := svcRun(t, append([]string{"copy", "--drain"}, consumerArgs[1:]...)...)
	require.Equal(t, 0, code, stderr)

	assert.Equal(t, total, svcCount(t, conn, "SELECT count(*) FROM "+table))
	assert.Equal(t, total, svcCount(t, conn, "SELECT count(DISTINCT (host, n)) FROM "+table), "every message once")
	assert.Equal(t, total, streamIDs(t, js, stream), "the stream holds each message id once")
}

// killAForwarder kills the first forwarder still running and returns its
// index, or -1 when each one has drained its spool already: a forwarder
// of 1000 messages can finish before the stream holds a fifth of the total.
func killAForwarder(t *testing.T, forwarders []*svcProc) int {
	t.Helper()
	for i, f := range forwarders {
		if f.killIfRunning(t) {
			return i
		}
	}
	return -1
}

// clusterSpools makes spools of perSpool messages each, numbered by host
// and n.
func clusterSpools(t *testing.T, spools, perSpool int) []string {
	t.Helper()
	dir := t.TempDir()
	spoolDirs := make([]string, spools)
	for i := range spoolDirs {
		var lines []string
		for n := range perSpool {
			lines = append(lines, fmt.Sprintf(`{"host":%d,"n":%d}`, i, n))
		}
		input := filepath.Join(dir, fmt.Sprintf("in%d.jsonl", i))
		require.NoError(t, os.WriteFile(input, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
		spoolDirs[i] = filepath.Join(dir, fmt.Sprintf("spool%d", i))
		// The spools' durability is not under test: fsync=batch keeps this
		// quick.
		code, _ := svcRun(t, "copy", "--drain", "--batch-size", "1000", "--from", "file://"+input+"?format=json",
			"--to", "dir-spool://"+spoolDirs[i]+"?fsync=batch")
		require.Equal(t, 0, code)
	}
	return spoolDirs
}

// victimNode returns the stream's leader node, or one of its followers.
func victimNode(t *testing.T, nodes []*natsNode, info *jetstream.StreamInfo, victim string) *natsNode {
	t.Helper()
	name := info.Cluster.Leader
	if victim == "follower" {
		require.NotEmpty(t, info.Cluster.Replicas)
		name = info.Cluster.Replicas[0].Name
	}
	for _, n := range nodes {
		if n.name == name {
			return n
		}
	}
	t.Fatalf("no node named %q", name)
	return nil
}

// awaitExit0 waits for a draining mqb to end, and checks that it
// succeeded.
func awaitExit0(t *testing.T, p *svcProc, what string) {
	t.Helper()
	select {
	case <-p.done:
		p.done <- nil // for the cleanup
	case <-time.After(90 * time.Second):
		t.Fatalf("%s did not finish:\n%s", what, p.log())
	}
	require.Equal(t, 0, p.cmd.ProcessState.ExitCode(), "%s:\n%s", what, p.log())
}

// streamIDs reads the whole stream and returns how many distinct message
// ids it holds, failing if one is there twice.
func streamIDs(t *testing.T, js jetstream.JetStream, stream string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{})
	require.NoError(t, err)
	info, err := streamInfo(js, stream)
	require.NoError(t, err)
	seen := map[string]bool{}
	for uint64(len(seen)) < info.State.Msgs {
		batch, err := cons.Fetch(500, jetstream.FetchMaxWait(5*time.Second))
		require.NoError(t, err)
		got := 0
		for m := range batch.Messages() {
			got++
			id := m.Headers().Get(natsgo.MsgIdHdr)
			require.False(t, seen[id], "message id %s is in the stream twice", id)
			seen[id] = true
		}
		if err := batch.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			require.NoError(t, err)
		}
		require.NotZero(t, got, "the stream says %d messages, read %d", info.State.Msgs, len(seen))
	}
	return len(seen)
}

func track(all *[]*svcProc, p *svcProc) *svcProc {
	*all = append(*all, p)
	return p
}

// clusterSummary logs, for each mqb process, how it ended and how often it
// retried, to show what the kills did.
func clusterSummary(t *testing.T, procs []*svcProc) {
	msgRE := regexp.MustCompile(`msg="([^"]*)"`)
	for i, p := range procs {
		retries := map[string]int{}
		end := "killed"
		for _, line := range strings.Split(p.log(), "\n") {
			m := msgRE.FindStringSubmatch(line)
			switch {
			case m == nil:
			case strings.Contains(m[1], "retrying"):
				retries[m[1]]++
			case m[1] == "route finished" || m[1] == "route interrupted" || strings.Contains(line, "level=ERROR"):
				end = line[strings.Index(line, "msg="):]
			}
		}
		t.Logf("mqb %d: %s; retries: %v", i, end, retries)
	}
}
