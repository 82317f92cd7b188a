package obs

import "context"

// requestIDOf is the request id of ctx (WithRequestID; "" when none).
func requestIDOf(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}
