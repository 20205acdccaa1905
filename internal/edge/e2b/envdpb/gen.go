// Package envdpb holds the Go code protoc generates from E2B's envd
// service definitions (process and filesystem), which internal/edge/e2b serves.
// Each generated package's doc comment is in a doc.go of its own, written
// by hand: regenerating leaves it be.
//
// Regenerate after changing a .proto (needs protoc, Debian's
// protobuf-compiler, and the two plugins at the versions go.mod pins):
//
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.9
//	go install connectrpc.com/connect/cmd/protoc-gen-connect-go@v1.19.1
//	go generate ./internal/edge/e2b/envdpb
package envdpb

//go:generate protoc --proto_path=. --go_out=. --go_opt=paths=source_relative --connect-go_out=. --connect-go_opt=paths=source_relative process/process.proto filesystem/filesystem.proto
