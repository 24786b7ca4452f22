// Command cra is a local-first coding agent for one repository, with the
// supervision layer that keeps a fleet of such agents honest.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/cra-dev/cra/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
