package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/assessd/assessd/store"
	"github.com/assessd/assessd/tenancy"
)

const adminUsage = `usage: assessd admin <object> <verb> [flags]

  org create     --name N --country CC [--plan free|pro|enterprise]
  user create    --org ORG --email E --name N --role R [--password P]
  apikey create  --user USR [--name N]
  apikey revoke  --key KEY
`

// adminCommand is one operator command: it declares its flags and runs
// with a tenancy service.
type adminCommand struct {
	flags func(fs *flag.FlagSet) func(ctx context.Context, svc *tenancy.Service) (any, error)
}

var adminCommands = map[string]adminCommand{
	"org create": {func(fs *flag.FlagSet) func(context.Context, *tenancy.Service) (any, error) {
		name := fs.String("name", "", "organization name")
		country := fs.String("country", "", "ISO 3166-1 alpha-2 country code")
		plan := fs.String("plan", tenancy.PlanFree, "free, pro or enterprise")
		return func(ctx context.Context, svc *tenancy.Service) (any, error) {
			org, err := svc.CreateOrg(ctx, tenancy.NewOrg{Name: *name, Country: *country, Plan: *plan})
			return map[string]any{"id": org.ID, "name": org.Name, "country": org.Country, "plan": org.Plan,
				"settings": map[string]string{"aiRegion": org.AIRegion}}, err
		}
	}},
	"user create": {func(fs *flag.FlagSet) func(context.Context, *tenancy.Service) (any, error) {
		org := fs.String("org", "", "organization id")
		email := fs.String("email", "", "email address")
		name := fs.String("name", "", "display name")
		role := fs.String("role", string(tenancy.RoleStudent), "owner, admin, teacher or student")
		password := fs.String("password", "", "password for the login page")
		return func(ctx context.Context, svc *tenancy.Service) (any, error) {
			ctx = tenancy.WithCaller(ctx, tenancy.SystemCaller(*org))
			u, err := svc.CreateUser(ctx, tenancy.NewUser{Email: *email, Name: *name, Role: tenancy.Role(*role), Password: *password})
			if err != nil {
				return nil, err
			}
			return map[string]any{"id": u.ID, "orgId": u.OrgID, "email": u.Email, "role": u.Role}, nil
		}
	}},
	"apikey create": {func(fs *flag.FlagSet) func(context.Context, *tenancy.Service) (any, error) {
		userID := fs.String("user", "", "user id")
		name := fs.String("name", "", "a name to recognize the key by")
		return func(ctx context.Context, svc *tenancy.Service) (any, error) {
			org, err := svc.OrgOf(ctx, *userID)
			if err != nil {
				return nil, err
			}
			ctx = tenancy.WithCaller(ctx, tenancy.SystemCaller(org))
			k, plain, err := svc.CreateAPIKey(ctx, *userID, *name)
			if err != nil {
				return nil, err
			}
			return map[string]any{"id": k.ID, "key": plain, "userId": k.UserID, "name": k.Name}, nil
		}
	}},
	"apikey revoke": {func(fs *flag.FlagSet) func(context.Context, *tenancy.Service) (any, error) {
		keyID := fs.String("key", "", "API key id (key_...)")
		return func(ctx context.Context, svc *tenancy.Service) (any, error) {
			org, err := svc.OrgOf(ctx, *keyID)
			if err != nil {
				return nil, err
			}
			ctx = tenancy.WithCaller(ctx, tenancy.SystemCaller(org))
			if err := svc.RevokeAPIKey(ctx, *keyID); err != nil {
				return nil, err
			}
			return map[string]any{"id": *keyID, "revoked": true}, nil
		}
	}},
}

func admin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) < 2 {
		fmt.Fprint(stderr, adminUsage)
		return errUsage
	}
	name := args[0] + " " + args[1]
	cmd, ok := adminCommands[name]
	if !ok {
		fmt.Fprintf(stderr, "unknown admin command %q\n\n%s", name, adminUsage)
		return errUsage
	}
	var cfg config
	fs := cfg.newFlagSet("admin "+name, stderr)
	exec := cmd.flags(fs)
	if err := cfg.parse(fs, args[2:]); err != nil {
		return err
	}
	if err := cfg.requireDatabase(); err != nil {
		return err
	}
	db, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	out, err := exec(ctx, tenancy.NewService(db))
	if err != nil {
		return err
	}
	return writeJSON(stdout, out)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
