package client

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestStatusErrors(t *testing.T) {
	status := func(code int, reason string) string {
		return fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the message","reason":%q,"code":%d}`, reason, code)
	}
	checks := map[string]func(error) bool{
		"NotFound": IsNotFound, "AlreadyExists": IsAlreadyExists, "Conflict": IsConflict,
		"Invalid": IsInvalid, "Forbidden": IsForbidden, "Unauthorized": IsUnauthorized,
		"TooManyRequests": IsTooManyRequests, "Expired": IsExpired,
	}
	tests := []struct {
		name    string
		code    int
		header  http.Header
		body    string
		want    string // the one check that holds
		message string
		retry   time.Duration
	}{
		{"not found", 404, nil, status(404, "NotFound"), "NotFound", "the message", 0},
		{"already exists is not a conflict", 409, nil, status(409, "AlreadyExists"), "AlreadyExists", "the message", 0},
		{"conflict", 409, nil, status(409, "Conflict"), "Conflict", "the message", 0},
		{"invalid", 422, nil, status(422, "Invalid"), "Invalid", "the message", 0},
		{"forbidden", 403, nil, status(403, "Forbidden"), "Forbidden", "the message", 0},
		{"unauthorized", 401, nil, status(401, "Unauthorized"), "Unauthorized", "the message", 0},
		{"expired", 410, nil, status(410, "Expired"), "Expired", "the message", 0},
		{"gone", 410, nil, status(410, "Gone"), "Expired", "the message", 0},
		{"410 with an unknown reason", 410, nil, status(410, "Vanished"), "Expired", "the message", 0},
		{"429 Status with details", 429, nil,
			`{"kind":"Status","status":"Failure","reason":"TooManyRequests","code":429,"details":{"retryAfterSeconds":7}}`, "TooManyRequests", "TooManyRequests (429)", 7 * time.Second},
		{"plain-text 429 with Retry-After", 429, http.Header{"Retry-After": {"2"}},
			"Too many requests, please try again later.\n", "TooManyRequests", "the server responded with the status code 429: Too many requests, please try again later.", 2 * time.Second},
		{"HTML 404 from a proxy", 404, nil, "<html>nope</html>", "NotFound", "the server responded with the status code 404: <html>nope</html>", 0},
		{"empty 401", 401, nil, "", "Unauthorized", "the server responded with the status code 401 but did not return more information", 0},
		{"a Status of success with a bad code", 500, nil, `{"kind":"Status","status":"Success"}`, "", "the server responded with the status code 500", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := fmt.Errorf("wrapped: %w", statusError(tt.code, tt.header, []byte(tt.body)))
			for name, check := range checks {
				if got := check(err); got != (name == tt.want) {
					t.Errorf("Is%s = %v", name, got)
				}
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("message %q does not contain %q", err, tt.message)
			}
			if d, _ := RetryAfter(err); d != tt.retry {
				t.Errorf("RetryAfter = %v, want %v", d, tt.retry)
			}
		})
	}
	if IsNotFound(fmt.Errorf("plain")) || IsNotFound(nil) {
		t.Error("IsNotFound holds for an error without a Status")
	}
}

func TestLongBodiesAreCut(t *testing.T) {
	err := statusError(502, nil, []byte(strings.Repeat("x", 10*maxBodyInMessage)))
	if n := len(err.Error()); n > 2*maxBodyInMessage {
		t.Errorf("message of %d bytes", n)
	}
}
