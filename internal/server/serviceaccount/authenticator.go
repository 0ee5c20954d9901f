package serviceaccount

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage"
)

// CredentialIDKey is the user's extra naming the token it authenticated by
// ("JTI=<jti>"), as kube's, so that audit logs can tell tokens apart.
const CredentialIDKey = "authentication.kubernetes.io/credential-id"

// lookupTimeout bounds the reads of the objects a token names.
const lookupTimeout = 5 * time.Second

// Object is what the authenticator needs of a service account or Secret.
type Object struct {
	UID string
	// Deleting is when the object's deletion was asked; zero if it was not.
	Deleting time.Time
}

// Objects reads the objects tokens name.
type Objects interface {
	// Get returns the object of a resource ("serviceaccounts" or
	// "secrets"), or an error wrapping storage.ErrNotFound.
	Get(ctx context.Context, resource, namespace, name string) (Object, error)
}

// Authenticator accepts the service account tokens Tokens verifies whose
// account (and bound Secret) still exists with the UID it was issued for.
type Authenticator struct {
	Tokens  *Tokens
	Objects Objects
	// Log receives the reason of each refusal, at debug level.
	Log *slog.Logger
}

var _ authn.TokenAuthenticator = (*Authenticator)(nil)

func (*Authenticator) String() string { return "service accounts" }

// AuthenticateToken implements authn.TokenAuthenticator. A refused token
// gets no reason: the client learns only that it was not accepted.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authn.User, bool) {
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	u, err := a.authenticate(ctx, token)
	if err != nil {
		if !errors.Is(err, errNotOurs) {
			a.Log.Debug("service account token refused", "err", err)
		}
		return nil, false
	}
	return u, true
}

func (a *Authenticator) authenticate(ctx context.Context, token string) (*authn.User, error) {
	c, err := a.Tokens.verify(token)
	if err != nil {
		return nil, err
	}
	target, _ := authn.AudiencesFrom(ctx)
	auds, err := a.Tokens.audiencesFor(c, target)
	if err != nil {
		return nil, err
	}
	// Deleted before now less the leeway: gone (kube's invalidIfDeletedBefore).
	deletedBefore := a.Tokens.now().Add(-jwt.DefaultLeeway)
	sa, err := a.Objects.Get(ctx, "serviceaccounts", c.Namespace, c.ServiceAccount.Name)
	switch {
	case err != nil:
		return nil, fmt.Errorf("service account %s/%s: %w", c.Namespace, c.ServiceAccount.Name, err)
	case !sa.Deleting.IsZero() && sa.Deleting.Before(deletedBefore):
		return nil, fmt.Errorf("service account %s/%s has been deleted", c.Namespace, c.ServiceAccount.Name)
	case sa.UID != c.ServiceAccount.UID:
		return nil, fmt.Errorf("service account UID (%s) does not match claim (%s)", sa.UID, c.ServiceAccount.UID)
	}
	if c.Secret != nil {
		secret, err := a.Objects.Get(ctx, "secrets", c.Namespace, c.Secret.Name)
		switch {
		case err != nil:
			return nil, fmt.Errorf("service account token has been invalidated: secret %s/%s: %w", c.Namespace, c.Secret.Name, err)
		case !secret.Deleting.IsZero() && secret.Deleting.Before(deletedBefore):
			return nil, errors.New("service account token has been invalidated: its secret is being deleted")
		case secret.UID != c.Secret.UID:
			return nil, fmt.Errorf("secret UID (%s) does not match service account secret ref claim (%s)", secret.UID, c.Secret.UID)
		}
	}
	u := &authn.User{
		Name:      authn.ServiceAccountUser(c.Namespace, c.ServiceAccount.Name),
		UID:       c.ServiceAccount.UID,
		Groups:    authn.ServiceAccountGroups(c.Namespace), // system:authenticated is authn.AuthenticatedGroup's to add
		Audiences: auds,
	}
	if c.ID != "" {
		u.Extra = map[string][]string{CredentialIDKey: {"JTI=" + c.ID}}
	}
	return u, nil
}

// StoreObjects reads objects from the store itself, always current: a
// token stops working as soon as its account's deletion is committed.
type StoreObjects struct {
	Store storage.Interface
}

// Get implements Objects.
func (s StoreObjects) Get(ctx context.Context, plural, namespace, name string) (Object, error) {
	res := resource.Resource{Version: "v1", Plural: plural, Namespaced: true}
	kv, err := s.Store.Get(ctx, res.Key(namespace, name))
	if err != nil {
		return Object{}, err
	}
	var obj struct {
		Metadata struct {
			UID               string     `json:"uid"`
			DeletionTimestamp *time.Time `json:"deletionTimestamp"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(kv.Value, &obj); err != nil {
		return Object{}, fmt.Errorf("decoding %s: %w", kv.Key, err)
	}
	o := Object{UID: obj.Metadata.UID}
	if obj.Metadata.DeletionTimestamp != nil {
		o.Deleting = *obj.Metadata.DeletionTimestamp
	}
	return o, nil
}
