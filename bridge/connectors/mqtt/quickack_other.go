//go:build !linux

package mqtt

import "net"

// quickAck returns c: only Linux has TCP_QUICKACK.
func quickAck(c *net.TCPConn) net.Conn { return c }
