package mqtt

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/url"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// selfSigned returns a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mqb test broker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// echoOnce accepts one connection on l and echoes what it reads.
func echoOnce(t *testing.T, l net.Listener) {
	t.Helper()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
}

func dialOptions(timeout time.Duration, tc *tls.Config) paho.ClientOptions {
	o := paho.NewClientOptions().SetConnectTimeout(timeout)
	if tc != nil {
		o.SetTLSConfig(tc)
	}
	return *o
}

func roundTrip(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	_, err := c.Write([]byte("ping"))
	require.NoError(t, err)
	buf := make([]byte, 4)
	_, err = io.ReadFull(c, buf)
	require.NoError(t, err)
	assert.Equal(t, "ping", string(buf))
}

// dialEcho dials, as for a tcp:// broker, a server that echoes what it
// reads; the connection is closed when the test ends.
func dialEcho(t *testing.T) net.Conn {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	echoOnce(t, l)
	c, err := dial(&url.URL{Scheme: "tcp", Host: l.Addr().String()}, dialOptions(5*time.Second, nil))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestDialTCPAndTLS(t *testing.T) {
	roundTrip(t, dialEcho(t))

	cert, pool := selfSigned(t)
	tl, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	require.NoError(t, err)
	defer tl.Close()
	echoOnce(t, tl)
	c, err := dial(&url.URL{Scheme: "ssl", Host: tl.Addr().String()}, dialOptions(5*time.Second, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	require.NoError(t, err, "the broker's name comes from the URL when the TLS settings have none")
	roundTrip(t, c)
	c.Close()

	echoOnce(t, tl)
	_, err = dial(&url.URL{Scheme: "ssl", Host: tl.Addr().String()}, dialOptions(5*time.Second, &tls.Config{MinVersion: tls.VersionTLS12}))
	require.Error(t, err, "a certificate nobody vouches for is refused")
}

// A server that accepts the connection and never answers the TLS
// handshake fails the dial within the connect timeout.
func TestDialTLSHandshakeTimesOut(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			defer c.Close()
			time.Sleep(10 * time.Second)
		}
	}()
	start := time.Now()
	_, err = dial(&url.URL{Scheme: "ssl", Host: l.Addr().String()}, dialOptions(300*time.Millisecond, &tls.Config{MinVersion: tls.VersionTLS12}))
	require.Error(t, err)
	assert.Less(t, time.Since(start), 5*time.Second, "the handshake waited past the connect timeout: %v", err)
}

func TestDialRefusesOtherSchemes(t *testing.T) {
	_, err := dial(&url.URL{Scheme: "ws", Host: "127.0.0.1:1"}, dialOptions(time.Second, nil))
	assert.ErrorContains(t, err, "unsupported broker URL scheme ws")
}
