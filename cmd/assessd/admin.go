package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/assessd/assessd/internal/identity"
	"github.com/assessd/assessd/internal/identity/clients"
	"github.com/assessd/assessd/internal/identity/serviceaccounts"
	"github.com/assessd/assessd/internal/platform/errs"
	"github.com/assessd/assessd/tenancy"
)

const adminUsage = `usage: assessd admin <object> <verb> [flags]

  org create     --name N --country CC [--plan free|pro|enterprise]
  org update     --id ORG [--plan free|pro|enterprise] [--requests-per-minute N (0: the plan's)]
  user create    --org ORG --email E --name N --role R [--password P]
  apikey create  --user USR [--name N]
  apikey revoke  --key KEY
  client create  --org ORG --name N [--description D] --redirect-uri U [--redirect-uri U2] [--scope S ...] [--public]
  service-account create     --org ORG --name N [--role admin|teacher|student]
  service-account list       --org ORG
  service-account disable    --org ORG --service-account SVA
  service-account enable     --org ORG --service-account SVA
  service-account delete     --org ORG --service-account SVA
  service-account key add    --org ORG --service-account SVA --public-key FILE.pem
  service-account key list   --org ORG --service-account SVA
  service-account key revoke --org ORG --key SAK
`

// services are what operator commands act through.
type services struct {
	tenancy         *tenancy.Service
	clients         *clients.Service
	serviceAccounts *serviceaccounts.Service
}

// adminCommand is one operator command: it declares its flags and returns
// the function that runs it.
type adminCommand struct {
	flags func(fs *flag.FlagSet) func(ctx context.Context, svc services) (any, error)
}

