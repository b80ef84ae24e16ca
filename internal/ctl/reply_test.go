package ctl

import (
	"net/http"
	"testing"

	"github.com/slotmeta/slotmeta/client"
)

// TestAnswerOf holds answerOf to the generated response types: it reads
// their Body, HTTPResponse and JSON<status> fields by name, so a generator
// that renamed them would turn every command's answer into a refusal —
// this fails first.
func TestAnswerOf(t *testing.T) {
	body := []byte(`{"id":1}`)
	status := func(code int) *http.Response { return &http.Response{StatusCode: code} }
	type read func() (*http.Response, []byte, bool)
	of := func(r *client.CancelTaskResponse) read {
		return func() (*http.Response, []byte, bool) { return answerOf(r) }
	}
	for _, tc := range []struct {
		name   string
		answer read
		want   bool
	}{
		{"200 with its body", of(&client.CancelTaskResponse{Body: body, HTTPResponse: status(200), JSON200: &client.Task{}}), true},
		{"200 without a JSON body", of(&client.CancelTaskResponse{Body: body, HTTPResponse: status(200)}), false},
		{"a 404 with the error body", of(&client.CancelTaskResponse{Body: body, HTTPResponse: status(404), JSON404: &client.ErrorBody{}}), false},
		{"no HTTP response", of(&client.CancelTaskResponse{Body: body}), false},
		{"202 with its body", func() (*http.Response, []byte, bool) {
			return answerOf(&client.DrainNodeResponse{Body: body, HTTPResponse: status(202), JSON202: &client.Node{}})
		}, true},
		{"an undocumented 200", func() (*http.Response, []byte, bool) {
			return answerOf(&client.DrainNodeResponse{Body: body, HTTPResponse: status(200)})
		}, false},
		{"204 (no body to parse)", func() (*http.Response, []byte, bool) {
			return answerOf(&client.DeleteKVResponse{Body: body, HTTPResponse: status(204)})
		}, true},
		{"204 where a body was expected", of(&client.CancelTaskResponse{Body: body, HTTPResponse: status(204)}), false},
	} {
		resp, got, ok := tc.answer()
		if ok != tc.want {
			t.Errorf("%s: ok %v, want %v", tc.name, ok, tc.want)
		}
		if string(got) != string(body) {
			t.Errorf("%s: body %q, want %q", tc.name, got, body)
		}
		if tc.name != "no HTTP response" && resp == nil {
			t.Errorf("%s: HTTPResponse not read", tc.name)
		}
	}
}
