package bridge_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mqb-project/mqb/bridge"
	_ "github.com/mqb-project/mqb/bridge/all"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:s3cret@h/db?table=t":                   "postgres://u:xxxxx@h/db?table=t",
		"postgres://u@h/db?password=s3cret&sslmode=x":        "postgres://u@h/db?password=xxxxx&sslmode=x",
		"host=h user=u password=s3cret dbname=d":             "host=h user=u password=xxxxx dbname=d",
		"host=h password='s3 cret' dbname=d":                 "host=h password=xxxxx dbname=d",
		"postgres://u@h/db?sslpassword=s3cret":               "postgres://u@h/db?sslpassword=xxxxx",
		"mqtt://user:hunter2@b:1883?topic=t&password=h3":     "mqtt://user:xxxxx@b:1883?topic=t&password=xxxxx",
		"nats://u:pw@h:4222?subject=s&token=tk":              "nats://u:xxxxx@h:4222?subject=s&token=xxxxx",
		"postgres://mqb@h/db":                                "postgres://mqb@h/db",
		"dir-spool:///var/spool/a?fsync=batch":               "dir-spool:///var/spool/a?fsync=batch",
		"nothing to hide here: a=b":                          "nothing to hide here: a=b",
		"postgres://u:s3cret@127.0.0.1:notaport/db?table=t":  "postgres://xxxxx@127.0.0.1:notaport/db?table=t",
		`parse "nats://u:s3cret@[::1?subject=s": bad`:        `parse "nats://xxxxx@[::1?subject=s": bad`,
		"two: mqtt://a:p1@h?topic=x and nats://b:p2@h:1?s=1": "two: mqtt://a:xxxxx@h?topic=x and nats://b:xxxxx@h:1?s=1",
		"user:pa@ss@host: postgres://u:pa@ss@h/db":           "user:pa@ss@host: postgres://u:xxxxx@h/db",
		"postgres://u:pa#ss@h/db?table=t":                    "postgres://xxxxx@h/db?table=t",
		"mqtt://u:1234#5@h?topic=t":                          "mqtt://xxxxx@h?topic=t",
		"nats://t0ken#x@h:4222?subject=s":                    "nats://xxxxx@h:4222?subject=s",
		"postgres://u:pa/ss@h/db":                            "postgres://xxxxx@h/db",
		"nats://u:pa?ss@h:4222?subject=s":                    "nats://xxxxx@h:4222?subject=s",
		"dir-spool:///var/spool/a@b#c@d":                     "dir-spool:///var/spool/a@b#c@d",
		"mqtt://h:1883?topic=a@b":                            "mqtt://h:1883?topic=a@b",
	} {
		assert.Equal(t, want, bridge.Redact(in), in)
	}
}

func TestRedactKnownSecrets(t *testing.T) {
	got := bridge.Redact(`token "sec ret" failed: sec%20ret, sec+ret, {"k":"sec ret"}`, "sec ret")
	assert.Equal(t, `token "xxxxx" failed: xxxxx, xxxxx, {"k":"xxxxx"}`, got)
	assert.Equal(t, "a b", bridge.Redact("a b", ""), "an empty secret removes nothing")
	once := bridge.Redact("mqtt://h?topic=x&password=SECRET%zz: bad query")
	assert.Equal(t, "mqtt://h?topic=x&password=xxxxx bad query", once)
	assert.Equal(t, once, bridge.Redact(once), "redacting twice changes nothing")
	once = bridge.Redact("mqtt://h?topic=x&password=SECRET: bad query")
	assert.Equal(t, "mqtt://h?topic=x&password=xxxxx bad query", once)
}

func TestFindSecrets(t *testing.T) {
	for in, want := range map[string][]string{
		"postgres://u:s3cret@127.0.0.1:notaport/db": {"s3cret"},
		"mqtt://u:p%40ss@h?topic=t":                 {"p%40ss", "p@ss"},
		"host=h password='s3 cret'":                 {"s3 cret"},
		"nats://h?token=tk&subject=s":               {"tk"},
		"postgres://u@h/db":                         nil,
		"postgres://u:pa#ss@h/db":                   {"pa#ss"},
		"mqtt://u:1234#5@h?topic=t":                 {"1234#5"},
	} {
		assert.Equal(t, want, bridge.FindSecrets(in), in)
	}
}

func TestEnvSecrets(t *testing.T) {
	env := bridge.DefaultEnv
	for _, tc := range []struct {
		ep   bridge.Endpoint
		want []string
	}{
		{bridge.Endpoint{URL: "nats://tok@h:4222?subject=s"}, []string{"tok"}},
		{bridge.Endpoint{URL: "mqtt://u:pw@h?topic=t"}, []string{"pw"}},
		{bridge.Endpoint{URL: "mqtt://u@h?topic=t"}, nil},
		{bridge.Endpoint{Connector: "mqtt", Fields: map[string]any{"broker": "h", "password": "pw"}}, []string{"pw"}},
		{bridge.Endpoint{Connector: "nats", Fields: map[string]any{"servers": "h", "token": "tk"}}, []string{"tk"}},
		{bridge.Endpoint{Connector: "postgres", Fields: map[string]any{"dsn": "host=h password=pw", "table": "t"}}, []string{"pw"}},
	} {
		assert.ElementsMatch(t, tc.want, env.Secrets(tc.ep), "%+v", tc.ep)
	}
}