var adminCommands = map[string]adminCommand{
	"org create": {func(fs *flag.FlagSet) func(context.Context, services) (any, error) {
		name := fs.String("name", "", "organization name")
		country := fs.String("country", "", "ISO 3166-1 alpha-2 country code")
		plan := fs.String("plan", tenancy.PlanFree, "free, pro or enterprise")
		return func(ctx context.Context, svc services) (any, error) {
			org, err := svc.tenancy.CreateOrg(ctx, tenancy.NewOrg{Name: *name, Country: *country, Plan: *plan})
			if err != nil {
				return nil, err
			}
			return orgJSON(org), nil
		}
	}},
	"org update": {func(fs *flag.FlagSet) func(context.Context, services) (any, error) {
		id := fs.String("id", "", "organization id")
		plan := fs.String("plan", "", "free, pro or enterprise (default unchanged)")
		perMinute := fs.Int("requests-per-minute", 0, fmt.Sprintf("API request quota, 1 to %d in place of the plan's; 0 restores the plan's (default unchanged)", tenancy.MaxRequestsPerMinute))
		return func(ctx context.Context, svc services) (any, error) {
			if err := checkOrg(ctx, svc.tenancy, "id", *id); err != nil {
				return nil, err
			}
			// Only the flags given change anything: --requests-per-minute 0
			// is a request, its absence is none.
			var p tenancy.PlanPatch
			fs.Visit(func(f *flag.Flag) {
				switch f.Name {
				case "plan":
					p.Plan = plan
				case "requests-per-minute":
					p.RequestsPerMinute = perMinute
				}
			})
			org, err := svc.tenancy.SetPlan(tenancy.WithCaller(ctx, tenancy.SystemCaller(*id)), p)
			if err != nil {
				return nil, err
			}
			return orgJSON(org), nil
		}
	}},
	"user create": {func(fs *flag.FlagSet) func(context.Context, services) (any, error) {
		org := fs.String("org", "", "organization id")
		email := fs.String("email", "", "email address")
		name := fs.String("name", "", "display name")
		role := fs.String("role", string(tenancy.RoleStudent), "owner, admin, teacher or student")
		password := fs.String("password", "", "password for the login page")
		return func(ctx context.Context, svc services) (any, error) {
			ctx = tenancy.WithCaller(ctx, tenancy.SystemCaller(*org))
			u, err := svc.tenancy.CreateUser(ctx, tenancy.NewUser{Email: *email, Name: *name, Role: tenancy.Role(*role), Password: *password})
			if err != nil {
				return nil, err
			}
			return map[string]any{"id": u.ID, "orgId": u.OrgID, "email": u.Email, "role": u.Role}, nil
		}
	}},
	"apikey create": {func(fs *flag.FlagSet) func(context.Context, services) (any, error) {
		userID := fs.String("user", "", "user id")
		name := fs.String("name", "", "a name to recognize the key by")
		return func(ctx context.Context, svc services) (any, error) {
			org, err := svc.tenancy.OrgOf(ctx, *userID)
			if err != nil {
				return nil, err
			}
			ctx = tenancy.WithCaller(ctx, tenancy.SystemCaller(org))
			k, plain, err := svc.tenancy.CreateAPIKey(ctx, *userID, *name)
			if err != nil {
				return nil, err
			}
			return map[string]any{"id": k.ID, "key": plain, "userId": k.UserID, "name": k.Name}, nil
		}
	}},
	"client create": {func(fs *flag.FlagSet) func(context.Context, services) (any, error) {
		org := fs.String("org", "", "organization id")
		name := fs.String("name", "", "shown to users on the consent screen")
		description := fs.String("description", "", "short description of the app")
		var redirects, scopes stringList
		fs.Var(&redirects, "redirect-uri", "callback URL (repeat for more)")
		fs.Var(&scopes, "scope", "a scope the client may request (repeat; default any; audit-logs:write also allows it for --org)")
		public := fs.Bool("public", false, "public client: PKCE and no secret (mobile and single-page apps)")
		return func(ctx context.Context, svc services) (any, error) {
			ctx = tenancy.WithCaller(ctx, tenancy.SystemCaller(*org))
			c, secret, err := svc.clients.CreateClient(ctx, clients.ClientInput{
				Name: *name, Description: *description, RedirectURIs: redirects, Scopes: scopes, Public: *public,
				AllowAuditLogsWrite: slices.Contains(scopes, string(tenancy.ScopeAuditLogsWrite)),
			})
			if err != nil {
				return nil, err
			}
			out := map[string]any{"clientId": c.ID, "name": c.Name, "redirectUris": c.RedirectURIs, "public": c.Public}
			if secret != "" {
				out["clientSecret"] = secret
			}
			return out, nil
		}
	}},
	"service-account create": {func(fs *flag.FlagSet) func(context.Context, services) (any, error) {
		org := fs.String("org", "", "organization id")
		name := fs.String("name", "", "service account name")
		role := fs.String("role", string(tenancy.RoleTeacher), "admin, teacher or student")
		return func(ctx context.Context, svc services) (any, error) {
			ctx = tenancy.WithCaller(ctx, tenancy.SystemCaller(*org))
			sa, err := svc.serviceAccounts.CreateServiceAccount(ctx, *name, tenancy.Role(*role))
			if err != nil {
				return nil, err
			}
			return map[string]any{"id": sa.ID, "orgId": sa.OrgID, "name": sa.Name, "role": sa.Role}, nil
		}
	}},
	"service-account list": {func(fs *flag.FlagSet) func(context.Context, services) (any, error) {
		org := fs.String("org", "", "organization id")
		return func(ctx context.Context, svc services) (any, error) {
			accounts, err := svc.serviceAccounts.ServiceAccounts(tenancy.WithCaller(ctx, tenancy.SystemCaller(*org)))
			if err != nil {
				return nil, err
			}
			out := make([]map[string]any, 0, len(accounts))
			for _, a := range accounts {
				out = append(out, map[string]any{"id": a.ID, "name": a.Name, "role": a.Role, "createdAt": a.CreatedAt, "disabled": a.Disabled})
			}
			return map[string]any{"serviceAccounts": out}, nil
		}
	}},
	"service-account key add": {func(fs *flag.FlagSet) func(context.Context, services) (any, error) {
		org := fs.String("org", "", "organization id")
		account := fs.String("service-account", "", "service account id (sva_...)")
		keyFile := fs.String("public-key", "", "file with the PEM-encoded public key")
		return func(ctx context.Context, svc services) (any, error) {
			pemText, err := os.ReadFile(*keyFile)
			if err != nil {
				return nil, err
			}
			ctx = tenancy.WithCaller(ctx, tenancy.SystemCaller(*org))
			keyID, err := svc.serviceAccounts.AddServiceAccountKey(ctx, *account, string(pemText))
			if err != nil {
				return nil, err
			}
			return map[string]any{"keyId": keyID, "serviceAccountId": *account}, nil
		}
	}},
	"service-account key list": {func(fs *flag.FlagSet) func(context.Context, services) (any, error) {
		org := fs.String("org", "", "organization id")
		account := fs.String("service-account", "", "service account id (sva_...)")
		return func(ctx context.Context, svc services) (any, error) {
			keys, err := svc.serviceAccounts.ServiceAccountKeys(tenancy.WithCaller(ctx, tenancy.SystemCaller(*org)), *account)
			if err != nil {
				return nil, err
			}
			out := make([]map[string]any, 0, len(keys))
			for _, k := range keys {
				key := map[string]any{"keyId": k.ID, "createdAt": k.CreatedAt, "revoked": k.RevokedAt != nil}
				if k.RevokedAt != nil {
					key["revokedAt"] = *k.RevokedAt
				}
				out = append(out, key)
			}
			return map[string]any{"serviceAccountId": *account, "keys": out}, nil
		}
	}},
	"service-account key revoke": {func(fs *flag.FlagSet) func(context.Context, services) (any, error) {
		org := fs.String("org", "", "organization id")
		keyID := fs.String("key", "", "service account key id (sak_...)")
		return func(ctx context.Context, svc services) (any, error) {
			if err := svc.serviceAccounts.RevokeServiceAccountKey(tenancy.WithCaller(ctx, tenancy.SystemCaller(*org)), *keyID); err != nil {
				return nil, err
			}
			return map[string]any{"keyId": *keyID, "revoked": true}, nil
		}
	}},
	"service-account disable": setServiceAccountDisabled(true),
	"service-account enable":  setServiceAccountDisabled(false),
	"service-account delete": {func(fs *flag.FlagSet) func(context.Context, services) (any, error) {
		org := fs.String("org", "", "organization id")
		account := fs.String("service-account", "", "service account id (sva_...)")
		return func(ctx context.Context, svc services) (any, error) {
			if err := svc.serviceAccounts.DeleteServiceAccount(tenancy.WithCaller(ctx, tenancy.SystemCaller(*org)), *account); err != nil {
				return nil, err
			}
			return map[string]any{"id": *account, "deleted": true}, nil
		}
	}},
	"apikey revoke": {func(fs *flag.FlagSet) func(context.Context, services) (any, error) {
		keyID := fs.String("key", "", "API key id (key_...)")
		return func(ctx context.Context, svc services) (any, error) {
			org, err := svc.tenancy.OrgOf(ctx, *keyID)
			if err != nil {
				return nil, err
			}
			ctx = tenancy.WithCaller(ctx, tenancy.SystemCaller(org))
			if err := svc.tenancy.RevokeAPIKey(ctx, *keyID); err != nil {
				return nil, err
			}
			return map[string]any{"id": *keyID, "revoked": true}, nil
		}
	}},
}

