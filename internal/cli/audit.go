package cli

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/listwatch/listwatch/internal/server/audit"
)

// auditOptions are kube-apiserver's audit log flags.
type auditOptions struct {
	policyFile      string
	cfg             audit.LogConfig
	truncateEnabled bool
}

func (o *auditOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.policyFile, "audit-policy-file", "", "path to the file that defines the audit policy configuration (audit.k8s.io/v1 Policy)")
	f.StringVar(&o.cfg.Path, "audit-log-path", "", "write the audit events --audit-policy-file selects to this file, rotated; '-' means standard output")
	f.IntVar(&o.cfg.MaxAgeDays, "audit-log-maxage", 366, "the maximum number of days to retain old audit log files based on the timestamp encoded in their filename; 0 means no limit")
	f.IntVar(&o.cfg.MaxBackups, "audit-log-maxbackup", 100, "the maximum number of old audit log files to retain; 0 means no limit")
	f.IntVar(&o.cfg.MaxSizeMiB, "audit-log-maxsize", 100, "the maximum size in MiB of the audit log file before it gets rotated; 0 disables rotation")
	f.BoolVar(&o.truncateEnabled, "audit-log-truncate-enabled", true, "whether events are truncated: always, so that no event is larger than --audit-log-truncate-max-event-size (kube's default is false)")
	f.Int64Var(&o.cfg.MaxEventBytes, "audit-log-truncate-max-event-size", audit.DefaultMaxEventBytes, "maximum size of an audit event; a larger one loses its request and response objects, and is discarded if still too large")
}

// open loads the policy and opens the log: both nil when auditing is not
// asked for.
func (o *auditOptions) open(log *slog.Logger) (*audit.Policy, *audit.Log, error) {
	switch {
	case o.cfg.MaxAgeDays < 0, o.cfg.MaxBackups < 0, o.cfg.MaxSizeMiB < 0:
		return nil, nil, errors.New("--audit-log-maxage, --audit-log-maxbackup and --audit-log-maxsize can't be negative numbers")
	case o.cfg.MaxEventBytes <= 0:
		return nil, nil, fmt.Errorf("invalid audit truncate log max event size %v, must be a positive number", o.cfg.MaxEventBytes)
	case !o.truncateEnabled:
		return nil, nil, errors.New("--audit-log-truncate-enabled=false is not supported: every audit event is bounded; raise --audit-log-truncate-max-event-size instead")
	case o.policyFile == "" && o.cfg.Path == "":
		return nil, nil, nil
	case o.policyFile == "":
		log.Warn("no audit policy file provided (--audit-policy-file): no events will be recorded")
		return nil, nil, nil
	case o.cfg.Path == "":
		log.Warn("no audit log path provided (--audit-log-path): no events will be recorded")
		return nil, nil, nil
	}
	policy, warning, err := audit.LoadPolicy(o.policyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("loading audit policy file: %w", err)
	}
	if warning != "" {
		log.Warn(warning)
	}
	o.cfg.Logger = log
	l, err := audit.OpenLog(o.cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the audit log: %w", err)
	}
	return policy, l, nil
}
