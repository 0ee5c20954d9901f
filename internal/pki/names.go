package pki

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// dnsName is an RFC 1123 host name, any case, optionally a wildcard's
// "*." first.
var dnsName = regexp.MustCompile(`^(\*\.)?[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)*$`)

// CheckName says why name cannot be one of a serving certificate's: it
// must be an IP address or a DNS name (253 characters at most, labels of
// 63).
func CheckName(name string) error {
	if net.ParseIP(name) != nil {
		return nil
	}
	if len(name) > 253 || !dnsName.MatchString(name) {
		return fmt.Errorf("%q is neither an IP address nor a DNS name", name)
	}
	for label := range strings.SplitSeq(name, ".") {
		if len(label) > 63 {
			return fmt.Errorf("%q has a label longer than 63 characters", name)
		}
	}
	return nil
}

// ServingNames are the names and addresses clients may reach a server
// listening on listenHost by, which its certificate must hold: the host
// name, localhost and the loopback addresses, listenHost unless it is
// every interface, every address of the machine's interfaces (link-local
// ones aside: they need a zone), and extra (--tls-san, as k3s).
func ServingNames(listenHost string, extra []string) []string {
	names := []string{"localhost", "127.0.0.1", "::1"}
	if h, err := os.Hostname(); err == nil && h != "" {
		names = append(names, h)
	}
	if ip := net.ParseIP(listenHost); listenHost != "" && (ip == nil || !ip.IsUnspecified()) {
		names = append(names, listenHost)
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && (n.IP.IsGlobalUnicast() || n.IP.IsLoopback()) {
				names = append(names, n.IP.String())
			}
		}
	}
	return append(names, extra...)
}

// KubeconfigServer is the URL a user on this host reaches a server
// listening on listenHost and port by: loopback when it listens on every
// interface, as k3s writes it.
func KubeconfigServer(listenHost string, port int) string {
	if ip := net.ParseIP(listenHost); listenHost == "" || ip != nil && ip.IsUnspecified() {
		listenHost = "127.0.0.1"
	}
	return "https://" + net.JoinHostPort(listenHost, strconv.Itoa(port))
}
