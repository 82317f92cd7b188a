package flightserver

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"

	"github.com/flightns/flightns/internal/audit"
	"github.com/flightns/flightns/internal/auth"
	"github.com/flightns/flightns/internal/grpcstatus"
	"github.com/flightns/flightns/nserror"
)

// handshakeMethod is the one RPC that authenticates itself.
const handshakeMethod = "/arrow.flight.protocol.FlightService/Handshake"

// principalOf returns the caller the interceptors authenticated.
func principalOf(ctx context.Context) auth.Principal {
	p, _ := auth.PrincipalFrom(ctx)
	return p
}

// What a call leaves for a later one — a query GetFlightInfo started, a
// plan PlanScan parked, a prepared statement with its bound parameters —
// is bound to the principal that made it: only a call by that very
// principal (bindingOf) finds it through the ticket or handle. To anyone
// else it is as if it were gone, and the ticket is redeemed the way one
// whose query, plan or statement expired is: a statement ticket runs its
// query from its text, a plan ticket plans its request again, each in the
// redeemer's own grants; a prepared handle is unknown. A ticket is no
// credential, and an expired ticket and another principal's answer alike.

// bindingOf is what a ticket or handle made by the caller of ctx is bound
// to: everything the caller's access is decided on (its name, role and
// groups), so that a principal whose access differs in any way never
// finds what another one made.
func bindingOf(ctx context.Context) string {
	p := principalOf(ctx)
	groups := slices.Clone(p.Groups)
	slices.Sort(groups)
	return strconv.Quote(p.Name) + "|" + p.Role.String() + "|" + strconv.Quote(strings.Join(groups, "\x00"))
}

// audited runs an operation op (a mutation when write) for the caller of
// ctx and records it when it is worth auditing (audit.Log.Request): a
// mutation, or a refusal.
func (s *Server) audited(ctx context.Context, op string, write bool, run func(ctx context.Context) error) error {
	ctx, target := audit.WithTarget(ctx)
	err := run(ctx)
	s.audit.Request(ctx, principalOf(ctx).Name, "flight", op, target(), write, err)
	return err
}

// verifiedChains are the verified certificate chains of a call's client
// (mutual TLS), if any.
func verifiedChains(ctx context.Context) [][]*x509.Certificate {
	pr, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	if ti, ok := pr.AuthInfo.(credentials.TLSInfo); ok {
		return ti.State.VerifiedChains
	}
	return nil
}

// authenticate finds the caller of a call from its metadata: an
// "authorization" header (Basic or Bearer), or an "x-api-key" or
// "auth-token-bin" token, or else its client certificate (mutual TLS). With
// authentication off every caller is auth.Anonymous.
func (s *Server) authenticate(ctx context.Context) (auth.Principal, error) {
	if !s.auth.Enabled() {
		return auth.Anonymous, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("authorization"); len(v) > 0 {
		return s.auth.Header(v[0])
	}
	for _, k := range []string{"x-api-key", "auth-token-bin"} { // the second: arrow-go's ClientAuthHandler
		if v := md.Get(k); len(v) > 0 {
			return s.auth.Bearer(strings.TrimSpace(v[0]))
		}
	}
	if p, ok := s.auth.Certificate(verifiedChains(ctx)); ok {
		return p, nil
	}
	return s.auth.Header("")
}

// unaryInterceptor authenticates every unary call (there are none in
// Flight today, but gRPC health and reflection would be) and turns its
// error into a status.
func (s *Server) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	p, err := s.authenticate(ctx)
	if err != nil {
		s.audit.Request(ctx, p.Name, "flight", info.FullMethod, "", false, err)
		return nil, grpcstatus.FromError(err)
	}
	resp, err := h(auth.WithPrincipal(ctx, p), req)
	return resp, grpcstatus.FromError(err)
}

// streamInterceptor authenticates every streaming call but Handshake, puts
// the caller in the context (what it may do with each object is checked
// below: the namespace service and the planner against its role and
// grants, SQL through a scope of what it may read), and turns the
// handler's error into a status with the Lance code in its details.
func (s *Server) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if info.FullMethod == handshakeMethod {
		err := h(srv, ss)
		s.audit.Request(ss.Context(), "", "flight", "Handshake", "", false, err)
		return grpcstatus.FromError(err)
	}
	p, err := s.authenticate(ss.Context())
	if err != nil {
		s.audit.Request(ss.Context(), p.Name, "flight", info.FullMethod, "", false, err)
		return grpcstatus.FromError(err)
	}
	ctx := auth.WithPrincipal(ss.Context(), p)
	return grpcstatus.FromError(h(srv, &ctxStream{ServerStream: ss, ctx: ctx}))
}

type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (c *ctxStream) Context() context.Context { return c.ctx }

// Handshake authenticates a client once and gives it a bearer token to
// send on every later call, in the "authorization" response header and as
// the payload of the one HandshakeResponse. Credentials come either as an
// "authorization" request header (Basic, which starts a session, or
// Bearer, which is checked and echoed; a session bearer is renewed: the
// answer is a fresh one) or as a Flight BasicAuth message
// in the first HandshakeRequest. With authentication off the token is
// "anonymous" and every call is accepted.
func (s *Server) Handshake(stream flight.FlightService_HandshakeServer) error {
	ctx := stream.Context()
	md, _ := metadata.FromIncomingContext(ctx)
	var (
		p   auth.Principal
		err error
	)
	token := "anonymous"
	hdr := md.Get("authorization")
	switch {
	case !s.auth.Enabled():
		p = auth.Anonymous
	case len(hdr) > 0 && strings.HasPrefix(strings.ToLower(strings.TrimSpace(hdr[0])), "bearer "):
		if p, err = s.auth.Header(hdr[0]); err != nil {
			return err
		}
		token = strings.TrimSpace(strings.TrimSpace(hdr[0])[len("bearer "):])
		if auth.IsSession(token) {
			token = s.auth.IssueToken(p) // a live session is renewed
		}
	case len(hdr) > 0:
		if p, err = s.auth.Header(hdr[0]); err != nil {
			return err
		}
		token = s.auth.IssueToken(p)
	default:
		req, rerr := stream.Recv()
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return rerr
		}
		var ba flight.BasicAuth
		if req == nil || proto.Unmarshal(req.GetPayload(), &ba) != nil || ba.GetUsername() == "" {
			if cp, ok := s.auth.Certificate(verifiedChains(ctx)); ok { // mutual TLS
				p, token = cp, s.auth.IssueToken(cp)
				break
			}
			return nserror.New(nserror.Unauthenticated, "credentials required: send Basic user:password or a Bearer token in the authorization header, or a BasicAuth payload")
		}
		if p, err = s.auth.Basic(ba.GetUsername(), ba.GetPassword()); err != nil {
			return err
		}
		token = s.auth.IssueToken(p)
	}
	s.log.Debug("flight handshake", "principal", p.Name, "role", p.Role.String())
	if err := stream.SetHeader(metadata.Pairs("authorization", "Bearer "+token)); err != nil {
		return err
	}
	return stream.Send(&flight.HandshakeResponse{Payload: []byte(token)})
}
