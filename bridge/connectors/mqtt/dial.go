package mqtt

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/url"

	paho "github.com/eclipse/paho.mqtt.golang"
	"golang.org/x/net/proxy"
)

// dial opens the connection to the broker for Paho: TCP, through the proxy
// the environment names (as Paho's own dialer does), with quick
// acknowledgements where the system has them (see quickAck), and TLS over
// it for an ssl:// broker URL (mqtts://).
func dial(uri *url.URL, o paho.ClientOptions) (net.Conn, error) {
	if uri.Scheme != "tcp" && uri.Scheme != "ssl" {
		return nil, errors.New("mqtt: unsupported broker URL scheme " + uri.Scheme)
	}
	d := o.Dialer
	if d == nil {
		d = &net.Dialer{Timeout: o.ConnectTimeout}
	}
	conn, err := proxy.FromEnvironmentUsing(d).Dial("tcp", uri.Host)
	if err != nil {
		return nil, err
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		conn = quickAck(tc)
	}
	if uri.Scheme == "tcp" {
		return conn, nil
	}
	cfg := o.TLSConfig
	if cfg == nil || cfg.ServerName == "" {
		cfg = cfg.Clone()
		if cfg == nil {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		cfg.ServerName = uri.Hostname()
	}
	tc := tls.Client(conn, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	if d.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
	}
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}
