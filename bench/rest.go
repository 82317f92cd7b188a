package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// restClient is a JSON client of a flightns server's REST surface, for
// scenarios that drive running servers (hostile, replicas).
type restClient struct {
	base string
	hc   *http.Client
}

func newRESTClient(addr string) *restClient {
	tr := &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 512, IdleConnTimeout: time.Minute}
	return &restClient{base: "http://" + addr, hc: &http.Client{Transport: tr, Timeout: time.Minute}}
}

// restError is a REST answer other than 200.
type restError struct {
	status int
	code   int
	msg    string
}

func (e *restError) Error() string {
	return fmt.Sprintf("HTTP %d (code %d): %s", e.status, e.code, e.msg)
}

// post sends body as JSON to path and decodes a 200 answer into out.
func (c *restClient) post(ctx context.Context, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
			Code  int    `json:"code"`
		}
		_ = json.Unmarshal(raw, &e)
		if e.Error == "" {
			e.Error = string(raw)
		}
		return &restError{status: resp.StatusCode, code: e.Code, msg: e.Error}
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}
