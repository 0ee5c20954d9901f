// Package authn authenticates API requests as kube-apiserver does: bearer
// tokens from a static token file (--token-auth-file), the same tokens
// carried in a WebSocket subprotocol, and x509 client certificates signed
// by a client CA (--client-ca-file).
//
// Authentication only says who a request is from; package authz decides
// what they may do.
//
// The names kube gives users and groups (system:authenticated, a service
// account's system:serviceaccount:<namespace>:<name> and its groups) are
// defined here once, for every package that makes or reads them.
//
// An Authenticator answers (user, true, nil) for credentials it accepts,
// (nil, false, nil) when the request carries none of its kind, and an error
// when it carries credentials of its kind that it rejects. Union tries
// several in order, as kube's union authenticator does.
package authn

import (
	"context"
	"errors"
	"net/http"
	"slices"
)

// User is an authenticated user.
type User struct {
	Name   string
	UID    string
	Groups []string
	// Extra is what an authenticator adds (a service account token's
	// credential ID, an impersonator's Impersonate-Extra-* headers).
	Extra map[string][]string
	// Audiences are those, of the ones asked (WithAudiences), that the
	// user's token is meant for; nil from authenticators that know no
	// audiences.
	Audiences []string
}

// Authenticator authenticates a request.
type Authenticator interface {
	Authenticate(r *http.Request) (*User, bool, error)
}

// TokenAuthenticator authenticates a bearer token.
type TokenAuthenticator interface {
	AuthenticateToken(ctx context.Context, token string) (*User, bool)
}

// errInvalidToken is the rejection of a token no user holds.
var errInvalidToken = errors.New("invalid bearer token")

// Union tries each authenticator in turn; the first that accepts the
// request wins. It fails with the errors of those that rejected it.
type Union []Authenticator

// Authenticate implements Authenticator.
func (u Union) Authenticate(r *http.Request) (*User, bool, error) {
	var errs []error
	for _, a := range u {
		user, ok, err := a.Authenticate(r)
		if ok {
			return user, true, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return nil, false, errors.Join(errs...)
}

type audiencesKey struct{}

// WithAudiences returns ctx asking token authenticators for a token meant
// for one of auds (a TokenReview's) rather than for the API.
func WithAudiences(ctx context.Context, auds []string) context.Context {
	return context.WithValue(ctx, audiencesKey{}, auds)
}

// AudiencesFrom returns the audiences ctx asks for, if it asks.
func AudiencesFrom(ctx context.Context) ([]string, bool) {
	auds, ok := ctx.Value(audiencesKey{}).([]string)
	return auds, ok
}

// CommonAudiences are the audiences of want that have is meant for too, in
// want's order, each once.
func CommonAudiences(want, have []string) []string {
	var both []string
	for _, a := range want {
		if slices.Contains(have, a) && !slices.Contains(both, a) {
			both = append(both, a)
		}
	}
	return both
}

type userKey struct{}

// WithUser returns ctx carrying u.
func WithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user ctx carries, if any.
func UserFrom(ctx context.Context) (*User, bool) {
	u, ok := ctx.Value(userKey{}).(*User)
	return u, ok
}

// AuthenticatedGroup adds AllAuthenticated to the groups of every user its
// Authenticator accepts, unless they have it or AllUnauthenticated, as
// kube's AuthenticatedGroupAdder; the user returned is a copy.
type AuthenticatedGroup struct{ Authenticator }

// Authenticate implements Authenticator.
func (a AuthenticatedGroup) Authenticate(r *http.Request) (*User, bool, error) {
	u, ok, err := a.Authenticator.Authenticate(r)
	if !ok || slices.Contains(u.Groups, AllAuthenticated) || slices.Contains(u.Groups, AllUnauthenticated) {
		return u, ok, err
	}
	withGroup := *u
	withGroup.Groups = append(slices.Clip(u.Groups), AllAuthenticated)
	return &withGroup, true, err
}
