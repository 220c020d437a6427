// Command gpcluster is the local control plane of gpu_platform.cluster's tests and
// laptop demo: one multi-call binary that runs etcd, kube-apiserver,
// kube-controller-manager or kube-scheduler, built from the pinned upstream Go
// modules (see ../../go.mod). The first argument names the component; the rest
// are that component's own flags, exactly as upstream documents them.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

var components = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
}

func names() string {
	all := []string{"etcd"}
	for name := range components {
		all = append(all, name)
	}
	sort.Strings(all)
	return strings.Join(all, ", ")
}

func main() {
	// Called as a symlink named after a component, or as `gpcluster <component> ...`.
	name := filepath.Base(os.Args[0])
	args := os.Args[1:]
	if _, known := components[name]; !known && name != "etcd" {
		if len(args) == 0 {
			fmt.Fprintf(os.Stderr, "usage: gpcluster <component> [flags]; components: %s\n", names())
			os.Exit(2)
		}
		name, args = args[0], args[1:]
	}
	if name == "etcd" {
		// etcdmain parses os.Args itself, program name first.
		etcdmain.Main(append([]string{"etcd"}, args...))
		return
	}
	build, known := components[name]
	if !known {
		fmt.Fprintf(os.Stderr, "gpcluster: unknown component %q; components: %s\n", name, names())
		os.Exit(2)
	}
	command := build()
	command.SetArgs(args)
	os.Exit(cli.Run(command))
}
