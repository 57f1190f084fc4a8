// Package transportpb holds the protobuf messages and the gRPC service of
// dplearn's transport: Envelope, Attach, Ack and the Relay service. The
// .pb.go files are generated from transport.proto and committed, so that
// building needs no protoc. To regenerate (protoc from Debian's
// protobuf-compiler, the plugins from the Go module proxy):
//
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
//	go generate ./transport/transportpb
package transportpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative transport.proto
