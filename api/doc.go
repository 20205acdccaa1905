// Package api holds hutch's wire types: the JSON bodies of the /v1 API that
// the server, the Go client, the CLI and the agent share, and openapi.yaml,
// the contract a test holds the server's routes to. It imports nothing but
// the standard library so that every binary can link it.
package api