// setServiceAccountDisabled is the command that disables a service
// account (its tokens refused at once) or enables it again.
func setServiceAccountDisabled(disabled bool) adminCommand {
	return adminCommand{func(fs *flag.FlagSet) func(context.Context, services) (any, error) {
		org := fs.String("org", "", "organization id")
		account := fs.String("service-account", "", "service account id (sva_...)")
		return func(ctx context.Context, svc services) (any, error) {
			if err := svc.serviceAccounts.SetServiceAccountDisabled(tenancy.WithCaller(ctx, tenancy.SystemCaller(*org)), *account, disabled); err != nil {
				return nil, err
			}
			return map[string]any{"id": *account, "disabled": disabled}, nil
		}
	}}
}

func admin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) < 2 {
		fmt.Fprint(stderr, adminUsage)
		return errUsage
	}
	name, rest := args[0]+" "+args[1], args[2:]
	if len(rest) > 0 {
		if _, ok := adminCommands[name+" "+rest[0]]; ok { // "service-account key add"
			name, rest = name+" "+rest[0], rest[1:]
		}
	}
	cmd, ok := adminCommands[name]
	if !ok {
		fmt.Fprintf(stderr, "unknown admin command %q\n\n%s", name, adminUsage)
		return errUsage
	}
	var cfg config
	fs := cfg.newFlagSet("admin "+name, stderr)
	exec := cmd.flags(fs)
	if err := cfg.parse(fs, rest); err != nil {
		return err
	}
	if err := cfg.requireDatabase(); err != nil {
		return err
	}
	db, err := openDatabase(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	ten := tenancy.NewService(db)
	if f := fs.Lookup("org"); f != nil {
		if err := checkOrg(ctx, ten, "org", f.Value.String()); err != nil {
			return err
		}
	}
	accounts := serviceaccounts.New(db)
	idp, err := identity.New(ctx, identity.Config{Issuer: cfg.BaseURL, ServiceAccounts: accounts}, db, ten)
	if err != nil {
		return err
	}
	out, err := exec(ctx, services{tenancy: ten, clients: clients.New(db, idp), serviceAccounts: accounts})
	if err != nil {
		return err
	}
	return writeJSON(stdout, out)
}

// checkOrg names a missing or unknown organization id, given as the flag
// named flagName, as the operator's mistake, rather than as the foreign key
// that an insert for it would violate or a bare "not found".
func checkOrg(ctx context.Context, ten *tenancy.Service, flagName, id string) error {
	if id == "" {
		return fmt.Errorf("%s: is required", flagName)
	}
	_, err := ten.Org(tenancy.WithCaller(ctx, tenancy.SystemCaller(id)))
	if errs.Is(err, errs.KindNotFound) {
		return fmt.Errorf("%s: no organization has the id %q", flagName, id)
	}
	return err
}

// orgJSON is an organization as the org commands print it: GET /org's
// fields and the request quota in force, with its source (the plan's, or
// the operator's override).
func orgJSON(org tenancy.Org) map[string]any {
	perMinute, override := org.Quota(tenancy.RequestsPerMinute)
	return map[string]any{"id": org.ID, "name": org.Name, "country": org.Country, "plan": org.Plan,
		"settings": map[string]string{"aiRegion": org.AIRegion},
		"quota":    map[string]any{"requestsPerMinute": perMinute, "source": tenancy.QuotaSource(override)}}
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
