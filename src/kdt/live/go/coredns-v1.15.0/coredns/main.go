// CoreDNS v1.15.0 with the plugins a real node's DNS uses (kdt.live.realnodes: bind, errors, kubernetes), in
// the order of the release's core/dnsserver/zdirectives.go. A main of one's own that imports chosen plugins
// and sets dnsserver.Directives is how CoreDNS builds with a chosen plugin set (its coredns.go imports
// core/plugin, every plugin of plugin.cfg); this one leaves out the plugins whose cloud SDKs were most of
// the build (route53, azure, clouddns, ...).
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
)

func init() {
	dnsserver.Directives = []string{"bind", "errors", "kubernetes"}
}

func main() {
	coremain.Run()
}
