package bridge_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mqb-project/mqb/bridge"
	"github.com/mqb-project/mqb/bridge/connectors/dirspool"
	"github.com/mqb-project/mqb/bridge/connectors/mqtt"
	"github.com/mqb-project/mqb/bridge/connectors/nats"
	"github.com/mqb-project/mqb/bridge/connectors/postgres"
	"github.com/mqb-project/mqb/bridge/connectors/stdio"
)

// TestSameTopicRefused: a route whose input subscribes to what its output
// or dead_letter publishes on the same broker, or whose output and
// dead_letter publish to one topic, is refused; no broker is needed, as
// NewRoute connects to none.
func TestSameTopicRefused(t *testing.T) {
	e := bridge.NewEnv()
	mqtt.Register(e)
	nats.Register(e)
	m := func(q string) bridge.Endpoint { return bridge.Endpoint{URL: "mqtt://127.0.0.1:1883?" + q} }
	n := func(q string) bridge.Endpoint { return bridge.Endpoint{URL: "nats://127.0.0.1:4222?durable=d&" + q} }
	none := bridge.Endpoint{}
	for _, tc := range []struct {
		name          string
		in, out, dead bridge.Endpoint
		refused       string
	}{
		{"mqtt, one topic", m("topic=loop/t"), m("topic=loop/t"), none, `the input subscribes to "loop/t" on 127.0.0.1:1883, which receives what the output publishes to "loop/t", so the route would read what it writes forever`},
		{"mqtt, # filter", m("topic=loop/%23"), m("topic=loop/t/x"), none, `receives what the output publishes to "loop/t/x"`},
		{"mqtt, # filter takes the parent level", m("topic=loop/%23"), m("topic=loop"), none, `receives what the output`},
		{"mqtt, + filter", m("topic=loop/%2B/x"), m("topic=loop/t/x"), none, `receives what the output`},
		{"mqtt, localhost is 127.0.0.1", bridge.Endpoint{URL: "mqtt://localhost?topic=a"}, m("topic=a"), none, `on localhost:1883`},
		{"mqtt, dead letter subscribed to", m("topic=loop/%23"), m("topic=out"), m("topic=loop/bad"), `receives what the dead_letter publishes to "loop/bad"`},
		{"mqtt, output is the dead letter", m("topic=in"), m("topic=out"), bridge.Endpoint{URL: "mqtt://[::1]:1883?topic=out"}, `the output and the dead_letter both publish to "out" on 127.0.0.1:1883, so refused messages would land among the delivered ones`},
		{"mqtt, + takes one level only", m("topic=loop/%2B"), m("topic=loop/t/x"), none, ""},
		{"mqtt, a wildcard first does not take $ topics", m("topic=%2B/t"), m("topic=$SYS/t"), none, ""},
		{"mqtt, another port", m("topic=a"), bridge.Endpoint{URL: "mqtt://127.0.0.1:1884?topic=a"}, none, ""},
		{"mqtt, another host", m("topic=a"), bridge.Endpoint{URL: "mqtt://10.1.2.3?topic=a"}, none, ""},
		{"mqtt, three topics", m("topic=in"), m("topic=out"), m("topic=bad"), ""},
		{"nats, one subject", n("subject=orders.new"), n("subject=orders.new"), none, `the input subscribes to "orders.new" on 127.0.0.1:4222, which receives what the output publishes to "orders.new"`},
		{"nats, > filter, one of several servers", n("subject=orders.%3E"), bridge.Endpoint{URL: "nats://10.1.2.3,localhost?subject=orders.eu.new"}, none, `receives what the output publishes to "orders.eu.new"`},
		{"nats, * filter, dead letter", n("subject=orders.*"), n("subject=out"), n("subject=orders.bad"), `receives what the dead_letter publishes`},
		{"nats, output is the dead letter", n("subject=in"), n("subject=out&stream=OUT"), n("subject=out"), `the output and the dead_letter both publish to "out"`},
		{"nats, * takes one token only", n("subject=orders.*"), n("subject=orders.eu.new"), none, ""},
		{"nats, two streams named", n("subject=orders.new&stream=A"), n("subject=orders.new&stream=B"), none, ""},
		{"nats and mqtt on one host", n("subject=a"), bridge.Endpoint{URL: "mqtt://127.0.0.1:4222?topic=a"}, none, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.NewRoute(placeRoute(tc.in, tc.out, tc.dead))
			requireRefused(t, err, tc.refused)
		})
	}
}

