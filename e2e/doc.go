// Package e2e holds hutch's end-to-end tests: they build the real hutch and
// hutch-agent binaries, start `hutch serve` against a temporary data
// directory, and talk to it through the Go client, raw HTTP and the CLI.
package e2e
