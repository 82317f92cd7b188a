package flightserver

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// wireMessage is a message already in its wire form (a marshalled
// FlightData): the server's codec sends its bytes as they are. The
// change feed marshals each batch's messages once and sends the same
// bytes to every subscriber that shares the batch; gRPC only reads them,
// and compresses for a stream that asks as for any other message.
type wireMessage []byte

// codec is gRPC's protobuf codec, but for a wireMessage, which it passes
// through. The server forces it (grpc.ForceServerCodecV2); it keeps the
// name "proto", so that clients see nothing different.
type codec struct{ proto encoding.CodecV2 }

func serverCodec() grpc.ServerOption {
	return grpc.ForceServerCodecV2(codec{encoding.GetCodecV2(grpcproto.Name)})
}

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	if b, ok := v.(wireMessage); ok {
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil // SliceBuffer's Free is a no-op: the bytes stay shared
	}
	return c.proto.Marshal(v)
}

func (c codec) Unmarshal(data mem.BufferSlice, v any) error { return c.proto.Unmarshal(data, v) }

func (c codec) Name() string { return c.proto.Name() }