// TestSameSessionRefused: two ends that would connect to one MQTT broker
// with one client id, in one route or in two routes of one run, are
// refused; targets with their random ids are not.
func TestSameSessionRefused(t *testing.T) {
	e := bridge.NewEnv()
	mqtt.Register(e)
	m := func(host, q string) bridge.Endpoint { return bridge.Endpoint{URL: "mqtt://" + host + "?" + q} }
	for _, tc := range []struct {
		name    string
		in, out bridge.Endpoint
		refused string
	}{
		{"one client id", m("127.0.0.1", "topic=a&client_id=x"), m("127.0.0.1", "topic=b&client_id=x"),
			`the input and the output both connect as MQTT client id "x" on 127.0.0.1:1883, which the broker gives one connection at a time`},
		{"one broker spelled twice", m("localhost", "topic=a&client_id=x"), m("[::1]:1883", "topic=b&client_id=x"), `both connect as MQTT client id "x"`},
		{"two brokers", m("127.0.0.1", "topic=a&client_id=x"), m("127.0.0.1:1884", "topic=b&client_id=x"), ""},
		{"a random target id", m("127.0.0.1", "topic=a"), m("127.0.0.1", "topic=b"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.NewRoute(&bridge.Config{Input: tc.in, Output: tc.out})
			requireRefused(t, err, tc.refused)
		})
	}
	t.Run("two routes reading one topic", func(t *testing.T) {
		var routes []*bridge.Route
		for _, out := range []string{"a", "b"} {
			r, err := e.NewRoute(&bridge.Config{Input: m("127.0.0.1", "topic=in"), Output: m("127.0.0.1", "topic="+out)})
			require.NoError(t, err)
			routes = append(routes, r)
		}
		err := bridge.RoutesApart([]string{"a", "b"}, routes)
		requireRefused(t, err, `route a's input and route b's input both connect as MQTT client id "mqb-`)
		assert.Contains(t, err.Error(), "give one of them another client_id")
	})
}

// TestSameTableRefused: a route whose output and dead_letter are one
// PostgreSQL table is refused (the table would refuse the message again),
// however the host and the table are spelled; two routes of one run may
// write to one table.
func TestSameTableRefused(t *testing.T) {
	e := bridge.NewEnv()
	postgres.Register(e)
	stdio.Register(e)
	dirspool.Register(e)
	in := bridge.Endpoint{URL: "stdin://"}
	pg := func(host, table string) bridge.Endpoint {
		return bridge.Endpoint{URL: "postgres://u:secret@" + host + "/test?table=" + table}
	}
	for _, tc := range []struct {
		name      string
		out, dead bridge.Endpoint
		refused   string
	}{
		{"one table", pg("127.0.0.1", "orders"), pg("localhost:5432", "Orders"),
			"the output and the dead_letter are both table orders of database test at localhost:5432, so refused messages would land among the delivered ones"},
		{"one quoted table", pg("db", "app.%22Orders%22"), pg("db", "APP.%22Orders%22"), "are both table app.Orders of database test at db:5432"},
		{"another table", pg("127.0.0.1", "orders"), pg("127.0.0.1", "orders_dead"), ""},
		{"a quoted name keeps its case", pg("127.0.0.1", "%22Orders%22"), pg("127.0.0.1", "orders"), ""},
		{"another database server", pg("127.0.0.1", "orders"), pg("127.0.0.1:5433", "orders"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.NewRoute(placeRoute(in, tc.out, tc.dead))
			requireRefused(t, err, tc.refused)
			if err != nil {
				assert.NotContains(t, err.Error(), "secret")
			}
		})
	}
	a, b := bridge.Endpoint{URL: "dir-spool://" + t.TempDir()}, bridge.Endpoint{URL: "dir-spool://" + t.TempDir()}
	require.NoError(t, routesApart(t, e, placeRoute(a, pg("127.0.0.1", "orders"), bridge.Endpoint{}),
		placeRoute(b, pg("localhost", "orders"), bridge.Endpoint{})), "routes of one run share a table")
}
